//! The Runner over session stores: runs from messages, steering, pauses answered from another runner, exactly-once consumption, abandoned runs repaired from their tool-call records, stops, deduplicated commands, live watching, and interleavings forced with a gate on the store. Every scenario runs on the memory, the SQLite and (feature `postgres`) the PostgreSQL store.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use super::support::start_run;
use async_trait::async_trait;
use burrow_runtime::agent::{Agent, Outcome};
use burrow_runtime::message::{AssistantPart, Message};
use burrow_runtime::model::{ScriptedModel, ScriptedResponse};
use burrow_runtime::runner::{
    Command, CommandResult, LiveEvent, OUTCOME_UNKNOWN, Runner, RunnerConfig, RunnerErrorKind,
    last_seen,
};
use burrow_runtime::session::{
    Checkpoint, Claim, ClaimAttempt, CommandKey, Commit, Committed, Event, HistoryEntry,
    HistoryItem, ManualClock, MemoryStore, MessageKind, PostedMessage, RunRecord, RunStatus, Scope,
    SessionStore, SqliteOptions, SqliteStore, StoreError, StoreErrorKind, StoreResult, ThreadInfo,
    ThreadKey, ToolCallRecord, ToolCallStatus, Trigger, Write, load_history,
};
use burrow_runtime::tool::{FnTool, ToolAnnotations, ToolOutput, ToolRegistry};
use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::oneshot;

// ---------------------------------------------------------------- fixtures

/// A store to run a scenario on, and what keeps it alive.
pub(super) struct Fixture {
    pub(super) store: Arc<dyn SessionStore>,
    pub(super) clock: Arc<ManualClock>,
    _dir: Option<tempfile::TempDir>,
    /// Drops the PostgreSQL fixture's schema.
    #[cfg(feature = "postgres")]
    _schema: Option<super::session::postgres::DropSchema>,
}

pub(super) fn memory() -> Fixture {
    let clock = Arc::new(ManualClock::default());
    Fixture {
        store: Arc::new(MemoryStore::with_clock(clock.clone())),
        clock,
        _dir: None,
        #[cfg(feature = "postgres")]
        _schema: None,
    }
}

pub(super) fn sqlite() -> Fixture {
    sqlite_with(SqliteOptions::default())
}

/// A SQLite store that sends every call to its own thread even on a
/// multi-threaded runtime (`SqliteOptions::in_place` off, ADR 0195, ADR 0400).
fn sqlite_on_its_own_thread() -> Fixture {
    let mut options = SqliteOptions::default();
    options.in_place = false;
    sqlite_with(options)
}

fn sqlite_with(options: SqliteOptions) -> Fixture {
    let clock = Arc::new(ManualClock::default());
    let dir = tempfile::tempdir().unwrap();
    let store =
        SqliteStore::open_with(dir.path().join("sessions.db"), clock.clone(), options).unwrap();
    Fixture {
        store: Arc::new(store),
        clock,
        _dir: Some(dir),
        #[cfg(feature = "postgres")]
        _schema: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_store_off_the_worker_threads_serves_the_runner_alike() {
    a_message_in_an_idle_thread_starts_a_run_whose_history_refers_to_the_message(
        sqlite_on_its_own_thread(),
    )
    .await;
    twelve_concurrent_sends_from_two_runners_are_each_consumed_exactly_once(
        sqlite_on_its_own_thread(),
    )
    .await;
}

/// A PostgreSQL store in a fresh schema of the test database (`BURROW_POSTGRES_URL`;
/// under `CI=true` a missing server fails the test, naming it).
#[cfg(feature = "postgres")]
pub(super) async fn postgres() -> Fixture {
    let clock = Arc::new(ManualClock::default());
    let (store, schema) = super::session::postgres::fresh_store(clock.clone()).await;
    Fixture {
        store,
        clock,
        _dir: None,
        _schema: Some(schema),
    }
}

/// Runs scenario `$name` on every store.
macro_rules! on_every_store {
    ($($name:ident),* $(,)?) => {
        $(mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn memory() {
                super::$name(super::memory()).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$name(super::sqlite()).await;
            }
        })*
        /// The scenarios on PostgreSQL (a module of that name, so a missing server is skipped or, under CI, fails).
        #[cfg(feature = "postgres")]
        mod postgres {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                super::$name(super::postgres().await).await;
            })*
        }
    };
}

pub(super) use on_every_store;

on_every_store!(
    a_message_in_an_idle_thread_starts_a_run_whose_history_refers_to_the_message,
    a_same_author_message_steers_the_run_and_another_authors_waits_for_the_next_turn,
    ask_user_pauses_durably_and_an_answer_from_another_runner_resumes_the_same_run,
    resume_acts_only_on_a_paused_answered_run_of_its_thread_and_says_what_it_did,
    twelve_concurrent_sends_from_two_runners_are_each_consumed_exactly_once,
    a_run_left_behind_is_abandoned_and_its_calls_replayed_rerun_or_reported_unknown,
    stop_cancels_the_run_and_leaves_every_call_with_a_result,
    a_command_is_carried_out_once_when_two_deliveries_race_and_on_every_retry,
    a_duplicate_answer_delivered_at_once_is_carried_out_once,
    a_retried_command_whose_run_was_abandoned_takes_the_thread_over_and_does_the_work,
    watching_follows_a_run_and_an_ended_run_ends_at_once_with_its_outcome,
    a_message_sent_while_the_run_releases_its_claim_is_carried_out_by_the_hand_over,
    a_message_whose_early_claim_found_the_ending_run_busy_is_taken_after_its_post,
    a_message_whose_runner_died_before_claiming_is_taken_up_by_recover,
    a_closed_runner_starts_nothing_and_another_runner_recovers_the_message,
    an_approval_a_hook_asks_for_pauses_and_an_approval_from_another_runner_runs_the_call,
    a_message_to_a_thread_paused_on_an_approval_declines_it_with_its_text,
    an_approved_call_runs_through_the_pipeline_with_the_input_its_hook_gave_it,
    durable_events_are_content_free_and_each_text_is_stored_once,
    the_runs_a_runner_starts_carry_its_labels,
    each_thread_s_segments_run_the_agent_made_for_the_thread,
);

fn scope() -> Scope {
    Scope::new("acme", "ws")
}

fn text_model(reply: &'static str) -> Agent {
    Agent::new(Arc::new(ScriptedModel::new(move |_| {
        Ok(ScriptedResponse::text(reply))
    })))
}

