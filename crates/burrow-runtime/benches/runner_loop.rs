//! Durable loop overhead per turn: the agent-loop benchmark's scripted model and `read_file` turn, run through the Runner over a SQLite session store (every turn committed) or the memory store.
//!
//! `cargo bench -p burrow-runtime --bench runner_loop`. `run_1000_turns` is
//! one whole run of 1,000 turns started by a message (divide by 1,000 for
//! µs/turn); compare with `agent_loop`'s bare loop for the overhead. Each
//! turn commits the answer, the call started, the call finished and the
//! results, and reads the thread's new messages (steering) once.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use burrow_backend::{Backend, FileContext, VPath};
use burrow_runtime::agent::{Agent, Outcome};
use burrow_runtime::model::{ScriptedModel, ScriptedResponse};
use burrow_runtime::runner::Runner;
use burrow_runtime::session::{MemoryStore, Scope, SessionStore, SqliteStore};
use burrow_runtime::tool::ToolRegistry;
use burrow_state::StateBackend;
use serde_json::json;

fn main() {
    divan::main();
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

const TURNS: usize = 1_000;

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

fn run(rt: &tokio::runtime::Runtime, store: Arc<dyn SessionStore>, agent: Agent) {
    let runner = Runner::new(agent, store);
    let thread = Scope::new("bench", "ws").thread("t1");
    rt.block_on(async {
        let sent = runner.send(&thread, "user", "go", None).await.unwrap();
        let result = sent.run.unwrap().wait().await;
        assert_eq!(result.outcome, Outcome::Completed);
        assert_eq!(result.turns, TURNS + 1);
        runner.drain().await;
    });
}

#[divan::bench(sample_count = 5, sample_size = 1)]
fn run_1000_turns_sqlite(bencher: divan::Bencher) {
    let rt = runtime();
    bencher
        .with_inputs(|| {
            let dir = tempfile::tempdir().unwrap();
            let store = SqliteStore::open(dir.path().join("sessions.db")).unwrap();
            (
                dir,
                Arc::new(store) as Arc<dyn SessionStore>,
                agent(&rt, TURNS),
            )
        })
        .bench_local_values(|(dir, store, agent)| {
            run(&rt, store, agent);
            dir
        });
}

#[divan::bench(sample_count = 5, sample_size = 1)]
fn run_1000_turns_memory(bencher: divan::Bencher) {
    let rt = runtime();
    bencher
        .with_inputs(|| {
            (
                Arc::new(MemoryStore::new()) as Arc<dyn SessionStore>,
                agent(&rt, TURNS),
            )
        })
        .bench_local_values(|(store, agent)| run(&rt, store, agent));
}
