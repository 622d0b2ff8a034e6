//! Following a run this process does not hold: its frames read from the session store's event log, woken by PostgreSQL's LISTEN/NOTIFY or a poll, and the thread taken over when its holder's claim lapses (ADR 0344).
//!
//! The event log holds durable events only (ids, names, usage, outcomes); the
//! text lives in the history and the tool-call records. A follower turns each
//! event of the run into the frames `burrow run --json` prints for it:
//! `run_started` for a start or resume, one `thinking_delta` / `text_delta` /
//! `tool_call` per part of each answer the history gained, `tool_result` when a
//! call finished, `usage` per request, and `end` for a pause or an end. Text
//! arrives an answer at a time, not as it streams: deltas are never stored.
//!
//! Each frame's id is `sSEQ.K`, the `K`th frame made from the event `SEQ`, so
//! `Last-Event-ID: sSEQ.K` resumes after it in whichever process answers.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use burrow_runtime::message::{AssistantPart, Message};
use burrow_runtime::runner::{LiveEvent, LiveFrame, Runner};
use burrow_runtime::session::{
    Event, EventKind, HistoryItem, RunRecord, RunStatus, SessionStore, ThreadKey,
};
use futures::StreamExt;
use futures::stream::BoxStream;
use tokio::sync::broadcast;

/// How many events a follower reads at once.
const PAGE: usize = 256;

/// How often a follower with nothing new looks at the run's record and claim.
const SETTLE_EVERY: Duration = Duration::from_secs(1);

/// What wakes followers: a poll, and on PostgreSQL the notifications of
/// commits (`LISTEN burrow_session_events`), with the poll as a fallback.
#[derive(Debug, Clone)]
pub struct Wake {
    poll: Duration,
    notices: Option<Arc<broadcast::Sender<Arc<str>>>>,
}

impl Default for Wake {
    fn default() -> Self {
        Self::poll(Duration::from_millis(100))
    }
}

impl Wake {
    /// Followers look at the store every `every`.
    pub fn poll(every: Duration) -> Self {
        Self {
            poll: every.max(Duration::from_millis(1)),
            notices: None,
        }
    }

    /// Followers are woken by the notifications a PostgreSQL session store's
    /// commits send, listened to on one connection of its own to `url`
    /// (reconnected after a failure), and look anyway every `fallback`.
    ///
    /// # Behavior
    /// Spawns the listening task on the current tokio runtime; it ends once
    /// the last clone of the returned value is dropped and a notification
    /// arrives. A connection that fails is logged and made again, with a
    /// growing wait up to 5 seconds; after each (re)connection every follower
    /// looks once, since notifications sent meanwhile were lost.
    #[cfg(feature = "postgres")]
    pub fn postgres(url: &str, fallback: Duration) -> Self {
        let (sender, _) = broadcast::channel(1024);
        let sender = Arc::new(sender);
        tokio::spawn(crate::listen::listen(
            url.to_owned(),
            Arc::downgrade(&sender),
        ));
        Self {
            poll: fallback.max(Duration::from_millis(1)),
            notices: Some(sender),
        }
    }

    /// The payload of the notifications for `thread`.
    pub(crate) fn key(thread: &ThreadKey) -> String {
        serde_json::json!([thread.scope.tenant, thread.scope.workspace, thread.thread]).to_string()
    }
}

/// A frame of a followed run with its SSE id (none for the end).
pub(crate) struct Followed {
    pub(crate) id: Option<String>,
    pub(crate) frame: LiveFrame,
}

/// Where a follower resumes: after frame `k` of event `seq`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct After {
    pub(crate) seq: u64,
    pub(crate) k: u32,
}

impl After {
    /// Parses `sSEQ.K`.
    pub(crate) fn parse(id: &str) -> Option<Self> {
        let (seq, k) = id.strip_prefix('s')?.split_once('.')?;
        Some(Self {
            seq: seq.parse().ok()?,
            k: k.parse().ok()?,
        })
    }
}

struct Follower {
    runner: Runner,
    thread: ThreadKey,
    run_id: String,
    /// The last event read.
    seq: u64,
    skip: Option<After>,
    pending: VecDeque<Followed>,
    done: bool,
    notices: Option<broadcast::Receiver<Arc<str>>>,
    key: String,
    poll: Duration,
    /// When the run's record and claim were last looked at.
    settled_at: Option<tokio::time::Instant>,
}

