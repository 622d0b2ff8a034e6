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
