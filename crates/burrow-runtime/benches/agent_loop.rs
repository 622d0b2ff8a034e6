//! Agent-loop overhead per turn: a scripted model and the memory backend, one model request plus one `read_file` call per turn.
//!
//! `cargo bench -p burrow-runtime --bench agent_loop`. `run_10000_turns`
//! is one whole run of 10,000 turns (divide by 10,000 for µs/turn);
//! `one_turn_after` times one more turn on a history that already holds
//! 100 or 10,000 turns, to show the cost does not grow with the history;
//! `one_turn_after_kept_ids` does the same with the history's call ids kept
//! beside it from run to run (`RunOptions::call_ids`, ADR 0284), where
//! `one_turn_after` has each run count them once.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use burrow_backend::{Backend, FileContext, VPath};
use burrow_runtime::agent::{Agent, CallIds, RunOptions};
use burrow_runtime::message::Message;
use burrow_runtime::model::{ScriptedModel, ScriptedResponse};
use burrow_runtime::tool::ToolRegistry;
use burrow_state::StateBackend;
use serde_json::json;

fn main() {
    divan::main();
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// An agent whose model calls read_file while fewer than `turns` requests were made, then answers text.
fn agent(rt: &tokio::runtime::Runtime, turns: usize) -> Agent {
    let backend = Arc::new(StateBackend::new());
    rt.block_on(backend.write(
        &FileContext::default(),
        &VPath::parse("/a.txt").unwrap(),
        "one line\n",
    ))
    .unwrap();
    let mut tools = ToolRegistry::new();
    tools.add_file_tools(backend, FileContext::default());
    let count = std::sync::atomic::AtomicUsize::new(0);
    let model = ScriptedModel::new(move |_| {
        let n = count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(if n < turns {
            ScriptedResponse::calls().call(
                format!("c{n}"),
                "read_file",
                json!({"file_path": "/a.txt"}),
            )
        } else {
            ScriptedResponse::text("done")
        })
    });
    Agent::new(Arc::new(model))
        .with_tools(tools)
        .with_instructions("You are a benchmark.")
        .with_max_turns(usize::MAX)
}

#[divan::bench(sample_count = 5, sample_size = 1)]
fn run_10000_turns(bencher: divan::Bencher) {
    let rt = runtime();
    bencher
        .with_inputs(|| agent(&rt, 10_000))
        .bench_local_values(|agent| {
            let mut history = Vec::new();
            let result = rt.block_on(agent.run(&mut history, "go"));
            assert_eq!(result.turns, 10_001);
            history
        });
}

#[divan::bench(args = [100, 10_000], sample_count = 200, sample_size = 20)]
fn one_turn_after(bencher: divan::Bencher, turns: usize) {
    let rt = runtime();
    // Build a history of `turns` turns, then time one more turn each iteration.
    let mut history: Vec<Message> = Vec::new();
    let warm = agent(&rt, turns);
    rt.block_on(warm.run(&mut history, "go"));
    history.pop(); // the closing text answer
    let len = history.len();
    let agent = agent(&rt, usize::MAX).with_max_turns(1);
    bencher.bench_local(|| {
        rt.block_on(agent.run_with(&mut history, None, RunOptions::default(), &mut |_| {}));
        history.truncate(len);
    });
}

#[divan::bench(args = [100, 10_000], sample_count = 200, sample_size = 20)]
fn one_turn_after_kept_ids(bencher: divan::Bencher, turns: usize) {
    let rt = runtime();
    let ids = CallIds::new();
    let options = || RunOptions {
        call_ids: Some(ids.clone()),
        ..RunOptions::default()
    };
    let mut history: Vec<Message> = Vec::new();
    let warm = agent(&rt, turns);
    rt.block_on(warm.run_with(&mut history, Some("go".to_owned()), options(), &mut |_| {}));
    history.pop(); // the closing text answer
    let len = history.len();
    let agent = agent(&rt, usize::MAX).with_max_turns(1);
    bencher.bench_local(|| {
        rt.block_on(agent.run_with(&mut history, None, options(), &mut |_| {}));
        history.truncate(len);
    });
}
