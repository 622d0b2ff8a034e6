//! `burrow run --artifacts DIR` through the binary against a local chat-completions server that records every request: the agent creates a plan (run 1), a person edits it with `burrow artifact edit`, the agent's next request (run 2, same thread) carries the change note and the fresh rendering through the kind's `KIND.md` template, its stale edit is a conflict, it reads again and its retried edit applies; a third run gets no note twice. On a SQLite session file, and on PostgreSQL (module `postgres`).

use std::path::Path;

use burrow_testkit::http::ReplayServer;
use serde_json::{Value, json};

use super::run_providers::{KEY, burrow, chat};
use super::support::burrow_in_env;

/// The kinds folder: a plan schema and its template.
pub(super) fn kinds(dir: &Path) {
    let kinds = dir.join("kinds");
    std::fs::create_dir(&kinds).unwrap();
    let schema = json!({
        "type": "object",
        "required": ["title", "text"],
        "properties": {"title": {"type": "string"}, "text": {"type": "string"}},
        "additionalProperties": false
    });
    std::fs::write(kinds.join("plan.schema.json"), schema.to_string()).unwrap();
    std::fs::write(kinds.join("plan.md"), "# {{title}}\nSteps:\n{{/text}}").unwrap();
}

/// The messages of the server's request `i`.
pub(super) fn messages(server: &ReplayServer, i: usize) -> Vec<Value> {
    let body: Value = serde_json::from_slice(&server.requests()[i].body).unwrap();
    body["messages"].as_array().unwrap().clone()
}

/// The instructions of request `i` (empty when it had none).
pub(super) fn system(server: &ReplayServer, i: usize) -> String {
    messages(server, i)
        .iter()
        .find(|m| m["role"] == "system")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// The user messages of request `i` that are change notes.
pub(super) fn notes(server: &ReplayServer, i: usize) -> Vec<String> {
    messages(server, i)
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str())
        .filter(|t| t.starts_with("<workspace-changes"))
        .map(str::to_owned)
        .collect()
}

/// The tool result of request `i` answering call `id`.
pub(super) fn tool_result(server: &ReplayServer, i: usize, id: &str) -> String {
    messages(server, i)
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
        .and_then(|m| m["content"].as_str())
        .unwrap_or_else(|| panic!("no result of {id} in request {i}"))
        .to_owned()
}

fn run(dir: &Path, server: &ReplayServer, global: &[&str], prompt: &str, session: &str) {
    let mut args = global.to_vec();
    args.extend_from_slice(&[
        "--json",
        "run",
        prompt,
        "--model",
        "openai:gpt-test",
        "--artifacts",
        "kinds",
        "--session",
        session,
        "--thread",
        "t1",
    ]);
    let out = burrow(dir, server, Some(KEY), &args);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
}

