//! A retried command whose run was abandoned: the retry waits for the dead holder's claim to lapse, takes the thread over and carries the message's work on in a new run, or reports the run that carried it out (ADR 0285).
//!
//! The message was posted (and taken) by the first delivery, so the retry
//! posts nothing: once the abandoned run's unanswered calls have their
//! results (through the call pipeline, ADR 0241), a new run with the same
//! message ids asks the model again from that history, without a new prompt.
//! A run that had given its final answer before it was abandoned is not
//! carried on: its work is done.

use std::time::Duration;

use crate::message::Message;
use crate::session::{
    Commit, Fence, RunRecord, RunStatus, SessionStore, ThreadKey, ThreadStatus, Trigger, Write,
};

use super::engine::{Inner, RunHandle, Runner, Segment, TAKEN, new_id};
use super::error::RunnerResult;
use super::remote::{Outage, Taken};

/// How a wait for a command's message ([`Runner::wait_carried`]) ended.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Carried {
    /// This runner carries the message out (or on) in this run.
    Here(RunHandle),
    /// The message's last run is no longer running: its record.
    Ended(Box<RunRecord>),
    /// The message is not in the thread, or its run is not recorded.
    Unknown,
}

impl Runner {
    /// Waits until the posted message `message_id` of `thread` is carried
    /// out, looking every `poll`, for a retried command whose first delivery
    /// may have died.
    ///
    /// # Behavior
    ///
    /// - Untaken: as [`Runner::wait_taken`] (this runner takes the thread
    ///   over once the holder's claim lapses).
    /// - Taken by a run that is still running under a live claim: waits.
    /// - Taken by a run left abandoned (or running under a lapsed claim)
    ///   before its final answer: claims the thread, records the run
    ///   abandoned after giving its calls their results, and carries the
    ///   message on in a new run here ([`Carried::Here`]).
    /// - Otherwise the record of the message's last run ([`Carried::Ended`]).
    ///
    /// A store that fails in a way that may pass (a lock, a lost connection,
    /// a restart) is looked at again every `poll`, for up to the runner's
    /// claim TTL of failures in a row, as [`Runner::wait_taken`] does
    /// (ADR 0287).
    pub async fn wait_carried(
        &self,
        thread: &ThreadKey,
        message_id: &str,
        poll: Duration,
    ) -> RunnerResult<Carried> {
        let mut outage = Outage::new(self.inner.config.claim_ttl);
        loop {
            match self.look_carried(thread, message_id).await {
                Ok(Look::Done(carried)) => return Ok(carried),
                Ok(Look::Untaken(seq)) => {
                    // The two waits ride out an outage of their own.
                    return Ok(match self.wait_taken(thread, seq, poll).await? {
                        Taken::Here(handle) => Carried::Here(handle),
                        Taken::Elsewhere(Some(run_id)) => Carried::Ended(Box::new(
                            self.wait_settled(thread, &run_id, poll).await?,
                        )),
                        _ => Carried::Unknown,
                    });
                }
                Ok(Look::Wait) => outage.over(),
                Err(e) if outage.rides(&e) => {}
                Err(e) => return Err(e),
            }
            tokio::time::sleep(poll).await;
        }
    }

    /// One look of [`Self::wait_carried`]: what it found, or that it waits.
    async fn look_carried(&self, thread: &ThreadKey, message_id: &str) -> RunnerResult<Look> {
        let store = self.store().clone();
        let Some(message) = store.message(&thread.scope, message_id).await? else {
            return Ok(Look::Done(Carried::Unknown));
        };
        if store.cursor(thread, TAKEN).await? < message.seq {
            return Ok(Look::Untaken(message.seq));
        }
        let Some(run) = last_run_of(store.as_ref(), thread, message_id).await? else {
            return Ok(Look::Done(Carried::Unknown));
        };
        if let Some(handle) = self.running(thread)
            && handle.run_id() == run.run_id
        {
            return Ok(Look::Done(Carried::Here(handle)));
        }
        let left = match run.status {
            RunStatus::Running => self.claim_lapsed(thread).await?,
            RunStatus::Failed => run.reason.as_deref() == Some("abandoned"),
            _ => false,
        };
        if !left {
            if run.status != RunStatus::Running {
                return Ok(Look::Done(Carried::Ended(Box::new(run))));
            }
            return Ok(Look::Wait);
        }
        if let Some(handle) = self.inner.take_for(thread, None, Some(message_id)).await? {
            return Ok(Look::Done(Carried::Here(handle)));
        }
        // Nothing started: another runner holds the thread, or the run
        // needs no carrying on. Look again; a settled abandoned run with
        // nothing to carry on is the answer.
        let again = last_run_of(store.as_ref(), thread, message_id).await?;
        let idle = store
            .thread(thread)
            .await?
            .is_none_or(|info| info.status == ThreadStatus::Idle);
        Ok(match again {
            Some(again)
                if idle && again.run_id == run.run_id && again.status != RunStatus::Running =>
            {
                Look::Done(Carried::Ended(Box::new(again)))
            }
            None => Look::Done(Carried::Unknown),
            Some(_) => Look::Wait,
        })
    }
}

/// What one look of [`Runner::wait_carried`] found.
enum Look {
    /// The wait's answer.
    Done(Carried),
    /// The message, at this seq, is not taken yet: wait for that.
    Untaken(u64),
    /// Its run is still running under a live claim, or another runner holds
    /// the thread: look again after the poll.
    Wait,
}

/// The thread's last run that carries out the posted message `message_id`.
async fn last_run_of(
    store: &dyn SessionStore,
    thread: &ThreadKey,
    message_id: &str,
) -> RunnerResult<Option<RunRecord>> {
    Ok(store
        .runs(thread)
        .await?
        .into_iter()
        .rev()
        .find(|r| r.message_ids.iter().any(|m| m == message_id)))
}

impl Inner {
    /// Under the claim, the thread idle with nothing untaken: a new run
    /// carrying the message `message_id` on when the thread's last run took
    /// it, was abandoned, and had not given its final answer; else nothing.
    pub(super) async fn carry_segment(
        &self,
        thread: &ThreadKey,
        fence: &Fence,
        message_id: &str,
    ) -> RunnerResult<Option<Segment>> {
        let runs = self.store.runs(thread).await?;
        let Some(last) = runs.last() else {
            return Ok(None);
        };
        let abandoned =
            last.status == RunStatus::Failed && last.reason.as_deref() == Some("abandoned");
        if !abandoned || !last.message_ids.iter().any(|m| m == message_id) {
            return Ok(None);
        }
        let history = self.store.history(thread, 0).await?;
        let answered = history.last().is_some_and(|e| {
            matches!(e.message, Message::Assistant { .. }) && e.message.tool_calls().count() == 0
        });
        if answered {
            return Ok(None);
        }
        let run_id = new_id("run");
        self.store
            .commit(
                thread,
                Commit::new().fenced(fence.clone()).write(Write::StartRun {
                    run_id: run_id.clone(),
                    trigger: Trigger::Message,
                    requested_by: last.requested_by.clone(),
                    message_ids: last.message_ids.clone(),
                    labels: self.config.run_labels.clone(),
                }),
            )
            .await?;
        Ok(Some(Segment::New {
            run_id,
            prompt: Vec::new(),
        }))
    }
}
