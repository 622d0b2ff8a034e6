//! One run segment: started under its claim, driven through the agent with the durable observer, its turns evaluated, its end recorded in one fenced commit; calls a lost run left unanswered are closed from their records.

use std::collections::{HashMap, HashSet, VecDeque};
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, PoisonError};

use futures::FutureExt;
use tokio::sync::watch;
use tokio::time::Instant;
use tracing::Instrument;

use super::ask::{AskUser, Asked, PendingRequest, RequestKind as AskKind};
use super::durable::{CallLog, Durable};
use super::live::{LiveEvent, LiveFrame, with_live};
use super::pairing;
use super::retry::{self, Window};
use super::turn::{EndedTurn, TurnInfo};
use crate::agent::{CancelToken, FailureReason, Observer, Outcome, RunOptions, RunResult};
use crate::message::{Message, Usage};
use crate::session::{
    Claim, Commit, Fence, HistoryItem, RequestKind, RequestSpec, RunEnd, StoreErrorKind, ThreadKey,
    ToolCallStatus, Write,
};

use super::engine::{ASKED, Active, BusyGuard, Inner, RunHandle, Segment, TAKEN};
use super::ledger::{SegmentCommits, StoreLog};
use super::observer::{DurableRun, RunBook};

impl Inner {
    /// Registers and spawns one run segment, which owns `claim` from here on.
    pub(super) fn start_segment(
        self: &Arc<Self>,
        thread: ThreadKey,
        claim: Claim,
        began: Instant,
        segment: Segment,
    ) -> RunHandle {
        let run_id = match &segment {
            Segment::New { run_id, .. } => run_id.clone(),
            Segment::Resume { run } => run.run_id.clone(),
        };
        let (tx, rx) = watch::channel(None);
        let handle = RunHandle {
            run_id: run_id.clone(),
            thread: thread.clone(),
            result: rx,
        };
        let cancel = CancelToken::new();
        self.config.live.open(&run_id);
        self.lock().runs.insert(
            thread.clone(),
            Active {
                cancel: cancel.clone(),
                handle: handle.clone(),
            },
        );
        let inner = self.clone();
        let busy = BusyGuard::new(self);
        let span = tracing::info_span!(
            "run",
            run_id = %run_id,
            thread = %thread.thread,
            gen_ai.operation.name = "invoke_agent",
            gen_ai.conversation.id = %thread.thread,
        );
        tokio::spawn(
            async move {
                let _busy = busy;
                let info = TurnInfo {
                    thread: thread.clone(),
                    run_id: run_id.clone(),
                    requested_by: match &segment {
                        Segment::New { prompt, .. } => prompt.first().map(|m| m.author.clone()),
                        Segment::Resume { run } => run.requested_by.clone(),
                    },
                };
                let guard = inner.config.turn_context.as_ref().map(|c| c.enter(&info));
                let result = inner
                    .clone()
                    .segment(&thread, &claim, began, &run_id, segment, cancel)
                    .await;
                drop(guard);
                inner.evaluate(info, &result);
                if let Err(e) = inner.store.release_claim(&thread, &claim).await {
                    tracing::warn!(error = %e, "releasing a thread claim failed; it lapses after its TTL");
                }
                let end = if inner.handed_back(&result) {
                    LiveEvent::End {
                        outcome: Some(super::handback::HANDED_OVER.to_owned()),
                        reason: None,
                    }
                } else {
                    LiveEvent::End {
                        outcome: Some(result.outcome.name().to_owned()),
                        reason: result.outcome.reason().map(str::to_owned),
                    }
                };
                inner.config.live.close(&run_id, end);
                {
                    let mut state = inner.lock();
                    state.runs.remove(&thread);
                    state.holders.remove(&claim.holder);
                }
                let _ = tx.send(Some(result));
                inner.hand_over_if_asked(thread).await;
            }
            .instrument(span),
        );
        handle
    }

