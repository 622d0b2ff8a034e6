//! Checkpoints of a session thread: taking one into the store (before a batch or on demand), the model's view after a rewind, and the rewind and fork of a thread (ADR 0294, ADR 0295).
//!
//! A rewind is three steps, each safe to repeat: one commit records the
//! intent (refused while a run is unfinished, and saving the files as they
//! stand as a checkpoint of their own, so a rewind can be undone), then the
//! files are restored (idempotent), then one commit appends the rewind entry
//! and clears the intent. A rewind that died half-way is finished by running
//! [`rewind`] again: it finds the intent and rolls it forward.

use std::sync::Arc;
use std::time::Duration;

use burrow_backend::{Backend, FileContext};
use serde::{Deserialize, Serialize};

use super::{BatchEffects, FileImage, Retention, capture, changed_paths, restore};
use crate::message::{Message, ToolCall};
use crate::session::{
    Checkpoint, ClaimAttempt, Commit, HistoryEntry, HistoryItem, SessionStore, StoreError,
    StoreErrorKind, ThreadKey, Write,
};

/// What went wrong taking, rewinding to or forking from a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CheckpointErrorKind {
    /// The thread or the checkpoint does not exist.
    NotFound,
    /// Another process holds the thread (a run is going on, or another command).
    Busy,
    /// The thread's state forbids it (a running or paused run, an id in use).
    InvalidState,
    /// The arguments are malformed.
    InvalidArgument,
    /// The session store failed.
    Store,
    /// The workspace's backend failed reading or restoring a file.
    Backend,
}

impl CheckpointErrorKind {
    /// A short stable name (`not_found`, `busy`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            CheckpointErrorKind::NotFound => "not_found",
            CheckpointErrorKind::Busy => "busy",
            CheckpointErrorKind::InvalidState => "invalid_state",
            CheckpointErrorKind::InvalidArgument => "invalid_argument",
            CheckpointErrorKind::Store => "store",
            CheckpointErrorKind::Backend => "backend",
        }
    }
}

/// An error of a checkpoint operation: a kind and one sentence.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct CheckpointError {
    kind: CheckpointErrorKind,
    message: String,
}

impl CheckpointError {
    fn new(kind: CheckpointErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    /// What went wrong.
    pub fn kind(&self) -> CheckpointErrorKind {
        self.kind
    }

    /// The sentence.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl From<StoreError> for CheckpointError {
    fn from(e: StoreError) -> Self {
        let kind = match e.kind() {
            StoreErrorKind::NotFound => CheckpointErrorKind::NotFound,
            StoreErrorKind::InvalidState | StoreErrorKind::IdInUse => {
                CheckpointErrorKind::InvalidState
            }
            StoreErrorKind::InvalidArgument => CheckpointErrorKind::InvalidArgument,
            StoreErrorKind::StaleClaim => CheckpointErrorKind::Busy,
            _ => CheckpointErrorKind::Store,
        };
        Self::new(kind, e.message().to_owned())
    }
}

impl From<burrow_backend::Error> for CheckpointError {
    fn from(e: burrow_backend::Error) -> Self {
        Self::new(CheckpointErrorKind::Backend, e.to_string())
    }
}

/// A fresh checkpoint id (`ck_` and a time-ordered UUID).
pub fn new_checkpoint_id() -> String {
    format!("ck_{}", uuid::Uuid::now_v7().simple())
}

/// Takes checkpoints of a thread's files through a backend: what a runner
/// is given to checkpoint before every batch that changes files.
#[derive(Clone)]
pub struct Checkpointer {
    /// The workspace's files.
    pub backend: Arc<dyn Backend>,
    /// The context the files are read in (the run's tenant and workspace).
    pub ctx: FileContext,
    /// How many checkpoints a thread keeps.
    pub retention: Retention,
}

impl std::fmt::Debug for Checkpointer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checkpointer")
            .field("retention", &self.retention)
            .finish_non_exhaustive()
    }
}

