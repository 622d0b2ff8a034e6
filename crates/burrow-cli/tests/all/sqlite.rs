//! `--backend sqlite:FILE.db`: every command through the real binary on one database, tenants kept apart by `--tenant`.

use serde_json::json;

use super::spec_support::{On, paths};

fn on_database() -> On {
    On::new(&["sqlite:{dir}/data/agent.db"])
}

#[test]
fn every_command_persists_in_the_database_file() {
    let on = on_database();
    assert!(!on.path("data").exists());
    on.put("/src/lib.rs", "pub fn f() {}\n");
    // The database and its folder were created; nothing else was.
    assert!(on.path("data/agent.db").is_file());
    let bytes: Vec<u8> = (0..=255u8).collect();
    std::fs::write(on.path("blob.bin"), &bytes).unwrap();
    let host = on.path("blob.bin").display().to_string();
    on.run(&["write", "/blob.bin", &host]).assert_code(0);

    // Each command is a new process: everything below reads the file.
    assert_eq!(on.cat("/blob.bin"), bytes);
    assert_eq!(on.ls("/"), ["/blob.bin", "/src"]);
    assert_eq!(
        on.run(&["read", "/src/lib.rs"]).out(),
        "     1\tpub fn f() {}\n"
    );
    let run = on.run(&["edit", "/src/lib.rs", "--old", "f()", "--new", "g()"]);
    run.assert_code(0);
    assert_eq!(run.out(), "edited /src/lib.rs (1 occurrence replaced)\n");
    assert_eq!(
        on.json_ok(&["grep", "fn", "--fixed"]),
        json!({"matches": [{"path": "/src/lib.rs", "line_number": 1, "line": "pub fn g() {}"}], "truncated": false})
    );
    assert_eq!(paths(&on.json_ok(&["glob", "**/*.rs"])), ["/src/lib.rs"]);
    on.run(&["rm", "/blob.bin"]).assert_code(0);
    assert_eq!(on.ls("/"), ["/src"]);
    on.run(&["--json", "read", "/blob.bin"])
        .assert_json_error(1, "not_found");
    on.run(&["--json", "exec", "true"])
        .assert_json_error(1, "unsupported");
}

#[test]
fn two_tenants_in_one_file_never_see_each_other() {
    let on = on_database();
    let alice = on.as_tenant("alice");
    let bob = on.as_tenant("bob");
    alice.put("/notes.md", "alice's secret\n");
    alice.put("/shared/plan.md", "alice plans\n");

    // Bob sees an empty workspace: alice's files look exactly like missing ones.
    assert!(bob.ls("/").is_empty());
    bob.run(&["--json", "read", "/notes.md"])
        .assert_json_error(1, "not_found");
    assert_eq!(
        bob.json_ok(&["grep", "secret"]),
        json!({"matches": [], "truncated": false})
    );
    assert_eq!(
        bob.json_ok(&["glob", "**"]),
        json!({"paths": [], "truncated": false})
    );
    bob.run(&["--json", "rm", "/notes.md"])
        .assert_json_error(1, "not_found");

    // The same path holds each tenant's own bytes.
    bob.put("/notes.md", "bob's notes\n");
    assert_eq!(alice.cat("/notes.md"), b"alice's secret\n");
    assert_eq!(bob.cat("/notes.md"), b"bob's notes\n");
    bob.run(&["edit", "/notes.md", "--old", "bob", "--new", "robert"])
        .assert_code(0);
    assert_eq!(alice.cat("/notes.md"), b"alice's secret\n");
    assert_eq!(alice.ls("/"), ["/notes.md", "/shared"]);
    assert_eq!(bob.ls("/"), ["/notes.md"]);
    // The default tenant is a third one.
    assert!(on.ls("/").is_empty());
}

#[test]
fn batch_on_a_tenant_and_concurrent_processes() {
    let on = on_database();
    // Four processes, each a batch of 25 writes, at once: no write is lost.
    let children: Vec<_> = (0..4)
        .map(|p| {
            let on = on.as_tenant("t");
            std::thread::spawn(move || {
                let input: String = (0..25)
                    .map(|i| format!("{{\"op\": \"write\", \"path\": \"/p{p}/f{i}.txt\", \"content\": \"{p}-{i}\\n\"}}\n"))
                    .collect();
                let run = on.run_with_stdin(&["batch"], input.as_bytes());
                run.assert_code(0);
                assert_eq!(run.out().lines().count(), 25);
            })
        })
        .collect();
    for child in children {
        child.join().unwrap();
    }
    let t = on.as_tenant("t");
    let files = t.json_ok(&["glob", "**/*.txt"]);
    assert_eq!(files["paths"].as_array().unwrap().len(), 100);
    assert_eq!(t.cat("/p3/f24.txt"), b"3-24\n");
    assert_eq!(
        t.json_ok(&["grep", "^2-1", "--under", "/p2"])["matches"]
            .as_array()
            .unwrap()
            .len(),
        11
    );
}

#[test]
fn a_database_that_cannot_be_opened_is_a_failure() {
    let on = On::new(&["sqlite:{dir}/not.db"]);
    std::fs::write(
        on.path("not.db"),
        b"this is not a SQLite database, just text",
    )
    .unwrap();
    let run = on.run(&["--json", "ls"]);
    let message = run.assert_json_error(2, "failure");
    assert!(message.contains("cannot open sqlite:"), "{message}");
}

/// `rm -r` removes a tree from a database in one transaction, and `mkdir` makes a
/// directory there that outlives the command (a made directory row, ADR 0221).
#[test]
fn rm_r_removes_a_tree_and_mkdir_makes_a_directory_that_stays() {
    let on = on_database();
    on.put("/t/a.txt", "a\n");
    on.put("/t/sub/b.txt", "b\n");
    on.put("/t.txt", "kept\n");
    on.run(&["--json", "rm", "/t"])
        .assert_json_error(1, "directory_not_empty");
    assert_eq!(on.run(&["rm", "-r", "/t"]).out(), "removed /t\n");
    assert_eq!(on.ls("/"), ["/t.txt"]);
    on.run(&["--json", "mkdir", "/m/n"])
        .assert_json_error(1, "not_found");
    assert_eq!(on.run(&["mkdir", "-p", "/m/n"]).out(), "made /m/n\n");
    assert_eq!(on.ls("/"), ["/m", "/t.txt"]);
    assert_eq!(on.ls("/m"), ["/m/n"]);
    assert_eq!(on.run(&["rm", "-r", "/m"]).out(), "removed /m\n");
    assert_eq!(on.ls("/"), ["/t.txt"]);
}

/// The peers' pattern through `burrow batch` on a database: make a scratch directory,
/// fill it, list it, remove it whole, find nothing left; the empty directory made
/// first outlives the batch (it is a row), and the removal is one transaction.
#[test]
fn batch_makes_a_scratch_directory_and_removes_it_whole() {
    let on = on_database();
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
        r#"{"op": "mkdir", "path": "/kept-empty"}"#,
    ]
    .join("\n");
    let run = on.run_with_stdin(&["batch"], input.as_bytes());
    let lines: Vec<serde_json::Value> = run
        .out()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 12, "{}", run.out());
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
    assert_eq!(on.ls("/"), ["/keep.txt", "/kept-empty"]);
    assert_eq!(on.ls("/kept-empty"), Vec::<String>::new());
}
