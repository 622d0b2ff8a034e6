//! The records a session store keeps (threads, posted messages, history, runs, tool calls, events, claims, checkpoints) and the writes that change them.
//!
//! Content lives once: a posted message's text in its [`PostedMessage`], a
//! tool call's arguments in the assistant message of the history, its result
//! in its [`ToolCallRecord`]. The history refers to the first and the last
//! ([`HistoryItem::Posted`], [`HistoryItem::ToolResult`]) rather than copying
//! them, and events ([`EventKind`]) carry ids, names, usage and outcomes only.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agent::FailureReason;
use crate::checkpoint::FileImage;
use crate::message::{Message, ToolResult, Usage};

/// A workspace of a tenant: what message ids, run ids and commands are unique in.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Scope {
    /// The tenant.
    pub tenant: String,
    /// The workspace.
    pub workspace: String,
}

impl Scope {
    /// The workspace `workspace` of tenant `tenant`.
    pub fn new(tenant: impl Into<String>, workspace: impl Into<String>) -> Self {
        Self {
            tenant: tenant.into(),
            workspace: workspace.into(),
        }
    }

    /// The thread `thread` of this workspace.
    pub fn thread(&self, thread: impl Into<String>) -> ThreadKey {
        ThreadKey {
            scope: self.clone(),
            thread: thread.into(),
        }
    }
}

/// A thread of a workspace.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ThreadKey {
    /// The workspace.
    pub scope: Scope,
    /// The thread's id.
    pub thread: String,
}

/// Whether a thread has an unfinished run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThreadStatus {
    /// No run is running or paused.
    Idle,
    /// A run is running.
    Running,
    /// A run is paused, waiting for answers.
    Paused,
}

/// A thread as the store knows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadInfo {
    /// The thread's id.
    pub thread: String,
    /// When its first commit was made.
    pub created_at_ms: i64,
    /// When its last commit was made.
    pub updated_at_ms: i64,
    /// The `seq` of its last event (0: none yet).
    pub head_seq: u64,
    /// How many history entries it has.
    pub history_len: u64,
    /// Idle, running or paused.
    pub status: ThreadStatus,
    /// The run that is running or paused, if one is.
    pub active_run: Option<String>,
    /// A rewind begun and not finished (ADR 0294): while it stands no run
    /// starts and no checkpoint is saved; running the rewind again finishes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewind: Option<RewindIntent>,
}

/// A rewind recorded before its files are restored, cleared by the commit that finishes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RewindIntent {
    /// The checkpoint the thread is rewound to.
    pub checkpoint_id: String,
    /// The checkpoint's history length: where the conversation moves back to.
    pub history_len: u64,
    /// Whether the checkpoint's files are restored.
    pub files: bool,
    /// Whether the conversation moves back.
    pub conversation: bool,
    /// When the rewind began.
    pub at_ms: i64,
}

/// Whether a posted message is for the agent or only for people.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageKind {
    /// A message: it starts, steers or answers a run.
    Message,
    /// A notice: committed as-is, never a prompt or a reply.
    Notice,
}

/// A message someone posted to a thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PostedMessage {
    /// Its id, used once per workspace.
    pub id: String,
    /// The thread it was posted to.
    pub thread: String,
    /// The `seq` of its `message_posted` event.
    pub seq: u64,
    /// Who posted it.
    pub author: String,
    /// Message or notice.
    pub kind: MessageKind,
    /// Its text.
    pub text: String,
    /// When it was committed.
    pub at_ms: i64,
}

/// One entry of a thread's history as written: a message, or a reference to
/// content stored once elsewhere.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HistoryItem {
    /// A message stored here (an assistant answer, a system message).
    Message {
        /// The message.
        message: Message,
    },
    /// A posted message of this thread, delivered to the model here; read back
    /// as a user message with its text.
    Posted {
        /// The posted message's id.
        message_id: String,
    },
    /// The result of a finished tool call of the entry's run; read back as the
    /// tool result message its record holds.
    ToolResult {
        /// The call's id.
        call_id: String,
    },
    /// The conversation moved back to a checkpoint here: the model's view is
    /// the history's first `history_len` entries (as viewed) and what follows
    /// this entry (see [`crate::checkpoint::view`]). Read back as a system
    /// message saying so; the entries it passes over stay, reachable by position.
    Rewind {
        /// The checkpoint.
        checkpoint_id: String,
        /// The checkpoint's history length.
        history_len: u64,
    },
}

