//! The hooks of the loop's own events (UserPromptSubmit, SessionStart, Stop) fire with Claude Code's semantics, tested with scripted command hooks.

use std::path::Path;
use std::sync::Arc;

use burrow_runtime::agent::{Agent, FailureReason, Outcome, RunResult};
use burrow_runtime::hooks::{Hook, HookEvent, Hooks, OnError};
use burrow_runtime::message::Message;
use burrow_runtime::model::{ScriptedModel, ScriptedResponse};
use serde_json::Value;

use super::agent::assert_valid_history;

/// Writes an executable sh script and returns the command that runs it.
fn script(dir: &Path, name: &str, body: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    format!("sh {}", path.display())
}

fn hook(event: HookEvent, matcher: Option<&str>, command: String) -> Hook {
    Hook::command(event, matcher, command).unwrap()
}

fn hooks(list: Vec<Hook>) -> Hooks {
    let mut hooks = Hooks::new();
    for h in list {
        hooks.add(h);
    }
    hooks
}

/// Runs `prompt` over `history` with `answers` and `hooks`; returns the
/// result and how many model requests were made.
async fn run(
    hooks: Hooks,
    answers: Vec<ScriptedResponse>,
    history: &mut Vec<Message>,
    prompt: &str,
) -> (RunResult, usize) {
    let model = Arc::new(ScriptedModel::from_responses(answers).named("scripted:test"));
    let agent = Agent::new(model.clone()).with_hooks(hooks);
    let result = agent.run(history, prompt).await;
    assert_valid_history(history);
    (result, model.requests())
}

