//! Keeping a thread claim alive: renewed every third of its TTL, lost exactly one TTL after the last renewal that succeeded began (even while a renewal hangs), and a lost claim cancels its run.

use std::time::Duration;

use futures::future::BoxFuture;
use tokio::time::{Instant, sleep_until};

use crate::agent::CancelToken;

/// The default claim TTL (30 s).
pub const DEFAULT_CLAIM_TTL: Duration = Duration::from_secs(30);

/// Why a renewal did not renew.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RenewError {
    /// Someone else holds the thread now (or the token is stale): the claim is lost.
    Lost,
    /// The store failed; the next tick tries again.
    Failed(String),
}

/// Renews a claim until `done` is cancelled; cancels `lost` (and so the run)
/// when the claim is lost. `began` is when the acquisition began.
///
/// The timer runs on tokio's monotonic clock: the claim counts as lost
/// exactly `ttl` after the last successful renewal *began* (the store's
/// expiry can only be later than that), whatever a hanging renewal does.
pub(crate) async fn keep_claim<F>(
    ttl: Duration,
    began: Instant,
    renew: F,
    done: CancelToken,
    lost: CancelToken,
) where
    F: Fn() -> BoxFuture<'static, Result<(), RenewError>> + Send,
{
    let period = ttl / 3;
    let mut valid_until = began + ttl;
    let mut next_tick = began + period;
    loop {
        tokio::select! {
            biased;
            () = done.cancelled() => return,
            () = sleep_until(valid_until) => {
                tracing::warn!("thread claim lapsed before it could be renewed; the run is cancelled");
                lost.cancel();
                return;
            }
            () = sleep_until(next_tick) => {}
        }
        let tick = Instant::now();
        next_tick = tick + period;
        let outcome = tokio::select! {
            biased;
            () = done.cancelled() => return,
            () = sleep_until(valid_until) => {
                tracing::warn!("a claim renewal hung past the claim's TTL; the run is cancelled");
                lost.cancel();
                return;
            }
            outcome = renew() => outcome,
        };
        match outcome {
            Ok(()) => valid_until = tick + ttl,
            Err(RenewError::Lost) => {
                tracing::warn!("the thread claim was taken over; the run is cancelled");
                lost.cancel();
                return;
            }
            Err(RenewError::Failed(why)) => {
                tracing::warn!(error = %why, "a claim renewal failed; trying again at the next tick");
            }
        }
    }
}
