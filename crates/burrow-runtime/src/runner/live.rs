//! Live output: frames of a run in progress (text as it streams, tool calls, drafts), fanned out to watchers through a bounded buffer, never stored.
//!
//! Live frames are best-effort; the durable history and events are the
//! authority. A [`LiveChannel`] takes every frame a run produces, without ever
//! blocking it. [`FanoutChannel`] is the in-process one:
//!
//! - **A bounded buffer per run.** Each open run keeps its last `buffer`
//!   frames, numbered from 0. A watcher that attaches mid-run reads from the
//!   oldest frame still kept, so it catches up on what the run produced so far.
//! - **A slow watcher loses its oldest frames, not the run's time.** Watchers
//!   read the run's one buffer at their own pace; a watcher that falls more
//!   than `buffer` frames behind skips to the oldest frame still kept and is
//!   first given a [`LiveEvent::Gap`] with the number of frames it missed. A
//!   late watcher whose run has already dropped frames gets the same marker.
//! - **The end marker always arrives.** [`LiveEvent::End`] is not a buffered
//!   frame: once a watcher has read what is left, it is given the end, then
//!   its stream ends.
//! - **Watching an ended run ends at once.** The channel only holds runs that
//!   are open; a closed run is dropped as soon as its last watcher is done.
//!   A watch of a run that is not open is answered from the run's status
//!   (`Runner::watch` reads it from the store), never from a bounded set of
//!   remembered run ids that could forget it and leave the watcher waiting.
//!
//! Tools stream drafts (a snapshot of something they are still producing) with
//! [`emit_draft`]: the frame reaches the live channel of the run the call
//! belongs to and is never written to the history or the event log.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::Notify;

use crate::agent::AgentEvent;
use crate::message::Usage;

/// The number of frames a [`FanoutChannel`] keeps per run by default.
pub const DEFAULT_LIVE_BUFFER: usize = 1024;

/// The bytes of frames a [`FanoutChannel`] keeps per run by default (8 MiB):
/// whichever of this and [`DEFAULT_LIVE_BUFFER`] is reached first drops the
/// oldest frames.
pub const DEFAULT_LIVE_BYTES: usize = 8 << 20;

/// About how many bytes `frame` holds (its strings and JSON values).
fn frame_bytes(frame: &LiveFrame) -> usize {
    fn json(v: &Value) -> usize {
        match v {
            Value::String(s) => s.len() + 2,
            Value::Array(items) => 2 + items.iter().map(json).sum::<usize>(),
            Value::Object(map) => {
                2 + map
                    .iter()
                    .map(|(k, v)| k.len() + 3 + json(v))
                    .sum::<usize>()
            }
            _ => 8,
        }
    }
    let event = match &frame.event {
        LiveEvent::Started { thread_id } => thread_id.as_ref().map_or(0, String::len),
        LiveEvent::TextDelta { text } | LiveEvent::ThinkingDelta { text } => text.len(),
        LiveEvent::ToolCall {
            id,
            name,
            arguments,
        } => id.len() + name.len() + json(arguments),
        LiveEvent::ToolResult {
            id, name, content, ..
        } => id.len() + name.len() + content.len(),
        LiveEvent::Draft {
            call_id,
            kind,
            snapshot,
            artifact_id,
        } => {
            call_id.as_ref().map_or(0, String::len)
                + kind.len()
                + json(snapshot)
                + artifact_id.as_ref().map_or(0, String::len)
        }
        LiveEvent::Task { event } => json(event),
        _ => 0,
    };
    frame.run_id.len() + event + 32
}

/// One frame of a run's live output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LiveFrame {
    /// The run it belongs to.
    pub run_id: String,
    /// What happened.
    #[serde(flatten)]
    pub event: LiveEvent,
}

