//! `--backend fs:DIR`: every command through the real binary on a folder, with the files visible (and changeable) on disk.

use serde_json::json;

use super::spec_support::{On, paths};

fn on_folder() -> On {
    On::new(&["fs:{dir}/ws"])
}

#[test]
fn write_creates_the_folder_and_plain_files_on_disk() {
    let on = on_folder();
    assert!(!on.path("ws").exists());
    let run = on.run_with_stdin(&["write", "/src/main.rs"], b"fn main() {}\n");
    run.assert_code(0);
    assert_eq!(run.out(), "wrote /src/main.rs (13 bytes)\n");
    assert_eq!(
        std::fs::read(on.path("ws/src/main.rs")).unwrap(),
        b"fn main() {}\n"
    );
    // From a host file too, byte for byte.
    let bytes: Vec<u8> = (0..=255u8).chain(*b"\r\n\xff").collect();
    std::fs::write(on.path("blob.bin"), &bytes).unwrap();
    let host = on.path("blob.bin").display().to_string();
    on.run(&["write", "/blob.bin", &host]).assert_code(0);
    assert_eq!(std::fs::read(on.path("ws/blob.bin")).unwrap(), bytes);
    assert_eq!(on.cat("/blob.bin"), bytes);
}

#[test]
fn files_put_on_disk_are_seen_by_every_read_command() {
    let on = on_folder();
    std::fs::create_dir_all(on.path("ws/docs")).unwrap();
    std::fs::write(on.path("ws/docs/guide.md"), "# Guide\r\nread me\r\n").unwrap();
    std::fs::write(on.path("ws/notes.txt"), "one\ntwo\nthree\n").unwrap();

    assert_eq!(on.ls("/"), ["/docs", "/notes.txt"]);
    let listing = on.json_ok(&["ls", "/"]);
    assert_eq!(listing["entries"][0]["is_dir"], true);
    assert_eq!(listing["entries"][1]["size"], 14);

    let window = on.json_ok(&["read", "/notes.txt", "--offset", "1", "--limit", "1"]);
    assert_eq!(window["lines"], json!(["two"]));
    assert_eq!(window["total_lines"], 3);
    assert_eq!(window["truncated"], true);
    assert_eq!(
        on.run(&["read", "/docs/guide.md"]).out(),
        "     1\t# Guide\n     2\tread me\n"
    );
    assert_eq!(on.cat("/docs/guide.md"), b"# Guide\r\nread me\r\n");

    assert_eq!(paths(&on.json_ok(&["glob", "**/*.md"])), ["/docs/guide.md"]);
    assert_eq!(on.run(&["glob", "*.txt"]).out(), "/notes.txt\n");
    let grep = on.json_ok(&["grep", "^t", "--include", "*.txt"]);
    assert_eq!(
        grep,
        json!({"matches": [
            {"path": "/notes.txt", "line_number": 2, "line": "two"},
            {"path": "/notes.txt", "line_number": 3, "line": "three"},
        ], "truncated": false})
    );
    assert_eq!(
        on.run(&["grep", "READ", "-i", "--under", "/docs"]).out(),
        "/docs/guide.md:2:read me\n"
    );
}

#[test]
fn edit_and_rm_change_the_files_on_disk() {
    let on = on_folder();
    std::fs::create_dir_all(on.path("ws")).unwrap();
    std::fs::write(on.path("ws/a.txt"), "x = 1\r\ny = 1\r\n").unwrap();
    let run = on.run(&["edit", "/a.txt", "--old", "1", "--new", "2", "--all"]);
    run.assert_code(0);
    assert_eq!(run.out(), "edited /a.txt (2 occurrences replaced)\n");
    // CRLF kept.
    assert_eq!(
        std::fs::read(on.path("ws/a.txt")).unwrap(),
        b"x = 2\r\ny = 2\r\n"
    );

    let run = on.run(&["--json", "edit", "/a.txt", "--old", "2", "--new", "3"]);
    let message = run.assert_json_error(1, "invalid_argument");
    assert!(message.contains("/a.txt"), "{message}");
    assert_eq!(
        std::fs::read(on.path("ws/a.txt")).unwrap(),
        b"x = 2\r\ny = 2\r\n"
    );

    assert_eq!(on.run(&["rm", "/a.txt"]).out(), "removed /a.txt\n");
    assert!(!on.path("ws/a.txt").exists());
    on.run(&["--json", "rm", "/a.txt"])
        .assert_json_error(1, "not_found");
}

