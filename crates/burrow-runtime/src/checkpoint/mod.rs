//! Checkpoints (issue 27): the pre-images of the files a batch of tool calls will change, read through the backend before the batch runs, and their restore on rewind (ADR 0294).
//!
//! [`changed_paths`] reads a batch's calls and names the paths its file tools
//! will change (`write_file`, `edit_file`, `delete_path`) and the calls that
//! run `execute`, whose changes inside a sandbox are not captured: they are
//! only recorded in the checkpoint's metadata. [`capture`] reads each path's
//! bytes through the backend (a missing file is recorded as absent, a
//! directory as every file beneath it), so it works on every backend.
//! [`restore`] puts every pre-image back: a file that was there gets its
//! bytes again, a file that was absent is removed. Restoring is idempotent,
//! so a rewind that dies half-way is finished by running it again.
//! [`Retention`] keeps the last checkpoints of a thread (20 by default).
//! `thread` takes them into the session store, builds the model's view after
//! a rewind, and rewinds and forks threads (ADR 0295).

use std::collections::BTreeSet;
use std::time::{SystemTime, UNIX_EPOCH};

use burrow_backend::{Backend, Error, ErrorKind, FileContext, VPath};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::message::ToolCall;

mod thread;
#[cfg(feature = "failpoints")]
pub use thread::RewindStep;
pub use thread::{
    CheckpointError, CheckpointErrorKind, Checkpointer, RewindMode, RewindOptions, Rewound, fork,
    load_view, new_checkpoint_id, rewind, take, view,
};

/// How many checkpoints a thread keeps unless told otherwise.
pub const DEFAULT_KEEP: usize = 20;

/// The most files one directory's pre-image walks before it is refused.
const MAX_TREE_FILES: usize = 10_000;

/// One file as it stood before the batch ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileImage {
    /// The file's path in the backend.
    pub path: String,
    /// Its bytes, or `None` when no file stood there (restoring removes it).
    pub bytes: Option<Vec<u8>>,
}

/// What a batch of tool calls will touch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BatchEffects {
    /// The paths the file tools will change, each once, in order.
    pub paths: Vec<String>,
    /// The names of the calls that change files, in order (metadata `tools`).
    pub tools: Vec<String>,
    /// The ids of the calls that run `execute` (their changes are not captured).
    pub execute_calls: Vec<String>,
}

impl BatchEffects {
    /// True when the batch changes no file and runs no command: no checkpoint is due.
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty() && self.execute_calls.is_empty()
    }

    /// The checkpoint metadata this batch records: the tools that change
    /// files, the calls that ran `execute` and that their changes are not captured.
    pub fn metadata(&self) -> Map<String, Value> {
        let mut meta = Map::new();
        meta.insert("tools".into(), Value::from(self.tools.clone()));
        if !self.execute_calls.is_empty() {
            meta.insert(
                "execute_calls".into(),
                Value::from(self.execute_calls.clone()),
            );
            meta.insert("execute_not_captured".into(), Value::Bool(true));
        }
        meta
    }
}

/// The paths `calls` will change through the file tools, and the calls that run `execute`.
///
/// # Behavior
/// `write_file` and `edit_file` change `file_path`; `delete_path` changes
/// `path` (with `recursive`, everything beneath it, captured by [`capture`]).
/// Calls whose arguments do not name a path, and read-only tools, add nothing.
pub fn changed_paths(calls: &[ToolCall]) -> BatchEffects {
    let mut seen = BTreeSet::new();
    let mut out = BatchEffects::default();
    for call in calls {
        let key = match call.name.as_str() {
            "write_file" | "edit_file" => "file_path",
            "delete_path" => "path",
            "execute" => {
                out.execute_calls.push(call.id.clone());
                out.tools.push(call.name.clone());
                continue;
            }
            _ => continue,
        };
        out.tools.push(call.name.clone());
        let Some(path) = call.arguments.get(key).and_then(Value::as_str) else {
            continue;
        };
        let Ok(path) = VPath::parse(path) else {
            continue;
        };
        if seen.insert(path.as_str().to_owned()) {
            out.paths.push(path.as_str().to_owned());
        }
    }
    out
}

