//! `burrow run --agents DIR` with `task` calls that run in the background (ADR 0275), scripted parent and child over SQLite: the report reaches the parent's history once, and after SIGKILL of the process while the child runs, the next `burrow run` on the parent's thread takes the child up again: it finishes, its report reaches the parent, and none of its tool calls runs twice.

use std::path::Path;

use serde_json::{Value, json};

use super::support::{burrow_in, script, session_spec as spec, show_thread as show};

/// `DIR/agents/NAME.md` with its child's script `DIR/agents/NAME.jsonl`.
fn agent(dir: &Path, name: &str, answers: &[Value]) {
    let agents = dir.join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    let text: String = answers.iter().map(|a| format!("{a}\n")).collect();
    std::fs::write(agents.join(format!("{name}.jsonl")), text).unwrap();
    std::fs::write(
        agents.join(format!("{name}.md")),
        format!("---\nname: {name}\ndescription: The {name}.\nmodel: scripted:{name}.jsonl\n---\nLook.\n"),
    )
    .unwrap();
}

fn background(id: &str) -> Value {
    json!({"id": id, "name": "task", "arguments": {
        "description": "look around", "prompt": "Look.", "subagent_type": "scout",
        "run_in_background": true}})
}

/// The user messages of a `thread show` history.
fn user_texts(shown: &Value) -> Vec<String> {
    shown["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["message"]["role"] == "user")
        .map(|e| e["message"]["text"].as_str().unwrap().to_owned())
        .collect()
}

/// The roles of a `thread show` history, in order.
fn roles(shown: &Value) -> Vec<String> {
    shown["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["message"]["role"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_background_task_reports_to_its_parent_which_waits_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    agent(
        d,
        "scout",
        &[
            json!({"tool_calls": [{"id": "c1", "name": "ls", "arguments": {"path": "/"}}]}),
            json!({"text": "child report"}),
        ],
    );
    let parent = script(
        d,
        "parent.jsonl",
        &[
            json!({"tool_calls": [background("t1")]}),
            json!({"text": "started it"}),
            json!({"text": "read it"}),
        ],
    );
    let agents = d.join("agents").display().to_string();
    let spec = spec(d);
    let run = burrow_in(
        d,
        &[
            "run",
            "go",
            "--model",
            &parent,
            "--agents",
            &agents,
            "--session",
            &spec,
            "--thread",
            "p",
        ],
        b"",
    );
    run.assert_code(0);
    let out = String::from_utf8_lossy(&run.stdout);
    assert!(out.contains("read it"), "{out}");
    let shown = show(d, "p");
    let users = user_texts(&shown);
    assert_eq!(users.len(), 2, "{shown}");
    assert!(
        users[1].starts_with("[background task p/task-t1 (scout: look around) completed]\n\nchild report\n\n[subagent scout completed"),
        "{}",
        users[1]
    );
    assert_eq!(roles(&shown).last().map(String::as_str), Some("assistant"));
    let child = show(d, "p/task-t1");
    assert_eq!(child["runs"][0]["status"], "completed", "{child}");
}

#[test]
fn a_killed_parent_takes_its_background_child_up_again_and_gets_its_report() {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // The child writes a file (each run of the write appends a line to
    // `writes`), then its `ls` is held by a hook until the process is killed.
    agent(
        d,
        "scout",
        &[
            json!({"tool_calls": [{"id": "c1", "name": "write_file",
                "arguments": {"file_path": "/note.txt", "content": "seen"}}]}),
            json!({"tool_calls": [{"id": "c2", "name": "ls", "arguments": {"path": "/"}}]}),
            json!({"text": "never said"}),
        ],
    );
    let parent = script(
        d,
        "parent.jsonl",
        &[
            json!({"tool_calls": [background("t1")]}),
            json!({"text": "waiting for the scout"}),
        ],
    );
    let settings = d.join("hooks.json");
    let hooks = json!({"hooks": {
        "PreToolUse": [{"matcher": "ls", "hooks": [
            {"type": "command", "command": "touch started; while [ ! -e go ]; do sleep 0.01; done"}]}],
        "PostToolUse": [{"matcher": "write_file", "hooks": [
            {"type": "command", "command": "echo ran >> writes"}]}]
    }});
    std::fs::write(&settings, hooks.to_string()).unwrap();
    let settings = settings.display().to_string();
    let agents = d.join("agents").display().to_string();
    let spec = spec(d);
    let mut holder = Command::new(env!("CARGO_BIN_EXE_burrow"))
        .args([
            "run",
            "go",
            "--model",
            &parent,
            "--agents",
            &agents,
            "--settings",
            &settings,
            "--session",
            &spec,
            "--thread",
            "p",
            "--claim-ttl",
            "1",
        ])
        .current_dir(d)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !d.join("started").exists() {
        assert!(Instant::now() < deadline, "the child never reached ls");
        std::thread::sleep(Duration::from_millis(10));
    }
    holder.kill().unwrap();
    holder.wait().unwrap();
    std::fs::write(d.join("go"), b"").unwrap();
    assert_eq!(std::fs::read_to_string(d.join("writes")).unwrap(), "ran\n");

    // The next process: the child's next answer is its report.
    std::fs::write(
        d.join("agents/scout.jsonl"),
        format!("{}\n", json!({"text": "child report"})),
    )
    .unwrap();
    let taker = script(
        d,
        "taker.jsonl",
        &[
            json!({"text": "parent noted"}),
            json!({"text": "parent done"}),
        ],
    );
    let run = burrow_in(
        d,
        &[
            "run",
            "again",
            "--model",
            &taker,
            "--agents",
            &agents,
            "--settings",
            &settings,
            "--session",
            &spec,
            "--thread",
            "p",
            "--claim-ttl",
            "5",
        ],
        b"",
    );
    run.assert_code(0);
    let shown = show(d, "p");
    let reports: Vec<String> = user_texts(&shown)
        .into_iter()
        .filter(|t| t.starts_with("[background task "))
        .collect();
    assert_eq!(reports.len(), 1, "{shown}");
    assert!(
        reports[0].starts_with(
            "[background task p/task-t1 (scout: look around) completed]\n\nchild report\n\n"
        ),
        "{}",
        reports[0]
    );
    // The parent read it: an answer follows the report.
    let roles = roles(&shown);
    let at = shown["history"]
        .as_array()
        .unwrap()
        .iter()
        .position(|e| e["message"]["text"].as_str() == Some(reports[0].as_str()))
        .unwrap();
    assert!(roles[at + 1..].iter().any(|r| r == "assistant"), "{shown}");

    let child = show(d, "p/task-t1");
    let statuses: Vec<(&str, Option<&str>)> = child["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["status"].as_str().unwrap(), r["reason"].as_str()))
        .collect();
    assert_eq!(
        statuses,
        [("failed", Some("abandoned")), ("completed", None)],
        "{child}"
    );
    // The write ran once, in the first process; the ls once, in the second.
    assert_eq!(std::fs::read_to_string(d.join("writes")).unwrap(), "ran\n");
    let results: Vec<&str> = child["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["message"]["role"] == "tool_result")
        .map(|e| e["message"]["call_id"].as_str().unwrap())
        .collect();
    assert_eq!(results, ["c1", "c2"], "{child}");
}
