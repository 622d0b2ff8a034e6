//! `burrow thread compact` of a rewound thread (ADR 0297), on a SQLite session and an fs backend with the local OpenAI wire server: the summary request reads the conversation at the checkpoint, never the entries the rewind passed over, and the next run reads the summary of that view.

use burrow_testkit::http::ReplayServer;

use super::run_providers::{KEY, body, burrow, chat};
use super::thread_checkpoint::{MODEL, ok, read_then_two_writes};

#[test]
fn a_rewound_thread_is_compacted_from_its_view_at_the_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    std::fs::write(work.join("a.txt"), "before").unwrap();
    let spec = format!("sqlite:{}", dir.path().join("s.db").display());
    let session = ["--session", spec.as_str(), "--thread", "t1"];

    // Read /a.txt, create /b.txt, rewrite /a.txt, answer: two checkpoints.
    let server = ReplayServer::start(read_then_two_writes("Done-PASSED-OVER."));
    let mut args = vec!["run", "PROMPT-ONE", "--model", MODEL];
    args.extend_from_slice(&session);
    let out = burrow(dir.path(), &server, Some(KEY), &args);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let listed = ok(&burrow(
        dir.path(),
        &server,
        None,
        &["--json", "thread", "checkpoints", "t1", "--session", &spec],
    ));
    let ks = listed["checkpoints"].as_array().unwrap();
    assert_eq!(ks.len(), 2, "{listed}");
    let before_a = ks[1]["id"].as_str().unwrap().to_owned();
    ok(&burrow(
        dir.path(),
        &server,
        None,
        &[
            "--json",
            "thread",
            "rewind",
            "t1",
            "--to",
            &before_a,
            "--session",
            &spec,
        ],
    ));

    // By hand, keeping the last two messages (the call_b pair).
    let summary = ReplayServer::start(vec![chat(Some("REWOUND-SUMMARY"), None)]);
    let said = ok(&burrow(
        dir.path(),
        &summary,
        Some(KEY),
        &[
            "--json",
            "thread",
            "compact",
            "t1",
            "--session",
            &spec,
            "--keep",
            "2",
        ],
    ));
    assert_eq!(said["type"], "compacted", "{said}");
    assert_eq!(said["kept"], 2, "{said}");
    let asked = body(&summary, 0).to_string();
    for expected in ["PROMPT-ONE", "call_r"] {
        assert!(asked.contains(expected), "{expected} missing: {asked}");
    }
    for gone in ["call_a", "Done-PASSED-OVER."] {
        assert!(!asked.contains(gone), "{gone} summarised: {asked}");
    }

    // The next run reads the summary and the kept pair, nothing passed over.
    let next = ReplayServer::start(vec![chat(Some("Again."), None)]);
    let mut args = vec!["run", "PROMPT-TWO", "--model", MODEL];
    args.extend_from_slice(&session);
    let out = burrow(dir.path(), &next, Some(KEY), &args);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let sent = body(&next, 0)["messages"].to_string();
    for expected in ["REWOUND-SUMMARY", "call_b", "PROMPT-TWO"] {
        assert!(sent.contains(expected), "{expected} missing: {sent}");
    }
    for gone in ["call_a", "Done-PASSED-OVER."] {
        assert!(!sent.contains(gone), "{gone} still sent: {sent}");
    }
}
