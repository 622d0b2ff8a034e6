//! `burrow run --agents DIR`: the synchronous `task` tool through the binary, with a scripted parent and a scripted child (the child's `model:` a second script): the child's report and usage as the result, its thread and events, a failing child as an error result, the depth bound, hooks inside children and SubagentStop, agent files that do not parse, and a parent stopped (`burrow thread stop`, Ctrl-C) while its child holds a call: both end stopped and the model server gets no request after.

use std::path::Path;

use serde_json::{Value, json};

use super::support::{
    Workspace, burrow_in, json_lines as lines, script, session_spec as spec, show_thread as show,
};

/// `DIR/agents/NAME.md` with `frontmatter` lines and `body`; the child's
/// script is `DIR/agents/NAME.jsonl`, named relative to the folder.
pub(super) fn agent(dir: &Path, name: &str, frontmatter: &str, body: &str, answers: &[Value]) {
    let agents = dir.join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    let text: String = answers.iter().map(|a| format!("{a}\n")).collect();
    std::fs::write(agents.join(format!("{name}.jsonl")), text).unwrap();
    std::fs::write(
        agents.join(format!("{name}.md")),
        format!(
            "---\nname: {name}\ndescription: The {name}.\nmodel: scripted:{name}.jsonl\n{frontmatter}---\n{body}\n"
        ),
    )
    .unwrap();
}

pub(super) fn task_call(id: &str, subagent: &str, prompt: &str) -> Value {
    json!({"id": id, "name": "task", "arguments": {
        "description": "look around", "prompt": prompt, "subagent_type": subagent}})
}

fn ls(id: &str) -> Value {
    json!({"id": id, "name": "ls", "arguments": {"path": "/"}})
}

fn result_of<'a>(events: &'a [Value], id: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["id"] == id && e.get("parent_run_id").is_none())
        .unwrap_or_else(|| panic!("no result of {id}: {events:?}"))
}

