//! Turn ports: `TurnContext`, entered around each turn (a run segment) inside its span, and `TurnEvaluator`, given each ended turn to judge in the background.

use std::any::Any;

use crate::message::Usage;
use crate::session::ThreadKey;

/// A turn: one run segment the runner drives (a new run, or a paused run resumed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnInfo {
    /// The thread.
    pub thread: ThreadKey,
    /// The run.
    pub run_id: String,
    /// Whose message or answer started the segment, if anyone's.
    pub requested_by: Option<String>,
}

/// A turn that has ended, as the runner hands it to its evaluators.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndedTurn {
    /// The turn.
    pub turn: TurnInfo,
    /// `completed`, `paused`, `failed` or `stopped`.
    pub outcome: &'static str,
    /// The failure's stable reason, or the pause's or stop's text.
    pub reason: Option<String>,
    /// Model requests made in the segment.
    pub requests: usize,
    /// The segment's usage.
    pub usage: Usage,
}

/// What a [`TurnContext`] keeps alive for the length of a turn (dropped when it ends).
pub type TurnGuard = Box<dyn Any + Send>;

/// Entered around each turn, inside the turn's span (the segment's `run` span,
/// ADR 0190): a port, so a backend that
/// attributes turns its own way (propagated trace attributes, a log context)
/// plugs in without the runner knowing it.
pub trait TurnContext: Send + Sync {
    /// Enters the context for `turn`.
    ///
    /// # Behavior
    /// Called as the turn starts, on the turn's task; the guard it returns is
    /// dropped once the turn has ended and its end is recorded. It must not
    /// block.
    fn enter(&self, turn: &TurnInfo) -> TurnGuard;
}

/// Judges turns after they end: a port (an online evaluator adapts to it).
pub trait TurnEvaluator: Send + Sync {
    /// Starts judging `turn` in the background and returns at once.
    ///
    /// # Behavior
    /// The runner calls it as the turn ends and does not wait for the judgment.
    /// An `Err` (or a panic) is recorded on the turn's span (the segment's
    /// `run` span) as a `warn` event and never reaches the turn or the other
    /// evaluators.
    fn submit(&self, turn: &EndedTurn) -> Result<(), String>;
}
