//! `burrow run --team FILE.json`: a scripted lead and two scripted members through the binary, on a SQLite session and on PostgreSQL (module `postgres`): the lead adds two items (one blocked by the other) and is refused the blocked one, a broadcast reaches both members once, both members claim each item and exactly one wins it, the blocked item is claimed once its blocker completed, the members' reports reach the lead, the run ends with every item completed and `thread show` lists the members; a bad team file runs nothing; Ctrl-C or `burrow thread stop` on the lead while a member holds a call stops both; a SIGKILL of the lead's process while a member holds a call, then the thread run again: the member resumes, no call runs twice, every item completes once.

use std::path::Path;

use serde_json::{Value, json};

use super::support::{burrow_in, json_lines as lines, script, session_spec};

fn call(id: &str, name: &str, arguments: Value) -> Value {
    json!({"id": id, "name": name, "arguments": arguments})
}

/// A member's script: claims `a` and completes it (answer 1-3), then claims
/// `b`, completes it and tells the lead (answers 4-6); its call ids start with `p`.
fn member_script(d: &Path, name: &str, p: &str) -> String {
    script(
        d,
        &format!("{name}.jsonl"),
        &[
            json!({"tool_calls": [call(&format!("{p}-claim-a"), "claim_todo", json!({"id": "a"}))]}),
            json!({"tool_calls": [call(&format!("{p}-done-a"), "complete_todo", json!({"id": "a"}))]}),
            json!({"text": format!("{name}: a handled")}),
            json!({"tool_calls": [call(&format!("{p}-claim-b"), "claim_todo", json!({"id": "b"}))]}),
            json!({"tool_calls": [
                call(&format!("{p}-done-b"), "complete_todo", json!({"id": "b"})),
                call(&format!("{p}-tell"), "send_message", json!({"to": "lead", "content": format!("{name} is done")})),
            ]}),
            json!({"text": format!("{name}: b handled")}),
        ],
    )
}

/// The folder's team file (alice and bob, each with its script) and the lead's script.
fn team(d: &Path) -> (String, String) {
    member_script(d, "alice", "al");
    member_script(d, "bob", "bo");
    let file = d.join("team.json");
    std::fs::write(
        &file,
        json!([
            {"name": "alice", "role": "coder", "description": "Writes code.",
             "instructions": "Be brief.", "model": "scripted:alice.jsonl"},
            {"name": "bob", "role": "coder", "model": "scripted:bob.jsonl"}
        ])
        .to_string(),
    )
    .unwrap();
    let lead = script(
        d,
        "lead.jsonl",
        &[
            json!({"tool_calls": [
                call("l-add", "team_todos", json!({"add": [
                    {"id": "a", "content": "write a"},
                    {"id": "b", "content": "write b", "blocked_by": ["a"]}
                ]})),
                call("l-claim-b", "claim_todo", json!({"id": "b"})),
                call("l-say", "send_message", json!({"content": "Plan: a first, then b."})),
            ]}),
            json!({"text": "The team is at work."}),
            json!({"tool_calls": [call("l-list", "team_todos", json!({}))]}),
            json!({"text": "All done."}),
        ],
    );
    (file.display().to_string(), lead)
}

fn result<'a>(events: &'a [Value], id: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["id"] == id)
        .unwrap_or_else(|| panic!("no result of {id}: {events:#?}"))
}

fn ok(events: &[Value], id: &str) -> bool {
    !result(events, id)["is_error"].as_bool().unwrap()
}

/// `burrow --json thread show THREAD` on `spec` with `extra` arguments.
fn show(d: &Path, spec: &str, extra: &[&str], thread: &str) -> Value {
    let mut args = vec!["--json"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["thread", "show", thread, "--session", spec]);
    let run = burrow_in(d, &args, b"");
    run.assert_code(0);
    run.json()
}

