//! `state:FILE.json`: a StateBackend kept in a FileData document on the host and a journal of its changes beside it, changed under a lock.
//!
//! # Key design decision: a journal of effects, folded in now and then
//!
//! Writing the whole document back for every group of changes made each
//! change cost O(files). Instead each change's **effect** (the file as it
//! is after a write, its deletion, or for an edit the bytes it changed,
//! bound to the bytes it changed them in; `burrow::state_journal`) is
//! appended to `FILE.json.journal`, and the document is rewritten only by a
//! **compaction**, so a change costs O(its file) plus an amortised O(1)
//! share of compactions (docs/adr/0200, docs/adr/0201, docs/adr/0353).
//!
//! - **Files beside the document**: `FILE.json.journal` and `FILE.json.lock`
//!   (hashed `.burrow-HASH.journal` / `.burrow-HASH.lock` names when those
//!   would pass 255 bytes). The lock file is never renamed or removed.
//! - A missing document is an empty workspace; nothing is created until
//!   the first change. A document that is not a FileData document, or a
//!   journal with a damaged header or a damaged record before its end, is a
//!   failure naming the file, and nothing is changed or written. A torn last
//!   record (a kill mid-append, never acknowledged) is dropped and
//!   overwritten by the next append.
//! - **Groups** ([`Saver::begin`] / [`Saver::finish`]): `batch` runs the lines
//!   already waiting on stdin as one group, a single command is a group of
//!   one. The group's first change takes the exclusive lock, held to the end
//!   of the group; its records are appended and synced (one `fsync`) at
//!   [`Saver::finish`], before any result of the group is printed. Outside a
//!   group (`burrow mcp`, `burrow run`) each change is locked and appended
//!   by itself.
//! - **Several processes** (docs/adr/0041, docs/adr/0201): under the lock the
//!   process first catches up: the document's stamp (length, mtime, inode)
//!   and the journal's generation tell whether what it holds is still the
//!   base; if so it applies only the records past the offset it has read, if
//!   not (another process compacted, or another program rewrote the
//!   document) it loads both again. Reads take the shared lock while a
//!   journal exists, so a read never sees a document and a journal from two
//!   different compactions.
//! - **Compaction** (under the exclusive lock): the whole workspace is
//!   written to a temporary file beside the document, synced, renamed over
//!   it, then the journal is replaced by an empty one of the next
//!   generation; a journal holding edits is first marked (synced) with the
//!   new document's length and CRC-32. It runs when the journal grows past
//!   the document's size (and past 64 MiB), when the process ends normally
//!   having appended records, and on `burrow state compact FILE.json`. A
//!   kill at any step leaves a document that parses plus a journal that
//!   replays to every acknowledged change once (puts and deletions replay
//!   over their own result harmlessly; a load over the marked document
//!   starts after the mark, so no edit applies twice).
//! - **A reader of FILE.json alone** (pydantic-ai-backend, pydantic-deep)
//!   sees the state as of the last compaction; the document stays byte for
//!   byte the FileData document those libraries write.
//! - A save that fails leaves the workspace in memory ahead of the disk; it
//!   is read again from disk before the next operation. A compaction that
//!   fails after the records were synced is a note on stderr: the changes
//!   are durable in the journal.

mod disk;

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use burrow::state_journal::{self, HEADER_LEN};
use burrow::types::WriteResult;
use burrow::types::{EditResult, FilesDocument, parse_files_document};
use burrow::{
    Backend, Capabilities, Error, FileContext, GlobResult, GrepQuery, GrepResult, Limits,
    LineWindow, Listing, Result, StateBackend, VPath,
};

use crate::spec::{Opened, Saver};

/// A journal is compacted once it passes the document's size and this: a
/// process that starts replays at most about this much beyond the document,
/// and a batch that builds a workspace from nothing compacts only at its
/// end until it passes it.
const COMPACT_FLOOR: u64 = 64 << 20;