/// What a live frame carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum LiveEvent {
    /// A run segment started (a new run, or a paused run resumed).
    Started {
        /// The thread the run belongs to.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        thread_id: Option<String>,
    },
    /// Answer text as it streams.
    TextDelta {
        /// The text.
        text: String,
    },
    /// Reasoning as it streams.
    ThinkingDelta {
        /// The text.
        text: String,
    },
    /// The model called a tool (arguments complete).
    ToolCall {
        /// The call id.
        id: String,
        /// The tool.
        name: String,
        /// The arguments.
        arguments: Value,
    },
    /// A call's result.
    ToolResult {
        /// The call id.
        id: String,
        /// The tool.
        name: String,
        /// The text the model reads.
        content: String,
        /// True for a refusal, denial, cancellation or failure.
        is_error: bool,
    },
    /// The usage of one model request.
    Usage {
        /// The counts it reported.
        usage: Usage,
    },
    /// A model request failed and is sent again after a wait.
    Retry {
        /// The attempt about to be made (2 for the first retry).
        attempt: u32,
        /// The most attempts made.
        attempts: u32,
        /// The wait before it, in milliseconds.
        wait_ms: u64,
        /// What kind of failure it was.
        kind: String,
        /// The failure, as one sentence.
        reason: String,
    },
    /// The history was compacted before a request (ADR 0293).
    Compacted {
        /// `auto` or `manual`.
        trigger: String,
        /// How many messages of the view the summary replaced.
        summarised: usize,
        /// How many of the last messages stay verbatim.
        kept: usize,
        /// The estimated input tokens before, if estimated.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tokens_before: Option<u64>,
        /// The summary.
        summary: String,
    },
    /// A due compaction failed; the run goes on uncompacted.
    CompactionFailed {
        /// `model_failed`, `empty_summary`, ...
        reason: String,
        /// One sentence.
        message: String,
    },
    /// A `PreCompact` hook blocked a due compaction.
    CompactionBlocked {
        /// The hook's reason.
        reason: String,
    },
    /// A snapshot of something a tool is still producing; never stored.
    Draft {
        /// The call that produces it, when a tool emitted it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
        /// What kind of thing it is (an application's name, such as `doc`).
        kind: String,
        /// The snapshot so far.
        snapshot: Value,
        /// The id of the thing, once it has one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        artifact_id: Option<String>,
    },
    /// What a subagent started by this run's `task` call did (ADR 0405),
    /// as `burrow run --json` prints it: `task_started`, each of the
    /// child's frames with the child's `run_id` and this run's
    /// `parent_run_id`, `task_ended`. Sent by a surface that follows
    /// children in their parent's live frames; the runner sends none.
    Task {
        /// The JSON object, its `type` among the others.
        event: Value,
    },
    /// The watcher fell behind (or attached late) and missed `missed` frames.
    Gap {
        /// How many frames it missed.
        missed: u64,
    },
    /// The run segment ended; the last frame a watcher receives.
    End {
        /// `completed`, `failed`, `paused` or `stopped`; `None` when unknown
        /// (the run is not open here and its status was not found).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outcome: Option<String>,
        /// The failure's stable reason, or the pause's or stop's text.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
}

impl LiveEvent {
    /// The live form of an agent event; `None` for the events a channel
    /// carries otherwise (the run's end is [`LiveEvent::End`], given on close).
    pub fn from_agent(event: AgentEvent) -> Option<LiveEvent> {
        Some(match event {
            AgentEvent::RunStarted { thread_id, .. } => LiveEvent::Started { thread_id },
            AgentEvent::TextDelta { text } => LiveEvent::TextDelta { text },
            AgentEvent::ThinkingDelta { text } => LiveEvent::ThinkingDelta { text },
            AgentEvent::ToolCall {
                id,
                name,
                arguments,
            } => LiveEvent::ToolCall {
                id,
                name,
                arguments,
            },
            AgentEvent::ToolResult {
                id,
                name,
                content,
                is_error,
            } => LiveEvent::ToolResult {
                id,
                name,
                content,
                is_error,
            },
            AgentEvent::Usage { usage } => LiveEvent::Usage { usage },
            AgentEvent::Retry {
                attempt,
                attempts,
                wait_ms,
                kind,
                reason,
            } => LiveEvent::Retry {
                attempt,
                attempts,
                wait_ms,
                kind,
                reason,
            },
            AgentEvent::Compacted {
                trigger,
                summarised,
                kept,
                tokens_before,
                summary,
            } => LiveEvent::Compacted {
                trigger,
                summarised,
                kept,
                tokens_before,
                summary,
            },
            AgentEvent::CompactionFailed { reason, message } => {
                LiveEvent::CompactionFailed { reason, message }
            }
            AgentEvent::CompactionBlocked { reason } => LiveEvent::CompactionBlocked { reason },
            AgentEvent::RunEnded { .. } => return None,
        })
    }

    /// True for the end marker.
    pub fn is_end(&self) -> bool {
        matches!(self, LiveEvent::End { .. })
    }
}