impl Checkpointer {
    /// Checkpoints through `backend` in `ctx`, keeping the default 20 per thread.
    pub fn new(backend: Arc<dyn Backend>, ctx: FileContext) -> Self {
        Self {
            backend,
            ctx,
            retention: Retention::default(),
        }
    }

    /// The same, keeping `retention`.
    pub fn with_retention(mut self, retention: Retention) -> Self {
        self.retention = retention;
        self
    }

    /// The write that saves a checkpoint before `calls` run, or `None` when
    /// they change no file and run no command.
    ///
    /// # Behavior
    /// Reads the pre-image of every path the calls change
    /// ([`changed_paths`], [`capture`]); a read that fails fails the
    /// checkpoint. The metadata names the batch's tools and its `execute`
    /// calls, whose changes are not captured.
    pub async fn batch_write(
        &self,
        calls: &[ToolCall],
        turn: Option<u32>,
    ) -> Result<Option<Write>, burrow_backend::Error> {
        let effects = changed_paths(calls);
        if effects.is_empty() {
            return Ok(None);
        }
        let files = capture(self.backend.as_ref(), &self.ctx, &effects.paths).await?;
        Ok(Some(self.write(
            new_checkpoint_id(),
            None,
            turn,
            &effects,
            files,
        )))
    }

    fn write(
        &self,
        id: String,
        label: Option<String>,
        turn: Option<u32>,
        effects: &BatchEffects,
        files: Vec<FileImage>,
    ) -> Write {
        Write::SaveCheckpoint {
            checkpoint_id: id,
            label,
            turn,
            metadata: effects.metadata(),
            files,
            keep: Some(u32::try_from(self.retention.keep).unwrap_or(u32::MAX)),
        }
    }
}

/// The conversation the model reads from a thread's history: the history
/// itself, except that after a rewind entry it is the conversation at the
/// checkpoint (itself viewed so) followed by what came after the entry.
///
/// # Behavior
/// Rewind entries never appear in the view; nested rewinds (to a checkpoint
/// taken after an earlier rewind) resolve recursively. Entries passed over
/// stay in the history.
pub fn view(entries: &[HistoryEntry]) -> Vec<Message> {
    let last = entries
        .iter()
        .rposition(|e| matches!(e.item, HistoryItem::Rewind { .. }));
    match last {
        None => entries.iter().map(|e| e.message.clone()).collect(),
        Some(i) => {
            let HistoryItem::Rewind { history_len, .. } = &entries[i].item else {
                return Vec::new();
            };
            let cut = usize::try_from(*history_len).unwrap_or(usize::MAX).min(i);
            let mut out = view(&entries[..cut]);
            out.extend(entries[i + 1..].iter().map(|e| e.message.clone()));
            out
        }
    }
}

/// The thread's conversation as the model reads it ([`view`] of its history).
pub async fn load_view(
    store: &dyn SessionStore,
    thread: &ThreadKey,
) -> Result<Vec<Message>, StoreError> {
    Ok(view(&store.history(thread, 0).await?))
}

/// Saves a checkpoint of `thread` now, on demand, under a claim taken for the
/// commit; `paths` are the files whose current images it keeps (none: the
/// conversation only; a rewind to it still restores what later checkpoints
/// changed, see [`rewind`]). Returns its id.
pub async fn take(
    store: &dyn SessionStore,
    checkpointer: Option<&Checkpointer>,
    thread: &ThreadKey,
    label: Option<String>,
    paths: &[String],
) -> Result<String, CheckpointError> {
    let files = match checkpointer {
        Some(c) if !paths.is_empty() => capture(c.backend.as_ref(), &c.ctx, paths).await?,
        _ => Vec::new(),
    };
    let keep = checkpointer.map_or(super::DEFAULT_KEEP, |c| c.retention.keep);
    let id = new_checkpoint_id();
    let write = Write::SaveCheckpoint {
        checkpoint_id: id.clone(),
        label,
        turn: None,
        metadata: serde_json::Map::new(),
        files,
        keep: Some(u32::try_from(keep).unwrap_or(u32::MAX)),
    };
    with_claim(store, thread, |fence| async move {
        store
            .commit(thread, Commit::new().fenced(fence).write(write))
            .await
            .map_err(CheckpointError::from)
    })
    .await?;
    Ok(id)
}