/// The user messages' texts of a conversation.
fn user_texts(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::User { text } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

fn last_text(messages: &[Message]) -> String {
    messages
        .iter()
        .rev()
        .find_map(|m| match m {
            Message::Assistant { parts } => parts.iter().find_map(|p| match p {
                AssistantPart::Text { text } => Some(text.clone()),
                _ => None,
            }),
            _ => None,
        })
        .unwrap_or_default()
}

/// Every tool call has exactly one result, right after its answer.
fn assert_valid_history(history: &[Message]) {
    super::agent::assert_valid_history(history);
}

#[derive(Deserialize, JsonSchema)]
struct Nothing {}

/// An agent whose first answer calls `hang`, which says it started and never returns.
pub(super) fn hanging_agent() -> (Agent, oneshot::Receiver<()>) {
    let (started_tx, started_rx) = oneshot::channel::<()>();
    let started_tx = Arc::new(Mutex::new(Some(started_tx)));
    let mut tools = ToolRegistry::new();
    tools.add_typed("hang", "Never returns.", move |_: Nothing, _| {
        let tx = started_tx.lock().unwrap().take();
        async move {
            if let Some(tx) = tx {
                let _ = tx.send(());
            }
            std::future::pending::<()>().await;
            Ok(ToolOutput::ok("never"))
        }
    });
    let agent = Agent::new(Arc::new(ScriptedModel::from_responses(vec![
        ScriptedResponse::calls().call("h1", "hang", json!({})),
    ])))
    .with_tools(tools);
    (agent, started_rx)
}

fn noop_tools() -> ToolRegistry {
    let mut tools = ToolRegistry::new();
    tools.add_typed("noop", "Does nothing.", |_: Nothing, _| async {
        Ok(ToolOutput::ok("nothing done"))
    });
    tools
}

/// The posted-message ids the thread's history refers to, in order.
async fn posted_in_history(store: &dyn SessionStore, thread: &ThreadKey) -> Vec<String> {
    store
        .history(thread, 0)
        .await
        .unwrap()
        .into_iter()
        .filter_map(|e| match e.item {
            HistoryItem::Posted { message_id } => Some(message_id),
            _ => None,
        })
        .collect()
}

// ---------------------------------------------------------------- the gate

/// A store wrapper that holds the Nth call of a named method until released,
/// optionally failing it then: forces interleavings without sleeping.
#[derive(Debug)]
struct Gate {
    inner: Arc<dyn SessionStore>,
    state: Mutex<GateState>,
}

#[derive(Debug, Default)]
struct GateState {
    calls: HashMap<&'static str, usize>,
    holds: Vec<Hold>,
}

#[derive(Debug)]
struct Hold {
    method: &'static str,
    nth: usize,
    arrived: Option<oneshot::Sender<()>>,
    release: Option<oneshot::Receiver<bool>>,
}

/// A held call: wait for it to arrive, then release it (failing it or not).
struct Held {
    arrived: oneshot::Receiver<()>,
    release: oneshot::Sender<bool>,
}

impl Held {
    async fn arrived(&mut self) {
        (&mut self.arrived).await.unwrap();
    }

    fn release(self, fail: bool) {
        let _ = self.release.send(fail);
    }
}

impl Gate {
    fn new(inner: Arc<dyn SessionStore>) -> Arc<Self> {
        Arc::new(Self {
            inner,
            state: Mutex::new(GateState::default()),
        })
    }

    /// Holds the `nth` (from 1) call of `method` from now on.
    fn hold(&self, method: &'static str, nth: usize) -> Held {
        let (arrived_tx, arrived) = oneshot::channel();
        let (release, release_rx) = oneshot::channel();
        let mut state = self.state.lock().unwrap();
        let base = state.calls.get(method).copied().unwrap_or(0);
        state.holds.push(Hold {
            method,
            nth: base + nth,
            arrived: Some(arrived_tx),
            release: Some(release_rx),
        });
        Held { arrived, release }
    }

    /// How many calls of `method` have come so far.
    fn calls(&self, method: &'static str) -> usize {
        let state = self.state.lock().unwrap();
        state.calls.get(method).copied().unwrap_or(0)
    }

    async fn pass(&self, method: &'static str) -> StoreResult<()> {
        let release = {
            let mut state = self.state.lock().unwrap();
            let n = {
                let c = state.calls.entry(method).or_insert(0);
                *c += 1;
                *c
            };
            state
                .holds
                .iter_mut()
                .find(|h| h.method == method && h.nth == n)
                .map(|h| {
                    if let Some(tx) = h.arrived.take() {
                        let _ = tx.send(());
                    }
                    h.release.take()
                })
        };
        if let Some(Some(release)) = release {
            // A dropped `Held` never releases: the call hangs, as a stalled store would.
            let fail = match release.await {
                Ok(fail) => fail,
                Err(_) => std::future::pending().await,
            };
            if fail {
                return Err(StoreError::new(
                    StoreErrorKind::Storage,
                    format!("the gate failed {method}"),
                ));
            }
        }
        Ok(())
    }
}

#[async_trait]
impl SessionStore for Gate {
    async fn commit(&self, thread: &ThreadKey, commit: Commit) -> StoreResult<Committed> {
        self.pass("commit").await?;
        self.inner.commit(thread, commit).await
    }
    async fn acquire_claim(
        &self,
        thread: &ThreadKey,
        holder: &str,
        ttl: Duration,
    ) -> StoreResult<ClaimAttempt> {
        self.pass("acquire_claim").await?;
        self.inner.acquire_claim(thread, holder, ttl).await
    }
    async fn renew_claim(
        &self,
        thread: &ThreadKey,
        claim: &Claim,
        ttl: Duration,
    ) -> StoreResult<Claim> {
        self.pass("renew_claim").await?;
        self.inner.renew_claim(thread, claim, ttl).await
    }
    async fn release_claim(&self, thread: &ThreadKey, claim: &Claim) -> StoreResult<bool> {
        self.pass("release_claim").await?;
        self.inner.release_claim(thread, claim).await
    }
    async fn claim(&self, thread: &ThreadKey) -> StoreResult<Option<Claim>> {
        self.pass("claim").await?;
        self.inner.claim(thread).await
    }
    async fn thread(&self, thread: &ThreadKey) -> StoreResult<Option<ThreadInfo>> {
        self.pass("thread").await?;
        self.inner.thread(thread).await
    }
    async fn threads(
        &self,
        scope: &Scope,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<ThreadInfo>> {
        self.pass("threads").await?;
        self.inner.threads(scope, after, limit).await
    }
    async fn events(
        &self,
        thread: &ThreadKey,
        after_seq: u64,
        limit: usize,
    ) -> StoreResult<Vec<Event>> {
        self.pass("events").await?;
        self.inner.events(thread, after_seq, limit).await
    }
    async fn messages(
        &self,
        thread: &ThreadKey,
        after_seq: u64,
        limit: usize,
    ) -> StoreResult<Vec<PostedMessage>> {
        self.pass("messages").await?;
        self.inner.messages(thread, after_seq, limit).await
    }
    async fn message(&self, scope: &Scope, id: &str) -> StoreResult<Option<PostedMessage>> {
        self.pass("message").await?;
        self.inner.message(scope, id).await
    }
    async fn history(&self, thread: &ThreadKey, from_pos: u64) -> StoreResult<Vec<HistoryEntry>> {
        self.pass("history").await?;
        self.inner.history(thread, from_pos).await
    }
    async fn run(&self, scope: &Scope, run_id: &str) -> StoreResult<Option<RunRecord>> {
        self.pass("run").await?;
        self.inner.run(scope, run_id).await
    }
    async fn runs(&self, thread: &ThreadKey) -> StoreResult<Vec<RunRecord>> {
        self.pass("runs").await?;
        self.inner.runs(thread).await
    }
    async fn tool_calls(&self, scope: &Scope, run_id: &str) -> StoreResult<Vec<ToolCallRecord>> {
        self.pass("tool_calls").await?;
        self.inner.tool_calls(scope, run_id).await
    }
    async fn cursor(&self, thread: &ThreadKey, name: &str) -> StoreResult<u64> {
        self.pass("cursor").await?;
        self.inner.cursor(thread, name).await
    }
    async fn checkpoints(&self, thread: &ThreadKey) -> StoreResult<Vec<Checkpoint>> {
        self.pass("checkpoints").await?;
        self.inner.checkpoints(thread).await
    }
    async fn command_result(&self, key: &CommandKey) -> StoreResult<Option<Value>> {
        self.pass("command_result").await?;
        self.inner.command_result(key).await
    }
    async fn record_command(&self, key: &CommandKey, result: Value) -> StoreResult<Option<Value>> {
        self.pass("record_command").await?;
        self.inner.record_command(key, result).await
    }
    async fn lagging_threads(
        &self,
        ahead: &str,
        behind: &str,
        limit: usize,
    ) -> StoreResult<Vec<ThreadKey>> {
        self.pass("lagging_threads").await?;
        self.inner.lagging_threads(ahead, behind, limit).await
    }
    async fn prune(
        &self,
        scope: &burrow_runtime::session::Scope,
        before_ms: i64,
    ) -> StoreResult<burrow_runtime::session::Pruned> {
        self.pass("prune").await?;
        self.inner.prune(scope, before_ms).await
    }
    fn now_ms(&self) -> i64 {
        self.inner.now_ms()
    }
}

// ---------------------------------------------------------------- scenarios

async fn a_message_in_an_idle_thread_starts_a_run_whose_history_refers_to_the_message(fx: Fixture) {
    let runner = Runner::new(text_model("Hello."), fx.store.clone());
    let t = scope().thread("t1");
    assert_eq!(last_seen(fx.store.as_ref(), &t).await.unwrap(), 0);
    let sent = runner.send(&t, "alice", "hi", Some("m1")).await.unwrap();
    let run = sent.run.expect("a message in an idle thread starts a run");
    assert_eq!(run.wait().await.outcome, Outcome::Completed);
    runner.drain().await;

    let runs = fx.store.runs(&t).await.unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, RunStatus::Completed);
    assert_eq!(runs[0].message_ids, vec!["m1".to_owned()]);
    assert_eq!(runs[0].trigger, Trigger::Message);
    assert_eq!(
        load_history(fx.store.as_ref(), &t).await.unwrap(),
        vec![Message::user("hi"), Message::assistant_text("Hello.")]
    );
    // The text is stored once, in the message; the history refers to it.
    assert_eq!(posted_in_history(fx.store.as_ref(), &t).await, vec!["m1"]);
    assert_eq!(fx.store.cursor(&t, "taken").await.unwrap(), sent.seq);
    assert_eq!(last_seen(fx.store.as_ref(), &t).await.unwrap(), sent.seq);
    assert_eq!(fx.store.cursor(&t, "asked").await.unwrap(), sent.seq);
    // The claim is released.
    assert!(fx.store.claim(&t).await.unwrap().is_none());

    let again = runner
        .send(&t, "alice", "again", Some("m1"))
        .await
        .unwrap_err();
    assert_eq!(again.kind(), RunnerErrorKind::IdInUse);
    assert_eq!(fx.store.messages(&t, 0, 100).await.unwrap().len(), 1);
}

async fn the_runs_a_runner_starts_carry_its_labels(fx: Fixture) {
    let config = RunnerConfig::default()
        .with_run_label("burrow.model", "scripted:answers.jsonl")
        .with_run_label("app.tier", "free");
    let runner = Runner::with_config(text_model("Hello."), fx.store.clone(), config);
    let t = scope().thread("t1");
    let sent = runner.send(&t, "alice", "hi", None).await.unwrap();
    assert_eq!(sent.run.unwrap().wait().await.outcome, Outcome::Completed);
    runner.drain().await;
    let runs = fx.store.runs(&t).await.unwrap();
    let labels: Vec<(&str, &str)> = runs[0]
        .labels
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        labels,
        [
            ("app.tier", "free"),
            ("burrow.model", "scripted:answers.jsonl")
        ]
    );
    // Labels stay out of the content-free event log.
    let events = fx.store.events(&t, 0, 100).await.unwrap();
    let log = serde_json::to_string(&events).unwrap();
    assert!(
        !log.contains("answers.jsonl") && !log.contains("free"),
        "{log}"
    );
}

