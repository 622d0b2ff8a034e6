//! Hooks: one test per rule, with scripted command hooks (small sh scripts in a temp dir) and handler hooks.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use burrow_backend::Backend;
use burrow_runtime::agent::{Agent, FailureReason, Outcome};
use burrow_runtime::hooks::{
    HOOK_DECISION_LIMIT, HOOK_OUTPUT_CAP, Hook, HookEvent, HookFailure, HookOutput, Hooks, Matcher,
    OnError, Transcript, transcript_file,
};
use burrow_runtime::message::{Message, ToolResult};
use burrow_runtime::model::{ScriptedModel, ScriptedResponse};
use burrow_runtime::tool::ToolRegistry;
use burrow_state::StateBackend;
use serde_json::{Value, json};

use super::agent::assert_valid_history;
use super::support::{ctx, p};

/// Writes an executable sh script and returns the command that runs it.
fn script(dir: &Path, name: &str, body: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    format!("sh {}", path.display())
}

struct Run {
    history: Vec<Message>,
    outcome: Outcome,
    backend: Arc<StateBackend>,
}

impl Run {
    fn result(&self, id: &str) -> &ToolResult {
        self.history
            .iter()
            .find_map(|m| match m {
                Message::ToolResult(r) if r.call_id == id => Some(r),
                _ => None,
            })
            .unwrap()
    }

    async fn file(&self, path: &str) -> Option<String> {
        self.backend
            .read_bytes(&ctx(), &p(path))
            .await
            .ok()
            .map(|b| String::from_utf8(b).unwrap())
    }
}

/// One answer writing /a.txt with "original", then a closing text, under `hooks`.
async fn run_write(hooks: Hooks) -> Run {
    run_calls(
        hooks,
        ScriptedResponse::calls().call(
            "w",
            "write_file",
            json!({"file_path": "/a.txt", "content": "original"}),
        ),
    )
    .await
}

async fn run_calls(hooks: Hooks, answer: ScriptedResponse) -> Run {
    let backend = Arc::new(StateBackend::new());
    let mut tools = ToolRegistry::new();
    tools.add_file_tools(backend.clone(), ctx());
    let model = ScriptedModel::from_responses(vec![answer, ScriptedResponse::text("ok")]);
    let agent = Agent::new(Arc::new(model))
        .with_tools(tools)
        .with_hooks(hooks);
    let mut history = Vec::new();
    let result = agent.run(&mut history, "go").await;
    assert_valid_history(&history);
    Run {
        history,
        outcome: result.outcome,
        backend,
    }
}

fn pre(command: String) -> Hook {
    Hook::command(HookEvent::PreToolUse, Some("write_file|edit_file"), command).unwrap()
}

fn hooks(list: Vec<Hook>) -> Hooks {
    let mut hooks = Hooks::new();
    for h in list {
        hooks.add(h);
    }
    hooks
}

#[tokio::test]
async fn a_command_hook_gets_the_event_as_json_on_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("input.json");
    let cmd = script(dir.path(), "h.sh", &format!("cat > {}", out.display()));
    let run = run_write(hooks(vec![pre(cmd)])).await;
    assert_eq!(run.outcome, Outcome::Completed);
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["tool_name"], "write_file");
    assert_eq!(input["tool_use_id"], "w");
    assert_eq!(
        input["tool_input"],
        json!({"file_path": "/a.txt", "content": "original"})
    );
    for field in ["session_id", "run_id", "cwd"] {
        assert!(input[field].is_string(), "{field} missing: {input}");
    }
    assert_eq!(run.file("/a.txt").await.as_deref(), Some("original"));
}

#[tokio::test]
async fn exit_0_with_plain_output_allows() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = script(dir.path(), "h.sh", "echo looks fine");
    let run = run_write(hooks(vec![pre(cmd)])).await;
    assert!(!run.result("w").is_error);
    assert_eq!(run.file("/a.txt").await.as_deref(), Some("original"));
}

#[tokio::test]
async fn exit_2_denies_with_stderr_as_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = script(dir.path(), "h.sh", "echo 'no writes today' >&2; exit 2");
    let run = run_write(hooks(vec![pre(cmd)])).await;
    let r = run.result("w");
    assert!(r.is_error);
    assert!(r.content.contains("no writes today"), "{}", r.content);
    assert_eq!(run.file("/a.txt").await, None, "a denied call does not run");
    assert_eq!(
        run.outcome,
        Outcome::Completed,
        "the model sees the denial and goes on"
    );
}

