//! The agent loop end to end with scripted models: batches, lock order, overlap, panics, failures, cancellation, limits and events.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use burrow_backend::{Backend, LockKey};
use burrow_runtime::agent::{
    Agent, AgentEvent, CancelToken, FailureReason, FnProvider, Outcome, RunOptions,
};
use burrow_runtime::message::{AssistantPart, Message};
use burrow_runtime::model::{ModelError, ModelErrorKind, ScriptedModel, ScriptedResponse};
use burrow_runtime::tool::{FnTool, ToolOutput, ToolRegistry};
use burrow_state::StateBackend;
use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::support::{content, ctx};

/// Every tool call has exactly one result, right after its answer, in call order.
pub fn assert_valid_history(history: &[Message]) {
    let mut i = 0;
    while i < history.len() {
        if let Message::ToolResult(r) = &history[i] {
            panic!("result {} at {i} answers no call", r.call_id);
        }
        let calls: Vec<_> = history[i].tool_calls().collect();
        i += 1;
        for call in calls {
            match history.get(i) {
                Some(Message::ToolResult(r)) => {
                    assert_eq!(r.call_id, call.id, "result {i} answers another call");
                    assert_eq!(r.name, call.name);
                }
                other => panic!("call {} has no result (found {other:?})", call.id),
            }
            i += 1;
        }
    }
}

fn agent(responses: Vec<ScriptedResponse>, tools: ToolRegistry) -> Agent {
    Agent::new(Arc::new(ScriptedModel::from_responses(responses))).with_tools(tools)
}

fn file_tools(backend: Arc<dyn Backend>) -> ToolRegistry {
    let mut tools = ToolRegistry::new();
    tools.add_file_tools(backend, ctx());
    tools
}

async fn multi_turn_with_parallel_calls(backend: Arc<dyn Backend>) {
    let script = vec![
        ScriptedResponse::text("Writing both.")
            .call(
                "w1",
                "write_file",
                json!({"file_path": "/a.txt", "content": "alpha\n"}),
            )
            .call(
                "w2",
                "write_file",
                json!({"file_path": "/b.txt", "content": "beta\n"}),
            ),
        ScriptedResponse::calls()
            .call("r1", "read_file", json!({"file_path": "/a.txt"}))
            .call("r2", "read_file", json!({"file_path": "/b.txt"}))
            .call(
                "e1",
                "edit_file",
                json!({"file_path": "/a.txt", "old_string": "alpha", "new_string": "ALPHA"}),
            ),
        ScriptedResponse::text("Done."),
    ];
    let agent = agent(script, file_tools(backend.clone()));
    let mut history = Vec::new();
    let result = agent.run(&mut history, "write two files").await;
    assert_eq!(result.outcome, Outcome::Completed);
    assert_eq!((result.turns, result.tool_calls), (3, 5));
    assert_valid_history(&history);
    assert_eq!(history.len(), 1 + 3 + 4 + 1);
    let Message::ToolResult(r2) = &history[6] else {
        panic!()
    };
    assert!(r2.content.contains("beta"), "{}", r2.content);
    assert_eq!(content(backend.as_ref(), "/a.txt").await, "ALPHA\n");
    assert_eq!(content(backend.as_ref(), "/b.txt").await, "beta\n");
}

#[tokio::test]
async fn a_multi_turn_run_with_parallel_calls_over_state() {
    multi_turn_with_parallel_calls(Arc::new(StateBackend::new())).await;
}

#[tokio::test]
async fn a_multi_turn_run_with_parallel_calls_over_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let backend = burrow_sqlite::StoreBackend::open(dir.path().join("w.db")).unwrap();
    multi_turn_with_parallel_calls(Arc::new(backend)).await;
}

#[derive(Deserialize, JsonSchema)]
struct Step {
    key: String,
    n: usize,
    #[serde(default)]
    sleep_us: u64,
}

#[derive(Default)]
struct Log {
    order: Mutex<Vec<(String, usize)>>,
    spans: Mutex<Vec<(usize, Instant, Instant)>>,
}

fn step_tool(log: Arc<Log>) -> FnTool<Step> {
    FnTool::new("step", "Records a step.", move |s: Step, _| {
        let log = log.clone();
        async move {
            let start = Instant::now();
            tokio::time::sleep(Duration::from_micros(s.sleep_us)).await;
            log.order.lock().unwrap().push((s.key.clone(), s.n));
            log.spans.lock().unwrap().push((s.n, start, Instant::now()));
            Ok(ToolOutput::ok(format!("{} {}", s.key, s.n)))
        }
    })
    .with_locks(|s: &Step| vec![LockKey::new(s.key.clone())])
}

