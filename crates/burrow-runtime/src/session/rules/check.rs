//! The names and sizes a commit may carry, refused before a store loads anything.

use std::collections::BTreeMap;

use crate::session::error::{StoreError, StoreResult};
use crate::session::types::{
    CommandKey, Commit, HistoryItem, MAX_LABEL_NAME, MAX_LABEL_VALUE, MAX_RUN_LABELS, ThreadKey,
    Write,
};

/// Refuses an empty name or one holding NUL (PostgreSQL cannot store it, and no id needs it).
pub(crate) fn check_name(what: &str, value: &str) -> StoreResult<()> {
    if value.is_empty() {
        return Err(StoreError::invalid_argument(format!("the {what} is empty")));
    }
    if value.contains('\0') {
        return Err(StoreError::invalid_argument(format!(
            "the {what} holds a NUL character"
        )));
    }
    Ok(())
}

pub(crate) fn check_thread(key: &ThreadKey) -> StoreResult<()> {
    check_name("tenant", &key.scope.tenant)?;
    check_name("workspace", &key.scope.workspace)?;
    check_name("thread id", &key.thread)
}

fn check_names(commit: &Commit) -> StoreResult<()> {
    if let Some(f) = &commit.fence {
        check_name("fence's holder", &f.holder)?;
    }
    for write in &commit.writes {
        match write {
            Write::PostMessage { id, author, .. } => {
                check_name("message id", id)?;
                check_name("author", author)?;
            }
            Write::AppendHistory { run_id, items } => {
                if let Some(r) = run_id {
                    check_name("run id", r)?;
                }
                for item in items {
                    match item {
                        HistoryItem::Posted { message_id } => check_name("message id", message_id)?,
                        HistoryItem::ToolResult { call_id } => check_name("call id", call_id)?,
                        HistoryItem::Message { .. } => {}
                        HistoryItem::Rewind { checkpoint_id, .. } => {
                            check_name("checkpoint id", checkpoint_id)?
                        }
                    }
                }
            }
            Write::StartRun {
                run_id,
                message_ids,
                requested_by,
                labels,
                ..
            } => {
                check_name("run id", run_id)?;
                for m in message_ids {
                    check_name("message id", m)?;
                }
                if let Some(a) = requested_by {
                    check_name("author", a)?;
                }
                check_labels(labels)?;
            }
            Write::ResumeRun {
                run_id,
                requested_by,
            } => {
                check_name("run id", run_id)?;
                if let Some(a) = requested_by {
                    check_name("author", a)?;
                }
            }
            Write::PauseRun { run_id, requests } => {
                check_name("run id", run_id)?;
                for r in requests {
                    check_name("request id", &r.id)?;
                    check_name("call id", &r.call_id)?;
                    check_name("tool name", &r.tool_name)?;
                }
            }
            Write::AnswerRequest {
                run_id,
                request_id,
                answer,
            } => {
                check_name("run id", run_id)?;
                check_name("request id", request_id)?;
                check_name("author", &answer.author)?;
                if let Some(m) = &answer.message_id {
                    check_name("message id", m)?;
                }
            }
            Write::EndRun { run_id, end } => {
                check_name("run id", run_id)?;
                if let Some(reason) = end.reason() {
                    check_name("reason", reason)?;
                }
            }
            Write::ToolStarted {
                run_id,
                call_id,
                name,
                effect_key,
            } => {
                check_name("run id", run_id)?;
                check_name("call id", call_id)?;
                check_name("tool name", name)?;
                if let Some(k) = effect_key {
                    check_name("effect key", k)?;
                }
            }
            Write::ToolFinished {
                run_id, call_id, ..
            } => {
                check_name("run id", run_id)?;
                check_name("call id", call_id)?;
            }
            Write::RecordUsage { run_id, .. } => check_name("run id", run_id)?,
            Write::SaveCheckpoint {
                checkpoint_id,
                files,
                ..
            } => {
                check_name("checkpoint id", checkpoint_id)?;
                for f in files {
                    check_name("checkpoint file path", &f.path)?;
                }
            }
            Write::BeginRewind { checkpoint_id, .. } | Write::FinishRewind { checkpoint_id } => {
                check_name("checkpoint id", checkpoint_id)?;
            }
        }
    }
    for c in &commit.cursors {
        check_name("cursor name", &c.name)?;
    }
    if let Some(cmd) = &commit.command {
        check_command(&cmd.key)?;
    }
    Ok(())
}

/// Refuses labels over the limits of [`Write::StartRun`]'s `labels`.
fn check_labels(labels: &BTreeMap<String, String>) -> StoreResult<()> {
    if labels.len() > MAX_RUN_LABELS {
        return Err(StoreError::invalid_argument(format!(
            "a run carries at most {MAX_RUN_LABELS} labels, not {}",
            labels.len()
        )));
    }
    for (name, value) in labels {
        check_name("label name", name)?;
        if name.len() > MAX_LABEL_NAME {
            return Err(StoreError::invalid_argument(format!(
                "a label name is at most {MAX_LABEL_NAME} bytes, not {}",
                name.len()
            )));
        }
        if value.len() > MAX_LABEL_VALUE || value.contains('\0') {
            return Err(StoreError::invalid_argument(format!(
                "label {name}'s value must be at most {MAX_LABEL_VALUE} bytes, without NUL"
            )));
        }
    }
    Ok(())
}

/// Checks a command key's names.
pub(crate) fn check_command(key: &CommandKey) -> StoreResult<()> {
    check_name("tenant", &key.scope.tenant)?;
    check_name("workspace", &key.scope.workspace)?;
    check_name("command sender", &key.sender)?;
    check_name("command id", &key.command_id)
}

/// Checks the ids of `commit` before a store loads anything.
pub(crate) fn precheck(key: &ThreadKey, commit: &Commit) -> StoreResult<()> {
    check_thread(key)?;
    check_names(commit)?;
    if let Some(cmd) = &commit.command
        && cmd.key.scope != key.scope
    {
        return Err(StoreError::invalid_argument(
            "the command's workspace is not the thread's workspace",
        ));
    }
    Ok(())
}