/// One entry of a thread's history as read: the item written and the message it stands for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryEntry {
    /// Its position in the thread's history, from 0.
    pub pos: u64,
    /// The run that appended it, if one did.
    pub run_id: Option<String>,
    /// What was written.
    pub item: HistoryItem,
    /// The message, references resolved.
    pub message: Message,
}

/// What started a run segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// A posted message.
    Message,
    /// Answers to a pause.
    Resume,
    /// A direct call.
    Api,
}

/// Where a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Running (a claimant drives it).
    Running,
    /// Paused: waiting for answers to its requests.
    Paused,
    /// Ended: the model finished.
    Completed,
    /// Ended: it failed, for a stable reason.
    Failed,
    /// Ended: it was stopped.
    Stopped,
}

impl RunStatus {
    /// True for completed, failed and stopped.
    pub fn is_ended(self) -> bool {
        matches!(
            self,
            RunStatus::Completed | RunStatus::Failed | RunStatus::Stopped
        )
    }

    /// `running`, `paused`, `completed`, `failed` or `stopped`.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Paused => "paused",
            RunStatus::Completed => "completed",
            RunStatus::Failed => "failed",
            RunStatus::Stopped => "stopped",
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum RunEnd {
    /// The model finished.
    Completed,
    /// It failed.
    Failed {
        /// A short stable reason (`abandoned`, `max_turns`, `model_error`, ...).
        reason: FailureReason,
        /// One sentence for people.
        message: String,
    },
    /// It was stopped.
    Stopped {
        /// Why.
        reason: String,
    },
}

impl RunEnd {
    /// The status it leaves the run in.
    pub fn status(&self) -> RunStatus {
        match self {
            RunEnd::Completed => RunStatus::Completed,
            RunEnd::Failed { .. } => RunStatus::Failed,
            RunEnd::Stopped { .. } => RunStatus::Stopped,
        }
    }

    /// The reason, if any.
    pub fn reason(&self) -> Option<&str> {
        match self {
            RunEnd::Completed => None,
            RunEnd::Failed { reason, .. } => Some(reason.as_str()),
            RunEnd::Stopped { reason } => Some(reason),
        }
    }
}

/// What a paused run asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestKind {
    /// A question (`ask_user`): answered with text.
    Question,
    /// An approval of a tool call: answered approved or not, with an optional reason.
    Approval,
}

/// A request a run paused on. Its content (the question) is the tool call's
/// arguments in the history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestSpec {
    /// The request's id, unique in the run (often the call id).
    pub id: String,
    /// The tool call it belongs to.
    pub call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// Question or approval.
    pub kind: RequestKind,
    /// For an approval: the arguments the call runs with once approved, when
    /// a `PreToolUse` hook's `updatedInput` replaced the model's; `None`: the
    /// call's own (in the history).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
}

/// An answer to a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    /// Who answered.
    pub author: String,
    /// For an approval: approved or not. A question's answer leaves it `None`.
    pub approved: Option<bool>,
    /// The answer's text (a question's answer, an approval's reason).
    pub text: Option<String>,
    /// The posted message that carried the answer, if one did.
    pub message_id: Option<String>,
}

/// A request with its answer, once answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    /// What was asked.
    pub spec: RequestSpec,
    /// The answer.
    pub answer: Option<Answer>,
}

/// A run as the store knows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The run's id, unique in its workspace.
    pub run_id: String,
    /// Its thread.
    pub thread: String,
    /// Where it is.
    pub status: RunStatus,
    /// What started its first segment.
    pub trigger: Trigger,
    /// Whose message or answer started its last segment.
    pub requested_by: Option<String>,
    /// The posted messages its first segment carries out.
    pub message_ids: Vec<String>,
    /// The failure's or stop's reason, once ended so.
    pub reason: Option<String>,
    /// The failure's sentence, once failed.
    pub failure: Option<String>,
    /// The requests of its last pause, with their answers.
    pub requests: Vec<Request>,
    /// The usage of all its requests.
    pub usage: Usage,
    /// How many segments it has had (1 + resumes).
    pub segments: u32,
    /// The seq of its `run_started` event (orders a thread's runs).
    pub started_seq: u64,
    /// When it started.
    pub started_at_ms: i64,
    /// When it ended.
    pub ended_at_ms: Option<i64>,
    /// What the application said of the run when it started (for example the
    /// model it runs with, so a process that resumes it can set it up alike).
    /// Never in an event: labels may say more than ids and outcomes.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