/// `RunnerConfig::with_agent_for_thread` (ADR 0405): each segment runs the
/// agent made for its thread from the runner's; the runner's own lacks the
/// tool the made one has.
async fn each_thread_s_segments_run_the_agent_made_for_the_thread(fx: Fixture) {
    // Calls `whoami` until a result is in, then says the result.
    let model = ScriptedModel::new(|request| {
        let answered = request.messages.iter().rev().find_map(|m| match m {
            Message::ToolResult(r) => Some(r.content.clone()),
            _ => None,
        });
        Ok(match answered {
            Some(text) => ScriptedResponse::text(format!("I am {text}")),
            None => ScriptedResponse::calls().call("w1", "whoami", json!({})),
        })
    });
    let made = Arc::new(AtomicUsize::new(0));
    let counted = made.clone();
    let config =
        RunnerConfig::default().with_agent_for_thread(Arc::new(move |agent: &Agent, thread| {
            counted.fetch_add(1, Ordering::SeqCst);
            let key = format!("{}/{}", thread.scope.tenant, thread.thread);
            let mut tools = agent.tools().clone();
            tools.add_typed(
                "whoami",
                "Says whose thread this is.",
                move |_: Nothing, _| {
                    let key = key.clone();
                    async move { Ok(ToolOutput::ok(key)) }
                },
            );
            agent.clone().with_tools(tools)
        }));
    let runner = Runner::with_config(Agent::new(Arc::new(model)), fx.store.clone(), config);
    let threads = [
        Scope::new("acme", "ws").thread("t1"),
        Scope::new("globex", "ws").thread("t1"),
        Scope::new("acme", "ws").thread("t2"),
    ];
    for t in &threads {
        let sent = runner.send(t, "alice", "who?", None).await.unwrap();
        assert_eq!(sent.run.unwrap().wait().await.outcome, Outcome::Completed);
    }
    runner.drain().await;
    for t in &threads {
        let history = load_history(fx.store.as_ref(), t).await.unwrap();
        assert_valid_history(&history);
        assert_eq!(
            last_text(&history),
            format!("I am {}/{}", t.scope.tenant, t.thread)
        );
    }
    assert_eq!(made.load(Ordering::SeqCst), threads.len());
}

async fn a_same_author_message_steers_the_run_and_another_authors_waits_for_the_next_turn(
    fx: Fixture,
) {
    let t = scope().thread("t1");
    let cell: Arc<OnceLock<Runner>> = Arc::new(OnceLock::new());
    let seen: Arc<Mutex<Vec<Vec<String>>>> = Arc::default();
    let n = Arc::new(AtomicUsize::new(0));
    let model = {
        let (cell, seen, t) = (cell.clone(), seen.clone(), t.clone());
        ScriptedModel::new_async(move |request| {
            let users = user_texts(request.messages);
            seen.lock().unwrap().push(users);
            let i = n.fetch_add(1, Ordering::SeqCst);
            let (cell, t) = (cell.clone(), t.clone());
            async move {
                if i == 0 {
                    // While the first request is in flight, both post.
                    let runner = cell.get().unwrap();
                    let steer = runner.send(&t, "alice", "steer", None).await.unwrap();
                    assert!(
                        steer.run.is_none(),
                        "a running thread is steered, not restarted"
                    );
                    let other = runner.send(&t, "bob", "bob here", None).await.unwrap();
                    assert!(other.run.is_none());
                    Ok(ScriptedResponse::calls().call("c1", "noop", json!({})))
                } else {
                    Ok(ScriptedResponse::text(format!("answer {i}")))
                }
            }
        })
    };
    let agent = Agent::new(Arc::new(model)).with_tools(noop_tools());
    let runner = Runner::new(agent, fx.store.clone());
    cell.set(runner.clone()).unwrap();
    let first = runner.send(&t, "alice", "go", None).await.unwrap();
    assert_eq!(first.run.unwrap().wait().await.outcome, Outcome::Completed);
    runner.drain().await;

    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen[0], vec!["go"]);
    // Alice's steering reached the run before its next request; Bob's did not.
    assert_eq!(seen[1], vec!["go", "steer"]);
    // Bob's message started the next turn, handed over when the first run released.
    assert_eq!(seen[2], vec!["go", "steer", "bob here"]);
    let runs = fx.store.runs(&t).await.unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[1].requested_by.as_deref(), Some("bob"));
    assert!(runs.iter().all(|r| r.status == RunStatus::Completed));
    let history = load_history(fx.store.as_ref(), &t).await.unwrap();
    assert_valid_history(&history);
    assert_eq!(posted_in_history(fx.store.as_ref(), &t).await.len(), 3);
}

async fn ask_user_pauses_durably_and_an_answer_from_another_runner_resumes_the_same_run(
    fx: Fixture,
) {
    let t = scope().thread("t1");
    let agent = || {
        Agent::new(Arc::new(ScriptedModel::new(|request| {
            let users = user_texts(request.messages);
            if users.len() == 1 {
                Ok(ScriptedResponse::calls().call(
                    "q1",
                    "ask_user",
                    json!({"question": "Which colour?"}),
                ))
            } else {
                Ok(ScriptedResponse::text(format!(
                    "You said: {}",
                    users.last().unwrap()
                )))
            }
        })))
    };
    let config = RunnerConfig::default().with_ask_user(true);
    let a = Runner::with_config(agent(), fx.store.clone(), config.clone());
    let sent = a.send(&t, "alice", "paint it", None).await.unwrap();
    let run = sent.run.unwrap();
    assert!(matches!(run.wait().await.outcome, Outcome::Paused { .. }));
    a.drain().await;
    let paused = fx.store.run(&t.scope, run.run_id()).await.unwrap().unwrap();
    assert_eq!(paused.status, RunStatus::Paused);
    assert_eq!(paused.requests.len(), 1);
    assert_eq!(paused.requests[0].spec.call_id, "q1");
    assert!(
        fx.store.claim(&t).await.unwrap().is_none(),
        "a paused run holds no claim"
    );

    // Another runner (another process, the same store) gets the answer.
    let b = Runner::with_config(agent(), fx.store.clone(), config);
    let reply = b.send(&t, "alice", "blue", None).await.unwrap();
    let resumed = reply.run.expect("the answer resumes the run");
    assert_eq!(resumed.run_id(), run.run_id());
    assert_eq!(resumed.wait().await.outcome, Outcome::Completed);
    b.drain().await;

    let done = fx.store.run(&t.scope, run.run_id()).await.unwrap().unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    assert_eq!(done.segments, 2);
    let answer = done.requests[0].answer.clone().unwrap();
    assert_eq!(answer.text.as_deref(), Some("blue"));
    assert_eq!(answer.author, "alice");
    assert_eq!(fx.store.runs(&t).await.unwrap().len(), 1);
    let history = load_history(fx.store.as_ref(), &t).await.unwrap();
    assert_valid_history(&history);
    assert_eq!(last_text(&history), "You said: blue");
}

/// `Runner::resume` acts only within its thread and scope, resumes only a
/// paused run whose requests are all answered, says what it did otherwise,
/// and never starts another run.
async fn resume_acts_only_on_a_paused_answered_run_of_its_thread_and_says_what_it_did(fx: Fixture) {
    use burrow_runtime::runner::Resumed;
    let t = scope().thread("t1");
    let agent = Agent::new(Arc::new(ScriptedModel::new(|request| {
        if user_texts(request.messages).len() == 1 {
            Ok(ScriptedResponse::calls().call("q1", "ask_user", json!({"question": "Which?"})))
        } else {
            Ok(ScriptedResponse::text("done"))
        }
    })));
    let runner = Runner::with_config(
        agent,
        fx.store.clone(),
        RunnerConfig::default().with_ask_user(true),
    );
    let run = start_run(&runner, &t, "alice", "choose").await;
    assert!(matches!(run.wait().await.outcome, Outcome::Paused { .. }));
    runner.drain().await;
    let id = run.run_id().to_owned();
    let resumed = |thread: ThreadKey, id: String| {
        let runner = runner.clone();
        async move { runner.resume(&thread, &id).await.unwrap() }
    };
    assert!(matches!(
        resumed(t.clone(), "run_none".into()).await,
        Resumed::NotFound
    ));
    assert!(
        matches!(
            resumed(scope().thread("t2"), id.clone()).await,
            Resumed::NotFound
        ),
        "a run of another thread is not found"
    );
    assert!(
        matches!(
            resumed(Scope::new("acme", "other").thread("t1"), id.clone()).await,
            Resumed::NotFound
        ),
        "a run of another workspace is not found"
    );
    assert!(matches!(
        resumed(t.clone(), id.clone()).await,
        Resumed::Unanswered { open: 1 }
    ));
    assert_eq!(fx.store.runs(&t).await.unwrap().len(), 1, "nothing started");
    let answered = runner.send(&t, "alice", "blue", None).await.unwrap();
    assert_eq!(
        answered.run.unwrap().wait().await.outcome,
        Outcome::Completed
    );
    runner.drain().await;
    assert!(matches!(
        resumed(t.clone(), id.clone()).await,
        Resumed::NotPaused {
            status: RunStatus::Completed
        }
    ));
    assert_eq!(
        fx.store.runs(&t).await.unwrap().len(),
        1,
        "no run was started"
    );
    assert!(runner.running(&t).is_none());
}

