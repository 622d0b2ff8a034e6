//! Exit codes 0/1/2, the refusal JSON shape with snake_case kinds, and usage errors.

use super::support::{Workspace, burrow_in};

/// A workspace with a directory, a text file, a binary file and a repeated word.
fn seeded() -> Workspace {
    let ws = Workspace::new();
    ws.put("/dir/f.txt", "one\ntwo\n");
    ws.put("/twice.txt", "x x\n");
    ws.run_with_stdin(&["write", "/bin.dat"], b"\xff\xfe\x00binary")
        .assert_code(0);
    ws
}

/// (arguments, the refusal kind they must produce).
const REFUSALS: &[(&[&str], &str)] = &[
    (&["read", "/missing.txt"], "not_found"),
    (&["cat", "/missing.txt"], "not_found"),
    (&["ls", "/missing"], "not_found"),
    (&["rm", "/missing.txt"], "not_found"),
    (&["read", "../escape.txt"], "invalid_path"),
    (&["cat", "/a/../../etc/passwd"], "invalid_path"),
    (&["glob", "../*"], "invalid_path"),
    (&["read", "/dir"], "is_a_directory"),
    (&["ls", "/twice.txt"], "not_a_directory"),
    (&["rm", "/dir"], "directory_not_empty"),
    (&["read", "/bin.dat"], "not_text"),
    (
        &["edit", "/bin.dat", "--old", "a", "--new", "b"],
        "not_text",
    ),
    (
        &["edit", "/twice.txt", "--old", "x", "--new", "y"],
        "invalid_argument",
    ),
    (
        &["edit", "/twice.txt", "--old", "", "--new", "y"],
        "invalid_argument",
    ),
    (&["read", "/dir/f.txt", "--offset", "5"], "invalid_argument"),
    (&["grep", "(unclosed"], "invalid_argument"),
    (&["glob", "[unclosed"], "invalid_argument"),
    (&["exec", "true"], "unsupported"),
];

#[test]
fn every_refusal_is_exit_1_with_a_snake_case_kind() {
    let ws = seeded();
    for (args, kind) in REFUSALS {
        let mut with_json = vec!["--json"];
        with_json.extend_from_slice(args);
        let message = ws.run(&with_json).assert_json_error(1, kind);
        assert!(
            !message.contains(&ws.dir().display().to_string()),
            "a refusal names no host path: {message}"
        );
    }
}

#[test]
fn without_json_a_refusal_is_one_sentence_on_stderr() {
    let ws = seeded();
    for (args, _) in REFUSALS {
        let run = ws.run(args);
        run.assert_code(1);
        assert!(run.stdout.is_empty(), "{args:?}: {}", run.out());
        assert!(
            run.stderr.starts_with("burrow: "),
            "{args:?}: {}",
            run.stderr
        );
        assert_eq!(run.stderr.lines().count(), 1, "{args:?}: {}", run.stderr);
    }
}

#[test]
fn a_refused_mutation_changes_nothing() {
    let ws = seeded();
    let before = std::fs::read(&ws.state).unwrap();
    ws.run(&["edit", "/twice.txt", "--old", "x", "--new", "y"])
        .assert_code(1);
    ws.run_with_stdin(&["write", "/dir"], b"x").assert_code(1);
    ws.run_with_stdin(&["write", "/twice.txt/under"], b"x")
        .assert_code(1);
    assert_eq!(std::fs::read(&ws.state).unwrap(), before);
}

#[test]
fn a_corrupt_state_file_is_a_failure_exit_2() {
    let ws = Workspace::new();
    std::fs::write(&ws.state, b"{ this is not json").unwrap();
    let message = ws.run(&["--json", "ls"]).assert_json_error(2, "failure");
    assert!(message.contains("left untouched"), "{message}");
    let run = ws.run(&["ls"]);
    run.assert_code(2);
    assert!(
        run.stderr.starts_with("burrow: state file"),
        "{}",
        run.stderr
    );
}

#[test]
fn an_unreadable_input_file_is_a_failure_exit_2() {
    let ws = Workspace::new();
    let run = ws.run(&["--json", "write", "/a.txt", "no-such-host-file.bin"]);
    let message = run.assert_json_error(2, "failure");
    assert!(message.contains("no-such-host-file.bin"), "{message}");
    assert!(!ws.state.exists());
}

#[test]
fn bad_usage_is_exit_2_from_clap() {
    let ws = Workspace::new();
    let cases: &[&[&str]] = &[
        &["frobnicate"],
        &["read"],
        &["ls", "--limit", "many"],
        &["edit", "/a", "--old", "x"],
        &["--backend", "nope:x", "ls"],
        &["--backend", "memory", "ls"],
        &["--backend", "memory:", "--backend", "memory:", "ls"],
        &[
            "--backend",
            "/data=memory:",
            "--backend",
            "/data/=memory:",
            "ls",
        ],
        &["--backend", "/../x=memory:", "ls"],
    ];
    for args in cases {
        let run = burrow_in(ws.dir(), args, b"");
        run.assert_code(2);
        assert!(run.stdout.is_empty(), "{args:?}: {}", run.out());
        assert!(
            run.stderr.starts_with("burrow: "),
            "{args:?}: {}",
            run.stderr
        );
    }
}

#[test]
fn success_is_exit_0() {
    let ws = seeded();
    ws.run(&["ls"]).assert_code(0);
    ws.run(&["--json", "grep", "o"]).assert_code(0);
}
