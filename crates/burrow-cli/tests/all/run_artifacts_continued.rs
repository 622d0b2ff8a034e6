//! The artifact workspace of `burrow run --artifacts DIR` beyond one run, through the binary against a recording chat server on a SQLite session: a paused thread continued by `burrow run --thread` and a run taken over after SIGKILL keep the workspace they were started with (ADR 0362); a new thread hears only of changes made after it started, unless `--watch-after` says otherwise (ADR 0363); change notes do not go through UserPromptSubmit hooks (ADR 0363); a `task` child gets its own place in the workspace (ADR 0364).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use burrow_testkit::http::ReplayServer;
use serde_json::{Value, json};

use super::run_artifacts::{artifact, kinds, notes, system, tool_names, tool_result};
use super::run_providers::{KEY, burrow, chat};

/// The session file of `dir`.
fn session(dir: &Path) -> String {
    format!("sqlite:{}", dir.join("s.db").display())
}

/// `burrow --json run PROMPT --model openai:gpt-test --session S --thread T` and `extra`.
fn run_args<'a>(
    prompt: &'a str,
    session: &'a str,
    thread: &'a str,
    extra: &[&'a str],
) -> Vec<&'a str> {
    let mut args = vec![
        "--json",
        "run",
        prompt,
        "--model",
        "openai:gpt-test",
        "--session",
        session,
        "--thread",
        thread,
    ];
    args.extend_from_slice(extra);
    args
}