#[tokio::test]
async fn exit_0_json_deny_denies_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = script(
        dir.path(),
        "h.sh",
        r#"echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "protected file"}}'"#,
    );
    let run = run_write(hooks(vec![pre(cmd)])).await;
    assert!(run.result("w").content.contains("protected file"));
    assert_eq!(run.file("/a.txt").await, None);
}

#[tokio::test]
async fn top_level_decision_block_denies() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = script(
        dir.path(),
        "h.sh",
        r#"echo '{"decision": "block", "reason": "blocked by policy"}'"#,
    );
    let run = run_write(hooks(vec![pre(cmd)])).await;
    assert!(run.result("w").content.contains("blocked by policy"));
    assert_eq!(run.file("/a.txt").await, None);
}

#[tokio::test]
async fn another_exit_code_is_a_failure_and_pre_tool_use_fails_closed() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = script(dir.path(), "h.sh", "echo oops >&2; exit 1");
    let run = run_write(hooks(vec![pre(cmd.clone())])).await;
    let r = run.result("w");
    assert!(
        r.is_error && r.content.contains("exited with code 1"),
        "{}",
        r.content
    );
    assert_eq!(run.file("/a.txt").await, None);
    // on_error: allow lets the call run (Claude Code's behaviour, opted into).
    let run = run_write(hooks(vec![pre(cmd).with_on_error(OnError::Allow)])).await;
    assert!(!run.result("w").is_error);
    assert_eq!(run.file("/a.txt").await.as_deref(), Some("original"));
}

#[tokio::test]
async fn json_that_is_not_a_hook_output_is_a_failure() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = script(dir.path(), "h.sh", r#"echo '{"hookSpecificOutput": 3}'"#);
    let run = run_write(hooks(vec![pre(cmd)])).await;
    assert!(run.result("w").content.contains("not a valid hook output"));
    assert_eq!(run.file("/a.txt").await, None);
}

#[tokio::test]
async fn a_command_that_cannot_start_is_a_failure() {
    // The hooks' folder does not exist: the process cannot be started at all.
    let dir = tempfile::tempdir().unwrap();
    let gone = dir.path().join("gone");
    let hooks = hooks(vec![pre("true".to_owned())]).with_cwd(&gone);
    let run = run_write(hooks).await;
    // The default policy of PreToolUse: a failure denies.
    let r = run.result("w");
    assert!(r.is_error);
    assert!(r.content.contains("could not start"), "{}", r.content);
    assert!(
        !r.content.contains(&gone.display().to_string()),
        "no host path in the reason: {}",
        r.content
    );
    assert_eq!(run.file("/a.txt").await, None);
}

#[tokio::test]
async fn a_command_the_shell_cannot_find_is_a_failure_that_says_so() {
    let run = run_write(hooks(vec![pre("/definitely/not/here".to_owned())])).await;
    let r = run.result("w");
    assert!(r.is_error);
    assert!(r.content.contains("could not be run"), "{}", r.content);
    assert_eq!(run.file("/a.txt").await, None);
}

#[tokio::test]
async fn a_deny_longer_than_the_output_cap_denies_even_under_on_error_allow() {
    let dir = tempfile::tempdir().unwrap();
    let reason = "r".repeat(3 * HOOK_OUTPUT_CAP);
    let body = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
        "permissionDecision": "deny", "permissionDecisionReason": reason}});
    let out = dir.path().join("out.json");
    std::fs::write(&out, body.to_string()).unwrap();
    let cmd = script(dir.path(), "h.sh", &format!("cat {}", out.display()));
    let run = run_write(hooks(vec![pre(cmd).with_on_error(OnError::Allow)])).await;
    let r = run.result("w");
    assert!(r.is_error);
    assert!(
        r.content.contains(&reason),
        "the whole reason reaches the model"
    );
    assert_eq!(run.file("/a.txt").await, None, "the write must not run");
}

