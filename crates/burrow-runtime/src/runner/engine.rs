//! The `Runner`: runs an agent in session threads. A message starts a run in an idle thread, steers a running one, answers a paused one; claims, hand-overs, abandoned runs, pauses, stops and deduplicated commands.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::{Notify, watch};
use tokio::time::Instant;
use tracing::Instrument;

use super::ask::{AskUser, Asked, PendingRequest, RequestKind as AskKind};
use super::claim::{DEFAULT_CLAIM_TTL, RenewError, keep_claim};
use super::durable::{CallLog, CallState, Durable, repair};
use super::error::{RunnerError, RunnerErrorKind, RunnerResult};
use super::live::{FanoutChannel, LiveChannel, LiveEvent, LiveFrame, with_live};
use super::pairing;
use super::retry::{self, Window};
use super::turn::{EndedTurn, TurnContext, TurnEvaluator, TurnInfo};
use crate::agent::{
    Agent, CancelToken, FailureReason, Observer, Outcome, RunFailure, RunObserver, RunOptions,
    RunResult,
};
use crate::message::{Message, ToolResult, Usage};
use crate::session::{
    Answer, Claim, ClaimAttempt, CommandKey, Commit, Committed, Fence, HistoryItem, MAX_PAGE,
    MessageKind, PostedMessage, RequestKind, RequestSpec, RunEnd, RunRecord, RunStatus, Scope,
    SessionStore, StoreError, StoreErrorKind, ThreadKey, ThreadStatus, ToolCallStatus, Trigger,
    Write, load_history,
};

use crate::tools::ToolOutput;

/// The cursor that moves when a message is posted.
pub const ASKED: &str = "asked";
/// The cursor that moves when a message is consumed (a prompt, a reply, steering).
pub const TAKEN: &str = "taken";

/// The seq up to which the thread's agent has been told what happened: the
/// last posted message a run of the thread took in (seed 004's `last_seen`;
/// 0 before any). Messages after it wait for the thread's next turn or run.
pub async fn last_seen(store: &dyn SessionStore, thread: &ThreadKey) -> Result<u64, StoreError> {
    store.cursor(thread, TAKEN).await
}

/// How long a command delivered twice at once waits for the other delivery's record.
const DUPLICATE_WAIT: Duration = Duration::from_secs(2);

/// How a runner is set up.
#[derive(Clone)]
#[non_exhaustive]
pub struct RunnerConfig {
    /// Where runs' live frames go (an in-process fan-out by default).
    pub live: Arc<dyn LiveChannel>,
    /// How long a thread claim lasts without renewal (30 s). It is renewed
    /// every third of it; it must exceed the clock skew between runners.
    pub claim_ttl: Duration,
    /// Whether the agent gets the `ask_user` tool, which pauses its run until someone answers.
    pub ask_user: bool,
    /// The author name the runner records its own actions under.
    pub agent_name: String,
    /// Entered around each turn, inside its span.
    pub turn_context: Option<Arc<dyn TurnContext>>,
    /// Given each turn as it ends, to judge it in the background.
    pub evaluators: Vec<Arc<dyn TurnEvaluator>>,
    /// Kept in the record of every run this runner starts
    /// ([`RunRecord::labels`](crate::session::RunRecord::labels)), for
    /// example the model it runs with, so that a process answering the run
    /// later can set itself up alike. A run resumed keeps its own.
    pub run_labels: BTreeMap<String, String>,
    /// Where this runner's runs crash, in crash-recovery tests (feature `failpoints`).
    #[cfg(feature = "failpoints")]
    pub failpoint: Option<Arc<dyn crate::failpoint::Failpoint>>,
}

impl Default for RunnerConfig {
    fn default() -> Self {
        Self {
            live: Arc::new(FanoutChannel::default()),
            claim_ttl: DEFAULT_CLAIM_TTL,
            ask_user: false,
            agent_name: "assistant".to_owned(),
            turn_context: None,
            evaluators: Vec::new(),
            run_labels: BTreeMap::new(),
            #[cfg(feature = "failpoints")]
            failpoint: None,
        }
    }
}

impl RunnerConfig {
    /// The same config with live frames going to `live`.
    pub fn with_live(mut self, live: Arc<dyn LiveChannel>) -> Self {
        self.live = live;
        self
    }

    /// The same config with claims lasting `ttl`.
    pub fn with_claim_ttl(mut self, ttl: Duration) -> Self {
        self.claim_ttl = ttl;
        self
    }

    /// The same config with `context` entered around each turn.
    pub fn with_turn_context(mut self, context: Arc<dyn TurnContext>) -> Self {
        self.turn_context = Some(context);
        self
    }

    /// The same config with one more evaluator of ended turns.
    pub fn with_evaluator(mut self, evaluator: Arc<dyn TurnEvaluator>) -> Self {
        self.evaluators.push(evaluator);
        self
    }

    /// The same config with one more label on the runs it starts (the same name replaces).
    pub fn with_run_label(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.run_labels.insert(name.into(), value.into());
        self
    }

    /// The same config with runs crashing where `failpoint` says (feature `failpoints`).
    #[cfg(feature = "failpoints")]
    pub fn with_failpoint(mut self, failpoint: Arc<dyn crate::failpoint::Failpoint>) -> Self {
        self.failpoint = Some(failpoint);
        self
    }

    /// The same config with (or without) the `ask_user` tool.
    pub fn with_ask_user(mut self, ask_user: bool) -> Self {
        self.ask_user = ask_user;
        self
    }
}

impl std::fmt::Debug for RunnerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunnerConfig")
            .field("claim_ttl", &self.claim_ttl)
            .field("ask_user", &self.ask_user)
            .field("agent_name", &self.agent_name)
            .finish_non_exhaustive()
    }
}

/// A run segment started by a [`Runner`] (a new run, or a paused one resumed).
#[derive(Debug, Clone)]
pub struct RunHandle {
    run_id: String,
    thread: ThreadKey,
    result: watch::Receiver<Option<RunResult>>,
}

impl RunHandle {
    /// The run's id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The run's thread.
    pub fn thread(&self) -> &ThreadKey {
        &self.thread
    }

    /// Waits for the segment to end (completed, failed, stopped or paused) and returns what it did.
    pub async fn wait(&self) -> RunResult {
        let mut rx = self.result.clone();
        let lost = || RunResult {
            run_id: self.run_id.clone(),
            outcome: Outcome::Failed {
                reason: FailureReason::Other("runner_failed".to_owned()),
                message: "the runner's task for this run ended without a result".to_owned(),
            },
            turns: 0,
            tool_calls: 0,
            usage: Usage::UNKNOWN,
            approvals: Vec::new(),
        };
        match rx.wait_for(Option::is_some).await {
            Ok(r) => r.clone().unwrap_or_else(lost),
            Err(_) => lost(),
        }
    }
}

/// What posting a message, or an answer, did.
#[derive(Debug, Clone)]
pub struct Sent {
    /// The posted message's id (`None` for an answer given directly).
    pub message_id: Option<String>,
    /// The seq of its event in the thread's log.
    pub seq: u64,
    /// The run it started or resumed; `None` when it started none, which is
    /// not a failure: the thread's run is active (here or in another process)
    /// and the message steers it or waits for the next turn; an answer leaves
    /// requests unanswered; another message resumed the run first; or the
    /// runner is closed.
    pub run: Option<RunHandle>,
}

/// What [`Runner::resume`] did.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Resumed {
    /// The run resumed here.
    Resumed(RunHandle),
    /// The thread has no run of that id.
    NotFound,
    /// The run is not paused (it runs or has ended).
    NotPaused {
        /// Its status.
        status: RunStatus,
    },
    /// The run waits for `open` more answers.
    Unanswered {
        /// How many requests are unanswered.
        open: usize,
    },
    /// Another runner holds the thread (or resumed the run first): nothing was done here.
    Busy,
}

/// A command from a surface, carried out once per command id by [`Runner::execute`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Command {
    /// Post a message (it starts, steers or answers a run).
    Send {
        /// The thread.
        thread: String,
        /// The text.
        text: String,
        /// The message's id (one is made when `None`).
        message_id: Option<String>,
    },
    /// Post a notice: for people, never a prompt or a reply.
    Notice {
        /// The thread.
        thread: String,
        /// The text.
        text: String,
    },
    /// Answer a request of a paused run.
    Answer {
        /// The thread.
        thread: String,
        /// The paused run.
        run_id: String,
        /// The request.
        request_id: String,
        /// For an approval: approved or not.
        approved: Option<bool>,
        /// The answer's text (an approval's reason).
        text: Option<String>,
    },
    /// Stop a run of this process.
    Stop {
        /// The run.
        run_id: String,
    },
}