/// The actors of plan-1's revisions, oldest first.
fn actors(dir: &Path, session: &str) -> Vec<String> {
    let history = artifact(dir, &[], &["history", "plan-1"], session);
    history["revisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["actor"]["name"].as_str().unwrap().to_owned())
        .collect()
}

/// ana creates plan-1 (version 1) through `burrow artifact create`.
fn person_creates_plan(dir: &Path, session: &str) {
    std::fs::write(
        dir.join("plan.json"),
        json!({"title": "Ship", "text": "write\ntest\n"}).to_string(),
    )
    .unwrap();
    artifact(dir, &[], &["create", "plan", "plan.json"], session);
}

/// ana's `burrow artifact edit plan-1 --base BASE --old OLD --new NEW`.
fn ana_edits(dir: &Path, session: &str, base: &str, old: &str, new: &str) -> Value {
    artifact(
        dir,
        &[],
        &["edit", "plan-1", "--base", base, "--old", old, "--new", new],
        session,
    )
}

fn assert_artifact_tools(server: &ReplayServer, i: usize) {
    let tools = tool_names(server, i);
    for name in ["list_artifacts", "read_artifact", "edit_artifact"] {
        assert!(tools.iter().any(|t| t == name), "{name} not in {tools:?}");
    }
}

#[test]
fn a_paused_thread_continued_by_run_keeps_the_workspace_it_was_started_with() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    kinds(d);
    let session = session(d);
    let server = ReplayServer::start([
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
        // The continued segment: requests 2 and 3.
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
        &run_args("make a plan", &session, "t1", &["--artifacts", "kinds"]),
    );
    assert_eq!(paused.code, 3, "{}\n{}", paused.stdout, paused.stderr);
    let edited = ana_edits(d, &session, "1", "write", "write it");
    assert_eq!(edited["artifact"]["version"], 2);

    // The answer is the next prompt to the thread, from another folder and
    // without --artifacts: the run goes on in its own workspace.
    let elsewhere = d.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let answered = burrow(
        &elsewhere,
        &server,
        Some(KEY),
        &run_args("yes", &session, "t1", &[]),
    );
    assert_eq!(answered.code, 0, "{}\n{}", answered.stdout, answered.stderr);
    assert_eq!(server.request_count(), 4);
    assert_artifact_tools(&server, 2);
    let noted = notes(&server, 2);
    assert_eq!(noted.len(), 1, "{noted:?}");
    assert!(
        noted[0].contains("ana changed plan-1 (plan): now at version 2"),
        "{noted:?}"
    );
    assert!(
        system(&server, 2).contains("<artifact id=\"plan-1\" kind=\"plan\" version=\"2\">"),
        "{}",
        system(&server, 2)
    );
    let applied = tool_result(&server, 3, "e1");
    assert!(
        applied.starts_with("Changed plan-1 (plan): it is now at version 3"),
        "{applied}"
    );
    assert_eq!(actors(d, &session), ["thread:t1", "ana", "thread:t1"]);
}

/// The shell of a hook that holds its run: it touches `started`, then waits for `go`.
const HOLD: &str = "touch started; while [ ! -e go ]; do sleep 0.01; done";

#[test]
fn a_run_taken_over_after_sigkill_keeps_the_workspace_it_was_started_with() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    kinds(d);
    let session = session(d);
    // The holder: a scripted model creating the plan, then reading it; a
    // PreToolUse hook holds the read until the test has killed the holder.
    let script = d.join("holder.jsonl");
    let answers = [
        json!({"tool_calls": [{"id": "c1", "name": "create_artifact", "arguments":
            {"kind": "plan", "snapshot": {"title": "Ship", "text": "write\ntest\n"}}}]}),
        json!({"tool_calls": [{"id": "r1", "name": "read_artifact", "arguments": {"id": "plan-1"}}]}),
        json!({"text": "never"}),
    ];
    let text: String = answers.iter().map(|a| format!("{a}\n")).collect();
    std::fs::write(&script, text).unwrap();
    let settings = d.join("hold.json");
    let hooks = json!({"hooks": {"PreToolUse": [{"matcher": "read_artifact",
        "hooks": [{"type": "command", "command": HOLD}]}]}});
    std::fs::write(&settings, hooks.to_string()).unwrap();
    let model = format!("scripted:{}", script.display());
    let settings = settings.display().to_string();
    let work = format!("fs:{}", d.join("work").display());
    std::fs::create_dir(d.join("work")).unwrap();
    let mut holder = Command::new(env!("CARGO_BIN_EXE_burrow"))
        .current_dir(d)
        .args([
            "--backend",
            &work,
            "--json",
            "run",
            "make a plan",
            "--model",
            &model,
            "--session",
            &session,
            "--thread",
            "t1",
            "--artifacts",
            "kinds",
            "--settings",
            &settings,
            "--claim-ttl",
            "1",
            "--command-id",
            "k1",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = d.join("started");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !started.exists() {
        assert!(Instant::now() < deadline, "the holder's hook never started");
        assert!(
            holder.try_wait().unwrap().is_none(),
            "the holder ended before its hook held it"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    holder.kill().unwrap();
    holder.wait().unwrap();
    std::fs::write(d.join("go"), b"").unwrap();

    // A person edits the plan the dead run made.
    let edited = ana_edits(d, &session, "1", "write", "write it");
    assert_eq!(edited["artifact"]["version"], 2);

    // The retried command, from another folder and without --artifacts,
    // takes the thread over and carries the run on in its workspace.
    let server = ReplayServer::start([
        chat(
            None,
            Some((
                "e1",
                "edit_artifact",
                json!({"id": "plan-1", "base_version": 2, "old": "test", "new": "test twice"}),
            )),
        ),
        chat(Some("Carried on."), None),
    ]);
    let elsewhere = d.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let taker = burrow(
        &elsewhere,
        &server,
        Some(KEY),
        &run_args(
            "make a plan",
            &session,
            "t1",
            &["--claim-ttl", "1", "--command-id", "k1"],
        ),
    );
    assert_eq!(taker.code, 0, "{}\n{}", taker.stdout, taker.stderr);
    assert!(taker.stdout.contains("\"taken_over\""), "{}", taker.stdout);
    assert_eq!(server.request_count(), 2);
    assert_artifact_tools(&server, 0);
    // The held read was run again by the taker, with the workspace's tool.
    let read = tool_result(&server, 0, "r1");
    assert!(
        read.contains("<artifact id=\"plan-1\" kind=\"plan\" version=\"2\">"),
        "{read}"
    );
    let noted = notes(&server, 0);
    assert_eq!(noted.len(), 1, "{noted:?}");
    assert!(
        noted[0].contains("ana changed plan-1 (plan): now at version 2"),
        "{noted:?}"
    );
    let applied = tool_result(&server, 1, "e1");
    assert!(
        applied.starts_with("Changed plan-1 (plan): it is now at version 3"),
        "{applied}"
    );
    assert_eq!(actors(d, &session), ["thread:t1", "ana", "thread:t1"]);
}

#[test]
fn a_new_thread_hears_only_of_changes_after_it_started_unless_watch_after_says() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    kinds(d);
    let session = session(d);
    // A busy workspace: a person made a plan and changed it before any thread ran.
    person_creates_plan(d, &session);
    ana_edits(d, &session, "1", "write", "write it");
    let server = ReplayServer::start([
        chat(Some("First."), None),
        chat(Some("Second."), None),
        chat(Some("Everything."), None),
    ]);
    let first = burrow(
        d,
        &server,
        Some(KEY),
        &run_args("hello", &session, "t2", &["--artifacts", "kinds"]),
    );
    assert_eq!(first.code, 0, "{}\n{}", first.stdout, first.stderr);
    assert_eq!(notes(&server, 0), Vec::<String>::new());

    // A change after the thread started reaches its next run, alone.
    ana_edits(d, &session, "2", "test", "test twice");
    let second = burrow(
        d,
        &server,
        Some(KEY),
        &run_args("again", &session, "t2", &["--artifacts", "kinds"]),
    );
    assert_eq!(second.code, 0, "{}\n{}", second.stdout, second.stderr);
    let noted = notes(&server, 1);
    assert_eq!(noted.len(), 1, "{noted:?}");
    assert!(noted[0].contains("now at version 3"), "{noted:?}");
    assert!(!noted[0].contains("version 2"), "{noted:?}");
    assert!(!noted[0].contains("created"), "{noted:?}");

    // --watch-after 0: a new thread hears of every change ever made.
    let all = burrow(
        d,
        &server,
        Some(KEY),
        &run_args(
            "everything",
            &session,
            "t3",
            &["--artifacts", "kinds", "--watch-after", "0"],
        ),
    );
    assert_eq!(all.code, 0, "{}\n{}", all.stdout, all.stderr);
    let noted = notes(&server, 2);
    assert_eq!(noted.len(), 1, "{noted:?}");
    for line in [
        "ana created plan-1 (plan): now at version 1",
        "now at version 2",
        "now at version 3",
    ] {
        assert!(noted[0].contains(line), "{line} not in {noted:?}");
    }

    // Without --artifacts, --watch-after is refused as bad usage.
    let refused = burrow(
        d,
        &server,
        Some(KEY),
        &run_args("x", &session, "t4", &["--watch-after", "3"]),
    );
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert_eq!(server.request_count(), 3);
}

#[test]
fn change_notes_do_not_go_through_user_prompt_submit_hooks() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    kinds(d);
    let session = session(d);
    // The hook keeps every prompt it is given and adds a line of context.
    let log = d.join("prompts.log");
    let settings = d.join("hooks.json");
    let hooks = json!({"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command",
        "command": format!("cat >> '{}'; echo >> '{}'; echo prompt-context", log.display(), log.display())}]}]}});
    std::fs::write(&settings, hooks.to_string()).unwrap();
    let settings = settings.display().to_string();
    let server = ReplayServer::start([
        chat(
            None,
            Some((
                "c1",
                "create_artifact",
                json!({"kind": "plan", "snapshot": {"title": "Ship", "text": "write\ntest\n"}}),
            )),
        ),
        chat(Some("Planned."), None),
        chat(Some("Seen."), None),
    ]);
    let extra = ["--artifacts", "kinds", "--settings", settings.as_str()];
    let first = burrow(
        d,
        &server,
        Some(KEY),
        &run_args("make a plan", &session, "t1", &extra),
    );
    assert_eq!(first.code, 0, "{}\n{}", first.stdout, first.stderr);
    ana_edits(d, &session, "1", "write", "write it");
    let second = burrow(
        d,
        &server,
        Some(KEY),
        &run_args("look again", &session, "t1", &extra),
    );
    assert_eq!(second.code, 0, "{}\n{}", second.stdout, second.stderr);

    // The hook saw the two prompts, never the note.
    let seen: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let prompts: Vec<&str> = seen.iter().map(|v| v["prompt"].as_str().unwrap()).collect();
    assert_eq!(prompts, ["make a plan", "look again"]);
    // The note reached the model as it was made, without the hook's context;
    // the prompt carries that context.
    let noted = notes(&server, 2);
    assert_eq!(noted.len(), 1, "{noted:?}");
    assert!(noted[0].contains("ana changed plan-1"), "{noted:?}");
    assert!(!noted[0].contains("prompt-context"), "{noted:?}");
    let messages = super::run_artifacts::messages(&server, 2);
    assert!(
        messages.iter().any(|m| m["role"] == "user"
            && m["content"]
                .as_str()
                .is_some_and(|t| t.starts_with("look again") && t.contains("prompt-context"))),
        "{messages:?}"
    );
}