/// Most labels a run may carry.
pub const MAX_RUN_LABELS: usize = 32;
/// Longest label name, in bytes.
pub const MAX_LABEL_NAME: usize = 128;
/// Longest label value, in bytes.
pub const MAX_LABEL_VALUE: usize = 4096;

/// Whether a tool call has finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolCallStatus {
    /// Recorded started; no result yet (it runs, or its process died).
    Started,
    /// Finished with a result.
    Finished,
}

/// The durable record of one tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallRecord {
    /// The run.
    pub run_id: String,
    /// The call's id.
    pub call_id: String,
    /// The tool's name.
    pub name: String,
    /// The call's effect key, if it mutates.
    pub effect_key: Option<String>,
    /// Started or finished.
    pub status: ToolCallStatus,
    /// How many times it was started (a re-run of an unfinished idempotent call adds one).
    pub attempts: u32,
    /// Its result, once finished.
    pub result: Option<ToolResult>,
    /// The seq of its first `tool_call_started` event (orders a run's calls).
    pub started_seq: u64,
    /// When it was first started.
    pub started_at_ms: i64,
    /// When it finished.
    pub finished_at_ms: Option<i64>,
}

/// A checkpoint of a thread's conversation: a position in its history, by reference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Its id, unique in the thread.
    pub id: String,
    /// How many history entries it covers.
    pub history_len: u64,
    /// The `seq` of its `checkpoint_saved` event.
    pub seq: u64,
    /// A label for people.
    pub label: Option<String>,
    /// When it was saved.
    pub at_ms: i64,
    /// The agent turn it was taken before, when a run took it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    /// What the taker recorded (the tools of the batch, the `execute` calls
    /// whose changes are not captured).
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub metadata: serde_json::Map<String, Value>,
    /// The paths whose pre-images it holds (read them with
    /// [`SessionStore::checkpoint_files`](super::SessionStore::checkpoint_files)).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
}

/// One event of a thread's log. Events are content-free: ids, names, usage, outcomes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// Its position in the thread's log: 1, 2, 3, ... without gaps.
    pub seq: u64,
    /// When it was committed.
    pub at_ms: i64,
    /// What happened.
    pub kind: EventKind,
}

/// What an event records.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    /// A message or notice was posted.
    MessagePosted {
        /// Its id.
        message_id: String,
        /// Who posted it.
        author: String,
        /// Message or notice.
        kind: MessageKind,
    },
    /// Entries were appended to the history.
    HistoryAppended {
        /// The run that appended them.
        run_id: Option<String>,
        /// The position of the first.
        from_pos: u64,
        /// How many.
        count: u64,
    },
    /// A run started.
    RunStarted {
        /// The run.
        run_id: String,
        /// What started it.
        trigger: Trigger,
        /// The posted messages it carries out.
        message_ids: Vec<String>,
    },
    /// A paused run resumed.
    RunResumed {
        /// The run.
        run_id: String,
    },
    /// A run paused.
    RunPaused {
        /// The run.
        run_id: String,
        /// The ids of its requests.
        requests: Vec<String>,
    },
    /// A request was answered.
    RequestAnswered {
        /// The run.
        run_id: String,
        /// The request.
        request_id: String,
    },
    /// A run ended.
    RunEnded {
        /// The run.
        run_id: String,
        /// `completed`, `failed` or `stopped`.
        status: RunStatus,
        /// The reason, if any.
        reason: Option<String>,
    },
    /// A tool call was started.
    ToolCallStarted {
        /// The run.
        run_id: String,
        /// The call.
        call_id: String,
        /// The tool.
        name: String,
    },
    /// A tool call finished.
    ToolCallFinished {
        /// The run.
        run_id: String,
        /// The call.
        call_id: String,
        /// Whether its result is an error.
        is_error: bool,
    },
    /// A model request's usage.
    Usage {
        /// The run.
        run_id: String,
        /// The counts.
        usage: Usage,
    },
    /// A checkpoint was saved.
    CheckpointSaved {
        /// The checkpoint.
        checkpoint_id: String,
    },
    /// A rewind to a checkpoint began (its files are restored next).
    RewindBegun {
        /// The checkpoint.
        checkpoint_id: String,
    },
    /// A rewind to a checkpoint finished.
    Rewound {
        /// The checkpoint.
        checkpoint_id: String,
    },
}