#[tokio::test]
async fn stdout_over_1_mib_is_a_failure_of_the_hook() {
    let dir = tempfile::tempdir().unwrap();
    let flood = format!(
        "printf '{{\"reason\": \"'; head -c {} /dev/zero | tr '\\0' x; printf '\"}}'",
        HOOK_DECISION_LIMIT
    );
    let cmd = script(dir.path(), "h.sh", &flood);
    // Denied by default.
    let run = run_write(hooks(vec![pre(cmd.clone())])).await;
    let r = run.result("w");
    assert!(r.is_error);
    assert!(r.content.contains("more than 1 MiB"), "{}", r.content);
    assert_eq!(run.file("/a.txt").await, None);
    // Ignored under on_error: allow, and reported.
    let failures: Arc<Mutex<Vec<HookFailure>>> = Arc::default();
    let sink = failures.clone();
    let hooks = hooks(vec![pre(cmd).with_on_error(OnError::Allow)])
        .with_failure_sink(Arc::new(move |f| sink.lock().unwrap().push(f)));
    let run = run_write(hooks).await;
    assert!(!run.result("w").is_error);
    let failures = failures.lock().unwrap();
    assert_eq!(failures.len(), 1);
    assert!(failures[0].message.contains("more than 1 MiB"));
}

#[tokio::test]
async fn every_failure_ignored_under_on_error_allow_reaches_the_failure_sink() {
    let dir = tempfile::tempdir().unwrap();
    let broken = script(dir.path(), "broken.sh", "echo oops >&2; exit 1");
    let failures: Arc<Mutex<Vec<HookFailure>>> = Arc::default();
    let sink = failures.clone();
    let hooks = hooks(vec![
        pre(broken.clone()).with_on_error(OnError::Allow),
        Hook::command(HookEvent::PostToolUse, None, broken.clone()).unwrap(),
        Hook::command(HookEvent::UserPromptSubmit, None, broken.clone()).unwrap(),
        Hook::command(HookEvent::Stop, None, broken.clone()).unwrap(),
    ])
    .with_failure_sink(Arc::new(move |f| sink.lock().unwrap().push(f)));
    let run = run_write(hooks).await;
    assert_eq!(run.outcome, Outcome::Completed);
    assert_eq!(run.file("/a.txt").await.as_deref(), Some("original"));
    let failures = failures.lock().unwrap();
    let events: Vec<HookEvent> = failures.iter().map(|f| f.event).collect();
    assert_eq!(
        events,
        [
            HookEvent::UserPromptSubmit,
            HookEvent::PreToolUse,
            HookEvent::PostToolUse,
            HookEvent::Stop
        ]
    );
    assert!(failures.iter().all(|f| f.hook == broken), "{failures:?}");
    assert!(
        failures
            .iter()
            .all(|f| f.message.contains("exited with code 1: oops")),
        "{failures:?}"
    );
}

#[tokio::test]
async fn background_hooks_run_to_their_end_when_the_hooks_settle() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("done");
    let cmd = script(
        dir.path(),
        "h.sh",
        &format!("sleep 1; touch {}", marker.display()),
    );
    let failing = script(dir.path(), "f.sh", "exit 3");
    let failures: Arc<Mutex<Vec<HookFailure>>> = Arc::default();
    let sink = failures.clone();
    let hooks = hooks(vec![pre(cmd).in_background(), pre(failing).in_background()])
        .with_failure_sink(Arc::new(move |f| sink.lock().unwrap().push(f)));
    let handle = hooks.clone();
    let run = run_write(hooks).await;
    assert_eq!(run.outcome, Outcome::Completed);
    // The run did not wait for it; settling does, to its end.
    assert!(!marker.exists(), "the run waited for the background hook");
    handle.settle().await;
    assert!(
        marker.exists(),
        "the background hook was not run to its end"
    );
    let failures = failures.lock().unwrap();
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(failures[0].message.contains("background hook failed"));
}

#[tokio::test]
async fn hook_input_carries_transcript_path_and_permission_mode() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("input.json");
    let cmd = script(dir.path(), "h.sh", &format!("cat > {}", out.display()));
    let transcripts = dir.path().join("transcripts");
    run_write(hooks(vec![pre(cmd.clone())]).with_transcripts(&transcripts)).await;
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let session = input["session_id"].as_str().unwrap();
    assert_eq!(
        input["transcript_path"],
        transcript_file(&transcripts, session).display().to_string()
    );
    assert_eq!(input["permission_mode"], "default");
    run_write(hooks(vec![pre(cmd)]).with_permission_mode("plan")).await;
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(input["permission_mode"], "plan");
    assert!(input.get("transcript_path").is_none());
}