async fn twelve_concurrent_sends_from_two_runners_are_each_consumed_exactly_once(fx: Fixture) {
    let t = scope().thread("t1");
    let a = Runner::new(text_model("ok"), fx.store.clone());
    let b = Runner::new(text_model("ok"), fx.store.clone());
    let sends = (0..12).map(|i| {
        let runner = if i % 2 == 0 { a.clone() } else { b.clone() };
        let t = t.clone();
        tokio::spawn(async move {
            let author = if i % 3 == 0 { "bob" } else { "alice" };
            runner
                .send(&t, author, &format!("message {i}"), Some(&format!("m{i}")))
                .await
                .unwrap()
        })
    });
    let sent = futures::future::join_all(sends).await;
    assert_eq!(sent.len(), 12);
    // Runs and hand-overs of both runners, until nothing is in flight in either.
    loop {
        a.drain().await;
        b.drain().await;
        let asked = fx.store.cursor(&t, "asked").await.unwrap();
        let taken = fx.store.cursor(&t, "taken").await.unwrap();
        if asked == taken && a.running(&t).is_none() && b.running(&t).is_none() {
            break;
        }
        tokio::task::yield_now().await;
    }
    let mut posted = posted_in_history(fx.store.as_ref(), &t).await;
    posted.sort();
    let mut want: Vec<String> = (0..12).map(|i| format!("m{i}")).collect();
    want.sort();
    assert_eq!(posted, want, "every message is in the history exactly once");
    let runs = fx.store.runs(&t).await.unwrap();
    assert!(runs.iter().all(|r| r.status == RunStatus::Completed));
    assert_valid_history(&load_history(fx.store.as_ref(), &t).await.unwrap());
}

#[derive(Deserialize, JsonSchema)]
struct Tag {
    tag: String,
}

/// The tools and the PreToolUse hook of the abandoned-run scenario, over
/// shared counters: `lookup` (idempotent) and `charge` (not), each counting
/// its runs; a `hang` argument makes a call wait forever (the process dies
/// there); the hook denies tag `d` and counts its allow decisions per call.
fn abandoning_agent(
    model: Arc<ScriptedModel>,
    lookups: &Arc<AtomicUsize>,
    charges: &Arc<AtomicUsize>,
    allowed: &Arc<Mutex<Vec<String>>>,
    hang: bool,
) -> Agent {
    use burrow_runtime::hooks::{Hook, HookEvent, HookOutput, Hooks};
    let mut tools = ToolRegistry::new();
    let l = lookups.clone();
    tools.add(
        FnTool::new("lookup", "Looks up.", move |a: Tag, _| {
            l.fetch_add(1, Ordering::SeqCst);
            async move {
                if hang {
                    std::future::pending::<()>().await;
                }
                Ok(ToolOutput::ok(format!("looked up {}", a.tag)))
            }
        })
        .with_annotations(ToolAnnotations::READ_ONLY),
    );
    let c = charges.clone();
    tools.add(FnTool::new("charge", "Charges.", move |a: Tag, _| {
        c.fetch_add(1, Ordering::SeqCst);
        async move {
            if hang && a.tag == "b" {
                std::future::pending::<()>().await;
            }
            Ok(ToolOutput::ok(format!("charged {}", a.tag)))
        }
    }));
    let mut hooks = Hooks::new();
    let allowed = allowed.clone();
    hooks.add(
        Hook::handler(HookEvent::PreToolUse, None, move |input| {
            let deny = input.tool_input.as_ref().and_then(|i| i["tag"].as_str()) == Some("d");
            if !deny {
                allowed
                    .lock()
                    .unwrap()
                    .push(input.tool_use_id.clone().unwrap_or_default());
            }
            async move {
                Ok(if deny {
                    HookOutput::deny("d is never charged")
                } else {
                    HookOutput::allow()
                })
            }
        })
        .unwrap(),
    );
    Agent::new(model).with_tools(tools).with_hooks(hooks)
}

