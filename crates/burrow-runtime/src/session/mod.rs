//! Sessions: the store port that makes threads survive crashes (threads, posted messages, history, runs, tool-call records, a gap-free event log, claims, cursors, command results, checkpoints) and its memory, SQLite and PostgreSQL stores.
//!
//! # Key design decision: one commit is one transaction, and the rules live once
//!
//! Everything that changes a thread goes through [`SessionStore::commit`]: a
//! [`Commit`] holds an optional [`Fence`] (the claim it is made under), a list
//! of [`Write`]s, cursor moves and a command record, and a store applies it
//! all or nothing in one transaction. So the guarantees the runner needs are
//! the store's, not the caller's care:
//!
//! - **Fencing in the same transaction.** A fenced commit is refused
//!   ([`StoreErrorKind::StaleClaim`]) unless its fence is the thread's current
//!   claim, checked before anything else; every write but
//!   [`Write::PostMessage`] needs a fence.
//! - **Exactly-once consumption.** Cursors move forward only and are saved in
//!   the transaction of the write that consumes (a run started with the
//!   messages it takes); [`CursorMove::expect`] makes the move a compare-and-set.
//! - **Exactly-once commands.** A commit's [`CommandRecord`] is checked and
//!   recorded in its transaction: a repeated key fails
//!   [`StoreErrorKind::DuplicateCommand`] and writes nothing.
//! - **Gap-free, content-free events.** Each write records one [`Event`] with
//!   the thread's next `seq`; events carry ids, names, usage and outcomes.
//!   Text lives once: a posted message in its row, a tool result in its call
//!   record, the history refers to both ([`HistoryItem`]).
//!
//! The rules that decide whether a commit is valid and what it changes are
//! written once (`rules`), over a snapshot the store loads in its transaction;
//! each store only loads and saves rows. Time comes from an injectable
//! [`Clock`], so tests move claims past their TTL without sleeping.
//!
//! # Stores
//! - [`MemoryStore`]: in the process, for tests and short-lived runners.
//! - `SqliteStore` (feature `sqlite`): one file, WAL, one transaction per
//!   commit, blocking work off the async runtime; the default for anything
//!   durable.
//! - `PostgresStore` (feature `postgres`): tokio-postgres, for runners on
//!   several machines; the thread's row is locked (`SELECT ... FOR UPDATE`) for
//!   each commit and claim change.
//!
//! Every store passes the same scenarios: `conformance` (feature
//! `conformance`), which another crate's store runs in its own tests.

mod clock;
#[cfg(feature = "conformance")]
pub mod conformance;
mod error;
mod memory;
#[cfg(feature = "postgres")]
mod postgres;
pub(crate) mod rules;
#[cfg(feature = "sqlite")]
mod sqlite;
mod types;

use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

pub use clock::{Clock, ManualClock, SystemClock};
pub use error::{StoreError, StoreErrorKind, StoreResult};
pub use memory::MemoryStore;
#[cfg(feature = "postgres")]
pub use postgres::{PostgresOptions, PostgresStore};
#[cfg(feature = "sqlite")]
pub use sqlite::{SqliteOptions, SqliteStore};
pub use types::{
    Answer, Checkpoint, Claim, ClaimAttempt, CommandKey, CommandRecord, Commit, Committed,
    CursorMove, Event, EventKind, Fence, HistoryEntry, HistoryItem, MAX_LABEL_NAME,
    MAX_LABEL_VALUE, MAX_RUN_LABELS, MessageKind, PostedMessage, Pruned, Request, RequestKind,
    RequestSpec, RewindIntent, RunEnd, RunRecord, RunStatus, Scope, ThreadInfo, ThreadKey,
    ThreadStatus, ToolCallRecord, ToolCallStatus, Trigger, Write,
};

/// The most entries one listing returns, whatever limit the caller asks.
pub const MAX_PAGE: usize = 10_000;