/// Opens `path` as a state document.
pub fn open(path: &Path) -> Result<Opened> {
    let file = Arc::new(StateFile::load(path)?);
    Ok(Opened::with_state_file(file))
}

/// `burrow state compact FILE`: folds the journal into the document;
/// returns how many records were folded (0: nothing to do, nothing written).
pub fn compact(path: &Path) -> Result<u64> {
    let file = StateFile::load(path)?;
    let mut inner = file.inner();
    if inner.seen.journal.is_none_or(|j| j.records == 0) {
        return Ok(0);
    }
    let lock = file.lock()?;
    file.refresh(&mut inner)?;
    let records = inner.seen.journal.map_or(0, |j| j.records);
    if records > 0 {
        file.compact_now(&mut inner)?;
    }
    drop(lock);
    Ok(records)
}

/// A state document on the host, served as a backend.
pub struct StateFile {
    /// The document's path as the user gave it: messages name it so.
    path: PathBuf,
    lock_path: PathBuf,
    journal_path: PathBuf,
    /// Lock keys stay the same when the document is reloaded.
    scope: String,
    inner: Mutex<Inner>,
    /// One change at a time within this process: the `flock` is per open
    /// file, so two calls of one process would otherwise wait on each other.
    turn: tokio::sync::Mutex<()>,
}

struct Inner {
    backend: StateBackend,
    /// What of the disk `backend` reflects.
    seen: Seen,
    /// Memory is ahead of the disk (a failed save): load the disk again.
    stale: bool,
    /// A group is open.
    grouping: bool,
    /// The group has not read the document yet.
    group_fresh: bool,
    /// The exclusive lock the open group (taken by its first change) or the
    /// running lone change holds.
    held: Option<std::fs::File>,
    /// The records of changes made under `held`, not in the journal yet.
    pending: Vec<u8>,
    pending_records: u64,
    /// Some of the pending records are splices.
    pending_splices: bool,
    /// This process appended records since it last compacted.
    added: bool,
}

/// The version of the files on disk the workspace in memory reflects.
#[derive(Debug, Clone, Copy, Default)]
struct Seen {
    /// The document's stamp (`None`: there was no document).
    doc: Option<disk::Stamp>,
    /// The document's length in bytes.
    doc_len: u64,
    /// The journal read (`None`: there was no journal).
    journal: Option<Position>,
}

/// How far into which journal the workspace has read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Position {
    generation: u64,
    /// Bytes of whole records after the header: where the next append goes.
    end: u64,
    /// How many records those bytes hold.
    records: u64,
    /// Some of them are splices (edits), which replay only over the bytes
    /// they were made on: a compaction marks the journal before its rename.
    splices: bool,
}

impl Position {
    fn file_len(&self) -> u64 {
        HEADER_LEN as u64 + self.end
    }
}