/// The frames of run `run` of `thread` from the store: after `after` when
/// given, else from the start of its last segment; ends after its `end`.
pub(crate) async fn follow(
    runner: Runner,
    thread: ThreadKey,
    run: RunRecord,
    after: Option<After>,
    wake: &Wake,
) -> BoxStream<'static, Followed> {
    // Subscribed before the first read, so no commit falls between a read and a wait.
    let notices = wake.notices.as_ref().map(|n| n.subscribe());
    let store = runner.store().clone();
    let seq = match after {
        Some(a) => a.seq.saturating_sub(1),
        None => segment_start(store.as_ref(), &thread, &run).await,
    };
    let follower = Follower {
        runner,
        key: Wake::key(&thread),
        thread,
        run_id: run.run_id,
        seq,
        skip: after,
        pending: VecDeque::new(),
        done: false,
        notices,
        poll: wake.poll,
        settled_at: None,
    };
    futures::stream::unfold(follower, |mut f| async move {
        let next = f.next().await?;
        Some((next, f))
    })
    .boxed()
}

/// The seq before the run's last segment: its `run_started`, or its last
/// `run_resumed` when it was resumed.
async fn segment_start(store: &dyn SessionStore, thread: &ThreadKey, run: &RunRecord) -> u64 {
    let first = run.started_seq.saturating_sub(1);
    if run.segments <= 1 {
        return first;
    }
    let (mut at, mut start) = (first, first);
    while let Ok(events) = store.events(thread, at, PAGE).await {
        let Some(last) = events.last() else { break };
        at = last.seq;
        for e in &events {
            if matches!(&e.kind, EventKind::RunResumed { run_id } if *run_id == run.run_id) {
                start = e.seq - 1;
            }
        }
    }
    start
}

impl Follower {
    fn store(&self) -> Arc<dyn SessionStore> {
        self.runner.store().clone()
    }