/// A thread claim: one live holder per thread, with a fencing token that only grows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claim {
    /// Who holds it (a fresh id per claim, never a run id).
    pub holder: String,
    /// The fencing token: greater than every token the thread's claims had before.
    pub token: u64,
    /// When it lapses unless renewed (store clock, milliseconds).
    pub expires_at_ms: i64,
}

impl Claim {
    /// The fence a commit made under this claim carries.
    pub fn fence(&self) -> Fence {
        Fence {
            holder: self.holder.clone(),
            token: self.token,
        }
    }
}

/// What trying to claim a thread gave.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimAttempt {
    /// The claim is yours.
    Granted(Claim),
    /// Someone else holds a live claim: theirs.
    Busy(Claim),
}

/// The claim a commit is made under; checked in the commit's transaction.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Fence {
    /// The claim's holder.
    pub holder: String,
    /// The claim's token.
    pub token: u64,
}

/// A command's identity: the same key is carried out once.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CommandKey {
    /// The workspace it was sent to.
    pub scope: Scope,
    /// The sender's stable identity.
    pub sender: String,
    /// The id the sender chose.
    pub command_id: String,
}

/// A command's result, recorded with the commit that carries the command out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandRecord {
    /// The command.
    pub key: CommandKey,
    /// What a repeat of it returns.
    pub result: Value,
}

/// One change a commit makes; each records exactly one event.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Write {
    /// Post a message (or notice) to the thread. Needs no fence.
    PostMessage {
        /// Its id, used once per workspace.
        id: String,
        /// Who posts it.
        author: String,
        /// Message or notice.
        kind: MessageKind,
        /// Its text.
        text: String,
    },
    /// Append entries to the thread's history.
    AppendHistory {
        /// The run appending them (running or paused), if any.
        run_id: Option<String>,
        /// The entries, in order.
        items: Vec<HistoryItem>,
    },
    /// Start a new run in an idle thread.
    StartRun {
        /// Its id, unused in the workspace.
        run_id: String,
        /// What started it.
        trigger: Trigger,
        /// Whose message started it.
        requested_by: Option<String>,
        /// The posted messages it carries out.
        message_ids: Vec<String>,
        /// What the application says of the run, kept in its record (see
        /// [`RunRecord::labels`]): at most [`MAX_RUN_LABELS`], names of at
        /// most [`MAX_LABEL_NAME`] bytes and values of at most
        /// [`MAX_LABEL_VALUE`], none empty-named or holding NUL.
        #[serde(default)]
        labels: BTreeMap<String, String>,
    },
    /// Resume a paused run all of whose requests are answered.
    ResumeRun {
        /// The run.
        run_id: String,
        /// Whose answer resumes it.
        requested_by: Option<String>,
    },
    /// Pause a running run on requests.
    PauseRun {
        /// The run.
        run_id: String,
        /// What it asks (at least one, ids distinct).
        requests: Vec<RequestSpec>,
    },
    /// Answer an open request of a paused run.
    AnswerRequest {
        /// The run.
        run_id: String,
        /// The request.
        request_id: String,
        /// The answer.
        answer: Answer,
    },
    /// End a running or paused run.
    EndRun {
        /// The run.
        run_id: String,
        /// How.
        end: RunEnd,
    },
    /// Record a tool call started, before it runs.
    ToolStarted {
        /// The running run.
        run_id: String,
        /// The call.
        call_id: String,
        /// The tool.
        name: String,
        /// The call's effect key, if it mutates.
        effect_key: Option<String>,
    },
    /// Record a started tool call finished, with its result.
    ToolFinished {
        /// The run.
        run_id: String,
        /// The call.
        call_id: String,
        /// Its result.
        result: ToolResult,
    },
    /// Record one model request's usage (added to the run's).
    RecordUsage {
        /// The run.
        run_id: String,
        /// The counts.
        usage: Usage,
    },
    /// Save a checkpoint at the current end of the history.
    SaveCheckpoint {
        /// Its id, unused in the thread.
        checkpoint_id: String,
        /// A label for people.
        label: Option<String>,
        /// The agent turn it is taken before, if a run takes it.
        #[serde(default)]
        turn: Option<u32>,
        /// What the taker records.
        #[serde(default)]
        metadata: serde_json::Map<String, Value>,
        /// The pre-images of the files it keeps (kept beside the row).
        #[serde(default)]
        files: Vec<FileImage>,
        /// Keep only the thread's newest `keep` checkpoints after this one is
        /// saved (at least one); `None` drops none.
        #[serde(default)]
        keep: Option<u32>,
    },
    /// Begin a rewind to a checkpoint: records the intent, which a
    /// [`Write::FinishRewind`] clears once the files are restored.
    BeginRewind {
        /// The checkpoint, of this thread.
        checkpoint_id: String,
        /// Its history length (where the conversation moves back to).
        history_len: u64,
        /// Whether its files are restored.
        files: bool,
        /// Whether the conversation moves back.
        conversation: bool,
    },
    /// Finish the thread's rewind: appends the [`HistoryItem::Rewind`] entry
    /// when the conversation moves back, and clears the intent.
    FinishRewind {
        /// The checkpoint the begun rewind names.
        checkpoint_id: String,
    },
}

