//! `burrow run --todos`: `write_todos` through the binary with scripted models: the `todos` events, the list in `burrow thread show`, a second call in one answer refused, and the list across a killed process and the thread's next run.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tempfile::TempDir;

use super::support::{
    burrow_in, json_lines as lines, script, session_spec as spec, show_thread as show,
};

/// How long a test waits for another process to reach a point before it fails.
const PATIENCE: Duration = Duration::from_secs(60);

fn write_todos(id: &str, items: &[(&str, &str)]) -> Value {
    let todos: Vec<Value> = items
        .iter()
        .map(|(content, status)| {
            json!({"content": content, "status": status, "activeForm": format!("Doing {content}")})
        })
        .collect();
    json!({"id": id, "name": "write_todos", "arguments": {"todos": todos}})
}

/// The seed's form of a list: `active_form`, not `activeForm`.
fn stored(items: &[(&str, &str)]) -> Value {
    Value::Array(
        items
            .iter()
            .map(|(content, status)| {
                json!({"content": content, "status": status, "active_form": format!("Doing {content}")})
            })
            .collect(),
    )
}

#[test]
fn todos_are_evented_shown_and_a_second_write_in_one_answer_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let first = [("read", "in_progress"), ("write", "pending")];
    let second = [("read", "completed"), ("write", "in_progress")];
    let model = script(
        d,
        "todos.jsonl",
        &[
            json!({"tool_calls": [write_todos("w1", &first)]}),
            json!({"tool_calls": [write_todos("w2", &second), write_todos("w3", &[("other", "pending")])]}),
            json!({"text": "done"}),
        ],
    );
    let spec = spec(d);
    let run = burrow_in(
        d,
        &[
            "--json",
            "run",
            "plan",
            "--todos",
            "--model",
            &model,
            "--session",
            &spec,
            "--thread",
            "t",
        ],
        b"",
    );
    run.assert_code(0);
    let events = lines(&run);
    let todos: Vec<&Value> = events.iter().filter(|e| e["type"] == "todos").collect();
    assert_eq!(todos.len(), 2, "{events:?}");
    assert_eq!(todos[0]["todos"], stored(&first));
    assert_eq!(todos[1]["todos"], stored(&second));
    let refused = events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["id"] == "w3")
        .unwrap();
    assert_eq!(refused["is_error"], true);
    assert!(
        refused["content"]
            .as_str()
            .unwrap()
            .contains("already called write_todos (call w2)"),
        "{refused}"
    );
    let accepted = events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["id"] == "w2")
        .unwrap();
    assert_eq!(accepted["is_error"], false);
    assert!(
        accepted["content"]
            .as_str()
            .unwrap()
            .contains("2. [*] write"),
        "{accepted}"
    );

    assert_eq!(show(d, "t")["todos"], stored(&second));
    let human = burrow_in(d, &["thread", "show", "t", "--session", &spec], b"");
    human.assert_code(0);
    assert!(
        human.out().contains("todos:\n  [x] read\n  [*] write\n"),
        "{}",
        human.out()
    );
}

#[test]
fn without_todos_the_agent_has_no_write_todos() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let model = script(
        d,
        "todos.jsonl",
        &[
            json!({"tool_calls": [write_todos("w1", &[("read", "pending")])]}),
            json!({"text": "done"}),
        ],
    );
    let run = burrow_in(
        d,
        &[
            "--json",
            "--backend",
            "memory:",
            "run",
            "plan",
            "--model",
            &model,
        ],
        b"",
    );
    run.assert_code(0);
    let events = lines(&run);
    assert!(events.iter().all(|e| e["type"] != "todos"), "{events:?}");
    let result = events.iter().find(|e| e["type"] == "tool_result").unwrap();
    assert_eq!(result["is_error"], true);
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains("no tool named \"write_todos\""),
        "{result}"
    );
}