/// Where sessions are kept: the port every store implements.
///
/// Every method is cancel-safe in the sense that a cancelled call leaves no
/// lock behind; a cancelled [`commit`](Self::commit) or
/// [`acquire_claim`](Self::acquire_claim) may still have taken effect, so a
/// caller cleans up defensively (releases a claim it may have been granted).
#[async_trait]
pub trait SessionStore: Send + Sync + std::fmt::Debug {
    /// Applies `commit` to `thread` in one transaction.
    ///
    /// # Behavior
    /// - All or nothing: on any error nothing is written, no seq is used.
    /// - Checked in this order: ids and names hold no NUL and are not empty
    ///   (`InvalidArgument`); the fence, when given, is the thread's current
    ///   claim (same holder and token, not released or taken over; a lapsed
    ///   claim no one has taken still fences) else `StaleClaim`; every write
    ///   but `PostMessage` needs a fence (`StaleClaim`); the command key, when
    ///   given, is new (`DuplicateCommand`); then each write in order, each
    ///   seeing the ones before it; then the cursors.
    /// - The thread is created by its first commit. Each write records one
    ///   event; `Committed::seqs` holds their seqs, consecutive after the head.
    /// - `PostMessage`: the id is unused in the workspace (`IdInUse`).
    /// - `AppendHistory`: a named run is running or paused in this thread; a
    ///   `Posted` item names a message of this thread, a `ToolResult` item a
    ///   finished call of the named run (`NotFound`).
    /// - `StartRun`: the run id is unused in the workspace (`IdInUse`); the
    ///   thread has no running or paused run (`InvalidState`); the message ids
    ///   are messages of this thread (`NotFound`); its labels are within
    ///   [`MAX_RUN_LABELS`], [`MAX_LABEL_NAME`] and [`MAX_LABEL_VALUE`], with
    ///   no empty name and no NUL (`InvalidArgument`), and stay with the run,
    ///   unchanged by its later writes and in no event.
    /// - `ResumeRun`: the run is paused and every request answered (`InvalidState`).
    /// - `PauseRun`: the run is running; at least one request, ids distinct.
    /// - `AnswerRequest`: the run is paused; the request exists (`NotFound`)
    ///   and is unanswered; an approval's answer sets `approved`, a question's
    ///   does not (`InvalidArgument`).
    /// - `EndRun`: the run is running or paused; an ended run never changes (`InvalidState`).
    /// - `ToolStarted`: the run is running; the call is new or started but
    ///   unfinished (a re-run: `attempts` grows); a finished call is `InvalidState`.
    /// - `ToolFinished`: the call was started and has not finished; its run is running or paused.
    /// - `RecordUsage`: the run is running or paused; the usage adds to the run's.
    /// - `SaveCheckpoint`: the id is unused in the thread (`IdInUse`); no
    ///   rewind is unfinished (`InvalidState`). Its files are kept beside the
    ///   row, byte for byte; with `keep`, only the thread's newest `keep`
    ///   checkpoints (by seq) stay after the commit, the others and their files
    ///   deleted in its transaction.
    /// - `StartRun` is refused too (`InvalidState`) while a rewind is unfinished.
    /// - `BeginRewind`: the thread has no running or paused run and no
    ///   unfinished rewind (`InvalidState`); the checkpoint is the thread's
    ///   (`NotFound`); its history length is within the history
    ///   (`InvalidArgument`). Records the intent in the thread
    ///   ([`ThreadInfo::rewind`]).
    /// - `FinishRewind`: the thread's unfinished rewind names this checkpoint
    ///   (`InvalidState`); appends a [`HistoryItem::Rewind`] when it moves the
    ///   conversation, and clears the intent. `AppendHistory` of a rewind item
    ///   is `InvalidArgument`.
    /// - A write naming a run of another thread is `NotFound`.
    /// - Cursors: `CursorMove::HEAD` means the head after the commit; a move to
    ///   a seq past the new head is `InvalidArgument`; with
    ///   `expect`, the cursor must stand there (`Conflict`); a cursor moves to
    ///   the larger of where it stands and `to`.
    async fn commit(&self, thread: &ThreadKey, commit: Commit) -> StoreResult<Committed>;

    /// Tries to claim `thread` for `holder` for `ttl`.
    ///
    /// # Behavior
    /// Granted when the thread has no claim, its claim was released or has
    /// lapsed (now is at or past its expiry), or `holder` holds it already
    /// (then the expiry moves to now + ttl and the token stays). A new claim's
    /// token is greater than every token the thread had. Otherwise `Busy` with
    /// the live claim. The holder holds no NUL and is not empty.
    async fn acquire_claim(
        &self,
        thread: &ThreadKey,
        holder: &str,
        ttl: Duration,
    ) -> StoreResult<ClaimAttempt>;

    /// Renews `claim` for `ttl` from now.
    ///
    /// # Behavior
    /// Succeeds (expiry now + ttl, same token) while `claim` is the thread's
    /// current claim, lapsed or not; `StaleClaim` once it was released or
    /// taken over.
    async fn renew_claim(
        &self,
        thread: &ThreadKey,
        claim: &Claim,
        ttl: Duration,
    ) -> StoreResult<Claim>;

    /// Releases `claim`.
    ///
    /// # Behavior
    /// Returns true when `claim` was the current claim and is now released;
    /// false (and changes nothing) when it was not: releasing someone else's
    /// or a stale claim is a no-op. The token is never reused.
    async fn release_claim(&self, thread: &ThreadKey, claim: &Claim) -> StoreResult<bool>;

    /// The thread's current claim (live or lapsed), if it has one not released.
    async fn claim(&self, thread: &ThreadKey) -> StoreResult<Option<Claim>>;

    /// The thread, if it has had a commit.
    async fn thread(&self, thread: &ThreadKey) -> StoreResult<Option<ThreadInfo>>;

