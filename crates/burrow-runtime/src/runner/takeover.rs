//! Posting, claiming, planning and abandonment: what a claimant does with a thread (a message posted, the thread claimed, the next segment planned, a run left `running` recorded as abandoned after its calls are answered, retakes and hand-overs).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::FutureExt;
use serde_json::Value;
use tokio::time::Instant;

use super::claim::{RenewError, keep_claim};
use super::durable::{CallLog, CallState, Durable, repair};
use super::error::{RunnerError, RunnerErrorKind, RunnerResult};
use super::retry::{self, Window};
use crate::agent::{CancelToken, FailureReason};
use crate::message::Message;
use crate::session::{
    Answer, Claim, ClaimAttempt, CommandKey, Commit, HistoryItem, MAX_PAGE, MessageKind,
    PostedMessage, RequestKind, RequestSpec, RunEnd, StoreError, StoreErrorKind, ThreadInfo,
    ThreadKey, ThreadStatus, ToolCallStatus, Trigger, Write,
};

use super::command::CommandResult;
use super::engine::{
    ASKED, BusyGuard, DUPLICATE_WAIT, Explicit, Inner, RunHandle, Segment, TAKEN, new_id,
};
use super::ledger::{SegmentCommits, StoreLog};
use crate::tool::ToolOutput;

/// A claim this process holds for a take, counted busy while it lives.
pub(super) struct Held {
    claim: Claim,
    began: Instant,
    _busy: BusyGuard,
}

/// What asking for a thread's claim got.
pub(super) enum Claimed {
    Granted(Held),
    /// Another holder (its id) has it.
    Busy(String),
}

/// The thread and its `taken` cursor as read once the claim was held.
pub(super) struct Read {
    info: Result<Option<ThreadInfo>, StoreError>,
    taken: Result<u64, StoreError>,
}

impl Inner {
    /// Posts a message (or notice) and moves `asked` to it in one commit.
    pub(super) async fn post(
        &self,
        thread: &ThreadKey,
        author: &str,
        text: &str,
        message_id: Option<&str>,
        kind: MessageKind,
        command: Option<(CommandKey, Value)>,
    ) -> RunnerResult<(String, u64)> {
        let id = message_id.map_or_else(|| new_id("msg"), str::to_owned);
        let mut commit = Commit::new().write(Write::PostMessage {
            id: id.clone(),
            author: author.to_owned(),
            kind,
            text: text.to_owned(),
        });
        if let Some((key, result)) = command {
            commit = commit.command(key, result);
        }
        if kind == MessageKind::Message {
            // The message is the commit's one event, so the head after it is
            // the message's seq: `asked` moves to it in the same commit,
            // whatever was posted before (ADR 0371).
            commit = commit.cursor_to_head(ASKED);
        }
        // A sender rides out a short outage as a run does (ADR 0250).
        let window = Window::within(self.config.claim_ttl);
        let commit = retry::keyed(thread, commit);
        let done = retry::commit(self.store.as_ref(), thread, commit, &window).await?;
        let seq = match done.seqs.first() {
            Some(seq) => *seq,
            // Taken in by an attempt whose answer was lost: its seq is the message's.
            None => retry::call(&window, || self.store.message(&thread.scope, &id))
                .await?
                .map_or(done.head_seq, |m| m.seq),
        };
        Ok((id, seq))
    }

    pub(super) fn holds(&self, holder: &str) -> bool {
        self.lock().holders.contains(holder)
    }

    /// Claims the thread and carries out what it was asked: the core of send,
    /// answer, resume, recover and hand-over.
    pub(super) async fn take(
        self: &Arc<Self>,
        thread: &ThreadKey,
        explicit: Option<Explicit>,
    ) -> RunnerResult<Option<RunHandle>> {
        self.take_for(thread, explicit, None).await
    }