#[tokio::test]
async fn a_transcript_is_one_json_line_per_message_under_a_safe_name() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        transcript_file(dir.path(), "../t 1"),
        dir.path().join("%2E.%2Ft%201.jsonl")
    );
    let mut t = Transcript::create(dir.path(), "t1").unwrap();
    t.append(&Message::user("hi"), Some("run_1")).unwrap();
    t.append(&Message::user("again"), None).unwrap();
    let text = std::fs::read_to_string(t.path()).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["type"], "user");
    assert_eq!(lines[0]["session_id"], "t1");
    assert_eq!(lines[0]["run_id"], "run_1");
    assert_eq!(lines[0]["message"], json!({"role": "user", "text": "hi"}));
}

#[tokio::test]
async fn deny_beats_allow_across_two_parallel_hooks() {
    let dir = tempfile::tempdir().unwrap();
    let allow = script(
        dir.path(),
        "allow.sh",
        r#"echo '{"hookSpecificOutput": {"permissionDecision": "allow"}}'"#,
    );
    let deny = script(dir.path(), "deny.sh", "echo denied >&2; exit 2");
    for order in [[allow.clone(), deny.clone()], [deny.clone(), allow.clone()]] {
        let run = run_write(hooks(order.into_iter().map(pre).collect())).await;
        assert!(run.result("w").content.contains("denied"));
        assert_eq!(run.file("/a.txt").await, None);
    }
}

#[tokio::test]
async fn ask_beats_allow_and_pauses_the_run() {
    let ask = Hook::handler(HookEvent::PreToolUse, None, |_| async {
        Ok(HookOutput::ask("needs a human"))
    })
    .unwrap();
    let allow = Hook::handler(HookEvent::PreToolUse, None, |_| async {
        Ok(HookOutput::allow())
    })
    .unwrap();
    let run = run_write(hooks(vec![allow, ask])).await;
    assert_eq!(
        run.outcome,
        Outcome::Paused {
            reason: "needs a human".into()
        }
    );
    assert!(run.result("w").is_error);
    assert_eq!(run.file("/a.txt").await, None);
}

#[tokio::test]
async fn hooks_run_in_parallel() {
    // Each hook waits for the other to start: run one after the other they would time out.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let a = script(
        dir.path(),
        "a.sh",
        &format!("touch {d}/a; while [ ! -e {d}/b ]; do sleep 0.01; done"),
    );
    let b = script(
        dir.path(),
        "b.sh",
        &format!("touch {d}/b; while [ ! -e {d}/a ]; do sleep 0.01; done"),
    );
    let list = [a, b]
        .into_iter()
        .map(|c| pre(c).with_timeout(Duration::from_secs(20)))
        .collect();
    let run = run_write(hooks(list)).await;
    assert!(!run.result("w").is_error, "{}", run.result("w").content);
}

#[tokio::test]
async fn every_additional_context_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let one = script(
        dir.path(),
        "one.sh",
        r#"echo '{"hookSpecificOutput": {"additionalContext": "context one"}}'"#,
    );
    let two = Hook::handler(HookEvent::PreToolUse, None, |_| async {
        Ok(HookOutput::context("context two"))
    })
    .unwrap();
    let post = Hook::handler(HookEvent::PostToolUse, None, |input| async move {
        assert_eq!(input.tool_response.unwrap()["is_error"], false);
        Ok(HookOutput::context("context after"))
    })
    .unwrap();
    let run = run_write(hooks(vec![pre(one), two, post])).await;
    let content = &run.result("w").content;
    let at = |s: &str| {
        content
            .find(s)
            .unwrap_or_else(|| panic!("{s} missing: {content}"))
    };
    assert!(at("Created /a.txt") < at("context one"));
    assert!(at("context one") < at("context two"), "configured order");
    assert!(at("context two") < at("context after"));
}

#[tokio::test]
async fn updated_input_replaces_the_arguments_never_merges() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = script(
        dir.path(),
        "h.sh",
        r#"echo '{"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": {"file_path": "/b.txt", "content": "rewritten"}}}'"#,
    );
    let run = run_write(hooks(vec![pre(cmd)])).await;
    assert!(!run.result("w").is_error);
    assert_eq!(
        run.file("/a.txt").await,
        None,
        "the old path is gone: replaced, not merged"
    );
    assert_eq!(run.file("/b.txt").await.as_deref(), Some("rewritten"));
}

