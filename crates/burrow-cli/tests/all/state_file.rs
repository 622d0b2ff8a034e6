//! `state:FILE.json`: created on the first change, written back atomically, never overwritten when corrupt.

use std::path::Path;

use serde_json::{Value, json};

use super::support::{Workspace, burrow_in, mask_times};

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/state")
        .join(name)
}

#[test]
fn a_missing_file_is_an_empty_workspace_created_by_the_first_write() {
    let ws = Workspace::new();
    assert_eq!(
        ws.json_ok(&["ls"]),
        json!({"entries": [], "truncated": false})
    );
    assert_eq!(
        ws.json_ok(&["glob", "*"]),
        json!({"paths": [], "truncated": false})
    );
    ws.run(&["read", "/a.txt"]).assert_code(1);
    assert!(!ws.state.exists(), "reads and refusals create nothing");
    ws.put("/a.txt", "hello\nworld\n");
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&ws.state).unwrap()).unwrap();
    mask_times(&mut doc);
    assert_eq!(
        doc,
        json!({"/a.txt": {"content": ["hello", "world", ""], "created_at": "<time>", "modified_at": "<time>"}})
    );
}

#[test]
fn the_parent_folder_is_created_too() {
    let ws = Workspace::new();
    let nested = ws.dir().join("deep/er/state.json");
    let spec = format!("state:{}", nested.display());
    burrow_in(ws.dir(), &["--backend", &spec, "write", "/x"], b"1").assert_code(0);
    assert!(nested.is_file());
}

#[test]
fn a_relative_state_path_is_relative_to_the_working_directory() {
    let ws = Workspace::new();
    burrow_in(
        ws.dir(),
        &["--backend", "state:rel.json", "write", "/x"],
        b"1",
    )
    .assert_code(0);
    assert!(ws.dir().join("rel.json").is_file());
    let run = burrow_in(ws.dir(), &["--backend", "state:rel.json", "cat", "/x"], b"");
    assert_eq!(run.stdout, b"1");
}

#[test]
fn saving_leaves_no_temporary_file_behind() {
    let ws = Workspace::new();
    for i in 0..5 {
        ws.put(&format!("/f{i}.txt"), "x\n");
        ws.run(&["edit", &format!("/f{i}.txt"), "--old", "x", "--new", "y"])
            .assert_code(0);
    }
    ws.run(&["rm", "/f0.txt"]).assert_code(0);
    // The lock file stays beside the document (docs/adr/0041), and so does
    // the journal, folded into the document and cut as each process ended
    // (docs/adr/0201).
    assert_eq!(
        ws.dir_entries(),
        ["state.json", "state.json.journal", "state.json.lock"]
    );
    let doc: Value = serde_json::from_slice(&std::fs::read(&ws.state).unwrap()).unwrap();
    assert_eq!(doc.as_object().unwrap().len(), 4);
}

#[test]
fn reads_do_not_rewrite_the_file() {
    let ws = Workspace::new();
    ws.put("/a.txt", "x\n");
    let before = std::fs::metadata(&ws.state).unwrap().modified().unwrap();
    let bytes = std::fs::read(&ws.state).unwrap();
    for args in [
        &["ls"][..],
        &["read", "/a.txt"],
        &["cat", "/a.txt"],
        &["grep", "x"],
        &["glob", "*"],
    ] {
        ws.run(args).assert_code(0);
    }
    assert_eq!(std::fs::read(&ws.state).unwrap(), bytes);
    assert_eq!(
        std::fs::metadata(&ws.state).unwrap().modified().unwrap(),
        before
    );
}

#[cfg(unix)]
#[test]
fn saving_keeps_the_file_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let ws = Workspace::new();
    ws.put("/a.txt", "x");
    std::fs::set_permissions(&ws.state, std::fs::Permissions::from_mode(0o640)).unwrap();
    ws.put("/b.txt", "y");
    let mode = std::fs::metadata(&ws.state).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640);
}

#[cfg(unix)]
#[test]
fn a_new_state_file_gets_the_usual_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let ws = Workspace::new();
    // `sh` sets a known umask, then becomes burrow.
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg("umask 022 && printf x | \"$0\" --backend \"$1\" write /a")
        .arg(env!("CARGO_BIN_EXE_burrow"))
        .arg(ws.spec())
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let mode = std::fs::metadata(&ws.state).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o644);
}