    /// [`Self::take`]; with `carry` (a posted message's id), a thread with
    /// nothing else to do carries that message's abandoned run on (ADR 0285).
    pub(super) async fn take_for(
        self: &Arc<Self>,
        thread: &ThreadKey,
        explicit: Option<Explicit>,
        carry: Option<&str>,
    ) -> RunnerResult<Option<RunHandle>> {
        if self.closed() {
            return Ok(None);
        }
        if explicit.is_none() && self.lock().runs.contains_key(thread) {
            // Our run in this thread steers or hands over.
            return Ok(None);
        }
        let command = explicit.as_ref().and_then(|e| e.command.clone());
        match self.try_claim(thread, command.as_ref()).await? {
            Claimed::Granted(held) => self.carry_out(thread, held, explicit, carry).await,
            Claimed::Busy(theirs) => {
                if explicit.is_some() {
                    return Err(RunnerError::new(
                        RunnerErrorKind::InvalidState,
                        "the thread is busy: another runner holds it; answer again once it is paused",
                    ));
                }
                if !self.holds(&theirs) {
                    self.schedule_retake(thread);
                }
                Ok(None)
            }
        }
    }

    /// Posts a message and takes the thread, the claim asked for while the
    /// message is committed (two stores' round trips at once, ADR 0371). A
    /// claim granted before the message is in is used only after it is (the
    /// plan reads the messages then); a busy answer is not trusted, since the
    /// holder may have looked for messages before this one was in: the
    /// thread is then taken as [`Self::take`] does, after the post. The
    /// outer result is the post's, the inner the take's.
    pub(super) async fn post_and_take(
        self: &Arc<Self>,
        thread: &ThreadKey,
        author: &str,
        text: &str,
        message_id: &str,
        command: (CommandKey, Value),
    ) -> RunnerResult<RunnerResult<Option<RunHandle>>> {
        let early = async {
            if self.closed() {
                return Ok(None);
            }
            self.try_claim(thread, None).await.map(Some)
        };
        let (posted, claimed) = futures::join!(
            self.post(
                thread,
                author,
                text,
                Some(message_id),
                MessageKind::Message,
                Some(command),
            ),
            early
        );
        match (posted, claimed) {
            (Ok(_), Ok(Some(Claimed::Granted(held)))) => {
                Ok(self.carry_out(thread, held, None, None).await)
            }
            (Ok(_), _) => Ok(self.take(thread, None).await),
            (Err(e), claimed) => {
                if let Ok(Some(Claimed::Granted(held))) = claimed {
                    self.give_up(thread, &held).await;
                    self.hand_over_if_asked(thread.clone()).await;
                }
                Err(e)
            }
        }
    }

