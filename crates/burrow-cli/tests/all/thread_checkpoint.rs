//! `burrow thread checkpoint|checkpoints|rewind|fork` through the binary, on a SQLite session and an fs backend, with the local OpenAI wire server as the model: a run writes files over two turns, a rewind restores their bytes exactly and the next run's request holds the earlier conversation; a fork starts a new thread; --files-only and --conversation-only.

use burrow_testkit::http::{ReplayServer, Reply};
use serde_json::{Value, json};

use super::run_providers::{KEY, Out, body, burrow, chat};

const ORIGINAL: &[u8] = b"\x00\x01 original bytes\r\n\xff";
pub(super) const MODEL: &str = "openai:gpt-test";

pub(super) fn ok(out: &Out) -> Value {
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

fn messages_text(server: &ReplayServer, i: usize) -> String {
    body(server, i)["messages"].to_string()
}

/// The first run of these tests: read /a.txt, create /b.txt (turn 2), rewrite
/// /a.txt (turn 3), then answer `done`; two checkpoints (before each batch that
/// changed a file, not the read).
pub(super) fn read_then_two_writes(done: &str) -> Vec<Reply> {
    vec![
        chat(
            None,
            Some(("call_r", "read_file", json!({"file_path": "/a.txt"}))),
        ),
        chat(
            None,
            Some((
                "call_b",
                "write_file",
                json!({"file_path": "/b.txt", "content": "one"}),
            )),
        ),
        chat(
            None,
            Some((
                "call_a",
                "write_file",
                json!({"file_path": "/a.txt", "content": "changed"}),
            )),
        ),
        chat(Some(done), None),
    ]
}

#[test]
fn a_rewind_restores_the_files_and_the_next_run_reads_the_conversation_at_the_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    std::fs::write(work.join("a.txt"), ORIGINAL).unwrap();
    let spec = format!("sqlite:{}", dir.path().join("s.db").display());
    let session = ["--session", spec.as_str(), "--thread", "t1"];

    // Run 1: read /a.txt, create /b.txt (turn 2), rewrite /a.txt (turn 3).
    let server = ReplayServer::start(read_then_two_writes("Done-ONE."));
    let mut args = vec!["run", "PROMPT-ONE", "--model", MODEL];
    args.extend_from_slice(&session);
    let out = burrow(dir.path(), &server, Some(KEY), &args);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(std::fs::read(work.join("a.txt")).unwrap(), b"changed");
    assert_eq!(std::fs::read(work.join("b.txt")).unwrap(), b"one");

    // Two checkpoints: before each batch that changed a file (not the read).
    let listed = ok(&burrow(
        dir.path(),
        &server,
        None,
        &["--json", "thread", "checkpoints", "t1", "--session", &spec],
    ));
    let ks = listed["checkpoints"].as_array().unwrap().clone();
    assert_eq!(ks.len(), 2, "{listed}");
    assert_eq!(ks[0]["files"], json!(["/b.txt"]));
    assert_eq!(ks[1]["files"], json!(["/a.txt"]));
    assert_eq!(ks[0]["metadata"]["tools"], json!(["write_file"]));
    assert!(ks[0]["created_at"].as_str().unwrap().ends_with('Z'));
    let (first, second) = (
        ks[0]["id"].as_str().unwrap().to_owned(),
        ks[1]["id"].as_str().unwrap().to_owned(),
    );
    // Plain text: one line per checkpoint.
    let plain = burrow(
        dir.path(),
        &server,
        None,
        &["thread", "checkpoints", "t1", "--session", &spec],
    );
    assert_eq!(plain.code, 0, "{}", plain.stderr);
    assert_eq!(plain.stdout.lines().count(), 2);
    assert!(plain.stdout.lines().next().unwrap().starts_with(&first));

    // Rewind to before the third turn: /a.txt has its bytes back exactly.
    let rewound = ok(&burrow(
        dir.path(),
        &server,
        None,
        &[
            "--json",
            "thread",
            "rewind",
            "t1",
            "--to",
            &second,
            "--session",
            &spec,
        ],
    ));
    assert_eq!(rewound["rewound"]["restored"], json!(["/a.txt"]));
    assert_eq!(rewound["rewound"]["conversation"], json!(true));
    assert_eq!(std::fs::read(work.join("a.txt")).unwrap(), ORIGINAL);
    assert_eq!(std::fs::read(work.join("b.txt")).unwrap(), b"one");

    // The next run's request holds the conversation at the checkpoint.
    let next = ReplayServer::start(vec![chat(Some("Again."), None)]);
    let mut args = vec!["run", "PROMPT-TWO", "--model", MODEL];
    args.extend_from_slice(&session);
    let out = burrow(dir.path(), &next, Some(KEY), &args);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let sent = messages_text(&next, 0);
    for expected in ["PROMPT-ONE", "call_r", "call_b", "PROMPT-TWO"] {
        assert!(sent.contains(expected), "{expected} missing: {sent}");
    }
    for gone in ["call_a", "Done-ONE."] {
        assert!(!sent.contains(gone), "{gone} still sent: {sent}");
    }

    // A checkpoint on demand, listed with its label.
    let made = ok(&burrow(
        dir.path(),
        &next,
        None,
        &[
            "--json",
            "thread",
            "checkpoint",
            "t1",
            "--label",
            "by hand",
            "--session",
            &spec,
        ],
    ));
    let by_hand = made["checkpoint"]["id"].as_str().unwrap().to_owned();
    let listed = ok(&burrow(
        dir.path(),
        &next,
        None,
        &["--json", "thread", "checkpoints", "t1", "--session", &spec],
    ));
    let last = listed["checkpoints"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["id"], json!(by_hand));
    assert_eq!(last["label"], json!("by hand"));

    // Files only, to before the second turn: /b.txt (created then) is gone, the
    // conversation goes on.
    let files = ok(&burrow(
        dir.path(),
        &next,
        None,
        &[
            "--json",
            "thread",
            "rewind",
            "t1",
            "--to",
            &first,
            "--files-only",
            "--session",
            &spec,
        ],
    ));
    assert_eq!(files["rewound"]["conversation"], json!(false));
    assert!(!work.join("b.txt").exists());
    assert_eq!(std::fs::read(work.join("a.txt")).unwrap(), ORIGINAL);
    let third = ReplayServer::start(vec![chat(Some("Three."), None)]);
    let mut args = vec!["run", "PROMPT-THREE", "--model", MODEL];
    args.extend_from_slice(&session);
    let out = burrow(dir.path(), &third, Some(KEY), &args);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let sent = messages_text(&third, 0);
    assert!(
        sent.contains("PROMPT-TWO") && sent.contains("call_b"),
        "{sent}"
    );

    // Conversation only, to before the second turn: the files stay.
    std::fs::write(work.join("c.txt"), "kept").unwrap();
    let conv = ok(&burrow(
        dir.path(),
        &third,
        None,
        &[
            "--json",
            "thread",
            "rewind",
            "t1",
            "--to",
            &first,
            "--conversation-only",
            "--session",
            &spec,
        ],
    ));
    assert_eq!(conv["rewound"]["restored"], json!([]));
    assert_eq!(std::fs::read(work.join("c.txt")).unwrap(), b"kept");
    let fourth = ReplayServer::start(vec![chat(Some("Four."), None)]);
    let mut args = vec!["run", "PROMPT-FOUR", "--model", MODEL];
    args.extend_from_slice(&session);
    let out = burrow(dir.path(), &fourth, Some(KEY), &args);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let sent = messages_text(&fourth, 0);
    assert!(
        sent.contains("PROMPT-ONE") && sent.contains("call_r"),
        "{sent}"
    );
    for gone in ["call_b", "PROMPT-TWO", "PROMPT-THREE"] {
        assert!(!sent.contains(gone), "{gone} still sent: {sent}");
    }

    // A fork from the second checkpoint: a new thread with that conversation.
    let forked = ok(&burrow(
        dir.path(),
        &fourth,
        None,
        &[
            "--json",
            "thread",
            "fork",
            "t1",
            "--at",
            &second,
            "--new",
            "t2",
            "--session",
            &spec,
        ],
    ));
    assert_eq!(forked["forked"]["thread"], json!("t2"));
    let fifth = ReplayServer::start(vec![chat(Some("Five."), None)]);
    let out = burrow(
        dir.path(),
        &fifth,
        Some(KEY),
        &[
            "run",
            "PROMPT-FIVE",
            "--model",
            MODEL,
            "--session",
            &spec,
            "--thread",
            "t2",
        ],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let sent = messages_text(&fifth, 0);
    for expected in ["PROMPT-ONE", "call_r", "call_b", "PROMPT-FIVE"] {
        assert!(sent.contains(expected), "{expected} missing: {sent}");
    }
    assert!(
        !sent.contains("call_a") && !sent.contains("PROMPT-FOUR"),
        "{sent}"
    );
}

#[test]
fn unknown_threads_and_checkpoints_and_both_modes_at_once_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("work")).unwrap();
    let spec = format!("sqlite:{}", dir.path().join("s.db").display());
    let server = ReplayServer::start(vec![chat(Some("Hi."), None)]);
    let out = burrow(
        dir.path(),
        &server,
        Some(KEY),
        &[
            "run",
            "hello",
            "--model",
            MODEL,
            "--session",
            &spec,
            "--thread",
            "t1",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let refused = |args: &[&str], code: i32, kind: &str| {
        let out = burrow(dir.path(), &server, None, args);
        assert_eq!(out.code, code, "{args:?}: {}\n{}", out.stdout, out.stderr);
        if code == 1 {
            let said: Value = serde_json::from_str(out.stdout.trim()).unwrap();
            assert_eq!(said["error"]["kind"], kind, "{said}");
            assert!(
                !said["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains(dir.path().to_str().unwrap())
            );
        }
    };
    refused(
        &[
            "--json",
            "thread",
            "rewind",
            "t1",
            "--to",
            "ck_nope",
            "--session",
            &spec,
        ],
        1,
        "not_found",
    );
    refused(
        &[
            "--json",
            "thread",
            "rewind",
            "nope",
            "--to",
            "ck_nope",
            "--session",
            &spec,
        ],
        1,
        "not_found",
    );
    refused(
        &[
            "--json",
            "thread",
            "checkpoints",
            "nope",
            "--session",
            &spec,
        ],
        1,
        "not_found",
    );
    refused(
        &[
            "--json",
            "thread",
            "fork",
            "t1",
            "--at",
            "ck_nope",
            "--new",
            "t9",
            "--session",
            &spec,
        ],
        1,
        "not_found",
    );
    refused(
        &[
            "--json",
            "thread",
            "rewind",
            "t1",
            "--to",
            "x",
            "--files-only",
            "--conversation-only",
            "--session",
            &spec,
        ],
        2,
        "",
    );
}
