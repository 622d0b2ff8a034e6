//! Handing runs back on shutdown: this process's runs are cancelled without recording an end and their claims released, so another process takes each thread over at once and carries its run on (ADR 0345).

use std::sync::atomic::Ordering;

use crate::agent::{Outcome, RunResult};
use crate::session::ThreadKey;

use super::engine::{Inner, RunHandle, Runner};
use super::error::RunnerResult;

/// The outcome in the live `end` frame of a run handed back.
pub const HANDED_OVER: &str = "handed_over";

impl Runner {
    /// Gives up this process's runs without ending them, and starts no more.
    ///
    /// # Behavior
    ///
    /// Every run of this process is cancelled; a cancelled run records no
    /// end (it stays `running` in the store, its calls as recorded), its
    /// claim is released, and its live watchers get an `end` frame with the
    /// outcome [`HANDED_OVER`]. A run that ends otherwise at the same time
    /// (completed, failed, paused) is recorded as usual. The next claimant,
    /// in this process or another, takes the thread at once (no claim TTL
    /// to wait out), records the run `failed/abandoned` after giving its
    /// calls their results, and carries it on ([`Runner::take_over`]).
    /// Returns once no run, hand-over or claimant of this process is in
    /// flight.
    pub async fn hand_back(&self) {
        self.inner.handing_back.store(true, Ordering::SeqCst);
        self.aclose().await;
    }

    /// Claims `thread` unless a live claim holds it and carries out what it
    /// was asked, as [`Runner::take_thread`]; with nothing else to do, a run
    /// left behind that carried out the message `message_id` and had not
    /// given its final answer is carried on in a new run.
    ///
    /// # Behavior
    ///
    /// Untaken messages come first (they start the next run, as
    /// [`Runner::take_thread`]); the run left behind is recorded
    /// `failed/abandoned` either way; a run that had given its final
    /// answer is not carried on. Returns the run it started or resumed.
    pub async fn take_over(
        &self,
        thread: &ThreadKey,
        message_id: &str,
    ) -> RunnerResult<Option<RunHandle>> {
        self.inner.take_for(thread, None, Some(message_id)).await
    }
}

impl Inner {
    /// Whether a segment that ended with `result` was handed back: cancelled
    /// while this runner hands its runs back.
    pub(super) fn handed_back(&self, result: &RunResult) -> bool {
        self.handing_back.load(Ordering::SeqCst)
            && matches!(result.outcome, Outcome::Stopped { .. })
    }
}