/// What a change may touch, to be journaled once it succeeds.
enum Touched<'a> {
    /// The file at this path.
    Path(&'a VPath),
    /// The file at this path or every file beneath it.
    Tree(&'a VPath),
    /// The change appends its own record (an edit's splice).
    Recorded,
}

impl StateFile {
    fn load(path: &Path) -> Result<StateFile> {
        let file = StateFile {
            path: path.to_owned(),
            lock_path: disk::beside(path, ".lock"),
            journal_path: disk::beside(path, ".journal"),
            scope: format!("state-file:{}", path.display()),
            inner: Mutex::new(Inner {
                backend: StateBackend::new(),
                seen: Seen::default(),
                stale: true,
                grouping: false,
                group_fresh: true,
                held: None,
                pending: Vec::new(),
                pending_records: 0,
                pending_splices: false,
                added: false,
            }),
            turn: tokio::sync::Mutex::new(()),
        };
        {
            let mut inner = file.inner();
            let lock = file.read_lock()?;
            file.reload(&mut inner)?;
            drop(lock);
        }
        Ok(file)
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        // A poisoned lock only means an earlier call panicked; the fields are still whole.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn shown(&self) -> std::path::Display<'_> {
        self.path.display()
    }

    fn io_failure(&self, doing: &str, e: io::Error) -> Error {
        Error::failure(
            format!("cannot {doing} state file {}: {e}", self.shown()),
            e,
        )
    }

    /// Loads the document and its whole journal again.
    fn reload(&self, inner: &mut Inner) -> Result<()> {
        // The journal first: were a compaction to run between the two reads
        // (only without a lock: no journal existed a moment ago), the newer
        // document holds every record read, and replaying them changes nothing.
        let journal = std::fs::read(&self.journal_path)
            .map(Some)
            .or_else(|e| match e.kind() {
                io::ErrorKind::NotFound => Ok(None),
                _ => Err(e),
            })
            .map_err(|e| self.io_failure("read the journal of", e))?;
        let stamped = disk::read_stamped(&self.path).map_err(|e| self.io_failure("read", e))?;
        let doc = match &stamped {
            Some((bytes, _)) => self.parse_document(bytes)?,
            None => FilesDocument::new(),
        };
        let (position, changes) = match journal {
            None => (None, Vec::new()),
            Some(bytes) => {
                let generation =
                    state_journal::read_header(&bytes).map_err(|e| self.journal_damaged(&e))?;
                let records = state_journal::read_records(&bytes[HEADER_LEN..])
                    .map_err(|e| self.journal_damaged(&e))?;
                let position = Position {
                    generation,
                    end: records.len as u64,
                    records: records.changes.len() as u64,
                    splices: records.changes.iter().any(is_splice),
                };
                let mut changes = records.changes;
                // Records a compaction already folded into this very
                // document (stopped between its rename and its cut) are skipped.
                let doc_bytes = stamped.as_ref().map_or(&[][..], |(bytes, _)| bytes);
                changes.drain(..state_journal::replay_start(&changes, doc_bytes));
                (Some(position), changes)
            }
        };
        let backend =
            StateBackend::from_files_replayed(doc, changes, Limits::default()).map_err(|e| {
                Error::failure(
                    format!(
                        "state file {} cannot be loaded ({}); it was left untouched",
                        self.shown(),
                        e.message()
                    ),
                    e,
                )
            })?;
        inner.backend = backend;
        inner.seen = Seen {
            doc: stamped.as_ref().map(|(_, stamp)| *stamp),
            doc_len: stamped.map_or(0, |(bytes, _)| bytes.len() as u64),
            journal: position,
        };
        inner.stale = false;
        Ok(())
    }

    fn parse_document(&self, bytes: &[u8]) -> Result<FilesDocument> {
        let shown = self.shown();
        let text = std::str::from_utf8(bytes).map_err(|e| {
            Error::failure(
                format!("state file {shown} is not a FileData JSON document (not UTF-8); it was left untouched"),
                e,
            )
        })?;
        parse_files_document(text).map_err(|e| {
            Error::failure(
                format!(
                    "state file {shown} is not a FileData JSON document ({e}); it was left untouched"
                ),
                e,
            )
        })
    }

    fn journal_damaged(&self, e: &Error) -> Error {
        Error::failure_msg(format!(
            "state file {} cannot be loaded: {} ({}); nothing was changed",
            self.shown(),
            e.message(),
            self.journal_path.display()
        ))
    }

    /// Brings the workspace up to what is on disk: the journal's records
    /// past what was read, or everything again when the document or the
    /// journal is not the version read. Runs under a lock (or with no
    /// journal on disk, where the rename makes each document whole).
    fn refresh(&self, inner: &mut Inner) -> Result<()> {
        if inner.stale {
            return self.reload(inner);
        }
        let stamp = disk::stamp(&self.path).map_err(|e| self.io_failure("read", e))?;
        if stamp != inner.seen.doc {
            return self.reload(inner);
        }
        let journal = disk::open_journal(&self.journal_path)
            .map_err(|e| self.io_failure("read the journal of", e))?;
        let (mut file, position) = match (journal, inner.seen.journal) {
            (None, None) => return Ok(()),
            (Some(file), Some(position)) => (file, position),
            _ => return self.reload(inner),
        };
        let (head, tail) = disk::read_head_and_tail(&mut file, position.file_len())
            .map_err(|e| self.io_failure("read the journal of", e))?;
        let generation = state_journal::read_header(&head).map_err(|e| self.journal_damaged(&e))?;
        let len = file
            .metadata()
            .map_err(|e| self.io_failure("read the journal of", e))?
            .len();
        if generation != position.generation || len < position.file_len() {
            return self.reload(inner);
        }
        if tail.is_empty() {
            return Ok(());
        }
        let records = state_journal::read_records(&tail).map_err(|e| self.journal_damaged(&e))?;
        let count = records.changes.len() as u64;
        let splices = records.changes.iter().any(is_splice);
        for change in records.changes {
            if let Err(e) = inner.backend.apply(change) {
                inner.stale = true;
                return Err(self.journal_damaged(&e));
            }
        }
        inner.seen.journal = Some(Position {
            generation,
            end: position.end + records.len as u64,
            records: position.records + count,
            splices: position.splices || splices,
        });
        Ok(())
    }

    /// The shared lock, when a journal exists (without one, the document
    /// alone is read, whole by the rename that put it there).
    fn read_lock(&self) -> Result<Option<std::fs::File>> {
        if !self.journal_path.exists() {
            return Ok(None);
        }
        disk::lock_shared(&self.lock_path).map_err(|e| self.io_failure("lock", e))
    }

    /// Takes the exclusive lock, waiting for another process to let go of it.
    fn lock(&self) -> Result<std::fs::File> {
        disk::lock_exclusive(&self.lock_path).map_err(|e| self.io_failure("lock", e))
    }

    /// The workspace a read should see.
    fn for_read(&self) -> Result<StateBackend> {
        let mut inner = self.inner();
        let current = if inner.held.is_some() {
            // This process holds the lock: memory is what the disk will be.
            !inner.stale
        } else {
            inner.grouping && !inner.group_fresh && !inner.stale
        };
        if !current {
            // Never the shared lock while this process holds the exclusive
            // one: `flock` would make the two open files wait on each other.
            let lock = match inner.held {
                Some(_) => None,
                None => self.read_lock()?,
            };
            self.refresh(&mut inner)?;
            drop(lock);
        }
        inner.group_fresh = false;
        Ok(inner.backend.clone())
    }

    /// Runs the change `apply` under the exclusive lock: in a group, the
    /// group's lock (taken now if this is its first change) and an append at
    /// the group's end; alone, a lock and an append of its own before it
    /// returns. What it touched is journaled once it succeeds.
    async fn change<T, F>(&self, touched: Touched<'_>, apply: F) -> Result<T>
    where
        F: AsyncFnOnce(StateBackend, &mut Vec<u8>) -> Result<T>,
    {
        let _turn = self.turn.lock().await;
        let (backend, paths) = {
            let mut inner = self.inner();
            if inner.held.is_none() {
                let lock = self.lock()?;
                inner.held = Some(lock);
                if let Err(e) = self.refresh(&mut inner) {
                    if !inner.grouping {
                        inner.held = None;
                    }
                    return Err(e);
                }
            } else if inner.stale {
                self.refresh(&mut inner)?;
            }
            inner.group_fresh = false;
            let paths = match touched {
                Touched::Path(path) => vec![path.clone()],
                Touched::Tree(path) => inner
                    .backend
                    .file_paths_at_or_beneath(path)
                    .iter()
                    .filter_map(|p| VPath::parse(p).ok())
                    .collect(),
                Touched::Recorded => Vec::new(),
            };
            (inner.backend.clone(), paths)
        };
        // The change may append its own record to the pending ones (only
        // this call changes anything now: `turn` is held).
        let mut records = std::mem::take(&mut self.inner().pending);
        let mark = records.len();
        let result = apply(backend, &mut records).await;
        let mut inner = self.inner();
        if result.is_err() {
            records.truncate(mark);
        }
        if records.len() > mark {
            inner.pending_records += 1;
            inner.pending_splices = true;
        }
        inner.pending = records;
        let mut outcome = Ok(());
        if result.is_ok() {
            for path in &paths {
                let inner = &mut *inner;
                if let Err(e) = inner.backend.encode_change_at(path, &mut inner.pending) {
                    inner.stale = true;
                    outcome = Err(e);
                    break;
                }
                inner.pending_records += 1;
            }
        }
        if !inner.grouping {
            if outcome.is_ok() {
                outcome = self.commit(&mut inner);
            }
            inner.pending.clear();
            inner.pending_records = 0;
            inner.pending_splices = false;
            inner.held = None;
        }
        outcome?;
        result
    }

    /// Appends the pending records and syncs the journal (under the
    /// exclusive lock), then compacts when the journal has outgrown the
    /// document. An error means the records are not durable.
    fn commit(&self, inner: &mut Inner) -> Result<()> {
        if inner.pending.is_empty() {
            return Ok(());
        }
        // Cleared, not taken, once appended: the buffer's pages serve every group.
        let records = &inner.pending;
        let count = std::mem::take(&mut inner.pending_records);
        let splices = std::mem::take(&mut inner.pending_splices);
        let appended = match inner.seen.journal {
            Some(position) => {
                disk::append(&self.journal_path, position.file_len(), records).map(|()| Position {
                    end: position.end + records.len() as u64,
                    records: position.records + count,
                    splices: position.splices || splices,
                    ..position
                })
            }
            None => disk::replace_journal(&self.journal_path, &self.path, 1, records).map(|_| {
                Position {
                    generation: 1,
                    end: records.len() as u64,
                    records: count,
                    splices,
                }
            }),
        };
        inner.pending.clear();
        match appended {
            Ok(position) => {
                inner.seen.journal = Some(position);
                inner.added = true;
            }
            Err(e) => {
                inner.stale = true;
                return Err(self.io_failure("save", e));
            }
        }
        disk::failpoint("after_append");
        let journal_len = inner.seen.journal.map_or(0, |j| j.file_len());
        if journal_len > inner.seen.doc_len.max(COMPACT_FLOOR) {
            self.compact_or_note(inner);
        }
        Ok(())
    }

    /// Compacts; a failure is a note on stderr, since every record is
    /// already durable in the journal.
    fn compact_or_note(&self, inner: &mut Inner) {
        if let Err(e) = self.compact_now(inner) {
            let _ = writeln!(
                io::stderr(),
                "burrow: note: {} (the changes are kept in its journal)",
                e.message()
            );
        }
    }

    /// Folds the journal into the document (under the exclusive lock, with
    /// the workspace refreshed): the document replaced through a synced
    /// temporary file, then the journal replaced by an empty one of the
    /// next generation.
    fn compact_now(&self, inner: &mut Inner) -> Result<()> {
        let fail = |inner: &mut Inner, e: io::Error| {
            inner.stale = true;
            self.io_failure("compact", e)
        };
        // Written in pieces straight from the files: the document is never
        // held whole in memory (at 10,000 files of the bench, 27 MB and
        // some 6,600 page faults fewer).
        let backend = inner.backend.clone();
        // A journal holding splices is marked with the new document's
        // length and CRC-32 (synced) before the rename: were the process
        // killed between the rename and the cut, the next load skips the
        // records the document already holds (a splice must not apply twice).
        let mark = inner
            .seen
            .journal
            .filter(|j| j.splices)
            .map(|j| j.file_len());
        let written = disk::replace_document(
            &self.path,
            |file| {
                let mut out = state_journal::Checksummed::new(file);
                backend.write_files_json(&mut out)?;
                Ok(out.finish())
            },
            |&(len, crc)| {
                let Some(at) = mark else {
                    return Ok(());
                };
                let mut record = Vec::new();
                state_journal::encode(&state_journal::Change::Folded { len, crc }, &mut record)
                    .map_err(|e| io::Error::other(e.message().to_owned()))?;
                disk::append(&self.journal_path, at, &record)?;
                disk::failpoint("after_fold_mark");
                Ok(())
            },
        );
        let doc_len = match written {
            Ok((len, _)) => len,
            Err(e) => return Err(fail(inner, e)),
        };
        let generation = inner.seen.journal.map_or(0, |j| j.generation) + 1;
        if let Err(e) = disk::replace_journal(&self.journal_path, &self.path, generation, &[]) {
            return Err(fail(inner, e));
        }
        disk::failpoint("after_journal_cut");
        let stamp = match disk::stamp(&self.path) {
            Ok(stamp) => stamp,
            Err(e) => return Err(fail(inner, e)),
        };
        inner.seen = Seen {
            doc: stamp,
            doc_len,
            journal: Some(Position {
                generation,
                end: 0,
                records: 0,
                splices: false,
            }),
        };
        inner.added = false;
        Ok(())
    }

    /// At the end of the process: compacts when this process appended
    /// records since it last compacted (a failure is a note on stderr).
    pub fn close(&self) {
        let mut inner = self.inner();
        if !inner.added || inner.held.is_some() {
            return;
        }
        let lock = match self.lock() {
            Ok(lock) => lock,
            Err(e) => {
                let _ = writeln!(io::stderr(), "burrow: note: {}", e.message());
                return;
            }
        };
        match self.refresh(&mut inner) {
            Ok(()) if inner.seen.journal.is_some_and(|j| j.records > 0) => {
                self.compact_or_note(&mut inner);
            }
            Ok(()) => {}
            Err(e) => {
                let _ = writeln!(io::stderr(), "burrow: note: {}", e.message());
            }
        }
        drop(lock);
    }
}

impl Saver for Arc<StateFile> {
    fn begin(&self) {
        let mut inner = self.inner();
        inner.grouping = true;
        inner.group_fresh = true;
        inner.pending.clear();
        inner.pending_records = 0;
        inner.pending_splices = false;
    }

    fn finish(&self) -> Result<()> {
        let mut inner = self.inner();
        let saved = if inner.held.is_some() {
            self.commit(&mut inner)
        } else {
            Ok(())
        };
        inner.pending.clear();
        inner.pending_records = 0;
        inner.pending_splices = false;
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
        self.change(Touched::Path(path), async |b: StateBackend, _| {
            b.write_bytes(ctx, path, bytes).await
        })
        .await
    }

    async fn edit(
        &self,
        _ctx: &FileContext,
        path: &VPath,
        old: &str,
        new: &str,
        replace_all: bool,
    ) -> Result<EditResult> {
        self.change(
            Touched::Recorded,
            async |b: StateBackend, record: &mut Vec<u8>| {
                b.edit_journaled(path, old, new, replace_all, record)
            },
        )
        .await
    }

    async fn delete(&self, ctx: &FileContext, path: &VPath) -> Result<()> {
        self.change(Touched::Path(path), async |b: StateBackend, _| {
            b.delete(ctx, path).await
        })
        .await
    }

    async fn delete_tree(&self, ctx: &FileContext, path: &VPath) -> Result<()> {
        self.change(Touched::Tree(path), async |b: StateBackend, _| {
            b.delete_tree(ctx, path).await
        })
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

fn is_splice(change: &state_journal::Change) -> bool {
    matches!(change, state_journal::Change::Splice { .. })
}
