//! The checkpoint and rewind writes beyond the plain checkpoint row: its pre-images, retention, and the two commits of a rewind (ADR 0294, ADR 0295).

use super::apply::State;
use crate::checkpoint::FileImage;
use crate::session::error::{StoreError, StoreResult};
use crate::session::rules::HistoryRow;
use crate::session::types::{EventKind, HistoryItem, RewindIntent, ThreadStatus};

impl State<'_> {
    /// Refuses `what` while the thread has a rewind begun and not finished.
    pub(super) fn no_rewind_pending(&self, what: &str) -> StoreResult<()> {
        match &self.thread.rewind {
            Some(intent) => Err(StoreError::invalid_state(format!(
                "cannot {what}: thread {} has an unfinished rewind to checkpoint {}; run the rewind again to finish it",
                self.key.thread, intent.checkpoint_id
            ))),
            None => Ok(()),
        }
    }

    /// Adds the turn, metadata, pre-images and retention to the checkpoint just saved.
    pub(super) fn checkpoint_extras(
        &mut self,
        checkpoint_id: String,
        turn: Option<u32>,
        metadata: serde_json::Map<String, serde_json::Value>,
        files: Vec<FileImage>,
        keep: Option<u32>,
    ) {
        if let Some(c) = self
            .new_checkpoints
            .iter_mut()
            .rev()
            .find(|c| c.id == checkpoint_id)
        {
            c.turn = turn;
            c.metadata = metadata;
            c.paths = files.iter().map(|f| f.path.clone()).collect();
        }
        self.new_checkpoint_files.push((checkpoint_id, files));
        if let Some(keep) = keep {
            let keep = usize::try_from(keep).unwrap_or(usize::MAX).max(1);
            self.checkpoint_keep = Some(self.checkpoint_keep.map_or(keep, |k| k.min(keep)));
        }
    }

    /// Records the intent of a rewind to `checkpoint_id`, refused while a run is unfinished.
    pub(super) fn begin_rewind(
        &mut self,
        checkpoint_id: String,
        history_len: u64,
        files: bool,
        conversation: bool,
    ) -> StoreResult<EventKind> {
        if self.thread.status != ThreadStatus::Idle {
            let run = self.thread.active_run.clone().unwrap_or_default();
            return Err(StoreError::invalid_state(format!(
                "thread {} has an unfinished run {run}; a running or paused thread cannot be rewound",
                self.key.thread
            )));
        }
        self.no_rewind_pending("begin another rewind")?;
        if !self.checkpoints.contains(&checkpoint_id) {
            return Err(StoreError::not_found(format!(
                "thread {} has no checkpoint {checkpoint_id}",
                self.key.thread
            )));
        }
        if history_len > self.thread.history_len {
            return Err(StoreError::invalid_argument(format!(
                "checkpoint {checkpoint_id} cannot cover {history_len} entries: thread {}'s history has {}",
                self.key.thread, self.thread.history_len
            )));
        }
        self.thread.rewind = Some(RewindIntent {
            checkpoint_id: checkpoint_id.clone(),
            history_len,
            files,
            conversation,
            at_ms: self.now,
        });
        Ok(EventKind::RewindBegun { checkpoint_id })
    }

    /// Finishes the begun rewind: the history entry (when the conversation moves back), the intent cleared.
    pub(super) fn finish_rewind(&mut self, checkpoint_id: String) -> StoreResult<EventKind> {
        let intent = match &self.thread.rewind {
            Some(i) if i.checkpoint_id == checkpoint_id => i.clone(),
            _ => {
                return Err(StoreError::invalid_state(format!(
                    "thread {} has no begun rewind to checkpoint {checkpoint_id}",
                    self.key.thread
                )));
            }
        };
        if intent.conversation {
            self.new_history.push(HistoryRow {
                pos: self.thread.history_len,
                run_id: None,
                item: HistoryItem::Rewind {
                    checkpoint_id: checkpoint_id.clone(),
                    history_len: intent.history_len,
                },
            });
            self.thread.history_len += 1;
        }
        self.thread.rewind = None;
        Ok(EventKind::Rewound { checkpoint_id })
    }
}