#[test]
fn batch_runs_every_operation_on_the_folder() {
    let on = on_folder();
    let input = [
        r#"{"op": "write", "path": "/a.py", "content": "def f():\n    pass\n"}"#,
        r#"{"op": "write", "path": "/b.bin", "content_b64": "AAEC"}"#,
        r#"{"op": "edit", "path": "/a.py", "old": "pass", "new": "return 1"}"#,
        r#"{"op": "read", "path": "/a.py"}"#,
        r#"{"op": "cat", "path": "/b.bin"}"#,
        r#"{"op": "glob", "pattern": "*.py"}"#,
        r#"{"op": "grep", "pattern": "def \\w+", "include": "*.py"}"#,
        r#"{"op": "rm", "path": "/b.bin"}"#,
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
    assert_eq!(lines.len(), 9, "{}", run.out());
    assert_eq!(lines[2]["occurrences"], 1);
    assert_eq!(lines[3]["lines"], json!(["def f():", "    return 1"]));
    assert_eq!(lines[4], json!({"content_b64": "AAEC"}));
    assert_eq!(paths(&lines[5]), ["/a.py"]);
    assert_eq!(lines[6]["matches"][0]["line"], "def f():");
    assert_eq!(paths(&lines[8]), ["/a.py"]);
    assert_eq!(
        std::fs::read_to_string(on.path("ws/a.py")).unwrap(),
        "def f():\n    return 1\n"
    );
    assert!(!on.path("ws/b.bin").exists());
}

#[test]
fn exec_is_unsupported_and_the_tenant_is_ignored() {
    let on = on_folder();
    on.put("/a.txt", "shared\n");
    let run = on.run(&["--json", "exec", "echo hi"]);
    let message = run.assert_json_error(1, "unsupported");
    assert!(message.contains("sandbox"), "{message}");
    // One folder is one workspace: another tenant sees the same files.
    assert_eq!(on.as_tenant("other").cat("/a.txt"), b"shared\n");
}

#[cfg(unix)]
#[test]
fn links_out_of_the_folder_are_refused() {
    let on = on_folder();
    std::fs::create_dir_all(on.path("ws")).unwrap();
    std::fs::write(on.path("secret.txt"), "secret\n").unwrap();
    std::os::unix::fs::symlink(on.path("secret.txt"), on.path("ws/leak.txt")).unwrap();
    let run = on.run(&["--json", "cat", "/leak.txt"]);
    let message = run.assert_json_error(1, "permission_denied");
    assert!(
        !message.contains(&on.dir().display().to_string()),
        "{message}"
    );
    on.run(&["--json", "write", "/../x.txt"])
        .assert_json_error(1, "invalid_path");
    assert!(!on.path("x.txt").exists());
}

#[test]
fn a_folder_that_is_a_file_is_a_failure() {
    let on = On::new(&["fs:{dir}/file"]);
    std::fs::write(on.path("file"), "not a folder").unwrap();
    let run = on.run(&["--json", "ls"]);
    let message = run.assert_json_error(2, "failure");
    assert!(message.contains("cannot open fs:"), "{message}");
    assert_eq!(std::fs::read(on.path("file")).unwrap(), b"not a folder");
}

/// The peers' pattern through `burrow batch`: make a scratch directory, fill it, list it,
/// remove it whole, find nothing left (in the listing and on disk).
#[test]
fn batch_makes_a_scratch_directory_and_removes_it_whole() {
    let on = on_folder();
    on.put("/keep.txt", "kept\n");
    let input = [
        r#"{"op": "mkdir", "path": "/scratch"}"#,
        r#"{"op": "ls", "path": "/scratch"}"#,
        r#"{"op": "write", "path": "/scratch/a.txt", "content": "a"}"#,
        r#"{"op": "write", "path": "/scratch/sub/b.txt", "content": "b"}"#,
        r#"{"op": "mkdir", "path": "/scratch/empty/deeper", "parents": true}"#,
        r#"{"op": "ls", "path": "/scratch"}"#,
        r#"{"op": "rm", "path": "/scratch"}"#,
        r#"{"op": "rm", "path": "/scratch", "recursive": true}"#,
        r#"{"op": "ls", "path": "/scratch"}"#,
        r#"{"op": "ls", "path": "/"}"#,
        r#"{"op": "mkdir", "path": "/keep.txt"}"#,
    ]
    .join("\n");
    let run = on.run_with_stdin(&["batch"], input.as_bytes());
    let lines: Vec<serde_json::Value> = run
        .out()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 11, "{}", run.out());
    assert_eq!(lines[0], json!({"path": "/scratch"}));
    assert_eq!(paths(&lines[1]), Vec::<String>::new());
    assert_eq!(
        paths(&lines[5]),
        ["/scratch/a.txt", "/scratch/empty", "/scratch/sub"]
    );
    assert_eq!(lines[6]["error"]["kind"], "directory_not_empty");
    assert_eq!(lines[7], json!({"path": "/scratch"}));
    assert_eq!(lines[8]["error"]["kind"], "not_found");
    assert_eq!(paths(&lines[9]), ["/keep.txt"]);
    assert_eq!(lines[10]["error"]["kind"], "already_exists");
    assert!(!on.path("ws/scratch").exists());
}

#[test]
fn mkdir_and_rm_r_on_the_command_line() {
    let on = on_folder();
    on.run(&["--json", "mkdir", "/a/b"])
        .assert_json_error(1, "not_found");
    assert_eq!(on.run(&["mkdir", "-p", "/a/b"]).out(), "made /a/b\n");
    assert!(on.path("ws/a/b").is_dir());
    assert_eq!(on.run(&["mkdir", "-p", "/a/b"]).out(), "made /a/b\n");
    on.run(&["--json", "mkdir", "/a/b"])
        .assert_json_error(1, "already_exists");
    on.put("/a/b/c.txt", "c\n");
    on.run(&["--json", "rm", "/a"])
        .assert_json_error(1, "directory_not_empty");
    on.run(&["--json", "rm", "-r", "/"])
        .assert_json_error(1, "invalid_path");
    assert_eq!(on.run(&["rm", "-r", "/a"]).out(), "removed /a\n");
    assert!(!on.path("ws/a").exists());
}
