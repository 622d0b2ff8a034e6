//! The `Runner`'s public API and commands: a message starts a run in an idle thread, steers a running one, answers a paused one; resumes, stops, watches and deduplicated commands (`execute`). Claims and abandonment are in `takeover`, a segment's run in `segment`, its commits in `ledger`, its observer in `observer`, approvals in `approval`.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use tokio::sync::{Notify, watch};

use super::command::{Command, CommandResult};
use super::error::{RunnerError, RunnerErrorKind, RunnerResult};
use super::live::{LiveEvent, LiveFrame};

use crate::agent::{Agent, CancelToken, FailureReason, Outcome, RunResult};
use crate::message::Usage;
use crate::session::{
    Answer, CommandKey, Commit, MAX_PAGE, MessageKind, PostedMessage, RunRecord, RunStatus, Scope,
    SessionStore, StoreError, StoreErrorKind, ThreadKey,
};

use super::config::RunnerConfig;

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
pub(super) const DUPLICATE_WAIT: Duration = Duration::from_secs(2);

/// A run segment started by a [`Runner`] (a new run, or a paused one resumed).
#[derive(Debug, Clone)]
pub struct RunHandle {
    pub(super) run_id: String,
    pub(super) thread: ThreadKey,
    pub(super) result: watch::Receiver<Option<RunResult>>,
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
                reason: FailureReason::RunnerFailed,
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
    pub(super) agent: Agent,
    pub(super) store: Arc<dyn SessionStore>,
    pub(super) config: RunnerConfig,
    pub(super) closed: AtomicBool,
    /// Set by [`Runner::hand_back`]: ending segments record no end.
    pub(super) handing_back: AtomicBool,
    pub(super) state: Mutex<State>,
    /// Runs, hand-overs and claimants in flight (for `drain`).
    pub(super) busy: AtomicUsize,
    pub(super) idle: Notify,
}

impl Inner {
    /// The agent of a segment in `thread`: the runner's, made for the thread
    /// when the config says how ([`RunnerConfig::agent_for_thread`]).
    pub(super) fn agent_of(&self, thread: &ThreadKey) -> Agent {
        match &self.config.agent_for_thread {
            Some(agent_for) => agent_for(&self.agent, thread),
            None => self.agent.clone(),
        }
    }
}

#[derive(Default)]
pub(super) struct State {
    /// This process's runs, by thread.
    pub(super) runs: HashMap<ThreadKey, Active>,
    /// The holders of the claims this process holds.
    pub(super) holders: HashSet<String>,
    /// Threads with a look scheduled (their holder may have died).
    pub(super) retakes: HashMap<ThreadKey, tokio::task::JoinHandle<()>>,
    /// Threads a waiter of this process follows and takes over itself (ADR 0180).
    pub(super) followed: HashMap<ThreadKey, usize>,
}

pub(super) struct Active {
    pub(super) cancel: CancelToken,
    pub(super) handle: RunHandle,
}

/// Counts a task as busy while it lives.
pub(super) struct BusyGuard(Arc<Inner>);

