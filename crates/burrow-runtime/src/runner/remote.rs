//! Runs driven from another process: a durable stop request the holder of a thread sees while its run goes on, and a sender's wait until its message is carried out, taking the thread over when the holder's claim lapses (ADR 0180).
//!
//! Both use only store primitives that exist already. A stop request is the
//! cursor `stop:RUN_ID` moved to the thread's head (a cursor move needs no
//! claim, and a cursor only moves forward, so a request is never lost or
//! undone); the run's holder looks at it every [`stop_poll`] and cancels the
//! run when it has moved. A wait reads the `taken` cursor and the thread's
//! claim: once the claim has lapsed (or was released with the message still
//! untaken), the waiter claims the thread itself, which records the run left
//! behind as abandoned and carries out the untaken messages here. A wait
//! rides out a store that fails for a while (ADR 0286).

use std::time::Duration;

use crate::agent::CancelToken;
use crate::session::{
    Commit, RunEnd, RunRecord, RunStatus, SessionStore, ThreadKey, ThreadStatus, Write,
};

use super::engine::{RunHandle, Runner, TAKEN};
use super::error::{RunnerError, RunnerErrorKind, RunnerResult};

/// The longest a holder goes without looking for a stop request.
const MAX_STOP_POLL: Duration = Duration::from_millis(250);

/// The cursor whose move asks the holder of run `run_id` to stop it.
pub fn stop_cursor(run_id: &str) -> String {
    format!("stop:{run_id}")
}

/// How often a holder with claims of `ttl` looks for a stop request: a
/// quarter second, or a third of the TTL when that is shorter.
pub(crate) fn stop_poll(ttl: Duration) -> Duration {
    MAX_STOP_POLL.min(ttl / 3).max(Duration::from_millis(10))
}

/// Cancels `cancel` once a stop of `run_id` is requested; ends when `done` is
/// cancelled. A failed look is logged and tried again at the next tick.
pub(crate) async fn watch_stop(
    store: std::sync::Arc<dyn SessionStore>,
    thread: ThreadKey,
    run_id: String,
    every: Duration,
    cancel: CancelToken,
    done: CancelToken,
) {
    let name = stop_cursor(&run_id);
    loop {
        tokio::select! {
            biased;
            () = done.cancelled() => return,
            () = tokio::time::sleep(every) => {}
        }
        match store.cursor(&thread, &name).await {
            Ok(0) => {}
            Ok(_) => {
                tracing::info!(
                    run_id,
                    "a stop was requested from another process; the run is cancelled"
                );
                cancel.cancel();
                return;
            }
            Err(e) => tracing::warn!(error = %e, "looking for a stop request failed"),
        }
    }
}

/// What [`Runner::request_stop`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopRequest {
    /// The thread has no running or paused run: nothing to stop.
    Idle,
    /// The run was stopped at once (it ran in this process, or it was paused
    /// and is now recorded `stopped`).
    Stopped {
        /// The run.
        run_id: String,
    },
    /// The run runs elsewhere: its holder was asked to stop it (wait with
    /// [`Runner::wait_settled`]).
    Requested {
        /// The run.
        run_id: String,
    },
}

/// How a wait for a posted message ended.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Taken {
    /// This runner took the thread over (the holder's claim lapsed) and runs
    /// the message in this run.
    Here(RunHandle),
    /// A runner elsewhere took the message in this run (`None` when the
    /// thread's runs do not say which).
    Elsewhere(Option<String>),
}

impl Runner {
    /// Stops the thread's run wherever it runs: a run of this process is
    /// cancelled; a paused run is recorded `stopped` under a claim of its own;
    /// a run held by another process is asked to stop through the store, and
    /// its holder cancels it within a quarter second (or a third of its claim
    /// TTL).
    pub async fn request_stop(&self, thread: &ThreadKey) -> RunnerResult<StopRequest> {
        let Some(info) = self.store().thread(thread).await? else {
            return Ok(StopRequest::Idle);
        };
        let Some(run_id) = info.active_run.clone() else {
            return Ok(StopRequest::Idle);
        };
        if self.stop(&thread.scope, &run_id) {
            return Ok(StopRequest::Stopped { run_id });
        }
        if info.status == ThreadStatus::Paused && self.stop_paused(thread, &run_id).await? {
            return Ok(StopRequest::Stopped { run_id });
        }
        self.store()
            .commit(thread, Commit::new().cursor_to_head(stop_cursor(&run_id)))
            .await?;
        Ok(StopRequest::Requested { run_id })
    }

    /// Records the paused run `run_id` stopped, under a claim of its own;
    /// false when another runner holds the thread (it may be resuming it).
    async fn stop_paused(&self, thread: &ThreadKey, run_id: &str) -> RunnerResult<bool> {
        let store = self.store();
        let holder = format!("stop_{}", uuid::Uuid::now_v7().simple());
        let claim = match store
            .acquire_claim(thread, &holder, Duration::from_secs(30))
            .await?
        {
            crate::session::ClaimAttempt::Granted(claim) => claim,
            crate::session::ClaimAttempt::Busy(_) => return Ok(false),
        };
        let ended = store
            .commit(
                thread,
                Commit::new().fenced(claim.fence()).write(Write::EndRun {
                    run_id: run_id.to_owned(),
                    end: RunEnd::Stopped {
                        reason: "stopped".to_owned(),
                    },
                }),
            )
            .await;
        if let Err(e) = store.release_claim(thread, &claim).await {
            tracing::warn!(error = %e, "releasing a thread claim failed; it lapses after its TTL");
        }
        ended?;
        Ok(true)
    }

