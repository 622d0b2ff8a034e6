//! Every command with `--json`: the burrow-types JSON shapes the README lists.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::json;

use super::support::{Workspace, mask_times};

#[test]
fn ls_prints_entries_and_truncated() {
    let ws = Workspace::new();
    ws.put("/dir/inner.txt", "abc");
    ws.put("/top.txt", "hello");
    let mut value = ws.json_ok(&["ls", "/"]);
    mask_times(&mut value);
    assert_eq!(
        value,
        json!({"entries": [
            {"name": "dir", "path": "/dir", "is_dir": true, "size": null},
            {"name": "top.txt", "path": "/top.txt", "is_dir": false, "size": 5, "modified_at": "<time>"},
        ], "truncated": false})
    );
}

#[test]
fn truncation_is_on_stdout_for_ls_glob_and_grep() {
    let ws = Workspace::new();
    for name in ["/a", "/b", "/c"] {
        ws.put(name, "x");
    }
    let cases: [(&[&str], &str); 3] = [
        (&["ls", "--limit", "2"], "entries"),
        (&["glob", "*", "--limit", "2"], "paths"),
        (&["grep", "x", "--limit", "2"], "matches"),
    ];
    for (args, list) in cases {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let run = ws.run(&all);
        run.assert_code(0);
        let value = run.json();
        assert_eq!(value["truncated"], true, "{args:?}: {value}");
        assert_eq!(
            value[list].as_array().unwrap().len(),
            2,
            "{args:?}: {value}"
        );
        // stdout says it all: no note.
        assert!(run.stderr.is_empty(), "{args:?}: {}", run.stderr);
        // Human mode keeps the note.
        let human = ws.run(args);
        human.assert_code(0);
        assert!(
            human.stderr.starts_with("burrow: note: truncated"),
            "{args:?}: {}",
            human.stderr
        );
    }
    let whole = ws.json_ok(&["glob", "*", "--limit", "3"]);
    assert_eq!(
        whole,
        json!({"paths": ["/a", "/b", "/c"], "truncated": false})
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
fn glob_prints_paths_and_truncated() {
    let ws = Workspace::new();
    ws.put("/x/one.md", "1");
    ws.put("/two.md", "22");
    ws.put("/three.txt", "333");
    let run = ws.run(&["--json", "glob", "**/*.md"]);
    run.assert_code(0);
    // Sorted by path: "/two.md" < "/x/one.md".
    assert_eq!(
        run.out(),
        "{\"paths\":[\"/two.md\",\"/x/one.md\"],\"truncated\":false}\n"
    );
}

#[test]
fn grep_prints_matches_and_truncated() {
    let ws = Workspace::new();
    ws.put("/g.txt", "no\nyes here\nno\nyes again\n");
    assert_eq!(
        ws.json_ok(&["grep", "^yes"]),
        json!({"matches": [
            {"path": "/g.txt", "line_number": 2, "line": "yes here"},
            {"path": "/g.txt", "line_number": 4, "line": "yes again"},
        ], "truncated": false})
    );
    assert_eq!(
        ws.json_ok(&["grep", "nothing matches this"]),
        json!({"matches": [], "truncated": false})
    );
}

#[test]
fn exec_prints_an_unsupported_refusal() {
    let ws = Workspace::new();
    let message = ws
        .run(&["--json", "exec", "true"])
        .assert_json_error(1, "unsupported");
    assert!(message.contains("sandbox"), "{message}");
}