fn user_texts(history: &[Message]) -> Vec<String> {
    history
        .iter()
        .filter_map(|m| match m {
            Message::User { text } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// The JSON inputs a logging hook appended to `log` (one per line).
fn inputs(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn logging(dir: &Path, name: &str, log: &Path, then: &str) -> String {
    script(
        dir,
        name,
        &format!(
            "cat >> {}; echo >> {}; {then}",
            log.display(),
            log.display()
        ),
    )
}

#[tokio::test]
async fn user_prompt_submit_sees_the_prompt_and_its_context_joins_it() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    let plain = logging(dir.path(), "plain.sh", &log, "echo 'the repo uses tabs'");
    let json = script(
        dir.path(),
        "json.sh",
        r#"echo '{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "today is Tuesday"}}'"#,
    );
    // A matcher is ignored for this event: the hook fires all the same.
    let hooks = hooks(vec![
        hook(HookEvent::UserPromptSubmit, None, plain),
        hook(HookEvent::UserPromptSubmit, Some("no_such_tool"), json),
    ]);
    let mut history = Vec::new();
    let (result, requests) = run(
        hooks,
        vec![ScriptedResponse::text("ok")],
        &mut history,
        "fix the bug",
    )
    .await;
    assert_eq!(result.outcome, Outcome::Completed);
    assert_eq!(requests, 1);
    assert_eq!(
        user_texts(&history),
        ["fix the bug\n\nthe repo uses tabs\n\ntoday is Tuesday"]
    );
    let seen = inputs(&log);
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0]["hook_event_name"], "UserPromptSubmit");
    assert_eq!(seen[0]["prompt"], "fix the bug");
    assert_eq!(seen[0]["run_id"], result.run_id.as_str());
}

#[tokio::test]
async fn user_prompt_submit_exit_2_or_block_erases_the_prompt_and_stops() {
    let dir = tempfile::tempdir().unwrap();
    let exit2 = script(
        dir.path(),
        "exit2.sh",
        "echo 'no secrets in prompts' >&2; exit 2",
    );
    let block = script(
        dir.path(),
        "block.sh",
        r#"echo '{"decision": "block", "reason": "prompt blocked by policy"}'"#,
    );
    for (cmd, says) in [
        (exit2, "no secrets in prompts"),
        (block, "prompt blocked by policy"),
    ] {
        let mut history = Vec::new();
        let (result, requests) = run(
            hooks(vec![hook(HookEvent::UserPromptSubmit, None, cmd)]),
            vec![ScriptedResponse::text("never")],
            &mut history,
            "the password is hunter2",
        )
        .await;
        assert!(history.is_empty(), "the prompt is erased: {history:?}");
        assert_eq!(requests, 0, "no model request is made");
        match &result.outcome {
            Outcome::Stopped { reason } => assert!(reason.contains(says), "{reason}"),
            other => panic!("{other:?}"),
        }
    }
}

#[tokio::test]
async fn user_prompt_submit_failures_follow_the_policy() {
    let dir = tempfile::tempdir().unwrap();
    let broken = script(dir.path(), "broken.sh", "echo oops >&2; exit 1");
    // Fails open by default: the prompt goes on.
    let mut history = Vec::new();
    let (result, _) = run(
        hooks(vec![hook(
            HookEvent::UserPromptSubmit,
            None,
            broken.clone(),
        )]),
        vec![ScriptedResponse::text("ok")],
        &mut history,
        "hi",
    )
    .await;
    assert_eq!(result.outcome, Outcome::Completed);
    assert_eq!(user_texts(&history), ["hi"]);
    // on_error: deny ends the run before any request.
    let mut history = Vec::new();
    let (result, requests) = run(
        hooks(vec![
            hook(HookEvent::UserPromptSubmit, None, broken).with_on_error(OnError::Deny),
        ]),
        vec![ScriptedResponse::text("ok")],
        &mut history,
        "hi",
    )
    .await;
    assert_eq!(requests, 0);
    match result.outcome {
        Outcome::Failed { reason, message } => {
            assert_eq!(reason, FailureReason::HookFailed);
            assert!(message.contains("exited with code 1"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn session_start_fires_once_for_a_new_history_with_source_and_model() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    let startup = logging(dir.path(), "startup.sh", &log, "echo 'branch: main'");
    let resume = script(dir.path(), "resume.sh", "echo 'resumed context'");
    let hooks = hooks(vec![
        hook(HookEvent::SessionStart, Some("startup"), startup),
        hook(HookEvent::SessionStart, Some("resume"), resume),
    ]);
    let answers = vec![ScriptedResponse::text("one"), ScriptedResponse::text("two")];
    let model = Arc::new(ScriptedModel::from_responses(answers).named("scripted:test"));
    let agent = Agent::new(model).with_hooks(hooks);
    let mut history = Vec::new();
    assert_eq!(
        agent.run(&mut history, "first").await.outcome,
        Outcome::Completed
    );
    // The next prompt continues the same session: SessionStart does not fire again.
    assert_eq!(
        agent.run(&mut history, "second").await.outcome,
        Outcome::Completed
    );
    assert_valid_history(&history);
    assert_eq!(user_texts(&history), ["first\n\nbranch: main", "second"]);
    let seen = inputs(&log);
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0]["hook_event_name"], "SessionStart");
    assert_eq!(seen[0]["source"], "startup");
    assert_eq!(seen[0]["model"], "scripted:test");
}

#[tokio::test]
async fn session_start_exit_2_only_reaches_the_user() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = script(dir.path(), "h.sh", "echo 'for the user' >&2; exit 2");
    let mut history = Vec::new();
    let (result, requests) = run(
        hooks(vec![hook(HookEvent::SessionStart, None, cmd)]),
        vec![ScriptedResponse::text("ok")],
        &mut history,
        "hi",
    )
    .await;
    assert_eq!(result.outcome, Outcome::Completed);
    assert_eq!(requests, 1);
    assert_eq!(user_texts(&history), ["hi"]);
}

#[tokio::test]
async fn stop_exit_2_keeps_the_run_going_once_stop_hook_active_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    // Blocks the first stop only: a hook checks stop_hook_active to avoid a loop.
    let cmd = logging(
        dir.path(),
        "stop.sh",
        &log,
        &format!(
            "if tail -n 1 {} | grep -q '\"stop_hook_active\":false'; then echo 'run the tests first' >&2; exit 2; fi",
            log.display()
        ),
    );
    let mut history = Vec::new();
    let (result, requests) = run(
        hooks(vec![hook(HookEvent::Stop, Some("ignored"), cmd)]),
        vec![
            ScriptedResponse::text("done"),
            ScriptedResponse::text("tests pass"),
        ],
        &mut history,
        "fix it",
    )
    .await;
    assert_eq!(result.outcome, Outcome::Completed);
    assert_eq!((requests, result.turns), (2, 2));
    assert_eq!(user_texts(&history), ["fix it", "run the tests first"]);
    let seen = inputs(&log);
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[0]["hook_event_name"], "Stop");
    assert_eq!(seen[0]["stop_hook_active"], false);
    assert_eq!(seen[1]["stop_hook_active"], true);
}

