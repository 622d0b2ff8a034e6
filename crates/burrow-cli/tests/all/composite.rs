//! `--backend PREFIX=SPEC` mounts: a folder at "/", a SQLite store at "/memories", memory at "/scratch", seen as one tree.

use serde_json::json;

use super::spec_support::{On, paths};

/// The folder `ws` as the default, `mem.db` at /memories, a memory workspace at /scratch.
fn mounted() -> On {
    On::new(&[
        "/=fs:{dir}/ws",
        "/memories=sqlite:{dir}/mem.db",
        "/scratch=memory:",
    ])
}

#[test]
fn each_path_goes_to_the_backend_mounted_over_it() {
    let on = mounted();
    on.put("/notes.md", "folder notes\n");
    on.put("/memories/user.md", "prefers tabs\n");
    on.put("/scratch/tmp.txt", "gone soon\n");

    // The default is the folder: its file is on disk, the others are not.
    assert_eq!(
        std::fs::read_to_string(on.path("ws/notes.md")).unwrap(),
        "folder notes\n"
    );
    assert!(!on.path("ws/memories").exists());
    assert!(!on.path("ws/scratch").exists());
    // The memory is in the database, at the mount's own root.
    let db = on.with_specs(&["sqlite:{dir}/mem.db"]);
    assert_eq!(db.cat("/user.md"), b"prefers tabs\n");
    assert_eq!(db.ls("/"), ["/user.md"]);
    // The scratch mount lived only as long as that one process.
    on.run(&["--json", "read", "/scratch/tmp.txt"])
        .assert_json_error(1, "not_found");

    // Every command routes and answers in composite paths.
    let written = on.json_ok(&["write", "/memories/topics/rust.md", "-"]);
    assert_eq!(written["path"], "/memories/topics/rust.md");
    let edited = on.json_ok(&[
        "edit",
        "/memories/user.md",
        "--old",
        "tabs",
        "--new",
        "spaces",
    ]);
    assert_eq!(edited["path"], "/memories/user.md");
    assert_eq!(on.cat("/memories/user.md"), b"prefers spaces\n");
    assert_eq!(
        on.run(&["read", "/memories/user.md"]).out(),
        "     1\tprefers spaces\n"
    );
    let run = on.run(&["--json", "read", "/memories/missing.md"]);
    let message = run.assert_json_error(1, "not_found");
    assert!(message.contains("/memories/missing.md"), "{message}");
    on.run(&["rm", "/memories/topics/rust.md"]).assert_code(0);
    assert_eq!(db.ls("/"), ["/user.md"]);
}

#[test]
fn ls_of_the_root_lists_the_mount_points() {
    let on = mounted();
    std::fs::create_dir_all(on.path("ws/src")).unwrap();
    std::fs::write(on.path("ws/README.md"), "# hi\n").unwrap();
    // A folder named like a mount is shadowed by the mount.
    std::fs::create_dir_all(on.path("ws/memories")).unwrap();
    std::fs::write(on.path("ws/memories/hidden.md"), "shadowed\n").unwrap();

    let listing = on.json_ok(&["ls", "/"]);
    assert_eq!(
        paths(&listing),
        ["/README.md", "/memories", "/scratch", "/src"]
    );
    for entry in listing["entries"].as_array().unwrap() {
        let is_dir = entry["path"] != "/README.md";
        assert_eq!(entry["is_dir"], is_dir, "{entry}");
    }
    assert!(on.ls("/memories").is_empty());
    on.run(&["--json", "cat", "/memories/hidden.md"])
        .assert_json_error(1, "not_found");
    let human = on.run(&["ls"]).out();
    assert!(human.contains(" /memories/\n"), "{human}");
    assert!(human.contains(" /scratch/\n"), "{human}");
}