/// Where a run's live frames go: a port.
pub trait LiveChannel: Send + Sync + 'static {
    /// Opens a run segment, so its frames are kept and watchers may attach.
    ///
    /// # Behavior
    /// Called before the run's first frame. Opening a run that is open keeps
    /// its frames; opening a run that was closed (a paused run resumed) starts
    /// a new segment.
    fn open(&self, run_id: &str);

    /// Delivers one frame.
    ///
    /// # Behavior
    /// Best-effort and non-blocking: it never waits for a watcher. A frame for
    /// a run that is not open is dropped.
    fn send(&self, frame: LiveFrame);

    /// Ends a run segment: every watcher receives `end` after the frames it has
    /// not read yet, and the run is forgotten once they are done.
    ///
    /// # Behavior
    /// Closing a run that is not open does nothing. `end` should be a
    /// [`LiveEvent::End`]; any other event is delivered as the end marker all the
    /// same.
    fn close(&self, run_id: &str, end: LiveEvent);

    /// The run's frames: those kept so far, then new ones, then its end marker.
    ///
    /// # Behavior
    /// `None` when the run is not open in this channel (it ended, or never
    /// ran here); the caller answers such a watch from the run's status.
    fn watch(&self, run_id: &str) -> Option<BoxStream<'static, LiveFrame>>;
}

/// A channel that drops every frame, for headless runs.
#[derive(Debug, Clone, Copy, Default)]
pub struct NullChannel;

impl LiveChannel for NullChannel {
    fn open(&self, _run_id: &str) {}

    fn send(&self, _frame: LiveFrame) {}

    fn close(&self, _run_id: &str, _end: LiveEvent) {}

    fn watch(&self, _run_id: &str) -> Option<BoxStream<'static, LiveFrame>> {
        None
    }
}

/// The frames of one open run segment.
#[derive(Debug)]
struct RunBuffer {
    run_id: Arc<str>,
    state: Mutex<BufferState>,
    notify: Notify,
}

#[derive(Debug)]
struct BufferState {
    /// The kept frames; the first is number `first`.
    frames: VecDeque<LiveFrame>,
    /// The number of the oldest kept frame (all before it were dropped).
    first: u64,
    /// About how many bytes the kept frames hold.
    bytes: usize,
    /// The end marker, once closed.
    end: Option<LiveEvent>,
}

impl RunBuffer {
    fn lock(&self) -> MutexGuard<'_, BufferState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// An in-process channel that fans each run's frames out to its watchers.
#[derive(Debug, Clone)]
pub struct FanoutChannel {
    inner: Arc<FanoutInner>,
}

#[derive(Debug)]
struct FanoutInner {
    buffer: usize,
    max_bytes: usize,
    runs: Mutex<HashMap<Arc<str>, Arc<RunBuffer>>>,
}

impl Default for FanoutChannel {
    fn default() -> Self {
        Self::new(DEFAULT_LIVE_BUFFER)
    }
}

impl FanoutChannel {
    /// A channel keeping `buffer` frames per run (at least one), of at most
    /// [`DEFAULT_LIVE_BYTES`].
    pub fn new(buffer: usize) -> Self {
        Self::with_limits(buffer, DEFAULT_LIVE_BYTES)
    }

