//! The runner's observer inside one segment (`DurableRun`): steering, saving the history as it grows, and pausing on questions.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;

use super::ask::Asked;
use super::pairing;
use crate::agent::{RunFailure, RunObserver};
use crate::message::{Message, ToolResult};
use crate::session::{HistoryItem, MAX_PAGE, MessageKind, StoreError, StoreErrorKind, Write};

use super::ledger::{Deferred, SegmentCommits};

/// What a segment has saved and consumed so far.
#[derive(Default)]
pub(super) struct RunBook {
    /// How many history messages are in the store.
    pub(super) persisted: usize,
    /// Posted messages appended to the history, by position (with their
    /// text), not yet saved. A position whose message is not that text (a
    /// hook erased it or added context) is saved as a message of its own.
    pub(super) posted: VecDeque<(usize, String, String)>,
    /// Posted messages of the segment's prompt after its first, for the first request.
    pub(super) queued: VecDeque<(String, String)>,
    /// The seq through which posted messages are consumed by this run.
    pub(super) delivered: u64,
}

impl RunBook {
    /// Marks the history through `len` saved, with the first `refs` posted
    /// messages it referred to: called once the commit carrying them succeeded.
    pub(super) fn saved(&mut self, len: usize, refs: usize) {
        self.persisted = len;
        for _ in 0..refs {
            self.posted.pop_front();
        }
    }
}

/// The runner's observer inside one segment: steering, saving the history
/// as it grows, and pausing on questions.
pub(super) struct DurableRun {
    pub(super) commits: SegmentCommits,
    pub(super) run_id: String,
    /// The tools whose calls are recorded (the wrapped ones).
    pub(super) recorded_tools: HashSet<String>,
    pub(super) requested_by: Option<String>,
    /// Shared with the call log, which saves a deferred answer (ADR 0350).
    pub(super) state: Arc<Mutex<RunBook>>,
    /// Whether an answer's save may wait for its first call's start: no
    /// `PreToolUse` hook decides its calls, so nothing outside the process
    /// is awaited between the answer and that start (ADR 0350).
    pub(super) defer_answers: bool,
    pub(super) recorded: Arc<Mutex<HashMap<String, ToolResult>>>,
    pub(super) asked: Arc<Asked>,
    /// The one-result-per-call invariant, checked before every request (ADR 0251).
    pub(super) pairing: Mutex<pairing::Pairing>,
    /// Takes a checkpoint before each batch that changes files (ADR 0295).
    pub(super) checkpoints: Option<crate::checkpoint::Checkpointer>,
}

impl DurableRun {
    pub(super) fn book(&self) -> MutexGuard<'_, RunBook> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The history items not saved yet, and how many posted messages they
    /// refer to. Nothing is marked saved: [`Self::saved`] does that once
    /// their commit succeeded.
    pub(super) fn items(&self, history: &[Message]) -> (Vec<HistoryItem>, usize) {
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

    /// Saves what the history gained (after a held call finish, before
    /// `started`), with the taken cursor, under the claim.
    pub(super) async fn save(
        &self,
        history: &[Message],
        started: Vec<Write>,
    ) -> Result<(), RunFailure> {
        // A deferred answer is among the items from the saved position on.
        self.commits.settle(&self.state).await;
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
                self.book().saved(history.len(), refs);
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
    pub(super) fn announce(&self, history: &[Message]) -> Vec<String> {
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

pub(super) fn store_failure(e: StoreError) -> RunFailure {
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
        if let Some(taker) = &self.checkpoints {
            // Rides first in the commit that saves the answer: it marks the
            // conversation before this turn (ADR 0295).
            let write = super::checkpoints::checkpoint_before(taker, history).await?;
            self.commits.restore_held(write.into_iter().collect());
        }
        if self.defer_answers && !calls.is_empty() {
            // Saved with the first call's start, or with the results when
            // none starts (ADR 0350).
            let (items, refs) = self.items(history);
            *self.commits.deferred.lock().await = Some(Deferred {
                items,
                refs,
                through: history.len(),
                flight: None,
            });
        } else {
            self.save(history, Vec::new()).await?;
        }
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
