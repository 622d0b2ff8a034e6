//! `state:FILE.json`: a StateBackend kept in a FileData document on the host, changed under a lock beside it and written back atomically.
//!
//! - A missing file is an empty workspace; the file is created by the first
//!   change (with its parent directories).
//! - A file that is not a FileData document (not UTF-8, not JSON, the wrong
//!   shape, a bad path) is a failure, and the file is never overwritten.
//! - Saving writes the whole document to a temporary file in the same
//!   directory, syncs it, and renames it over the old one: a crash leaves
//!   the old document or the new one, never half of either, and no
//!   temporary file is left behind on success.
//! - **Several processes** (docs/adr/0041): every change runs
//!   load-apply-save under an exclusive `flock` of `FILE.json.lock` (a
//!   hashed `.burrow-HASH.lock` when that name would be too long), a file
//!   beside the document that is never renamed or removed (locking the
//!   document itself would lock an inode the next save renames away). Under
//!   the lock the document is read again, and reloaded when another process
//!   changed it, so no process saves over a change it has not seen. Reads
//!   take no lock: the rename makes every read see a whole document.
//! - **Groups** ([`Saver::begin`] / [`Saver::finish`]): `batch` runs
//!   the lines already waiting on stdin as one group, and a single command
//!   is a group of one. A group reads the document once; its first change
//!   takes the lock, which is held, and the changes saved once, at
//!   [`Saver::finish`], before any result of the group is printed.
//!   Outside a group (`burrow mcp`) each change is locked and saved by itself.
//! - A save that finds the document unchanged since it was loaded or last
//!   saved writes nothing: a mutation that went to another mount of a
//!   composite leaves this file alone (docs/adr/0120). A save that fails
//!   leaves the workspace in memory ahead of the disk; it is read again
//!   from disk before the next operation.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use burrow::types::WriteResult;
use burrow::types::{EditResult, FilesDocument, files_document_to_json, parse_files_document};
use burrow::{
    Backend, Capabilities, Error, FileContext, GlobResult, GrepQuery, GrepResult, LineWindow,
    Listing, Result, StateBackend, VPath,
};

use crate::spec::{Opened, Saver};

/// Opens `path` as a state document.
pub fn open(path: &Path) -> Result<Opened> {
    let file = Arc::new(StateFile::load(path)?);
    Ok(Opened::with_saver(file.clone(), Box::new(file)))
}

/// A state document on the host, served as a backend.
pub struct StateFile {
    path: PathBuf,
    lock_path: PathBuf,
    /// Lock keys stay the same when the document is reloaded.
    scope: String,
    inner: Mutex<Inner>,
    /// One change at a time within this process: the `flock` is per open
    /// file, so two calls of one process would otherwise wait on each other.
    turn: tokio::sync::Mutex<()>,
}

struct Inner {
    backend: StateBackend,
    /// The document's bytes as last read or written (`None`: no file).
    disk: Option<Vec<u8>>,
    /// The workspace as it was when it matched `disk`.
    saved: FilesDocument,
    /// Memory is ahead of the disk (a failed save): read the disk again.
    stale: bool,
    /// A group is open.
    grouping: bool,
    /// The group has not read the document yet.
    group_fresh: bool,
    /// The lock the open group holds (taken by its first change).
    held: Option<fs::File>,
    /// The group changed the workspace since its last save.
    dirty: bool,
}

