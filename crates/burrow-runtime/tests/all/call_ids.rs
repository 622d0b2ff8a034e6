//! Call ids a model repeats within an answer, reuses from an earlier turn or leaves empty are renamed deterministically before anything runs: every call runs once with its own effect key, the history keeps the new names, and no run ends `store_failed` for a model's choice of ids. Through the runner on every store, with the scripted model.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use burrow_runtime::agent::{Agent, Outcome};
use burrow_runtime::message::Message;
use burrow_runtime::model::{ScriptedModel, ScriptedResponse};
use burrow_runtime::runner::Runner;
use burrow_runtime::session::{Scope, ToolCallStatus, load_history};
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
);

async fn calls_with_one_id_in_one_answer_are_renamed_and_each_runs_once(fx: Fixture) {
    run_turns(fx, vec![vec!["c", "c", "c"]], &["c", "c~2", "c~3"]).await;
}

async fn an_id_reused_in_a_later_turn_is_renamed_and_runs_again(fx: Fixture) {
    run_turns(
        fx,
        vec![vec!["call_0"], vec!["call_0"], vec!["call_0", "call_0~2"]],
        &["call_0", "call_0~2", "call_0~3", "call_0~2~2"],
    )
    .await;
}

async fn calls_with_no_id_get_unique_ones(fx: Fixture) {
    run_turns(
        fx,
        vec![vec!["", ""], vec![""]],
        &["call~2", "call~3", "call~4"],
    )
    .await;
}