async fn a_run_left_behind_is_abandoned_and_its_calls_replayed_rerun_or_reported_unknown(
    fx: Fixture,
) {
    let t = scope().thread("t1");
    let store = fx.store.clone();
    // A real runner dies in the middle of a batch of four calls: c1 (an
    // idempotent lookup) and c2 (a charge) started and hang, c3 finished, c4
    // was denied by its hook, and nothing of the batch's results was saved.
    let lookups = Arc::new(AtomicUsize::new(0));
    let charges = Arc::new(AtomicUsize::new(0));
    let allowed = Arc::new(Mutex::new(Vec::new()));
    let batch = Arc::new(ScriptedModel::new(|request| {
        if user_texts(request.messages).len() == 1 {
            Ok(ScriptedResponse::calls()
                .call("c1", "lookup", json!({"tag": "a"}))
                .call("c2", "charge", json!({"tag": "b"}))
                .call("c3", "charge", json!({"tag": "c"}))
                .call("c4", "charge", json!({"tag": "d"})))
        } else {
            Ok(ScriptedResponse::text("ok"))
        }
    }));
    let dying = Runner::with_config(
        abandoning_agent(batch.clone(), &lookups, &charges, &allowed, true),
        store.clone(),
        RunnerConfig::default().with_claim_ttl(Duration::from_secs(300)),
    );
    let left = start_run(&dying, &t, "alice", "do it").await;
    // Wait until c3's finish is in (c1 and c2 hang in their tools).
    loop {
        let calls = store.tool_calls(&t.scope, left.run_id()).await.unwrap();
        if calls
            .iter()
            .any(|c| c.call_id == "c3" && c.status == ToolCallStatus::Finished)
            && calls.len() == 3
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(
        (
            lookups.load(Ordering::SeqCst),
            charges.load(Ordering::SeqCst)
        ),
        (1, 2)
    );
    fx.clock.advance(Duration::from_secs(301));

    lookups.store(0, Ordering::SeqCst);
    charges.store(0, Ordering::SeqCst);
    allowed.lock().unwrap().clear();
    let runner = Runner::new(
        abandoning_agent(batch, &lookups, &charges, &allowed, false),
        store.clone(),
    );
    let sent = runner.send(&t, "alice", "go on", None).await.unwrap();
    assert_eq!(sent.run.unwrap().wait().await.outcome, Outcome::Completed);
    runner.drain().await;
    drop(dying);
    let r0_id = left.run_id().to_owned();
    let r0 = store.run(&t.scope, &r0_id).await.unwrap().unwrap();
    assert_eq!(r0.status, RunStatus::Failed);
    assert_eq!(r0.reason.as_deref(), Some("abandoned"));
    // The idempotent call that never finished was decided again by its hook
    // and replayed, once; the charge that never finished did not run again
    // and the model is told its outcome is unknown; the finished call is
    // replayed from its record; the denied call was decided again, by its
    // hook, and never ran.
    assert_eq!(lookups.load(Ordering::SeqCst), 1);
    assert_eq!(charges.load(Ordering::SeqCst), 0);
    assert_eq!(*allowed.lock().unwrap(), vec!["c1".to_owned()]);
    let history = load_history(store.as_ref(), &t).await.unwrap();
    assert_valid_history(&history);
    let results: HashMap<String, String> = history
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult(r) => Some((r.call_id.clone(), r.content.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(results["c1"], "looked up a");
    assert_eq!(results["c2"], OUTCOME_UNKNOWN);
    assert_eq!(results["c3"], "charged c");
    assert!(results["c4"].contains("denied"), "{}", results["c4"]);
    assert!(
        results["c4"].contains("d is never charged"),
        "{}",
        results["c4"]
    );
    let calls = store.tool_calls(&t.scope, &r0_id).await.unwrap();
    let c1 = calls.iter().find(|c| c.call_id == "c1").unwrap();
    assert_eq!((c1.status, c1.attempts), (ToolCallStatus::Finished, 2));
    let c2 = calls.iter().find(|c| c.call_id == "c2").unwrap();
    assert_eq!(c2.status, ToolCallStatus::Started);
    assert!(
        calls.iter().all(|c| c.call_id != "c4"),
        "a denied call is never recorded started"
    );
    let runs = store.runs(&t).await.unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[1].status, RunStatus::Completed);
    assert_eq!(user_texts(&history), vec!["do it", "go on"]);
}

async fn stop_cancels_the_run_and_leaves_every_call_with_a_result(fx: Fixture) {
    let t = scope().thread("t1");
    let (agent, started_rx) = hanging_agent();
    let runner = Runner::new(agent, fx.store.clone());
    let run = start_run(&runner, &t, "alice", "hang").await;
    started_rx.await.unwrap();
    assert!(runner.running(&t).is_some());
    assert!(
        !runner.stop(&Scope::new("acme", "other"), run.run_id()),
        "a run of another workspace is never stopped"
    );
    assert!(runner.stop(&t.scope, run.run_id()));
    assert!(matches!(run.wait().await.outcome, Outcome::Stopped { .. }));
    runner.drain().await;
    assert!(
        !runner.stop(&t.scope, run.run_id()),
        "nothing is left to stop"
    );
    let record = fx.store.run(&t.scope, run.run_id()).await.unwrap().unwrap();
    assert_eq!(record.status, RunStatus::Stopped);
    let history = load_history(fx.store.as_ref(), &t).await.unwrap();
    assert_valid_history(&history);
    assert!(runner.running(&t).is_none());
}

async fn a_command_is_carried_out_once_when_two_deliveries_race_and_on_every_retry(fx: Fixture) {
    let s = scope();
    let t = s.thread("t1");
    // Both deliveries, in tasks of their own, have their posts in flight at
    // once (a message reads no record first, ADR 0371): the store's atomic
    // check in the commit decides.
    let gate = Gate::new(fx.store.clone());
    let mut first = gate.hold("commit", 1);
    let mut second = gate.hold("commit", 2);
    let a = Runner::new(text_model("ok"), gate.clone());
    let b = Runner::new(text_model("ok"), gate.clone());
    let send = |text: &str| Command::Send {
        thread: "t1".into(),
        text: text.into(),
        message_id: None,
    };
    let deliver = |runner: &Runner| {
        let runner = runner.clone();
        let s = s.clone();
        let command = send("hello");
        tokio::spawn(async move { runner.execute(&s, "alice", command, "c1").await })
    };
    let (one, two) = (deliver(&a), deliver(&b));
    first.arrived().await;
    second.arrived().await;
    first.release(false);
    second.release(false);
    let (one, two) = (one.await.unwrap().unwrap(), two.await.unwrap().unwrap());
    assert_eq!(one, two);
    assert!(
        matches!(&one, CommandResult::Posted { thread, .. } if thread == "t1"),
        "{one:?}"
    );
    // A retry with another payload gets the first result and does nothing.
    let retry = a
        .execute(&s, "alice", send("DIFFERENT"), "c1")
        .await
        .unwrap();
    assert_eq!(retry, one);
    // The same id from another sender is another command.
    let bobs = a.execute(&s, "bob", send("hi"), "c1").await.unwrap();
    assert_ne!(bobs, one);
    a.drain().await;
    b.drain().await;
    let texts: Vec<String> = fx
        .store
        .messages(&t, 0, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.text)
        .collect();
    assert_eq!(texts.iter().filter(|t| *t == "hello").count(), 1);
    assert!(!texts.contains(&"DIFFERENT".to_owned()));
    assert!(texts.contains(&"hi".to_owned()));
    // A bad id is a rejection, not remembered.
    let bad = a.execute(&s, "alice", send("x"), "").await.unwrap();
    assert!(
        matches!(
            &bad,
            CommandResult::Rejected {
                kind: RunnerErrorKind::InvalidArgument,
                ..
            }
        ),
        "{bad:?}"
    );
    // Stopping nothing is remembered too.
    let stop = a
        .execute(
            &s,
            "alice",
            Command::Stop {
                run_id: "r9".into(),
            },
            "c2",
        )
        .await
        .unwrap();
    assert_eq!(
        stop,
        CommandResult::Stopped {
            run_id: "r9".into(),
            stopped: false
        }
    );
}

async fn a_duplicate_answer_delivered_at_once_is_carried_out_once(fx: Fixture) {
    let s = scope();
    let t = s.thread("t1");
    let agent = || {
        Agent::new(Arc::new(ScriptedModel::new(|request| {
            if user_texts(request.messages).len() == 1 {
                Ok(ScriptedResponse::calls().call("q1", "ask_user", json!({"question": "Which?"})))
            } else {
                Ok(ScriptedResponse::text("thanks"))
            }
        })))
    };
    let config = RunnerConfig::default().with_ask_user(true);
    let gate = Gate::new(fx.store.clone());
    let a = Runner::with_config(agent(), gate.clone(), config.clone());
    let b = Runner::with_config(agent(), gate.clone(), config);
    let run = a.send(&t, "alice", "go", None).await.unwrap().run.unwrap();
    assert!(matches!(run.wait().await.outcome, Outcome::Paused { .. }));
    a.drain().await;
    let request = fx
        .store
        .run(&s, run.run_id())
        .await
        .unwrap()
        .unwrap()
        .requests[0]
        .spec
        .id
        .clone();
    let mut first = gate.hold("command_result", 1);
    let mut second = gate.hold("command_result", 2);
    let deliver = |runner: &Runner| {
        let runner = runner.clone();
        let s = s.clone();
        let command = Command::Answer {
            thread: "t1".into(),
            run_id: run.run_id().to_owned(),
            request_id: request.clone(),
            approved: None,
            text: Some("blue".into()),
        };
        tokio::spawn(async move { runner.execute(&s, "alice", command, "a1").await })
    };
    let (one, two) = (deliver(&a), deliver(&b));
    first.arrived().await;
    second.arrived().await;
    first.release(false);
    second.release(false);
    let (one, two) = (one.await.unwrap().unwrap(), two.await.unwrap().unwrap());
    assert_eq!(one, two, "the duplicate gets the remembered result");
    assert_eq!(
        one,
        CommandResult::Answered {
            run_id: run.run_id().to_owned(),
            request_id: request.clone(),
            resumed: true
        }
    );
    a.drain().await;
    b.drain().await;
    let done = fx.store.run(&s, run.run_id()).await.unwrap().unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    assert_eq!(done.segments, 2, "resumed once");
    // A later retry of the id gets the same result and does nothing.
    let retry = a
        .execute(
            &s,
            "alice",
            Command::Answer {
                thread: "t1".into(),
                run_id: run.run_id().to_owned(),
                request_id: request.clone(),
                approved: None,
                text: Some("red".into()),
            },
            "a1",
        )
        .await
        .unwrap();
    assert_eq!(retry, one);
    let key = CommandKey {
        scope: s.clone(),
        sender: "alice".into(),
        command_id: "a1".into(),
    };
    assert_eq!(a.remembered(&key).await.unwrap(), Some(one.clone()));
    // The store keeps it in the JSON form it has always had.
    assert_eq!(
        fx.store.command_result(&key).await.unwrap(),
        Some(
            json!({"type": "answered", "run_id": run.run_id(), "request_id": request, "resumed": true})
        )
    );
}

async fn a_retried_command_whose_run_was_abandoned_takes_the_thread_over_and_does_the_work(
    fx: Fixture,
) {
    let s = scope();
    let t = s.thread("t1");
    let ttl = Duration::from_millis(300);
    // A runner posted the message under command c1, claimed the thread and died.
    let result = json!({"type": "posted", "thread": "t1", "message_id": "m1"});
    let key = CommandKey {
        scope: s.clone(),
        sender: "alice".into(),
        command_id: "c1".into(),
    };
    fx.store
        .commit(
            &t,
            Commit::new()
                .write(Write::PostMessage {
                    id: "m1".into(),
                    author: "alice".into(),
                    kind: MessageKind::Message,
                    text: "hello".into(),
                })
                .cursor("asked", 1)
                .command(key, result.clone()),
        )
        .await
        .unwrap();
    let ClaimAttempt::Granted(_) = fx.store.acquire_claim(&t, "dead", ttl).await.unwrap() else {
        panic!("the thread is free");
    };
    let runner = Runner::with_config(
        text_model("done at last"),
        fx.store.clone(),
        RunnerConfig::default().with_claim_ttl(ttl),
    );
    let send = Command::Send {
        thread: "t1".into(),
        text: "hello".into(),
        message_id: None,
    };
    // The retry gets the remembered result; the dead claim lapses and the work is done.
    fx.clock.advance(Duration::from_secs(1));
    assert_eq!(
        runner.execute(&s, "alice", send, "c1").await.unwrap(),
        CommandResult::Posted {
            thread: "t1".into(),
            message_id: "m1".into()
        }
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let runs = fx.store.runs(&t).await.unwrap();
        if runs.iter().any(|r| r.status == RunStatus::Completed) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the work was never done: {runs:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    runner.drain().await;
    let history = load_history(fx.store.as_ref(), &t).await.unwrap();
    assert_eq!(last_text(&history), "done at last");
    assert_eq!(user_texts(&history), vec!["hello".to_owned()]);
}

async fn watching_follows_a_run_and_an_ended_run_ends_at_once_with_its_outcome(fx: Fixture) {
    let t = scope().thread("t1");
    let (go_tx, go_rx) = oneshot::channel::<()>();
    let go = Arc::new(tokio::sync::Mutex::new(Some(go_rx)));
    let model = ScriptedModel::new_async(move |_| {
        let go = go.clone();
        async move {
            if let Some(rx) = go.lock().await.take() {
                let _ = rx.await;
            }
            Ok(ScriptedResponse::text("streamed"))
        }
    });
    let runner = Runner::new(Agent::new(Arc::new(model)), fx.store.clone());
    let run = start_run(&runner, &t, "alice", "hi").await;
    let watcher = runner.watch(&t.scope, run.run_id());
    go_tx.send(()).unwrap();
    let frames: Vec<_> = watcher.collect().await;
    let texts: String = frames
        .iter()
        .filter_map(|f| match &f.event {
            LiveEvent::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, "streamed");
    assert_eq!(
        frames.last().unwrap().event,
        LiveEvent::End {
            outcome: Some("completed".into()),
            reason: None
        }
    );
    run.wait().await;
    runner.drain().await;
    let late: Vec<_> = runner.watch(&t.scope, run.run_id()).collect().await;
    assert_eq!(late.len(), 1);
    assert_eq!(
        late[0].event,
        LiveEvent::End {
            outcome: Some("completed".into()),
            reason: None
        }
    );
    let unknown: Vec<_> = runner.watch(&t.scope, "no-such-run").collect().await;
    assert_eq!(
        unknown[0].event,
        LiveEvent::End {
            outcome: None,
            reason: None
        }
    );
}

async fn a_message_sent_while_the_run_releases_its_claim_is_carried_out_by_the_hand_over(
    fx: Fixture,
) {
    let t = scope().thread("t1");
    let gate = Gate::new(fx.store.clone());
    let mut held = gate.hold("release_claim", 1);
    let runner = Runner::new(text_model("ok"), gate.clone());
    let first = runner.send(&t, "alice", "one", Some("m1")).await.unwrap();
    let first = first.run.unwrap();
    held.arrived().await;
    // The run has ended and is releasing its claim: this message finds it busy.
    let second = runner.send(&t, "alice", "two", Some("m2")).await.unwrap();
    assert!(second.run.is_none());
    held.release(false);
    first.wait().await;
    loop {
        runner.drain().await;
        if fx.store.cursor(&t, "taken").await.unwrap() == second.seq {
            break;
        }
        tokio::task::yield_now().await;
    }
    runner.drain().await;
    let runs = fx.store.runs(&t).await.unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[1].message_ids, vec!["m2".to_owned()]);
    assert_eq!(
        posted_in_history(fx.store.as_ref(), &t).await,
        vec!["m1", "m2"]
    );
}

async fn a_message_whose_early_claim_found_the_ending_run_busy_is_taken_after_its_post(
    fx: Fixture,
) {
    let s = scope();
    let t = s.thread("t1");
    let gate = Gate::new(fx.store.clone());
    let mut releasing = gate.hold("release_claim", 1);
    let runner = Runner::new(text_model("ok"), gate.clone());
    let first = runner.send(&t, "alice", "one", Some("m1")).await.unwrap();
    let first = first.run.unwrap();
    releasing.arrived().await;
    // The run has ended and still holds its claim. The next message's claim is
    // asked for while its post is held, and is answered busy.
    let claims = gate.calls("acquire_claim");
    let mut posting = gate.hold("commit", 1);
    let sending = {
        let runner = runner.clone();
        let s = s.clone();
        let command = Command::Send {
            thread: "t1".into(),
            text: "two".into(),
            message_id: Some("m2".into()),
        };
        tokio::spawn(async move { runner.execute(&s, "alice", command, "c2").await })
    };
    posting.arrived().await;
    while gate.calls("acquire_claim") == claims {
        tokio::task::yield_now().await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    // The run releases its claim and looks for messages before the post is in:
    // none. The busy answer must not be trusted (ADR 0371).
    releasing.release(false);
    first.wait().await;
    runner.drain().await;
    posting.release(false);
    let posted = sending.await.unwrap().unwrap();
    assert!(
        matches!(&posted, CommandResult::Posted { message_id, .. } if message_id == "m2"),
        "{posted:?}"
    );
    assert_eq!(
        gate.calls("acquire_claim"),
        claims + 2,
        "the early claim, answered busy, then the claim after the post"
    );
    runner.drain().await;
    let runs = fx.store.runs(&t).await.unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[1].message_ids, vec!["m2".to_owned()]);
    assert_eq!(runs[1].status, RunStatus::Completed);
}

async fn a_message_whose_runner_died_before_claiming_is_taken_up_by_recover(fx: Fixture) {
    let t = scope().thread("t1");
    let gate = Gate::new(fx.store.clone());
    // The post is committed (asked moves), then the runner dies while its
    // claim attempt hangs (a failed attempt alone is tried again, ADR 0250).
    let mut held = gate.hold("acquire_claim", 1);
    let dying = Runner::new(text_model("never"), gate.clone());
    let sending = {
        let t = t.clone();
        tokio::spawn(async move { dying.send(&t, "alice", "hello", Some("m1")).await })
    };
    held.arrived().await;
    sending.abort();
    assert!(sending.await.unwrap_err().is_cancelled());
    drop(held);
    assert_eq!(fx.store.cursor(&t, "taken").await.unwrap(), 0);

    let runner = Runner::new(text_model("recovered"), fx.store.clone());
    let started = runner.recover().await.unwrap();
    assert_eq!(started.len(), 1);
    assert_eq!(started[0].wait().await.outcome, Outcome::Completed);
    runner.drain().await;
    let history = load_history(fx.store.as_ref(), &t).await.unwrap();
    assert_eq!(
        history,
        vec![Message::user("hello"), Message::assistant_text("recovered")]
    );
    assert!(
        runner.recover().await.unwrap().is_empty(),
        "nothing is left"
    );
}

async fn a_closed_runner_starts_nothing_and_another_runner_recovers_the_message(fx: Fixture) {
    let t = scope().thread("t1");
    let runner = Runner::new(text_model("ok"), fx.store.clone());
    runner.aclose().await;
    let sent = runner.send(&t, "alice", "late", None).await.unwrap();
    assert!(sent.run.is_none(), "a closed runner starts no run");
    let other = Runner::new(text_model("ok"), fx.store.clone());
    let started = other.recover().await.unwrap();
    assert_eq!(started.len(), 1);
    started[0].wait().await;
    other.drain().await;
    assert_eq!(
        fx.store.runs(&t).await.unwrap()[0].status,
        RunStatus::Completed
    );
}

// ---------------------------------------------------------------- claims and time

/// A renewal that hangs past the TTL cancels the run (tokio's clock is paused
/// and moves only when every task waits, so no test sleeps for real).
#[tokio::test(start_paused = true)]
async fn a_renewal_that_hangs_past_the_ttl_cancels_the_run() {
    let fx = memory();
    let t = scope().thread("t1");
    let gate = Gate::new(fx.store.clone());
    let _hang = gate.hold("renew_claim", 1);
    let mut tools = ToolRegistry::new();
    tools.add_typed("hang", "Never returns.", |_: Nothing, _| async {
        std::future::pending::<()>().await;
        Ok(ToolOutput::ok("never"))
    });
    let agent = Agent::new(Arc::new(ScriptedModel::from_responses(vec![
        ScriptedResponse::calls().call("h1", "hang", json!({})),
    ])))
    .with_tools(tools);
    let runner = Runner::with_config(
        agent,
        gate.clone(),
        RunnerConfig::default().with_claim_ttl(Duration::from_secs(30)),
    );
    let before = tokio::time::Instant::now();
    let run = start_run(&runner, &t, "alice", "go").await;
    let result = run.wait().await;
    assert_eq!(
        result.outcome,
        Outcome::Stopped {
            reason: "claim_lost".into()
        }
    );
    // Lost exactly one TTL after the claim was taken: the first renewal (at a
    // third) hung, and the timer did not wait for it.
    assert_eq!(before.elapsed(), Duration::from_secs(30));
    runner.drain().await;
    let record = fx.store.run(&t.scope, run.run_id()).await.unwrap().unwrap();
    assert_eq!(record.status, RunStatus::Stopped);
    assert_eq!(record.reason.as_deref(), Some("claim_lost"));
    assert_valid_history(&load_history(fx.store.as_ref(), &t).await.unwrap());
}

/// Renewals every third of the TTL keep a long run's claim alive.
#[tokio::test(start_paused = true)]
async fn renewals_every_third_keep_a_long_run_alive() {
    let fx = memory();
    let t = scope().thread("t1");
    let mut tools = ToolRegistry::new();
    tools.add_typed("wait", "Waits a while.", |_: Nothing, _| async {
        tokio::time::sleep(Duration::from_secs(125)).await;
        Ok(ToolOutput::ok("waited"))
    });
    let agent = Agent::new(Arc::new(ScriptedModel::from_responses(vec![
        ScriptedResponse::calls().call("w1", "wait", json!({})),
        ScriptedResponse::text("done"),
    ])))
    .with_tools(tools);
    let gate = Gate::new(fx.store.clone());
    let runner = Runner::with_config(
        agent,
        gate.clone(),
        RunnerConfig::default().with_claim_ttl(Duration::from_secs(30)),
    );
    let run = start_run(&runner, &t, "alice", "go").await;
    assert_eq!(run.wait().await.outcome, Outcome::Completed);
    let renewals = gate.state.lock().unwrap().calls.get("renew_claim").copied();
    assert_eq!(renewals, Some(12), "125 s at one renewal per 10 s");
}

// ---------------------------------------------------------------- a killed process

const CHILD_DB: &str = "BURROW_RUNNER_TEST_CHILD_DB";

/// The file the child's `hang` tool makes once it runs: the proof the call
/// is running, not only recorded started.
fn running_marker(db: &std::path::Path) -> std::path::PathBuf {
    db.with_extension("running")
}

/// An agent whose first answer calls `hang`, which makes `marker` (when
/// given) once it runs and never returns.
fn hang_agent(marker: Option<std::path::PathBuf>) -> Agent {
    let mut tools = ToolRegistry::new();
    tools.add_typed("hang", "Never returns.", move |_: Nothing, _| {
        if let Some(marker) = &marker {
            std::fs::write(marker, b"running").unwrap();
        }
        async {
            std::future::pending::<()>().await;
            Ok(ToolOutput::ok("never"))
        }
    });
    Agent::new(Arc::new(ScriptedModel::new(|request| {
        if user_texts(request.messages).len() == 1 {
            Ok(ScriptedResponse::calls().call("c1", "hang", json!({})))
        } else {
            Ok(ScriptedResponse::text("taken over"))
        }
    })))
    .with_tools(tools)
}

/// The child process of the test below: a runner over the SQLite file named by
/// the environment whose run hangs in a tool call until the process is killed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the child process of a_killed_runner_process_is_taken_over_by_another_process"]
async fn killed_runner_child() {
    let db = std::env::var(CHILD_DB).expect("run by its parent test");
    let marker = running_marker(std::path::Path::new(&db));
    let store = Arc::new(SqliteStore::open(db).unwrap());
    let runner = Runner::new(hang_agent(Some(marker)), store);
    let sent = runner
        .send(&scope().thread("t1"), "alice", "work", Some("m1"))
        .await
        .unwrap();
    sent.run.unwrap().wait().await;
    unreachable!("the run hangs until the process is killed");
}

/// A runner process killed with SIGKILL mid-call: another process takes the
/// thread over once the claim lapses, records the run left behind as
/// abandoned, reports the unfinished call's outcome as unknown (never runs it
/// again), and carries out the new message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_runner_process_is_taken_over_by_another_process() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sessions.db");
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "all::runner::killed_runner_child",
            "--ignored",
            "--nocapture",
        ])
        .env(CHILD_DB, &db)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t = scope().thread("t1");
    // Wait for the child's tool to run: its marker, not its `ToolCallStarted`
    // event (recorded once the call is allowed, just before the tool runs).
    let marker = running_marker(&db);
    let running = async {
        while !marker.exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(120), running)
        .await
        .expect("the child process's tool ran");
    {
        // A running call is recorded started (it was allowed before it ran).
        let store = SqliteStore::open(&db).unwrap();
        let runs = store.runs(&t).await.unwrap();
        let calls = store.tool_calls(&t.scope, &runs[0].run_id).await.unwrap();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].status, ToolCallStatus::Started);
    }
    child.kill().unwrap();
    child.wait().unwrap();

    // Another process, whose clock reads past the dead runner's claim.
    let now = burrow_runtime::session::Clock::now_ms(&burrow_runtime::session::SystemClock);
    let clock = Arc::new(ManualClock::new(now + 31_000));
    let store: Arc<dyn SessionStore> =
        Arc::new(SqliteStore::open_with(&db, clock, SqliteOptions::default()).unwrap());
    let runner = Runner::new(hang_agent(None), store.clone());
    let sent = runner
        .send(&t, "alice", "are you there?", None)
        .await
        .unwrap();
    assert_eq!(sent.run.unwrap().wait().await.outcome, Outcome::Completed);
    runner.drain().await;
    let runs = store.runs(&t).await.unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0].status, RunStatus::Failed);
    assert_eq!(runs[0].reason.as_deref(), Some("abandoned"));
    assert_eq!(runs[1].status, RunStatus::Completed);
    let history = load_history(store.as_ref(), &t).await.unwrap();
    assert_valid_history(&history);
    assert!(history.iter().any(
        |m| matches!(m, Message::ToolResult(r) if r.call_id == "c1" && r.content == OUTCOME_UNKNOWN)
    ));
    assert_eq!(last_text(&history), "taken over");
}

