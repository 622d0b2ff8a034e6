//! Riding out a store that fails for a moment: a commit that met an error that may pass (a lock, a lost connection, a restart) is tried again, the same commit, on the store's next connection, for as long as the claim holds (ADR 0250).
//!
//! A retried commit is idempotent: every commit the runner retries carries a
//! command key of its own, so an attempt that took effect although its answer
//! was lost makes the next attempt fail `DuplicateCommand`, which says the
//! commit is in.

use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use crate::agent::CancelToken;
use crate::session::{
    CommandKey, Commit, Committed, SessionStore, StoreError, StoreErrorKind, StoreResult, ThreadKey,
};

/// The sender the runner's own commit keys are recorded under (never a surface's sender: it holds a `/`).
pub(crate) const COMMIT_SENDER: &str = "burrow/commit";

/// The first pause before a retry; each next one doubles, up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(25);
/// The longest pause between two attempts.
const MAX_PAUSE: Duration = Duration::from_secs(1);

/// Whether a store error may pass if the call is tried again (the database
/// failed: locked, the connection lost, the server restarting). Refusals
/// (stale claim, invalid state, ...) never pass.
pub(crate) fn transient(e: &StoreError) -> bool {
    e.kind() == StoreErrorKind::Storage
}

/// How long a failing call may be tried again.
#[derive(Clone, Debug)]
pub(crate) struct Window {
    /// Cancelled when the claim is lost: no retry after that.
    lost: Option<CancelToken>,
    /// No retry starts after this instant.
    until: Option<Instant>,
}

impl Window {
    /// For as long as the claim watched by `lost` holds.
    pub(crate) fn claim(lost: CancelToken) -> Self {
        Self {
            lost: Some(lost),
            until: None,
        }
    }

    /// For two thirds of `ttl` from now: a caller with no renewed claim
    /// (a sender, a claimant planning) gives up before a claim it took lapses.
    pub(crate) fn within(ttl: Duration) -> Self {
        Self {
            lost: None,
            until: Some(Instant::now() + ttl * 2 / 3),
        }
    }

    fn open(&self, pause: Duration) -> bool {
        let lost = self.lost.as_ref().is_some_and(CancelToken::is_cancelled);
        let late = self.until.is_some_and(|u| Instant::now() + pause > u);
        !lost && !late
    }

    /// Waits `pause`, or less if the claim is lost meanwhile; false when it was.
    async fn pause(&self, pause: Duration) -> bool {
        match &self.lost {
            Some(lost) => tokio::select! {
                () = lost.cancelled() => false,
                () = tokio::time::sleep(pause) => true,
            },
            None => {
                tokio::time::sleep(pause).await;
                true
            }
        }
    }
}

/// A fresh key for one commit of the runner's own, in `thread`'s workspace.
pub(crate) fn commit_key(thread: &ThreadKey) -> CommandKey {
    CommandKey {
        scope: thread.scope.clone(),
        sender: COMMIT_SENDER.to_owned(),
        command_id: uuid::Uuid::now_v7().simple().to_string(),
    }
}

/// `commit` with a key of its own (when it carries no command), so it can be retried.
pub(crate) fn keyed(thread: &ThreadKey, commit: Commit) -> Commit {
    if commit.command.is_some() {
        commit
    } else {
        commit.command(commit_key(thread), Value::Null)
    }
}

/// Applies `commit` (give it a key with [`keyed`]), trying again while
/// `window` is open after an error that may pass. An attempt refused as a
/// duplicate after an earlier one failed means the earlier one took effect:
/// that is a success, with no seqs (the thread's head read back).
pub(crate) async fn commit(
    store: &dyn SessionStore,
    thread: &ThreadKey,
    commit: Commit,
    window: &Window,
) -> StoreResult<Committed> {
    let mut pause = FIRST_PAUSE;
    let mut failed = false;
    loop {
        match store.commit(thread, commit.clone()).await {
            Ok(done) => return Ok(done),
            Err(e)
                if failed
                    && e.kind() == StoreErrorKind::DuplicateCommand
                    && commit
                        .command
                        .as_ref()
                        .is_some_and(|c| c.key.sender == COMMIT_SENDER) =>
            {
                return applied(store, thread, window).await;
            }
            Err(e) if transient(&e) && window.open(pause) => {
                tracing::warn!(error = %e, pause_ms = pause.as_millis() as u64, "a session commit failed; trying it again");
                if !window.pause(pause).await {
                    return Err(e);
                }
                pause = (pause * 2).min(MAX_PAUSE);
                failed = true;
            }
            Err(e) => return Err(e),
        }
    }
}

/// What a commit that took effect on an earlier attempt left: the thread's head now.
async fn applied(
    store: &dyn SessionStore,
    thread: &ThreadKey,
    window: &Window,
) -> StoreResult<Committed> {
    let info = call(window, || store.thread(thread)).await?;
    Ok(Committed {
        seqs: Vec::new(),
        head_seq: info.as_ref().map_or(0, |i| i.head_seq),
        history_len: info.map_or(0, |i| i.history_len),
    })
}

/// Runs a store call (a read, a claim call) again while `window` is open after an error that may pass.
pub(crate) async fn call<T, F, Fut>(window: &Window, mut f: F) -> StoreResult<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = StoreResult<T>>,
{
    let mut pause = FIRST_PAUSE;
    loop {
        match f().await {
            Ok(v) => return Ok(v),
            Err(e) if transient(&e) && window.open(pause) => {
                if !window.pause(pause).await {
                    return Err(e);
                }
                pause = (pause * 2).min(MAX_PAUSE);
            }
            Err(e) => return Err(e),
        }
    }
}