/// What a rewind restores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RewindMode {
    /// The files and the conversation.
    Both,
    /// The files only: the conversation goes on as it is.
    FilesOnly,
    /// The conversation only: the files stay as they are.
    ConversationOnly,
}

impl RewindMode {
    fn files(self) -> bool {
        self != RewindMode::ConversationOnly
    }
    fn conversation(self) -> bool {
        self != RewindMode::FilesOnly
    }
}

/// What a rewind did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rewound {
    /// The checkpoint the thread is at now.
    pub checkpoint_id: String,
    /// The paths restored (empty when the files were not).
    pub restored: Vec<String>,
    /// Whether the conversation moved back.
    pub conversation: bool,
    /// The checkpoint holding the files and conversation as they stood
    /// before the rewind (rewind to it to undo), when one was saved.
    pub undo_checkpoint: Option<String>,
    /// A rewind left unfinished by an earlier process that this call finished first.
    pub finished_earlier: Option<String>,
}

/// Where a rewind can be stopped in crash tests (feature `failpoints`).
#[cfg(feature = "failpoints")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RewindStep {
    /// The intent is committed; no file is restored.
    Begun,
    /// The files are restored; the finishing commit is not made.
    Restored,
}

/// How a rewind runs.
#[derive(Clone)]
pub struct RewindOptions {
    /// What it restores.
    pub mode: RewindMode,
    /// How long the claim it takes lasts (renewed by no one: a rewind is short).
    pub claim_ttl: Duration,
    /// Stops the rewind for good at a step, as a killed process would (feature `failpoints`).
    #[cfg(feature = "failpoints")]
    pub crash_at: Option<Arc<dyn Fn(RewindStep) -> bool + Send + Sync>>,
}

impl Default for RewindOptions {
    fn default() -> Self {
        Self {
            mode: RewindMode::Both,
            claim_ttl: Duration::from_secs(30),
            #[cfg(feature = "failpoints")]
            crash_at: None,
        }
    }
}

#[cfg(feature = "failpoints")]
async fn reach(options: &RewindOptions, step: RewindStep) {
    if options.crash_at.as_ref().is_some_and(|f| f(step)) {
        tracing::warn!(?step, "a failpoint crashed the rewind here");
        std::future::pending::<()>().await;
    }
}

/// The images that bring the files back to how they stood at checkpoint
/// `at`: for each path any checkpoint from `at` on (in seq order) holds, the
/// first image of it. Every change after `at` was preceded by a checkpoint
/// holding what it overwrote, so the first one is the file at `at`.
async fn images_at(
    store: &dyn SessionStore,
    thread: &ThreadKey,
    all: &[Checkpoint],
    at: &Checkpoint,
) -> Result<Vec<FileImage>, CheckpointError> {
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for c in all.iter().filter(|c| c.seq >= at.seq) {
        if c.paths.iter().all(|p| seen.contains(p)) {
            continue;
        }
        let files = store
            .checkpoint_files(thread, &c.id)
            .await?
            .unwrap_or_default();
        for f in files {
            if seen.insert(f.path.clone()) {
                out.push(f);
            }
        }
    }
    Ok(out)
}

/// Runs `f` under a claim of `thread` taken for it, released after (whatever `f` returned).
async fn with_claim<T, F, Fut>(
    store: &dyn SessionStore,
    thread: &ThreadKey,
    f: F,
) -> Result<T, CheckpointError>
where
    F: FnOnce(crate::session::Fence) -> Fut,
    Fut: std::future::Future<Output = Result<T, CheckpointError>>,
{
    with_claim_ttl(store, thread, Duration::from_secs(30), f).await
}

