//! `burrow run --agents DIR` with a subagent that asks (`can_ask_questions`) in a synchronous task, on SQLite: the whole run pauses (exit 3) with a request naming the subagent and its question, `thread show` lists it, `thread answer` in a new process gives the child the answer and both go on (exit 0), the parent's sibling call runs once, the child's second question past `max_questions` is an error; and `--task-max-tokens` stops a child past its tokens with an error result naming the bound (ADRs 0385, 0386). A PreToolUse `ask` on one of a child's two sibling calls pauses the run (exit 3) with an approval naming the subagent and the call; `thread answer --approve` runs that call alone, a denial refuses it, and the sibling runs exactly once either way (ADR 0392).

use std::path::Path;

use serde_json::{Value, json};

use super::support::{
    Workspace, burrow_in, json_lines as lines, script, session_spec as spec, show_thread as show,
};

/// `DIR/agents/NAME.md` with `frontmatter` lines; its script is `DIR/agents/NAME.jsonl`.
fn agent(dir: &Path, name: &str, frontmatter: &str, answers: &[Value]) {
    let agents = dir.join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    write_script(&agents.join(format!("{name}.jsonl")), answers);
    std::fs::write(
        agents.join(format!("{name}.md")),
        format!(
            "---\nname: {name}\ndescription: The {name}.\nmodel: scripted:{name}.jsonl\n{frontmatter}---\nYou look.\n"
        ),
    )
    .unwrap();
}

fn write_script(path: &Path, answers: &[Value]) {
    let text: String = answers.iter().map(|a| format!("{a}\n")).collect();
    std::fs::write(path, text).unwrap();
}

fn task_call(id: &str, subagent: &str) -> Value {
    json!({"id": id, "name": "task", "arguments": {
        "description": "look around", "prompt": "Find the folder.", "subagent_type": subagent}})
}

fn ask(id: &str, question: &str) -> Value {
    json!({"id": id, "name": "ask_parent", "arguments": {"question": question}})
}