#[test]
fn a_python_written_document_loads_byte_for_byte() {
    let ws = Workspace::new();
    std::fs::copy(fixture("python.json"), &ws.state).unwrap();
    assert_eq!(
        ws.run(&["cat", "/notes.txt"]).stdout,
        b"line one\nline two\n"
    );
    assert_eq!(ws.run(&["cat", "/crlf.txt"]).stdout, b"a\r\nb\r\n");
    assert_eq!(
        ws.run(&["cat", "/logo.bin"]).stdout,
        b"\x89PNG\r\n\x1a\n\x00\xff"
    );
    assert_eq!(ws.run(&["cat", "/legacy.txt"]).stdout, b"caf\xe9\n");
    assert_eq!(
        ws.json_ok(&["read", "/notes.txt"]),
        json!({"lines": ["line one", "line two"], "offset": 0, "total_lines": 2, "truncated": false})
    );
    let mut listing = ws.json_ok(&["ls", "/"]);
    mask_times(&mut listing);
    assert_eq!(listing["entries"].as_array().unwrap().len(), 4, "{listing}");
}

/// (fixture name, what the failure message must mention).
const CORRUPT: &[(&str, &str)] = &[
    ("not-json.json", "not valid JSON"),
    ("array.json", "wrong shape"),
    ("relative-path.json", "cannot be loaded"),
    ("bad-base64.json", "cannot be decoded"),
    ("not-utf8.json", "not UTF-8"),
];

#[test]
fn a_corrupt_document_is_a_failure_and_is_never_overwritten() {
    for (name, mention) in CORRUPT {
        let ws = Workspace::new();
        std::fs::copy(fixture(name), &ws.state).unwrap();
        let before = std::fs::read(&ws.state).unwrap();
        let run = ws.run_with_stdin(&["--json", "write", "/new.txt"], b"x");
        let message = run.assert_json_error(2, "failure");
        assert!(message.contains(mention), "{name}: {message}");
        assert!(message.contains("left untouched"), "{name}: {message}");
        ws.run(&["rm", "/anything"]).assert_code(2);
        let run = ws.run_with_stdin(
            &["batch"],
            b"{\"op\":\"write\",\"path\":\"/b\",\"content\":\"x\"}\n",
        );
        run.assert_code(2);
        assert_eq!(std::fs::read(&ws.state).unwrap(), before, "{name}");
        assert_eq!(ws.dir_entries(), ["state.json"], "{name}");
    }
}

#[test]
fn a_folder_as_state_file_is_a_failure() {
    let ws = Workspace::new();
    std::fs::create_dir(&ws.state).unwrap();
    ws.run(&["--json", "ls"]).assert_json_error(2, "failure");
}

#[test]
fn without_backend_the_default_is_a_fresh_memory_workspace() {
    let ws = Workspace::new();
    let run = burrow_in(ws.dir(), &["write", "/a.txt"], b"gone");
    run.assert_code(0);
    // Nothing was written to the host, and the next run starts empty.
    assert!(ws.dir_entries().is_empty(), "{:?}", ws.dir_entries());
    let run = burrow_in(ws.dir(), &["--json", "ls"], b"");
    run.assert_code(0);
    assert_eq!(run.json(), json!({"entries": [], "truncated": false}));
    let run = burrow_in(
        ws.dir(),
        &["--backend", "memory:", "--json", "cat", "/a.txt"],
        b"",
    );
    run.assert_json_error(1, "not_found");
}

#[test]
fn a_state_file_with_a_255_byte_name_still_takes_changes() {
    let dir = tempfile::tempdir().unwrap();
    let name = format!("{}.json", "n".repeat(250));
    let spec = format!("state:{name}");
    super::support::burrow_in(dir.path(), &["--backend", &spec, "write", "/a.txt"], b"x")
        .assert_code(0);
    let run = super::support::burrow_in(dir.path(), &["--backend", &spec, "cat", "/a.txt"], b"");
    assert_eq!(run.stdout, b"x");
    // The journal and the lock file got short hashed names beside the document.
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names.len(), 3, "{names:?}");
    assert!(
        names[0].starts_with(".burrow-") && names[0].ends_with(".journal"),
        "{names:?}"
    );
    assert!(
        names[1].starts_with(".burrow-") && names[1].ends_with(".lock"),
        "{names:?}"
    );
    assert_eq!(
        names[0].trim_end_matches(".journal"),
        names[1].trim_end_matches(".lock")
    );
    assert_eq!(names[2], name);
}