#[tokio::test]
async fn updated_input_that_violates_the_schema_is_a_hook_failure() {
    let bad = || {
        Hook::handler(HookEvent::PreToolUse, None, |_| async {
            Ok(HookOutput::update_input(json!({"file_path": "/a.txt"})))
        })
        .unwrap()
    };
    let run = run_write(hooks(vec![bad()])).await;
    let r = run.result("w");
    assert!(r.is_error && r.content.contains("schema"), "{}", r.content);
    assert_eq!(run.file("/a.txt").await, None);
    // With on_error: allow the rewrite is dropped and the original call runs.
    let run = run_write(hooks(vec![bad().with_on_error(OnError::Allow)])).await;
    assert_eq!(run.file("/a.txt").await.as_deref(), Some("original"));
}

#[tokio::test]
async fn updated_input_comes_from_the_hook_that_finished_last() {
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let tx = std::sync::Mutex::new(Some(tx));
    let rx = std::sync::Mutex::new(Some(rx));
    // Configured first, finishes last (it waits for the second to finish).
    let slow = Hook::handler(HookEvent::PreToolUse, None, move |_| {
        let rx = rx.lock().unwrap().take();
        async move {
            if let Some(rx) = rx {
                let _ = rx.await;
            }
            tokio::task::yield_now().await;
            Ok(HookOutput::update_input(
                json!({"file_path": "/a.txt", "content": "from the last"}),
            ))
        }
    })
    .unwrap();
    let fast = Hook::handler(HookEvent::PreToolUse, None, move |_| {
        let tx = tx.lock().unwrap().take();
        async move {
            if let Some(tx) = tx {
                let _ = tx.send(());
            }
            Ok(HookOutput::update_input(
                json!({"file_path": "/a.txt", "content": "from the first"}),
            ))
        }
    })
    .unwrap();
    let run = run_write(hooks(vec![slow, fast])).await;
    assert_eq!(run.file("/a.txt").await.as_deref(), Some("from the last"));
}

#[tokio::test]
async fn updated_input_is_dropped_when_any_hook_denies() {
    let rewrite = Hook::handler(HookEvent::PreToolUse, None, |_| async {
        Ok(HookOutput::update_input(
            json!({"file_path": "/b.txt", "content": "x"}),
        ))
    })
    .unwrap();
    let deny = Hook::handler(HookEvent::PreToolUse, None, |_| async {
        Ok(HookOutput::deny("no"))
    })
    .unwrap();
    let run = run_write(hooks(vec![rewrite, deny])).await;
    assert!(run.result("w").is_error);
    assert_eq!(run.file("/a.txt").await, None);
    assert_eq!(run.file("/b.txt").await, None);
}

fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat.contains(") Z "),
        Err(_) => false,
    }
}

#[tokio::test]
async fn a_hook_that_hangs_is_killed_at_its_timeout_with_its_children() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let cmd = script(
        dir.path(),
        "h.sh",
        &format!(
            "sleep 300 & echo $! > {0}; echo $$ >> {0}; sleep 300",
            pids.display()
        ),
    );
    let run = run_write(hooks(vec![
        pre(cmd).with_timeout(Duration::from_millis(500)),
    ]))
    .await;
    let r = run.result("w");
    assert!(
        r.is_error && r.content.contains("timed out"),
        "{}",
        r.content
    );
    assert_eq!(
        run.file("/a.txt").await,
        None,
        "a timed-out PreToolUse hook denies"
    );
    let pids: Vec<u32> = std::fs::read_to_string(&pids)
        .unwrap()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 2);
    // The kill is sent before the result; give the kernel a moment to reap.
    for _ in 0..200 {
        if pids.iter().all(|p| !alive(*p)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for pid in pids {
        assert!(
            !alive(pid),
            "process {pid} of the hook survived its timeout"
        );
    }
}

#[tokio::test]
async fn a_background_hook_never_delays_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let (gate, started, marker) = (
        dir.path().join("go"),
        dir.path().join("started"),
        dir.path().join("done"),
    );
    // The hook cannot finish before the test opens its gate, which it does
    // only after the run has completed: a run that waited would never end.
    let cmd = script(
        dir.path(),
        "h.sh",
        &format!(
            "touch {started}; while [ ! -e {gate} ]; do sleep 0.05; done; touch {marker}",
            started = started.display(),
            gate = gate.display(),
            marker = marker.display()
        ),
    );
    let hooks = hooks(vec![pre(cmd).in_background()]);
    let run = tokio::time::timeout(Duration::from_secs(60), run_write(hooks.clone()))
        .await
        .expect("the run waited for the background hook");
    assert_eq!(run.outcome, Outcome::Completed);
    assert_eq!(run.file("/a.txt").await.as_deref(), Some("original"));
    assert!(!marker.exists(), "the hook cannot have finished yet");
    // The background hook did run, and runs to its end once let through.
    std::fs::write(&gate, "").unwrap();
    tokio::time::timeout(Duration::from_secs(60), hooks.settle())
        .await
        .expect("the background hook ends once its gate opens");
    assert!(started.exists(), "the background hook never ran");
    assert!(
        marker.exists(),
        "the background hook did not run to its end"
    );
}

