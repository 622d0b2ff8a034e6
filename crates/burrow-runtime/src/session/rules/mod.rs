//! The store rules, written once: whether a commit or a claim change is valid, and what it changes, over rows a store loaded in its transaction.
//!
//! A store calls [`needs`] to learn which rows a commit touches, loads them
//! into a [`Snapshot`] inside its transaction (rows locked where the store
//! locks), calls [`apply`], and saves the [`Changes`] in the same
//! transaction. The claim functions work the same way over one [`ClaimRow`].
//!
//! - `check`: the names and sizes every store refuses before it loads anything.
//! - `apply`: a commit's writes applied, one function per write.
//! - `claim`: acquiring, renewing and releasing a thread's claim.
//! - `prune`: what retention forgets of a thread.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::error::{StoreError, StoreResult};
use super::types::{
    Checkpoint, Claim, CommandRecord, Commit, Committed, Event, HistoryItem, PostedMessage,
    RunRecord, ThreadInfo, ToolCallRecord, Write,
};
use crate::checkpoint::FileImage;
use crate::message::Message;

mod apply;
mod check;
mod claim;
pub(crate) mod prune;
mod rewind;

pub(crate) use apply::apply;
pub(crate) use check::{check_command, check_name, check_thread, precheck};
pub(crate) use claim::{acquire, release, renew};

/// A thread's claim as stored: the holder is `None` once released; the token stays.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ClaimRow {
    pub holder: Option<String>,
    pub token: u64,
    pub expires_at_ms: i64,
}

impl ClaimRow {
    fn current(&self) -> Option<Claim> {
        self.holder.as_ref().map(|holder| Claim {
            holder: holder.clone(),
            token: self.token,
            expires_at_ms: self.expires_at_ms,
        })
    }
}

/// The rows a commit reads, by key.
#[derive(Debug, Default)]
pub(crate) struct Needs {
    pub runs: BTreeSet<String>,
    pub calls: BTreeSet<(String, String)>,
    pub messages: BTreeSet<String>,
    pub cursors: BTreeSet<String>,
    pub checkpoints: BTreeSet<String>,
}

/// The rows a store loaded for a commit (only those that exist).
#[derive(Debug, Default)]
pub(crate) struct Snapshot {
    pub thread: Option<ThreadInfo>,
    pub claim: Option<ClaimRow>,
    /// Runs of the workspace, by id (any thread).
    pub runs: BTreeMap<String, RunRecord>,
    /// Tool calls by (run, call).
    pub calls: BTreeMap<(String, String), ToolCallRecord>,
    /// Posted messages of the workspace: id to thread.
    pub messages: BTreeMap<String, String>,
    pub cursors: BTreeMap<String, u64>,
    /// Checkpoint ids of this thread that exist.
    pub checkpoints: BTreeSet<String>,
    /// Whether the commit's command key is recorded already.
    pub command_exists: bool,
}

/// One history row to insert.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HistoryRow {
    pub pos: u64,
    pub run_id: Option<String>,
    pub item: HistoryItem,
}

/// What a valid commit writes.
#[derive(Debug)]
pub(crate) struct Changes {
    /// The thread's row after the commit.
    pub thread: ThreadInfo,
    pub messages: Vec<PostedMessage>,
    pub history: Vec<HistoryRow>,
    /// Runs after the commit (each touched run once; insert or replace).
    pub runs: Vec<RunRecord>,
    /// The ids of the runs this commit started (inserted, never replacing).
    /// Only the PostgreSQL store asks (it inserts new rows apart from updates).
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub new_runs: BTreeSet<String>,
    /// Tool calls after the commit (insert or replace).
    pub calls: Vec<ToolCallRecord>,
    pub events: Vec<Event>,
    /// Cursors after the commit (insert or replace).
    pub cursors: Vec<(String, u64)>,
    pub checkpoints: Vec<Checkpoint>,
    /// The pre-images of the checkpoints saved, by checkpoint id (saved beside their rows).
    pub checkpoint_files: Vec<(String, Vec<FileImage>)>,
    /// Keep only the thread's newest this many checkpoints after the commit.
    pub checkpoint_keep: Option<usize>,
    pub command: Option<CommandRecord>,
    pub committed: Committed,
}

/// The rows `commit` reads.
pub(crate) fn needs(commit: &Commit) -> Needs {
    let mut n = Needs::default();
    for write in &commit.writes {
        match write {
            Write::PostMessage { id, .. } => {
                n.messages.insert(id.clone());
            }
            Write::AppendHistory { run_id, items } => {
                if let Some(run) = run_id {
                    n.runs.insert(run.clone());
                }
                for item in items {
                    match item {
                        HistoryItem::Posted { message_id } => {
                            n.messages.insert(message_id.clone());
                        }
                        HistoryItem::ToolResult { call_id } => {
                            if let Some(run) = run_id {
                                n.calls.insert((run.clone(), call_id.clone()));
                            }
                        }
                        HistoryItem::Message { .. } | HistoryItem::Rewind { .. } => {}
                    }
                }
            }
            Write::StartRun {
                run_id,
                message_ids,
                ..
            } => {
                n.runs.insert(run_id.clone());
                n.messages.extend(message_ids.iter().cloned());
            }
            Write::ResumeRun { run_id, .. }
            | Write::PauseRun { run_id, .. }
            | Write::EndRun { run_id, .. }
            | Write::RecordUsage { run_id, .. } => {
                n.runs.insert(run_id.clone());
            }
            Write::AnswerRequest { run_id, answer, .. } => {
                n.runs.insert(run_id.clone());
                if let Some(m) = &answer.message_id {
                    n.messages.insert(m.clone());
                }
            }
            Write::ToolStarted {
                run_id, call_id, ..
            }
            | Write::ToolFinished {
                run_id, call_id, ..
            } => {
                n.runs.insert(run_id.clone());
                n.calls.insert((run_id.clone(), call_id.clone()));
            }
            Write::SaveCheckpoint { checkpoint_id, .. }
            | Write::BeginRewind { checkpoint_id, .. } => {
                n.checkpoints.insert(checkpoint_id.clone());
            }
            Write::FinishRewind { .. } => {}
        }
    }
    n.cursors = commit.cursors.iter().map(|c| c.name.clone()).collect();
    n
}

/// The message a history item stands for, given its posted message or tool call.
pub(crate) fn resolve(
    item: &HistoryItem,
    posted: Option<&PostedMessage>,
    call: Option<&ToolCallRecord>,
) -> StoreResult<Message> {
    match item {
        HistoryItem::Message { message } => Ok(message.clone()),
        HistoryItem::Rewind {
            checkpoint_id,
            history_len,
        } => Ok(Message::system(format!(
            "The conversation was rewound here to checkpoint {checkpoint_id} (its first {history_len} entries)."
        ))),
        HistoryItem::Posted { message_id } => posted
            .map(|m| Message::user(m.text.clone()))
            .ok_or_else(|| {
                StoreError::corrupt(format!(
                    "the history refers to posted message {message_id}, which is missing"
                ))
            }),
        HistoryItem::ToolResult { call_id } => call
            .and_then(|c| c.result.clone())
            .map(Message::ToolResult)
            .ok_or_else(|| {
                StoreError::corrupt(format!(
                    "the history refers to the result of tool call {call_id}, which is missing"
                ))
            }),
    }
}