    /// A channel keeping per run at most `buffer` frames (at least one) and
    /// about `max_bytes` bytes of them: the oldest are dropped first; a
    /// frame larger than `max_bytes` alone is dropped with all before it (a
    /// watcher sees a [`LiveEvent::Gap`]).
    pub fn with_limits(buffer: usize, max_bytes: usize) -> Self {
        Self {
            inner: Arc::new(FanoutInner {
                buffer: buffer.max(1),
                max_bytes,
                runs: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// About how many bytes of frames each run keeps at most.
    pub fn max_bytes(&self) -> usize {
        self.inner.max_bytes
    }

    /// How many frames each run keeps.
    pub fn buffer(&self) -> usize {
        self.inner.buffer
    }

    /// The runs open now (in no particular order).
    pub fn open_runs(&self) -> Vec<String> {
        self.runs().keys().map(|k| k.to_string()).collect()
    }

    fn runs(&self) -> MutexGuard<'_, HashMap<Arc<str>, Arc<RunBuffer>>> {
        self.inner
            .runs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn get(&self, run_id: &str) -> Option<Arc<RunBuffer>> {
        self.runs().get(run_id).cloned()
    }
}

impl LiveChannel for FanoutChannel {
    fn open(&self, run_id: &str) {
        let mut runs = self.runs();
        if runs.contains_key(run_id) {
            return;
        }
        let key: Arc<str> = Arc::from(run_id);
        runs.insert(
            key.clone(),
            Arc::new(RunBuffer {
                run_id: key,
                state: Mutex::new(BufferState {
                    frames: VecDeque::new(),
                    first: 0,
                    bytes: 0,
                    end: None,
                }),
                notify: Notify::new(),
            }),
        );
    }

    fn send(&self, frame: LiveFrame) {
        let Some(run) = self.get(&frame.run_id) else {
            return;
        };
        {
            let mut state = run.lock();
            if state.end.is_some() {
                return;
            }
            let size = frame_bytes(&frame);
            if size > self.inner.max_bytes {
                // Too large to keep: it and every frame before it are missed.
                let dropped = u64::try_from(state.frames.len()).unwrap_or(u64::MAX);
                state.frames.clear();
                state.bytes = 0;
                state.first += dropped + 1;
            } else {
                while !state.frames.is_empty()
                    && (state.frames.len() >= self.inner.buffer
                        || state.bytes + size > self.inner.max_bytes)
                {
                    if let Some(old) = state.frames.pop_front() {
                        state.bytes = state.bytes.saturating_sub(frame_bytes(&old));
                    }
                    state.first += 1;
                }
                state.bytes += size;
                state.frames.push_back(frame);
            }
        }
        run.notify.notify_waiters();
    }

    fn close(&self, run_id: &str, end: LiveEvent) {
        let Some(run) = self.runs().remove(run_id) else {
            return;
        };
        run.lock().end = Some(end);
        run.notify.notify_waiters();
    }

    fn watch(&self, run_id: &str) -> Option<BoxStream<'static, LiveFrame>> {
        let run = self.get(run_id)?;
        let watcher = Watcher { run, next: 0 };
        Some(Box::pin(futures::stream::unfold(
            Some(watcher),
            |watcher| async move {
                let mut watcher = watcher?;
                let (frame, done) = watcher.next().await;
                Some((frame, (!done).then_some(watcher)))
            },
        )))
    }
}

/// One watcher's position in a run's buffer.
struct Watcher {
    run: Arc<RunBuffer>,
    /// The number of the next frame to read.
    next: u64,
}

impl Watcher {
    /// The next frame, and whether it is the last.
    async fn next(&mut self) -> (LiveFrame, bool) {
        loop {
            let notified = self.run.notify.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            {
                let state = self.run.lock();
                if self.next < state.first {
                    let missed = state.first - self.next;
                    self.next = state.first;
                    return (self.frame(LiveEvent::Gap { missed }), false);
                }
                let at = usize::try_from(self.next - state.first).unwrap_or(usize::MAX);
                if let Some(frame) = state.frames.get(at) {
                    self.next += 1;
                    return (frame.clone(), false);
                }
                if let Some(end) = &state.end {
                    return (self.frame(end.clone()), true);
                }
            }
            notified.await;
        }
    }

    fn frame(&self, event: LiveEvent) -> LiveFrame {
        LiveFrame {
            run_id: self.run.run_id.to_string(),
            event,
        }
    }
}

/// The live channel of the run the current task belongs to.
#[derive(Clone)]
struct LiveScope {
    channel: Arc<dyn LiveChannel>,
    run_id: Arc<str>,
}

tokio::task_local! {
    static LIVE: LiveScope;
}

/// Runs `fut` (a run of `run_id`) with `channel` as its live channel, so the
/// drafts its tools emit with [`emit_draft`] reach it. The runner does this
/// for every run; call it around `Agent::run_with` to get drafts without one.
pub async fn with_live<F: std::future::Future>(
    channel: Arc<dyn LiveChannel>,
    run_id: &str,
    fut: F,
) -> F::Output {
    let scope = LiveScope {
        channel,
        run_id: Arc::from(run_id),
    };
    LIVE.scope(scope, fut).await
}

/// Streams a draft (a snapshot of something a tool is still producing) to the
/// live channel of the run this task belongs to; it is never stored.
///
/// Returns whether there was a live channel to send it to: a call outside a
/// runner's run (a plain `Agent::run`, a test) has none, and the draft is
/// dropped. A tool that spawns a task of its own must emit from the call's
/// task.
pub fn emit_draft(
    call_id: Option<&str>,
    kind: &str,
    snapshot: Value,
    artifact_id: Option<&str>,
) -> bool {
    LIVE.try_with(|scope| {
        scope.channel.send(LiveFrame {
            run_id: scope.run_id.to_string(),
            event: LiveEvent::Draft {
                call_id: call_id.map(str::to_owned),
                kind: kind.to_owned(),
                snapshot,
                artifact_id: artifact_id.map(str::to_owned),
            },
        });
    })
    .is_ok()
}