#[test]
fn a_task_runs_its_subagent_in_a_child_thread_and_returns_its_report() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    agent(
        d,
        "scout",
        "tools: ls, read_file\n",
        "You look around.",
        &[
            json!({"tool_calls": [ls("c1")], "usage": {"input_tokens": 10, "output_tokens": 2}}),
            json!({"text": "child report", "usage": {"input_tokens": 20, "output_tokens": 3}}),
        ],
    );
    let parent = script(
        d,
        "parent.jsonl",
        &[
            json!({"tool_calls": [task_call("t1", "scout", "List the root.")]}),
            json!({"text": "parent done"}),
        ],
    );
    let agents = d.join("agents").display().to_string();
    let spec = spec(d);
    let run = burrow_in(
        d,
        &[
            "--json",
            "run",
            "the parent's prompt",
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
    let events = lines(&run);
    let parent_run = parent_run_id(&events);
    let started = events.iter().find(|e| e["type"] == "task_started").unwrap();
    assert_eq!(started["parent_run_id"], parent_run.as_str());
    assert_eq!(started["thread_id"], "p/task-t1");
    assert_eq!(started["subagent_type"], "scout");
    let child_run = started["run_id"].as_str().unwrap().to_owned();
    assert_ne!(child_run, parent_run);
    // The child's frames carry its run id and its parent's.
    let child_call = events
        .iter()
        .find(|e| e["type"] == "tool_call" && e["id"] == "c1")
        .unwrap();
    assert_eq!(child_call["run_id"], child_run.as_str());
    assert_eq!(child_call["parent_run_id"], parent_run.as_str());
    let ended = events.iter().find(|e| e["type"] == "task_ended").unwrap();
    assert_eq!(ended["outcome"], "completed");
    assert_eq!(ended["turns"], 2);
    assert_eq!(ended["usage"]["input_tokens"], 30);

    let result = result_of(&events, "t1");
    assert_eq!(result["is_error"], false, "{result}");
    let content = result["content"].as_str().unwrap();
    assert!(content.starts_with("child report\n\n[subagent scout completed: 2 turns, 1 tool call, usage: 30 input, 5 output tokens; thread p/task-t1]"), "{content}");
    assert_eq!(events.last().unwrap()["outcome"], "completed");

    // The parent lists the child; the child's history is its own.
    let shown = show(d, "p");
    let children = shown["children"].as_array().unwrap();
    assert_eq!(children.len(), 1, "{shown}");
    assert_eq!(children[0]["thread_id"], "p/task-t1");
    assert_eq!(children[0]["subagent_type"], "scout");
    assert_eq!(children[0]["status"], "completed");
    assert_eq!(children[0]["run_id"], child_run.as_str());
    let child = show(d, "p/task-t1");
    let users: Vec<&str> = child["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["message"]["role"] == "user")
        .map(|e| e["message"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(users, ["List the root."]);
    assert_eq!(
        child["runs"][0]["labels"]["burrow.parent_run"],
        parent_run.as_str()
    );
    let human = burrow_in(d, &["thread", "show", "p", "--session", &spec], b"");
    assert!(
        human
            .out()
            .contains("children:\n  p/task-t1 scout completed (run "),
        "{}",
        human.out()
    );

    // Human output: one line as the child starts, one as it ends.
    let again = script(
        d,
        "again.jsonl",
        &[
            json!({"tool_calls": [task_call("t2", "scout", "Again.")]}),
            json!({"text": "ok"}),
        ],
    );
    std::fs::write(
        d.join("agents/scout.jsonl"),
        format!("{}\n", json!({"text": "second report"})),
    )
    .unwrap();
    let human = burrow_in(
        d,
        &[
            "run",
            "more",
            "--model",
            &again,
            "--agents",
            &agents,
            "--session",
            &spec,
            "--thread",
            "p",
        ],
        b"",
    );
    human.assert_code(0);
    assert!(
        human
            .stderr
            .contains("burrow: task scout started: look around (run "),
        "{}",
        human.stderr
    );
    assert!(
        human
            .stderr
            .contains("burrow: task scout completed: 1 turn, 0 tool calls, usage unknown (run "),
        "{}",
        human.stderr
    );
    assert_eq!(human.out(), "ok\n");
}

#[test]
fn a_child_that_fails_makes_the_result_an_error_with_its_reason() {
    let ws = Workspace::new();
    let d = ws.dir();
    // The child would need a second turn; --task-max-turns 1 stops it.
    agent(
        d,
        "busy",
        "",
        "Keep busy.",
        &[json!({"tool_calls": [ls("c1")]}), json!({"text": "never"})],
    );
    let parent = script(
        d,
        "parent.jsonl",
        &[
            json!({"tool_calls": [task_call("t1", "busy", "Work.")]}),
            json!({"text": "parent done"}),
        ],
    );
    let agents = d.join("agents").display().to_string();
    let run = ws.run(&[
        "--json",
        "run",
        "go",
        "--model",
        &parent,
        "--agents",
        &agents,
        "--task-max-turns",
        "1",
    ]);
    run.assert_code(0);
    let events = lines(&run);
    let result = result_of(&events, "t1");
    assert_eq!(result["is_error"], true, "{result}");
    let content = result["content"].as_str().unwrap();
    assert!(
        content.starts_with(
            "The subagent busy did not complete its task: it ended failed (max_turns: "
        ),
        "{content}"
    );
    assert!(
        content.contains("[subagent busy failed: 1 turn, 1 tool call"),
        "{content}"
    );
    let ended = events.iter().find(|e| e["type"] == "task_ended").unwrap();
    assert_eq!(ended["outcome"], "failed");
    assert_eq!(ended["reason"], "max_turns");
}

#[test]
fn a_child_has_no_task_tool_unless_the_depth_allows_it() {
    let ws = Workspace::new();
    let d = ws.dir();
    agent(
        d,
        "nester",
        "",
        "Delegate.",
        &[
            json!({"tool_calls": [task_call("g1", "general-purpose", "Deeper.")]}),
            json!({"text": "nester report"}),
        ],
    );
    let parent = script(
        d,
        "parent.jsonl",
        &[
            json!({"tool_calls": [
                task_call("t1", "nester", "Work."),
                task_call("t2", "nobody", "Work."),
            ]}),
            json!({"text": "parent done"}),
        ],
    );
    let agents = d.join("agents").display().to_string();
    let run = ws.run(&[
        "--json", "run", "go", "--model", &parent, "--agents", &agents,
    ]);
    run.assert_code(0);
    let events = lines(&run);
    let refused = events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["id"] == "g1")
        .unwrap();
    assert_eq!(refused["is_error"], true);
    assert!(
        refused["content"].as_str().unwrap().contains(
            "There is no tool named \"task\" (a subagent starts no subagents: tasks nest at most 1 deep)"
        ),
        "{refused}"
    );
    assert!(refused["parent_run_id"].is_string(), "{refused}");
    assert_eq!(result_of(&events, "t1")["is_error"], false);
    let unknown = result_of(&events, "t2");
    assert_eq!(unknown["is_error"], true);
    assert!(
        unknown["content"]
            .as_str()
            .unwrap()
            .contains("no subagent named \"nobody\"; the subagents are: general-purpose, nester"),
        "{unknown}"
    );
}

#[test]
fn with_depth_two_a_child_starts_a_grandchild_in_its_own_thread() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    agent(
        d,
        "nester",
        "",
        "Delegate.",
        &[
            json!({"tool_calls": [task_call("g1", "leaf", "Deeper.")]}),
            json!({"text": "nester report"}),
        ],
    );
    agent(d, "leaf", "", "Answer.", &[json!({"text": "leaf report"})]);
    let parent = script(
        d,
        "parent.jsonl",
        &[
            json!({"tool_calls": [task_call("t1", "nester", "Work.")]}),
            json!({"text": "parent done"}),
        ],
    );
    let agents = d.join("agents").display().to_string();
    let spec = spec(d);
    let run = burrow_in(
        d,
        &[
            "--json",
            "run",
            "go",
            "--model",
            &parent,
            "--agents",
            &agents,
            "--max-task-depth",
            "2",
            "--session",
            &spec,
            "--thread",
            "p",
        ],
        b"",
    );
    run.assert_code(0);
    let events = lines(&run);
    let grandchild = events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["id"] == "g1")
        .unwrap();
    assert_eq!(grandchild["is_error"], false, "{grandchild}");
    assert!(
        grandchild["content"]
            .as_str()
            .unwrap()
            .starts_with("leaf report")
    );
    assert!(
        result_of(&events, "t1")["content"]
            .as_str()
            .unwrap()
            .starts_with("nester report")
    );
    let child = show(d, "p/task-t1");
    assert_eq!(child["children"][0]["thread_id"], "p/task-t1/task-g1");
    // The parent lists only its own child.
    assert_eq!(show(d, "p")["children"].as_array().unwrap().len(), 1);
}

#[test]
fn hooks_decide_childrens_calls_and_subagent_stop_fires_with_claude_codes_fields() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    agent(
        d,
        "scout",
        "",
        "Look.",
        &[
            json!({"tool_calls": [ls("c1")]}),
            json!({"text": "saw nothing"}),
        ],
    );
    let parent = script(
        d,
        "parent.jsonl",
        &[
            json!({"tool_calls": [task_call("t1", "scout", "Look.")]}),
            json!({"text": "parent done"}),
        ],
    );
    let settings = d.join("settings.json");
    let hooks = json!({"hooks": {
        "PreToolUse": [{"matcher": "ls", "hooks": [{"type": "command",
            "command": "echo 'no listing in here' >&2; exit 2"}]}],
        "SubagentStop": [{"hooks": [{"type": "command", "command": "cat > subagent_stop.json"}]}]
    }});
    std::fs::write(&settings, hooks.to_string()).unwrap();
    let agents = d.join("agents").display().to_string();
    let spec = spec(d);
    let run = burrow_in(
        d,
        &[
            "--json",
            "run",
            "go",
            "--model",
            &parent,
            "--agents",
            &agents,
            "--settings",
            &settings.display().to_string(),
            "--session",
            &spec,
            "--thread",
            "p",
        ],
        b"",
    );
    run.assert_code(0);
    assert!(!run.stderr.contains("SubagentStop"), "{}", run.stderr);
    let events = lines(&run);
    let denied = events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["id"] == "c1")
        .unwrap();
    assert_eq!(denied["is_error"], true);
    assert!(
        denied["content"]
            .as_str()
            .unwrap()
            .contains("no listing in here"),
        "{denied}"
    );
    let child_run = events.iter().find(|e| e["type"] == "task_started").unwrap()["run_id"].clone();
    let stop: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("subagent_stop.json")).unwrap())
            .unwrap();
    assert_eq!(stop["hook_event_name"], "SubagentStop");
    assert_eq!(stop["session_id"], "p");
    assert_eq!(stop["run_id"], parent_run_id(&events).as_str());
    assert_eq!(stop["agent_id"], child_run);
    assert_eq!(stop["agent_type"], "scout");
    assert_eq!(stop["stop_hook_active"], false);
}