impl StateFile {
    fn load(path: &Path) -> Result<StateFile> {
        let disk = read_disk(path)?;
        let backend = parse(path, disk.as_deref())?;
        Ok(StateFile {
            path: path.to_owned(),
            lock_path: lock_path(path),
            scope: format!("state-file:{}", path.display()),
            inner: Mutex::new(Inner {
                saved: backend.files(),
                backend,
                disk,
                stale: false,
                grouping: false,
                group_fresh: true,
                held: None,
                dirty: false,
            }),
            turn: tokio::sync::Mutex::new(()),
        })
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        // A poisoned lock only means an earlier call panicked; the fields are still whole.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reads the document again and reloads it when it is not what this
    /// process last saw (or memory is stale).
    fn refresh(&self, inner: &mut Inner) -> Result<()> {
        let disk = read_disk(&self.path)?;
        if !inner.stale && disk == inner.disk {
            return Ok(());
        }
        let backend = parse(&self.path, disk.as_deref())?;
        inner.saved = backend.files();
        inner.backend = backend;
        inner.disk = disk;
        inner.stale = false;
        Ok(())
    }

    /// The workspace a read should see.
    fn for_read(&self) -> Result<StateBackend> {
        let mut inner = self.inner();
        if inner.grouping {
            if inner.group_fresh || inner.stale {
                self.refresh(&mut inner)?;
                inner.group_fresh = false;
            }
        } else {
            self.refresh(&mut inner)?;
        }
        Ok(inner.backend.clone())
    }

    /// Runs the change `apply` under the lock: in a group, the group's lock
    /// (taken now if this is its first change) and a save at the group's
    /// end; alone, a lock and a save of its own, before it returns.
    async fn change<T, F>(&self, apply: F) -> Result<T>
    where
        F: AsyncFnOnce(StateBackend) -> Result<T>,
    {
        let _turn = self.turn.lock().await;
        let (backend, lock) = {
            let mut inner = self.inner();
            if inner.grouping {
                if inner.held.is_none() {
                    let lock = self.lock()?;
                    inner.held = Some(lock);
                    self.refresh(&mut inner)?;
                } else if inner.stale {
                    self.refresh(&mut inner)?;
                }
                inner.group_fresh = false;
                (inner.backend.clone(), None)
            } else {
                let lock = self.lock()?;
                self.refresh(&mut inner)?;
                (inner.backend.clone(), Some(lock))
            }
        };
        let result = apply(backend).await;
        let mut inner = self.inner();
        if result.is_ok() {
            if lock.is_some() {
                self.save(&mut inner)?;
            } else {
                inner.dirty = true;
            }
        }
        drop(lock);
        result
    }

    /// Takes the exclusive lock on the lock file, waiting for another
    /// process to let go of it.
    fn lock(&self) -> Result<fs::File> {
        let fail = |e: io::Error| {
            Error::failure(
                format!("cannot lock state file {}: {e}", self.path.display()),
                e,
            )
        };
        if let Some(dir) = self.lock_path.parent()
            && !dir.as_os_str().is_empty()
        {
            fs::create_dir_all(dir).map_err(fail)?;
        }
        let file = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&self.lock_path)
            .map_err(fail)?;
        file.lock().map_err(fail)?;
        Ok(file)
    }

    /// Writes the workspace back when it differs from what was loaded or
    /// last saved. On failure memory is marked stale.
    fn save(&self, inner: &mut Inner) -> Result<()> {
        let doc = inner.backend.files();
        if doc == inner.saved {
            return Ok(());
        }
        let json = files_document_to_json(&doc);
        if let Err(e) = write_atomically(&self.path, json.as_bytes()) {
            inner.stale = true;
            return Err(Error::failure(
                format!("cannot save state file {}: {e}", self.path.display()),
                e,
            ));
        }
        inner.disk = Some(json.into_bytes());
        inner.saved = doc;
        Ok(())
    }
}

impl Saver for Arc<StateFile> {
    fn begin(&self) {
        let mut inner = self.inner();
        inner.grouping = true;
        inner.group_fresh = true;
        inner.dirty = false;
    }

    fn finish(&self) -> Result<()> {
        let mut inner = self.inner();
        let saved = if inner.dirty {
            self.save(&mut inner)
        } else {
            Ok(())
        };
        inner.dirty = false;
        inner.grouping = false;
        inner.held = None;
        saved
    }
}

#[async_trait]
impl Backend for StateFile {
    /// The StateBackend's, but `make_dir` off: the file keeps files only, so a
    /// made directory would not outlive the command.
    fn capabilities(&self) -> Capabilities {
        self.inner().backend.capabilities().with_make_dir(false)
    }

    fn lock_scope(&self) -> &str {
        &self.scope
    }

    async fn ls(&self, ctx: &FileContext, dir: &VPath, limit: usize) -> Result<Listing> {
        self.for_read()?.ls(ctx, dir, limit).await
    }

    async fn read(
        &self,
        ctx: &FileContext,
        path: &VPath,
        offset: usize,
        limit: usize,
    ) -> Result<LineWindow> {
        self.for_read()?.read(ctx, path, offset, limit).await
    }

    async fn read_bytes(&self, ctx: &FileContext, path: &VPath) -> Result<Vec<u8>> {
        self.for_read()?.read_bytes(ctx, path).await
    }