#[tokio::test]
async fn a_hook_that_prints_1_mb_is_capped_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = script(
        dir.path(),
        "h.sh",
        "head -c 1000000 /dev/zero | tr '\\0' x; head -c 1000000 /dev/zero | tr '\\0' y >&2; exit 2",
    );
    let run = run_write(hooks(vec![pre(cmd)])).await;
    let r = run.result("w");
    assert!(r.is_error);
    assert!(r.content.contains(&"y".repeat(HOOK_OUTPUT_CAP)));
    assert!(
        !r.content.contains(&"y".repeat(HOOK_OUTPUT_CAP + 1)),
        "stderr is capped at {HOOK_OUTPUT_CAP} characters"
    );
}

#[tokio::test]
async fn continue_false_stops_the_run() {
    let stop = Hook::handler(HookEvent::PostToolUse, None, |_| async {
        Ok(HookOutput {
            continue_: Some(false),
            stop_reason: Some("enough".into()),
            ..Default::default()
        })
    })
    .unwrap();
    let run = run_write(hooks(vec![stop])).await;
    assert_eq!(
        run.outcome,
        Outcome::Stopped {
            reason: "enough".into()
        }
    );
}

#[tokio::test]
async fn post_tool_use_exit_2_shows_stderr_to_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = script(
        dir.path(),
        "h.sh",
        "echo 'lint: trailing space' >&2; exit 2",
    );
    let hook = Hook::command(HookEvent::PostToolUse, Some("write_file"), cmd).unwrap();
    let run = run_write(hooks(vec![hook])).await;
    let r = run.result("w");
    assert!(!r.is_error, "the tool already ran");
    assert!(r.content.contains("lint: trailing space"), "{}", r.content);
}

#[tokio::test]
async fn a_failing_post_tool_use_hook_fails_open_unless_it_says_deny() {
    let fail = || {
        Hook::handler(HookEvent::PostToolUse, None, |_| async {
            Err("broken".to_owned())
        })
        .unwrap()
    };
    let run = run_write(hooks(vec![fail()])).await;
    assert_eq!(run.outcome, Outcome::Completed);
    let run = run_write(hooks(vec![fail().with_on_error(OnError::Deny)])).await;
    assert!(matches!(
        run.outcome,
        Outcome::Failed {
            reason: FailureReason::HookFailed,
            ..
        }
    ));
}

#[tokio::test]
async fn matchers_follow_claude_codes_rules() {
    assert!(Matcher::parse(None).unwrap().matches("anything"));
    assert!(Matcher::parse(Some("")).unwrap().matches("anything"));
    assert!(Matcher::parse(Some("*")).unwrap().matches("anything"));
    let list = Matcher::parse(Some("write_file|edit_file")).unwrap();
    assert!(list.matches("write_file") && list.matches("edit_file"));
    assert!(!list.matches("write_file2") && !list.matches("read_file"));
    let re = Matcher::parse(Some("edit.*")).unwrap();
    assert!(re.matches("edit_file") && re.matches("notebook_edit_x"));
    assert!(!re.matches("read_file"));
    let err = Matcher::parse(Some("edit(")).unwrap_err();
    assert!(
        err.to_string().contains("not a valid regular expression"),
        "{err}"
    );
    // A hook for other tools does not run.
    let deny = Hook::handler(HookEvent::PreToolUse, Some("read_file"), |_| async {
        Ok(HookOutput::deny("no"))
    })
    .unwrap();
    let run = run_write(hooks(vec![deny])).await;
    assert!(!run.result("w").is_error);
}

