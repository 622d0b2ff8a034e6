//! A faulty store under the runner: commits that fail (before or after they took effect), outages shorter and longer than the claim, SQLite locked by another connection during a tool call, and a sender waiting on its steering message while its store is down (the faulty wrapper, and a real PostgreSQL restart). After every failure each tool call in the history has exactly one result, no call runs twice, and the thread takes its next message.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use burrow_runtime::agent::{Agent, Outcome};
use burrow_runtime::message::Message;
use burrow_runtime::model::{ScriptedModel, ScriptedResponse};
use burrow_runtime::runner::{Carried, Runner, RunnerConfig, Taken};
use burrow_runtime::session::{
    Checkpoint, Claim, ClaimAttempt, CommandKey, Commit, Committed, Event, HistoryEntry,
    PostedMessage, RunRecord, RunStatus, Scope, SessionStore, SqliteStore, StoreError,
    StoreErrorKind, StoreResult, ThreadInfo, ThreadKey, ToolCallRecord, ToolCallStatus,
    load_history,
};
use burrow_runtime::tool::{ToolOutput, ToolRegistry};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

#[cfg(feature = "postgres")]
use super::runner::postgres;
use super::runner::{Fixture, memory, on_every_store, sqlite};

// ---------------------------------------------------------------- the faulty store

/// A store wrapper that fails every `every`-th commit (the odd failures after
/// the commit took effect, the even ones before), and fails every call while
/// it is down.
#[derive(Debug)]
pub(super) struct Faulty {
    inner: Arc<dyn SessionStore>,
    every: usize,
    commits: AtomicUsize,
    failures: AtomicUsize,
    down_until: Mutex<Option<Instant>>,
    /// Panics (once) in the first commit that records a call started.
    panics_at_a_start: std::sync::atomic::AtomicBool,
}