// ---------------------------------------------------------------- approvals

/// An agent whose `charge` calls a hook sends for approval; it counts the charges made.
fn approval_agent(charges: Arc<AtomicUsize>) -> Agent {
    use burrow_runtime::hooks::{Hook, HookEvent, HookOutput, Hooks};
    let mut tools = ToolRegistry::new();
    tools.add_typed("charge", "Charges.", move |a: Tag, _| {
        charges.fetch_add(1, Ordering::SeqCst);
        async move { Ok(ToolOutput::ok(format!("charged {}", a.tag))) }
    });
    let mut hooks = Hooks::new();
    hooks.add(
        Hook::handler(HookEvent::PreToolUse, Some("charge"), |_| async {
            Ok(HookOutput::ask("charging needs a human"))
        })
        .unwrap(),
    );
    Agent::new(Arc::new(ScriptedModel::new(|request| {
        let users = user_texts(request.messages);
        if users.len() == 1 {
            Ok(ScriptedResponse::calls().call("c1", "charge", json!({"tag": "x"})))
        } else {
            Ok(ScriptedResponse::text(format!(
                "heard: {}",
                users.last().unwrap()
            )))
        }
    })))
    .with_tools(tools)
    .with_hooks(hooks)
}

async fn an_approval_a_hook_asks_for_pauses_and_an_approval_from_another_runner_runs_the_call(
    fx: Fixture,
) {
    let t = scope().thread("t1");
    let charges = Arc::new(AtomicUsize::new(0));
    let a = Runner::new(approval_agent(charges.clone()), fx.store.clone());
    let run = start_run(&a, &t, "alice", "charge it").await;
    assert!(matches!(run.wait().await.outcome, Outcome::Paused { .. }));
    a.drain().await;
    let paused = fx.store.run(&t.scope, run.run_id()).await.unwrap().unwrap();
    assert_eq!(paused.status, RunStatus::Paused);
    assert_eq!(paused.requests[0].spec.call_id, "c1");
    assert_eq!(
        paused.requests[0].spec.kind,
        burrow_runtime::session::RequestKind::Approval
    );
    assert_eq!(charges.load(Ordering::SeqCst), 0);

    let b = Runner::new(approval_agent(charges.clone()), fx.store.clone());
    let answer = burrow_runtime::session::Answer {
        author: "alice".into(),
        approved: Some(true),
        text: None,
        message_id: None,
    };
    let sent = b.answer(&t, run.run_id(), "c1", answer).await.unwrap();
    let resumed = sent.run.expect("the last answer resumes the run");
    assert_eq!(resumed.run_id(), run.run_id());
    assert_eq!(resumed.wait().await.outcome, Outcome::Completed);
    b.drain().await;
    assert_eq!(
        charges.load(Ordering::SeqCst),
        1,
        "the approved call ran once"
    );
    let history = load_history(fx.store.as_ref(), &t).await.unwrap();
    assert_valid_history(&history);
    assert!(last_text(&history).contains("charged x"));
    let calls = fx.store.tool_calls(&t.scope, run.run_id()).await.unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].status, ToolCallStatus::Finished);
    // Answering again is refused: the run is no longer paused.
    let again = b
        .answer(
            &t,
            run.run_id(),
            "c1",
            burrow_runtime::session::Answer {
                author: "alice".into(),
                approved: Some(true),
                text: None,
                message_id: None,
            },
        )
        .await
        .unwrap_err();
    assert_eq!(again.kind(), RunnerErrorKind::InvalidState);
    assert_eq!(charges.load(Ordering::SeqCst), 1);
}

