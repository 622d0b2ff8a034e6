//! `burrow serve` latency: send-to-first-SSE-frame p50 and p99 on SQLite (and PostgreSQL when BURROW_POSTGRES_URL is set), with 20 threads running at once; and 100 watchers on one run, counting the frames dropped for watchers that keep up.
//!
//! `cargo bench -p burrow-serve --bench latency` (plain `main`: divan reports no
//! percentiles). Each sample posts a message to a fresh thread over HTTP, opens
//! the run's event stream and stops the clock at its first event; 20 such
//! clients run at once. The model is scripted and answers at once.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use burrow_runtime::agent::Agent;
use burrow_runtime::model::{ModelError, ScriptedModel, ScriptedResponse};
use burrow_runtime::runner::{FanoutChannel, Runner, RunnerConfig};
use burrow_runtime::session::{
    PostgresOptions, PostgresStore, SessionStore, SqliteStore, SystemClock,
};
use burrow_serve::{Limits, Server, Tokens, add_token};
use futures::StreamExt;
use serde_json::{Value, json};

const CLIENTS: usize = 20;
const PER_CLIENT: usize = 25;
const WATCHERS: usize = 100;

struct Bench {
    base: String,
    token: String,
    _dir: tempfile::TempDir,
}

async fn start(store: Arc<dyn SessionStore>, model: ScriptedModel, tenant: &str) -> Bench {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokens");
    let token = add_token(&path, tenant, "bench").unwrap();
    let tokens = Tokens::load(&path).unwrap();
    let config = RunnerConfig::default()
        .with_ask_user(true)
        .with_live(Arc::new(FanoutChannel::default()));
    let runner = Runner::with_config(Agent::new(Arc::new(model)), store, config);
    let limits = Limits {
        watchers: 10_000,
        ..Limits::default()
    };
    let server = Server::new(runner, tokens, "default", limits);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(server.serve(listener, std::future::pending()));
    Bench {
        base,
        token,
        _dir: dir,
    }
}

/// Reads SSE events off `response`; returns the events (name, data) until the end.
async fn events(response: reqwest::Response, first_only: bool) -> Vec<(String, Value)> {
    let mut stream = response.bytes_stream();
    let mut buffer = String::new();
    let mut out = Vec::new();
    while let Some(chunk) = stream.next().await {
        buffer.push_str(std::str::from_utf8(&chunk.unwrap()).unwrap());
        while let Some(at) = buffer.find("\n\n") {
            let block: String = buffer.drain(..at + 2).collect();
            let mut name = String::new();
            let mut data = String::new();
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("event:") {
                    name = v.trim().to_owned();
                } else if let Some(v) = line.strip_prefix("data:") {
                    data.push_str(v.trim_start());
                }
            }
            if data.is_empty() {
                continue;
            }
            let end = name == "end";
            out.push((name, serde_json::from_str(&data).unwrap()));
            if end || first_only {
                return out;
            }
        }
    }
    out
}

async fn latency(label: &str, store: Arc<dyn SessionStore>) {
    let tenant = format!("bench-{}", uuid::Uuid::now_v7().simple());
    let model = ScriptedModel::new(|_| Ok(ScriptedResponse::text("answer")));
    let b = Arc::new(start(store, model, &tenant).await);
    let client = reqwest::Client::new();
    let mut tasks = Vec::new();
    for c in 0..CLIENTS {
        let (b, client) = (b.clone(), client.clone());
        tasks.push(tokio::spawn(async move {
            let mut samples = Vec::new();
            for i in 0..PER_CLIENT {
                let thread = format!("c{c}-t{i}");
                let t0 = Instant::now();
                let posted: Value = client
                    .post(format!("{}/v1/threads/{thread}/messages", b.base))
                    .bearer_auth(&b.token)
                    .json(&json!({"content": "go"}))
                    .send()
                    .await
                    .unwrap()
                    .json()
                    .await
                    .unwrap();
                let run = posted["run_id"].as_str().unwrap().to_owned();
                let r = client
                    .get(format!("{}/v1/runs/{run}/events", b.base))
                    .bearer_auth(&b.token)
                    .send()
                    .await
                    .unwrap();
                let first = events(r, true).await;
                assert!(!first.is_empty());
                samples.push(t0.elapsed());
            }
            samples
        }));
    }
    let mut all: Vec<Duration> = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    all.sort();
    let p = |q: f64| all[((all.len() as f64 - 1.0) * q).round() as usize];
    println!(
        "{label}: send-to-first-SSE-frame over {} samples, {CLIENTS} threads at once: p50 {:.2} ms, p99 {:.2} ms",
        all.len(),
        p(0.50).as_secs_f64() * 1e3,
        p(0.99).as_secs_f64() * 1e3
    );
}

async fn watchers(label: &str, store: Arc<dyn SessionStore>) {
    let tenant = format!("bench-{}", uuid::Uuid::now_v7().simple());
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let model = {
        let gate = gate.clone();
        let turns = std::sync::atomic::AtomicUsize::new(0);
        ScriptedModel::new_async(move |_| {
            let gate = gate.clone();
            let n = turns.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async move {
                if n == 0 {
                    gate.acquire().await.unwrap().forget();
                }
                Ok::<_, ModelError>(if n < 200 {
                    ScriptedResponse::text(format!("turn {n}")).call(
                        format!("c{n}"),
                        "no_such_tool",
                        json!({}),
                    )
                } else {
                    ScriptedResponse::text("done")
                })
            }
        })
    };
    let b = Arc::new(start(store, model, &tenant).await);
    let client = reqwest::Client::new();
    let posted: Value = client
        .post(format!("{}/v1/threads/w/messages", b.base))
        .bearer_auth(&b.token)
        .json(&json!({"content": "go"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let run = posted["run_id"].as_str().unwrap().to_owned();
    let mut readers = Vec::new();
    for _ in 0..WATCHERS {
        let r = client
            .get(format!("{}/v1/runs/{run}/events", b.base))
            .bearer_auth(&b.token)
            .send()
            .await
            .unwrap();
        readers.push(tokio::spawn(events(r, false)));
    }
    gate.add_permits(1);
    let mut frames = 0;
    let mut missed = 0u64;
    for r in readers {
        for (name, data) in r.await.unwrap() {
            frames += 1;
            if name == "gap" {
                missed += data["missed"].as_u64().unwrap();
            }
        }
    }
    println!(
        "{label}: {WATCHERS} watchers on one run of 201 model requests: {} events each, frames dropped {missed}",
        frames / WATCHERS
    );
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let sqlite: Arc<dyn SessionStore> =
            Arc::new(SqliteStore::open(dir.path().join("bench.db")).unwrap());
        latency("SQLite", sqlite.clone()).await;
        watchers("SQLite", sqlite).await;
        if let Ok(url) = std::env::var("BURROW_POSTGRES_URL") {
            // Idle connections kept: one per client at once, so no sample waits for a new
            // connection (a backend process, its login and prepared statements);
            // BURROW_BENCH_PG_POOL=4 measures the store's default.
            let mut options = PostgresOptions::default();
            options.pool = std::env::var("BURROW_BENCH_PG_POOL")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(CLIENTS + 4);
            let pg: Arc<dyn SessionStore> = Arc::new(
                PostgresStore::connect_with(&url, Arc::new(SystemClock), options)
                    .await
                    .unwrap(),
            );
            latency("PostgreSQL", pg.clone()).await;
            watchers("PostgreSQL", pg).await;
        }
    });
}
