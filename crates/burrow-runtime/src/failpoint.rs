//! Test-only crash points (feature `failpoints`): a [`Failpoint`] set on a run is asked at every step of each tool call and of each commit, and can stop the run there for good, as a process killed at that instant would.
//!
//! Without the feature none of this is compiled: the call sites vanish, so a
//! release build pays nothing for them.

use std::sync::Arc;

/// A step of a run where a crash can be simulated.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum CrashPoint {
    /// The call passed its checks; its `PreToolUse` hooks are about to run.
    BeforePreToolUse {
        /// The call.
        call_id: String,
    },
    /// The call's decision is reached (allow, deny or ask), nothing of it is saved.
    Decided {
        /// The call.
        call_id: String,
    },
    /// The call is recorded started (its commit is in); the tool has not run yet.
    Started {
        /// The call.
        call_id: String,
    },
    /// The tool returned; its result is not recorded yet.
    ToolEnded {
        /// The call.
        call_id: String,
    },
    /// The segment's `nth` commit (from 1) is about to be made.
    BeforeCommit {
        /// Which commit of the segment.
        nth: usize,
    },
    /// The segment's `nth` commit (from 1) is in.
    AfterCommit {
        /// Which commit of the segment.
        nth: usize,
    },
}

/// Decides where a run crashes.
pub trait Failpoint: Send + Sync + std::fmt::Debug {
    /// Called as the run reaches `point`.
    ///
    /// # Behavior
    /// Returns true to crash there: the run's task stops at that point and is
    /// never woken again (it does nothing more, commits nothing more), as if
    /// its process had died; the claim it holds lapses once nothing renews
    /// it. Returns false to go on. Called on the run's task: it must not block.
    fn crash(&self, point: &CrashPoint) -> bool;
}

/// Stops the calling task for good when `failpoint` crashes at `point`.
pub(crate) async fn reach(failpoint: Option<&Arc<dyn Failpoint>>, point: CrashPoint) {
    if let Some(failpoint) = failpoint
        && failpoint.crash(&point)
    {
        tracing::warn!(?point, "a failpoint crashed the run here");
        std::future::pending::<()>().await;
    }
}