#[tokio::test]
async fn calls_on_one_key_keep_call_order_over_100_random_schedules() {
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for schedule in 0..100 {
        let log = Arc::new(Log::default());
        let mut tools = ToolRegistry::new();
        tools.add(step_tool(log.clone()));
        let mut answer = ScriptedResponse::calls();
        for n in 0..6 {
            let key = if next() % 2 == 0 { "same" } else { "other" };
            answer = answer.call(
                format!("c{n}"),
                "step",
                json!({"key": key, "n": n, "sleep_us": next() % 2000}),
            );
        }
        let agent = agent(vec![answer, ScriptedResponse::text("ok")], tools);
        let mut history = Vec::new();
        let result = agent.run(&mut history, "go").await;
        assert_eq!(result.outcome, Outcome::Completed, "schedule {schedule}");
        assert_valid_history(&history);
        let order = log.order.lock().unwrap().clone();
        for key in ["same", "other"] {
            let ns: Vec<usize> = order
                .iter()
                .filter(|(k, _)| k == key)
                .map(|(_, n)| *n)
                .collect();
            let mut sorted = ns.clone();
            sorted.sort_unstable();
            assert_eq!(
                ns, sorted,
                "schedule {schedule}: calls on {key} ran out of order"
            );
        }
    }
}

#[tokio::test]
async fn calls_on_different_keys_overlap() {
    let log = Arc::new(Log::default());
    let mut tools = ToolRegistry::new();
    tools.add(step_tool(log.clone()));
    let answer = ScriptedResponse::calls()
        .call(
            "a",
            "step",
            json!({"key": "k1", "n": 0, "sleep_us": 50_000}),
        )
        .call(
            "b",
            "step",
            json!({"key": "k2", "n": 1, "sleep_us": 50_000}),
        );
    let agent = agent(vec![answer, ScriptedResponse::text("ok")], tools);
    let mut history = Vec::new();
    agent.run(&mut history, "go").await;
    let spans = log.spans.lock().unwrap().clone();
    let a = spans.iter().find(|s| s.0 == 0).unwrap();
    let b = spans.iter().find(|s| s.0 == 1).unwrap();
    assert!(
        a.1 < b.2 && b.1 < a.2,
        "the two calls did not overlap: {a:?} {b:?}"
    );
    // The same key, by contrast, never overlaps.
    let log = Arc::new(Log::default());
    let mut tools = ToolRegistry::new();
    tools.add(step_tool(log.clone()));
    let answer = ScriptedResponse::calls()
        .call("a", "step", json!({"key": "k", "n": 0, "sleep_us": 20_000}))
        .call("b", "step", json!({"key": "k", "n": 1, "sleep_us": 0}));
    agent_run(answer, tools).await;
    let spans = log.spans.lock().unwrap().clone();
    let a = spans.iter().find(|s| s.0 == 0).unwrap();
    let b = spans.iter().find(|s| s.0 == 1).unwrap();
    assert!(a.2 <= b.1, "calls on one key overlapped: {a:?} {b:?}");
}

async fn agent_run(answer: ScriptedResponse, tools: ToolRegistry) -> (Vec<Message>, Outcome) {
    let agent = agent(vec![answer, ScriptedResponse::text("ok")], tools);
    let mut history = Vec::new();
    let result = agent.run(&mut history, "go").await;
    assert_valid_history(&history);
    (history, result.outcome)
}

fn result_of<'a>(history: &'a [Message], id: &str) -> &'a burrow_runtime::message::ToolResult {
    history
        .iter()
        .find_map(|m| match m {
            Message::ToolResult(r) if r.call_id == id => Some(r),
            _ => None,
        })
        .unwrap()
}

#[derive(Deserialize, JsonSchema)]
struct Nothing {}

