//! Durable loop overhead per turn: the agent-loop benchmark's scripted model and `read_file` turn, run through the Runner over the memory, SQLite or PostgreSQL session store (every turn committed); and a watcher's send-to-first-frame latency.
//!
//! `cargo bench -p burrow-runtime --bench runner_loop` (add `--features
//! postgres` with `BURROW_POSTGRES_URL` set, after `cargo xtask setup`, for the
//! PostgreSQL rows). `run_1000_turns` is one whole run of 1,000 turns started
//! by a message (divide by 1,000 for µs/turn); compare with `agent_loop`'s bare
//! loop for the overhead. Each turn makes two fenced commits (the answer with
//! its call recorded started; the call's finish with the results, ADR 0185)
//! and reads the thread's new messages only when something else was committed
//! to it. `send_to_first_frame` is one `send` to an idle thread until a
//! `Runner::watch` subscriber of the run it started holds its first live frame.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use burrow_backend::{Backend, FileContext, VPath};
use burrow_runtime::agent::{Agent, Outcome};
use burrow_runtime::model::{ScriptedModel, ScriptedResponse};
use burrow_runtime::runner::Runner;
use burrow_runtime::session::{MemoryStore, Scope, SessionStore, SqliteStore};
use burrow_runtime::tool::ToolRegistry;
use burrow_state::StateBackend;
use futures::StreamExt;
use serde_json::json;

#[cfg(feature = "postgres")]
#[path = "support/postgres.rs"]
mod pg;

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

#[cfg(feature = "postgres")]
#[divan::bench(sample_count = 5, sample_size = 1)]
fn run_1000_turns_postgres(bencher: divan::Bencher) {
    let rt = runtime();
    if std::env::var("BURROW_POSTGRES_URL").is_err() {
        eprintln!("run_1000_turns_postgres: BURROW_POSTGRES_URL is not set; not measured");
        return;
    }
    let schemas = std::sync::Mutex::new(Vec::new());
    bencher
        .with_inputs(|| {
            let (store, schema) = pg::fresh_store(&rt).unwrap();
            schemas.lock().unwrap().push(schema);
            (store, agent(&rt, TURNS))
        })
        .bench_local_values(|(store, agent)| run(&rt, store, agent));
    for schema in schemas.into_inner().unwrap() {
        pg::drop_schema(&rt, &schema);
    }
}

/// One `send` to a fresh idle thread until a watcher of the run it started
/// holds its first frame; then the run's model request is let through.
fn first_frame(
    rt: &tokio::runtime::Runtime,
    runner: &Runner,
    gate: &tokio::sync::Semaphore,
    n: &std::sync::atomic::AtomicUsize,
) {
    let i = n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let scope = Scope::new("bench", "ws");
    let thread = scope.thread(format!("w{i}"));
    rt.block_on(async {
        let sent = runner.send(&thread, "user", "go", None).await.unwrap();
        let run = sent.run.unwrap();
        let frame = runner.watch(&scope, run.run_id()).next().await.unwrap();
        assert!(!frame.event.is_end(), "the run was live when watched");
        divan::black_box(frame);
    });
    // One permit per run: a run that reaches its request later still finds it.
    gate.add_permits(1);
}

/// An agent whose one model request waits for `gate` (so the run is live while watched), then answers text.
fn gated_agent(gate: Arc<tokio::sync::Semaphore>) -> Agent {
    Agent::new(Arc::new(ScriptedModel::new_async(move |_| {
        let gate = gate.clone();
        async move {
            gate.acquire().await.unwrap().forget();
            Ok(ScriptedResponse::text("done"))
        }
    })))
}

fn bench_first_frame(bencher: divan::Bencher, store: Arc<dyn SessionStore>) {
    let rt = runtime();
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let runner = Runner::new(gated_agent(gate.clone()), store);
    let n = std::sync::atomic::AtomicUsize::new(0);
    bencher.bench_local(|| first_frame(&rt, &runner, &gate, &n));
    rt.block_on(runner.drain());
}

#[divan::bench(sample_count = 20, sample_size = 10)]
fn send_to_first_frame_memory(bencher: divan::Bencher) {
    bench_first_frame(bencher, Arc::new(MemoryStore::new()));
}

#[divan::bench(sample_count = 20, sample_size = 10)]
fn send_to_first_frame_sqlite(bencher: divan::Bencher) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("sessions.db")).unwrap();
    bench_first_frame(bencher, Arc::new(store));
}

#[cfg(feature = "postgres")]
#[divan::bench(sample_count = 20, sample_size = 10)]
fn send_to_first_frame_postgres(bencher: divan::Bencher) {
    let rt = runtime();
    let Some((store, schema)) = pg::fresh_store(&rt) else {
        return;
    };
    bench_first_frame(bencher, store);
    pg::drop_schema(&rt, &schema);
}