/// The pre-images of `paths`, read through `backend`.
///
/// # Behavior
/// A file: its bytes. Nothing there: an absent image (restoring removes what
/// the batch creates). A directory: one image per file beneath it. A read
/// that fails otherwise (too large, denied) is that error: a checkpoint that
/// could not be taken is not taken silently incomplete.
pub async fn capture(
    backend: &dyn Backend,
    ctx: &FileContext,
    paths: &[String],
) -> Result<Vec<FileImage>, Error> {
    let mut images: Vec<FileImage> = Vec::new();
    let mut seen = BTreeSet::new();
    for path in paths {
        let vpath = VPath::parse(path)?;
        match backend.read_bytes(ctx, &vpath).await {
            Ok(bytes) => {
                if seen.insert(vpath.as_str().to_owned()) {
                    images.push(FileImage {
                        path: vpath.as_str().to_owned(),
                        bytes: Some(bytes),
                    });
                }
            }
            Err(e) if e.kind() == ErrorKind::NotFound => {
                if seen.insert(vpath.as_str().to_owned()) {
                    images.push(FileImage {
                        path: vpath.as_str().to_owned(),
                        bytes: None,
                    });
                }
            }
            Err(e) if e.kind() == ErrorKind::IsADirectory => {
                for file in tree_files(backend, ctx, &vpath).await? {
                    let fpath = VPath::parse(&file)?;
                    let bytes = backend.read_bytes(ctx, &fpath).await?;
                    if seen.insert(file.clone()) {
                        images.push(FileImage {
                            path: file,
                            bytes: Some(bytes),
                        });
                    }
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(images)
}

/// Every file beneath `dir`, walked with `ls`.
async fn tree_files(
    backend: &dyn Backend,
    ctx: &FileContext,
    dir: &VPath,
) -> Result<Vec<String>, Error> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.clone()];
    while let Some(d) = dirs.pop() {
        let listing = backend.ls(ctx, &d, MAX_TREE_FILES + 1).await?;
        if listing.truncated {
            return Err(Error::refusal_at(
                ErrorKind::TooLarge,
                &d,
                "",
                format!(" holds more than {MAX_TREE_FILES} entries to checkpoint."),
            ));
        }
        for entry in listing.entries {
            let path = VPath::parse(&entry.path)?;
            if entry.is_dir {
                dirs.push(path);
            } else {
                files.push(entry.path);
                if files.len() > MAX_TREE_FILES {
                    return Err(Error::refusal_at(
                        ErrorKind::TooLarge,
                        dir,
                        "",
                        format!(" holds more than {MAX_TREE_FILES} files to checkpoint."),
                    ));
                }
            }
        }
    }
    Ok(files)
}

/// Puts every pre-image of `images` back through `backend`.
///
/// # Behavior
/// A present image is written with its exact bytes (parents made as
/// needed); an absent one is deleted, nothing there being no error. Running
/// it again after it has run, in part or whole, leaves the same files: a
/// rewind interrupted here is finished by running it again.
pub async fn restore(
    backend: &dyn Backend,
    ctx: &FileContext,
    images: &[FileImage],
) -> Result<(), Error> {
    for image in images {
        let path = VPath::parse(&image.path)?;
        match &image.bytes {
            Some(bytes) => {
                backend.write_bytes(ctx, &path, bytes).await?;
            }
            None => match backend.delete(ctx, &path).await {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e)
                    if e.kind() == ErrorKind::IsADirectory
                        || e.kind() == ErrorKind::DirectoryNotEmpty =>
                {
                    backend.delete_tree(ctx, &path).await?;
                }
                Err(e) => return Err(e),
            },
        }
    }
    Ok(())
}

/// The images that bring the files `images` name back to how they stand now
/// (the redo of a rewind, read before it restores).
pub async fn current(
    backend: &dyn Backend,
    ctx: &FileContext,
    images: &[FileImage],
) -> Result<Vec<FileImage>, Error> {
    let paths: Vec<String> = images.iter().map(|i| i.path.clone()).collect();
    capture(backend, ctx, &paths).await
}

/// How many checkpoints a thread keeps: the newest `keep`, the older ones dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// How many to keep (at least one).
    pub keep: usize,
}

impl Default for Retention {
    fn default() -> Self {
        Self { keep: DEFAULT_KEEP }
    }
}

impl Retention {
    /// Keeps the newest `keep` (zero is taken as one: the checkpoint just taken stays).
    pub fn new(keep: usize) -> Self {
        Self { keep: keep.max(1) }
    }

    /// The ids of `ids` (oldest first) this retention drops.
    pub fn dropped<'a>(&self, ids: &'a [String]) -> &'a [String] {
        let cut = ids.len().saturating_sub(self.keep);
        &ids[..cut]
    }
}

/// Now, as RFC 3339 in UTC with milliseconds (the seed's `created_at`).
pub fn now_rfc3339() -> String {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0);
    rfc3339(ms)
}

/// `ms` since the epoch as RFC 3339 in UTC with milliseconds.
pub fn rfc3339(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let milli = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{milli:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}
