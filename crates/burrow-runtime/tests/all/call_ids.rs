//! Call ids a model repeats within an answer, reuses from an earlier turn or leaves empty are renamed deterministically before anything runs: every call runs once with its own effect key, the history keeps the new names, and no run ends `store_failed` for a model's choice of ids. Through the runner on every store, with the scripted model; in the plain loop across runs, with the ids kept beside the history (ADR 0284) and without; and a call a thread was left with unanswered gets its result before the next request.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use burrow_runtime::agent::{Agent, CallIds, Outcome, RunOptions};
use burrow_runtime::message::{AssistantPart, Message, ToolCall};
use burrow_runtime::model::{ScriptedModel, ScriptedResponse};
use burrow_runtime::runner::Runner;
use burrow_runtime::session::{
    ClaimAttempt, Commit, HistoryItem, Scope, ToolCallStatus, Write, load_history,
};
use burrow_runtime::tool::{ToolOutput, ToolRegistry};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

#[cfg(feature = "postgres")]
use super::runner::postgres;
use super::runner::{Fixture, memory, on_every_store, sqlite};

#[derive(Deserialize, JsonSchema)]
struct Put {
    value: String,
}

/// An agent whose turns are `turns` (each a list of call ids, all calls of
/// `put` with a value of their own), then text; `put` records each value it
/// was given under the call id it ran as.
fn agent(turns: Vec<Vec<&'static str>>, seen: Arc<Mutex<Vec<(String, String)>>>) -> Agent {
    let mut responses = Vec::new();
    let mut n = 0;
    for turn in turns {
        let mut r = ScriptedResponse::calls();
        for id in turn {
            r = r.call(id, "put", json!({"value": format!("v{n}")}));
            n += 1;
        }
        responses.push(r);
    }
    responses.push(ScriptedResponse::text("done"));
    let mut tools = ToolRegistry::new();
    tools.add_typed("put", "Keeps a value.", move |args: Put, cx| {
        seen.lock().unwrap().push((cx.call_id.clone(), args.value));
        async { Ok(ToolOutput::ok("kept")) }
    });
    Agent::new(Arc::new(ScriptedModel::from_responses(responses))).with_tools(tools)
}

async fn run_turns(fx: Fixture, turns: Vec<Vec<&'static str>>, expected_ids: &[&str]) {
    let t = Scope::new("acme", "ws").thread("t1");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let runner = Runner::new(agent(turns, seen.clone()), fx.store.clone());
    let run = runner
        .send(&t, "alice", "go", None)
        .await
        .unwrap()
        .run
        .unwrap();
    let result = run.wait().await;
    assert_eq!(result.outcome, Outcome::Completed, "{result:?}");
    runner.drain().await;
    let ran = seen.lock().unwrap().clone();
    let values: Vec<String> = ran.iter().map(|(_, v)| v.clone()).collect();
    let expected_values: Vec<String> = (0..expected_ids.len()).map(|i| format!("v{i}")).collect();
    let mut sorted = values.clone();
    sorted.sort();
    assert_eq!(sorted, expected_values, "every call ran once");
    let mut ids: Vec<String> = ran.iter().map(|(id, _)| id.clone()).collect();
    ids.sort();
    let mut expected: Vec<String> = expected_ids.iter().map(|s| (*s).to_owned()).collect();
    expected.sort();
    assert_eq!(ids, expected);
    let history = load_history(fx.store.as_ref(), &t).await.unwrap();
    super::agent::assert_valid_history(&history);
    let in_history: Vec<String> = history
        .iter()
        .flat_map(|m| m.tool_calls().map(|c| c.id.clone()).collect::<Vec<_>>())
        .collect();
    let mut in_history_sorted = in_history.clone();
    in_history_sorted.sort();
    assert_eq!(
        in_history_sorted, expected,
        "the history keeps the new names"
    );
    let records = fx.store.tool_calls(&t.scope, run.run_id()).await.unwrap();
    let by_id: HashMap<String, ToolCallStatus> =
        records.into_iter().map(|r| (r.call_id, r.status)).collect();
    assert_eq!(by_id.len(), expected.len());
    assert!(by_id.values().all(|s| *s == ToolCallStatus::Finished));
    assert!(matches!(history.last(), Some(Message::Assistant { .. })));
}

on_every_store!(
    calls_with_one_id_in_one_answer_are_renamed_and_each_runs_once,
    an_id_reused_in_a_later_turn_is_renamed_and_runs_again,
    calls_with_no_id_get_unique_ones,
    a_call_left_unanswered_is_answered_before_the_next_request_and_never_runs,
);

async fn calls_with_one_id_in_one_answer_are_renamed_and_each_runs_once(fx: Fixture) {
    run_turns(fx, vec![vec!["c", "c", "c"]], &["c", "c-2", "c-3"]).await;
}

async fn an_id_reused_in_a_later_turn_is_renamed_and_runs_again(fx: Fixture) {
    run_turns(
        fx,
        vec![vec!["call_0"], vec!["call_0"], vec!["call_0", "call_0-2"]],
        &["call_0", "call_0-2", "call_0-3", "call_0-2-2"],
    )
    .await;
}

async fn calls_with_no_id_get_unique_ones(fx: Fixture) {
    run_turns(
        fx,
        vec![vec!["", ""], vec![""]],
        &["call-2", "call-3", "call-4"],
    )
    .await;
}