    /// Hands an ended turn to every evaluator; a failure is logged on the turn's span only.
    pub(super) fn evaluate(&self, turn: TurnInfo, result: &RunResult) {
        if self.config.evaluators.is_empty() {
            return;
        }
        let ended = EndedTurn {
            turn,
            outcome: result.outcome.name(),
            reason: result.outcome.reason().map(str::to_owned),
            requests: result.turns,
            usage: result.usage,
        };
        for evaluator in &self.config.evaluators {
            let submitted =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| evaluator.submit(&ended)));
            match submitted {
                Ok(Ok(())) => {}
                Ok(Err(why)) => {
                    tracing::warn!(error = %why, "a turn evaluator failed; the turn is not affected");
                }
                Err(_) => tracing::warn!("a turn evaluator panicked; the turn is not affected"),
            }
        }
    }

    pub(super) async fn hand_over_if_asked(self: &Arc<Self>, thread: ThreadKey) {
        let asked = self.store.cursor(&thread, ASKED).await.unwrap_or(0);
        let taken = self.store.cursor(&thread, TAKEN).await.unwrap_or(0);
        if asked > taken {
            self.hand_over(thread);
        }
    }

    /// Drives one segment to its end and records the end; returns what it did.
    pub(super) async fn segment(
        self: Arc<Self>,
        thread: &ThreadKey,
        claim: &Claim,
        began: Instant,
        run_id: &str,
        segment: Segment,
        cancel: CancelToken,
    ) -> RunResult {
        let done = CancelToken::new();
        let lost = CancelToken::new();
        let keeper = self.keep(thread, claim, began, &done, &lost);
        // A stop asked from another process (ADR 0180).
        let stop_watch = tokio::spawn(super::remote::watch_stop(
            self.store.clone(),
            thread.clone(),
            run_id.to_owned(),
            super::remote::stop_poll(self.config.claim_ttl),
            cancel.clone(),
            done.clone(),
        ));
        let cancel_on_loss = {
            let lost = lost.clone();
            let cancel = cancel.clone();
            tokio::spawn(async move {
                lost.cancelled().await;
                cancel.cancel();
            })
        };
        // A panic of the runner's own steps (a store, the approved call)
        // ends the segment `failed/panicked`: the claim is released and
        // watchers get the end frame all the same (ADR 0240).
        let result =
            match AssertUnwindSafe(self.drive(thread, claim, run_id, segment, cancel, &lost))
                .catch_unwind()
                .await
            {
                Ok(result) => result,
                Err(panic) => {
                    let result = RunResult {
                        run_id: run_id.to_owned(),
                        outcome: crate::agent::panicked(panic.as_ref()),
                        turns: 0,
                        tool_calls: 0,
                        usage: Usage::UNKNOWN,
                        approvals: Vec::new(),
                    };
                    let recorded =
                        AssertUnwindSafe(self.record_bare_end(thread, &claim.fence(), &result))
                            .catch_unwind()
                            .await;
                    if recorded.is_err() {
                        tracing::error!(run_id, "recording a panicked run's end panicked too");
                    }
                    result
                }
            };
        done.cancel();
        let _ = keeper.await;
        cancel_on_loss.abort();
        stop_watch.abort();
        result
    }

    pub(super) async fn drive(
        &self,
        thread: &ThreadKey,
        claim: &Claim,
        run_id: &str,
        segment: Segment,
        cancel: CancelToken,
        lost: &CancelToken,
    ) -> RunResult {
        let fail = |reason: FailureReason, message: String| RunResult {
            run_id: run_id.to_owned(),
            outcome: Outcome::Failed { reason, message },
            turns: 0,
            tool_calls: 0,
            usage: Usage::UNKNOWN,
            approvals: Vec::new(),
        };
        let fence = claim.fence();
        let mut history = match crate::checkpoint::load_view(self.store.as_ref(), thread).await {
            Ok(h) => h,
            Err(e) => {
                let result = fail(
                    FailureReason::StoreFailed,
                    format!("loading the history failed: {e}"),
                );
                #[cfg(feature = "otel")]
                self.agent.count_run(&result.outcome);
                self.record_bare_end(thread, &fence, &result).await;
                return result;
            }
        };
        let recorded = Arc::new(Mutex::new(HashMap::new()));
        #[allow(unused_mut)] // set only with the `failpoints` feature
        let mut commits = SegmentCommits::new(
            self.store.clone(),
            thread.clone(),
            fence.clone(),
            Window::claim(lost.clone()),
        );
        #[cfg(feature = "failpoints")]
        {
            commits.failpoint = self.config.failpoint.clone();
        }
        let book = Arc::new(Mutex::new(RunBook {
            persisted: history.len(),
            posted: VecDeque::new(),
            queued: VecDeque::new(),
            // Set once the segment's taken cursor is known, below.
            delivered: 0,
        }));
        let log: Arc<dyn CallLog> = Arc::new(StoreLog {
            commits: commits.clone(),
            recorded: recorded.clone(),
            book: book.clone(),
        });
        let asked = Arc::new(Asked::default());
        let (requested_by, taken) = match &segment {
            Segment::New { prompt, .. } => (
                prompt.first().map(|m| m.author.clone()),
                prompt.last().map_or(0, |m| m.seq),
            ),
            Segment::Resume { run } => (
                run.requested_by.clone(),
                self.store.cursor(thread, TAKEN).await.unwrap_or(0),
            ),
        };
        book.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .delivered = taken;
        // The thread's agent (the runner's, unless the config makes one per thread).
        let base = self.agent_of(thread);
        let mut recorded_tools: HashSet<String> = base
            .tools()
            .tools()
            .iter()
            .map(|t| t.name().to_owned())
            .collect();
        if self.config.ask_user {
            recorded_tools.insert(super::ask::ASK_USER.to_owned());
        }
        let durable = Arc::new(DurableRun {
            checkpoints: self.config.checkpoints.clone(),
            commits,
            run_id: run_id.to_owned(),
            recorded_tools,
            requested_by,
            state: book,
            defer_answers: !base.hooks().has_event(crate::hooks::HookEvent::PreToolUse),
            recorded,
            asked: asked.clone(),
            pairing: Mutex::new(pairing::Pairing::default()),
        });
        let mut tools = Durable::wrap(base.tools(), &log);
        if self.config.ask_user {
            let ask: Arc<dyn crate::tool::Tool> = Arc::new(AskUser::new(asked.clone()));
            tools.add_arc(Durable::one(ask, log.clone()));
        }
        let agent = base.with_tools(tools);
        // A new segment's first message is the agent's prompt, so its
        // SessionStart and UserPromptSubmit hooks fire as in any run; the
        // others follow as steering (docs/adr/0261).
        let mut first = None;
        let mut repause = false;
        match segment {
            Segment::New { prompt, .. } => {
                // An earlier run that ended with unanswered calls: each gets
                // a result saying what is known, before the new prompt (ADR 0251).
                self.answer_left_calls(thread, &mut history).await;
                let mut book = durable.book();
                let mut prompt = prompt.into_iter();
                if let Some(m) = prompt.next() {
                    book.posted.push_back((history.len(), m.id, m.text.clone()));
                    first = Some(m.text);
                }
                book.queued.extend(prompt.map(|m| (m.id, m.text)));
            }
            Segment::Resume { run } => {
                // A tool taking its answer on may ask again (a subagent's
                // next question): the run pauses again before any request.
                let text = super::ask::asking(
                    asked.clone(),
                    self.answers_text(&agent, &history, &run, thread, &cancel),
                )
                .await;
                history.push(Message::user(text));
                repause = !asked.is_empty();
            }
        }
        let options = RunOptions {
            run_id: Some(run_id.to_owned()),
            thread_id: Some(thread.thread.clone()),
            cancel,
            observer: Some(Observer(durable.clone())),
            call_ids: None,
            #[cfg(feature = "failpoints")]
            failpoint: self.config.failpoint.clone(),
        };
        let live = self.config.live.clone();
        let frame_run = run_id.to_owned();
        let forward = live.clone();
        let mut result = with_live(live, run_id, async {
            if repause {
                return RunResult {
                    run_id: run_id.to_owned(),
                    outcome: Outcome::Paused {
                        reason: "waiting for an answer".to_owned(),
                    },
                    turns: 0,
                    tool_calls: 0,
                    usage: Usage::UNKNOWN,
                    approvals: Vec::new(),
                };
            }
            super::ask::asking(
                asked.clone(),
                agent.run_with(&mut history, first, options, &mut |event| {
                    if let Some(event) = LiveEvent::from_agent(event) {
                        forward.send(LiveFrame {
                            run_id: frame_run.clone(),
                            event,
                        });
                    }
                }),
            )
            .await
        })
        .await;
        if lost.is_cancelled() && matches!(result.outcome, Outcome::Stopped { .. }) {
            result.outcome = Outcome::Stopped {
                reason: "claim_lost".to_owned(),
            };
        }
        let mut requests: Vec<PendingRequest> = asked.take();
        if matches!(result.outcome, Outcome::Paused { .. }) {
            // Typed: the calls the batch sent for approval, with the
            // arguments a hook rewrote (ADR 0242).
            requests.extend(result.approvals.iter().cloned().map(PendingRequest::from));
        }
        if !matches!(result.outcome, Outcome::Paused { .. }) {
            // A run never ends with a call unanswered (ADR 0251).
            let recorded = durable
                .recorded
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            for r in pairing::close_unanswered(&history, &recorded) {
                history.push(Message::ToolResult(r));
            }
        }
        // An answer whose save waited for a call that never started is
        // among the items from the saved position on (ADR 0350).
        durable.commits.settle(&durable.state).await;
        let (items, _) = durable.items(&history);
        let delivered = durable.book().delivered;
        let held = durable.commits.take_held();
        self.record_end(
            thread,
            &fence,
            run_id,
            &result,
            held,
            items,
            Some((requests, delivered)),
            Some(&durable.commits),
        )
        .await;
        result
    }

    /// Gives each call of the history's last answer that has no result (its
    /// run ended first) the result its records hold, or a result saying it
    /// is unknown, appended to `history` (saved with the run's first commit).
    pub(super) async fn answer_left_calls(&self, thread: &ThreadKey, history: &mut Vec<Message>) {
        if super::durable::unanswered(history).is_empty() {
            return;
        }
        let run_of_calls = match self.store.history(thread, 0).await {
            Ok(entries) => entries
                .into_iter()
                .rev()
                .find(|e| matches!(e.message, Message::Assistant { .. }))
                .and_then(|e| e.run_id),
            Err(_) => None,
        };
        let mut recorded = HashMap::new();
        if let Some(left) = run_of_calls
            && let Ok(records) = self.store.tool_calls(&thread.scope, &left).await
        {
            for r in records {
                if let (ToolCallStatus::Finished, Some(result)) = (r.status, r.result) {
                    recorded.insert(r.call_id, result);
                }
            }
        }
        for r in pairing::close_unanswered(history, &recorded) {
            history.push(Message::ToolResult(r));
        }
    }

    /// Records the end of a segment that saved nothing of its own (its
    /// history never loaded, or it panicked): [`Self::record_end`] with no held
    /// finish, no history, no pause and no segment commits.
    async fn record_bare_end(&self, thread: &ThreadKey, fence: &Fence, result: &RunResult) {
        self.record_end(
            thread,
            fence,
            &result.run_id,
            result,
            Vec::new(),
            Vec::new(),
            None,
            None,
        )
        .await;
    }

    /// Records a segment's end: a held call finish, the history left to save,
    /// the usage, and the end (or pause) with the taken cursor, in one fenced
    /// commit. A record refused because the claim was lost is dropped: the
    /// next claimant records the run as abandoned.
    #[allow(clippy::too_many_arguments)] // the one commit that ends a segment
    pub(super) async fn record_end(
        &self,
        thread: &ThreadKey,
        fence: &Fence,
        run_id: &str,
        result: &RunResult,
        held: Vec<Write>,
        items: Vec<HistoryItem>,
        pause: Option<(Vec<PendingRequest>, u64)>,
        segment: Option<&SegmentCommits>,
    ) {
        let _ = &segment; // counted for the failpoints only
        if self.handed_back(result) {
            // Handed back (ADR 0345): the run stays `running` for the next claimant.
            return;
        }
        let mut commit = Commit::new().fenced(fence.clone());
        for write in held {
            commit = commit.write(write);
        }
        if !items.is_empty() {
            commit = commit.write(Write::AppendHistory {
                run_id: Some(run_id.to_owned()),
                items,
            });
        }
        if !result.usage.is_unknown() {
            commit = commit.write(Write::RecordUsage {
                run_id: run_id.to_owned(),
                usage: result.usage,
            });
        }
        let (requests, delivered) = pause.unwrap_or_default();
        let end = match &result.outcome {
            Outcome::Completed => Some(RunEnd::Completed),
            Outcome::Failed { reason, message } => Some(RunEnd::Failed {
                reason: reason.clone(),
                message: message.clone(),
            }),
            Outcome::Stopped { reason } => Some(RunEnd::Stopped {
                reason: reason.clone(),
            }),
            Outcome::Paused { .. } if !requests.is_empty() => None,
            Outcome::Paused { reason } => Some(RunEnd::Failed {
                reason: FailureReason::PausedWithoutRequest,
                message: format!("the run paused ({reason}) but asked nothing to answer"),
            }),
        };
        commit = match end {
            Some(end) => commit.write(Write::EndRun {
                run_id: run_id.to_owned(),
                end,
            }),
            None => commit.write(Write::PauseRun {
                run_id: run_id.to_owned(),
                requests: requests
                    .into_iter()
                    .map(|r| RequestSpec {
                        call_id: r.call_id.unwrap_or_else(|| r.request_id.clone()),
                        id: r.request_id,
                        tool_name: r.tool_name,
                        kind: match r.kind {
                            AskKind::Question => RequestKind::Question,
                            AskKind::Approval => RequestKind::Approval,
                        },
                        arguments: r.arguments,
                    })
                    .collect(),
            }),
        };
        if delivered > 0 {
            commit = commit.cursor(TAKEN, delivered);
        }
        let commit = retry::keyed(thread, commit);
        // The end is tried again while the claim holds: the keeper's renewals
        // go on until the segment is done (ADR 0250).
        let window = Window::within(self.config.claim_ttl);
        #[cfg(feature = "failpoints")]
        let (failpoint, nth) = match segment {
            Some(s) => (s.failpoint.as_ref(), s.next_commit()),
            None => (None, 0),
        };
        crate::crash_point!(
            failpoint,
            crate::failpoint::CrashPoint::BeforeCommit { nth }
        );
        let done = retry::commit(self.store.as_ref(), thread, commit, &window).await;
        crate::crash_point!(failpoint, crate::failpoint::CrashPoint::AfterCommit { nth });
        match done {
            Ok(_) => {}
            Err(e) if e.kind() == StoreErrorKind::StaleClaim => {
                tracing::warn!(run_id, "the run's end was not recorded: its claim was lost");
            }
            Err(e) => tracing::error!(run_id, error = %e, "recording the run's end failed"),
        }
    }
}