#[test]
fn an_agent_file_that_does_not_parse_is_one_sentence_and_nothing_runs() {
    let ws = Workspace::new();
    let d = ws.dir().join("defs");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(
        d.join("good.md"),
        "---\nname: good\ndescription: fine\n---\nBody.\n",
    )
    .unwrap();
    std::fs::write(d.join("bad.md"), "name: bad\n").unwrap();
    let model = script(
        ws.dir(),
        "m.jsonl",
        &[json!({"tool_calls": [{"id": "w", "name": "write_file",
        "arguments": {"file_path": "/x", "content": "x"}}]})],
    );
    let agents = d.display().to_string();
    for json in [false, true] {
        let mut args = vec![];
        if json {
            args.push("--json");
        }
        args.extend(["run", "go", "--model", &model, "--agents", &agents]);
        let run = ws.run(&args);
        run.assert_code(2);
        assert_eq!(run.out(), "");
        let lines: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{}", run.stderr);
        assert!(
            lines[0].starts_with("burrow: the agent file ")
                && lines[0].contains("bad.md does not parse: it does not start with a --- line"),
            "{}",
            run.stderr
        );
        assert!(!ws.state.exists(), "a tool ran");
    }
    // A tool no subagent can get, and a missing folder, are refused alike.
    std::fs::write(
        d.join("bad.md"),
        "---\nname: bad\ndescription: d\ntools: fly\n---\n",
    )
    .unwrap();
    let run = ws.run(&["run", "go", "--model", &model, "--agents", &agents]);
    run.assert_code(2);
    assert!(
        run.stderr
            .contains("names the tool fly, which subagents cannot get"),
        "{}",
        run.stderr
    );
    let missing = ws.dir().join("nowhere").display().to_string();
    let run = ws.run(&["run", "go", "--model", &model, "--agents", &missing]);
    run.assert_code(2);
    assert!(run.stderr.contains("the agents folder"), "{}", run.stderr);
    assert!(!ws.state.exists(), "a tool ran");
}

