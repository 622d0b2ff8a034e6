//! `burrow serve` latency and memory: send-to-first-SSE-frame p50 and p99 on SQLite (and PostgreSQL when BURROW_POSTGRES_URL is set), with 20 threads running at once, and the process's CPU per sample; 100 watchers on one run, counting the frames dropped for watchers that keep up; and the process's memory at the start, after 1,000 and after 10,000 runs.
//!
//! `cargo bench -p burrow-serve --bench latency [-- latency|watchers|memory|sqlite|postgres]`
//! (plain `main`: divan reports no percentiles; words after `--` pick the parts
//! and stores, all by default). Each latency sample posts a message to a fresh
//! thread over HTTP, opens the run's event stream and stops the clock at its
//! first event; `BURROW_BENCH_CLIENTS` (20) such clients run at once. The
//! model is scripted and answers at once. Every store call is counted and
//! timed (`Timed`), so the figures come with the calls a sample made and the
//! time each kind took (its wait for the store included). The memory part
//! runs `BURROW_BENCH_RUNS` (10,000) runs, each a message to a fresh thread
//! read to its end by a watcher, and reads the process's resident set
//! (`VmRSS`, server and client in one process) and thread count at the start,
//! after 1,000 and at the end. The latency part prints the samples per second
//! and this process's CPU time per sample (a database server's is not counted).
//! `BURROW_BENCH_SQLITE_IN_PLACE=0` opens the SQLite store with
//! `SqliteOptions::in_place` off, as `burrow serve` does (ADR 0400).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use burrow_runtime::agent::Agent;
use burrow_runtime::model::{ModelError, ScriptedModel, ScriptedResponse};
use burrow_runtime::runner::{FanoutChannel, Runner, RunnerConfig};
use burrow_runtime::session::{
    Checkpoint, Claim, ClaimAttempt, CommandKey, Commit, Committed, Event, HistoryEntry,
    PostedMessage, PostgresOptions, PostgresStore, Pruned, RunRecord, Scope, SessionStore,
    SqliteOptions, SqliteStore, StoreResult, SystemClock, ThreadInfo, ThreadKey, ToolCallRecord,
};
use burrow_serve::{Limits, Server, Tokens, add_token};
use futures::StreamExt;
use serde_json::{Value, json};

const PER_CLIENT: usize = 25;
const WATCHERS: usize = 100;