fn history_of(shown: &Value) -> Vec<Value> {
    shown["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["message"].clone())
        .collect()
}

fn results_of(history: &[Value], id: &str) -> Vec<Value> {
    history
        .iter()
        .filter(|m| m["role"] == "tool_result" && m["call_id"] == id)
        .cloned()
        .collect()
}

#[test]
fn a_synchronous_childs_question_pauses_the_run_and_thread_answer_lets_both_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    agent(
        d,
        "scout",
        "can_ask_questions: true\nmax_questions: 1\n",
        &[json!({"tool_calls": [ask("q1", "Which folder?")]})],
    );
    // The parent's batch: the task and a sibling call.
    let parent = script(
        d,
        "parent.jsonl",
        &[json!({"tool_calls": [
            task_call("t1", "scout"),
            {"id": "w1", "name": "ls", "arguments": {"path": "/"}},
        ]})],
    );
    let agents = d.join("agents").display().to_string();
    let spec = spec(d);
    let paused = burrow_in(
        d,
        &[
            "--json",
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
    paused.assert_code(3);
    let events = lines(&paused);
    let request = events
        .iter()
        .find(|e| e["type"] == "request")
        .unwrap_or_else(|| panic!("no request: {events:?}"));
    assert_eq!(request["request_id"], "t1/q1");
    assert_eq!(request["kind"], "question");
    assert_eq!(request["tool_name"], "task");
    assert_eq!(request["subagent"], "scout");
    assert_eq!(request["question"], "Which folder?");
    assert_eq!(request["task_id"], "p/task-t1");
    let writes = |events: &[Value]| {
        events
            .iter()
            .filter(|e| e["type"] == "tool_call" && e["id"] == "w1")
            .count()
    };
    assert_eq!(writes(&events), 1);

    // The person sees the question, naming the subagent.
    let shown = show(d, "p");
    let pending = shown["pending"].as_array().unwrap();
    assert_eq!(pending.len(), 1, "{shown}");
    assert_eq!(pending[0]["request_id"], "t1/q1");
    assert_eq!(pending[0]["subagent"], "scout");
    assert_eq!(pending[0]["question"], "Which folder?");
    let human = burrow_in(d, &["thread", "show", "p", "--session", &spec], b"");
    human.assert_code(0);
    assert!(
        human.out().contains("t1/q1 question of task (run ")
            && human
                .out()
                .contains("): the subagent scout asks: Which folder?"),
        "{}",
        human.out()
    );
    let told = results_of(&history_of(&shown), "t1");
    assert_eq!(told.len(), 1);
    assert!(
        told[0]["content"]
            .as_str()
            .unwrap()
            .starts_with("The subagent scout (task p/task-t1) asks: Which folder?"),
        "{}",
        told[0]
    );

    // A new process answers: the scripts go on from their first line there.
    write_script(
        &d.join("agents/scout.jsonl"),
        &[
            json!({"tool_calls": [ask("q2", "And then?")]}),
            json!({"text": "the folder is docs"}),
        ],
    );
    script(d, "parent.jsonl", &[json!({"text": "parent done"})]);
    let answered = burrow_in(
        d,
        &[
            "--json",
            "thread",
            "answer",
            "p",
            "--request",
            "t1/q1",
            "docs",
            "--session",
            &spec,
        ],
        b"",
    );
    answered.assert_code(0);
    let events = lines(&answered);
    assert_eq!(writes(&events), 0, "{events:?}");
    let last = events.last().unwrap();
    assert_eq!(last["outcome"], "completed", "{events:?}");
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "task_ended" && e["outcome"] == "completed"),
        "{events:?}"
    );

    let shown = show(d, "p");
    let history = history_of(&shown);
    // The sibling ran once; the parent's model read the child's report.
    assert_eq!(results_of(&history, "w1").len(), 1);
    let report = history
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["text"].as_str())
        .find(|t| t.starts_with("I answered the question of the call t1 (task)."))
        .unwrap_or_else(|| panic!("no report: {history:?}"));
    assert!(
        report.contains("What came of it:\nthe folder is docs\n\n[subagent scout completed"),
        "{report}"
    );
    assert_eq!(shown["runs"].as_array().unwrap().len(), 1);
    assert_eq!(shown["runs"][0]["status"], "completed");
    assert!(shown["pending"].as_array().unwrap().is_empty());

    // The child's history: the answer after its question, its second
    // question refused (max_questions 1), then its report.
    let child = history_of(&show(d, "p/task-t1"));
    let users: Vec<&str> = child
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["text"].as_str())
        .collect();
    assert_eq!(users, ["Find the folder.", "docs"]);
    let second = results_of(&child, "q2");
    assert_eq!(second.len(), 1);
    assert_eq!(second[0]["is_error"], true);
    assert!(
        second[0]["content"]
            .as_str()
            .unwrap()
            .contains("asked the 1 questions you may"),
        "{}",
        second[0]
    );
}

#[test]
fn a_child_past_task_max_tokens_is_an_error_result_naming_the_bound() {
    let ws = Workspace::new();
    let d = ws.dir();
    let ls = json!({"id": "c1", "name": "ls", "arguments": {"path": "/"}});
    agent(
        d,
        "busy",
        "",
        &[
            json!({"tool_calls": [ls], "usage": {"input_tokens": 30, "output_tokens": 20}}),
            json!({"text": "never", "usage": {"input_tokens": 30, "output_tokens": 20}}),
        ],
    );
    let parent = script(
        d,
        "parent.jsonl",
        &[
            json!({"tool_calls": [task_call("t1", "busy")]}),
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
        "--task-max-tokens",
        "40",
    ]);
    run.assert_code(0);
    let events = lines(&run);
    let result = events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["id"] == "t1" && e.get("parent_run_id").is_none())
        .unwrap();
    assert_eq!(result["is_error"], true, "{result}");
    let content = result["content"].as_str().unwrap();
    assert!(
        content.starts_with(
            "The subagent busy did not complete its task: it ended failed (max_run_tokens: the run used 50 tokens (input and output), past its limit of 40)."
        ),
        "{content}"
    );
    assert!(
        content.contains(
            "[subagent busy failed: 1 turn, 1 tool call, usage: 30 input, 20 output tokens"
        ),
        "{content}"
    );
    let ended = events.iter().find(|e| e["type"] == "task_ended").unwrap();
    assert_eq!(ended["outcome"], "failed");
    assert_eq!(ended["reason"], "max_run_tokens");
    assert_eq!(events.last().unwrap()["outcome"], "completed");

    // The bound is recorded with the run, so a resumed run keeps it.
    let spec = spec(d);
    let kept = burrow_in(
        d,
        &[
            "run",
            "go",
            "--model",
            &parent,
            "--agents",
            &agents,
            "--task-max-tokens",
            "40",
            "--session",
            &spec,
            "--thread",
            "k",
        ],
        b"",
    );
    kept.assert_code(0);
    assert_eq!(
        show(d, "k")["runs"][0]["labels"]["burrow.task_max_tokens"],
        "40"
    );
}