/// An `ask` with an `updatedInput`: the pause keeps the rewritten arguments
/// (typed, in the run's request), and the approved call runs with them,
/// through the pipeline (its PostToolUse hook fires, its start is recorded).
async fn an_approved_call_runs_through_the_pipeline_with_the_input_its_hook_gave_it(fx: Fixture) {
    use burrow_runtime::hooks::{Hook, HookEvent, HookOutput, Hooks};
    let t = scope().thread("t1");
    let charged = Arc::new(Mutex::new(Vec::new()));
    let posts = Arc::new(AtomicUsize::new(0));
    let make = |charged: Arc<Mutex<Vec<String>>>, posts: Arc<AtomicUsize>| {
        let mut tools = ToolRegistry::new();
        tools.add_typed("charge", "Charges.", move |a: Tag, _| {
            charged.lock().unwrap().push(a.tag.clone());
            async move { Ok(ToolOutput::ok(format!("charged {}", a.tag))) }
        });
        let mut hooks = Hooks::new();
        hooks.add(
            Hook::handler(HookEvent::PreToolUse, Some("charge"), |_| async {
                let mut out = HookOutput::ask("charging needs a human");
                if let Some(s) = out.hook_specific_output.as_mut() {
                    s.updated_input = Some(json!({"tag": "capped"}));
                }
                Ok(out)
            })
            .unwrap(),
        );
        hooks.add(
            Hook::handler(HookEvent::PostToolUse, Some("charge"), move |_| {
                posts.fetch_add(1, Ordering::SeqCst);
                async { Ok(HookOutput::allow()) }
            })
            .unwrap(),
        );
        Agent::new(Arc::new(ScriptedModel::new(|request| {
            if user_texts(request.messages).len() == 1 {
                Ok(ScriptedResponse::calls().call("c1", "charge", json!({"tag": "all"})))
            } else {
                Ok(ScriptedResponse::text(format!(
                    "heard: {}",
                    user_texts(request.messages).last().unwrap()
                )))
            }
        })))
        .with_tools(tools)
        .with_hooks(hooks)
    };
    let a = Runner::new(make(charged.clone(), posts.clone()), fx.store.clone());
    let run = start_run(&a, &t, "alice", "charge it").await;
    let paused = run.wait().await;
    assert!(matches!(paused.outcome, Outcome::Paused { .. }));
    assert_eq!(paused.approvals.len(), 1);
    assert_eq!(paused.approvals[0].call_id, "c1");
    assert_eq!(
        paused.approvals[0].arguments,
        Some(json!({"tag": "capped"}))
    );
    a.drain().await;
    let record = fx.store.run(&t.scope, run.run_id()).await.unwrap().unwrap();
    assert_eq!(
        record.requests[0].spec.arguments,
        Some(json!({"tag": "capped"})),
        "the pause keeps the hook's updatedInput"
    );
    assert!(charged.lock().unwrap().is_empty());

    let b = Runner::new(make(charged.clone(), posts.clone()), fx.store.clone());
    let answer = burrow_runtime::session::Answer {
        author: "alice".into(),
        approved: Some(true),
        text: None,
        message_id: None,
    };
    let sent = b.answer(&t, run.run_id(), "c1", answer).await.unwrap();
    assert_eq!(sent.run.unwrap().wait().await.outcome, Outcome::Completed);
    b.drain().await;
    assert_eq!(
        *charged.lock().unwrap(),
        vec!["capped".to_owned()],
        "the approved call ran once, with the hook's input"
    );
    assert_eq!(
        posts.load(Ordering::SeqCst),
        1,
        "its PostToolUse hook fired"
    );
    let calls = fx.store.tool_calls(&t.scope, run.run_id()).await.unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].status, ToolCallStatus::Finished);
    let history = load_history(fx.store.as_ref(), &t).await.unwrap();
    assert_valid_history(&history);
    assert!(last_text(&history).contains("charged capped"));
}