/// The whole story on the session `spec`, with `extra` global arguments.
fn story(d: &Path, spec: &str, extra: &[&str]) {
    let (file, lead) = team(d);
    let mut args = vec!["--json"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&[
        "run",
        "Build a and b.",
        "--model",
        &lead,
        "--team",
        &file,
        "--session",
        spec,
        "--thread",
        "t",
    ]);
    let run = burrow_in(d, &args, b"");
    run.assert_code(0);
    let events = lines(&run);
    let lead_run = events.iter().find(|e| e["type"] == "run_started").unwrap()["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        events.last().unwrap()["outcome"],
        "completed",
        "{}",
        run.stderr
    );

    // The lead was refused the blocked item, naming its blocker.
    let refused = result(&events, "l-claim-b");
    assert_eq!(refused["is_error"], true, "{refused}");
    let text = refused["content"].as_str().unwrap();
    assert!(text.contains("blocked by unfinished items: a"), "{text}");

    // Two waves of two member runs each, every one completed, under the lead's run.
    let started: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "member_started")
        .collect();
    let ended: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "member_ended")
        .collect();
    assert_eq!(started.len(), 4, "{events:#?}");
    assert_eq!(ended.len(), 4, "{events:#?}");
    for e in started.iter().chain(&ended) {
        assert_eq!(e["parent_run_id"], lead_run.as_str(), "{e}");
        let member = e["member"].as_str().unwrap();
        assert_eq!(e["thread_id"], format!("t/member-{member}"), "{e}");
    }
    for e in &ended {
        assert_eq!(e["outcome"], "completed", "{e}");
        assert_eq!(e["turns"], 3, "{e}");
    }
    for name in ["alice", "bob"] {
        let n = started.iter().filter(|e| e["member"] == name).count();
        assert_eq!(n, 2, "{name} ran {n} times");
    }
    // A member's frames carry its run id, the lead's and its name.
    let claim = events
        .iter()
        .find(|e| e["type"] == "tool_call" && e["id"] == "al-claim-a")
        .unwrap();
    assert_eq!(claim["parent_run_id"], lead_run.as_str());
    assert_eq!(claim["member"], "alice");

    // Each item: both claimed it, exactly one won, and only the winner completed it.
    for item in ["a", "b"] {
        let alice = ok(&events, &format!("al-claim-{item}"));
        let bob = ok(&events, &format!("bo-claim-{item}"));
        assert!(
            alice != bob,
            "item {item}: alice won {alice}, bob won {bob}"
        );
        assert_eq!(
            ok(&events, &format!("al-done-{item}")),
            alice,
            "item {item}"
        );
        assert_eq!(ok(&events, &format!("bo-done-{item}")), bob, "item {item}");
        let loser = if alice { "bo" } else { "al" };
        let refused = result(&events, &format!("{loser}-claim-{item}"))["content"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            refused.contains("already claimed by") || refused.contains("already completed"),
            "{refused}"
        );
    }

    // The members' reports reached the lead, and the list it read last is all completed.
    let listed = result(&events, "l-list")["content"].as_str().unwrap();
    assert!(listed.contains("- [a] write a (completed)"), "{listed}");
    assert!(listed.contains("- [b] write b (completed)"), "{listed}");
    let lead_thread = show(d, spec, extra, "t");
    let notes: Vec<&str> = lead_thread["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["message"]["text"].as_str())
        .filter(|t| t.starts_with("<team-message"))
        .collect();
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(
        notes
            .iter()
            .any(|n| n.contains("from=\"alice\" to=\"lead\">\nalice is done"))
    );
    // `thread show` lists each member with its runs and its last run's outcome.
    let members = lead_thread["members"].as_array().unwrap();
    let named: Vec<&str> = members
        .iter()
        .map(|m| m["member"].as_str().unwrap())
        .collect();
    assert_eq!(named, ["alice", "bob"], "{lead_thread}");
    for m in members {
        assert_eq!(m["runs"], 2, "{m}");
        assert_eq!(m["status"], "completed", "{m}");
        assert_eq!(m["reason"], Value::Null, "{m}");
        let last = ended.iter().rfind(|e| e["member"] == m["member"]).unwrap();
        assert_eq!(m["run_id"], last["run_id"], "{m}");
        assert!(m["usage"].is_object(), "{m}");
    }
    assert!(
        notes
            .iter()
            .any(|n| n.contains("from=\"bob\" to=\"lead\">\nbob is done"))
    );

    // The broadcast reached each member once, before its first request.
    for name in ["alice", "bob"] {
        let shown = show(d, spec, extra, &format!("t/member-{name}"));
        let runs = shown["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 2, "{shown}");
        assert_eq!(runs[0]["labels"]["burrow.team_member"], name);
        assert_eq!(runs[0]["labels"]["burrow.team"], "t");
        let texts: Vec<&str> = shown["history"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["message"]["role"] == "user")
            .map(|e| e["message"]["text"].as_str().unwrap())
            .collect();
        let broadcasts: Vec<&&str> = texts
            .iter()
            .filter(|t| t.starts_with("<team-message seq=\"1\" from=\"lead\" to=\"everyone\">"))
            .collect();
        assert_eq!(broadcasts.len(), 1, "{name}: {texts:?}");
        assert!(texts[0].starts_with("There is news for you"), "{texts:?}");
        assert!(texts[1].contains("Plan: a first, then b."), "{texts:?}");
    }
}

#[test]
fn a_lead_and_two_members_share_the_list_and_every_item_completes_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    story(d, &session_spec(d), &[]);
}