impl BusyGuard {
    pub(super) fn new(inner: &Arc<Inner>) -> Self {
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
    pub(super) run_id: String,
    pub(super) request_id: String,
    pub(super) answer: Answer,
    /// The command that carries the answer out, recorded in the answer's commit.
    pub(super) command: Option<CommandKey>,
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
                handing_back: AtomicBool::new(false),
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
    pub(super) async fn answer_as(
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

    /// The thread of this process's run `run_id` of the workspace `scope`, if
    /// it runs here (a run of another workspace is never named, whatever its
    /// id). Reads no store: a surface answers a watch of a run held here with
    /// [`Self::watch`] at once.
    pub fn running_in(&self, scope: &Scope, run_id: &str) -> Option<ThreadKey> {
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
    /// result ([`CommandResult::Rejected`]), not an error, and is not remembered.
    pub async fn execute(
        &self,
        scope: &Scope,
        sender: &str,
        command: Command,
        command_id: &str,
    ) -> RunnerResult<CommandResult> {
        if command_id.is_empty() || command_id.contains('\0') {
            return Ok(CommandResult::rejected(
                RunnerErrorKind::InvalidArgument,
                "a command id must be non-empty and hold no NUL character",
            ));
        }
        let key = CommandKey {
            scope: scope.clone(),
            sender: sender.to_owned(),
            command_id: command_id.to_owned(),
        };
        // A message or notice records its command in the commit that posts
        // it, which refuses a repeat before anything else: so no read first;
        // a refused post looks for the remembered result below (ADR 0371).
        let posts = matches!(command, Command::Send { .. } | Command::Notice { .. });
        if !posts && let Some(result) = self.remembered(&key).await? {
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
                let result = CommandResult::Posted {
                    thread: thread.thread.clone(),
                    message_id: id.clone(),
                };
                let command = (key.clone(), result.to_stored());
                match self
                    .inner
                    .post_and_take(&thread, sender, &text, &id, command)
                    .await
                {
                    Ok(taken) => {
                        taken?;
                        Ok(result)
                    }
                    Err(e) => Err(e),
                }
            }
            Command::Notice { thread, text } => {
                let thread = scope.thread(thread);
                let id = new_id("msg");
                let result = CommandResult::Posted {
                    thread: thread.thread.clone(),
                    message_id: id.clone(),
                };
                self.inner
                    .post(
                        &thread,
                        sender,
                        &text,
                        Some(&id),
                        MessageKind::Notice,
                        Some((key.clone(), result.to_stored())),
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
                    Ok(_) => Ok(self.remembered(&key).await?.unwrap_or_else(|| {
                        CommandResult::rejected(
                            RunnerErrorKind::NotFound,
                            "the thread has no run with that request to answer",
                        )
                    })),
                    Err(e) => Err(e),
                }
            }
            Command::Stop { run_id } => match self.running_in(scope, &run_id) {
                Some(thread) => {
                    let result = CommandResult::Stopped {
                        run_id: run_id.clone(),
                        stopped: true,
                    };
                    // The stop request and the command, one commit; then the cancel.
                    let commit = Commit::new()
                        .cursor_to_head(super::remote::stop_cursor(&run_id))
                        .command(key.clone(), result.to_stored());
                    match self.inner.store.commit(&thread, commit).await {
                        Ok(_) => {
                            self.stop(scope, &run_id);
                            Ok(result)
                        }
                        Err(e) => Err(e.into()),
                    }
                }
                None => {
                    let result = CommandResult::Stopped {
                        run_id,
                        stopped: false,
                    };
                    match self
                        .inner
                        .store
                        .record_command(&key, result.to_stored())
                        .await?
                    {
                        Some(earlier) => CommandResult::from_stored(earlier),
                        None => Ok(result),
                    }
                }
            },
        };
        match outcome {
            Ok(result) => Ok(result),
            // A repeat; or a post refused for another reason, which a repeat's
            // remembered result answers all the same, whatever came with it.
            Err(e) if e.is_duplicate_command() || (posts && e.kind() != RunnerErrorKind::Store) => {
                let remembered = self.remembered(&key).await?;
                if let Some(result) = &remembered {
                    self.follow_up(scope, result).await?;
                }
                Ok(remembered.unwrap_or_else(|| {
                    let kind = if e.is_duplicate_command() {
                        RunnerErrorKind::InvalidState
                    } else {
                        e.kind()
                    };
                    CommandResult::rejected(kind, e.message())
                }))
            }
            Err(e) if e.kind() == RunnerErrorKind::Store => Err(e),
            Err(e) => Ok(CommandResult::rejected(e.kind(), e.message())),
        }
    }

    /// The result remembered for the command `key`, if it was carried out.
    pub async fn remembered(&self, key: &CommandKey) -> RunnerResult<Option<CommandResult>> {
        match self.inner.store.command_result(key).await? {
            Some(value) => CommandResult::from_stored(value).map(Some),
            None => Ok(None),
        }
    }
}

impl Runner {
    /// After a command found carried out already: a posted message whose run
    /// may have been abandoned (its runner died) gets its thread taken up, now
    /// or once the dead claim lapses, so the work is done (ADR 0252).
    pub(super) async fn follow_up(
        &self,
        scope: &Scope,
        remembered: &CommandResult,
    ) -> RunnerResult<()> {
        if let CommandResult::Posted { thread, .. } = remembered {
            self.inner.take(&scope.thread(thread.clone()), None).await?;
        }
        Ok(())
    }
}

impl RunnerError {
    pub(super) fn is_duplicate_command(&self) -> bool {
        std::error::Error::source(self)
            .and_then(|s| s.downcast_ref::<StoreError>())
            .is_some_and(|s| s.kind() == StoreErrorKind::DuplicateCommand)
    }
}

impl Inner {
    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }
}