/// Runs an agent in session threads.
#[derive(Clone)]
pub struct Runner {
    pub(super) inner: Arc<Inner>,
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner")
            .field("agent", &self.inner.agent)
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

pub(super) struct Inner {
    agent: Agent,
    pub(super) store: Arc<dyn SessionStore>,
    pub(super) config: RunnerConfig,
    closed: AtomicBool,
    state: Mutex<State>,
    /// Runs, hand-overs and claimants in flight (for `drain`).
    busy: AtomicUsize,
    idle: Notify,
}

#[derive(Default)]
struct State {
    /// This process's runs, by thread.
    runs: HashMap<ThreadKey, Active>,
    /// The holders of the claims this process holds.
    holders: HashSet<String>,
    /// Threads with a look scheduled (their holder may have died).
    retakes: HashMap<ThreadKey, tokio::task::JoinHandle<()>>,
    /// Threads a waiter of this process follows and takes over itself (ADR 0180).
    followed: HashMap<ThreadKey, usize>,
}

struct Active {
    cancel: CancelToken,
    handle: RunHandle,
}

/// Counts a task as busy while it lives.
struct BusyGuard(Arc<Inner>);

impl BusyGuard {
    fn new(inner: &Arc<Inner>) -> Self {
        inner.busy.fetch_add(1, Ordering::SeqCst);
        Self(inner.clone())
    }
}

impl Drop for BusyGuard {
    fn drop(&mut self) {
        if self.0.busy.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

pub(super) fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::now_v7().simple())
}

/// What a claimant does beyond planning: an explicit answer to record first.
pub(super) struct Explicit {
    run_id: String,
    request_id: String,
    answer: Answer,
    /// The command that carries the answer out, recorded in the answer's commit.
    command: Option<CommandKey>,
}

/// What a claimant decided to run.
pub(super) enum Segment {
    /// A new run carrying out these posted messages.
    New {
        run_id: String,
        prompt: Vec<PostedMessage>,
    },
    /// A paused run, all of whose requests are answered, resumed.
    Resume { run: Box<RunRecord> },
}

impl Runner {
    /// A runner of `agent` over `store`, with the default config.
    pub fn new(agent: Agent, store: Arc<dyn SessionStore>) -> Self {
        Self::with_config(agent, store, RunnerConfig::default())
    }