#[tokio::test]
async fn a_panicking_tool_is_a_failure_of_that_call_not_of_the_process() {
    let log = Arc::new(Log::default());
    let mut tools = ToolRegistry::new();
    tools.add(step_tool(log.clone()));
    tools.add_typed("boom", "Panics.", |_: Nothing, _| async {
        if true {
            panic!("kaboom");
        }
        Ok(ToolOutput::ok("never"))
    });
    let answer = ScriptedResponse::calls().call("p", "boom", json!({})).call(
        "s",
        "step",
        json!({"key": "k", "n": 0}),
    );
    let (history, outcome) = agent_run(answer, tools).await;
    let Outcome::Failed { reason, message } = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(reason, FailureReason::ToolFailure);
    assert!(message.contains("kaboom"), "{message}");
    let r = result_of(&history, "p");
    assert!(r.is_error && r.content.contains("kaboom"), "{}", r.content);
    // The sibling call ran and has its result.
    assert!(!result_of(&history, "s").is_error);
    assert_eq!(history.len(), 1 + 1 + 2, "the run ended after the batch");
}

#[tokio::test]
async fn a_tool_failure_ends_the_run_after_its_batch() {
    let mut tools = ToolRegistry::new();
    tools.add_typed("broken", "Fails.", |_: Nothing, _| async {
        Err(burrow_backend::Error::failure_msg("the disk is gone"))
    });
    let (history, outcome) = agent_run(
        ScriptedResponse::calls().call("b", "broken", json!({})),
        tools,
    )
    .await;
    assert!(matches!(
        outcome,
        Outcome::Failed {
            reason: FailureReason::ToolFailure,
            ..
        }
    ));
    assert!(
        result_of(&history, "b")
            .content
            .contains("the disk is gone")
    );
}

#[tokio::test]
async fn unknown_tools_and_invalid_arguments_are_results_the_model_can_act_on() {
    let backend: Arc<dyn Backend> = Arc::new(StateBackend::new());
    let answer = ScriptedResponse::calls()
        .call("u", "nope", json!({}))
        .call("i", "write_file", json!({"file_path": "/a.txt"}))
        .call("j", "write_file", json!("{not json"))
        .call("k", "write_file", json!([1]));
    let agent = agent(
        vec![answer, ScriptedResponse::text("sorry")],
        file_tools(backend.clone()),
    );
    let mut history = Vec::new();
    let result = agent.run(&mut history, "go").await;
    assert_eq!(result.outcome, Outcome::Completed);
    assert_valid_history(&history);
    assert!(
        result_of(&history, "u")
            .content
            .contains("There is no tool named \"nope\"")
    );
    assert!(
        result_of(&history, "i")
            .content
            .contains("missing field `content`")
    );
    assert!(result_of(&history, "j").content.contains("not valid JSON"));
    assert!(result_of(&history, "k").content.contains("JSON object"));
    for id in ["u", "i", "j", "k"] {
        assert!(result_of(&history, id).is_error);
    }
    assert!(
        backend
            .read_bytes(&ctx(), &super::support::p("/a.txt"))
            .await
            .is_err()
    );
}

#[tokio::test]
async fn cancelling_mid_batch_leaves_a_valid_history() {
    let backend = Arc::new(StateBackend::new());
    let cancel = CancelToken::new();
    let mut tools = file_tools(backend.clone());
    let c = cancel.clone();
    tools.add_typed("stop", "Cancels the run.", move |_: Nothing, _| {
        let c = c.clone();
        async move {
            c.cancel();
            Ok(ToolOutput::ok("cancelling"))
        }
    });
    tools.add_typed("hang", "Never returns.", |_: Nothing, _| async {
        std::future::pending::<()>().await;
        Ok(ToolOutput::ok("never"))
    });
    let answer = ScriptedResponse::calls()
        .call(
            "w",
            "write_file",
            json!({"file_path": "/a.txt", "content": "a"}),
        )
        .call("h", "hang", json!({}))
        .call("s", "stop", json!({}));
    let agent = agent(vec![answer, ScriptedResponse::text("never asked")], tools);
    let mut history = Vec::new();
    let options = RunOptions {
        cancel: cancel.clone(),
        ..RunOptions::default()
    };
    let result = agent
        .run_with(&mut history, Some("go".into()), options, &mut |_| {})
        .await;
    assert_eq!(
        result.outcome,
        Outcome::Stopped {
            reason: "cancelled".into()
        }
    );
    assert_valid_history(&history);
    assert_eq!(history.len(), 1 + 1 + 3);
    let hang = result_of(&history, "h");
    assert!(
        hang.is_error && hang.content.contains("cancelled"),
        "{}",
        hang.content
    );
    // The write finished before the cancel or did not happen: never half.
    let w = result_of(&history, "w");
    match backend
        .read_bytes(&ctx(), &super::support::p("/a.txt"))
        .await
    {
        Ok(bytes) => assert_eq!(bytes, b"a"),
        Err(_) => assert!(w.is_error),
    }
    // The history is valid for the next run.
    let agent2 = Agent::new(Arc::new(ScriptedModel::from_responses(vec![
        ScriptedResponse::text("again"),
    ])));
    let next = agent2.run(&mut history, "continue").await;
    assert_eq!(next.outcome, Outcome::Completed);
    assert_valid_history(&history);
}