impl Faulty {
    pub(super) fn new(inner: Arc<dyn SessionStore>, every: usize) -> Arc<Self> {
        Arc::new(Self {
            inner,
            every,
            commits: AtomicUsize::new(0),
            failures: AtomicUsize::new(0),
            down_until: Mutex::new(None),
            panics_at_a_start: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// A wrapper that fails nothing but panics, once, in the first commit that
    /// records a tool call started (before it reaches `inner`).
    pub(super) fn panicking_at_a_call_start(inner: Arc<dyn SessionStore>) -> Arc<Self> {
        let faulty = Self::new(inner, 0);
        faulty.panics_at_a_start.store(true, Ordering::SeqCst);
        faulty
    }

    /// Every call fails for `for_` from now.
    pub(super) fn go_down(&self, for_: Duration) {
        *self.down_until.lock().unwrap() = Some(Instant::now() + for_);
    }

    fn failures(&self) -> usize {
        self.failures.load(Ordering::SeqCst)
    }

    fn check(&self, what: &str) -> StoreResult<()> {
        let down = self
            .down_until
            .lock()
            .unwrap()
            .is_some_and(|until| Instant::now() < until);
        if down {
            self.failures.fetch_add(1, Ordering::SeqCst);
            return Err(StoreError::new(
                StoreErrorKind::Storage,
                format!("the store is down ({what})"),
            ));
        }
        Ok(())
    }
}

#[async_trait]
impl SessionStore for Faulty {
    async fn commit(&self, thread: &ThreadKey, commit: Commit) -> StoreResult<Committed> {
        self.check("commit")?;
        let starts_a_call = commit
            .writes
            .iter()
            .any(|w| matches!(w, burrow_runtime::session::Write::ToolStarted { .. }));
        if starts_a_call && self.panics_at_a_start.swap(false, Ordering::SeqCst) {
            panic!("the store broke while recording a call started");
        }
        let n = self.commits.fetch_add(1, Ordering::SeqCst) + 1;
        if self.every > 0 && n.is_multiple_of(self.every) {
            let failure = self.failures.fetch_add(1, Ordering::SeqCst);
            if failure.is_multiple_of(2) {
                // The commit took effect; its answer was lost.
                let _ = self.inner.commit(thread, commit).await;
            }
            return Err(StoreError::new(
                StoreErrorKind::Storage,
                "the connection was lost during the commit",
            ));
        }
        self.inner.commit(thread, commit).await
    }
    async fn acquire_claim(
        &self,
        thread: &ThreadKey,
        holder: &str,
        ttl: Duration,
    ) -> StoreResult<ClaimAttempt> {
        self.check("acquire_claim")?;
        self.inner.acquire_claim(thread, holder, ttl).await
    }
    async fn renew_claim(
        &self,
        thread: &ThreadKey,
        claim: &Claim,
        ttl: Duration,
    ) -> StoreResult<Claim> {
        self.check("renew_claim")?;
        self.inner.renew_claim(thread, claim, ttl).await
    }
    async fn release_claim(&self, thread: &ThreadKey, claim: &Claim) -> StoreResult<bool> {
        self.check("release_claim")?;
        self.inner.release_claim(thread, claim).await
    }
    async fn claim(&self, thread: &ThreadKey) -> StoreResult<Option<Claim>> {
        self.check("claim")?;
        self.inner.claim(thread).await
    }
    async fn thread(&self, thread: &ThreadKey) -> StoreResult<Option<ThreadInfo>> {
        self.check("thread")?;
        self.inner.thread(thread).await
    }
    async fn threads(
        &self,
        scope: &Scope,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<ThreadInfo>> {
        self.check("threads")?;
        self.inner.threads(scope, after, limit).await
    }
    async fn events(
        &self,
        thread: &ThreadKey,
        after_seq: u64,
        limit: usize,
    ) -> StoreResult<Vec<Event>> {
        self.check("events")?;
        self.inner.events(thread, after_seq, limit).await
    }
    async fn messages(
        &self,
        thread: &ThreadKey,
        after_seq: u64,
        limit: usize,
    ) -> StoreResult<Vec<PostedMessage>> {
        self.check("messages")?;
        self.inner.messages(thread, after_seq, limit).await
    }
    async fn message(&self, scope: &Scope, id: &str) -> StoreResult<Option<PostedMessage>> {
        self.check("message")?;
        self.inner.message(scope, id).await
    }
    async fn history(&self, thread: &ThreadKey, from_pos: u64) -> StoreResult<Vec<HistoryEntry>> {
        self.check("history")?;
        self.inner.history(thread, from_pos).await
    }
    async fn run(&self, scope: &Scope, run_id: &str) -> StoreResult<Option<RunRecord>> {
        self.check("run")?;
        self.inner.run(scope, run_id).await
    }
    async fn runs(&self, thread: &ThreadKey) -> StoreResult<Vec<RunRecord>> {
        self.check("runs")?;
        self.inner.runs(thread).await
    }
    async fn tool_calls(&self, scope: &Scope, run_id: &str) -> StoreResult<Vec<ToolCallRecord>> {
        self.check("tool_calls")?;
        self.inner.tool_calls(scope, run_id).await
    }
    async fn cursor(&self, thread: &ThreadKey, name: &str) -> StoreResult<u64> {
        self.check("cursor")?;
        self.inner.cursor(thread, name).await
    }
    async fn checkpoints(&self, thread: &ThreadKey) -> StoreResult<Vec<Checkpoint>> {
        self.check("checkpoints")?;
        self.inner.checkpoints(thread).await
    }
    async fn command_result(&self, key: &CommandKey) -> StoreResult<Option<Value>> {
        self.check("command_result")?;
        self.inner.command_result(key).await
    }
    async fn record_command(&self, key: &CommandKey, result: Value) -> StoreResult<Option<Value>> {
        self.check("record_command")?;
        self.inner.record_command(key, result).await
    }
    async fn lagging_threads(
        &self,
        ahead: &str,
        behind: &str,
        limit: usize,
    ) -> StoreResult<Vec<ThreadKey>> {
        self.check("lagging_threads")?;
        self.inner.lagging_threads(ahead, behind, limit).await
    }
    async fn prune(
        &self,
        scope: &burrow_runtime::session::Scope,
        before_ms: i64,
    ) -> StoreResult<burrow_runtime::session::Pruned> {
        self.check("prune")?;
        self.inner.prune(scope, before_ms).await
    }
    fn now_ms(&self) -> i64 {
        self.inner.now_ms()
    }
}

// ---------------------------------------------------------------- the agent

#[derive(Deserialize, JsonSchema)]
struct Step {}

/// What the agent saw and did: the runs of each call id, and every request's
/// history that broke the invariant.
#[derive(Default)]
struct Seen {
    runs: Mutex<HashMap<String, usize>>,
    unpaired: Mutex<Vec<String>>,
}

/// Why `history` breaks "each tool call has exactly one result", if it does.
fn unpaired(history: &[Message]) -> Option<String> {
    let mut results: HashMap<&str, usize> = HashMap::new();
    let mut calls = Vec::new();
    for m in history {
        for c in m.tool_calls() {
            calls.push(c.id.as_str());
        }
        if let Message::ToolResult(r) = m {
            *results.entry(r.call_id.as_str()).or_default() += 1;
        }
    }
    let mut distinct = calls.clone();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() != calls.len() {
        return Some(format!("repeated call ids in {calls:?}"));
    }
    for c in &calls {
        let n = results.get(c).copied().unwrap_or(0);
        if n != 1 {
            return Some(format!("call {c} has {n} results"));
        }
    }
    (results.len() != calls.len()).then(|| "a result answers no call".to_owned())
}

/// An agent that answers each prompt with two turns of one `step` call, then
/// text; `during` runs inside every call of `step`. The model records each
/// request whose history is unpaired.
fn stepping_agent(seen: Arc<Seen>, during: Arc<dyn Fn() + Send + Sync>) -> Agent {
    let requests = Arc::new(AtomicUsize::new(0));
    let witness = seen.clone();
    let model = ScriptedModel::new(move |request| {
        let n = requests.fetch_add(1, Ordering::SeqCst);
        if let Some(why) = unpaired(request.messages) {
            witness.unpaired.lock().unwrap().push(why);
        }
        let since_prompt = request
            .messages
            .iter()
            .rev()
            .take_while(|m| !matches!(m, Message::User { .. }))
            .filter(|m| matches!(m, Message::ToolResult(_)))
            .count();
        Ok(if since_prompt < 2 {
            ScriptedResponse::calls().call(format!("s{n}"), "step", json!({}))
        } else {
            ScriptedResponse::text("done")
        })
    });
    let mut tools = ToolRegistry::new();
    tools.add_typed("step", "Takes a step.", move |_: Step, cx| {
        *seen
            .runs
            .lock()
            .unwrap()
            .entry(cx.call_id.clone())
            .or_default() += 1;
        during();
        async { Ok(ToolOutput::ok("stepped")) }
    });
    Agent::new(Arc::new(model)).with_tools(tools)
}

fn scope() -> Scope {
    Scope::new("acme", "ws")
}

/// The thread's stored history holds the invariant, and no call ran twice.
async fn assert_sound(store: &dyn SessionStore, thread: &ThreadKey, seen: &Seen) {
    let history = load_history(store, thread).await.unwrap();
    assert_eq!(unpaired(&history), None, "stored history: {history:#?}");
    assert_eq!(*seen.unpaired.lock().unwrap(), Vec::<String>::new());
    for (id, n) in seen.runs.lock().unwrap().iter() {
        assert_eq!(*n, 1, "the call {id} ran {n} times");
    }
}

// ---------------------------------------------------------------- scenarios

on_every_store!(
    a_store_failing_every_third_commit_costs_the_run_nothing,
    an_outage_shorter_than_the_claim_costs_the_run_nothing,
    an_outage_longer_than_the_claim_costs_one_run_and_the_thread_goes_on,
    a_sender_waiting_on_its_message_rides_out_an_outage_of_its_store,
    a_retried_command_waiting_on_its_run_rides_out_an_outage_of_its_store,
);

async fn a_store_failing_every_third_commit_costs_the_run_nothing(fx: Fixture) {
    let t = scope().thread("t1");
    let faulty = Faulty::new(fx.store.clone(), 3);
    let seen = Arc::new(Seen::default());
    let runner = Runner::new(
        stepping_agent(seen.clone(), Arc::new(|| {})),
        faulty.clone(),
    );
    for prompt in ["one", "two"] {
        let sent = runner.send(&t, "alice", prompt, None).await.unwrap();
        let run = sent.run.expect("the thread is idle");
        let result = run.wait().await;
        assert_eq!(result.outcome, Outcome::Completed, "{result:?}");
        runner.drain().await;
        let record = fx.store.run(&t.scope, run.run_id()).await.unwrap().unwrap();
        assert_eq!(record.status, RunStatus::Completed);
        for call in fx.store.tool_calls(&t.scope, run.run_id()).await.unwrap() {
            assert_eq!(call.status, ToolCallStatus::Finished);
            assert_eq!(call.attempts, 1, "{call:?}");
        }
    }
    assert!(
        faulty.failures() >= 4,
        "the store failed {} times",
        faulty.failures()
    );
    assert_sound(fx.store.as_ref(), &t, &seen).await;
    assert_eq!(seen.runs.lock().unwrap().len(), 4);
}

async fn an_outage_shorter_than_the_claim_costs_the_run_nothing(fx: Fixture) {
    let t = scope().thread("t1");
    let faulty = Faulty::new(fx.store.clone(), 0);
    let seen = Arc::new(Seen::default());
    let down = faulty.clone();
    let once = Arc::new(AtomicUsize::new(0));
    let outage = Arc::new(move || {
        if once.fetch_add(1, Ordering::SeqCst) == 0 {
            down.go_down(Duration::from_millis(1800));
        }
    });
    let config = RunnerConfig::default().with_claim_ttl(Duration::from_secs(3));
    let runner = Runner::with_config(stepping_agent(seen.clone(), outage), faulty.clone(), config);
    let run = runner
        .send(&t, "alice", "go", None)
        .await
        .unwrap()
        .run
        .unwrap();
    let result = run.wait().await;
    assert_eq!(result.outcome, Outcome::Completed, "{result:?}");
    runner.drain().await;
    assert!(faulty.failures() > 0);
    assert_sound(fx.store.as_ref(), &t, &seen).await;
}

async fn an_outage_longer_than_the_claim_costs_one_run_and_the_thread_goes_on(fx: Fixture) {
    let t = scope().thread("t1");
    let faulty = Faulty::new(fx.store.clone(), 0);
    let seen = Arc::new(Seen::default());
    let down = faulty.clone();
    let once = Arc::new(AtomicUsize::new(0));
    let outage = Arc::new(move || {
        if once.fetch_add(1, Ordering::SeqCst) == 0 {
            down.go_down(Duration::from_millis(2500));
        }
    });
    let config = RunnerConfig::default().with_claim_ttl(Duration::from_secs(1));
    let runner = Runner::with_config(stepping_agent(seen.clone(), outage), faulty.clone(), config);
    let first = runner
        .send(&t, "alice", "go", None)
        .await
        .unwrap()
        .run
        .unwrap();
    let result = first.wait().await;
    assert!(
        !matches!(result.outcome, Outcome::Completed),
        "a 2.5 s outage outlives a 1 s claim: {result:?}"
    );
    runner.drain().await;
    tokio::time::sleep(Duration::from_millis(2600)).await;
    // The dead claim lapses in the store's time too.
    fx.clock.advance(Duration::from_secs(2));
    let sent = runner.send(&t, "alice", "again", None).await.unwrap();
    let second = sent.run.expect("the lapsed claim is taken over");
    let result = second.wait().await;
    assert_eq!(result.outcome, Outcome::Completed, "{result:?}");
    runner.drain().await;
    let record = fx
        .store
        .run(&t.scope, first.run_id())
        .await
        .unwrap()
        .unwrap();
    assert_ne!(record.status, RunStatus::Running, "{record:?}");
    assert_sound(fx.store.as_ref(), &t, &seen).await;
}

// ---------------------------------------------------------------- SQLite locked for real

/// Holds an exclusive lock on the SQLite file `path` from another connection
/// once `step` runs (in its own thread, as another process would), taken
/// before the call returns, so before any commit of its result: for at least
/// `hold`, and when `until` is given, also until something is sent on it
/// (an event the test observed, not a guess at how long the run takes).
fn lock_sqlite_during_the_call(
    path: std::path::PathBuf,
    hold: Duration,
    until: Option<std::sync::mpsc::Receiver<()>>,
) -> Arc<dyn Fn() + Send + Sync> {
    let once = Arc::new(AtomicUsize::new(0));
    let until = Arc::new(Mutex::new(until));
    Arc::new(move || {
        if once.fetch_add(1, Ordering::SeqCst) != 0 {
            return;
        }
        let path = path.clone();
        let until = until.lock().unwrap().take();
        let (locked_tx, locked_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let conn = rusqlite::Connection::open(&path).unwrap();
            conn.execute_batch("BEGIN EXCLUSIVE").unwrap();
            let locked = Instant::now();
            locked_tx.send(()).unwrap();
            if let Some(until) = until {
                // A dropped sender releases too: the test has ended.
                let _ = until.recv();
            }
            std::thread::sleep(hold.saturating_sub(locked.elapsed()));
            conn.execute_batch("COMMIT").unwrap();
        });
        locked_rx.recv().unwrap();
    })
}

/// A SQLite store on the system clock in a fresh directory.
fn sqlite_file() -> (Arc<SqliteStore>, std::path::PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let store = Arc::new(SqliteStore::open(&path).unwrap());
    (store, path, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_locked_for_9_s_during_a_tool_call_with_the_default_claim_completes_the_run() {
    let (store, path, _dir) = sqlite_file();
    let t = scope().thread("t1");
    let seen = Arc::new(Seen::default());
    let during = lock_sqlite_during_the_call(path, Duration::from_secs(9), None);
    let runner = Runner::new(stepping_agent(seen.clone(), during), store.clone());
    let began = Instant::now();
    let run = runner
        .send(&t, "alice", "go", None)
        .await
        .unwrap()
        .run
        .unwrap();
    let result = run.wait().await;
    assert_eq!(result.outcome, Outcome::Completed, "{result:?}");
    assert!(
        began.elapsed() >= Duration::from_secs(9),
        "the lock was held"
    );
    runner.drain().await;
    assert_sound(store.as_ref(), &t, &seen).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_locked_for_9_s_with_a_2_s_claim_fails_the_run_cleanly_and_the_thread_goes_on() {
    let (store, path, _dir) = sqlite_file();
    let t = scope().thread("t1");
    let seen = Arc::new(Seen::default());
    // The lock is taken inside the call and held until the first run has
    // ended (and 9 s at least): the run cannot outlast it, whatever the load.
    let (release, until) = std::sync::mpsc::channel();
    let during = lock_sqlite_during_the_call(path, Duration::from_secs(9), Some(until));
    let config = RunnerConfig::default().with_claim_ttl(Duration::from_secs(2));
    let runner = Runner::with_config(stepping_agent(seen.clone(), during), store.clone(), config);
    fails_then_the_thread_goes_on(&runner, store.as_ref(), &t, &seen, move || {
        let _ = release.send(());
    })
    .await;
}

/// Returns once the store answers and `t` has no live claim (released, or
/// lapsed by the store's clock); fails after a minute.
async fn the_claim_lapses(store: &dyn SessionStore, t: &ThreadKey) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match store.claim(t).await {
            Ok(None) => return,
            Ok(Some(c)) if c.expires_at_ms <= store.now_ms() => return,
            _ => {}
        }
        assert!(
            Instant::now() < deadline,
            "the store stayed down or the dead claim never lapsed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

// ---------------------------------------------------------------- PostgreSQL stopped for real

/// A throwaway PostgreSQL cluster of Debian's binaries on a port of its own,
/// run as `burrow-pg` (as `cargo xtask setup` runs the shared one), so
/// stopping it hurts no other test. Stopped and removed on drop.
#[cfg(feature = "postgres")]
struct Cluster {
    bin: std::path::PathBuf,
    data: String,
    port: u16,
    _dir: tempfile::TempDir,
}

#[cfg(feature = "postgres")]
impl Cluster {
    fn pg(&self, program: &str, args: &[&str]) -> std::process::Output {
        let program = self.bin.join(program);
        std::process::Command::new("runuser")
            .args(["-u", "burrow-pg", "--"])
            .arg(program)
            .args(args)
            .output()
            .unwrap()
    }

    fn start() -> Self {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .expect("Debian's PostgreSQL binaries (cargo xtask setup installs them)")
            .filter_map(|e| Some(e.ok()?.path().join("bin")))
            .filter(|b| b.join("postgres").is_file())
            .max()
            .expect("a /usr/lib/postgresql/N/bin/postgres");
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data").to_string_lossy().into_owned();
        let chown = std::process::Command::new("chown")
            .args(["burrow-pg"])
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(chown.success());
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let cluster = Self {
            bin,
            data,
            port,
            _dir: dir,
        };
        let init = cluster.pg(
            "initdb",
            &[
                "-D",
                &cluster.data,
                "-U",
                "burrow",
                "--auth=trust",
                "--no-sync",
            ],
        );
        assert!(init.status.success(), "{init:?}");
        cluster.up();
        cluster
    }

    fn up(&self) {
        let options = format!(
            "-c listen_addresses=127.0.0.1 -c port={} -c unix_socket_directories='' -c fsync=off",
            self.port
        );
        let log = format!("{}/../log", self.data);
        let out = self.pg(
            "pg_ctl",
            &[
                "-D", &self.data, "-l", &log, "-o", &options, "-w", "-t", "60", "start",
            ],
        );
        assert!(out.status.success(), "{out:?}");
    }

    fn down(&self) {
        let out = self.pg("pg_ctl", &["-D", &self.data, "-m", "fast", "-w", "stop"]);
        assert!(out.status.success(), "{out:?}");
    }

    fn url(&self) -> String {
        format!("postgres://burrow@127.0.0.1:{}/postgres", self.port)
    }
}

#[cfg(feature = "postgres")]
impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.pg(
            "pg_ctl",
            &["-D", &self.data, "-m", "immediate", "-w", "stop"],
        );
    }
}

/// Stops `cluster` once `step` runs, and starts it again `outage` later.
#[cfg(feature = "postgres")]
fn stop_postgres_during_the_call(
    cluster: Arc<Cluster>,
    outage: Duration,
) -> Arc<dyn Fn() + Send + Sync> {
    let once = Arc::new(AtomicUsize::new(0));
    Arc::new(move || {
        if once.fetch_add(1, Ordering::SeqCst) != 0 {
            return;
        }
        cluster.down();
        let cluster = cluster.clone();
        std::thread::spawn(move || {
            std::thread::sleep(outage);
            cluster.up();
        });
    })
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_stopped_for_10_s_during_a_tool_call_with_the_default_claim_completes_the_run() {
    use burrow_runtime::session::PostgresStore;
    let cluster = Arc::new(Cluster::start());
    let store = Arc::new(PostgresStore::connect(&cluster.url()).await.unwrap());
    let t = scope().thread("t1");
    let seen = Arc::new(Seen::default());
    let during = stop_postgres_during_the_call(cluster.clone(), Duration::from_secs(10));
    let runner = Runner::new(stepping_agent(seen.clone(), during), store.clone());
    let began = Instant::now();
    let run = runner
        .send(&t, "alice", "go", None)
        .await
        .unwrap()
        .run
        .unwrap();
    let result = run.wait().await;
    assert_eq!(result.outcome, Outcome::Completed, "{result:?}");
    assert!(
        began.elapsed() >= Duration::from_secs(10),
        "the server was down"
    );
    runner.drain().await;
    assert_sound(store.as_ref(), &t, &seen).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_stopped_for_10_s_with_a_2_s_claim_fails_the_run_cleanly_and_the_thread_goes_on() {
    use burrow_runtime::session::PostgresStore;
    let cluster = Arc::new(Cluster::start());
    let store = Arc::new(PostgresStore::connect(&cluster.url()).await.unwrap());
    let t = scope().thread("t1");
    let seen = Arc::new(Seen::default());
    let during = stop_postgres_during_the_call(cluster.clone(), Duration::from_secs(10));
    let config = RunnerConfig::default().with_claim_ttl(Duration::from_secs(2));
    let runner = Runner::with_config(stepping_agent(seen.clone(), during), store.clone(), config);
    // The server comes back on its own 10 s after it stopped.
    fails_then_the_thread_goes_on(&runner, store.as_ref(), &t, &seen, || {}).await;
}

/// The first run fails (the outage outlasts its claim); `end_outage` is
/// called once it has ended; once the store answers again and the dead claim
/// has lapsed (observed in the store, not slept for), the thread is taken
/// over, its next message completes, the failed run is no longer running and
/// the history is sound.
async fn fails_then_the_thread_goes_on(
    runner: &Runner,
    store: &dyn SessionStore,
    t: &ThreadKey,
    seen: &Seen,
    end_outage: impl FnOnce(),
) {
    let first = runner
        .send(t, "alice", "go", None)
        .await
        .unwrap()
        .run
        .unwrap();
    let result = first.wait().await;
    assert!(!matches!(result.outcome, Outcome::Completed), "{result:?}");
    runner.drain().await;
    end_outage();
    the_claim_lapses(store, t).await;
    let sent = runner.send(t, "alice", "again", None).await.unwrap();
    let second = sent.run.expect("the thread is taken over");
    let result = second.wait().await;
    assert_eq!(result.outcome, Outcome::Completed, "{result:?}");
    runner.drain().await;
    let record = store.run(&t.scope, first.run_id()).await.unwrap().unwrap();
    assert_ne!(record.status, RunStatus::Running);
    assert_sound(store, t, seen).await;
}

// ---------------------------------------------------------------- a sender waiting through an outage

/// A gate for the first `step` call: it says it started, then waits for go.
fn gate() -> (
    Arc<dyn Fn() + Send + Sync>,
    std::sync::mpsc::Receiver<()>,
    std::sync::mpsc::Sender<()>,
) {
    let (started_tx, started) = std::sync::mpsc::channel::<()>();
    let (go, go_rx) = std::sync::mpsc::channel::<()>();
    let held = Mutex::new(Some((started_tx, go_rx)));
    let during = Arc::new(move || {
        let first = held.lock().unwrap().take();
        if let Some((started, go)) = first {
            started.send(()).unwrap();
            go.recv_timeout(Duration::from_secs(60)).unwrap();
        }
    });
    (during, started, go)
}

/// The holder's run is held in its first call while another runner's sender
/// steers it; `outage` (async) makes the sender's store fail, and `go` lets
/// the call finish once it is over. The sender's wait rides the outage out
/// and reports that its message was carried out by the holder's run, which
/// completed with the message in its history.
async fn a_sender_waits_through<F: std::future::Future<Output = ()>>(
    holder_store: Arc<dyn SessionStore>,
    sender_store: Arc<dyn SessionStore>,
    outage: impl FnOnce() -> F,
) {
    let t = scope().thread("t1");
    let seen = Arc::new(Seen::default());
    let (during, started, go) = gate();
    let holder = Runner::new(stepping_agent(seen.clone(), during), holder_store.clone());
    let run = holder
        .send(&t, "alice", "go", None)
        .await
        .unwrap()
        .run
        .unwrap();
    tokio::task::spawn_blocking(move || started.recv_timeout(Duration::from_secs(60)))
        .await
        .unwrap()
        .expect("the holder's call started");
    let sender = Runner::new(
        stepping_agent(seen.clone(), Arc::new(|| {})),
        sender_store.clone(),
    );
    let sent = sender.send(&t, "alice", "steer", None).await.unwrap();
    assert!(sent.run.is_none(), "the holder keeps the thread");
    let poll = Duration::from_millis(20);
    let release = async {
        outage().await;
        go.send(()).unwrap();
    };
    let (taken, ()) = tokio::join!(sender.wait_taken(&t, sent.seq, poll), release);
    let taken = taken.expect("the wait rides the outage out");
    let Taken::Elsewhere(Some(by)) = taken else {
        panic!("the message was taken elsewhere: {taken:?}");
    };
    assert_eq!(by, run.run_id(), "by the holder's run");
    let record = sender.wait_settled(&t, &by, poll).await.unwrap();
    assert_eq!(record.status, RunStatus::Completed, "{record:?}");
    assert_eq!(run.wait().await.outcome, Outcome::Completed);
    holder.drain().await;
    sender.drain().await;
    let history = load_history(holder_store.as_ref(), &t).await.unwrap();
    assert!(
        history
            .iter()
            .any(|m| matches!(m, Message::User { text } if text == "steer")),
        "the steering message is in the history: {history:#?}"
    );
    assert_sound(holder_store.as_ref(), &t, &seen).await;
}

async fn a_sender_waiting_on_its_message_rides_out_an_outage_of_its_store(fx: Fixture) {
    let faulty = Faulty::new(fx.store.clone(), 0);
    let down = faulty.clone();
    a_sender_waits_through(fx.store.clone(), faulty.clone(), || async move {
        down.go_down(Duration::from_millis(1500));
        tokio::time::sleep(Duration::from_millis(1600)).await;
    })
    .await;
    assert!(faulty.failures() > 0, "the sender met the outage");
}

/// A retried command (`Runner::wait_carried`) whose message the holder's
/// run took and is still carrying out, while the retry's store is down for
/// 1.5 s: the retry's own reads ride the outage out and it reports the run's
/// real outcome, not the outage.
async fn a_retried_command_waiting_on_its_run_rides_out_an_outage_of_its_store(fx: Fixture) {
    let t = scope().thread("t1");
    let seen = Arc::new(Seen::default());
    let (during, started, go) = gate();
    let holder = Runner::new(stepping_agent(seen.clone(), during), fx.store.clone());
    let sent = holder.send(&t, "alice", "go", None).await.unwrap();
    let run = sent.run.expect("the thread is idle");
    let message_id = sent.message_id.expect("a posted message");
    tokio::task::spawn_blocking(move || started.recv_timeout(Duration::from_secs(60)))
        .await
        .unwrap()
        .expect("the holder's call started");
    let faulty = Faulty::new(fx.store.clone(), 0);
    let retry = Runner::new(
        stepping_agent(seen.clone(), Arc::new(|| {})),
        faulty.clone(),
    );
    let poll = Duration::from_millis(20);
    let down = faulty.clone();
    let release = async move {
        down.go_down(Duration::from_millis(1500));
        tokio::time::sleep(Duration::from_millis(1600)).await;
        go.send(()).unwrap();
    };
    let (carried, ()) = tokio::join!(retry.wait_carried(&t, &message_id, poll), release);
    let carried = carried.expect("the wait rides the outage out");
    let Carried::Ended(record) = carried else {
        panic!("the holder's run carried the message out: {carried:?}");
    };
    assert_eq!(record.run_id, run.run_id(), "the holder's run");
    assert_eq!(record.status, RunStatus::Completed, "{record:?}");
    assert!(faulty.failures() > 0, "the retry met the outage");
    assert_eq!(run.wait().await.outcome, Outcome::Completed);
    holder.drain().await;
    retry.drain().await;
    assert_sound(fx.store.as_ref(), &t, &seen).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sender_waiting_on_its_message_across_a_postgres_restart_reports_it_carried_out() {
    use burrow_runtime::session::PostgresStore;
    let cluster = Arc::new(Cluster::start());
    // Two connections, as two processes would have.
    let holder_store = Arc::new(PostgresStore::connect(&cluster.url()).await.unwrap());
    let sender_store = Arc::new(PostgresStore::connect(&cluster.url()).await.unwrap());
    let restart = cluster.clone();
    a_sender_waits_through(holder_store, sender_store, || async move {
        let began = Instant::now();
        tokio::task::spawn_blocking(move || {
            restart.down();
            std::thread::sleep(Duration::from_secs(2));
            restart.up();
        })
        .await
        .unwrap();
        assert!(began.elapsed() >= Duration::from_secs(2));
    })
    .await;
}