#[tokio::test]
async fn a_stop_hook_that_always_blocks_is_bounded_by_max_turns() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = script(
        dir.path(),
        "stop.sh",
        r#"echo '{"decision": "block", "reason": "keep going"}'"#,
    );
    let model = ScriptedModel::new(|_| Ok(ScriptedResponse::text("done")));
    let agent = Agent::new(Arc::new(model))
        .with_hooks(hooks(vec![hook(HookEvent::Stop, None, cmd)]))
        .with_max_turns(3);
    let mut history = Vec::new();
    let result = agent.run(&mut history, "go").await;
    assert_valid_history(&history);
    assert_eq!(result.turns, 3);
    assert!(matches!(
        result.outcome,
        Outcome::Failed {
            reason: FailureReason::MaxTurns,
            ..
        }
    ));
    assert_eq!(
        user_texts(&history)[1..],
        ["keep going", "keep going", "keep going"]
    );
}

#[tokio::test]
async fn stop_continue_false_stops_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = script(
        dir.path(),
        "stop.sh",
        r#"echo '{"continue": false, "stopReason": "budget spent", "decision": "block", "reason": "x"}'"#,
    );
    let mut history = Vec::new();
    let (result, requests) = run(
        hooks(vec![hook(HookEvent::Stop, None, cmd)]),
        vec![ScriptedResponse::text("done")],
        &mut history,
        "go",
    )
    .await;
    assert_eq!(requests, 1);
    assert_eq!(
        result.outcome,
        Outcome::Stopped {
            reason: "budget spent".into()
        },
        "continue: false takes precedence over the block"
    );
}

#[tokio::test]
async fn settings_load_the_loop_events_and_subagent_stop() {
    let settings = serde_json::json!({"hooks": {
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "true"}]}],
        "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "true"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "true"}]}],
        "SubagentStop": [{"hooks": [{"type": "command", "command": "true"}]}]
    }});
    let hooks = Hooks::from_settings(&settings.to_string()).unwrap();
    let events: Vec<HookEvent> = hooks.hooks().iter().map(|h| h.event).collect();
    for event in [
        HookEvent::UserPromptSubmit,
        HookEvent::SessionStart,
        HookEvent::Stop,
        HookEvent::SubagentStop,
    ] {
        assert!(events.contains(&event), "{event:?}");
    }
    assert!(hooks.ignored_events().is_empty());
}

// ------------------------------------------------ the same events through the Runner

use burrow_runtime::runner::Runner;
use burrow_runtime::session::load_history;

#[cfg(feature = "postgres")]
use super::runner::postgres;
use super::runner::{Fixture, memory, on_every_store, sqlite};

on_every_store!(
    a_session_run_fires_session_start_on_a_new_thread_user_prompt_submit_and_stop,
    a_blocking_user_prompt_submit_stops_a_session_run_before_the_model_sees_the_prompt,
    a_steering_message_goes_through_user_prompt_submit_and_a_block_erases_it,
);

async fn a_session_run_fires_session_start_on_a_new_thread_user_prompt_submit_and_stop(
    fx: Fixture,
) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    let start = logging(dir.path(), "start.sh", &log, "echo 'branch: main'");
    let prompt = logging(dir.path(), "prompt.sh", &log, "echo 'today is Tuesday'");
    let stop = logging(dir.path(), "stop.sh", &log, "true");
    let hooks = hooks(vec![
        hook(HookEvent::SessionStart, None, start),
        hook(HookEvent::UserPromptSubmit, None, prompt),
        hook(HookEvent::Stop, None, stop),
    ]);
    let model = Arc::new(ScriptedModel::new(|_| Ok(ScriptedResponse::text("ok"))));
    let runner = Runner::new(Agent::new(model).with_hooks(hooks), fx.store.clone());
    let t = burrow_runtime::session::Scope::new("acme", "ws").thread("t1");
    for text in ["fix the bug", "and the test"] {
        let run = runner
            .send(&t, "alice", text, None)
            .await
            .unwrap()
            .run
            .unwrap();
        assert_eq!(run.wait().await.outcome, Outcome::Completed);
    }
    runner.drain().await;
    let seen: Vec<(String, Value)> = inputs(&log)
        .into_iter()
        .map(|i| (i["hook_event_name"].as_str().unwrap().to_owned(), i))
        .collect();
    let names: Vec<&str> = seen.iter().map(|(n, _)| n.as_str()).collect();
    // SessionStart on the new thread only; UserPromptSubmit and Stop in each run.
    assert_eq!(
        names,
        [
            "SessionStart",
            "UserPromptSubmit",
            "Stop",
            "UserPromptSubmit",
            "Stop"
        ]
    );
    assert_eq!(seen[0].1["source"], "startup");
    assert_eq!(seen[1].1["prompt"], "fix the bug");
    assert_eq!(seen[3].1["prompt"], "and the test");
    assert!(seen.iter().all(|(_, i)| i["session_id"] == "t1"));
    // The hooks' context joined the prompts, in the stored history too.
    let history = load_history(fx.store.as_ref(), &t).await.unwrap();
    assert_valid_history(&history);
    assert_eq!(
        user_texts(&history),
        [
            "fix the bug\n\nbranch: main\n\ntoday is Tuesday",
            "and the test\n\ntoday is Tuesday"
        ]
    );
}