#[tokio::test]
async fn max_turns_and_max_tool_calls_end_the_run_with_a_valid_history() {
    let log = Arc::new(Log::default());
    let mut tools = ToolRegistry::new();
    tools.add(step_tool(log.clone()));
    let model = ScriptedModel::new(|req| {
        Ok(ScriptedResponse::calls().call(
            format!("c{}", req.messages.len()),
            "step",
            json!({"key": "k", "n": 0}),
        ))
    });
    let agent = Agent::new(Arc::new(model))
        .with_tools(tools.clone())
        .with_max_turns(3);
    let mut history = Vec::new();
    let result = agent.run(&mut history, "loop").await;
    assert!(matches!(
        result.outcome,
        Outcome::Failed {
            reason: FailureReason::MaxTurns,
            ..
        }
    ));
    assert_eq!(result.turns, 3);
    assert_valid_history(&history);

    let model = ScriptedModel::new(|_| {
        Ok(ScriptedResponse::calls()
            .call("a", "step", json!({"key": "k", "n": 0}))
            .call("b", "step", json!({"key": "k", "n": 1})))
    });
    let agent = Agent::new(Arc::new(model))
        .with_tools(tools)
        .with_max_tool_calls(3);
    let mut history = Vec::new();
    let result = agent.run(&mut history, "loop").await;
    assert!(matches!(
        result.outcome,
        Outcome::Failed {
            reason: FailureReason::MaxToolCalls,
            ..
        }
    ));
    assert_valid_history(&history);
}

#[tokio::test]
async fn a_model_error_fails_the_run_with_its_kind() {
    let model =
        ScriptedModel::new(|_| Err(ModelError::new(ModelErrorKind::Overloaded, "Overloaded")));
    let agent = Agent::new(Arc::new(model));
    let mut history = Vec::new();
    let result = agent.run(&mut history, "hi").await;
    let Outcome::Failed { reason, message } = result.outcome else {
        panic!()
    };
    assert_eq!(reason, FailureReason::ModelError);
    assert!(message.contains("overloaded"), "{message}");
    assert_eq!(history, vec![Message::user("hi")]);
}

#[tokio::test]
async fn providers_are_evaluated_for_every_request() {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let model = ScriptedModel::new(move |req| {
        s.lock().unwrap().push(req.system.to_owned());
        Ok(if req.messages.len() < 3 {
            ScriptedResponse::calls().call("c", "ls", json!({}))
        } else {
            ScriptedResponse::text("done")
        })
    });
    let c = calls.clone();
    let agent = Agent::new(Arc::new(model))
        .with_tools(file_tools(Arc::new(StateBackend::new())))
        .with_instructions("Be brief.")
        .with_provider(Arc::new(FnProvider(move |history: &[Message]| {
            c.fetch_add(1, Ordering::SeqCst);
            Some(format!("The history holds {} messages.", history.len()))
        })));
    let mut history = Vec::new();
    agent.run(&mut history, "hi").await;
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "Be brief.\n\nThe history holds 1 messages.",
            "Be brief.\n\nThe history holds 3 messages."
        ]
    );
}

