//! Durations at their extremes (0, u64::MAX seconds, Duration::MAX) from a caller or the options: clamped or refused, never a panic.

use std::sync::Arc;
use std::time::Duration;

use burrow_backend::{ErrorKind, FileContext, Sandbox};
use burrow_docker::{SandboxManager, SandboxSource, remove_labelled};
use burrow_testkit::{Part, require};

use super::support::{self, Removal, TEST_LABEL};

fn cx() -> FileContext {
    FileContext::default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn execute_takes_huge_timeouts_and_refuses_zero() {
    require(Part::Docker);
    let sandbox = support::sandbox("extremes-exec").await;
    let _removal = Removal(sandbox.id().to_owned());
    for timeout in [Duration::from_secs(u64::MAX), Duration::MAX] {
        let r = sandbox
            .execute(&cx(), "echo fine", Some(timeout))
            .await
            .unwrap();
        assert_eq!((r.output.as_str(), r.exit_code), ("fine\n", Some(0)));
    }
    let err = sandbox
        .execute(&cx(), "echo never", Some(Duration::ZERO))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{}", err.message());
    assert!(err.message().contains("timeout"), "{}", err.message());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configured_durations_at_the_extremes_still_work() {
    require(Part::Docker);
    for (i, d) in [Duration::ZERO, Duration::from_secs(u64::MAX), Duration::MAX]
        .into_iter()
        .enumerate()
    {
        let options = support::options(&format!("extremes-options-{i}"))
            .with_exec_timeout(d)
            .with_connect_timeout(d)
            .with_request_timeout(d);
        let sandbox = support::sandbox_with(options).await;
        let _removal = Removal(sandbox.id().to_owned());
        let r = sandbox.execute(&cx(), "echo fine", None).await.unwrap();
        assert_eq!((r.output.as_str(), r.exit_code), ("fine\n", Some(0)));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reaper_at_any_interval_runs_and_reaps() {
    require(Part::Docker);
    let docker = support::docker().await;
    let label = "extremes-reaper";
    let _ = remove_labelled(&docker, Some((TEST_LABEL, label)), Duration::ZERO).await;
    let manager = Arc::new(
        SandboxManager::on(
            docker.clone(),
            SandboxSource::Image(support::IMAGE.to_owned()),
            support::options(label),
        )
        .with_idle_timeout(Duration::ZERO),
    );
    // Huge intervals: the task lives on (it used to panic computing its next tick).
    for every in [Duration::from_secs(u64::MAX), Duration::MAX] {
        let reaper = manager.spawn_reaper(every);
        let waited = tokio::time::timeout(Duration::from_millis(300), async {
            loop {
                if reaper.is_finished() {
                    return;
                }
                tokio::task::yield_now().await;
            }
        })
        .await;
        assert!(waited.is_err(), "the reaper with interval {every:?} ended");
        reaper.abort();
    }
    // Zero: the reaper runs (it used to panic at once) and reaps the idle sandbox.
    let sandbox = manager.get("s").await.unwrap();
    let id = sandbox.id().to_owned();
    let _removal = Removal(id.clone());
    drop(sandbox);
    let reaper = manager.spawn_reaper(Duration::ZERO);
    let reaped = tokio::time::timeout(Duration::from_secs(60), async {
        while manager.running().await > 0 {
            assert!(!reaper.is_finished(), "the reaper with interval 0 ended");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    reaper.abort();
    assert!(reaped.is_ok(), "the idle sandbox was never reaped");
}