#[test]
fn todos_survive_a_killed_process_and_the_threads_next_run_goes_on_from_them() {
    let dir: TempDir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let spec = spec(d);
    // The holder sets a list, then is held by a hook on `ls` until it is killed.
    let settings = d.join("block.json");
    let hook = json!({"hooks": {"PreToolUse": [{"matcher": "ls", "hooks": [
        {"type": "command", "command": "touch started; while [ ! -e go ]; do sleep 0.01; done"}
    ]}]}});
    std::fs::write(&settings, hook.to_string()).unwrap();
    let first = [("read", "in_progress"), ("write", "pending")];
    let held = script(
        d,
        "held.jsonl",
        &[
            json!({"tool_calls": [write_todos("w1", &first)]}),
            json!({"tool_calls": [{"id": "l1", "name": "ls", "arguments": {"path": "/"}}]}),
            json!({"text": "never said"}),
        ],
    );
    let mut holder = Command::new(env!("CARGO_BIN_EXE_burrow"))
        .args([
            "--json",
            "run",
            "plan",
            "--todos",
            "--model",
            &held,
            "--settings",
            &settings.display().to_string(),
            "--session",
            &spec,
            "--thread",
            "t",
            "--claim-ttl",
            "1",
        ])
        .current_dir(d)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + PATIENCE;
    while !d.join("started").exists() {
        assert!(Instant::now() < deadline, "the holder never reached ls");
        std::thread::sleep(Duration::from_millis(10));
    }
    // SIGKILL: nothing of the holder runs after this.
    holder.kill().unwrap();
    holder.wait().unwrap();
    std::fs::write(d.join("go"), b"").unwrap();
    assert_eq!(show(d, "t")["todos"], stored(&first));

    // The next run of the thread (taking it over once the claim lapses)
    // reads the list in its history and moves it on.
    let second = [("read", "completed"), ("write", "completed")];
    let next = script(
        d,
        "next.jsonl",
        &[
            json!({"tool_calls": [write_todos("w2", &second)]}),
            json!({"text": "finished"}),
        ],
    );
    let run = burrow_in(
        d,
        &[
            "--json",
            "run",
            "go on",
            "--todos",
            "--model",
            &next,
            "--session",
            &spec,
            "--thread",
            "t",
            "--claim-ttl",
            "1",
        ],
        b"",
    );
    run.assert_code(0);
    let events = lines(&run);
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "todos" && e["todos"] == stored(&second)),
        "{events:?}"
    );
    let shown = show(d, "t");
    assert_eq!(shown["todos"], stored(&second));
    let statuses: Vec<&str> = shown["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["failed", "completed"], "{shown}");
}

#[test]
fn an_answered_pause_resumes_with_write_todos_as_the_run_was_started() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let spec = spec(d);
    let first = [("ask", "in_progress")];
    let model = script(
        d,
        "ask.jsonl",
        &[
            json!({"tool_calls": [write_todos("w1", &first)]}),
            json!({"tool_calls": [{"id": "q1", "name": "ask_user", "arguments": {"question": "Go?"}}]}),
        ],
    );
    let paused = burrow_in(
        d,
        &[
            "--json",
            "run",
            "plan",
            "--todos",
            "--model",
            &model,
            "--session",
            &spec,
            "--thread",
            "t",
        ],
        b"",
    );
    paused.assert_code(3);
    let request = lines(&paused)
        .into_iter()
        .find(|e| e["type"] == "request")
        .unwrap();
    assert_eq!(show(d, "t")["runs"][0]["labels"]["burrow.todos"], "true");
    // The same script file goes on: a new list, then the answer.
    let second = [("ask", "completed")];
    script(
        d,
        "ask.jsonl",
        &[
            json!({"tool_calls": [write_todos("w2", &second)]}),
            json!({"text": "done"}),
        ],
    );
    let answered = burrow_in(
        d,
        &[
            "--json",
            "thread",
            "answer",
            "t",
            "--request",
            request["request_id"].as_str().unwrap(),
            "yes",
            "--session",
            &spec,
        ],
        b"",
    );
    answered.assert_code(0);
    let result = lines(&answered)
        .into_iter()
        .find(|e| e["type"] == "tool_result" && e["id"] == "w2")
        .unwrap();
    assert_eq!(result["is_error"], false, "{result}");
    assert_eq!(show(d, "t")["todos"], stored(&second));
}