pub(super) fn artifact(dir: &Path, global: &[&str], args: &[&str], session: &str) -> Value {
    let mut all = global.to_vec();
    all.push("--json");
    all.push("artifact");
    all.extend_from_slice(args);
    all.extend_from_slice(&["--session", session, "--artifacts", "kinds"]);
    let out = burrow_in_env(dir, &all, b"", &[("USER", "ana")]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The whole story on `session` as `global` (a tenant) says.
fn story(session: &str, global: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    kinds(dir);
    let server = ReplayServer::start([
        // Run 1: requests 0 and 1.
        chat(
            None,
            Some((
                "c1",
                "create_artifact",
                json!({"kind": "plan", "snapshot": {"title": "Ship", "text": "write\ntest\n"}}),
            )),
        ),
        chat(Some("Planned."), None),
        // Run 2: requests 2 to 5.
        chat(
            None,
            Some((
                "e1",
                "edit_artifact",
                json!({"id": "plan-1", "base_version": 1, "old": "test", "new": "test twice"}),
            )),
        ),
        chat(None, Some(("r1", "read_artifact", json!({"id": "plan-1"})))),
        chat(
            None,
            Some((
                "e2",
                "edit_artifact",
                json!({"id": "plan-1", "base_version": 2, "old": "test", "new": "test twice"}),
            )),
        ),
        chat(Some("Updated."), None),
        // Run 3: request 6.
        chat(Some("Nothing new."), None),
    ]);

    run(dir, &server, global, "make a plan", session);
    assert_eq!(server.request_count(), 2);
    assert!(
        tool_result(&server, 1, "c1").starts_with("Created plan-1 (plan)"),
        "{}",
        tool_result(&server, 1, "c1")
    );
    assert!(notes(&server, 0).is_empty() && notes(&server, 1).is_empty());
    // The plan it made is rendered through plan.md in its next request.
    assert!(
        system(&server, 1).contains(
            "<artifact id=\"plan-1\" kind=\"plan\" version=\"1\">\n# Ship\nSteps:\nwrite\ntest\n\n</artifact>"
        ),
        "{}",
        system(&server, 1)
    );

    // A person edits the plan through the CLI.
    let edited = artifact(
        dir,
        global,
        &[
            "edit",
            "plan-1",
            "--base",
            "1",
            "--old",
            "write",
            "--new",
            "write it",
            "--summary",
            "clearer",
        ],
        session,
    );
    assert_eq!(edited["artifact"]["version"], 2);

    run(dir, &server, global, "carry on", session);
    assert_eq!(server.request_count(), 6);
    // Run 2's first request: the change note, once, and the fresh rendering.
    let first = notes(&server, 2);
    assert_eq!(first.len(), 1, "{first:?}");
    let note = &first[0];
    assert!(
        note.starts_with("<workspace-changes through=\"2\">"),
        "{note}"
    );
    assert!(
        note.contains("ana changed plan-1 (plan): now at version 2; summary: clearer; patch: "),
        "{note}"
    );
    assert!(
        !note.contains("created"),
        "its own create is no news: {note}"
    );
    assert!(
        system(&server, 2).contains("version=\"2\">\n# Ship\nSteps:\nwrite it\ntest\n"),
        "{}",
        system(&server, 2)
    );
    // Its stale edit is a conflict it can act on; nothing changed.
    let conflict = tool_result(&server, 3, "e1");
    assert!(conflict.starts_with("Conflict: "), "{conflict}");
    assert!(
        conflict.contains("Read it again (it is at version 2)"),
        "{conflict}"
    );
    assert!(tool_result(&server, 4, "r1").contains("version=\"2\""));
    let applied = tool_result(&server, 5, "e2");
    assert!(
        applied.starts_with("Changed plan-1 (plan): it is now at version 3"),
        "{applied}"
    );
    // The note was given once and kept; its own edit makes no note; the
    // instructions follow the head.
    for i in 3..6 {
        assert_eq!(notes(&server, i), first, "request {i}");
    }
    assert!(system(&server, 5).contains("version=\"3\">\n# Ship\nSteps:\nwrite it\ntest twice\n"));

    // Run 3 on the same thread: the old note is in its history, no new one.
    run(dir, &server, global, "anything new?", session);
    assert_eq!(notes(&server, 6), first);

    let shown = artifact(dir, global, &["show", "plan-1"], session);
    assert_eq!(
        shown["artifact"]["snapshot"],
        json!({"title": "Ship", "text": "write it\ntest twice\n"})
    );
    let history = artifact(dir, global, &["history", "plan-1"], session);
    let actors: Vec<String> = history["revisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["actor"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(actors, ["thread:t1", "ana", "thread:t1"]);
}

#[test]
fn a_persons_edit_reaches_the_agents_next_request_and_its_stale_edit_is_resolved() {
    let dir = tempfile::tempdir().unwrap();
    let session = format!("sqlite:{}", dir.path().join("s.db").display());
    story(&session, &[]);
}

#[test]
fn without_notices_the_rendering_is_fresh_and_no_note_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    kinds(d);
    let session = format!("sqlite:{}", d.join("s.db").display());
    let created = {
        std::fs::write(
            d.join("plan.json"),
            json!({"title": "Mine", "text": "a\n"}).to_string(),
        )
        .unwrap();
        artifact(d, &[], &["create", "plan", "plan.json"], &session)
    };
    assert_eq!(created["artifact"]["id"], "plan-1");
    let server = ReplayServer::start([
        chat(None, Some(("r1", "read_artifact", json!({"id": "plan-1"})))),
        chat(Some("Read."), None),
    ]);
    let out = burrow(
        d,
        &server,
        Some(KEY),
        &[
            "run",
            "read it",
            "--model",
            "openai:gpt-test",
            "--artifacts",
            "kinds",
            "--no-notices",
            "--session",
            &session,
            "--thread",
            "t1",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(notes(&server, 0).is_empty() && notes(&server, 1).is_empty());
    // Followed once read: rendered in the next request's instructions.
    assert!(!system(&server, 0).contains("<artifact "));
    assert!(
        system(&server, 1)
            .contains("<artifact id=\"plan-1\" kind=\"plan\" version=\"1\">\n# Mine\n")
    );
}

#[test]
fn a_bad_kinds_folder_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("kinds")).unwrap();
    let server = ReplayServer::start([]);
    let out = burrow(
        d,
        &server,
        Some(KEY),
        &[
            "run",
            "go",
            "--model",
            "openai:gpt-test",
            "--artifacts",
            "kinds",
        ],
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("no KIND.schema.json"), "{}", out.stderr);
    assert_eq!(server.request_count(), 0);
}

/// The tool names of request `i`.
pub(super) fn tool_names(server: &ReplayServer, i: usize) -> Vec<String> {
    let body: Value = serde_json::from_slice(&server.requests()[i].body).unwrap();
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn an_answered_pause_resumes_with_the_workspace_the_run_was_started_with() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    kinds(d);
    let session = format!("sqlite:{}", d.join("s.db").display());
    let server = ReplayServer::start([
        // Run 1 until the pause: requests 0 and 1.
        chat(
            None,
            Some((
                "c1",
                "create_artifact",
                json!({"kind": "plan", "snapshot": {"title": "Ship", "text": "write\ntest\n"}}),
            )),
        ),
        chat(
            None,
            Some(("q1", "ask_user", json!({"question": "Test twice?"}))),
        ),
        // The resumed segment: requests 2 and 3.
        chat(
            None,
            Some((
                "e1",
                "edit_artifact",
                json!({"id": "plan-1", "base_version": 2, "old": "test", "new": "test twice"}),
            )),
        ),
        chat(Some("Updated."), None),
    ]);
    let paused = burrow(
        d,
        &server,
        Some(KEY),
        &[
            "--json",
            "run",
            "make a plan",
            "--model",
            "openai:gpt-test",
            "--artifacts",
            "kinds",
            "--session",
            &session,
            "--thread",
            "t1",
        ],
    );
    assert_eq!(paused.code, 3, "{}\n{}", paused.stdout, paused.stderr);
    let request: Value = paused
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "request")
        .unwrap_or_else(|| panic!("no request event: {}", paused.stdout));
    assert_eq!(server.request_count(), 2);

    // A person edits the plan while the run waits.
    let edited = artifact(
        d,
        &[],
        &[
            "edit", "plan-1", "--base", "1", "--old", "write", "--new", "write it",
        ],
        &session,
    );
    assert_eq!(edited["artifact"]["version"], 2);

    // Answered from another folder, with no --artifacts: the recorded folder is used.
    let elsewhere = d.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let answered = burrow(
        &elsewhere,
        &server,
        Some(KEY),
        &[
            "--json",
            "thread",
            "answer",
            "t1",
            "--request",
            request["request_id"].as_str().unwrap(),
            "yes",
            "--session",
            &session,
        ],
    );
    assert_eq!(answered.code, 0, "{}\n{}", answered.stdout, answered.stderr);
    assert_eq!(server.request_count(), 4);
    // The resumed segment's request: the artifact tools, the person's change
    // as a note and the plan rendered fresh through plan.md.
    let tools = tool_names(&server, 2);
    for name in [
        "read_artifact",
        "edit_artifact",
        "create_artifact",
        "ask_user",
    ] {
        assert!(tools.iter().any(|t| t == name), "{name} not in {tools:?}");
    }
    let noted = notes(&server, 2);
    assert_eq!(noted.len(), 1, "{noted:?}");
    assert!(
        noted[0].contains("ana changed plan-1 (plan): now at version 2"),
        "{noted:?}"
    );
    assert!(
        system(&server, 2).contains(
            "<artifact id=\"plan-1\" kind=\"plan\" version=\"2\">\n# Ship\nSteps:\nwrite it\ntest\n"
        ),
        "{}",
        system(&server, 2)
    );
    // Its edit applies, as the agent of the thread.
    let applied = tool_result(&server, 3, "e1");
    assert!(
        applied.starts_with("Changed plan-1 (plan): it is now at version 3"),
        "{applied}"
    );
    assert!(system(&server, 3).contains("version=\"3\">\n# Ship\nSteps:\nwrite it\ntest twice\n"));
    let history = artifact(d, &[], &["history", "plan-1"], &session);
    let actors: Vec<&str> = history["revisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["actor"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(actors, ["thread:t1", "ana", "thread:t1"]);
}

#[test]
fn a_resumed_run_keeps_no_notices_and_a_missing_folder_leaves_it_paused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    kinds(d);
    let session = format!("sqlite:{}", d.join("s.db").display());
    let server = ReplayServer::start([
        chat(
            None,
            Some(("q1", "ask_user", json!({"question": "Which plan?"}))),
        ),
        chat(Some("Fine."), None),
    ]);
    let paused = burrow(
        d,
        &server,
        Some(KEY),
        &[
            "--json",
            "run",
            "wait",
            "--model",
            "openai:gpt-test",
            "--artifacts",
            "kinds",
            "--no-notices",
            "--session",
            &session,
            "--thread",
            "t1",
        ],
    );
    assert_eq!(paused.code, 3, "{}\n{}", paused.stdout, paused.stderr);
    let request: Value = paused
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "request")
        .unwrap();
    let request = request["request_id"].as_str().unwrap();
    // A person's change while it waits would be a note, were notices on.
    std::fs::write(
        d.join("plan.json"),
        json!({"title": "Theirs", "text": "a\n"}).to_string(),
    )
    .unwrap();
    artifact(d, &[], &["create", "plan", "plan.json"], &session);
    let answer = || {
        burrow(
            d,
            &server,
            Some(KEY),
            &[
                "thread",
                "answer",
                "t1",
                "--request",
                request,
                "yes",
                "--session",
                &session,
            ],
        )
    };
    // The recorded folder is gone: refused, nothing sent, the run still paused.
    std::fs::rename(d.join("kinds"), d.join("moved")).unwrap();
    let refused = answer();
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("the artifacts folder cannot be read"),
        "{}",
        refused.stderr
    );
    assert_eq!(server.request_count(), 1);
    std::fs::rename(d.join("moved"), d.join("kinds")).unwrap();
    let answered = answer();
    assert_eq!(answered.code, 0, "{}\n{}", answered.stdout, answered.stderr);
    assert_eq!(server.request_count(), 2);
    assert!(tool_names(&server, 1).iter().any(|t| t == "read_artifact"));
    assert!(notes(&server, 1).is_empty(), "{:?}", notes(&server, 1));
    let shown = burrow(
        d,
        &server,
        None,
        &["--json", "thread", "show", "t1", "--session", &session],
    );
    let shown: Value = serde_json::from_str(&shown.stdout).unwrap();
    let labels = &shown["runs"][0]["labels"];
    assert_eq!(labels["burrow.no_notices"], "true", "{shown}");
    assert_eq!(
        labels["burrow.artifacts"],
        d.join("kinds").display().to_string(),
        "{shown}"
    );
}

/// The same story on a PostgreSQL session (threads and artifacts in one server).
#[cfg(feature = "postgres")]
mod postgres {
    use burrow_testkit::{Part, require};

    #[test]
    fn a_persons_edit_reaches_the_agents_next_request_on_postgres() {
        let url = require(Part::Postgres);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let tenant = format!("h60-{}-{nanos}", std::process::id());
        super::story(&url, &["--tenant", &tenant]);
    }
}