    async fn next(&mut self) -> Option<Followed> {
        loop {
            if let Some(frame) = self.pending.pop_front() {
                return Some(frame);
            }
            if self.done {
                return None;
            }
            match self.store().events(&self.thread, self.seq, PAGE).await {
                Ok(events) if !events.is_empty() => {
                    for event in events {
                        self.seq = event.seq;
                        self.read(event).await;
                        if self.done {
                            break;
                        }
                    }
                }
                Ok(_) => {
                    // The log says when the run ends; the record and the claim are looked
                    // at now and then, for a pruned log or a dead holder.
                    let due = self
                        .settled_at
                        .is_none_or(|at| at.elapsed() >= SETTLE_EVERY);
                    if due {
                        self.settled_at = Some(tokio::time::Instant::now());
                        if self.settled().await {
                            continue;
                        }
                    }
                    self.wait().await;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "reading a followed run's events failed");
                    tokio::time::sleep(self.poll).await;
                }
            }
        }
    }

    /// With nothing new in the log: true when the run no longer runs (then
    /// its end is pending, read from its record) or when this process took
    /// the thread over from a holder whose claim lapsed (its events follow).
    async fn settled(&mut self) -> bool {
        let store = self.store();
        let run = match store.run(&self.thread.scope, &self.run_id).await {
            Ok(Some(run)) => run,
            Ok(None) => {
                self.end(None, None);
                return true;
            }
            Err(e) => {
                tracing::warn!(error = %e, "reading a followed run failed");
                return false;
            }
        };
        if run.status != RunStatus::Running && run.status != RunStatus::Paused {
            // Ended by a commit this follower has not read yet, or whose events were pruned.
            match store.events(&self.thread, self.seq, 1).await {
                Ok(events) if !events.is_empty() => return true,
                _ => {}
            }
            self.end(Some(run.status.as_str().to_owned()), run.reason);
            return true;
        }
        if run.status == RunStatus::Running && self.runner.running(&self.thread).is_none() {
            let lapsed = match store.claim(&self.thread).await {
                Ok(None) => true,
                Ok(Some(claim)) => claim.expires_at_ms <= store.now_ms(),
                Err(_) => false,
            };
            if lapsed {
                // Its holder died or handed it back: this process takes the thread, which
                // records the run abandoned and starts the next run with any untaken
                // messages, else carries the run on (ADR 0345).
                let taken = match run.message_ids.first() {
                    Some(message) => self.runner.take_over(&self.thread, message).await,
                    None => self.runner.take_thread(&self.thread).await,
                };
                match taken {
                    Ok(_) => return true,
                    Err(e) => tracing::warn!(error = %e, "taking over a followed thread failed"),
                }
            }
        }
        false
    }

    /// Waits for a notification of the thread (or of any thread, or a lost
    /// one) or the poll, whichever comes first.
    async fn wait(&mut self) {
        let poll = tokio::time::sleep(self.poll);
        let Some(notices) = self.notices.as_mut() else {
            poll.await;
            return;
        };
        let key = self.key.as_str();
        let noticed = async {
            loop {
                match notices.recv().await {
                    Ok(p) if p.is_empty() || &*p == key => return,
                    Ok(_) => {}
                    Err(broadcast::error::RecvError::Lagged(_)) => return,
                    Err(broadcast::error::RecvError::Closed) => {
                        return std::future::pending().await;
                    }
                }
            }
        };
        tokio::select! {
            () = poll => {}
            () = noticed => {}
        }
    }

    fn push(&mut self, k: &mut u32, event: LiveEvent) {
        let at = After {
            seq: self.seq,
            k: *k,
        };
        *k += 1;
        if self.skip.is_some_and(|skip| at <= skip) {
            return;
        }
        self.pending.push_back(Followed {
            id: Some(format!("s{}.{}", at.seq, at.k)),
            frame: LiveFrame {
                run_id: self.run_id.clone(),
                event,
            },
        });
    }

    fn end(&mut self, outcome: Option<String>, reason: Option<String>) {
        self.done = true;
        self.pending.push_back(Followed {
            id: None,
            frame: LiveFrame {
                run_id: self.run_id.clone(),
                event: LiveEvent::End { outcome, reason },
            },
        });
    }

    /// The frames of one event of the log.
    async fn read(&mut self, event: Event) {
        let mut k = 0;
        let me = self.run_id.clone();
        let mine = |id: &str| id == me;
        match event.kind {
            EventKind::RunStarted { run_id, .. } | EventKind::RunResumed { run_id }
                if mine(&run_id) =>
            {
                let thread_id = Some(self.thread.thread.clone());
                self.push(&mut k, LiveEvent::Started { thread_id });
            }
            EventKind::HistoryAppended {
                run_id: Some(run_id),
                from_pos,
                count,
            } if mine(&run_id) => {
                let entries = match self.store().history(&self.thread, from_pos).await {
                    Ok(entries) => entries,
                    Err(e) => {
                        tracing::warn!(error = %e, "reading a followed run's history failed");
                        return;
                    }
                };
                let count = usize::try_from(count).unwrap_or(usize::MAX);
                for entry in entries.into_iter().take(count) {
                    // A recorded call's result is given when it finished (below).
                    if !matches!(entry.item, HistoryItem::ToolResult { .. }) {
                        self.message(&mut k, entry.message);
                    }
                }
            }
            EventKind::ToolCallFinished {
                run_id, call_id, ..
            } if mine(&run_id) => {
                let calls = self
                    .store()
                    .tool_calls(&self.thread.scope, &self.run_id)
                    .await
                    .unwrap_or_default();
                if let Some(result) = calls
                    .into_iter()
                    .find(|c| c.call_id == call_id)
                    .and_then(|c| c.result)
                {
                    self.message(&mut k, Message::ToolResult(result));
                }
            }
            EventKind::Usage { run_id, usage } if mine(&run_id) => {
                self.push(&mut k, LiveEvent::Usage { usage });
            }
            EventKind::RunPaused { run_id, .. } if mine(&run_id) => {
                self.end(Some("paused".to_owned()), None);
            }
            EventKind::RunEnded {
                run_id,
                status,
                reason,
            } if mine(&run_id) => {
                self.end(Some(status.as_str().to_owned()), reason);
            }
            _ => {}
        }
    }

    /// The frames of one message the run's history gained.
    fn message(&mut self, k: &mut u32, message: Message) {
        match message {
            Message::Assistant { parts } => {
                for part in parts {
                    let event = match part {
                        AssistantPart::Text { text } if !text.is_empty() => {
                            LiveEvent::TextDelta { text }
                        }
                        AssistantPart::Thinking { text, .. } if !text.is_empty() => {
                            LiveEvent::ThinkingDelta { text }
                        }
                        AssistantPart::ToolCall(call) => LiveEvent::ToolCall {
                            id: call.id,
                            name: call.name,
                            arguments: call.arguments,
                        },
                        _ => continue,
                    };
                    self.push(k, event);
                }
            }
            Message::ToolResult(r) => self.push(
                k,
                LiveEvent::ToolResult {
                    id: r.call_id,
                    name: r.name,
                    content: r.content,
                    is_error: r.is_error,
                },
            ),
            _ => {}
        }
    }
}
