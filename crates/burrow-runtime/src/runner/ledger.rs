//! A segment's commits to its thread, fenced by its claim, and the ledger they share (ADR 0185); the run's tool calls recorded in the store.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;

use super::durable::CallLog;
use super::retry::{self, Window};
use crate::message::ToolResult;
use crate::session::{
    CommandKey, Commit, Committed, Fence, HistoryItem, SessionStore, StoreError, ThreadKey, Write,
};

use super::engine::TAKEN;
use super::observer::RunBook;
use crate::tool::ToolOutput;

/// What a segment's commits share (ADR 0185): the calls its answer's commit
/// recorded started, the held finish of a batch's last call, and the thread's
/// head as the segment's own commits saw it.
pub(super) struct Ledger {
    /// Calls recorded started with their answer whose wrapper has not run them yet.
    pub(super) announced: HashSet<String>,
    /// Calls recorded started with their answer whose finish is not committed yet.
    pub(super) unfinished: HashSet<String>,
    /// The finish of the batch's last call, held for the commit that saves the results.
    pub(super) held: Vec<Write>,
    /// The thread's head after the segment's latest commit (`None` before its first).
    pub(super) head: Option<u64>,
    /// Whether something else may have been committed to the thread since the
    /// last steering read (a post by anyone: the only unfenced write).
    pub(super) moved: bool,
    /// How many commits the segment made or began (for the failpoints).
    #[cfg(feature = "failpoints")]
    pub(super) commits: usize,
}

impl Ledger {
    /// Notes a commit of this segment: the head moved by other writers when
    /// the commit's first event does not follow the head the segment last saw.
    pub(super) fn saw(&mut self, done: &Committed) {
        let ours = u64::try_from(done.seqs.len()).unwrap_or(u64::MAX);
        let before = done.head_seq.saturating_sub(ours);
        if self.head != Some(before) {
            self.moved = true;
        }
        self.head = Some(self.head.map_or(done.head_seq, |h| h.max(done.head_seq)));
    }
}

/// An answer whose save waits to ride in the commit that records its first
/// call started (ADR 0350): the history items from the saved position
/// through the answer, and the posted messages among them.
pub(super) struct Deferred {
    /// The items to append (the answer and what came before it unsaved).
    pub(super) items: Vec<HistoryItem>,
    /// How many posted messages the items refer to.
    pub(super) refs: usize,
    /// The history's length with the answer.
    pub(super) through: usize,
    /// Set while the commit carrying it is in flight: that commit's key and
    /// the held writes it carries. Still set afterwards only when the call
    /// was dropped (cancelled) in the middle of it: whether it landed is
    /// then asked of the store ([`SegmentCommits::settle`]).
    pub(super) flight: Option<(CommandKey, Vec<Write>)>,
}

/// A segment's commits to its thread, fenced by its claim.
#[derive(Clone)]
pub(super) struct SegmentCommits {
    pub(super) store: Arc<dyn SessionStore>,
    pub(super) thread: ThreadKey,
    pub(super) fence: Fence,
    /// How long a commit that failed for a moment is tried again (ADR 0250).
    pub(super) window: Window,
    pub(super) ledger: Arc<Mutex<Ledger>>,
    /// The answer waiting for its first call's start, if any; held across
    /// that commit, so a call of the same batch that starts meanwhile waits
    /// and no call is recorded started before its answer is saved.
    pub(super) deferred: Arc<tokio::sync::Mutex<Option<Deferred>>>,
    /// Where the segment crashes, in crash-recovery tests.
    #[cfg(feature = "failpoints")]
    pub(super) failpoint: Option<Arc<dyn crate::failpoint::Failpoint>>,
}