async fn a_blocking_user_prompt_submit_stops_a_session_run_before_the_model_sees_the_prompt(
    fx: Fixture,
) {
    let dir = tempfile::tempdir().unwrap();
    let guard = script(
        dir.path(),
        "guard.sh",
        "if grep -q hunter2; then echo 'no secrets in prompts' >&2; exit 2; fi",
    );
    let hooks = hooks(vec![hook(HookEvent::UserPromptSubmit, None, guard)]);
    let model = Arc::new(ScriptedModel::new(|request| {
        Ok(ScriptedResponse::text(format!(
            "seen {}",
            user_texts(request.messages).join("|")
        )))
    }));
    let runner = Runner::new(
        Agent::new(model.clone()).with_hooks(hooks),
        fx.store.clone(),
    );
    let t = burrow_runtime::session::Scope::new("acme", "ws").thread("t1");
    let run = runner
        .send(&t, "alice", "the password is hunter2", None)
        .await
        .unwrap()
        .run
        .unwrap();
    match run.wait().await.outcome {
        Outcome::Stopped { reason } => assert!(reason.contains("no secrets"), "{reason}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(model.requests(), 0, "the model never saw the prompt");
    // The thread goes on; the blocked prompt is in no history.
    let run = runner
        .send(&t, "alice", "hello", None)
        .await
        .unwrap()
        .run
        .unwrap();
    assert_eq!(run.wait().await.outcome, Outcome::Completed);
    runner.drain().await;
    let history = load_history(fx.store.as_ref(), &t).await.unwrap();
    assert_valid_history(&history);
    assert_eq!(user_texts(&history), ["hello"]);
    let text = serde_json::to_string(&history).unwrap();
    assert!(!text.contains("hunter2"), "{text}");
}

async fn a_steering_message_goes_through_user_prompt_submit_and_a_block_erases_it(fx: Fixture) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    let guard = logging(
        dir.path(),
        "guard.sh",
        &log,
        &format!(
            "if tail -n 1 {} | grep -q hunter2; then echo 'no secrets' >&2; exit 2; fi",
            log.display()
        ),
    );
    let hooks = hooks(vec![hook(HookEvent::UserPromptSubmit, None, guard)]);
    let t = burrow_runtime::session::Scope::new("acme", "ws").thread("t1");
    let cell: Arc<std::sync::OnceLock<Runner>> = Arc::default();
    let seen: Arc<std::sync::Mutex<Vec<Vec<String>>>> = Arc::default();
    let model = {
        let (cell, seen, t) = (cell.clone(), seen.clone(), t.clone());
        ScriptedModel::new_async(move |request| {
            let users = user_texts(request.messages);
            let first = {
                let mut seen = seen.lock().unwrap();
                seen.push(users);
                seen.len() == 1
            };
            let (cell, t) = (cell.clone(), t.clone());
            async move {
                if first {
                    // While the first request is in flight, the user steers twice.
                    let runner = cell.get().unwrap();
                    for text in ["use tabs", "the password is hunter2"] {
                        let sent = runner.send(&t, "alice", text, None).await.unwrap();
                        assert!(sent.run.is_none(), "a running thread is steered");
                    }
                    Ok(ScriptedResponse::calls().call("c1", "no_such_tool", serde_json::json!({})))
                } else {
                    Ok(ScriptedResponse::text("done"))
                }
            }
        })
    };
    let runner = Runner::new(
        Agent::new(Arc::new(model)).with_hooks(hooks),
        fx.store.clone(),
    );
    cell.set(runner.clone()).unwrap();
    let run = runner
        .send(&t, "alice", "go", None)
        .await
        .unwrap()
        .run
        .unwrap();
    assert_eq!(run.wait().await.outcome, Outcome::Completed);
    runner.drain().await;
    let prompts: Vec<Value> = inputs(&log)
        .into_iter()
        .map(|i| i["prompt"].clone())
        .collect();
    assert_eq!(prompts, ["go", "use tabs", "the password is hunter2"]);
    let seen = seen.lock().unwrap().clone();
    // The allowed steering reached the next request; the blocked one never did.
    assert_eq!(seen, [vec!["go"], vec!["go", "use tabs"]]);
    let history = load_history(fx.store.as_ref(), &t).await.unwrap();
    assert_valid_history(&history);
    assert_eq!(user_texts(&history), ["go", "use tabs"]);
}