#[test]
fn without_a_session_the_team_runs_in_memory_and_prints_a_line_per_member_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (file, lead) = team(d);
    let run = burrow_in(
        d,
        &["run", "Build a and b.", "--model", &lead, "--team", &file],
        b"",
    );
    run.assert_code(0);
    assert_eq!(
        run.out(),
        "The team is at work.\nAll done.\n",
        "{}",
        run.stderr
    );
    for name in ["alice", "bob"] {
        let starts = run
            .stderr
            .matches(&format!("burrow: member {name} started (run "))
            .count();
        let ends = run
            .stderr
            .matches(&format!("burrow: member {name} completed: 3 turns, "))
            .count();
        assert_eq!((starts, ends), (2, 2), "{}", run.stderr);
        assert!(
            run.stderr.contains(&format!("/member-{name})")),
            "{}",
            run.stderr
        );
    }
}

#[test]
fn a_bad_team_file_is_one_sentence_and_nothing_runs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A lead whose first answer would write a file: it must never be asked.
    let lead = script(
        d,
        "lead.jsonl",
        &[
            json!({"tool_calls": [call("w", "write_file", json!({"file_path": "/x", "content": "x"}))]}),
        ],
    );
    let spec = session_spec(d);
    for (text, says) in [
        ("[{\"name\": \"lead\"}]", "a member cannot be named lead"),
        (
            "{\"members\": [{\"name\": \"a\", \"age\": 3}]}",
            "is not a JSON list of members",
        ),
        (
            "[{\"name\": \"a\", \"model\": \"scripted:missing.jsonl\"}]",
            "the member a: the model",
        ),
    ] {
        std::fs::write(d.join("bad.json"), text).unwrap();
        let run = burrow_in(
            d,
            &[
                "run",
                "go",
                "--model",
                &lead,
                "--team",
                "bad.json",
                "--session",
                &spec,
                "--thread",
                "t",
            ],
            b"",
        );
        run.assert_code(2);
        let err = run.stderr.trim_end();
        assert!(err.starts_with("burrow: the team file bad.json"), "{err}");
        assert!(err.contains(says), "{text}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            !d.join("session.db").exists(),
            "the session was opened: {err}"
        );
    }
}