#[test]
fn grep_and_glob_search_across_mounts() {
    let on = mounted();
    std::fs::create_dir_all(on.path("ws/memories")).unwrap();
    std::fs::write(on.path("ws/memories/hidden.md"), "needle shadowed\n").unwrap();
    on.put("/todo.md", "find the needle\n");
    on.put("/memories/facts.md", "a needle in sqlite\n");
    // One batch, so the scratch file exists while grep runs.
    let input = [
        r#"{"op": "write", "path": "/scratch/s.md", "content": "needle in memory\n"}"#,
        r#"{"op": "grep", "pattern": "needle"}"#,
        r#"{"op": "glob", "pattern": "**/*.md"}"#,
        r#"{"op": "grep", "pattern": "NEEDLE", "ignore_case": true, "under": "/memories"}"#,
        r#"{"op": "glob", "pattern": "memories/*.md"}"#,
    ]
    .join("\n");
    let run = on.run_with_stdin(&["batch"], input.as_bytes());
    run.assert_code(0);
    let lines: Vec<serde_json::Value> = run
        .out()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines[1],
        json!({"matches": [
            {"path": "/memories/facts.md", "line_number": 1, "line": "a needle in sqlite"},
            {"path": "/scratch/s.md", "line_number": 1, "line": "needle in memory"},
            {"path": "/todo.md", "line_number": 1, "line": "find the needle"},
        ], "truncated": false})
    );
    assert_eq!(
        paths(&lines[2]),
        ["/memories/facts.md", "/scratch/s.md", "/todo.md"]
    );
    assert_eq!(paths(&lines[3]), ["/memories/facts.md"]);
    assert_eq!(paths(&lines[4]), ["/memories/facts.md"]);
}

#[test]
fn a_mounted_state_file_is_saved_only_when_its_document_changes() {
    let on = On::new(&["fs:{dir}/ws", "/s=state:{dir}/s.json"]);
    // A change to the folder leaves the state file alone: not even created.
    on.put("/a.txt", "folder\n");
    assert!(!on.path("s.json").exists());
    on.put("/s/kept.md", "in the document\n");
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(on.path("s.json")).unwrap()).unwrap();
    assert_eq!(doc["/kept.md"]["content"], json!(["in the document", ""]));
    // Later changes elsewhere do not rewrite it.
    let before = std::fs::read(on.path("s.json")).unwrap();
    std::fs::set_permissions(
        on.path("s.json"),
        std::os::unix::fs::PermissionsExt::from_mode(0o444),
    )
    .unwrap();
    on.put("/b.txt", "folder again\n");
    on.run(&["edit", "/a.txt", "--old", "folder", "--new", "dir"])
        .assert_code(0);
    assert_eq!(std::fs::read(on.path("s.json")).unwrap(), before);
    // ... and a change to it still is saved (the rename replaces the read-only file).
    on.run(&["rm", "/s/kept.md"]).assert_code(0);
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(on.path("s.json")).unwrap()).unwrap();
    assert_eq!(doc, json!({}));
}

#[test]
fn mounts_without_a_default_sit_on_a_memory_workspace() {
    let on = On::new(&["/memories=sqlite:{dir}/mem.db"]);
    on.put("/memories/a.md", "kept\n");
    on.put("/elsewhere.md", "lost at exit\n");
    assert_eq!(on.ls("/"), ["/memories"]);
    assert_eq!(on.cat("/memories/a.md"), b"kept\n");
}

#[test]
fn exec_follows_the_default_and_mount_prefixes_are_checked() {
    let on = mounted();
    let message = on
        .run(&["--json", "exec", "true"])
        .assert_json_error(1, "unsupported");
    assert!(message.contains("sandbox"), "{message}");
    // Writing over a mount point, or deleting one, is refused.
    on.run(&["--json", "write", "/memories", "-"])
        .assert_json_error(1, "is_a_directory");
    on.run(&["--json", "rm", "/scratch"])
        .assert_json_error(1, "invalid_path");
    // A mount that cannot be opened fails the whole command, naming it.
    let bad = on.with_specs(&["fs:{dir}/ws", "/m=sqlite:{dir}/ws"]);
    let message = bad.run(&["--json", "ls"]).assert_json_error(2, "failure");
    assert!(message.contains("cannot open sqlite:"), "{message}");
}