#[tokio::test]
async fn settings_in_claude_codes_form_load() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = script(dir.path(), "h.sh", "echo 'from settings' >&2; exit 2");
    let settings = json!({
        "model": "ignored",
        "hooks": {
            "PreToolUse": [{"matcher": "write_file|edit_file", "hooks": [
                {"type": "command", "command": cmd, "timeout": 30, "on_error": "allow"}
            ]}],
            "Notification": [{"hooks": [{"type": "command", "command": "true"}]}],
            "SubagentStop": [{"hooks": [{"type": "command", "command": "true"}]}]
        }
    });
    let hooks = Hooks::from_settings(&settings.to_string()).unwrap();
    assert_eq!(hooks.hooks().len(), 2);
    assert_eq!(hooks.hooks()[0].on_error, Some(OnError::Allow));
    assert_eq!(hooks.hooks()[0].timeout, Duration::from_secs(30));
    assert_eq!(hooks.hooks()[1].event, HookEvent::SubagentStop);
    assert_eq!(hooks.ignored_events(), ["Notification"]);
    let run = run_write(hooks).await;
    assert!(run.result("w").content.contains("from settings"));

    for (bad, says) in [
        (
            json!({"hooks": {"PreToolUse": [{"matcher": "a(", "hooks": []}]}}),
            "regular expression",
        ),
        (
            json!({"hooks": {"PreToolUse": [{"hooks": [{"type": "http", "url": "x"}]}]}}),
            "\"http\"",
        ),
        (
            json!({"hooks": {"PreToolUse": [{"hooks": [{"type": "command"}]}]}}),
            "no command",
        ),
        (
            json!({"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "x", "timeout": -1}]}]}}),
            "timeout",
        ),
        (
            json!({"hooks": {"PreToolUse": {"matcher": "x"}}}),
            "expected form",
        ),
    ] {
        let err = Hooks::from_settings(&bad.to_string()).unwrap_err();
        assert!(err.to_string().contains(says), "{bad}: {err}");
    }
    assert!(Hooks::from_settings("{not json").is_err());
}

#[tokio::test]
async fn seed_001_hooks_load_into_the_same_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = script(dir.path(), "h.sh", "echo 'seed hook' >&2; exit 2");
    let seed: burrow_types::Hook = serde_json::from_value(json!({
        "event": "pre_tool_use", "command": cmd, "matcher": "write_.*", "timeout": 5, "background": false
    }))
    .unwrap();
    let hook = Hook::from_seed(&seed).unwrap();
    assert_eq!(hook.event, HookEvent::PreToolUse);
    assert_eq!(hook.timeout, Duration::from_secs(5));
    let run = run_write(hooks(vec![hook])).await;
    assert!(run.result("w").content.contains("seed hook"));
    let no_command = burrow_types::Hook {
        command: None,
        ..seed
    };
    assert!(Hook::from_seed(&no_command).is_err());
}

#[tokio::test]
async fn post_tool_use_failure_hooks_see_the_error() {
    let seen = Arc::new(std::sync::Mutex::new(None));
    let s = seen.clone();
    let hook = Hook::handler(HookEvent::PostToolUseFailure, None, move |input| {
        *s.lock().unwrap() = input.error.clone();
        async { Ok(HookOutput::default()) }
    })
    .unwrap();
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Nothing {}
    let mut tools = ToolRegistry::new();
    tools.add_typed("broken", "Fails.", |_: Nothing, _| async {
        Err(burrow_backend::Error::failure_msg("the disk is gone"))
    });
    let model = ScriptedModel::from_responses(vec![ScriptedResponse::calls().call(
        "b",
        "broken",
        json!({}),
    )]);
    let agent = Agent::new(Arc::new(model))
        .with_tools(tools)
        .with_hooks(hooks(vec![hook]));
    let mut history = Vec::new();
    agent.run(&mut history, "go").await;
    assert_eq!(seen.lock().unwrap().as_deref(), Some("the disk is gone"));
}