    /// Waits until the message at `seq` of `thread` is taken, looking every
    /// `poll`. When the thread's claim lapses (its holder died) or is released
    /// with the message still untaken, this runner claims the thread: the run
    /// left behind is recorded `failed/abandoned` and the untaken messages
    /// start a run here. A store that fails in a way that may pass (a lost
    /// connection, a restart) is looked at again every `poll`, for up to the
    /// runner's claim TTL of failures in a row.
    pub async fn wait_taken(
        &self,
        thread: &ThreadKey,
        seq: u64,
        poll: Duration,
    ) -> RunnerResult<Taken> {
        self.follow(thread, true);
        let taken = self.wait_taken_followed(thread, seq, poll).await;
        self.follow(thread, false);
        taken
    }

    async fn wait_taken_followed(
        &self,
        thread: &ThreadKey,
        seq: u64,
        poll: Duration,
    ) -> RunnerResult<Taken> {
        let mut outage = Outage::new(self.inner.config.claim_ttl);
        loop {
            if let Some(handle) = self.running(thread) {
                return Ok(Taken::Here(handle));
            }
            match self.look_taken(thread, seq).await {
                Ok(Some(taken)) => return Ok(taken),
                Ok(None) => outage.over(),
                Err(e) if outage.rides(&e) => {}
                Err(e) => return Err(e),
            }
            tokio::time::sleep(poll).await;
        }
    }

    /// One look of [`Self::wait_taken`]: `None` while the message waits.
    async fn look_taken(&self, thread: &ThreadKey, seq: u64) -> RunnerResult<Option<Taken>> {
        if self.store().cursor(thread, TAKEN).await? >= seq {
            let run = self.taker(thread).await?;
            return Ok(Some(Taken::Elsewhere(run)));
        }
        if self.claim_lapsed(thread).await?
            && let Some(handle) = self.take_thread(thread).await?
        {
            return Ok(Some(Taken::Here(handle)));
        }
        Ok(None)
    }

    /// Waits until run `run_id` is no longer running (ended or paused), looking
    /// every `poll`, and returns its record. When the thread's claim lapses
    /// first, this runner claims the thread, which records the run abandoned
    /// (and carries out any untaken messages here; that run is not waited for).
    /// A store failure that may pass is ridden out as [`Self::wait_taken`] does.
    pub async fn wait_settled(
        &self,
        thread: &ThreadKey,
        run_id: &str,
        poll: Duration,
    ) -> RunnerResult<RunRecord> {
        let mut outage = Outage::new(self.inner.config.claim_ttl);
        loop {
            match self.look_settled(thread, run_id).await {
                Ok(Some(run)) => return Ok(run),
                Ok(None) => outage.over(),
                Err(e) if outage.rides(&e) => {}
                Err(e) => return Err(e),
            }
            tokio::time::sleep(poll).await;
        }
    }

    /// One look of [`Self::wait_settled`]: `None` while the run is running.
    async fn look_settled(
        &self,
        thread: &ThreadKey,
        run_id: &str,
    ) -> RunnerResult<Option<RunRecord>> {
        let settled = |run: Option<RunRecord>| run.filter(|r| r.status != RunStatus::Running);
        let Some(run) = self.store().run(&thread.scope, run_id).await? else {
            return Err(RunnerError::new(
                RunnerErrorKind::NotFound,
                "the run is not in the session store",
            ));
        };
        if run.status != RunStatus::Running {
            return Ok(Some(run));
        }
        if let Some(handle) = self.running(thread)
            && handle.run_id() == run_id
        {
            handle.wait().await;
            return Ok(settled(self.store().run(&thread.scope, run_id).await?));
        }
        if self.claim_lapsed(thread).await? {
            self.take_thread(thread).await?;
            return Ok(settled(self.store().run(&thread.scope, run_id).await?));
        }
        Ok(None)
    }

    /// True when no live claim holds the thread: none, released, or lapsed
    /// by the store's clock.
    pub(super) async fn claim_lapsed(&self, thread: &ThreadKey) -> RunnerResult<bool> {
        let store = self.store();
        Ok(match store.claim(thread).await? {
            None => true,
            Some(claim) => claim.expires_at_ms <= store.now_ms(),
        })
    }

    /// The run that took the thread's latest messages: the active one, else the last.
    async fn taker(&self, thread: &ThreadKey) -> RunnerResult<Option<String>> {
        if let Some(info) = self.store().thread(thread).await?
            && let Some(active) = info.active_run
        {
            return Ok(Some(active));
        }
        let runs = self.store().runs(thread).await?;
        Ok(runs.last().map(|r| r.run_id.clone()))
    }
}

/// A waiter's patience with a store that fails in a way that may pass (a
/// lock, a lost connection, a server restarting: ADR 0250): it looks again
/// every poll until the store has failed for a whole claim TTL in a row, so a
/// sender waiting on its message outlasts any outage its message's run
/// outlasts, and then says what happened to the message, not the outage.
pub(super) struct Outage {
    /// When the failures in a row began.
    since: Option<tokio::time::Instant>,
    patience: Duration,
}

impl Outage {
    pub(super) fn new(patience: Duration) -> Self {
        Self {
            since: None,
            patience,
        }
    }

    /// Whether to look again after `e`.
    pub(super) fn rides(&mut self, e: &RunnerError) -> bool {
        if !e.transient() {
            return false;
        }
        let since = *self.since.get_or_insert_with(tokio::time::Instant::now);
        let riding = since.elapsed() < self.patience;
        if riding {
            tracing::debug!(error = %e, "the store failed while waiting; looking again");
        }
        riding
    }

    /// A look succeeded: the outage, if any, is over.
    pub(super) fn over(&mut self) {
        self.since = None;
    }
}