#[test]
fn a_killed_parent_is_taken_over_and_its_child_goes_on_to_its_report() {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // The child's `ls` is held by a hook until the parent's process is killed.
    agent(
        d,
        "scout",
        "",
        "Look.",
        &[
            json!({"tool_calls": [ls("c1")]}),
            json!({"text": "never said"}),
        ],
    );
    let parent = script(
        d,
        "parent.jsonl",
        &[json!({"tool_calls": [task_call("t1", "scout", "Look.")]})],
    );
    let settings = d.join("block.json");
    let hook = json!({"hooks": {"PreToolUse": [{"matcher": "ls", "hooks": [
        {"type": "command", "command": "touch started; while [ ! -e go ]; do sleep 0.01; done"}
    ]}]}});
    std::fs::write(&settings, hook.to_string()).unwrap();
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
            &settings.display().to_string(),
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

    // The next process takes the parent over: the task call runs again, finds
    // its child left behind, and the child goes on in its own thread.
    std::fs::write(
        d.join("agents/scout.jsonl"),
        format!("{}\n", json!({"text": "child report"})),
    )
    .unwrap();
    let taker = script(d, "taker.jsonl", &[json!({"text": "parent done"})]);
    let run = burrow_in(
        d,
        &[
            "--json",
            "run",
            "again",
            "--model",
            &taker,
            "--agents",
            &agents,
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
    let result = shown["history"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["message"]["role"] == "tool_result" && e["message"]["call_id"] == "t1")
        .unwrap_or_else(|| panic!("no result of t1: {shown}"));
    assert_eq!(result["message"]["is_error"], false, "{result}");
    assert!(
        result["message"]["content"]
            .as_str()
            .unwrap()
            .starts_with("child report\n\n[subagent scout completed"),
        "{result}"
    );
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
    // One prompt, then the note that it was interrupted; the ls never ran twice.
    let users: Vec<&str> = child["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["message"]["role"] == "user")
        .map(|e| e["message"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(users.len(), 2, "{child}");
    assert_eq!(users[0], "Look.");
    assert!(users[1].starts_with("Your previous run was interrupted"));
    assert_eq!(shown["children"][0]["status"], "completed");
}

/// One chat-completions answer (the `openai:` wire) calling `name` with `args`, or saying `text`.
#[cfg(feature = "openai")]
pub(super) fn chat(
    text: Option<&str>,
    call: Option<(&str, &str, Value)>,
) -> burrow_testkit::http::Reply {
    let chunk = |delta: Value, finish: Value| {
        let c = json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], "usage": null});
        format!("data: {c}\n\n")
    };
    let mut body = chunk(
        json!({"role": "assistant", "content": text.unwrap_or("")}),
        Value::Null,
    );
    let finish = if let Some((id, name, args)) = &call {
        body += &chunk(
            json!({"tool_calls": [{"index": 0, "id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}}]}),
            Value::Null,
        );
        "tool_calls"
    } else {
        "stop"
    };
    body += &chunk(json!({}), json!(finish));
    body += &format!(
        "data: {}\n\ndata: [DONE]\n\n",
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
    );
    burrow_testkit::http::Reply::sse(body)
}

/// `burrow thread stop` on a parent whose child is in a tool call held by
/// its PreToolUse hook: the parent and the child both end stopped, the
/// child's call ends cancelled, and the model server (parent and child
/// share it) gets no request after the stop.
#[cfg(feature = "openai")]
#[test]
fn thread_stop_on_the_parent_stops_its_child_and_no_model_request_follows() {
    parent_stopped_while_its_child_waits(|d, spec, _pid| {
        let stopped = burrow_in(
            d,
            &["--json", "thread", "stop", "p", "--session", spec],
            b"",
        );
        stopped.assert_code(0);
        assert_eq!(stopped.json()["stopped"], true, "{}", stopped.out());
    });
}

/// The same with Ctrl-C (SIGINT) to the parent's process.
#[cfg(feature = "openai")]
#[test]
fn ctrl_c_on_the_parent_stops_its_child_and_no_model_request_follows() {
    parent_stopped_while_its_child_waits(|_d, _spec, pid| {
        let sent = std::process::Command::new("kill")
            .args(["-INT", &pid.to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
    });
}

/// Runs a parent whose child holds a call, stops the parent with `stop`
/// (given the folder, the session spec and the parent's pid), and checks
/// that both ended stopped and no model request followed.
#[cfg(feature = "openai")]
fn parent_stopped_while_its_child_waits(stop: impl FnOnce(&Path, &str, u32)) {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let server = burrow_testkit::http::ReplayServer::start([
        chat(
            None,
            Some((
                "t1",
                "task",
                task_call("t1", "scout", "Look.")["arguments"].clone(),
            )),
        ),
        chat(None, Some(("c1", "ls", json!({"path": "/"})))),
        chat(Some("child never says this"), None),
        chat(Some("parent never says this"), None),
    ]);
    let agents = d.join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("scout.md"),
        "---\nname: scout\ndescription: The scout.\n---\nLook.\n",
    )
    .unwrap();
    let settings = d.join("block.json");
    let hook = json!({"hooks": {"PreToolUse": [{"matcher": "ls", "hooks": [
        {"type": "command", "command": "touch started; while [ ! -e go ]; do sleep 0.01; done"}
    ]}]}});
    std::fs::write(&settings, hook.to_string()).unwrap();
    let spec = spec(d);
    let holder = Command::new(env!("CARGO_BIN_EXE_burrow"))
        .args([
            "--json",
            "run",
            "go",
            "--model",
            "openai:gpt-test",
            "--agents",
            &agents.display().to_string(),
            "--settings",
            &settings.display().to_string(),
            "--session",
            &spec,
            "--thread",
            "p",
        ])
        .env("OPENAI_BASE_URL", server.url())
        .env("OPENAI_API_KEY", "sk-test")
        .current_dir(d)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !d.join("started").exists() {
        assert!(Instant::now() < deadline, "the child never reached ls");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(server.request_count(), 2);
    stop(d, &spec, holder.id());
    let out = holder.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    // Let a hook process that outlived its call end before the folder goes.
    std::fs::write(d.join("go"), b"").unwrap();
    assert_eq!(
        server.request_count(),
        2,
        "a model request followed the stop: {stderr}"
    );
    let parent = show(d, "p");
    assert_eq!(parent["runs"][0]["status"], "stopped", "{parent}");
    let child = show(d, "p/task-t1");
    let runs = child["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{child}");
    assert_eq!(runs[0]["status"], "stopped", "{child}");
    let ls = child["history"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["message"]["role"] == "tool_result" && e["message"]["call_id"] == "c1")
        .unwrap_or_else(|| panic!("no result of c1: {child}"));
    assert_eq!(ls["message"]["is_error"], true, "{ls}");
    assert!(
        ls["message"]["content"]
            .as_str()
            .unwrap()
            .contains("cancelled"),
        "{ls}"
    );
    assert_eq!(parent["children"][0]["status"], "stopped", "{parent}");
    // Nothing came after the stop, even a while later.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(server.request_count(), 2);
}

/// The parent's run id: its own frames carry no `parent_run_id`. Never the
/// first line's: a child's line may reach stdout before the parent's first
/// one (they are printed by two paths).
fn parent_run_id(events: &[Value]) -> String {
    events
        .iter()
        .find(|e| e["run_id"].is_string() && e.get("parent_run_id").is_none())
        .unwrap()["run_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn a_final_text_past_the_large_result_limit_is_spilled_to_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("work")).unwrap();
    // About 6,000 characters: past 1,000 tokens (4,000 characters), not past 20,000.
    let long: String = (0..100)
        .map(|i| format!("finding {i:03}: the scout saw something worth a line\n"))
        .collect();
    assert!(long.len() > 4_000 && long.len() < 80_000);
    agent(d, "scout", "", "You look around.", &[json!({"text": long})]);
    let agents = d.join("agents").display().to_string();
    let backend = format!("fs:{}", d.join("work").display());
    let spec = spec(d);
    let run_with = |thread: &str, tokens: &str| {
        let parent = script(
            d,
            &format!("parent-{thread}.jsonl"),
            &[
                json!({"tool_calls": [task_call("t1", "scout", "Report everything.")]}),
                json!({"text": "parent done"}),
            ],
        );
        let run = burrow_in(
            d,
            &[
                "--json",
                "--backend",
                &backend,
                "run",
                "go",
                "--model",
                &parent,
                "--agents",
                &agents,
                "--session",
                &spec,
                "--thread",
                thread,
                "--large-result-tokens",
                tokens,
            ],
            b"",
        );
        run.assert_code(0);
        let events = lines(&run);
        let result = result_of(&events, "t1").clone();
        assert_eq!(result["is_error"], false, "{result}");
        result["content"].as_str().unwrap().to_owned()
    };

    let content = run_with("big", "1000");
    assert!(content.starts_with("finding 000: "), "{content}");
    assert!(!content.contains("finding 099"), "{content}");
    let at = content
        .find("/.burrow/large_results/task-")
        .unwrap_or_else(|| panic!("no saved path: {content}"));
    let name: String = content[at + "/.burrow/large_results/".len()..]
        .chars()
        .take_while(|c| !c.is_whitespace() && *c != ':')
        .collect();
    let saved = std::fs::read_to_string(d.join("work/.burrow/large_results").join(&name)).unwrap();
    assert_eq!(saved, long);
    // The usage line follows the preview.
    assert!(
        content.ends_with(
            "[subagent scout completed: 1 turn, 0 tool calls, usage unknown; thread big/task-t1]"
        ),
        "{content}"
    );

    // Within the limit the text is the result as it is, and nothing is saved.
    std::fs::remove_dir_all(d.join("work/.burrow")).unwrap();
    let content = run_with("small", "20000");
    assert!(content.starts_with(&long), "{content}");
    assert!(!content.contains("large_results"), "{content}");
    assert!(!d.join("work/.burrow/large_results").exists());
}