impl Write {
    /// A [`Write::SaveCheckpoint`] of the conversation only: no turn, no
    /// metadata, no files, no retention.
    pub fn save_checkpoint(checkpoint_id: impl Into<String>, label: Option<String>) -> Self {
        Write::SaveCheckpoint {
            checkpoint_id: checkpoint_id.into(),
            label,
            turn: None,
            metadata: serde_json::Map::new(),
            files: Vec::new(),
            keep: None,
        }
    }
}

/// Moves a named cursor of the thread forward, in the commit's transaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CursorMove {
    /// The cursor's name (`asked`, `taken`, ...).
    pub name: String,
    /// The seq to move it to, or [`CursorMove::HEAD`] for the thread's head
    /// after this commit. A cursor never moves back: a lower value leaves it.
    pub to: u64,
    /// When set, the commit fails with `Conflict` unless the cursor stands here.
    pub expect: Option<u64>,
}

impl CursorMove {
    /// As `to`: the thread's head seq after the commit (its own last event),
    /// whatever other commits came first.
    pub const HEAD: u64 = u64::MAX;
}

/// One transaction: an optional fence, writes, cursor moves and a command record, all or nothing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Commit {
    /// The claim the commit is made under.
    pub fence: Option<Fence>,
    /// The writes, applied in order (each sees the ones before it).
    pub writes: Vec<Write>,
    /// Cursor moves, applied after the writes.
    pub cursors: Vec<CursorMove>,
    /// The command this commit carries out: its key is checked and recorded here.
    pub command: Option<CommandRecord>,
}

impl Commit {
    /// An empty commit.
    pub fn new() -> Self {
        Self::default()
    }

    /// The same commit made under `fence`.
    pub fn fenced(mut self, fence: Fence) -> Self {
        self.fence = Some(fence);
        self
    }

    /// Adds a write.
    pub fn write(mut self, write: Write) -> Self {
        self.writes.push(write);
        self
    }

    /// Moves cursor `name` forward to `to`.
    pub fn cursor(mut self, name: impl Into<String>, to: u64) -> Self {
        self.cursors.push(CursorMove {
            name: name.into(),
            to,
            expect: None,
        });
        self
    }

    /// Moves cursor `name` forward to the thread's head after this commit
    /// (the seq of this commit's last event when it has writes).
    pub fn cursor_to_head(mut self, name: impl Into<String>) -> Self {
        self.cursors.push(CursorMove {
            name: name.into(),
            to: CursorMove::HEAD,
            expect: None,
        });
        self
    }

    /// Moves cursor `name` from `expect` to `to`, failing with `Conflict` if it has moved.
    pub fn cursor_from(mut self, name: impl Into<String>, expect: u64, to: u64) -> Self {
        self.cursors.push(CursorMove {
            name: name.into(),
            to,
            expect: Some(expect),
        });
        self
    }

    /// Records the command `key` with `result` (once: a repeat fails `DuplicateCommand`).
    pub fn command(mut self, key: CommandKey, result: Value) -> Self {
        self.command = Some(CommandRecord { key, result });
        self
    }
}

/// What a commit did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Committed {
    /// The seq of each write's event, in write order.
    pub seqs: Vec<u64>,
    /// The thread's head seq after the commit.
    pub head_seq: u64,
    /// The thread's history length after the commit.
    pub history_len: u64,
}

/// What [`SessionStore::prune`](super::SessionStore::prune) forgot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pruned {
    /// Command results deleted.
    pub commands: u64,
    /// Events deleted.
    pub events: u64,
    /// Tool-call records deleted.
    pub tool_calls: u64,
}
