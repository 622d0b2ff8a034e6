//! Capabilities: code that wraps a whole run and each tool call (before, around, after, on error), so features such as todos or an artifact workspace plug into the loop without changing it.
//!
//! A capability sees a run start and end, and every call the batch
//! executor is about to run. Registration order is nesting order: the first
//! capability added is the outermost, so its `before_*` runs first and its
//! `after_*` last, and its `around_call` wraps every later one's. Calls that
//! never run (unknown tool, invalid arguments, denied by a hook) reach no
//! capability: a capability wraps work, not refusals the loop already gave.

use async_trait::async_trait;
use futures::future::BoxFuture;
use serde_json::Value;

use super::{Outcome, RunFailure};
use crate::message::{Message, ToolCall};
use crate::tool::ToolOutput;

/// What a capability knows about the run it wraps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunInfo {
    /// The run's id.
    pub run_id: String,
    /// The thread it belongs to, if any.
    pub thread_id: Option<String>,
}

/// What a capability knows about a call it wraps.
#[derive(Debug, Clone, Copy)]
pub struct CallInfo<'a> {
    /// The run making the call.
    pub run_id: &'a str,
    /// The model's id for the call.
    pub call_id: &'a str,
    /// The tool's name.
    pub tool: &'a str,
    /// The arguments the tool runs with (after every hook).
    pub arguments: &'a Value,
    /// Every call of the model answer this call belongs to, in call order
    /// (this one among them), as the model made them: what a capability
    /// that allows one call of a kind per answer looks at.
    pub batch: &'a [ToolCall],
}

/// A tool call's work as a capability's `around_call` receives it: the
/// tool's output, or its failure as one sentence.
pub type CallWork<'a> = BoxFuture<'a, Result<ToolOutput, String>>;

/// Wraps a run and each of its tool calls. Every method has a default that
/// does nothing, so a capability implements only what it needs.
#[async_trait]
pub trait Capability: Send + Sync {
    /// A short name, for logs and failure messages.
    fn name(&self) -> &str;

    /// Called once before the run's first model request.
    ///
    /// # Behavior
    /// An `Err` ends the run `failed` with the error's reason before any
    /// request is made; capabilities after this one are not asked, and the
    /// `after_run` of the ones already asked still runs.
    async fn before_run(&self, _run: &RunInfo) -> Result<(), RunFailure> {
        Ok(())
    }

    /// Called once the run has ended, whatever its outcome.
    ///
    /// # Behavior
    /// Called for every capability whose `before_run` was called (also when a
    /// later one refused the run), in reverse registration order.
    async fn after_run(&self, _run: &RunInfo, _outcome: &Outcome) {}

    /// Called before each model request of the run (the first included),
    /// after the driver's steering is appended.
    ///
    /// # Behavior
    /// Returns messages to append to the history before the request is made
    /// (notes of what changed around the run); they are kept in the history
    /// like any other message. Capabilities are asked in registration order.
    /// An `Err` ends the run `failed` with the error's reason, before the request.
    async fn before_request(
        &self,
        _run: &RunInfo,
        _history: &[Message],
    ) -> Result<Vec<Message>, RunFailure> {
        Ok(Vec::new())
    }

    /// Called when the model answered without calls, before the run ends
    /// (and before the Stop hooks).
    ///
    /// # Behavior
    /// May wait for work the run started (such as background tasks); the
    /// loop stops waiting and ends the run stopped when the run is
    /// cancelled. Messages it returns are appended to the history and the
    /// run goes on to another model request; none (the default) lets it end.
    async fn before_end(&self, _run: &RunInfo) -> Vec<Message> {
        Vec::new()
    }

    /// Called before a call that is about to run.
    ///
    /// # Behavior
    /// An `Err(text)` refuses the call: it does not run, the model gets
    /// `text` as a refusal result, and no capability's `around_call`,
    /// `after_call` or `on_call_error` is called for it.
    async fn before_call(&self, _call: &CallInfo<'_>) -> Result<(), String> {
        Ok(())
    }

    /// Wraps a call's work: awaits `work` (or decides not to) and returns
    /// its result, possibly changed.
    ///
    /// # Behavior
    /// The default awaits `work` unchanged. A capability that returns
    /// without awaiting `work` keeps the tool from running. Capabilities nest
    /// in registration order (the first is the outermost).
    fn around_call<'a>(&'a self, _call: CallInfo<'a>, work: CallWork<'a>) -> CallWork<'a> {
        work
    }

    /// Called after a call produced output (a success or a refusal).
    ///
    /// # Behavior
    /// May change the output the model reads; called in reverse registration
    /// order, so the outermost capability sees the last word.
    async fn after_call(&self, _call: &CallInfo<'_>, _output: &mut ToolOutput) {}

    /// Called after a call failed (the tool's `Err` or panic), which ends the run.
    ///
    /// # Behavior
    /// Observes only: the failure still ends the run. Called in reverse
    /// registration order.
    async fn on_call_error(&self, _call: &CallInfo<'_>, _error: &str) {}
}