async fn a_message_to_a_thread_paused_on_an_approval_declines_it_with_its_text(fx: Fixture) {
    let t = scope().thread("t1");
    let charges = Arc::new(AtomicUsize::new(0));
    let runner = Runner::new(approval_agent(charges.clone()), fx.store.clone());
    let run = start_run(&runner, &t, "alice", "charge it").await;
    run.wait().await;
    runner.drain().await;
    let reply = runner
        .send(&t, "alice", "no, too expensive", None)
        .await
        .unwrap();
    let resumed = reply.run.unwrap();
    assert_eq!(resumed.run_id(), run.run_id());
    assert_eq!(resumed.wait().await.outcome, Outcome::Completed);
    runner.drain().await;
    assert_eq!(
        charges.load(Ordering::SeqCst),
        0,
        "a declined call never runs"
    );
    let done = fx.store.run(&t.scope, run.run_id()).await.unwrap().unwrap();
    let answer = done.requests[0].answer.clone().unwrap();
    assert_eq!(answer.approved, Some(false));
    assert_eq!(answer.text.as_deref(), Some("no, too expensive"));
    let history = load_history(fx.store.as_ref(), &t).await.unwrap();
    assert!(last_text(&history).contains("too expensive"));
    assert_eq!(fx.store.runs(&t).await.unwrap().len(), 1);
}

// ---------------------------------------------------------------- content

#[derive(Deserialize, JsonSchema)]
struct Note {
    #[allow(dead_code)]
    note: String,
}

async fn durable_events_are_content_free_and_each_text_is_stored_once(fx: Fixture) {
    let t = scope().thread("t1");
    let mut tools = ToolRegistry::new();
    tools.add_typed("note", "Takes a note.", |_: Note, _| async {
        Ok(ToolOutput::ok("CANARY-RESULT"))
    });
    let agent = Agent::new(Arc::new(ScriptedModel::from_responses(vec![
        ScriptedResponse::calls().call("n1", "note", json!({"note": "CANARY-ARGS"})),
        ScriptedResponse::text("CANARY-ANSWER"),
    ])))
    .with_tools(tools);
    let runner = Runner::new(agent, fx.store.clone());
    let sent = runner
        .send(&t, "alice", "CANARY-PROMPT", None)
        .await
        .unwrap();
    assert_eq!(sent.run.unwrap().wait().await.outcome, Outcome::Completed);
    runner.drain().await;
    let events = serde_json::to_string(&fx.store.events(&t, 0, 1000).await.unwrap()).unwrap();
    assert!(
        !events.contains("CANARY"),
        "an event carries content: {events}"
    );
    // The prompt lives in its message and the result in its call record; the
    // history refers to both.
    let items: Vec<HistoryItem> = fx
        .store
        .history(&t, 0)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.item)
        .collect();
    let stored = serde_json::to_string(&items).unwrap();
    assert!(!stored.contains("CANARY-PROMPT"));
    assert!(!stored.contains("CANARY-RESULT"));
    assert!(items.contains(&HistoryItem::ToolResult {
        call_id: "n1".into()
    }));
    let history = load_history(fx.store.as_ref(), &t).await.unwrap();
    assert_eq!(history.len(), 4);
    assert_eq!(last_text(&history), "CANARY-ANSWER");
}

// ---------------------------------------------------------------- turn ports

struct Recorder(Mutex<Vec<burrow_runtime::runner::EndedTurn>>);

impl burrow_runtime::runner::TurnEvaluator for Recorder {
    fn submit(&self, turn: &burrow_runtime::runner::EndedTurn) -> Result<(), String> {
        self.0.lock().unwrap().push(turn.clone());
        Ok(())
    }
}

struct Failing;

impl burrow_runtime::runner::TurnEvaluator for Failing {
    fn submit(&self, _turn: &burrow_runtime::runner::EndedTurn) -> Result<(), String> {
        Err("the judge is down".into())
    }
}

struct Counting(Arc<AtomicUsize>, Arc<AtomicUsize>);

struct Exit(Arc<AtomicUsize>);

impl Drop for Exit {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

impl burrow_runtime::runner::TurnContext for Counting {
    fn enter(&self, _turn: &burrow_runtime::runner::TurnInfo) -> burrow_runtime::runner::TurnGuard {
        self.0.fetch_add(1, Ordering::SeqCst);
        Box::new(Exit(self.1.clone()))
    }
}

#[tokio::test]
async fn evaluators_get_each_ended_turn_and_a_failing_one_never_reaches_the_turn() {
    let fx = memory();
    let t = scope().thread("t1");
    let recorder = Arc::new(Recorder(Mutex::new(Vec::new())));
    let (entered, exited) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let config = RunnerConfig::default()
        .with_evaluator(Arc::new(Failing))
        .with_evaluator(recorder.clone())
        .with_turn_context(Arc::new(Counting(entered.clone(), exited.clone())));
    let runner = Runner::with_config(text_model("ok"), fx.store.clone(), config);
    let run = start_run(&runner, &t, "alice", "hi").await;
    assert_eq!(run.wait().await.outcome, Outcome::Completed);
    runner.drain().await;
    let turns = recorder.0.lock().unwrap().clone();
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0].outcome, "completed");
    assert_eq!(turns[0].turn.run_id, run.run_id());
    assert_eq!(turns[0].turn.requested_by.as_deref(), Some("alice"));
    assert_eq!(turns[0].requests, 1);
    assert_eq!(entered.load(Ordering::SeqCst), 1);
    assert_eq!(exited.load(Ordering::SeqCst), 1);
}
