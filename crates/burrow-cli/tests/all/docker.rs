//! `--backend docker:IMAGE`: exec and files in a container that lives for one command or batch (`burrow_testkit::Part::Docker`; this module is named `docker` so `cargo xtask test` can skip it).

use std::process::Command;

use serde_json::json;

use super::spec_support::{On, paths};

/// The test image setup imported (`BURROW_DOCKER_TEST_IMAGE`), checked to be there;
/// the test fails, naming the part, without it.
fn test_image() -> String {
    let image = burrow_testkit::require(burrow_testkit::Part::Docker);
    let found = Command::new("docker")
        .args(["image", "inspect", "--format", "{{.Id}}", &image])
        .output()
        .unwrap_or_else(|e| panic!("cannot run the docker command: {e}"));
    assert!(
        found.status.success(),
        "the Docker image {image} is missing; run `cargo xtask setup`, which imports it"
    );
    image
}

/// True while a container with this id (or id prefix) exists.
/// True once `id` is gone, waiting up to 30 s: a concurrent test's sweep may be
/// removing the same container (every sandbox start sweeps orphans), and Docker
/// still inspects a container whose removal is in progress.
fn container_gone(id: &str) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while container_exists(id) {
        if std::time::Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    true
}

fn container_exists(id: &str) -> bool {
    Command::new("docker")
        .args(["container", "inspect", id])
        .output()
        .unwrap()
        .status
        .success()
}

#[test]
fn exec_runs_in_a_container_that_is_removed_afterwards() {
    let image = test_image();
    let spec = format!("docker:{image}");
    let on = On::new(&[spec.as_str()]);
    let run = on.run(&["exec", "uname -a"]);
    run.assert_code(0);
    assert!(run.out().starts_with("Linux "), "{}", run.out());

    // The container's hostname is its short id: gone once burrow has exited.
    let response = on.json_ok(&["exec", "hostname"]);
    assert_eq!(response["exit_code"], 0);
    let id = response["output"].as_str().unwrap().trim().to_owned();
    assert!(id.len() >= 12, "{response}");
    assert!(!container_exists(&id), "container {id} was left behind");

    // A failing command is still a successful exec: its code is in the response.
    let response = on.json_ok(&["exec", "echo oops >&2; exit 3"]);
    assert_eq!(response["exit_code"], 3);
    assert_eq!(response["output"], "oops\n");
    let run = on.run(&["exec", "exit 3"]);
    run.assert_code(0);
    assert!(run.stderr.contains("exited with code 3"), "{}", run.stderr);
}

#[test]
fn a_batch_shares_one_container_between_files_and_commands() {
    let image = test_image();
    let spec = format!("docker:{image}");
    let on = On::new(&[spec.as_str()]);
    let input = [
        r#"{"op": "write", "path": "/src/hello.txt", "content": "hello from burrow\n"}"#,
        r#"{"op": "exec", "command": "cat src/hello.txt; echo made > made.txt"}"#,
        r#"{"op": "read", "path": "/made.txt"}"#,
        r#"{"op": "grep", "pattern": "burrow"}"#,
        r#"{"op": "ls", "path": "/"}"#,
    ]
    .join("\n");
    let run = on.run_with_stdin(&["batch"], input.as_bytes());
    run.assert_code(0);
    let lines: Vec<serde_json::Value> = run
        .out()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[1]["output"], "hello from burrow\n");
    assert_eq!(lines[2]["lines"], json!(["made"]));
    assert_eq!(paths(&lines[3]), ["/src/hello.txt"]);
    assert_eq!(paths(&lines[4]), ["/made.txt", "/src"]);
    // The next command gets a fresh container.
    on.run(&["--json", "read", "/src/hello.txt"])
        .assert_json_error(1, "not_found");
}

#[test]
fn exec_goes_through_a_composite_whose_default_is_docker() {
    let image = test_image();
    let spec = format!("/=docker:{image}");
    let on = On::new(&[spec.as_str(), "/memories=sqlite:{dir}/mem.db"]);
    let input = [
        r#"{"op": "write", "path": "/memories/m.md", "content": "kept\n"}"#,
        r#"{"op": "write", "path": "/run.sh", "content": "echo ran\n"}"#,
        r#"{"op": "exec", "command": "sh run.sh; ls"}"#,
        r#"{"op": "ls", "path": "/"}"#,
    ]
    .join("\n");
    let run = on.run_with_stdin(&["batch"], input.as_bytes());
    run.assert_code(0);
    let lines: Vec<serde_json::Value> = run
        .out()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The command ran in the container, which never saw the mounted store.
    assert_eq!(lines[2]["output"], "ran\nrun.sh\n");
    assert_eq!(paths(&lines[3]), ["/memories", "/run.sh"]);
    // The mount outlives the container.
    let db = on.with_specs(&["sqlite:{dir}/mem.db"]);
    assert_eq!(db.cat("/m.md"), b"kept\n");
}