#[test]
fn a_task_child_works_in_the_workspace_as_its_own_agent() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    kinds(d);
    let session = session(d);
    person_creates_plan(d, &session);
    let agents = d.join("agents");
    std::fs::create_dir(&agents).unwrap();
    std::fs::write(
        agents.join("planner.md"),
        "---\nname: planner\ndescription: Keeps plans.\n---\nYou keep plans.\n",
    )
    .unwrap();
    let server = ReplayServer::start([
        // The parent: request 0 starts the child.
        chat(
            None,
            Some((
                "k1",
                "task",
                json!({"description": "update", "prompt": "Test twice.", "subagent_type": "planner"}),
            )),
        ),
        // The child: requests 1 to 3.
        chat(None, Some(("r1", "read_artifact", json!({"id": "plan-1"})))),
        chat(
            None,
            Some((
                "e1",
                "edit_artifact",
                json!({"id": "plan-1", "base_version": 1, "old": "test", "new": "test twice"}),
            )),
        ),
        chat(Some("Done."), None),
        // The parent again: request 4.
        chat(Some("Delegated."), None),
    ]);
    let agents = agents.display().to_string();
    let out = burrow(
        d,
        &server,
        Some(KEY),
        &run_args(
            "delegate it",
            &session,
            "t1",
            &["--artifacts", "kinds", "--agents", &agents],
        ),
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(server.request_count(), 5);
    // The child has the tools, hears nothing of what came before it, and
    // follows what it read.
    assert_artifact_tools(&server, 1);
    assert_eq!(notes(&server, 1), Vec::<String>::new());
    assert!(
        !system(&server, 1).contains("<artifact "),
        "{}",
        system(&server, 1)
    );
    assert!(
        system(&server, 2).contains("<artifact id=\"plan-1\" kind=\"plan\" version=\"1\">"),
        "{}",
        system(&server, 2)
    );
    let applied = tool_result(&server, 3, "e1");
    assert!(
        applied.starts_with("Changed plan-1 (plan): it is now at version 2"),
        "{applied}"
    );
    // The change is the child's; its parent is told of it.
    assert_eq!(actors(d, &session), ["ana", "thread:t1/task-k1"]);
    let noted = notes(&server, 4);
    assert_eq!(noted.len(), 1, "{noted:?}");
    assert!(noted[0].contains("- thread:t1/task-k1 (run "), "{noted:?}");
    assert!(
        noted[0].contains("changed plan-1 (plan): now at version 2"),
        "{noted:?}"
    );
}