async fn with_claim_ttl<T, F, Fut>(
    store: &dyn SessionStore,
    thread: &ThreadKey,
    ttl: Duration,
    f: F,
) -> Result<T, CheckpointError>
where
    F: FnOnce(crate::session::Fence) -> Fut,
    Fut: std::future::Future<Output = Result<T, CheckpointError>>,
{
    let holder = format!("checkpoint_{}", uuid::Uuid::now_v7().simple());
    let claim = match store.acquire_claim(thread, &holder, ttl).await? {
        ClaimAttempt::Granted(c) => c,
        ClaimAttempt::Busy(_) => {
            return Err(CheckpointError::new(
                CheckpointErrorKind::Busy,
                format!(
                    "thread {} is held by another process (a run is going on); try again once it is idle",
                    thread.thread
                ),
            ));
        }
    };
    let out = f(claim.fence()).await;
    let _ = store.release_claim(thread, &claim).await;
    out
}

/// Rewinds `thread` to checkpoint `to`: restores the files through
/// `backend` and moves the conversation back, as `options.mode` says.
///
/// # Behavior
/// - Refused while the thread has a running or paused run (`InvalidState`)
///   or another process holds its claim (`Busy`); an unknown thread or
///   checkpoint is `NotFound`.
/// - First finishes a rewind an earlier process left unfinished (its
///   intent), then rewinds to `to` (unless that was the one finished).
/// - Files: every path a checkpoint from `to` on holds is put back as it
///   stood at `to` (a file that did not exist is removed). The files as they
///   stood before are saved first as a checkpoint of their own (`undo_checkpoint`).
/// - Conversation: a rewind entry is appended; the model's view ([`view`])
///   is the conversation at `to`, later entries stay in the store.
/// - A crash at any point leaves the old state or (once the intent is
///   committed) a state the next call finishes: never a mix that stays.
pub async fn rewind(
    store: &dyn SessionStore,
    backend: &dyn Backend,
    ctx: &FileContext,
    thread: &ThreadKey,
    to: &str,
    options: &RewindOptions,
) -> Result<Rewound, CheckpointError> {
    with_claim_ttl(store, thread, options.claim_ttl, |fence| async move {
        let Some(info) = store.thread(thread).await? else {
            return Err(CheckpointError::new(
                CheckpointErrorKind::NotFound,
                format!("there is no thread {}", thread.thread),
            ));
        };
        let all = store.checkpoints(thread).await?;
        let mut finished_earlier = None;
        if let Some(intent) = info.rewind {
            let mode = match (intent.files, intent.conversation) {
                (true, false) => RewindMode::FilesOnly,
                (false, true) => RewindMode::ConversationOnly,
                _ => RewindMode::Both,
            };
            let done = finish(
                store,
                backend,
                ctx,
                thread,
                &fence,
                &all,
                &intent.checkpoint_id,
                mode,
                options,
            )
            .await?;
            if intent.checkpoint_id == to {
                return Ok(Rewound {
                    finished_earlier: Some(intent.checkpoint_id),
                    ..done
                });
            }
            finished_earlier = Some(intent.checkpoint_id);
        }
        let all = store.checkpoints(thread).await?;
        let Some(target) = all.iter().find(|c| c.id == to).cloned() else {
            return Err(CheckpointError::new(
                CheckpointErrorKind::NotFound,
                format!("thread {} has no checkpoint {to}", thread.thread),
            ));
        };
        let mut commit = Commit::new().fenced(fence.clone());
        let mut undo = None;
        if options.mode.files() {
            let images = images_at(store, thread, &all, &target).await?;
            if !images.is_empty() {
                let now = super::current(backend, ctx, &images).await?;
                let id = new_checkpoint_id();
                commit = commit.write(Write::SaveCheckpoint {
                    checkpoint_id: id.clone(),
                    label: Some(format!("before rewind to {to}")),
                    turn: None,
                    metadata: serde_json::Map::from_iter([(
                        "rewind_to".to_owned(),
                        serde_json::Value::from(to),
                    )]),
                    files: now,
                    keep: None,
                });
                undo = Some(id);
            }
        }
        commit = commit.write(Write::BeginRewind {
            checkpoint_id: to.to_owned(),
            history_len: target.history_len,
            files: options.mode.files(),
            conversation: options.mode.conversation(),
        });
        store.commit(thread, commit).await?;
        #[cfg(feature = "failpoints")]
        reach(options, RewindStep::Begun).await;
        let all = store.checkpoints(thread).await?;
        let done = finish(
            store,
            backend,
            ctx,
            thread,
            &fence,
            &all,
            to,
            options.mode,
            options,
        )
        .await?;
        Ok(Rewound {
            undo_checkpoint: undo,
            finished_earlier,
            ..done
        })
    })
    .await
}

