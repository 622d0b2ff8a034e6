//! `RunObserver`: how a driver (the session runner) follows a run from inside the loop: steering before each request, the answer before its calls run, each batch's results, and typed failures.

use async_trait::async_trait;

use super::{FailureReason, Outcome};
use crate::message::Message;

/// A failure with a known, stable reason (such as `guardrail_blocked` or
/// `store_failed`): the run ends `failed` with `reason` and `message`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} ({reason})")]
pub struct RunFailure {
    /// A short, stable code.
    pub reason: String,
    /// What happened, for people.
    pub message: String,
}

impl RunFailure {
    /// A failure for `reason`, described by `message`.
    pub fn new(reason: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
            message: message.into(),
        }
    }

    pub(crate) fn into_outcome(self) -> Outcome {
        Outcome::Failed {
            reason: FailureReason::Other(self.reason),
            message: self.message,
        }
    }
}

/// Follows a run from inside the agent loop. Every method has a default that
/// does nothing, so an observer implements only what it needs.
#[async_trait]
pub trait RunObserver: Send + Sync {
    /// Called before each model request, the first included.
    ///
    /// # Behavior
    /// Returns messages to append to the history before the request is made
    /// (steering: what someone said while the run ran). An `Err` ends the run
    /// `failed` with the error's reason, before the request.
    async fn before_request(&self, _history: &[Message]) -> Result<Vec<Message>, RunFailure> {
        Ok(Vec::new())
    }

    /// Called once the model's answer is appended to the history, before any
    /// of its tool calls runs (and also for a final answer without calls).
    ///
    /// # Behavior
    /// A durable driver saves the answer here, so a run resumed after a crash
    /// in the middle of the batch finds the calls it made. An `Err` ends the
    /// run `failed` before any call runs; the history then ends with calls
    /// that have no results, which the driver repairs before the next run.
    async fn answered(&self, _history: &[Message]) -> Result<(), RunFailure> {
        Ok(())
    }

    /// Called once a batch's calls are decided, before any of them runs, with
    /// the ids of the calls that will not run (refused by a check or a hook,
    /// sent for approval, or cancelled).
    ///
    /// # Behavior
    /// Must not block: a durable driver notes there that no finish of these
    /// calls is to come, so the finish of the batch's last running call rides
    /// in the commit that saves the results (ADR 0245).
    fn calls_decided(&self, _not_run: &[&str]) {}

    /// Called once a batch's results are appended to the history.
    ///
    /// # Behavior
    /// Returns `Some(reason)` to pause the run (a call asked a question that
    /// waits for an answer); the run then ends `paused` unless the batch failed
    /// or was stopped. An `Err` ends the run `failed`.
    async fn batch_ended(&self, _history: &[Message]) -> Result<Option<String>, RunFailure> {
        Ok(None)
    }
}