    /// A runner of `agent` over `store`, set up by `config`.
    pub fn with_config(agent: Agent, store: Arc<dyn SessionStore>, config: RunnerConfig) -> Self {
        Self {
            inner: Arc::new(Inner {
                agent,
                store,
                config,
                closed: AtomicBool::new(false),
                state: Mutex::new(State::default()),
                busy: AtomicUsize::new(0),
                idle: Notify::new(),
            }),
        }
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn SessionStore> {
        &self.inner.store
    }

    /// Posts a message to `thread` as `author` and acts on it: it starts a run
    /// in an idle thread, steers a running one, answers a paused one.
    ///
    /// A `message_id` already used in the workspace is refused (`IdInUse`) and
    /// nothing is done.
    pub async fn send(
        &self,
        thread: &ThreadKey,
        author: &str,
        text: &str,
        message_id: Option<&str>,
    ) -> RunnerResult<Sent> {
        let (id, seq) = self
            .inner
            .post(thread, author, text, message_id, MessageKind::Message, None)
            .await?;
        let run = self.inner.take(thread, None).await?;
        Ok(Sent {
            message_id: Some(id),
            seq,
            run,
        })
    }

    /// Answers request `request_id` of the paused run `run_id`, resuming the
    /// run once all its requests are answered.
    pub async fn answer(
        &self,
        thread: &ThreadKey,
        run_id: &str,
        request_id: &str,
        answer: Answer,
    ) -> RunnerResult<Sent> {
        self.answer_as(thread, run_id, request_id, answer, None)
            .await
    }

    /// [`Self::answer`], with the command `key` recorded in the answer's commit.
    async fn answer_as(
        &self,
        thread: &ThreadKey,
        run_id: &str,
        request_id: &str,
        answer: Answer,
        command: Option<CommandKey>,
    ) -> RunnerResult<Sent> {
        let explicit = Explicit {
            run_id: run_id.to_owned(),
            request_id: request_id.to_owned(),
            answer,
            command,
        };
        let run = self.inner.take(thread, Some(explicit)).await?;
        let seq = self
            .inner
            .store
            .thread(thread)
            .await?
            .map_or(0, |info| info.head_seq);
        Ok(Sent {
            message_id: None,
            seq,
            run,
        })
    }

    /// Resumes `run_id` of `thread` if it is paused with every request
    /// answered, and says what it did; it never starts another run (a thread's
    /// untaken messages wait for `send`, `take_thread` or `recover`).
    pub async fn resume(&self, thread: &ThreadKey, run_id: &str) -> RunnerResult<Resumed> {
        let run = match self.inner.store.run(&thread.scope, run_id).await? {
            Some(run) if run.thread == thread.thread => run,
            _ => return Ok(Resumed::NotFound),
        };
        if run.status != RunStatus::Paused {
            return Ok(Resumed::NotPaused { status: run.status });
        }
        let open = run.requests.iter().filter(|r| r.answer.is_none()).count();
        if open > 0 {
            return Ok(Resumed::Unanswered { open });
        }
        match self.inner.take(thread, None).await? {
            Some(handle) if handle.run_id == run_id => Ok(Resumed::Resumed(handle)),
            // Another runner holds the thread, or resumed the run first.
            _ => Ok(Resumed::Busy),
        }
    }

    /// Takes every thread whose messages were posted and not taken (a runner
    /// died between posting and claiming, or while it ran): call it when the
    /// application starts. Returns the runs it started.
    pub async fn recover(&self) -> RunnerResult<Vec<RunHandle>> {
        let threads = self
            .inner
            .store
            .lagging_threads(ASKED, TAKEN, MAX_PAGE)
            .await?;
        let mut started = Vec::new();
        for thread in threads {
            if let Some(h) = self.inner.take(&thread, None).await? {
                started.push(h);
            }
        }
        Ok(started)
    }

    /// Claims `thread` unless a live claim holds it, and carries out what it
    /// was asked (untaken messages, an answered pause), after recording a run
    /// left behind as abandoned. Returns the run it started or resumed.
    pub async fn take_thread(&self, thread: &ThreadKey) -> RunnerResult<Option<RunHandle>> {
        self.inner.take(thread, None).await
    }

    /// Counts a waiter following `thread` (`on`) or done with it: a followed
    /// thread is taken over by its waiter, not by the scheduled look.
    pub(super) fn follow(&self, thread: &ThreadKey, on: bool) {
        let mut state = self.inner.lock();
        let count = state.followed.entry(thread.clone()).or_default();
        if on {
            *count += 1;
        } else {
            *count = count.saturating_sub(1);
            if *count == 0 {
                state.followed.remove(thread);
            }
        }
    }

    /// The thread of this process's run `run_id` of the workspace `scope`, if it runs here.
    fn running_in(&self, scope: &Scope, run_id: &str) -> Option<ThreadKey> {
        self.inner
            .lock()
            .runs
            .values()
            .find(|a| a.handle.run_id == run_id && a.handle.thread.scope == *scope)
            .map(|a| a.handle.thread.clone())
    }

    /// Cancels this process's run `run_id` of the workspace `scope`. Returns
    /// whether there was one to stop; a run of another workspace is never
    /// stopped, whatever its id.
    pub fn stop(&self, scope: &Scope, run_id: &str) -> bool {
        let state = self.inner.lock();
        match state
            .runs
            .values()
            .find(|a| a.handle.run_id == run_id && a.handle.thread.scope == *scope)
        {
            Some(active) => {
                active.cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// Stops every run of this process, waits for them to end, and starts no more.
    pub async fn aclose(&self) {
        self.inner.closed.store(true, Ordering::SeqCst);
        {
            let mut state = self.inner.lock();
            for active in state.runs.values() {
                active.cancel.cancel();
            }
            for (_, retake) in state.retakes.drain() {
                retake.abort();
            }
        }
        self.drain().await;
    }

    /// Waits until this process has no run, hand-over or claimant in flight.
    pub async fn drain(&self) {
        loop {
            let notified = self.inner.idle.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            if self.inner.busy.load(Ordering::SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }

    /// This process's run in `thread`, if there is one.
    pub fn running(&self, thread: &ThreadKey) -> Option<RunHandle> {
        self.inner.lock().runs.get(thread).map(|a| a.handle.clone())
    }

    /// A run's live frames from now until its segment ends. A run that is not
    /// running here (ended, paused, or in another process) yields one end
    /// marker at once, with the outcome the store has for it.
    pub fn watch(&self, scope: &Scope, run_id: &str) -> BoxStream<'static, LiveFrame> {
        if let Some(stream) = self.inner.config.live.watch(run_id) {
            return stream;
        }
        let store = self.inner.store.clone();
        let scope = scope.clone();
        let run_id = run_id.to_owned();
        futures::stream::once(async move {
            let (outcome, reason) = match store.run(&scope, &run_id).await {
                Ok(Some(run)) => (Some(run.status.as_str().to_owned()), run.reason),
                _ => (None, None),
            };
            LiveFrame {
                run_id,
                event: LiveEvent::End { outcome, reason },
            }
        })
        .boxed()
    }

    /// Carries out `command` sent by `sender` to the workspace `scope`, once per
    /// `command_id`: a repeated id returns the remembered result and carries
    /// nothing out, whatever command comes with it. The check and the record
    /// are one transaction with the command's own write, so two concurrent
    /// deliveries carry it out once, also across processes. A rejection is the
    /// result (`{"type": "rejected", ...}`), not an error, and is not remembered.
    pub async fn execute(
        &self,
        scope: &Scope,
        sender: &str,
        command: Command,
        command_id: &str,
    ) -> RunnerResult<Value> {
        if command_id.is_empty() || command_id.contains('\0') {
            return Ok(rejected(
                RunnerErrorKind::InvalidArgument,
                "a command id must be non-empty and hold no NUL character",
            ));
        }
        let key = CommandKey {
            scope: scope.clone(),
            sender: sender.to_owned(),
            command_id: command_id.to_owned(),
        };
        if let Some(result) = self.inner.store.command_result(&key).await? {
            self.follow_up(scope, &result).await?;
            return Ok(result);
        }
        let outcome = match command {
            Command::Send {
                thread,
                text,
                message_id,
            } => {
                let thread = scope.thread(thread);
                let id = message_id.unwrap_or_else(|| new_id("msg"));
                let result = json!({"type": "posted", "thread": thread.thread, "message_id": id});
                match self
                    .inner
                    .post(
                        &thread,
                        sender,
                        &text,
                        Some(&id),
                        MessageKind::Message,
                        Some((key.clone(), result.clone())),
                    )
                    .await
                {
                    Ok(_) => {
                        self.inner.take(&thread, None).await?;
                        Ok(result)
                    }
                    Err(e) => Err(e),
                }
            }
            Command::Notice { thread, text } => {
                let thread = scope.thread(thread);
                let id = new_id("msg");
                let result = json!({"type": "posted", "thread": thread.thread, "message_id": id});
                self.inner
                    .post(
                        &thread,
                        sender,
                        &text,
                        Some(&id),
                        MessageKind::Notice,
                        Some((key.clone(), result.clone())),
                    )
                    .await
                    .map(|_| result)
            }
            Command::Answer {
                thread,
                run_id,
                request_id,
                approved,
                text,
            } => {
                let thread = scope.thread(thread);
                let answer = Answer {
                    author: sender.to_owned(),
                    approved,
                    text,
                    message_id: None,
                };
                // The command is recorded in the commit that records the answer.
                match self
                    .answer_as(&thread, &run_id, &request_id, answer, Some(key.clone()))
                    .await
                {
                    Ok(_) => {
                        Ok(self
                            .inner
                            .store
                            .command_result(&key)
                            .await?
                            .unwrap_or_else(|| {
                                rejected(
                                    RunnerErrorKind::NotFound,
                                    "the thread has no run with that request to answer",
                                )
                            }))
                    }
                    Err(e) => Err(e),
                }
            }
            Command::Stop { run_id } => {
                let stopped = self.running_in(scope, &run_id);
                let result = json!({"type": "stopped", "run_id": run_id, "stopped": stopped});
                match stopped {
                    Some(thread) => {
                        // The stop request and the command, one commit; then the cancel.
                        let commit = Commit::new()
                            .cursor_to_head(super::remote::stop_cursor(&run_id))
                            .command(key.clone(), result.clone());
                        match self.inner.store.commit(&thread, commit).await {
                            Ok(_) => {
                                self.stop(scope, &run_id);
                                Ok(result)
                            }
                            Err(e) => Err(e.into()),
                        }
                    }
                    None => {
                        let result = json!({"type": "stopped", "run_id": run_id, "stopped": false});
                        Ok(self
                            .inner
                            .store
                            .record_command(&key, result.clone())
                            .await?
                            .unwrap_or(result))
                    }
                }
            }
        };
        match outcome {
            Ok(result) => Ok(result),
            Err(e) if e.is_duplicate_command() => {
                let remembered = self.inner.store.command_result(&key).await?;
                if let Some(result) = &remembered {
                    self.follow_up(scope, result).await?;
                }
                Ok(remembered
                    .unwrap_or_else(|| rejected(RunnerErrorKind::InvalidState, e.message())))
            }
            Err(e) if e.kind() == RunnerErrorKind::Store => Err(e),
            Err(e) => Ok(rejected(e.kind(), e.message())),
        }
    }
}

impl Runner {
    /// After a command found carried out already: a posted message whose run
    /// may have been abandoned (its runner died) gets its thread taken up, now
    /// or once the dead claim lapses, so the work is done (ADR 0252).
    async fn follow_up(&self, scope: &Scope, remembered: &Value) -> RunnerResult<()> {
        if remembered["type"] == "posted"
            && let Some(thread) = remembered["thread"].as_str()
        {
            self.inner.take(&scope.thread(thread), None).await?;
        }
        Ok(())
    }
}

fn rejected(kind: RunnerErrorKind, message: &str) -> Value {
    json!({"type": "rejected", "kind": kind.as_str(), "message": message})
}

impl RunnerError {
    fn is_duplicate_command(&self) -> bool {
        std::error::Error::source(self)
            .and_then(|s| s.downcast_ref::<StoreError>())
            .is_some_and(|s| s.kind() == StoreErrorKind::DuplicateCommand)
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Posts a message (or notice) and moves `asked` to it in one commit.
    async fn post(
        &self,
        thread: &ThreadKey,
        author: &str,
        text: &str,
        message_id: Option<&str>,
        kind: MessageKind,
        command: Option<(CommandKey, Value)>,
    ) -> RunnerResult<(String, u64)> {
        let id = message_id.map_or_else(|| new_id("msg"), str::to_owned);
        let mut commit = Commit::new().write(Write::PostMessage {
            id: id.clone(),
            author: author.to_owned(),
            kind,
            text: text.to_owned(),
        });
        if let Some((key, result)) = command {
            commit = commit.command(key, result);
        }
        // A sender rides out a short outage as a run does (ADR 0250).
        let window = Window::within(self.config.claim_ttl);
        let head = retry::call(&window, || self.store.thread(thread))
            .await?
            .map_or(0, |info| info.head_seq);
        if kind == MessageKind::Message {
            // The message's seq is the head's next unless another post comes
            // first; then `asked` is moved on to it right after.
            commit = commit.cursor(ASKED, head + 1);
        }
        let commit = retry::keyed(thread, commit);
        let done = retry::commit(self.store.as_ref(), thread, commit, &window).await?;
        let seq = match done.seqs.first() {
            Some(seq) => *seq,
            // Taken in by an attempt whose answer was lost: its seq is the message's.
            None => retry::call(&window, || self.store.message(&thread.scope, &id))
                .await?
                .map_or(done.head_seq, |m| m.seq),
        };
        if kind == MessageKind::Message && seq != head + 1 {
            retry::call(&window, || {
                self.store.commit(thread, Commit::new().cursor(ASKED, seq))
            })
            .await?;
        }
        Ok((id, seq))
    }

    fn holds(&self, holder: &str) -> bool {
        self.lock().holders.contains(holder)
    }

    /// Claims the thread and carries out what it was asked: the core of send,
    /// answer, resume, recover and hand-over.
    async fn take(
        self: &Arc<Self>,
        thread: &ThreadKey,
        explicit: Option<Explicit>,
    ) -> RunnerResult<Option<RunHandle>> {
        self.take_for(thread, explicit, None).await
    }

    /// [`Self::take`]; with `carry` (a posted message's id), a thread with
    /// nothing else to do carries that message's abandoned run on (ADR 0285).
    pub(super) async fn take_for(
        self: &Arc<Self>,
        thread: &ThreadKey,
        explicit: Option<Explicit>,
        carry: Option<&str>,
    ) -> RunnerResult<Option<RunHandle>> {
        if self.closed() {
            return Ok(None);
        }
        if explicit.is_none() && self.lock().runs.contains_key(thread) {
            // Our run in this thread steers or hands over.
            return Ok(None);
        }
        let _busy = BusyGuard::new(self);
        let holder = new_id("claim");
        self.lock().holders.insert(holder.clone());
        let began = Instant::now();
        let window = Window::within(self.config.claim_ttl);
        let command = explicit.as_ref().and_then(|e| e.command.clone());
        let attempt = loop {
            let attempt = retry::call(&window, || {
                self.store
                    .acquire_claim(thread, &holder, self.config.claim_ttl)
            })
            .await;
            // A command delivered twice at once: the other delivery holds the
            // thread; its record (once in) is this one's result.
            if let (Ok(ClaimAttempt::Busy(_)), Some(key)) = (&attempt, &command)
                && Instant::now() < began + DUPLICATE_WAIT.min(self.config.claim_ttl)
            {
                if self.store.command_result(key).await?.is_some() {
                    self.lock().holders.remove(&holder);
                    return Err(StoreError::new(
                        StoreErrorKind::DuplicateCommand,
                        "the command was carried out by another delivery",
                    )
                    .into());
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
            break attempt;
        };
        let claim = match attempt {
            Ok(ClaimAttempt::Granted(claim)) => claim,
            Ok(ClaimAttempt::Busy(theirs)) => {
                self.lock().holders.remove(&holder);
                if explicit.is_some() {
                    return Err(RunnerError::new(
                        RunnerErrorKind::InvalidState,
                        "the thread is busy: another runner holds it; answer again once it is paused",
                    ));
                }
                if !self.holds(&theirs.holder) {
                    self.schedule_retake(thread);
                }
                return Ok(None);
            }
            Err(e) => {
                self.lock().holders.remove(&holder);
                return Err(e.into());
            }
        };
        let asked_at_read = self.store.cursor(thread, ASKED).await.unwrap_or(0);
        let planned = self.plan(thread, &claim, began, explicit, carry).await;
        match planned {
            Ok(Some(segment)) => {
                let handle = self.start_segment(thread.clone(), claim, began, segment);
                Ok(Some(handle))
            }
            other => {
                if let Err(e) = self.store.release_claim(thread, &claim).await {
                    tracing::warn!(error = %e, "releasing a thread claim failed; it lapses after its TTL");
                }
                self.lock().holders.remove(&holder);
                let asked_now = self.store.cursor(thread, ASKED).await.unwrap_or(0);
                if asked_now > asked_at_read {
                    self.hand_over(thread.clone());
                }
                other.map(|_| None)
            }
        }
    }

    /// Under the claim: records runs left behind as abandoned, then decides
    /// what to run (and records its start or resumption with the cursor).
    async fn plan(
        self: &Arc<Self>,
        thread: &ThreadKey,
        claim: &Claim,
        began: Instant,
        explicit: Option<Explicit>,
        carry: Option<&str>,
    ) -> RunnerResult<Option<Segment>> {
        let fence = claim.fence();
        let Some(mut info) = self.store.thread(thread).await? else {
            return Ok(None);
        };
        if info.status == ThreadStatus::Running
            && let Some(left) = info.active_run.clone()
        {
            self.abandon(thread, claim, began, &left).await?;
            info = match self.store.thread(thread).await? {
                Some(info) => info,
                None => return Ok(None),
            };
        }
        if let Some(explicit) = explicit {
            let mut commit = Commit::new().fenced(fence.clone());
            if let Some(key) = explicit.command {
                // Whether this answer is the run's last: then it resumes now.
                let resumed = match self.store.run(&thread.scope, &explicit.run_id).await? {
                    Some(run) => run
                        .requests
                        .iter()
                        .all(|r| r.answer.is_none() == (r.spec.id == explicit.request_id)),
                    None => false,
                };
                let result = json!({
                    "type": "answered",
                    "run_id": explicit.run_id,
                    "request_id": explicit.request_id,
                    "resumed": resumed,
                });
                commit = commit.command(key, result);
            }
            commit = commit.write(Write::AnswerRequest {
                run_id: explicit.run_id,
                request_id: explicit.request_id,
                answer: explicit.answer,
            });
            self.store.commit(thread, commit).await?;
        }
        let taken = self.store.cursor(thread, TAKEN).await?;
        let untaken: Vec<PostedMessage> = self
            .store
            .messages(thread, taken, MAX_PAGE)
            .await?
            .into_iter()
            .filter(|m| m.kind == MessageKind::Message)
            .collect();
        if info.status == ThreadStatus::Paused
            && let Some(paused) = info.active_run.clone()
        {
            let Some(run) = self.store.run(&thread.scope, &paused).await? else {
                return Ok(None);
            };
            let open: Vec<&RequestSpec> = run
                .requests
                .iter()
                .filter(|r| r.answer.is_none())
                .map(|r| &r.spec)
                .collect();
            let mut commit = Commit::new().fenced(fence.clone());
            let requested_by;
            if open.is_empty() {
                requested_by = run
                    .requests
                    .iter()
                    .filter_map(|r| r.answer.as_ref())
                    .map(|a| a.author.clone())
                    .next_back();
            } else {
                // The oldest untaken message is the reply: it answers every
                // open question and declines every open approval with its text.
                let Some(reply) = untaken.first() else {
                    return Ok(None);
                };
                for spec in open {
                    commit = commit.write(Write::AnswerRequest {
                        run_id: run.run_id.clone(),
                        request_id: spec.id.clone(),
                        answer: Answer {
                            author: reply.author.clone(),
                            approved: (spec.kind == RequestKind::Approval).then_some(false),
                            text: Some(reply.text.clone()),
                            message_id: Some(reply.id.clone()),
                        },
                    });
                }
                commit = commit.cursor(TAKEN, reply.seq);
                requested_by = Some(reply.author.clone());
            }
            let commit = commit.write(Write::ResumeRun {
                run_id: run.run_id.clone(),
                requested_by,
            });
            self.store.commit(thread, commit).await?;
            let Some(run) = self.store.run(&thread.scope, &paused).await? else {
                return Ok(None);
            };
            return Ok(Some(Segment::Resume { run: Box::new(run) }));
        }
        let Some(first) = untaken.first() else {
            return match carry {
                Some(message_id) => self.carry_segment(thread, &fence, message_id).await,
                None => Ok(None),
            };
        };
        let prompt: Vec<PostedMessage> = untaken
            .iter()
            .take_while(|m| m.author == first.author)
            .cloned()
            .collect();
        let through = prompt.last().map_or(taken, |m| m.seq);
        let run_id = new_id("run");
        self.store
            .commit(
                thread,
                Commit::new()
                    .fenced(fence)
                    .write(Write::StartRun {
                        run_id: run_id.clone(),
                        trigger: Trigger::Message,
                        requested_by: Some(first.author.clone()),
                        message_ids: prompt.iter().map(|m| m.id.clone()).collect(),
                        labels: self.config.run_labels.clone(),
                    })
                    .cursor(TAKEN, through),
            )
            .await?;
        Ok(Some(Segment::New { run_id, prompt }))
    }

    /// Records the run `left` (running, but no runner of ours drives it: its
    /// process died) as failed/abandoned, after giving its last answer's
    /// unanswered calls their results: from the records, or through the call
    /// pipeline (a call never allowed is decided again by its hooks; a started
    /// idempotent call is replayed under its effect keys), under the claim,
    /// kept alive meanwhile (ADR 0241).
    async fn abandon(
        &self,
        thread: &ThreadKey,
        claim: &Claim,
        began: Instant,
        left: &str,
    ) -> RunnerResult<()> {
        let fence = claim.fence();
        let entries = self.store.history(thread, 0).await?;
        // The run's tool results so far, for its `max_tool_calls` (ADR 0244).
        let prior = entries
            .iter()
            .filter(|e| {
                e.run_id.as_deref() == Some(left) && matches!(e.message, Message::ToolResult(_))
            })
            .count();
        let mut history: Vec<Message> = entries.into_iter().map(|e| e.message).collect();
        let records: HashMap<String, CallState> = self
            .store
            .tool_calls(&thread.scope, left)
            .await?
            .into_iter()
            .map(|r| {
                let state = match (r.status, r.result) {
                    (ToolCallStatus::Finished, Some(result)) => CallState::Finished(ToolOutput {
                        text: result.content,
                        is_error: result.is_error,
                    }),
                    _ => CallState::Started,
                };
                (r.call_id, state)
            })
            .collect();
        let repaired = if super::durable::unanswered(&history).is_empty() {
            Vec::new()
        } else {
            // Hooks and tools may take a while: the claim is renewed meanwhile,
            // and a lost claim cancels the calls (their commits are fenced anyway).
            let done = CancelToken::new();
            let lost = CancelToken::new();
            let keeper = self.keep(thread, claim, began, &done, &lost);
            let recorded = Arc::new(Mutex::new(HashMap::new()));
            let log: Arc<dyn CallLog> = Arc::new(StoreLog {
                commits: SegmentCommits::new(
                    self.store.clone(),
                    thread.clone(),
                    fence.clone(),
                    Window::claim(lost.clone()),
                ),
                recorded: recorded.clone(),
            });
            let agent = self
                .agent
                .clone()
                .with_tools(Durable::wrap(self.agent.tools(), &log));
            let repaired = repair(
                &mut history,
                &agent,
                &super::durable::LeftRun {
                    session_id: &thread.thread,
                    run_id: left,
                    prior,
                    ask_user: self.config.ask_user,
                },
                &records,
                &lost,
            )
            .await;
            done.cancel();
            let _ = keeper.await;
            let recorded = recorded.lock().unwrap_or_else(PoisonError::into_inner);
            repaired
                .into_iter()
                .map(|(result, from_record)| {
                    let refers = from_record || recorded.get(&result.call_id) == Some(&result);
                    (result, refers)
                })
                .collect()
        };
        let mut commit = Commit::new().fenced(fence.clone());
        if !repaired.is_empty() {
            commit = commit.write(Write::AppendHistory {
                run_id: Some(left.to_owned()),
                items: repaired
                    .into_iter()
                    .map(|(result, recorded)| {
                        if recorded {
                            HistoryItem::ToolResult {
                                call_id: result.call_id,
                            }
                        } else {
                            HistoryItem::Message {
                                message: Message::ToolResult(result),
                            }
                        }
                    })
                    .collect(),
            });
        }
        commit = commit.write(Write::EndRun {
            run_id: left.to_owned(),
            end: RunEnd::Failed {
                reason: "abandoned".to_owned(),
                message:
                    "the runner that drove this run stopped (its claim lapsed) before the run ended"
                        .to_owned(),
            },
        });
        let commit = retry::keyed(thread, commit);
        retry::commit(
            self.store.as_ref(),
            thread,
            commit,
            &Window::within(self.config.claim_ttl),
        )
        .await?;
        tracing::info!(
            run_id = left,
            "recorded a run left behind as failed/abandoned"
        );
        Ok(())
    }

    /// Spawns the task that renews `claim` until `done`, cancelling `lost`
    /// when the claim is lost.
    fn keep(
        &self,
        thread: &ThreadKey,
        claim: &Claim,
        began: Instant,
        done: &CancelToken,
        lost: &CancelToken,
    ) -> tokio::task::JoinHandle<()> {
        let store = self.store.clone();
        let thread = thread.clone();
        let claim = claim.clone();
        let ttl = self.config.claim_ttl;
        let renew = move || {
            let store = store.clone();
            let thread = thread.clone();
            let claim = claim.clone();
            async move {
                match store.renew_claim(&thread, &claim, ttl).await {
                    Ok(_) => Ok(()),
                    Err(e) if e.kind() == StoreErrorKind::StaleClaim => Err(RenewError::Lost),
                    Err(e) => Err(RenewError::Failed(e.to_string())),
                }
            }
            .boxed()
        };
        tokio::spawn(keep_claim(ttl, began, renew, done.clone(), lost.clone()))
    }

    /// Schedules one look at `thread` after the claim TTL, in case its holder died.
    fn schedule_retake(self: &Arc<Self>, thread: &ThreadKey) {
        if self.closed() {
            return;
        }
        let mut state = self.lock();
        if state.retakes.contains_key(thread) {
            return;
        }
        let inner = self.clone();
        let key = thread.clone();
        let ttl = self.config.claim_ttl;
        let task = tokio::spawn(async move {
            tokio::time::sleep(ttl).await;
            inner.lock().retakes.remove(&key);
            if inner.lock().followed.contains_key(&key) {
                return;
            }
            let asked = inner.store.cursor(&key, ASKED).await.unwrap_or(0);
            let taken = inner.store.cursor(&key, TAKEN).await.unwrap_or(0);
            let paused = matches!(
                inner.store.thread(&key).await,
                Ok(Some(info)) if info.status != ThreadStatus::Idle
            );
            if (asked > taken || paused)
                && let Err(e) = inner.take(&key, None).await
            {
                tracing::warn!(error = %e, "a scheduled look at a busy thread failed");
            }
        });
        state.retakes.insert(thread.clone(), task);
    }

    /// Starts a task that takes the thread again (after a release).
    fn hand_over(self: &Arc<Self>, thread: ThreadKey) {
        if self.closed() {
            return;
        }
        let inner = self.clone();
        let busy = BusyGuard::new(self);
        tokio::spawn(async move {
            let _busy = busy;
            if let Err(e) = inner.take(&thread, None).await {
                tracing::warn!(error = %e, "handing a thread over failed");
            }
        });
    }

    /// Registers and spawns one run segment, which owns `claim` from here on.
    fn start_segment(
        self: &Arc<Self>,
        thread: ThreadKey,
        claim: Claim,
        began: Instant,
        segment: Segment,
    ) -> RunHandle {
        let run_id = match &segment {
            Segment::New { run_id, .. } => run_id.clone(),
            Segment::Resume { run } => run.run_id.clone(),
        };
        let (tx, rx) = watch::channel(None);
        let handle = RunHandle {
            run_id: run_id.clone(),
            thread: thread.clone(),
            result: rx,
        };
        let cancel = CancelToken::new();
        self.config.live.open(&run_id);
        self.lock().runs.insert(
            thread.clone(),
            Active {
                cancel: cancel.clone(),
                handle: handle.clone(),
            },
        );
        let inner = self.clone();
        let busy = BusyGuard::new(self);
        let span = tracing::info_span!(
            "run",
            run_id = %run_id,
            thread = %thread.thread,
            gen_ai.operation.name = "invoke_agent",
            gen_ai.conversation.id = %thread.thread,
        );
        tokio::spawn(
            async move {
                let _busy = busy;
                let info = TurnInfo {
                    thread: thread.clone(),
                    run_id: run_id.clone(),
                    requested_by: match &segment {
                        Segment::New { prompt, .. } => prompt.first().map(|m| m.author.clone()),
                        Segment::Resume { run } => run.requested_by.clone(),
                    },
                };
                let guard = inner.config.turn_context.as_ref().map(|c| c.enter(&info));
                let result = inner
                    .clone()
                    .segment(&thread, &claim, began, &run_id, segment, cancel)
                    .await;
                drop(guard);
                inner.evaluate(info, &result);
                if let Err(e) = inner.store.release_claim(&thread, &claim).await {
                    tracing::warn!(error = %e, "releasing a thread claim failed; it lapses after its TTL");
                }
                inner.config.live.close(
                    &run_id,
                    LiveEvent::End {
                        outcome: Some(result.outcome.name().to_owned()),
                        reason: result.outcome.reason().map(str::to_owned),
                    },
                );
                {
                    let mut state = inner.lock();
                    state.runs.remove(&thread);
                    state.holders.remove(&claim.holder);
                }
                let _ = tx.send(Some(result));
                inner.hand_over_if_asked(thread).await;
            }
            .instrument(span),
        );
        handle
    }

    /// Hands an ended turn to every evaluator; a failure is logged on the turn's span only.
    fn evaluate(&self, turn: TurnInfo, result: &RunResult) {
        if self.config.evaluators.is_empty() {
            return;
        }
        let ended = EndedTurn {
            turn,
            outcome: result.outcome.name(),
            reason: result.outcome.reason().map(str::to_owned),
            requests: result.turns,
            usage: result.usage,
        };
        for evaluator in &self.config.evaluators {
            let submitted =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| evaluator.submit(&ended)));
            match submitted {
                Ok(Ok(())) => {}
                Ok(Err(why)) => {
                    tracing::warn!(error = %why, "a turn evaluator failed; the turn is not affected");
                }
                Err(_) => tracing::warn!("a turn evaluator panicked; the turn is not affected"),
            }
        }
    }

    async fn hand_over_if_asked(self: &Arc<Self>, thread: ThreadKey) {
        let asked = self.store.cursor(&thread, ASKED).await.unwrap_or(0);
        let taken = self.store.cursor(&thread, TAKEN).await.unwrap_or(0);
        if asked > taken {
            self.hand_over(thread);
        }
    }

    /// Drives one segment to its end and records the end; returns what it did.
    async fn segment(
        self: Arc<Self>,
        thread: &ThreadKey,
        claim: &Claim,
        began: Instant,
        run_id: &str,
        segment: Segment,
        cancel: CancelToken,
    ) -> RunResult {
        let done = CancelToken::new();
        let lost = CancelToken::new();
        let keeper = self.keep(thread, claim, began, &done, &lost);
        // A stop asked from another process (ADR 0180).
        let stop_watch = tokio::spawn(super::remote::watch_stop(
            self.store.clone(),
            thread.clone(),
            run_id.to_owned(),
            super::remote::stop_poll(self.config.claim_ttl),
            cancel.clone(),
            done.clone(),
        ));
        let cancel_on_loss = {
            let lost = lost.clone();
            let cancel = cancel.clone();
            tokio::spawn(async move {
                lost.cancelled().await;
                cancel.cancel();
            })
        };
        // A panic of the runner's own steps (a store, the approved call)
        // ends the segment `failed/panicked`: the claim is released and
        // watchers get the end frame all the same (ADR 0240).
        let result =
            match AssertUnwindSafe(self.drive(thread, claim, run_id, segment, cancel, &lost))
                .catch_unwind()
                .await
            {
                Ok(result) => result,
                Err(panic) => {
                    let result = RunResult {
                        run_id: run_id.to_owned(),
                        outcome: crate::agent::panicked(panic.as_ref()),
                        turns: 0,
                        tool_calls: 0,
                        usage: Usage::UNKNOWN,
                        approvals: Vec::new(),
                    };
                    let recorded = AssertUnwindSafe(self.record_end(
                        thread,
                        &claim.fence(),
                        run_id,
                        &result,
                        Vec::new(),
                        Vec::new(),
                        None,
                        None,
                    ))
                    .catch_unwind()
                    .await;
                    if recorded.is_err() {
                        tracing::error!(run_id, "recording a panicked run's end panicked too");
                    }
                    result
                }
            };
        done.cancel();
        let _ = keeper.await;
        cancel_on_loss.abort();
        stop_watch.abort();
        result
    }

    async fn drive(
        &self,
        thread: &ThreadKey,
        claim: &Claim,
        run_id: &str,
        segment: Segment,
        cancel: CancelToken,
        lost: &CancelToken,
    ) -> RunResult {
        let fail = |reason: &str, message: String| RunResult {
            run_id: run_id.to_owned(),
            outcome: Outcome::Failed {
                reason: FailureReason::Other(reason.to_owned()),
                message,
            },
            turns: 0,
            tool_calls: 0,
            usage: Usage::UNKNOWN,
            approvals: Vec::new(),
        };
        let fence = claim.fence();
        let mut history = match load_history(self.store.as_ref(), thread).await {
            Ok(h) => h,
            Err(e) => {
                let result = fail("store_failed", format!("loading the history failed: {e}"));
                #[cfg(feature = "otel")]
                self.agent.count_run(&result.outcome);
                self.record_end(
                    thread,
                    &fence,
                    run_id,
                    &result,
                    Vec::new(),
                    Vec::new(),
                    None,
                    None,
                )
                .await;
                return result;
            }
        };
        let recorded = Arc::new(Mutex::new(HashMap::new()));
        #[allow(unused_mut)] // set only with the `failpoints` feature
        let mut commits = SegmentCommits::new(
            self.store.clone(),
            thread.clone(),
            fence.clone(),
            Window::claim(lost.clone()),
        );
        #[cfg(feature = "failpoints")]
        {
            commits.failpoint = self.config.failpoint.clone();
        }
        let log: Arc<dyn CallLog> = Arc::new(StoreLog {
            commits: commits.clone(),
            recorded: recorded.clone(),
        });
        let asked = Arc::new(Asked::default());
        let (requested_by, taken) = match &segment {
            Segment::New { prompt, .. } => (
                prompt.first().map(|m| m.author.clone()),
                prompt.last().map_or(0, |m| m.seq),
            ),
            Segment::Resume { run } => (
                run.requested_by.clone(),
                self.store.cursor(thread, TAKEN).await.unwrap_or(0),
            ),
        };
        let mut recorded_tools: HashSet<String> = self
            .agent
            .tools()
            .tools()
            .iter()
            .map(|t| t.name().to_owned())
            .collect();
        if self.config.ask_user {
            recorded_tools.insert(super::ask::ASK_USER.to_owned());
        }
        let durable = Arc::new(DurableRun {
            commits,
            run_id: run_id.to_owned(),
            recorded_tools,
            requested_by,
            state: Mutex::new(RunBook {
                persisted: history.len(),
                posted: VecDeque::new(),
                queued: VecDeque::new(),
                delivered: taken,
            }),
            recorded,
            asked: asked.clone(),
            pairing: Mutex::new(pairing::Pairing::default()),
        });
        let mut tools = Durable::wrap(self.agent.tools(), &log);
        if self.config.ask_user {
            let ask: Arc<dyn crate::tool::Tool> = Arc::new(AskUser::new(asked.clone()));
            tools.add_arc(Durable::one(ask, log.clone()));
        }
        let agent = self.agent.clone().with_tools(tools);
        // A new segment's first message is the agent's prompt, so its
        // SessionStart and UserPromptSubmit hooks fire as in any run; the
        // others follow as steering (docs/adr/0261).
        let mut first = None;
        match segment {
            Segment::New { prompt, .. } => {
                // An earlier run that ended with unanswered calls: each gets
                // a result saying what is known, before the new prompt (ADR 0251).
                self.answer_left_calls(thread, &mut history).await;
                let mut book = durable.book();
                let mut prompt = prompt.into_iter();
                if let Some(m) = prompt.next() {
                    book.posted.push_back((history.len(), m.id, m.text.clone()));
                    first = Some(m.text);
                }
                book.queued.extend(prompt.map(|m| (m.id, m.text)));
            }
            Segment::Resume { run } => {
                let text = self
                    .answers_text(&agent, &history, &run, thread, &cancel)
                    .await;
                history.push(Message::user(text));
            }
        }
        let options = RunOptions {
            run_id: Some(run_id.to_owned()),
            thread_id: Some(thread.thread.clone()),
            cancel,
            observer: Some(Observer(durable.clone())),
            #[cfg(feature = "failpoints")]
            failpoint: self.config.failpoint.clone(),
        };
        let live = self.config.live.clone();
        let frame_run = run_id.to_owned();
        let forward = live.clone();
        let mut result = with_live(
            live,
            run_id,
            agent.run_with(&mut history, first, options, &mut |event| {
                if let Some(event) = LiveEvent::from_agent(event) {
                    forward.send(LiveFrame {
                        run_id: frame_run.clone(),
                        event,
                    });
                }
            }),
        )
        .await;
        if lost.is_cancelled() && matches!(result.outcome, Outcome::Stopped { .. }) {
            result.outcome = Outcome::Stopped {
                reason: "claim_lost".to_owned(),
            };
        }
        let mut requests: Vec<PendingRequest> = asked.take();
        if matches!(result.outcome, Outcome::Paused { .. }) {
            // Typed: the calls the batch sent for approval, with the
            // arguments a hook rewrote (ADR 0242).
            requests.extend(result.approvals.iter().cloned().map(PendingRequest::from));
        }
        if !matches!(result.outcome, Outcome::Paused { .. }) {
            // A run never ends with a call unanswered (ADR 0251).
            let recorded = durable
                .recorded
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            for r in pairing::close_unanswered(&history, &recorded) {
                history.push(Message::ToolResult(r));
            }
        }
        let (items, _) = durable.items(&history);
        let delivered = durable.book().delivered;
        let held = durable.commits.take_held();
        self.record_end(
            thread,
            &fence,
            run_id,
            &result,
            held,
            items,
            Some((requests, delivered)),
            Some(&durable.commits),
        )
        .await;
        result
    }

    /// Gives each call of the history's last answer that has no result (its
    /// run ended first) the result its records hold, or a result saying it
    /// is unknown, appended to `history` (saved with the run's first commit).
    async fn answer_left_calls(&self, thread: &ThreadKey, history: &mut Vec<Message>) {
        if super::durable::unanswered(history).is_empty() {
            return;
        }
        let run_of_calls = match self.store.history(thread, 0).await {
            Ok(entries) => entries
                .into_iter()
                .rev()
                .find(|e| matches!(e.message, Message::Assistant { .. }))
                .and_then(|e| e.run_id),
            Err(_) => None,
        };
        let mut recorded = HashMap::new();
        if let Some(left) = run_of_calls
            && let Ok(records) = self.store.tool_calls(&thread.scope, &left).await
        {
            for r in records {
                if let (ToolCallStatus::Finished, Some(result)) = (r.status, r.result) {
                    recorded.insert(r.call_id, result);
                }
            }
        }
        for r in pairing::close_unanswered(history, &recorded) {
            history.push(Message::ToolResult(r));
        }
    }

    /// What the answers to a paused run's requests say, as the user's next
    /// message. The approved calls run here, together, through the call
    /// pipeline (capabilities, locks, cancellation, panic isolation, the
    /// recorded start, post-tool hooks; the approval is their decision, so no
    /// `PreToolUse` hook is asked again), with the arguments a hook's
    /// `updatedInput` gave them when it asked (ADR 0241, 0242).
    async fn answers_text(
        &self,
        agent: &Agent,
        history: &[Message],
        run: &RunRecord,
        thread: &ThreadKey,
        cancel: &CancelToken,
    ) -> String {
        let approved: Vec<(&RequestSpec, Option<&crate::message::ToolCall>)> = run
            .requests
            .iter()
            .filter(|r| {
                r.spec.kind == RequestKind::Approval
                    && r.answer.as_ref().and_then(|a| a.approved) == Some(true)
            })
            .map(|r| {
                let call = history
                    .iter()
                    .rev()
                    .flat_map(|m| m.tool_calls())
                    .find(|c| c.id == r.spec.call_id && c.name == r.spec.tool_name);
                (&r.spec, call)
            })
            .collect();
        let entries: Vec<crate::agent::PipelineCall<'_>> = approved
            .iter()
            .filter_map(|(spec, call)| {
                call.map(|call| crate::agent::PipelineCall {
                    call,
                    approved: Some(spec.arguments.as_ref().unwrap_or(&call.arguments)),
                })
            })
            .collect();
        let mut outputs: HashMap<String, ToolResult> = HashMap::new();
        if !entries.is_empty() {
            let run_id: Arc<str> = Arc::from(run.run_id.as_str());
            let hook_cx = crate::hooks::HookContext {
                session_id: thread.thread.clone(),
                run_id: run.run_id.clone(),
            };
            let pipeline = crate::agent::CallPipeline {
                #[cfg(feature = "failpoints")]
                failpoint: self.config.failpoint.as_ref(),
                ..agent.call_pipeline(&hook_cx, &run_id, cancel)
            };
            let ran = pipeline.run(&entries).await;
            outputs.extend(ran.results.into_iter().map(|r| (r.call_id.clone(), r)));
        }
        let mut parts = Vec::new();
        for request in &run.requests {
            let Some(answer) = &request.answer else {
                continue;
            };
            let spec = &request.spec;
            let text = answer.text.clone().unwrap_or_default();
            match spec.kind {
                RequestKind::Question => parts.push(text),
                RequestKind::Approval if answer.approved == Some(true) => {
                    parts.push(match outputs.remove(&spec.call_id) {
                        Some(result) => format!(
                            "I approved the call {} ({}); it ran. Its result{}:\n{}",
                            spec.call_id,
                            spec.tool_name,
                            if result.is_error { " (an error)" } else { "" },
                            result.content
                        ),
                        None => format!(
                            "I approved the call {} ({}), but it could not be found to run.",
                            spec.call_id, spec.tool_name
                        ),
                    });
                }
                RequestKind::Approval => parts.push(if text.is_empty() {
                    format!(
                        "I declined the call {} ({}); do not run it.",
                        spec.call_id, spec.tool_name
                    )
                } else {
                    format!(
                        "I declined the call {} ({}): {text}",
                        spec.call_id, spec.tool_name
                    )
                }),
            }
        }
        parts.join("\n\n")
    }

    /// Records a segment's end: a held call finish, the history left to save,
    /// the usage, and the end (or pause) with the taken cursor, in one fenced
    /// commit. A record refused because the claim was lost is dropped: the
    /// next claimant records the run as abandoned.
    #[allow(clippy::too_many_arguments)] // the one commit that ends a segment
    async fn record_end(
        &self,
        thread: &ThreadKey,
        fence: &Fence,
        run_id: &str,
        result: &RunResult,
        held: Vec<Write>,
        items: Vec<HistoryItem>,
        pause: Option<(Vec<PendingRequest>, u64)>,
        segment: Option<&SegmentCommits>,
    ) {
        let _ = &segment; // counted for the failpoints only
        let mut commit = Commit::new().fenced(fence.clone());
        for write in held {
            commit = commit.write(write);
        }
        if !items.is_empty() {
            commit = commit.write(Write::AppendHistory {
                run_id: Some(run_id.to_owned()),
                items,
            });
        }
        if !result.usage.is_unknown() {
            commit = commit.write(Write::RecordUsage {
                run_id: run_id.to_owned(),
                usage: result.usage,
            });
        }
        let (requests, delivered) = pause.unwrap_or_default();
        let end = match &result.outcome {
            Outcome::Completed => Some(RunEnd::Completed),
            Outcome::Failed { reason, message } => Some(RunEnd::Failed {
                reason: reason.as_str().to_owned(),
                message: message.clone(),
            }),
            Outcome::Stopped { reason } => Some(RunEnd::Stopped {
                reason: reason.clone(),
            }),
            Outcome::Paused { .. } if !requests.is_empty() => None,
            Outcome::Paused { reason } => Some(RunEnd::Failed {
                reason: "paused_without_request".to_owned(),
                message: format!("the run paused ({reason}) but asked nothing to answer"),
            }),
        };
        commit = match end {
            Some(end) => commit.write(Write::EndRun {
                run_id: run_id.to_owned(),
                end,
            }),
            None => commit.write(Write::PauseRun {
                run_id: run_id.to_owned(),
                requests: requests
                    .into_iter()
                    .map(|r| RequestSpec {
                        id: r.request_id.clone(),
                        call_id: r.request_id,
                        tool_name: r.tool_name,
                        kind: match r.kind {
                            AskKind::Question => RequestKind::Question,
                            AskKind::Approval => RequestKind::Approval,
                        },
                        arguments: r.arguments,
                    })
                    .collect(),
            }),
        };
        if delivered > 0 {
            commit = commit.cursor(TAKEN, delivered);
        }
        let commit = retry::keyed(thread, commit);
        // The end is tried again while the claim holds: the keeper's renewals
        // go on until the segment is done (ADR 0250).
        let window = Window::within(self.config.claim_ttl);
        #[cfg(feature = "failpoints")]
        let (failpoint, nth) = match segment {
            Some(s) => (s.failpoint.as_ref(), s.next_commit()),
            None => (None, 0),
        };
        crate::crash_point!(
            failpoint,
            crate::failpoint::CrashPoint::BeforeCommit { nth }
        );
        let done = retry::commit(self.store.as_ref(), thread, commit, &window).await;
        crate::crash_point!(failpoint, crate::failpoint::CrashPoint::AfterCommit { nth });
        match done {
            Ok(_) => {}
            Err(e) if e.kind() == StoreErrorKind::StaleClaim => {
                tracing::warn!(run_id, "the run's end was not recorded: its claim was lost");
            }
            Err(e) => tracing::error!(run_id, error = %e, "recording the run's end failed"),
        }
    }
}

/// What a segment's commits share (ADR 0185): the calls its answer's commit
/// recorded started, the held finish of a batch's last call, and the thread's
/// head as the segment's own commits saw it.
struct Ledger {
    /// Calls recorded started with their answer whose wrapper has not run them yet.
    announced: HashSet<String>,
    /// Calls recorded started with their answer whose finish is not committed yet.
    unfinished: HashSet<String>,
    /// The finish of the batch's last call, held for the commit that saves the results.
    held: Vec<Write>,
    /// The thread's head after the segment's latest commit (`None` before its first).
    head: Option<u64>,
    /// Whether something else may have been committed to the thread since the
    /// last steering read (a post by anyone: the only unfenced write).
    moved: bool,
    /// How many commits the segment made or began (for the failpoints).
    #[cfg(feature = "failpoints")]
    commits: usize,
}

impl Ledger {
    /// Notes a commit of this segment: the head moved by other writers when
    /// the commit's first event does not follow the head the segment last saw.
    fn saw(&mut self, done: &Committed) {
        let ours = u64::try_from(done.seqs.len()).unwrap_or(u64::MAX);
        let before = done.head_seq.saturating_sub(ours);
        if self.head != Some(before) {
            self.moved = true;
        }
        self.head = Some(self.head.map_or(done.head_seq, |h| h.max(done.head_seq)));
    }
}

/// A segment's commits to its thread, fenced by its claim.
#[derive(Clone)]
struct SegmentCommits {
    store: Arc<dyn SessionStore>,
    thread: ThreadKey,
    fence: Fence,
    /// How long a commit that failed for a moment is tried again (ADR 0250).
    window: Window,
    ledger: Arc<Mutex<Ledger>>,
    /// Where the segment crashes, in crash-recovery tests.
    #[cfg(feature = "failpoints")]
    failpoint: Option<Arc<dyn crate::failpoint::Failpoint>>,
}

impl SegmentCommits {
    fn new(store: Arc<dyn SessionStore>, thread: ThreadKey, fence: Fence, window: Window) -> Self {
        Self {
            store,
            thread,
            fence,
            window,
            ledger: Arc::new(Mutex::new(Ledger {
                announced: HashSet::new(),
                unfinished: HashSet::new(),
                held: Vec::new(),
                head: None,
                moved: true,
                #[cfg(feature = "failpoints")]
                commits: 0,
            })),
            #[cfg(feature = "failpoints")]
            failpoint: None,
        }
    }

    /// The number of the segment's next commit (from 1).
    #[cfg(feature = "failpoints")]
    fn next_commit(&self) -> usize {
        let mut ledger = self.ledger();
        ledger.commits += 1;
        ledger.commits
    }

    fn ledger(&self) -> MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Commits `writes` (and the taken cursor when `delivered` is past 0) under the claim.
    async fn commit(&self, writes: Vec<Write>, delivered: u64) -> Result<Committed, StoreError> {
        let mut commit = Commit::new().fenced(self.fence.clone());
        for write in writes {
            commit = commit.write(write);
        }
        if delivered > 0 {
            commit = commit.cursor(TAKEN, delivered);
        }
        let commit = retry::keyed(&self.thread, commit);
        #[cfg(feature = "failpoints")]
        let nth = self.next_commit();
        crate::crash_point!(
            self.failpoint.as_ref(),
            crate::failpoint::CrashPoint::BeforeCommit { nth }
        );
        let done = retry::commit(self.store.as_ref(), &self.thread, commit, &self.window).await?;
        crate::crash_point!(
            self.failpoint.as_ref(),
            crate::failpoint::CrashPoint::AfterCommit { nth }
        );
        self.ledger().saw(&done);
        Ok(done)
    }

    /// The held finish, if any, to lead the next commit.
    fn take_held(&self) -> Vec<Write> {
        std::mem::take(&mut self.ledger().held)
    }

    /// Puts back held finishes whose commit failed, so the next commit carries them.
    fn restore_held(&self, mut held: Vec<Write>) {
        let mut ledger = self.ledger();
        held.append(&mut ledger.held);
        ledger.held = held;
    }
}

/// A run's tool calls recorded in the store, under the run's claim.
struct StoreLog {
    commits: SegmentCommits,
    /// The results recorded, so the history refers to them instead of copying them.
    recorded: Arc<Mutex<HashMap<String, ToolResult>>>,
}

#[async_trait]
impl CallLog for StoreLog {
    async fn started(
        &self,
        run_id: &str,
        call_id: &str,
        tool: &str,
        effect_key: &str,
    ) -> Result<(), String> {
        if self.commits.ledger().announced.remove(call_id) {
            // Recorded started in the commit that saved its answer.
            return Ok(());
        }
        let write = Write::ToolStarted {
            run_id: run_id.to_owned(),
            call_id: call_id.to_owned(),
            name: tool.to_owned(),
            effect_key: Some(effect_key.to_owned()),
        };
        self.commits
            .commit(vec![write], 0)
            .await
            .map_err(|e| e.to_string())?;
        crate::crash_point!(
            self.commits.failpoint.as_ref(),
            crate::failpoint::CrashPoint::Started {
                call_id: call_id.to_owned()
            }
        );
        Ok(())
    }

    async fn finished(
        &self,
        run_id: &str,
        call_id: &str,
        tool: &str,
        output: &ToolOutput,
    ) -> Result<(), String> {
        crate::crash_point!(
            self.commits.failpoint.as_ref(),
            crate::failpoint::CrashPoint::ToolEnded {
                call_id: call_id.to_owned()
            }
        );
        let result = ToolResult {
            call_id: call_id.to_owned(),
            name: tool.to_owned(),
            content: output.text.clone(),
            is_error: output.is_error,
        };
        let write = Write::ToolFinished {
            run_id: run_id.to_owned(),
            call_id: call_id.to_owned(),
            result: result.clone(),
        };
        let held = {
            let mut ledger = self.commits.ledger();
            // The batch's last call: nothing else runs before the results are
            // saved, so its finish rides in that commit (ADR 0185).
            let last = ledger.unfinished.remove(call_id)
                && ledger.unfinished.is_empty()
                && ledger.announced.is_empty();
            if last {
                ledger.held.push(write.clone());
            }
            last
        };
        if !held {
            self.commits
                .commit(vec![write], 0)
                .await
                .map_err(|e| e.to_string())?;
        }
        self.recorded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(call_id.to_owned(), result);
        Ok(())
    }
}

/// What a segment has saved and consumed so far.
struct RunBook {
    /// How many history messages are in the store.
    persisted: usize,
    /// Posted messages appended to the history, by position (with their
    /// text), not yet saved. A position whose message is not that text (a
    /// hook erased it or added context) is saved as a message of its own.
    posted: VecDeque<(usize, String, String)>,
    /// Posted messages of the segment's prompt after its first, for the first request.
    queued: VecDeque<(String, String)>,
    /// The seq through which posted messages are consumed by this run.
    delivered: u64,
}

/// The runner's observer inside one segment: steering, saving the history
/// as it grows, and pausing on questions.
struct DurableRun {
    commits: SegmentCommits,
    run_id: String,
    /// The tools whose calls are recorded (the wrapped ones).
    recorded_tools: HashSet<String>,
    requested_by: Option<String>,
    state: Mutex<RunBook>,
    recorded: Arc<Mutex<HashMap<String, ToolResult>>>,
    asked: Arc<Asked>,
    /// The one-result-per-call invariant, checked before every request (ADR 0251).
    pairing: Mutex<pairing::Pairing>,
}

impl DurableRun {
    fn book(&self) -> MutexGuard<'_, RunBook> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The history items not saved yet, and how many posted messages they
    /// refer to. Nothing is marked saved: [`Self::saved`] does that once
    /// their commit succeeded.
    fn items(&self, history: &[Message]) -> (Vec<HistoryItem>, usize) {
        let recorded = self.recorded.lock().unwrap_or_else(PoisonError::into_inner);
        let book = self.book();
        let from = book.persisted.min(history.len());
        let mut items = Vec::with_capacity(history.len() - from);
        let mut posted = book.posted.iter().peekable();
        let mut refs = 0;
        for (i, message) in history.iter().enumerate().skip(from) {
            while posted.next_if(|(at, _, _)| *at < i).is_some() {
                refs += 1;
            }
            if let Some((_, id, text)) = posted.next_if(|(at, _, _)| *at == i) {
                refs += 1;
                if matches!(message, Message::User { text: said } if said == text) {
                    items.push(HistoryItem::Posted {
                        message_id: id.clone(),
                    });
                    continue;
                }
            }
            match message {
                Message::ToolResult(r) if recorded.get(&r.call_id) == Some(r) => {
                    items.push(HistoryItem::ToolResult {
                        call_id: r.call_id.clone(),
                    });
                }
                other => items.push(HistoryItem::Message {
                    message: other.clone(),
                }),
            }
        }
        (items, refs)
    }

    /// Marks the history through `len` saved, with the first `refs` posted
    /// messages it referred to: called once the commit carrying them succeeded.
    fn saved(&self, len: usize, refs: usize) {
        let mut book = self.book();
        book.persisted = len;
        for _ in 0..refs {
            book.posted.pop_front();
        }
    }

    /// Saves what the history gained (after a held call finish, before
    /// `started`), with the taken cursor, under the claim.
    async fn save(&self, history: &[Message], started: Vec<Write>) -> Result<(), RunFailure> {
        let (items, refs) = self.items(history);
        let held = self.commits.take_held();
        if items.is_empty() && held.is_empty() && started.is_empty() {
            return Ok(());
        }
        let mut writes = held.clone();
        if !items.is_empty() {
            writes.push(Write::AppendHistory {
                run_id: Some(self.run_id.clone()),
                items,
            });
        }
        writes.extend(started);
        let delivered = self.book().delivered;
        match self.commits.commit(writes, delivered).await {
            Ok(_) => {
                self.saved(history.len(), refs);
                Ok(())
            }
            Err(e) => {
                // Nothing of it is saved: the run's end commit carries it (ADR 0250).
                self.commits.restore_held(held);
                Err(store_failure(e))
            }
        }
    }

    /// The ids of the last answer's recorded calls.
    fn announce(&self, history: &[Message]) -> Vec<String> {
        let Some(answer) = history.last() else {
            return Vec::new();
        };
        answer
            .tool_calls()
            .filter(|c| self.recorded_tools.contains(&c.name))
            .map(|c| c.id.clone())
            .collect()
    }
}

fn store_failure(e: StoreError) -> RunFailure {
    if e.kind() == StoreErrorKind::StaleClaim {
        RunFailure::new(
            "claim_lost",
            "the thread's claim was lost to another runner",
        )
    } else {
        RunFailure::new("store_failed", format!("saving the run failed: {e}"))
    }
}

#[async_trait]
impl RunObserver for DurableRun {
    async fn before_request(&self, history: &[Message]) -> Result<Vec<Message>, RunFailure> {
        let unpaired = self
            .pairing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .check(history);
        if let Some(why) = unpaired {
            // Never send a provider a history it refuses (ADR 0251).
            return Err(RunFailure::new(
                "history_unpaired",
                format!("the history is not fit for a model request: {why}"),
            ));
        }
        let mut steering = Vec::new();
        {
            let mut book = self.book();
            while let Some((id, text)) = book.queued.pop_front() {
                let at = history.len() + steering.len();
                book.posted.push_back((at, id, text.clone()));
                steering.push(Message::user(text));
            }
        }
        if !std::mem::take(&mut self.commits.ledger().moved) {
            // Nothing was posted since the last read: the segment's own
            // commits account for every event since (ADR 0185).
            return Ok(steering);
        }
        let delivered = self.book().delivered;
        let posted = self
            .commits
            .store
            .messages(&self.commits.thread, delivered, MAX_PAGE)
            .await
            .map_err(store_failure)?;
        let mut book = self.book();
        for m in posted {
            if m.kind == MessageKind::Notice {
                continue;
            }
            // One author per turn: another author's message waits for the next turn.
            if self.requested_by.as_deref() != Some(m.author.as_str()) {
                break;
            }
            book.posted
                .push_back((history.len() + steering.len(), m.id.clone(), m.text.clone()));
            book.delivered = m.seq;
            steering.push(Message::user(m.text));
        }
        Ok(steering)
    }

    async fn answered(&self, history: &[Message]) -> Result<(), RunFailure> {
        // The calls are not recorded started here: a call is recorded started
        // only once its hooks, capabilities and checks allowed it and it is
        // about to run (ADR 0240); its finish may still ride in the batch's
        // last commit.
        let calls = self.announce(history);
        self.save(history, Vec::new()).await?;
        let mut ledger = self.commits.ledger();
        ledger.announced.clear();
        ledger.unfinished = calls.into_iter().collect();
        Ok(())
    }

    fn calls_decided(&self, not_run: &[&str]) {
        // No finish of these is to come: the last running call's finish
        // rides in the commit that saves the results (ADR 0245).
        let mut ledger = self.commits.ledger();
        for call in not_run {
            ledger.unfinished.remove(*call);
        }
    }

    async fn batch_ended(&self, history: &[Message]) -> Result<Option<String>, RunFailure> {
        self.save(history, Vec::new()).await?;
        Ok((!self.asked.is_empty()).then(|| "waiting for an answer".to_owned()))
    }
}