impl SegmentCommits {
    pub(super) fn new(
        store: Arc<dyn SessionStore>,
        thread: ThreadKey,
        fence: Fence,
        window: Window,
    ) -> Self {
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
            deferred: Arc::new(tokio::sync::Mutex::new(None)),
            #[cfg(feature = "failpoints")]
            failpoint: None,
        }
    }

    /// The number of the segment's next commit (from 1).
    #[cfg(feature = "failpoints")]
    pub(super) fn next_commit(&self) -> usize {
        let mut ledger = self.ledger();
        ledger.commits += 1;
        ledger.commits
    }

    pub(super) fn ledger(&self) -> MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Commits `writes` (and the taken cursor when `delivered` is past 0) under the claim.
    pub(super) async fn commit(
        &self,
        writes: Vec<Write>,
        delivered: u64,
    ) -> Result<Committed, StoreError> {
        self.commit_as(writes, delivered, retry::commit_key(&self.thread))
            .await
    }

    /// [`Self::commit`] under the command key `key`.
    async fn commit_as(
        &self,
        writes: Vec<Write>,
        delivered: u64,
        key: CommandKey,
    ) -> Result<Committed, StoreError> {
        let mut commit = Commit::new()
            .fenced(self.fence.clone())
            .command(key, serde_json::Value::Null);
        for write in writes {
            commit = commit.write(write);
        }
        if delivered > 0 {
            commit = commit.cursor(TAKEN, delivered);
        }
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

    /// Drops the deferred answer, once no commit carrying it is in flight:
    /// the caller saves from the saved position on, which includes it.
    pub(super) async fn settle(&self, book: &Mutex<RunBook>) {
        let mut deferred = self.deferred.lock().await;
        self.resolve(&mut deferred, book).await;
        *deferred = None;
    }

    /// Resolves a deferred answer whose commit was dropped midway (its call
    /// cancelled), looked up by that commit's key: landed, the history
    /// through it is marked saved in `book` and nothing is deferred any
    /// more; not landed, its held writes are held again and it stays
    /// deferred.
    async fn resolve(&self, deferred: &mut Option<Deferred>, book: &Mutex<RunBook>) {
        let Some((key, held)) = deferred.as_mut().and_then(|a| a.flight.take()) else {
            return;
        };
        let landed = retry::call(&self.window, || self.store.command_result(&key)).await;
        match (landed, deferred.take()) {
            (Ok(Some(_)), Some(answer)) => lock(book).saved(answer.through, answer.refs),
            // Unknown only once the claim is lost: every later commit of the
            // segment is refused then, so nothing is saved twice.
            (_, answer) => {
                self.restore_held(held);
                *deferred = answer;
            }
        }
    }

    /// The held finish, if any, to lead the next commit.
    pub(super) fn take_held(&self) -> Vec<Write> {
        std::mem::take(&mut self.ledger().held)
    }

    /// Puts back held finishes whose commit failed, so the next commit carries them.
    pub(super) fn restore_held(&self, mut held: Vec<Write>) {
        let mut ledger = self.ledger();
        held.append(&mut ledger.held);
        ledger.held = held;
    }
}

/// A run's tool calls recorded in the store, under the run's claim.
pub(super) struct StoreLog {
    pub(super) commits: SegmentCommits,
    /// The results recorded, so the history refers to them instead of copying them.
    pub(super) recorded: Arc<Mutex<HashMap<String, ToolResult>>>,
    /// What the segment has saved (a deferred answer saved with a start moves it).
    pub(super) book: Arc<Mutex<RunBook>>,
}

impl StoreLog {
    /// Commits `started`, with the deferred answer when one waits (and the
    /// held checkpoint that leads it): the answer is saved no later than its
    /// first call's start (ADR 0350). A failed commit leaves the answer
    /// deferred and the checkpoint held.
    async fn commit_started(&self, run_id: &str, started: Write) -> Result<(), StoreError> {
        let mut deferred = self.commits.deferred.lock().await;
        self.commits.resolve(&mut deferred, &self.book).await;
        let Some(answer) = deferred.as_mut() else {
            drop(deferred);
            return self.commits.commit(vec![started], 0).await.map(|_| ());
        };
        let held = self.commits.take_held();
        let mut writes = held.clone();
        writes.push(Write::AppendHistory {
            run_id: Some(run_id.to_owned()),
            items: answer.items.clone(),
        });
        writes.push(started);
        let delivered = lock(&self.book).delivered;
        let key = retry::commit_key(&self.commits.thread);
        answer.flight = Some((key.clone(), held));
        let done = self.commits.commit_as(writes, delivered, key).await;
        match done {
            Ok(_) => {
                lock(&self.book).saved(answer.through, answer.refs);
                *deferred = None;
                Ok(())
            }
            Err(e) => {
                if let Some((_, held)) = answer.flight.take() {
                    self.commits.restore_held(held);
                }
                Err(e)
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
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
        self.commit_started(run_id, write)
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
