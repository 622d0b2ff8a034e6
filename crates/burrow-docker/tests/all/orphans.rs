//! Containers whose owner died (SIGKILL leaves them running) are removed by `remove_orphans`, and by every sandbox start; a live owner's are kept.

use std::collections::HashMap;

use bollard::models::ContainerCreateBody;
use bollard::query_parameters::CreateContainerOptionsBuilder;
use burrow_docker::{
    Docker, OWNER_BOOT_LABEL, OWNER_HOST_LABEL, OWNER_PID_LABEL, OWNER_START_LABEL, SANDBOX_LABEL,
    remove_orphans,
};
use burrow_testkit::{Part, require};

use super::support::{self, IMAGE, Removal, TEST_LABEL};

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

/// This process's start time, field 22 of /proc/self/stat.
fn my_start() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 1..];
    rest.split_whitespace().nth(19).unwrap().parse().unwrap()
}

/// A running sandbox-labelled container whose owner labels name `pid` started at `start`.
async fn owned_container(docker: &Docker, pid: u32, start: u64) -> String {
    let host = read("/etc/machine-id")
        .or_else(|| read("/proc/sys/kernel/hostname"))
        .unwrap();
    let labels = HashMap::from([
        (SANDBOX_LABEL.to_owned(), "1".to_owned()),
        (TEST_LABEL.to_owned(), "orphans".to_owned()),
        (OWNER_HOST_LABEL.to_owned(), host),
        (
            OWNER_BOOT_LABEL.to_owned(),
            read("/proc/sys/kernel/random/boot_id").unwrap(),
        ),
        (OWNER_PID_LABEL.to_owned(), pid.to_string()),
        (OWNER_START_LABEL.to_owned(), start.to_string()),
    ]);
    let body = ContainerCreateBody {
        image: Some(IMAGE.to_owned()),
        cmd: Some(vec!["sleep".to_owned(), "300".to_owned()]),
        labels: Some(labels),
        ..Default::default()
    };
    let created = docker
        .create_container(Some(CreateContainerOptionsBuilder::default().build()), body)
        .await
        .unwrap();
    docker.start_container(&created.id, None).await.unwrap();
    created.id
}

async fn exists(docker: &Docker, id: &str) -> bool {
    docker.inspect_container(id, None).await.is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn containers_of_a_dead_owner_are_removed_and_a_live_owners_kept() {
    require(Part::Docker);
    let docker = support::docker().await;
    // A pid that was alive a moment ago and is not now.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let dead_owner = owned_container(&docker, dead, 1).await;
    let _r1 = Removal(dead_owner.clone());
    // This very pid, but started at another time: a reused pid.
    let reused = owned_container(&docker, std::process::id(), my_start() + 1).await;
    let _r2 = Removal(reused.clone());
    let alive = owned_container(&docker, std::process::id(), my_start()).await;
    let _r3 = Removal(alive.clone());
    // Other tests' sandbox starts sweep too, so the count may include fewer of these.
    remove_orphans(&docker).await.unwrap();
    assert!(
        !exists(&docker, &dead_owner).await,
        "a dead owner's container is removed"
    );
    assert!(
        !exists(&docker, &reused).await,
        "a reused pid's container is removed"
    );
    assert!(
        exists(&docker, &alive).await,
        "a live owner's container is kept"
    );
    // Starting a sandbox sweeps too.
    let again = owned_container(&docker, dead, 1).await;
    let _r4 = Removal(again.clone());
    let sandbox = support::sandbox("orphans-start").await;
    let _r5 = Removal(sandbox.id().to_owned());
    assert!(
        !exists(&docker, &again).await,
        "a sandbox start removes orphans"
    );
    let labels = docker
        .inspect_container(sandbox.id(), None)
        .await
        .unwrap()
        .config
        .unwrap()
        .labels
        .unwrap();
    assert_eq!(
        labels.get(OWNER_PID_LABEL).map(String::as_str),
        Some(std::process::id().to_string().as_str())
    );
    assert_eq!(
        labels.get(OWNER_START_LABEL).map(String::as_str),
        Some(my_start().to_string().as_str())
    );
}