    /// The workspace's threads ordered by id, after `after` (exclusive), at most `limit`.
    async fn threads(
        &self,
        scope: &Scope,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<ThreadInfo>>;

    /// The thread's events with `seq > after_seq`, in seq order, at most `limit`.
    async fn events(
        &self,
        thread: &ThreadKey,
        after_seq: u64,
        limit: usize,
    ) -> StoreResult<Vec<Event>>;

    /// The thread's posted messages (and notices) with `seq > after_seq`, in seq order, at most `limit`.
    async fn messages(
        &self,
        thread: &ThreadKey,
        after_seq: u64,
        limit: usize,
    ) -> StoreResult<Vec<PostedMessage>>;

    /// The posted message `id` of the workspace.
    async fn message(&self, scope: &Scope, id: &str) -> StoreResult<Option<PostedMessage>>;

    /// The thread's history from position `from_pos`, references resolved.
    async fn history(&self, thread: &ThreadKey, from_pos: u64) -> StoreResult<Vec<HistoryEntry>>;

    /// The run `run_id` of the workspace.
    async fn run(&self, scope: &Scope, run_id: &str) -> StoreResult<Option<RunRecord>>;

    /// The thread's runs, oldest first.
    async fn runs(&self, thread: &ThreadKey) -> StoreResult<Vec<RunRecord>>;

    /// The tool-call records of run `run_id`, in the order they were first started.
    async fn tool_calls(&self, scope: &Scope, run_id: &str) -> StoreResult<Vec<ToolCallRecord>>;

    /// Where the thread's cursor `name` stands (0 when never moved).
    async fn cursor(&self, thread: &ThreadKey, name: &str) -> StoreResult<u64>;

    /// The thread's checkpoints, oldest first.
    async fn checkpoints(&self, thread: &ThreadKey) -> StoreResult<Vec<Checkpoint>>;

    /// The file pre-images of the thread's checkpoint `checkpoint_id`, in the
    /// order they were saved; `None` when the thread has no such checkpoint.
    ///
    /// # Behavior
    /// Every image's bytes are those saved, exactly (absent images stay
    /// absent). A store that keeps no files says so (`Storage`).
    async fn checkpoint_files(
        &self,
        thread: &ThreadKey,
        checkpoint_id: &str,
    ) -> StoreResult<Option<Vec<crate::checkpoint::FileImage>>> {
        let _ = (thread, checkpoint_id);
        Err(StoreError::new(
            StoreErrorKind::Storage,
            "this session store keeps no checkpoint files",
        ))
    }

    /// The result remembered for command `key`.
    async fn command_result(&self, key: &CommandKey) -> StoreResult<Option<Value>>;

    /// Records `result` for command `key` unless one is recorded; returns the
    /// one already recorded (and records nothing) if there is one. Check and
    /// insert are one transaction. For commands whose effect is not a commit;
    /// the others record their key in their [`Commit`].
    async fn record_command(&self, key: &CommandKey, result: Value) -> StoreResult<Option<Value>>;

    /// Threads (of every workspace) whose cursor `ahead` stands past their
    /// cursor `behind`, ordered by key, at most `limit`: what `recover()` takes up.
    async fn lagging_threads(
        &self,
        ahead: &str,
        behind: &str,
        limit: usize,
    ) -> StoreResult<Vec<ThreadKey>>;

    /// Forgets what the workspace's threads no longer need from before
    /// `before_ms` (store clock, milliseconds): command results, events and
    /// tool-call records (ADR 0255). Returns how many of each it deleted.
    ///
    /// # Behavior
    /// - Command results of the workspace recorded before `before_ms` are
    ///   deleted: a repeat of such a command is carried out like a new one.
    ///   Those recorded at or after it stay.
    /// - A thread's events committed before `before_ms` are deleted, except
    ///   those of its unfinished (running or paused) run: every event from
    ///   that run's `run_started` on stays. Seqs are never reused: the
    ///   thread's `head_seq`, the seqs of the events kept and the seq of the
    ///   next commit are what they were; `events` returns the kept ones.
    /// - The tool-call records of a run that ended before `before_ms` are
    ///   deleted, except those of the run of the thread's last assistant
    ///   message in the history (the next run answers that message's
    ///   unanswered calls from them, ADR 0251); an unfinished run's records
    ///   always stay. A history entry that referred to a deleted record's
    ///   result holds that result inline instead: `history` reads the same
    ///   messages before and after.
    /// - Nothing else changes: threads, posted messages, runs, claims,
    ///   cursors, checkpoints, the history's messages, other workspaces.
    /// - Each thread is pruned in one transaction, serialised with its
    ///   commits (a commit sees it all or not at all); a prune that fails
    ///   part-way has pruned some threads whole and no thread in part.
    async fn prune(&self, scope: &Scope, before_ms: i64) -> StoreResult<Pruned>;

    /// The store's clock.
    fn now_ms(&self) -> i64;

    /// The store's team part (teams' shared todo lists and messages, ADR 0265),
    /// when it keeps one; `None` (the default) when it does not.
    fn teams(&self) -> Option<&dyn crate::team::TeamStore> {
        None
    }
}

/// The thread's history as messages (references resolved), to pass to a model.
pub async fn load_history(
    store: &dyn SessionStore,
    thread: &ThreadKey,
) -> StoreResult<Vec<crate::message::Message>> {
    Ok(store
        .history(thread, 0)
        .await?
        .into_iter()
        .map(|e| e.message)
        .collect())
}