#[test]
fn a_missing_image_is_a_failure_naming_it() {
    test_image();
    // A name no registry has: not local, and the pull fails.
    let on = On::new(&["docker:burrow-no-such-image-for-tests:never"]);
    let run = on.run(&["--json", "exec", "true"]);
    let message = run.assert_json_error(2, "failure");
    assert!(
        message.contains("cannot open docker:burrow-no-such-image"),
        "{message}"
    );
}

/// Ids of the containers (running or not) carrying `label` (`key=value`).
fn containers_labelled(label: &str) -> Vec<String> {
    let out = Command::new("docker")
        .args(["ps", "-aq", "--filter", &format!("label={label}")])
        .output()
        .unwrap();
    assert!(out.status.success(), "docker ps failed");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Polls `check` until it holds or `secs` seconds pass; returns whether it held.
fn eventually(secs: u64, mut check: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while std::time::Instant::now() < deadline {
        if check() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    check()
}

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

/// Starts a sandbox-labelled container of `image` owned by `pid` with
/// process start time `start`, on this host and boot; returns its id.
fn owned_container(image: &str, pid: u32, start: &str) -> String {
    let host = read_trimmed("/etc/machine-id")
        .or_else(|| read_trimmed("/proc/sys/kernel/hostname"))
        .unwrap();
    let boot = read_trimmed("/proc/sys/kernel/random/boot_id").unwrap();
    let labels = [
        (burrow::docker::SANDBOX_LABEL, "1".to_owned()),
        (burrow::docker::OWNER_HOST_LABEL, host),
        (burrow::docker::OWNER_BOOT_LABEL, boot),
        (burrow::docker::OWNER_PID_LABEL, pid.to_string()),
        (burrow::docker::OWNER_START_LABEL, start.to_owned()),
    ];
    let mut args = vec!["run".to_owned(), "-d".to_owned()];
    for (k, v) in labels {
        args.push("--label".to_owned());
        args.push(format!("{k}={v}"));
    }
    args.extend([image.to_owned(), "sleep".to_owned(), "300".to_owned()]);
    let out = Command::new("docker").args(&args).output().unwrap();
    assert!(out.status.success(), "docker run failed: {out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// The start time (field 22 of /proc/self/stat) of this test process.
fn own_start_time() -> String {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 1..];
    rest.split_whitespace().nth(19).unwrap().to_owned()
}

#[test]
fn gc_removes_a_container_whose_owner_is_gone_and_keeps_a_live_ones() {
    let image = test_image();
    // A pid that existed and is gone: a child that has been waited for.
    let mut child = Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let orphan = owned_container(&image, dead, "1");
    let live = owned_container(&image, std::process::id(), &own_start_time());

    let on = On::new(&[]);
    let response = on.json_ok(&["docker", "gc"]);
    // Another test's sandbox start may have removed the orphan first (every
    // start sweeps), so the count is only checked to be a number.
    assert!(response["removed"].is_u64(), "{response}");
    assert!(container_gone(&orphan), "the orphan {orphan} was kept");
    assert!(
        container_exists(&live),
        "the live owner's {live} was removed"
    );
    let run = on.run(&["docker", "gc"]);
    run.assert_code(0);
    assert!(run.out().starts_with("removed "), "{}", run.out());
    assert!(
        container_exists(&live),
        "the live owner's {live} was removed"
    );
    Command::new("docker")
        .args(["rm", "-f", &live])
        .output()
        .unwrap();
}

#[test]
fn gc_without_an_engine_is_a_failure() {
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_burrow"))
        .args(["docker", "gc"])
        .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(2));
    let stderr = String::from_utf8(run.stderr).unwrap();
    assert!(
        stderr.contains("Docker engine is not reachable"),
        "{stderr}"
    );
    assert!(run.stdout.is_empty());
}

#[test]
fn opening_a_docker_backend_removes_orphans_first() {
    let image = test_image();
    let mut child = Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let orphan = owned_container(&image, dead, "1");
    let on = On::new(&[format!("docker:{image}").as_str()]);
    on.run(&["exec", "true"]).assert_code(0);
    assert!(container_gone(&orphan), "the orphan {orphan} was kept");
}

/// Runs `exec "sleep 30"` on `docker:IMAGE`, sends `signal` once its
/// container runs, and checks the exit code and that no container is left.
fn signal_removes_the_container(signal: &str, number: i32) {
    let image = test_image();
    let spec = format!("docker:{image}");
    let mut child = Command::new(env!("CARGO_BIN_EXE_burrow"))
        .args(["--backend", &spec, "exec", "sleep 30"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let label = format!("{}={}", burrow::docker::OWNER_PID_LABEL, child.id());
    assert!(
        eventually(60, || !containers_labelled(&label).is_empty()),
        "no container started"
    );
    let killed = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(128 + number), "{status:?}");
    assert!(
        eventually(30, || containers_labelled(&label).is_empty()),
        "a container of {label} was left behind"
    );
}

#[test]
fn sigterm_removes_the_container_and_exits_143() {
    signal_removes_the_container("TERM", 15);
}

#[test]
fn sigint_removes_the_container_and_exits_130() {
    signal_removes_the_container("INT", 2);
}
