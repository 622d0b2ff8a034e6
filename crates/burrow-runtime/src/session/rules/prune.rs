//! Retention: what [`SessionStore::prune`](crate::session::SessionStore::prune) may forget of one thread, decided once for every store (ADR 0255).

use crate::message::Message;
use crate::session::types::{HistoryItem, RunRecord, ThreadInfo, ToolCallRecord};

/// What pruning one thread forgets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ThreadPrune {
    /// Events with a seq below this one (and committed before the cutoff)
    /// go; the unfinished run's events, from its `run_started` on, stay.
    pub events_below_seq: u64,
    /// The runs whose tool-call records go (ended before the cutoff).
    pub runs: Vec<String>,
}

/// What of `thread` (its `runs`, oldest first, and the run of its last
/// assistant message in the history) is forgotten by a prune at `before_ms`.
///
/// - Events: those before the unfinished run's `run_started` event, when
///   the thread has one; otherwise all (each also only when older than the
///   cutoff, which the store checks per event).
/// - Tool-call records: those of every run that ended before the cutoff,
///   except the run of the last assistant message, whose unanswered calls
///   the next run answers from its records (ADR 0251). An unfinished run's
///   records always stay.
pub(crate) fn plan(
    thread: &ThreadInfo,
    runs: &[RunRecord],
    last_assistant_run: Option<&str>,
    before_ms: i64,
) -> ThreadPrune {
    let events_below_seq = match &thread.active_run {
        None => u64::MAX,
        Some(active) => runs
            .iter()
            .find(|r| &r.run_id == active)
            // A thread whose active run has no record is kept whole.
            .map_or(0, |r| r.started_seq),
    };
    let runs = runs
        .iter()
        .filter(|r| {
            r.status.is_ended()
                && r.ended_at_ms.is_some_and(|at| at < before_ms)
                && Some(r.run_id.as_str()) != last_assistant_run
                && thread.active_run.as_deref() != Some(r.run_id.as_str())
        })
        .map(|r| r.run_id.clone())
        .collect();
    ThreadPrune {
        events_below_seq,
        runs,
    }
}

/// Whether a history item is an assistant message (what the next run's
/// repair looks for, from the end).
pub(crate) fn is_assistant(item: &HistoryItem) -> bool {
    matches!(
        item,
        HistoryItem::Message {
            message: Message::Assistant { .. }
        }
    )
}

/// The item that replaces `item` once the record `call` it refers to is
/// forgotten: the result inline, so the history reads the same. `None`
/// when `item` refers to no record (it stays as it is).
pub(crate) fn inline(item: &HistoryItem, call: Option<&ToolCallRecord>) -> Option<HistoryItem> {
    match item {
        HistoryItem::ToolResult { .. } => {
            call.and_then(|c| c.result.clone())
                .map(|result| HistoryItem::Message {
                    message: Message::ToolResult(result),
                })
        }
        _ => None,
    }
}