/// Runs a lead whose one member holds a call (its PreToolUse hook waits),
/// stops the lead with `stop` (given the folder, the session spec and the
/// lead's pid), and checks that both ended stopped, the member's call ended
/// cancelled and no model request followed.
fn lead_stopped_while_a_member_waits(stop: impl FnOnce(&Path, &str, u32)) {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    script(
        d,
        "alice.jsonl",
        &[
            json!({"tool_calls": [call("al-claim", "claim_todo", json!({"id": "a"}))]}),
            json!({"text": "alice never says this"}),
        ],
    );
    std::fs::write(
        d.join("team.json"),
        json!([{"name": "alice", "model": "scripted:alice.jsonl"}]).to_string(),
    )
    .unwrap();
    let lead = script(
        d,
        "lead.jsonl",
        &[
            json!({"tool_calls": [call("l-add", "team_todos", json!({"add": [{"id": "a", "content": "write a"}]}))]}),
            json!({"text": "waiting"}),
            json!({"text": "the lead never says this"}),
        ],
    );
    let settings = d.join("block.json");
    let hook = json!({"hooks": {"PreToolUse": [{"matcher": "claim_todo", "hooks": [
        {"type": "command", "command": "touch started; while [ ! -e go ]; do sleep 0.01; done"}
    ]}]}});
    std::fs::write(&settings, hook.to_string()).unwrap();
    let spec = session_spec(d);
    let holder = Command::new(env!("CARGO_BIN_EXE_burrow"))
        .args([
            "--json",
            "run",
            "go",
            "--model",
            &lead,
            "--team",
            "team.json",
            "--settings",
            &settings.display().to_string(),
            "--session",
            &spec,
            "--thread",
            "t",
        ])
        .current_dir(d)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !d.join("started").exists() {
        assert!(
            Instant::now() < deadline,
            "the member never reached claim_todo"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    stop(d, &spec, holder.id());
    let out = holder.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    std::fs::write(d.join("go"), b"").unwrap();
    let lead = show(d, &spec, &[], "t");
    assert_eq!(lead["runs"][0]["status"], "stopped", "{lead}");
    let member = show(d, &spec, &[], "t/member-alice");
    let runs = member["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{member}");
    assert_eq!(runs[0]["status"], "stopped", "{member}");
    let history = member["history"].as_array().unwrap();
    let claim = history
        .iter()
        .find(|e| e["message"]["role"] == "tool_result" && e["message"]["call_id"] == "al-claim")
        .unwrap_or_else(|| panic!("no result of al-claim: {member}"));
    assert_eq!(claim["message"]["is_error"], true, "{claim}");
    assert!(
        claim["message"]["content"]
            .as_str()
            .unwrap()
            .contains("cancelled"),
        "{claim}"
    );
    // No model request after the stop: the cancelled result is the last entry.
    assert_eq!(
        history.last().unwrap()["message"]["role"],
        "tool_result",
        "{member}"
    );
    let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ended = events
        .iter()
        .find(|e| e["type"] == "member_ended")
        .unwrap_or_else(|| panic!("no member_ended: {events:#?}"));
    assert_eq!(ended["outcome"], "stopped", "{ended}");
}

#[test]
fn ctrl_c_on_the_lead_stops_its_members() {
    lead_stopped_while_a_member_waits(|_d, _spec, pid| {
        let sent = std::process::Command::new("kill")
            .args(["-INT", &pid.to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
    });
}

#[test]
fn thread_stop_on_the_lead_stops_its_members() {
    lead_stopped_while_a_member_waits(|d, spec, _pid| {
        let stopped = burrow_in(
            d,
            &["--json", "thread", "stop", "t", "--session", spec],
            b"",
        );
        stopped.assert_code(0);
        assert_eq!(stopped.json()["stopped"], true, "{}", stopped.out());
    });
}

/// `burrow thread show THREAD` (human) on `spec` with `extra` arguments.
fn show_text(d: &Path, spec: &str, extra: &[&str], thread: &str) -> String {
    let mut args = extra.to_vec();
    args.extend_from_slice(&["thread", "show", thread, "--session", spec]);
    let run = burrow_in(d, &args, b"");
    run.assert_code(0);
    run.out()
}

/// The entries of `thread`'s history with `role`.
fn entries<'a>(shown: &'a Value, role: &str) -> Vec<&'a Value> {
    shown["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["message"])
        .filter(|m| m["role"] == role)
        .collect()
}

/// Each run of `shown` as (status, reason).
fn statuses(shown: &Value) -> Vec<(String, Option<String>)> {
    shown["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["status"].as_str().unwrap().to_owned(),
                r["reason"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

/// A lead and two members on the session `spec` (with `extra` global
/// arguments): alice claims `a` and her `ls` waits in its PreToolUse hook
/// when the lead's process is SIGKILLed (bob has done `b` and told the
/// lead); a second `burrow run` of the thread, without `--team`, takes the
/// lead over and resumes alice (her undecided `ls` decided again and run
/// once), she completes `a`, and the lead's run ends with both items
/// completed once and both reports delivered once.
fn resumed_after_a_kill(d: &Path, spec: &str, extra: &[&str]) {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    script(
        d,
        "alice.jsonl",
        &[
            json!({"tool_calls": [call("al-claim", "claim_todo", json!({"id": "a"}))]}),
            json!({"tool_calls": [call("al-ls", "ls", json!({"path": "/"}))]}),
            json!({"text": "alice never says this"}),
        ],
    );
    script(
        d,
        "bob.jsonl",
        &[
            json!({"tool_calls": [call("bo-claim", "claim_todo", json!({"id": "b"}))]}),
            json!({"tool_calls": [
                call("bo-done", "complete_todo", json!({"id": "b"})),
                call("bo-tell", "send_message", json!({"to": "lead", "content": "bob is done"})),
            ]}),
            json!({"text": "bob: b handled"}),
        ],
    );
    std::fs::write(
        d.join("team.json"),
        json!([
            {"name": "alice", "model": "scripted:alice.jsonl"},
            {"name": "bob", "model": "scripted:bob.jsonl"}
        ])
        .to_string(),
    )
    .unwrap();
    let lead = script(
        d,
        "lead.jsonl",
        &[
            json!({"tool_calls": [call("l-add", "team_todos", json!({"add": [
                {"id": "a", "content": "write a"},
                {"id": "b", "content": "write b"}
            ]}))]}),
            json!({"text": "waiting"}),
            json!({"text": "the first lead never says this"}),
        ],
    );
    // Every decision on an `ls` is counted and held until `go` exists; every `ls` run is counted.
    let settings = d.join("block.json");
    let hook = json!({"hooks": {
        "PreToolUse": [{"matcher": "ls", "hooks": [
            {"type": "command", "command": "echo ls >> hooked; touch started; while [ ! -e go ]; do sleep 0.01; done"}
        ]}],
        "PostToolUse": [{"matcher": "ls", "hooks": [
            {"type": "command", "command": "echo ls >> ran"}
        ]}]
    }});
    std::fs::write(&settings, hook.to_string()).unwrap();
    let settings = settings.display().to_string();
    let mut args: Vec<&str> = extra.to_vec();
    args.extend_from_slice(&[
        "--json",
        "run",
        "Build a and b.",
        "--model",
        &lead,
        "--team",
        "team.json",
        "--settings",
        &settings,
        "--session",
        spec,
        "--thread",
        "t",
        "--claim-ttl",
        "1",
    ]);
    let mut holder = Command::new(env!("CARGO_BIN_EXE_burrow"))
        .args(&args)
        .current_dir(d)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let bob_done = || {
        let mut args: Vec<&str> = extra.to_vec();
        args.extend_from_slice(&[
            "--json",
            "thread",
            "show",
            "t/member-bob",
            "--session",
            spec,
        ]);
        let run = burrow_in(d, &args, b"");
        run.code == 0 && run.json()["runs"][0]["status"] == "completed"
    };
    while !(d.join("started").exists() && bob_done()) {
        assert!(
            Instant::now() < deadline,
            "alice never reached ls, or bob never completed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    holder.kill().unwrap();
    holder.wait().unwrap();
    std::fs::write(d.join("go"), b"").unwrap();

    // The next process continues the thread: the same team, as the run was started.
    script(
        d,
        "alice.jsonl",
        &[
            json!({"tool_calls": [
                call("al-done", "complete_todo", json!({"id": "a"})),
                call("al-tell", "send_message", json!({"to": "lead", "content": "alice is done"})),
            ]}),
            json!({"text": "alice: a handled"}),
        ],
    );
    script(d, "bob.jsonl", &[json!({"text": "bob never says this"})]);
    let lead = script(
        d,
        "lead2.jsonl",
        &[
            json!({"text": "Waiting for the team."}),
            json!({"tool_calls": [call("l-list", "team_todos", json!({}))]}),
            json!({"text": "All done."}),
        ],
    );
    let mut args: Vec<&str> = extra.to_vec();
    args.extend_from_slice(&[
        "--json",
        "run",
        "Go on.",
        "--model",
        &lead,
        "--settings",
        &settings,
        "--session",
        spec,
        "--thread",
        "t",
        "--claim-ttl",
        "5",
    ]);
    let run = burrow_in(d, &args, b"");
    run.assert_code(0);
    let events = lines(&run);
    assert_eq!(
        events.last().unwrap()["outcome"],
        "completed",
        "{}",
        run.stderr
    );
    // Only alice ran again, once.
    let started: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "member_started")
        .collect();
    assert_eq!(started.len(), 1, "{events:#?}");
    assert_eq!(started[0]["member"], "alice");
    let listed = result(&events, "l-list")["content"].as_str().unwrap();
    assert!(listed.contains("- [a] write a (completed)"), "{listed}");
    assert!(listed.contains("- [b] write b (completed)"), "{listed}");

    // The lead: its first run abandoned, the second completed, both reports delivered once.
    let lead_thread = show(d, spec, extra, "t");
    let ended = statuses(&lead_thread);
    assert_eq!(ended.len(), 2, "{lead_thread}");
    assert_eq!(
        ended[0],
        ("failed".to_owned(), Some("abandoned".to_owned()))
    );
    assert_eq!(ended[1].0, "completed");
    let notes: Vec<&str> = entries(&lead_thread, "user")
        .iter()
        .filter_map(|m| m["text"].as_str())
        .filter(|t| t.starts_with("<team-message"))
        .collect();
    assert_eq!(notes.len(), 2, "{notes:?}");
    for name in ["alice", "bob"] {
        let n = notes
            .iter()
            .filter(|t| t.contains(&format!("from=\"{name}\" to=\"lead\">\n{name} is done")))
            .count();
        assert_eq!(n, 1, "{notes:?}");
    }

    // Each member: every call answered once, each item claimed and completed once.
    let alice = show(d, spec, extra, "t/member-alice");
    let bob = show(d, spec, extra, "t/member-bob");
    assert_eq!(
        statuses(&alice),
        [
            ("failed".to_owned(), Some("abandoned".to_owned())),
            ("completed".to_owned(), None)
        ],
        "{alice}"
    );
    assert_eq!(statuses(&bob), [("completed".to_owned(), None)], "{bob}");
    for (shown, calls) in [
        (&alice, &["al-claim", "al-ls", "al-done", "al-tell"][..]),
        (&bob, &["bo-claim", "bo-done", "bo-tell"][..]),
    ] {
        let results = entries(shown, "tool_result");
        assert_eq!(results.len(), calls.len(), "{shown}");
        for id in calls {
            let of: Vec<&&Value> = results.iter().filter(|r| r["call_id"] == *id).collect();
            assert_eq!(of.len(), 1, "{id}: {shown}");
            assert_eq!(of[0]["is_error"], false, "{id}: {}", of[0]);
        }
    }
    let resumed = entries(&alice, "user");
    assert!(
        resumed.iter().any(|m| m["text"]
            .as_str()
            .unwrap()
            .starts_with("Your previous run was interrupted")),
        "{alice}"
    );
    // The held `ls` was never let through by the killed process: the resumed
    // run decided it again (its hook asked a second time) and ran it once.
    let hooked = std::fs::read_to_string(d.join("hooked")).unwrap();
    assert_eq!(hooked.lines().count(), 2, "{hooked}");
    let ran = std::fs::read_to_string(d.join("ran")).unwrap();
    assert_eq!(ran.lines().count(), 1, "{ran}");

    // `thread show` lists the members with their last runs' outcomes.
    let members = lead_thread["members"].as_array().unwrap();
    assert_eq!(members.len(), 2, "{lead_thread}");
    assert_eq!(members[0]["member"], "alice");
    assert_eq!(members[0]["thread_id"], "t/member-alice");
    assert_eq!(members[0]["runs"], 2);
    assert_eq!(members[0]["status"], "completed");
    assert_eq!(members[0]["run_id"], alice["runs"][1]["run_id"]);
    assert_eq!(members[1]["member"], "bob");
    assert_eq!(members[1]["runs"], 1);
    assert_eq!(members[1]["status"], "completed");
    assert_eq!(lead_thread["children"], json!([]));
    let text = show_text(d, spec, extra, "t");
    let alice_run = alice["runs"][1]["run_id"].as_str().unwrap();
    assert!(
        text.contains(&format!(
            "members:\n  t/member-alice alice completed (run {alice_run}; 2 runs)\n  t/member-bob bob completed (run "
        )),
        "{text}"
    );
}

#[test]
fn a_killed_lead_is_taken_over_and_its_held_member_resumed_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    resumed_after_a_kill(d, &session_spec(d), &[]);
}

/// The same story on a PostgreSQL session: the team's list, messages and
/// cursors, and every thread, in one server.
#[cfg(feature = "postgres")]
mod postgres {
    use burrow_testkit::{Part, require};

    fn tenant() -> String {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        format!("t26-{}-{nanos}", std::process::id())
    }

    #[test]
    fn a_killed_lead_is_taken_over_and_its_held_member_resumed_on_postgres() {
        let url = require(Part::Postgres);
        let dir = tempfile::tempdir().unwrap();
        let tenant = tenant();
        super::resumed_after_a_kill(dir.path(), &url, &["--tenant", &tenant]);
    }

    #[test]
    fn a_lead_and_two_members_share_the_list_and_every_item_completes_on_postgres() {
        let url = require(Part::Postgres);
        let dir = tempfile::tempdir().unwrap();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let tenant = format!("t26-{}-{nanos}", std::process::id());
        super::story(dir.path(), &url, &["--tenant", &tenant]);
    }
}
