//! SandboxManager (one sandbox per session, a cap, the idle reaper), drop cleanup, and no container left behind.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use burrow_backend::{Backend, ErrorKind, FileContext, Sandbox, VPath};
use burrow_docker::{
    Docker, DockerSandbox, SANDBOX_LABEL, SandboxManager, SandboxSource, remove_labelled,
};

use super::support::{self, IMAGE, TEST_LABEL};

fn cx() -> FileContext {
    FileContext::default()
}

/// How many containers carry the sandbox label and `burrow.test=value`.
async fn labelled(docker: &Docker, value: &str) -> usize {
    let options = bollard::query_parameters::ListContainersOptionsBuilder::default()
        .all(true)
        .filters(&HashMap::from([(
            "label",
            vec![
                format!("{SANDBOX_LABEL}=1"),
                format!("{TEST_LABEL}={value}"),
            ],
        )]))
        .build();
    docker.list_containers(Some(options)).await.unwrap().len()
}

/// Waits up to 30 s for the labelled count to reach `want`.
async fn settle(docker: &Docker, value: &str, want: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let n = labelled(docker, value).await;
        if n == want || Instant::now() > deadline {
            return n;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_reuse_their_sandbox_within_a_cap_and_idle_ones_are_reaped() {
    let docker = support::docker().await;
    let label = "manager";
    let _ = remove_labelled(&docker, Some((TEST_LABEL, label)), Duration::ZERO).await;
    let manager = Arc::new(
        SandboxManager::on(
            docker.clone(),
            SandboxSource::Image(IMAGE.to_owned()),
            support::options(label),
        )
        .with_max_running(2)
        .with_idle_timeout(Duration::from_millis(300)),
    );
    // Two concurrent first calls for one session start one container.
    let (a1, a2) = tokio::join!(manager.get("a"), manager.get("a"));
    let (a1, a2) = (a1.unwrap(), a2.unwrap());
    assert_eq!(a1.id(), a2.id());
    a1.write(&cx(), &VPath::parse("/kept.txt").unwrap(), "kept")
        .await
        .unwrap();
    let again = manager.get("a").await.unwrap();
    assert_eq!(
        again
            .read_bytes(&cx(), &VPath::parse("/kept.txt").unwrap())
            .await
            .unwrap(),
        b"kept"
    );
    let b = manager.get("b").await.unwrap();
    assert_ne!(b.id(), a1.id());
    assert_eq!(manager.running().await, 2);
    assert_eq!(labelled(&docker, label).await, 2);
    // Both busy (a command in flight is never idle): a third session is refused.
    let a_busy = {
        let a = a1.clone();
        tokio::spawn(async move { a.execute(&cx(), "sleep 2", None).await })
    };
    let b_busy = {
        let b = b.clone();
        tokio::spawn(async move { b.execute(&cx(), "sleep 6; echo done", None).await })
    };
    while !(a1.idle_for().is_zero() && b.idle_for().is_zero()) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let err = manager.get("c").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::QuotaExceeded, "{}", err.message());
    // Once a's command ends and it idles past the timeout, only a is reaped: b is still busy.
    a_busy.await.unwrap().unwrap();
    while a1.idle_for() < Duration::from_millis(400) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        manager.reap_idle().await,
        1,
        "only the idle sandbox is reaped"
    );
    assert_eq!(b_busy.await.unwrap().unwrap().output, "done\n");
    assert!(a1.is_closed());
    let err = a1
        .read_bytes(&cx(), &VPath::parse("/kept.txt").unwrap())
        .await
        .unwrap_err();
    assert!(
        !err.is_refusal() && err.message().contains("closed"),
        "{}",
        err.message()
    );
    // The session starts afresh; the periodic reaper then takes everything idle.
    let fresh = manager.get("a").await.unwrap();
    assert_ne!(fresh.id(), a1.id());
    drop((a1, a2, again, b, fresh));
    let reaper = manager.spawn_reaper(Duration::from_millis(100));
    assert_eq!(
        settle(&docker, label, 0).await,
        0,
        "the reaper removed every idle sandbox"
    );
    assert_eq!(manager.running().await, 0);
    reaper.abort();
    manager.get("d").await.unwrap();
    manager.release("d").await.unwrap();
    manager.get("e").await.unwrap();
    manager.shutdown().await.unwrap();
    assert_eq!(
        labelled(&docker, label).await,
        0,
        "no container left behind"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_and_dropped_sandboxes_leave_no_container() {
    let docker = support::docker().await;
    let label = "lifecycle";
    let _ = remove_labelled(&docker, Some((TEST_LABEL, label)), Duration::ZERO).await;
    let closed = support::sandbox(label).await;
    let dropped = support::sandbox(label).await;
    let cli = DockerSandbox::start_with(IMAGE, support::options(label))
        .await
        .unwrap();
    assert_eq!(labelled(&docker, label).await, 3);
    let r = cli.execute(&cx(), "echo one command", None).await.unwrap();
    assert_eq!(r.output, "one command\n");
    cli.close().await.unwrap();
    cli.close().await.unwrap();
    closed.close().await.unwrap();
    drop(closed);
    drop(dropped);
    assert_eq!(
        settle(&docker, label, 0).await,
        0,
        "a dropped sandbox is removed in the background"
    );
    // The sweep for leftovers of crashed processes.
    let leftover = support::sandbox(label).await;
    let id = leftover.id().to_owned();
    std::mem::forget(leftover);
    assert_eq!(labelled(&docker, label).await, 1);
    assert_eq!(
        remove_labelled(
            &docker,
            Some((TEST_LABEL, label)),
            Duration::from_secs(3600)
        )
        .await
        .unwrap(),
        0
    );
    assert_eq!(
        remove_labelled(&docker, Some((TEST_LABEL, label)), Duration::ZERO)
            .await
            .unwrap(),
        1
    );
    assert_eq!(labelled(&docker, label).await, 0, "{id} was swept");
}