    async fn write_bytes(
        &self,
        ctx: &FileContext,
        path: &VPath,
        bytes: &[u8],
    ) -> Result<WriteResult> {
        self.change(async |b: StateBackend| b.write_bytes(ctx, path, bytes).await)
            .await
    }

    async fn edit(
        &self,
        ctx: &FileContext,
        path: &VPath,
        old: &str,
        new: &str,
        replace_all: bool,
    ) -> Result<EditResult> {
        self.change(async |b: StateBackend| b.edit(ctx, path, old, new, replace_all).await)
            .await
    }

    async fn delete(&self, ctx: &FileContext, path: &VPath) -> Result<()> {
        self.change(async |b: StateBackend| b.delete(ctx, path).await)
            .await
    }

    async fn delete_tree(&self, ctx: &FileContext, path: &VPath) -> Result<()> {
        self.change(async |b: StateBackend| b.delete_tree(ctx, path).await)
            .await
    }

    /// Refused, as `make_dir` is off: a made directory would be gone when the command ends.
    async fn make_dir(&self, _ctx: &FileContext, path: &VPath, _parents: bool) -> Result<()> {
        Err(Error::refusal(
            burrow::ErrorKind::Unsupported,
            format!(
                "a state file keeps files only, so the directory {path} would be gone when this command ends; write a file beneath it instead (its directories come with it), or use a folder (fs:) or a database (sqlite:) to keep empty directories."
            ),
        ))
    }

    async fn glob(
        &self,
        ctx: &FileContext,
        pattern: &str,
        under: &VPath,
        limit: usize,
    ) -> Result<GlobResult> {
        self.for_read()?.glob(ctx, pattern, under, limit).await
    }

    async fn grep(
        &self,
        ctx: &FileContext,
        query: &GrepQuery,
        under: &VPath,
        limit: usize,
    ) -> Result<GrepResult> {
        self.for_read()?.grep(ctx, query, under, limit).await
    }
}

/// The lock file of the document `path`: `NAME.lock` beside it, or, when
/// that name would pass the usual 255-byte limit, `.burrow-HASH.lock` (a
/// hash of the name that every burrow computes alike).
fn lock_path(path: &Path) -> PathBuf {
    let name = path.file_name().unwrap_or_default();
    if name.len() + ".lock".len() <= 255 {
        let mut lock_name = name.to_owned();
        lock_name.push(".lock");
        return path.with_file_name(lock_name);
    }
    // FNV-1a over the name's bytes: the same in every process and version.
    let hash = name
        .as_encoded_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
        });
    path.with_file_name(format!(".burrow-{hash:016x}.lock"))
}

/// The bytes of the document at `path`; `None` when there is no file.
fn read_disk(path: &Path) -> Result<Option<Vec<u8>>> {
    match fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::failure(
            format!("cannot read state file {}: {e}", path.display()),
            e,
        )),
    }
}

/// The workspace the document `bytes` of `path` holds: empty for no file.
fn parse(path: &Path, bytes: Option<&[u8]>) -> Result<StateBackend> {
    let shown = path.display();
    let Some(bytes) = bytes else {
        return Ok(StateBackend::new());
    };
    let text = std::str::from_utf8(bytes).map_err(|e| {
        Error::failure(
            format!("state file {shown} is not a FileData JSON document (not UTF-8); it was left untouched"),
            e,
        )
    })?;
    let doc = parse_files_document(text).map_err(|e| {
        Error::failure(
            format!(
                "state file {shown} is not a FileData JSON document ({e}); it was left untouched"
            ),
            e,
        )
    })?;
    StateBackend::from_files(doc).map_err(|e| {
        Error::failure(
            format!(
                "state file {shown} cannot be loaded ({}); it was left untouched",
                e.message()
            ),
            e,
        )
    })
}

/// Replaces `path` with `bytes` through a temporary file in the same
/// directory and a rename, keeping the old file's permissions.
fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    fs::create_dir_all(dir)?;
    // A short fixed prefix: the temporary name never outgrows the 255-byte
    // name limit, however long the state file's own name is.
    let mut builder = tempfile::Builder::new();
    builder.prefix(".burrow-").suffix(".tmp");
    // A new state file gets the usual 0666 less umask, not tempfile's 0600.
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let mut tmp = builder.tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    if let Ok(meta) = fs::metadata(path) {
        tmp.as_file().set_permissions(meta.permissions())?;
    }
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    // Make the rename itself durable where the platform allows it.
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}
