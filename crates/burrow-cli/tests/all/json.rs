//! Every command with `--json`: the burrow-types JSON shapes of DESIGN.md §7.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::json;

use super::support::{Workspace, mask_times};

#[test]
fn ls_prints_a_list_of_file_info() {
    let ws = Workspace::new();
    ws.put("/dir/inner.txt", "abc");
    ws.put("/top.txt", "hello");
    let mut value = ws.json_ok(&["ls", "/"]);
    mask_times(&mut value);
    assert_eq!(
        value,
        json!([
            {"name": "dir", "path": "/dir", "is_dir": true, "size": null},
            {"name": "top.txt", "path": "/top.txt", "is_dir": false, "size": 5, "modified_at": "<time>"},
        ])
    );
}

#[test]
fn ls_truncation_keeps_the_list_and_notes_on_stderr() {
    let ws = Workspace::new();
    for name in ["/a", "/b", "/c"] {
        ws.put(name, "x");
    }
    let run = ws.run(&["--json", "ls", "--limit", "2"]);
    run.assert_code(0);
    let value = run.json();
    assert_eq!(value.as_array().unwrap().len(), 2);
    assert!(
        run.stderr.starts_with("burrow: note: truncated"),
        "{}",
        run.stderr
    );
}

#[test]
fn read_prints_lines_offset_total_and_truncated() {
    let ws = Workspace::new();
    ws.put("/f.txt", "a\r\nb\nc\n");
    assert_eq!(
        ws.json_ok(&["read", "/f.txt"]),
        json!({"lines": ["a", "b", "c"], "offset": 0, "total_lines": 3, "truncated": false})
    );
    let run = ws.run(&["--json", "read", "/f.txt", "--offset", "1", "--limit", "1"]);
    run.assert_code(0);
    assert_eq!(
        run.json(),
        json!({"lines": ["b"], "offset": 1, "total_lines": 3, "truncated": true})
    );
    // The JSON says it all: no note.
    assert!(run.stderr.is_empty(), "{}", run.stderr);
}

#[test]
fn write_prints_a_write_result() {
    let ws = Workspace::new();
    let run = ws.run_with_stdin(&["--json", "write", "/new.txt"], b"x");
    run.assert_code(0);
    assert_eq!(run.json(), json!({"path": "/new.txt", "error": null}));
    // Fields come in the burrow-types declaration order, one line.
    assert_eq!(run.out(), "{\"path\":\"/new.txt\",\"error\":null}\n");
}

#[test]
fn edit_prints_an_edit_result() {
    let ws = Workspace::new();
    ws.put("/e.txt", "a a a");
    let run = ws.run(&[
        "--json", "edit", "/e.txt", "--old", "a", "--new", "b", "--all",
    ]);
    run.assert_code(0);
    assert_eq!(
        run.out(),
        "{\"path\":\"/e.txt\",\"error\":null,\"occurrences\":3}\n"
    );
}

#[test]
fn rm_prints_the_path_removed() {
    let ws = Workspace::new();
    ws.put("/r.txt", "x");
    assert_eq!(ws.json_ok(&["rm", "/r.txt"]), json!({"path": "/r.txt"}));
}

#[test]
fn cat_prints_content_b64() {
    let ws = Workspace::new();
    let bytes = [0u8, 1, 2, 0xff, b'\r', b'\n'];
    ws.run_with_stdin(&["write", "/b.bin"], &bytes)
        .assert_code(0);
    let value = ws.json_ok(&["cat", "/b.bin"]);
    assert_eq!(value, json!({"content_b64": BASE64.encode(bytes)}));
}

#[test]
fn glob_prints_a_list_of_file_info() {
    let ws = Workspace::new();
    ws.put("/x/one.md", "1");
    ws.put("/two.md", "22");
    ws.put("/three.txt", "333");
    let mut value = ws.json_ok(&["glob", "**/*.md"]);
    mask_times(&mut value);
    // Sorted by path: "/two.md" < "/x/one.md".
    assert_eq!(
        value,
        json!([
            {"name": "two.md", "path": "/two.md", "is_dir": false, "size": 2, "modified_at": "<time>"},
            {"name": "one.md", "path": "/x/one.md", "is_dir": false, "size": 1, "modified_at": "<time>"},
        ])
    );
}

#[test]
fn grep_prints_a_list_of_grep_match() {
    let ws = Workspace::new();
    ws.put("/g.txt", "no\nyes here\nno\nyes again\n");
    assert_eq!(
        ws.json_ok(&["grep", "^yes"]),
        json!([
            {"path": "/g.txt", "line_number": 2, "line": "yes here"},
            {"path": "/g.txt", "line_number": 4, "line": "yes again"},
        ])
    );
    assert_eq!(ws.json_ok(&["grep", "nothing matches this"]), json!([]));
}

#[test]
fn exec_prints_an_unsupported_refusal() {
    let ws = Workspace::new();
    let message = ws
        .run(&["--json", "exec", "true"])
        .assert_json_error(1, "unsupported");
    assert!(message.contains("sandbox"), "{message}");
}