/// `BURROW_BENCH_CLIENTS`: the clients (threads) at once, 20 by default.
fn clients() -> usize {
    std::env::var("BURROW_BENCH_CLIENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(20)
}

/// A session store that counts and times every call of the store it wraps.
#[derive(Debug)]
struct Timed {
    inner: Arc<dyn SessionStore>,
    calls: Mutex<BTreeMap<&'static str, (u64, Duration)>>,
}

impl Timed {
    fn new(inner: Arc<dyn SessionStore>) -> Arc<Self> {
        Arc::new(Self {
            inner,
            calls: Mutex::new(BTreeMap::new()),
        })
    }

    async fn time<T>(&self, name: &'static str, call: impl Future<Output = T>) -> T {
        let t0 = Instant::now();
        let out = call.await;
        let mut calls = self.calls.lock().unwrap();
        let entry = calls.entry(name).or_default();
        entry.0 += 1;
        entry.1 += t0.elapsed();
        out
    }

    /// The calls since the last report, per sample: `name count×mean`.
    fn report(&self, samples: usize) -> String {
        let calls = std::mem::take(&mut *self.calls.lock().unwrap());
        let total: u64 = calls.values().map(|(n, _)| n).sum();
        let each: Vec<String> = calls
            .iter()
            .map(|(name, (n, t))| {
                format!(
                    "{name} {:.2}×{:.0} µs",
                    *n as f64 / samples as f64,
                    t.as_secs_f64() * 1e6 / *n as f64
                )
            })
            .collect();
        format!(
            "{:.1} store calls per sample: {}",
            total as f64 / samples as f64,
            each.join(", ")
        )
    }
}

#[async_trait::async_trait]
impl SessionStore for Timed {
    async fn commit(&self, thread: &ThreadKey, commit: Commit) -> StoreResult<Committed> {
        self.time("commit", self.inner.commit(thread, commit)).await
    }
    async fn acquire_claim(
        &self,
        thread: &ThreadKey,
        holder: &str,
        ttl: Duration,
    ) -> StoreResult<ClaimAttempt> {
        self.time(
            "acquire_claim",
            self.inner.acquire_claim(thread, holder, ttl),
        )
        .await
    }
    async fn renew_claim(
        &self,
        thread: &ThreadKey,
        claim: &Claim,
        ttl: Duration,
    ) -> StoreResult<Claim> {
        self.time("renew_claim", self.inner.renew_claim(thread, claim, ttl))
            .await
    }
    async fn release_claim(&self, thread: &ThreadKey, claim: &Claim) -> StoreResult<bool> {
        self.time("release_claim", self.inner.release_claim(thread, claim))
            .await
    }
    async fn claim(&self, thread: &ThreadKey) -> StoreResult<Option<Claim>> {
        self.time("claim", self.inner.claim(thread)).await
    }
    async fn thread(&self, thread: &ThreadKey) -> StoreResult<Option<ThreadInfo>> {
        self.time("thread", self.inner.thread(thread)).await
    }
    async fn threads(
        &self,
        scope: &Scope,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<ThreadInfo>> {
        self.time("threads", self.inner.threads(scope, after, limit))
            .await
    }
    async fn events(
        &self,
        thread: &ThreadKey,
        after_seq: u64,
        limit: usize,
    ) -> StoreResult<Vec<Event>> {
        self.time("events", self.inner.events(thread, after_seq, limit))
            .await
    }
    async fn messages(
        &self,
        thread: &ThreadKey,
        after_seq: u64,
        limit: usize,
    ) -> StoreResult<Vec<PostedMessage>> {
        self.time("messages", self.inner.messages(thread, after_seq, limit))
            .await
    }
    async fn message(&self, scope: &Scope, id: &str) -> StoreResult<Option<PostedMessage>> {
        self.time("message", self.inner.message(scope, id)).await
    }
    async fn history(&self, thread: &ThreadKey, from_pos: u64) -> StoreResult<Vec<HistoryEntry>> {
        self.time("history", self.inner.history(thread, from_pos))
            .await
    }
    async fn run(&self, scope: &Scope, run_id: &str) -> StoreResult<Option<RunRecord>> {
        self.time("run", self.inner.run(scope, run_id)).await
    }
    async fn runs(&self, thread: &ThreadKey) -> StoreResult<Vec<RunRecord>> {
        self.time("runs", self.inner.runs(thread)).await
    }
    async fn tool_calls(&self, scope: &Scope, run_id: &str) -> StoreResult<Vec<ToolCallRecord>> {
        self.time("tool_calls", self.inner.tool_calls(scope, run_id))
            .await
    }
    async fn cursor(&self, thread: &ThreadKey, name: &str) -> StoreResult<u64> {
        self.time("cursor", self.inner.cursor(thread, name)).await
    }
    async fn checkpoints(&self, thread: &ThreadKey) -> StoreResult<Vec<Checkpoint>> {
        self.time("checkpoints", self.inner.checkpoints(thread))
            .await
    }
    async fn command_result(&self, key: &CommandKey) -> StoreResult<Option<Value>> {
        self.time("command_result", self.inner.command_result(key))
            .await
    }
    async fn record_command(&self, key: &CommandKey, result: Value) -> StoreResult<Option<Value>> {
        self.time("record_command", self.inner.record_command(key, result))
            .await
    }
    async fn lagging_threads(
        &self,
        ahead: &str,
        behind: &str,
        limit: usize,
    ) -> StoreResult<Vec<ThreadKey>> {
        self.time(
            "lagging_threads",
            self.inner.lagging_threads(ahead, behind, limit),
        )
        .await
    }
    async fn prune(&self, scope: &Scope, before_ms: i64) -> StoreResult<Pruned> {
        self.time("prune", self.inner.prune(scope, before_ms)).await
    }
    fn now_ms(&self) -> i64 {
        self.inner.now_ms()
    }
}

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

/// Posts "go" to `thread`; returns the run it started.
async fn post(client: &reqwest::Client, b: &Bench, thread: &str) -> String {
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
    posted["run_id"].as_str().unwrap().to_owned()
}

/// The run's event stream.
async fn watch(client: &reqwest::Client, b: &Bench, run: &str) -> reqwest::Response {
    client
        .get(format!("{}/v1/runs/{run}/events", b.base))
        .bearer_auth(&b.token)
        .send()
        .await
        .unwrap()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn percentile(sorted: &[Duration], q: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * q).round() as usize]
}

async fn latency(label: &str, store: Arc<dyn SessionStore>) {
    let tenant = format!("bench-{}", uuid::Uuid::now_v7().simple());
    let model = ScriptedModel::new(|_| Ok(ScriptedResponse::text("answer")));
    let timed = Timed::new(store);
    let b = Arc::new(start(timed.clone(), model, &tenant).await);
    let client = reqwest::Client::new();
    let clients = clients();
    let (cpu0, wall0) = (cpu_ms(), Instant::now());
    let mut tasks = Vec::new();
    for c in 0..clients {
        let (b, client) = (b.clone(), client.clone());
        tasks.push(tokio::spawn(async move {
            let mut samples = Vec::new();
            for i in 0..PER_CLIENT {
                let thread = format!("c{c}-t{i}");
                let t0 = Instant::now();
                let run = post(&client, &b, &thread).await;
                let posted = t0.elapsed();
                let first = events(watch(&client, &b, &run).await, true).await;
                assert!(!first.is_empty());
                samples.push((t0.elapsed(), posted));
            }
            samples
        }));
    }
    let mut all: Vec<Duration> = Vec::new();
    let mut posts: Vec<Duration> = Vec::new();
    for t in tasks {
        for (sample, posted) in t.await.unwrap() {
            all.push(sample);
            posts.push(posted);
        }
    }
    let (cpu, wall) = (cpu_ms() - cpu0, wall0.elapsed());
    all.sort();
    posts.sort();
    println!(
        "{label}: {:.0} samples/s; this process's CPU (server and clients) {:.2} ms per sample, {:.2} cores busy on average",
        all.len() as f64 / wall.as_secs_f64(),
        cpu / all.len() as f64,
        cpu / 1e3 / wall.as_secs_f64(),
    );
    println!(
        "{label}: send-to-first-SSE-frame over {} samples, {clients} threads at once: p50 {:.2} ms, p99 {:.2} ms (the POST's answer: p50 {:.2} ms, p99 {:.2} ms)",
        all.len(),
        ms(percentile(&all, 0.50)),
        ms(percentile(&all, 0.99)),
        ms(percentile(&posts, 0.50)),
        ms(percentile(&posts, 0.99)),
    );
    // Let the last runs end, so their calls are counted with the samples.
    tokio::time::sleep(Duration::from_millis(500)).await;
    println!("{label}: {}", timed.report(all.len()));
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
    let run = post(&client, &b, "w").await;
    let mut readers = Vec::new();
    for _ in 0..WATCHERS {
        let r = watch(&client, &b, &run).await;
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

/// A number of /proc/self/status (`VmRSS` in KiB, `Threads`), or 0 where there is none.
fn status(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// The CPU time this process has used (user and system, all threads), in ms.
fn cpu_ms() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command's closing parenthesis; utime and stime are
    // the 14th and 15th of the line, in clock ticks (100 per second on Linux).
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (tick(11) + tick(12)) * 10.0
}

/// `BURROW_BENCH_RUNS` (10,000) runs, each a message to a fresh thread whose
/// run a watcher reads to its end, from the clients at once; the resident set
/// after 1,000 runs and after all of them.
async fn memory(label: &str, store: Arc<dyn SessionStore>) {
    let runs: usize = std::env::var("BURROW_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let tenant = format!("bench-{}", uuid::Uuid::now_v7().simple());
    let model = ScriptedModel::new(|_| Ok(ScriptedResponse::text("answer")));
    let b = Arc::new(start(store, model, &tenant).await);
    let client = reqwest::Client::new();
    let clients = clients();
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let at_1000 = Arc::new(Mutex::new(None));
    let (start_rss, start_threads) = (status("VmRSS"), status("Threads"));
    let t0 = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let (b, client, next, at_1000) = (b.clone(), client.clone(), next.clone(), at_1000.clone());
        tasks.push(tokio::spawn(async move {
            loop {
                let n = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if n >= runs {
                    return;
                }
                let run = post(&client, &b, &format!("m{n}")).await;
                let seen = events(watch(&client, &b, &run).await, false).await;
                assert_eq!(seen.last().map(|e| e.0.as_str()), Some("end"));
                if n + 1 == 1000.min(runs) {
                    *at_1000.lock().unwrap() = Some((status("VmRSS"), status("Threads")));
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let (first, first_threads) = at_1000.lock().unwrap().unwrap_or((0, 0));
    let (last, last_threads) = (status("VmRSS"), status("Threads"));
    println!(
        "{label}: memory over {runs} runs ({:.1} s, {clients} clients at once, each run watched to its end): resident set {:.1} MiB at the start, {:.1} MiB after 1,000 runs, {:.1} MiB after {runs} ({:+.1} MiB since 1,000); threads {start_threads}, {first_threads}, then {last_threads}",
        t0.elapsed().as_secs_f64(),
        start_rss as f64 / 1024.0,
        first as f64 / 1024.0,
        last as f64 / 1024.0,
        (last as f64 - first as f64) / 1024.0,
    );
}

fn main() {
    // Words after `--` pick the parts and the stores; none: all of them.
    let args: Vec<String> = std::env::args().skip(1).collect();
    let picked = |words: &[&str], word: &str| {
        !args.iter().any(|a| words.contains(&a.as_str())) || args.iter().any(|a| a == word)
    };
    let parts = ["latency", "watchers", "memory"];
    let stores = ["sqlite", "postgres"];
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let mut chosen: Vec<(&str, Arc<dyn SessionStore>)> = Vec::new();
        if picked(&stores, "sqlite") {
            // BURROW_BENCH_SQLITE_IN_PLACE=0: every call on the store's own thread
            // (`SqliteOptions::in_place` off, as `burrow serve` opens it; ADR 0400).
            let mut options = SqliteOptions::default();
            options.in_place = std::env::var("BURROW_BENCH_SQLITE_IN_PLACE").as_deref() != Ok("0");
            let sqlite =
                SqliteStore::open_with(dir.path().join("bench.db"), Arc::new(SystemClock), options)
                    .unwrap();
            chosen.push(("SQLite", Arc::new(sqlite)));
        }
        if picked(&stores, "postgres")
            && let Ok(url) = std::env::var("BURROW_POSTGRES_URL")
        {
            // Idle connections kept: one per client at once, so no sample waits for a new
            // connection (a backend process, its login and prepared statements);
            // BURROW_BENCH_PG_POOL=4 measures the store's default.
            let mut options = PostgresOptions::default();
            options.pool = std::env::var("BURROW_BENCH_PG_POOL")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(clients() + 4);
            let pg = PostgresStore::connect_with(&url, Arc::new(SystemClock), options)
                .await
                .unwrap();
            chosen.push(("PostgreSQL", Arc::new(pg)));
        }
        for (label, store) in chosen {
            if picked(&parts, "latency") {
                latency(label, store.clone()).await;
            }
            if picked(&parts, "watchers") {
                watchers(label, store.clone()).await;
            }
            if picked(&parts, "memory") {
                memory(label, store).await;
            }
        }
    });
}