#[tokio::test]
async fn a_streaming_run_emits_the_events_burrow_run_json_prints() {
    let backend: Arc<dyn Backend> = Arc::new(StateBackend::new());
    let script = vec![
        ScriptedResponse {
            thinking: Some("hmm".into()),
            usage: Some(burrow_runtime::message::Usage {
                input_tokens: Some(7),
                ..Default::default()
            }),
            ..ScriptedResponse::text("Listing.").call("c1", "ls", json!({"path": "/"}))
        },
        ScriptedResponse::text("Empty."),
    ];
    let agent = agent(script, file_tools(backend));
    let mut history = Vec::new();
    let options = RunOptions {
        run_id: Some("r1".into()),
        thread_id: Some("t1".into()),
        ..RunOptions::default()
    };
    let events: Vec<AgentEvent> = agent
        .run_stream(&mut history, Some("hi".into()), options)
        .collect()
        .await;
    let types: Vec<String> = events
        .iter()
        .map(|e| {
            serde_json::to_value(e).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        types,
        [
            "run_started",
            "thinking_delta",
            "text_delta",
            "usage",
            "tool_call",
            "tool_result",
            "text_delta",
            "usage",
            "run_ended"
        ]
    );
    assert_eq!(
        serde_json::to_value(&events[0]).unwrap(),
        json!({"type": "run_started", "run_id": "r1", "thread_id": "t1"})
    );
    assert_eq!(
        serde_json::to_value(&events[4]).unwrap(),
        json!({"type": "tool_call", "id": "c1", "name": "ls", "arguments": {"path": "/"}})
    );
    assert_eq!(
        serde_json::to_value(events.last().unwrap()).unwrap(),
        json!({"type": "run_ended", "outcome": "completed", "usage": {"input_tokens": 7}})
    );
    assert_valid_history(&history);
    assert!(
        matches!(&history[1], Message::Assistant { parts } if matches!(parts[0], AssistantPart::Thinking { .. }))
    );
}

#[tokio::test]
async fn a_call_holding_the_workspace_key_runs_alone_between_the_others() {
    let ws = burrow_runtime::tool::workspace_lock();
    let log = Arc::new(Log::default());
    let mut tools = ToolRegistry::new();
    tools.add(step_tool(log.clone()));
    let answer = ScriptedResponse::calls()
        .call(
            "a",
            "step",
            json!({"key": "k1", "n": 0, "sleep_us": 20_000}),
        )
        .call(
            "w",
            "step",
            json!({"key": ws.as_str(), "n": 1, "sleep_us": 5_000}),
        )
        .call("b", "step", json!({"key": "k2", "n": 2}))
        .call("c", "step", json!({"key": "k3", "n": 3}));
    agent_run(answer, tools).await;
    let spans = log.spans.lock().unwrap().clone();
    let span = |n: usize| *spans.iter().find(|s| s.0 == n).unwrap();
    let (a, w, b, c) = (span(0), span(1), span(2), span(3));
    assert!(
        a.2 <= w.1,
        "the workspace call started before an earlier keyed call ended"
    );
    assert!(
        w.2 <= b.1 && w.2 <= c.1,
        "a later keyed call started before the workspace call ended"
    );
}

#[tokio::test]
async fn context_files_are_read_through_the_backend_and_bounded() {
    use burrow_runtime::agent::{ContextFiles, InstructionProvider};
    let backend = Arc::new(StateBackend::new());
    let provider = ContextFiles::new(backend.clone(), ctx());
    assert_eq!(
        provider.instructions(&[]).await.unwrap(),
        None,
        "no files, no context"
    );
    backend
        .write(&ctx(), &super::support::p("/AGENTS.md"), "Use tabs.")
        .await
        .unwrap();
    backend
        .write(&ctx(), &super::support::p("/CLAUDE.md"), &"x".repeat(50))
        .await
        .unwrap();
    let text = ContextFiles::new(backend.clone(), ctx())
        .with_max_chars(20)
        .instructions(&[])
        .await
        .unwrap()
        .unwrap();
    assert!(
        text.contains("Contents of /AGENTS.md (project instructions):\n\nUse tabs."),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "{}\n[... /CLAUDE.md is cut here: 30 more characters",
            "x".repeat(20)
        )),
        "{text}"
    );
    assert!(!text.contains(&"x".repeat(21)));
    let only = ContextFiles::new(backend.clone(), ctx())
        .with_paths(["/NOTES.md", "/CLAUDE.md"])
        .unwrap()
        .instructions(&[])
        .await
        .unwrap()
        .unwrap();
    assert!(!only.contains("AGENTS") && only.contains("/CLAUDE.md"));
    // As a provider of an agent, each request sees the file as it is now.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let model = ScriptedModel::new(move |req| {
        s.lock().unwrap().push(req.system.to_owned());
        Ok(ScriptedResponse::text("ok"))
    });
    let agent =
        Agent::new(Arc::new(model)).with_provider(Arc::new(ContextFiles::new(backend, ctx())));
    agent.run(&mut Vec::new(), "hi").await;
    assert!(seen.lock().unwrap()[0].contains("Use tabs."));
}