// ------------------------------------------- the plain loop, the ids kept beside the history

/// The ids of the calls in `history`, in order.
fn call_ids(history: &[Message]) -> Vec<String> {
    history
        .iter()
        .flat_map(|m| m.tool_calls().map(|c| c.id.clone()).collect::<Vec<_>>())
        .collect()
}

/// Runs `runs` (each a list of answers, each a list of call ids) one after
/// another on one history, with `kept` passed to every run when given.
async fn plain_runs(runs: Vec<Vec<Vec<&'static str>>>, kept: Option<CallIds>) -> Vec<Message> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut history = Vec::new();
    for turns in runs {
        let agent = agent(turns, seen.clone());
        let options = RunOptions {
            call_ids: kept.clone(),
            ..RunOptions::default()
        };
        let result = agent
            .run_with(&mut history, Some("go".to_owned()), options, &mut |_| {})
            .await;
        assert_eq!(result.outcome, Outcome::Completed, "{result:?}");
    }
    super::agent::assert_valid_history(&history);
    history
}

#[tokio::test]
async fn an_id_reused_in_a_later_run_is_renamed_whether_or_not_the_ids_are_kept() {
    let runs = || {
        vec![
            vec![vec!["call_0"]],
            vec![vec!["call_0"]],
            vec![vec!["call_0", "call_0-2"], vec![""]],
        ]
    };
    let expected = ["call_0", "call_0-2", "call_0-3", "call_0-2-2", "call-2"];
    let counted = plain_runs(runs(), None).await;
    assert_eq!(call_ids(&counted), expected);
    let kept = plain_runs(runs(), Some(CallIds::new())).await;
    assert_eq!(kept, counted, "the same names either way");
}

#[tokio::test]
async fn kept_ids_follow_a_truncated_history_and_a_rewritten_one() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let kept = CallIds::new();
    let options = || RunOptions {
        call_ids: Some(kept.clone()),
        ..RunOptions::default()
    };
    let mut history = Vec::new();
    let first = agent(vec![vec!["a"]], seen.clone());
    first
        .run_with(&mut history, Some("one".to_owned()), options(), &mut |_| {})
        .await;
    assert_eq!(call_ids(&history), ["a"]);
    // Truncated: "a" is no longer in the history, so it is free again.
    history.truncate(1);
    let again = agent(vec![vec!["a", "b"]], seen.clone());
    again
        .run_with(&mut history, None, options(), &mut |_| {})
        .await;
    assert_eq!(call_ids(&history), ["a", "b"]);
    // Rewritten under the index to a history as long, whose last message
    // differs: its ids are counted again, so a reuse of "z" is caught.
    let len = history.len();
    let mut rewritten = plain_runs(vec![vec![vec!["z"]]], None).await;
    while rewritten.len() < len {
        rewritten.insert(0, Message::user("earlier"));
    }
    history = rewritten;
    let reuse = agent(vec![vec!["z", "a"]], seen.clone());
    reuse
        .run_with(
            &mut history,
            Some("three".to_owned()),
            options(),
            &mut |_| {},
        )
        .await;
    assert_eq!(call_ids(&history), ["z", "z-2", "a"]);
    super::agent::assert_valid_history(&history);
}

// ------------------------------------------- a call left unanswered in a thread

async fn a_call_left_unanswered_is_answered_before_the_next_request_and_never_runs(fx: Fixture) {
    let t = Scope::new("acme", "ws").thread("t1");
    // A thread whose last answer's call has no result (its run ended first).
    let left = Message::Assistant {
        parts: vec![AssistantPart::ToolCall(ToolCall {
            id: "call_0".to_owned(),
            name: "put".to_owned(),
            arguments: json!({"value": "lost"}),
        })],
    };
    let items = [Message::user("earlier"), left]
        .into_iter()
        .map(|message| HistoryItem::Message { message })
        .collect();
    let ClaimAttempt::Granted(claim) = fx
        .store
        .acquire_claim(&t, "earlier", Duration::from_secs(30))
        .await
        .unwrap()
    else {
        panic!("a new thread is free");
    };
    fx.store
        .commit(
            &t,
            Commit::new()
                .fenced(claim.fence())
                .write(Write::AppendHistory {
                    run_id: None,
                    items,
                }),
        )
        .await
        .unwrap();
    assert!(fx.store.release_claim(&t, &claim).await.unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    // The next run's model reuses the id as well.
    let runner = Runner::new(agent(vec![vec!["call_0"]], seen.clone()), fx.store.clone());
    let run = runner
        .send(&t, "alice", "go", None)
        .await
        .unwrap()
        .run
        .unwrap();
    let result = run.wait().await;
    assert_eq!(result.outcome, Outcome::Completed, "{result:?}");
    runner.drain().await;
    assert_eq!(
        *seen.lock().unwrap(),
        [("call_0-2".to_owned(), "v0".to_owned())],
        "only the new call ran"
    );
    let history = load_history(fx.store.as_ref(), &t).await.unwrap();
    super::agent::assert_valid_history(&history);
    let Some(Message::ToolResult(repair)) = history.get(2) else {
        panic!("the left call is answered right after it: {history:?}");
    };
    assert_eq!(repair.call_id, "call_0");
    assert!(repair.is_error);
    assert!(
        repair.content.starts_with("The call has no result"),
        "{}",
        repair.content
    );
    assert_eq!(call_ids(&history), ["call_0", "call_0-2"]);
}