/// Restores the files of the begun rewind to `to` and makes its finishing commit.
#[allow(clippy::too_many_arguments)]
async fn finish(
    store: &dyn SessionStore,
    backend: &dyn Backend,
    ctx: &FileContext,
    thread: &ThreadKey,
    fence: &crate::session::Fence,
    all: &[Checkpoint],
    to: &str,
    mode: RewindMode,
    options: &RewindOptions,
) -> Result<Rewound, CheckpointError> {
    #[cfg(not(feature = "failpoints"))]
    let _ = options;
    let mut restored = Vec::new();
    if mode.files()
        && let Some(target) = all.iter().find(|c| c.id == to)
    {
        let images = images_at(store, thread, all, target).await?;
        restore(backend, ctx, &images).await?;
        restored = images.into_iter().map(|i| i.path).collect();
    }
    #[cfg(feature = "failpoints")]
    reach(options, RewindStep::Restored).await;
    store
        .commit(
            thread,
            Commit::new()
                .fenced(fence.clone())
                .write(Write::FinishRewind {
                    checkpoint_id: to.to_owned(),
                }),
        )
        .await?;
    Ok(Rewound {
        checkpoint_id: to.to_owned(),
        restored,
        conversation: mode.conversation(),
        undo_checkpoint: None,
        finished_earlier: None,
    })
}

/// Starts thread `new` from `thread`'s conversation at checkpoint `at`: its
/// history is that conversation ([`view`] of the first entries), copied; the
/// files are not touched (they are the workspace's, shared by both threads).
///
/// # Behavior
/// `NotFound` for an unknown thread or checkpoint; `InvalidState` when `new`
/// already has a history. Returns how many messages the new thread holds.
pub async fn fork(
    store: &dyn SessionStore,
    thread: &ThreadKey,
    at: &str,
    new: &ThreadKey,
) -> Result<usize, CheckpointError> {
    let all = store.checkpoints(thread).await?;
    let Some(target) = all.iter().find(|c| c.id == at) else {
        return Err(CheckpointError::new(
            CheckpointErrorKind::NotFound,
            format!("thread {} has no checkpoint {at}", thread.thread),
        ));
    };
    let entries = store.history(thread, 0).await?;
    let cut = usize::try_from(target.history_len)
        .unwrap_or(usize::MAX)
        .min(entries.len());
    let messages = view(&entries[..cut]);
    with_claim(store, new, |fence| async move {
        if store.thread(new).await?.is_some_and(|t| t.history_len > 0) {
            return Err(CheckpointError::new(
                CheckpointErrorKind::InvalidState,
                format!(
                    "thread {} already has a conversation; fork into a new thread id",
                    new.thread
                ),
            ));
        }
        let count = messages.len();
        let items = messages
            .into_iter()
            .map(|message| HistoryItem::Message { message })
            .collect();
        store
            .commit(
                new,
                Commit::new().fenced(fence).write(Write::AppendHistory {
                    run_id: None,
                    items,
                }),
            )
            .await?;
        Ok(count)
    })
    .await
}