/// A child's batch of `ls` and `write_file` with a PreToolUse hook asking
/// for `write_file` and a PostToolUse hook logging each call that ran: the
/// run pauses (exit 3) on an approval naming the subagent and the call, and
/// the decision (a new process) resumes the child with that call alone.
fn a_childs_approval_relayed(approve: bool) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let write = json!({"id": "w1", "name": "write_file",
        "arguments": {"file_path": "/b.txt", "content": "b"}});
    let ls = json!({"id": "k1", "name": "ls", "arguments": {"path": "/"}});
    agent(d, "scout", "", &[json!({"tool_calls": [ls, write]})]);
    let parent = script(
        d,
        "parent.jsonl",
        &[json!({"tool_calls": [task_call("t1", "scout")]})],
    );
    let log = d.join("ran.log");
    let ask = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
        "permissionDecision": "ask", "permissionDecisionReason": "writing needs a human"}});
    let hooks = json!({
        "PreToolUse": [{"matcher": "write_file", "hooks": [{"type": "command",
            "command": format!("echo '{ask}'")}]}],
        "PostToolUse": [{"hooks": [{"type": "command",
            "command": format!("cat >> '{}'; echo >> '{}'", log.display(), log.display())}]}],
    });
    let settings = d.join("settings.json");
    std::fs::write(&settings, json!({ "hooks": hooks }).to_string()).unwrap();
    let settings = settings.display().to_string();
    let agents = d.join("agents").display().to_string();
    let spec = spec(d);
    let paused = burrow_in(
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
            &settings,
            "--session",
            &spec,
            "--thread",
            "p",
        ],
        b"",
    );
    paused.assert_code(3);
    let ran = |id: &str| {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains(&format!("\"tool_use_id\":\"{id}\"")))
            .count()
    };
    assert_eq!((ran("k1"), ran("w1")), (1, 0));
    let shown = show(d, "p");
    let pending = shown["pending"].as_array().unwrap();
    assert_eq!(pending.len(), 1, "{shown}");
    assert_eq!(pending[0]["request_id"], "t1/w1");
    assert_eq!(pending[0]["kind"], "approval");
    assert_eq!(pending[0]["subagent"], "scout");
    assert_eq!(pending[0]["tool"], "write_file");
    assert_eq!(pending[0]["subagent_call_id"], "w1");
    let human = burrow_in(d, &["thread", "show", "p", "--session", &spec], b"");
    assert!(
        human
            .out()
            .contains("): the subagent scout waits for approval of its call w1 (write_file)"),
        "{}",
        human.out()
    );

    script(d, "parent.jsonl", &[json!({"text": "parent done"})]);
    write_script(
        &d.join("agents/scout.jsonl"),
        &[json!({"text": "wrote it"})],
    );
    let mut args = vec!["thread", "answer", "p", "--request", "t1/w1"];
    if approve {
        args.extend(["ok", "--approve"]);
    } else {
        args.push("not now");
    }
    args.extend(["--session", &spec]);
    let answered = burrow_in(d, &args, b"");
    answered.assert_code(0);
    assert_eq!((ran("k1"), ran("w1")), (1, usize::from(approve)));
    let child = history_of(&show(d, "p/task-t1"));
    assert_eq!(results_of(&child, "k1").len(), 1);
    let users: Vec<&str> = child
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["text"].as_str())
        .collect();
    let said = if approve {
        "I approved the call w1 (write_file); it ran."
    } else {
        "I declined the call w1 (write_file): not now"
    };
    assert!(users.iter().any(|u| u.starts_with(said)), "{users:?}");
    let shown = show(d, "p");
    assert_eq!(shown["runs"][0]["status"], "completed", "{shown}");
    assert!(shown["pending"].as_array().unwrap().is_empty());
    let report = history_of(&shown)
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["text"].as_str())
        .any(|t| t.contains("wrote it\n\n[subagent scout completed"));
    assert!(report, "{shown}");
}

#[test]
fn a_childs_pretooluse_ask_pauses_the_run_and_approving_runs_only_that_call() {
    a_childs_approval_relayed(true);
}

#[test]
fn a_childs_pretooluse_ask_declined_refuses_only_that_call() {
    a_childs_approval_relayed(false);
}