    /// Asks for `thread`'s claim, riding out a short outage; while another
    /// delivery of `command` holds the thread, waits for its record and
    /// answers `DuplicateCommand` once it is in.
    async fn try_claim(
        self: &Arc<Self>,
        thread: &ThreadKey,
        command: Option<&CommandKey>,
    ) -> RunnerResult<Claimed> {
        let busy = BusyGuard::new(self);
        let holder = new_id("claim");
        self.lock().holders.insert(holder.clone());
        let began = Instant::now();
        let window = Window::within(self.config.claim_ttl);
        let attempt = loop {
            let attempt = retry::call(&window, || {
                self.store
                    .acquire_claim(thread, &holder, self.config.claim_ttl)
            })
            .await;
            // A command delivered twice at once: the other delivery holds the
            // thread; its record (once in) is this one's result.
            if let (Ok(ClaimAttempt::Busy(_)), Some(key)) = (&attempt, command)
                && Instant::now() < began + DUPLICATE_WAIT.min(self.config.claim_ttl)
            {
                let found = self.store.command_result(key).await;
                if !matches!(found, Ok(None)) {
                    self.lock().holders.remove(&holder);
                    found?;
                    return Err(StoreError::new(
                        StoreErrorKind::DuplicateCommand,
                        "the command was carried out by another delivery",
                    )
                    .into());
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
            break attempt;
        };
        match attempt {
            Ok(ClaimAttempt::Granted(claim)) => Ok(Claimed::Granted(Held {
                claim,
                began,
                _busy: busy,
            })),
            Ok(ClaimAttempt::Busy(theirs)) => {
                self.lock().holders.remove(&holder);
                Ok(Claimed::Busy(theirs.holder))
            }
            Err(e) => {
                self.lock().holders.remove(&holder);
                Err(e.into())
            }
        }
    }

    /// Releases a claim this process will not use (its holder forgotten).
    async fn give_up(&self, thread: &ThreadKey, held: &Held) {
        if let Err(e) = self.store.release_claim(thread, &held.claim).await {
            tracing::warn!(error = %e, "releasing a thread claim failed; it lapses after its TTL");
        }
        self.lock().holders.remove(&held.claim.holder);
    }

    /// Under the claim `held`: plans and starts the next segment, or releases
    /// the claim (and hands the thread over when a message came meanwhile).
    async fn carry_out(
        self: &Arc<Self>,
        thread: &ThreadKey,
        held: Held,
        explicit: Option<Explicit>,
        carry: Option<&str>,
    ) -> RunnerResult<Option<RunHandle>> {
        // What the plan starts from, read at once (one round trip where the
        // store has connections to spare, ADR 0371).
        let (asked_at_read, info, taken) = futures::join!(
            self.store.cursor(thread, ASKED),
            self.store.thread(thread),
            self.store.cursor(thread, TAKEN),
        );
        let asked_at_read = asked_at_read.unwrap_or(0);
        let read = Read { info, taken };
        let planned = self
            .plan(thread, &held.claim, held.began, explicit, carry, read)
            .await;
        match planned {
            Ok(Some(segment)) => {
                let handle = self.start_segment(thread.clone(), held.claim, held.began, segment);
                Ok(Some(handle))
            }
            other => {
                self.give_up(thread, &held).await;
                let asked_now = self.store.cursor(thread, ASKED).await.unwrap_or(0);
                if asked_now > asked_at_read {
                    self.hand_over(thread.clone());
                }
                other.map(|_| None)
            }
        }
    }

    /// Under the claim: records runs left behind as abandoned, then decides
    /// what to run (and records its start or resumption with the cursor).
    pub(super) async fn plan(
        self: &Arc<Self>,
        thread: &ThreadKey,
        claim: &Claim,
        began: Instant,
        explicit: Option<Explicit>,
        carry: Option<&str>,
        read: Read,
    ) -> RunnerResult<Option<Segment>> {
        let fence = claim.fence();
        let Some(mut info) = read.info? else {
            return Ok(None);
        };
        let mut taken = read.taken?;
        if info.status == ThreadStatus::Running
            && let Some(left) = info.active_run.clone()
        {
            self.abandon(thread, claim, began, &left).await?;
            info = match self.store.thread(thread).await? {
                Some(info) => info,
                None => return Ok(None),
            };
            taken = self.store.cursor(thread, TAKEN).await?;
        }
        if let Some(explicit) = explicit {
            let mut commit = Commit::new().fenced(fence.clone());
            if let Some(key) = explicit.command {
                // Whether this answer is the run's last: then it resumes now.
                let resumed = match self.store.run(&thread.scope, &explicit.run_id).await? {
                    Some(run) => run
                        .requests
                        .iter()
                        .all(|r| r.answer.is_none() == (r.spec.id == explicit.request_id)),
                    None => false,
                };
                let result = CommandResult::Answered {
                    run_id: explicit.run_id.clone(),
                    request_id: explicit.request_id.clone(),
                    resumed,
                };
                commit = commit.command(key, result.to_stored());
            }
            commit = commit.write(Write::AnswerRequest {
                run_id: explicit.run_id,
                request_id: explicit.request_id,
                answer: explicit.answer,
            });
            self.store.commit(thread, commit).await?;
        }
        let untaken: Vec<PostedMessage> = self
            .store
            .messages(thread, taken, MAX_PAGE)
            .await?
            .into_iter()
            .filter(|m| m.kind == MessageKind::Message)
            .collect();
        if info.status == ThreadStatus::Paused
            && let Some(paused) = info.active_run.clone()
        {
            let Some(run) = self.store.run(&thread.scope, &paused).await? else {
                return Ok(None);
            };
            let open: Vec<&RequestSpec> = run
                .requests
                .iter()
                .filter(|r| r.answer.is_none())
                .map(|r| &r.spec)
                .collect();
            let mut commit = Commit::new().fenced(fence.clone());
            let requested_by;
            if open.is_empty() {
                requested_by = run
                    .requests
                    .iter()
                    .filter_map(|r| r.answer.as_ref())
                    .map(|a| a.author.clone())
                    .next_back();
            } else {
                // The oldest untaken message is the reply: it answers every
                // open question and declines every open approval with its text.
                let Some(reply) = untaken.first() else {
                    return Ok(None);
                };
                for spec in open {
                    commit = commit.write(Write::AnswerRequest {
                        run_id: run.run_id.clone(),
                        request_id: spec.id.clone(),
                        answer: Answer {
                            author: reply.author.clone(),
                            approved: (spec.kind == RequestKind::Approval).then_some(false),
                            text: Some(reply.text.clone()),
                            message_id: Some(reply.id.clone()),
                        },
                    });
                }
                commit = commit.cursor(TAKEN, reply.seq);
                requested_by = Some(reply.author.clone());
            }
            let commit = commit.write(Write::ResumeRun {
                run_id: run.run_id.clone(),
                requested_by,
            });
            self.store.commit(thread, commit).await?;
            let Some(run) = self.store.run(&thread.scope, &paused).await? else {
                return Ok(None);
            };
            return Ok(Some(Segment::Resume { run: Box::new(run) }));
        }
        let Some(first) = untaken.first() else {
            return match carry {
                Some(message_id) => self.carry_segment(thread, &fence, message_id).await,
                None => Ok(None),
            };
        };
        let prompt: Vec<PostedMessage> = untaken
            .iter()
            .take_while(|m| m.author == first.author)
            .cloned()
            .collect();
        let through = prompt.last().map_or(taken, |m| m.seq);
        let run_id = new_id("run");
        self.store
            .commit(
                thread,
                Commit::new()
                    .fenced(fence)
                    .write(Write::StartRun {
                        run_id: run_id.clone(),
                        trigger: Trigger::Message,
                        requested_by: Some(first.author.clone()),
                        message_ids: prompt.iter().map(|m| m.id.clone()).collect(),
                        labels: self.config.run_labels.clone(),
                    })
                    .cursor(TAKEN, through),
            )
            .await?;
        Ok(Some(Segment::New { run_id, prompt }))
    }

    /// Records the run `left` (running, but no runner of ours drives it: its
    /// process died) as failed/abandoned, after giving its last answer's
    /// unanswered calls their results: from the records, or through the call
    /// pipeline (a call never allowed is decided again by its hooks; a started
    /// idempotent call is replayed under its effect keys), under the claim,
    /// kept alive meanwhile (ADR 0241).
    pub(super) async fn abandon(
        &self,
        thread: &ThreadKey,
        claim: &Claim,
        began: Instant,
        left: &str,
    ) -> RunnerResult<()> {
        let fence = claim.fence();
        let entries = self.store.history(thread, 0).await?;
        // The run's tool results so far, for its `max_tool_calls` (ADR 0244).
        let prior = entries
            .iter()
            .filter(|e| {
                e.run_id.as_deref() == Some(left) && matches!(e.message, Message::ToolResult(_))
            })
            .count();
        let mut history: Vec<Message> = crate::checkpoint::view(&entries);
        let records: HashMap<String, CallState> = self
            .store
            .tool_calls(&thread.scope, left)
            .await?
            .into_iter()
            .map(|r| {
                let state = match (r.status, r.result) {
                    (ToolCallStatus::Finished, Some(result)) => CallState::Finished(ToolOutput {
                        text: result.content,
                        is_error: result.is_error,
                    }),
                    _ => CallState::Started,
                };
                (r.call_id, state)
            })
            .collect();
        let repaired = if super::durable::unanswered(&history).is_empty() {
            Vec::new()
        } else {
            // Hooks and tools may take a while: the claim is renewed meanwhile,
            // and a lost claim cancels the calls (their commits are fenced anyway).
            let done = CancelToken::new();
            let lost = CancelToken::new();
            let keeper = self.keep(thread, claim, began, &done, &lost);
            let recorded = Arc::new(Mutex::new(HashMap::new()));
            let log: Arc<dyn CallLog> = Arc::new(StoreLog {
                commits: SegmentCommits::new(
                    self.store.clone(),
                    thread.clone(),
                    fence.clone(),
                    Window::claim(lost.clone()),
                ),
                recorded: recorded.clone(),
                // No answer is deferred in a repair: nothing is saved through it.
                book: Arc::default(),
            });
            let base = self.agent_of(thread);
            let tools = Durable::wrap(base.tools(), &log);
            let agent = base.with_tools(tools);
            let repaired = repair(
                &mut history,
                &agent,
                &super::durable::LeftRun {
                    session_id: &thread.thread,
                    run_id: left,
                    prior,
                    ask_user: self.config.ask_user,
                },
                &records,
                &lost,
            )
            .await;
            done.cancel();
            let _ = keeper.await;
            let recorded = recorded.lock().unwrap_or_else(PoisonError::into_inner);
            repaired
                .into_iter()
                .map(|(result, from_record)| {
                    let refers = from_record || recorded.get(&result.call_id) == Some(&result);
                    (result, refers)
                })
                .collect()
        };
        let mut commit = Commit::new().fenced(fence.clone());
        if !repaired.is_empty() {
            commit = commit.write(Write::AppendHistory {
                run_id: Some(left.to_owned()),
                items: repaired
                    .into_iter()
                    .map(|(result, recorded)| {
                        if recorded {
                            HistoryItem::ToolResult {
                                call_id: result.call_id,
                            }
                        } else {
                            HistoryItem::Message {
                                message: Message::ToolResult(result),
                            }
                        }
                    })
                    .collect(),
            });
        }
        commit = commit.write(Write::EndRun {
            run_id: left.to_owned(),
            end: RunEnd::Failed {
                reason: FailureReason::Abandoned,
                message:
                    "the runner that drove this run stopped (its claim lapsed) before the run ended"
                        .to_owned(),
            },
        });
        let commit = retry::keyed(thread, commit);
        retry::commit(
            self.store.as_ref(),
            thread,
            commit,
            &Window::within(self.config.claim_ttl),
        )
        .await?;
        tracing::info!(
            run_id = left,
            "recorded a run left behind as failed/abandoned"
        );
        Ok(())
    }

    /// Spawns the task that renews `claim` until `done`, cancelling `lost`
    /// when the claim is lost.
    pub(super) fn keep(
        &self,
        thread: &ThreadKey,
        claim: &Claim,
        began: Instant,
        done: &CancelToken,
        lost: &CancelToken,
    ) -> tokio::task::JoinHandle<()> {
        let store = self.store.clone();
        let thread = thread.clone();
        let claim = claim.clone();
        let ttl = self.config.claim_ttl;
        let renew = move || {
            let store = store.clone();
            let thread = thread.clone();
            let claim = claim.clone();
            async move {
                match store.renew_claim(&thread, &claim, ttl).await {
                    Ok(_) => Ok(()),
                    Err(e) if e.kind() == StoreErrorKind::StaleClaim => Err(RenewError::Lost),
                    Err(e) => Err(RenewError::Failed(e.to_string())),
                }
            }
            .boxed()
        };
        tokio::spawn(keep_claim(ttl, began, renew, done.clone(), lost.clone()))
    }

    /// Schedules one look at `thread` after the claim TTL, in case its holder died.
    pub(super) fn schedule_retake(self: &Arc<Self>, thread: &ThreadKey) {
        if self.closed() {
            return;
        }
        let mut state = self.lock();
        if state.retakes.contains_key(thread) {
            return;
        }
        let inner = self.clone();
        let key = thread.clone();
        let ttl = self.config.claim_ttl;
        let task = tokio::spawn(async move {
            tokio::time::sleep(ttl).await;
            inner.lock().retakes.remove(&key);
            if inner.lock().followed.contains_key(&key) {
                return;
            }
            let asked = inner.store.cursor(&key, ASKED).await.unwrap_or(0);
            let taken = inner.store.cursor(&key, TAKEN).await.unwrap_or(0);
            let paused = matches!(
                inner.store.thread(&key).await,
                Ok(Some(info)) if info.status != ThreadStatus::Idle
            );
            if (asked > taken || paused)
                && let Err(e) = inner.take(&key, None).await
            {
                tracing::warn!(error = %e, "a scheduled look at a busy thread failed");
            }
        });
        state.retakes.insert(thread.clone(), task);
    }

    /// Starts a task that takes the thread again (after a release).
    pub(super) fn hand_over(self: &Arc<Self>, thread: ThreadKey) {
        if self.closed() {
            return;
        }
        let inner = self.clone();
        let busy = BusyGuard::new(self);
        tokio::spawn(async move {
            let _busy = busy;
            if let Err(e) = inner.take(&thread, None).await {
                tracing::warn!(error = %e, "handing a thread over failed");
            }
        });
    }
}
