//! `StateBackend`: the `Backend` contract over the in-memory [`Tree`], behind one `RwLock`.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use async_trait::async_trait;
use burrow_backend::{
    Backend, Capabilities, CompiledGrep, EditResult, Error, FileContext, FileInfo, Glob,
    GlobResult, GrepCollector, GrepQuery, GrepResult, Limits, LineWindow, Listing, LockKey, Result,
    VPath, WriteResult, grep_file, text,
};

use crate::tree::{FileEntry, Kind, Stamp, Tree, child_prefix, join, overwrite};

/// Numbers each backend's lock scope, so two stores never share lock keys.
static NEXT_SCOPE: AtomicU64 = AtomicU64::new(0);

/// The tenant every lock key of a `StateBackend` is built with: the store ignores tenants.
const ONE_WORKSPACE: &str = "*";

/// An in-memory workspace: a map path -> file plus a directory index.
///
/// # Semantics
///
/// - **One workspace.** A `StateBackend` ignores [`FileContext::tenant`]:
///   every caller sees the same files, and its capabilities say `tenants:
///   false`. Give each tenant its own `StateBackend` (a composite resolver
///   can build one per tenant or per run).
/// - **Implicit directories.** A directory exists while a file lies beneath
///   it; it appears with its first file and disappears with its last
///   (`empty_dirs: false`). The one exception is a directory made with
///   `make_dir` (`make_dir: true`): it stays, empty or not, until it is
///   deleted. Made directories are not part of the FileData document
///   ([`StateBackend::files`]): only files are.
/// - **Atomic mutations.** `write` and `edit` run read-modify-write under the
///   write lock, so concurrent edits of one file never lose an update
///   (`conditional_writes: true`). No lock is held across an `.await`.
/// - **Timestamps.** Each file keeps `created_at` (kept on replace) and
///   `modified_at`, RFC 3339 strings from the system clock.
/// - **Cost.** Every operation is O(log n) or O(result); `glob` and `grep`
///   scan only the files beneath `under`. Cloning the backend is cheap and
///   the clone shares the same files.
/// - **Persistence.** None of its own: [`StateBackend::files`] returns the
///   workspace as a FileData document and [`StateBackend::from_files`]
///   restores one.
#[derive(Clone)]
pub struct StateBackend {
    shared: Arc<Shared>,
}

struct Shared {
    tree: RwLock<Tree>,
    limits: Limits,
    scope: String,
}

impl fmt::Debug for StateBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let files = self.read_tree().len();
        f.debug_struct("StateBackend")
            .field("scope", &self.shared.scope)
            .field("files", &files)
            .field("limits", &self.shared.limits)
            .finish()
    }
}

impl Default for StateBackend {
    fn default() -> Self {
        Self::new()
    }
}

impl StateBackend {
    /// An empty workspace with the default [`Limits`].
    pub fn new() -> Self {
        Self::with_limits(Limits::default())
    }

    /// An empty workspace with `limits`.
    pub fn with_limits(limits: Limits) -> Self {
        Self::from_tree(Tree::default(), limits)
    }

    /// A workspace over `tree`.
    pub(crate) fn from_tree(tree: Tree, limits: Limits) -> Self {
        let n = NEXT_SCOPE.fetch_add(1, Ordering::Relaxed);
        StateBackend {
            shared: Arc::new(Shared {
                tree: RwLock::new(tree),
                limits,
                scope: format!("state-{n}"),
            }),
        }
    }

    /// The limits this backend applies.
    pub fn limits(&self) -> Limits {
        self.shared.limits
    }

    /// How many files the workspace holds.
    pub fn file_count(&self) -> usize {
        self.read_tree().len()
    }

    // Poisoning is recovered from, not reported: no code that runs under the
    // lock can panic (map operations, copies and the shared text helpers,
    // each of which either completes or returns a refusal before changing
    // anything), so a poisoned lock still guards a consistent tree.
    pub(crate) fn read_tree(&self) -> RwLockReadGuard<'_, Tree> {
        self.shared
            .tree
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn write_tree(&self) -> RwLockWriteGuard<'_, Tree> {
        self.shared
            .tree
            .write()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Edits the file at `path` as [`Backend::edit`] does, and appends the
    /// journal record of the edit to `record`: a [`Change::Splice`] of the
    /// bytes that changed (see [`crate::journal::encode_splice`]), so the
    /// record costs the size of the change, not of the file. A refused edit
    /// appends nothing and changes nothing.
    ///
    /// [`Change::Splice`]: crate::journal::Change::Splice
    ///
    /// # Errors
    ///
    /// As [`Backend::edit`].
    pub fn edit_journaled(
        &self,
        path: &VPath,
        old: &str,
        new: &str,
        replace_all: bool,
        record: &mut Vec<u8>,
    ) -> Result<EditResult> {
        self.edit_file(path, old, new, replace_all, Some(record))
    }

    fn edit_file(
        &self,
        path: &VPath,
        old: &str,
        new: &str,
        replace_all: bool,
        record: Option<&mut Vec<u8>>,
    ) -> Result<EditResult> {
        text::check_edit_args(old, new)?;
        let now = Stamp::now();
        let max = self.shared.limits.max_file_size;
        let mut tree = self.write_tree();
        let Some(file) = tree.file_mut(path.as_str()) else {
            return Err(tree.not_a_file(path));
        };
        text::check_size(path, file.bytes.len() as u64, max)?;
        let (bytes, count) = text::apply_edit(path, &file.bytes, old, new, replace_all)?;
        text::check_size(path, bytes.len() as u64, max)?;
        if let Some(record) = record {
            crate::journal::encode_splice(
                path.as_str(),
                &file.bytes,
                &bytes,
                |out| now.write_to(out),
                record,
            )?;
        }
        overwrite(&mut file.bytes, &bytes);
        file.modified_at = now;
        Ok(text::edit_result(path, count))
    }

    /// The bytes of the file at `path`, passed to `f` under the read lock.
    fn with_file<T>(&self, path: &VPath, f: impl FnOnce(&FileEntry) -> Result<T>) -> Result<T> {
        let tree = self.read_tree();
        let Some(file) = tree.file(path.as_str()) else {
            return Err(tree.not_a_file(path));
        };
        text::check_size(
            path,
            file.bytes.len() as u64,
            self.shared.limits.max_file_size,
        )?;
        f(file)
    }
}

fn file_info(path: &str, name: &str, file: &FileEntry) -> FileInfo {
    FileInfo {
        name: name.to_owned(),
        path: path.to_owned(),
        is_dir: false,
        size: Some(file.bytes.len() as u64),
        modified_at: file.modified_at.known(),
    }
}

fn name_of(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or_default()
}

#[async_trait]
impl Backend for StateBackend {
    fn capabilities(&self) -> Capabilities {
        Capabilities::minimal()
            .with_modified_at(true)
            .with_make_dir(true)
            .with_conditional_writes(true)
            .with_limits(self.shared.limits)
    }

    /// One key per path, whatever the tenant: every tenant sees the same files.
    fn locks(&self, _ctx: &FileContext, path: &VPath) -> Vec<LockKey> {
        vec![LockKey::for_path(self.lock_scope(), ONE_WORKSPACE, path)]
    }

    fn lock_scope(&self) -> &str {
        &self.shared.scope
    }

    async fn ls(&self, _ctx: &FileContext, dir: &VPath, limit: usize) -> Result<Listing> {
        let limit = self.shared.limits.results(limit);
        let tree = self.read_tree();
        let Some(children) = tree.children(dir.as_str()) else {
            return Err(match tree.kind(dir.as_str()) {
                Kind::File => Error::not_a_directory(dir),
                _ => Error::not_found(dir),
            });
        };
        let mut listing = Listing::default();
        for (name, is_dir) in children {
            if listing.entries.len() == limit {
                listing.truncated = true;
                break;
            }
            let path = join(dir.as_str(), name);
            let info = match (is_dir, tree.file(&path)) {
                (false, Some(file)) => file_info(&path, name, file),
                _ => FileInfo {
                    name: name.to_owned(),
                    path,
                    is_dir: true,
                    size: None,
                    modified_at: None,
                },
            };
            listing.entries.push(info);
        }
        Ok(listing)
    }

    async fn read(
        &self,
        _ctx: &FileContext,
        path: &VPath,
        offset: usize,
        limit: usize,
    ) -> Result<LineWindow> {
        self.with_file(path, |file| {
            text::read_window(path, &file.bytes, offset, limit)
        })
    }

    async fn read_bytes(&self, _ctx: &FileContext, path: &VPath) -> Result<Vec<u8>> {
        self.with_file(path, |file| Ok(file.bytes.clone()))
    }

    async fn write_bytes(
        &self,
        _ctx: &FileContext,
        path: &VPath,
        bytes: &[u8],
    ) -> Result<WriteResult> {
        text::check_size(path, bytes.len() as u64, self.shared.limits.max_file_size)?;
        let now = Stamp::now();
        let mut tree = self.write_tree();
        tree.write(path, bytes, now)?;
        Ok(WriteResult::written(path.as_str()))
    }

    async fn edit(
        &self,
        _ctx: &FileContext,
        path: &VPath,
        old: &str,
        new: &str,
        replace_all: bool,
    ) -> Result<EditResult> {
        self.edit_file(path, old, new, replace_all, None)
    }

    async fn delete(&self, _ctx: &FileContext, path: &VPath) -> Result<()> {
        if path.is_root() {
            return Err(Error::root_cannot_be_deleted());
        }
        let mut tree = self.write_tree();
        if tree.remove_file(path.as_str()).is_some() || tree.remove_empty_dir(path.as_str()) {
            return Ok(());
        }
        Err(match tree.kind(path.as_str()) {
            Kind::Dir => Error::directory_not_empty(path),
            _ => Error::not_found(path),
        })
    }

    async fn make_dir(&self, _ctx: &FileContext, path: &VPath, parents: bool) -> Result<()> {
        self.write_tree().make_dir(path, parents)
    }

    /// One step under the write lock: no reader sees part of the tree gone.
    async fn delete_tree(&self, _ctx: &FileContext, path: &VPath) -> Result<()> {
        if path.is_root() {
            return Err(Error::root_cannot_be_deleted());
        }
        let mut tree = self.write_tree();
        match tree.kind(path.as_str()) {
            Kind::File => {
                tree.remove_file(path.as_str());
                Ok(())
            }
            Kind::Dir => {
                tree.remove_tree(path.as_str());
                Ok(())
            }
            Kind::Missing => Err(Error::not_found(path)),
        }
    }

    async fn glob(
        &self,
        _ctx: &FileContext,
        pattern: &str,
        under: &VPath,
        limit: usize,
    ) -> Result<GlobResult> {
        let glob = Glob::new(pattern)?;
        let limit = self.shared.limits.results(limit);
        let tree = self.read_tree();
        match tree.kind(under.as_str()) {
            Kind::File => return Err(Error::not_a_directory(under)),
            Kind::Missing => return Ok(GlobResult::default()),
            Kind::Dir => {}
        }
        let prefix = child_prefix(under.as_str());
        let mut result = GlobResult::default();
        for (path, relative) in tree.paths_beneath(&prefix) {
            if !glob.is_match(relative) {
                continue;
            }
            if result.files.len() == limit {
                result.truncated = true;
                break;
            }
            if let Some(file) = tree.file(path) {
                result.files.push(file_info(path, name_of(path), file));
            }
        }
        Ok(result)
    }

    async fn grep(
        &self,
        _ctx: &FileContext,
        query: &GrepQuery,
        under: &VPath,
        limit: usize,
    ) -> Result<GrepResult> {
        let grep = CompiledGrep::new(query)?;
        let limit = self.shared.limits.results(limit);
        // Files past the max size (a document loaded with `from_files` may
        // hold some) are skipped, as on every backend: never searched.
        let max = self.shared.limits.max_file_size;
        let searchable = |file: &FileEntry| file.bytes.len() as u64 <= max;
        let tree = self.read_tree();
        match tree.kind(under.as_str()) {
            Kind::Missing => Ok(GrepResult::default()),
            Kind::File => Ok(match tree.file(under.as_str()) {
                Some(file) if searchable(file) => grep_file(&grep, under, &file.bytes, limit),
                _ => GrepResult::default(),
            }),
            Kind::Dir => {
                let mut collector = GrepCollector::new(limit);
                let prefix = child_prefix(under.as_str());
                for (path, relative) in tree.paths_beneath(&prefix) {
                    if collector.is_full() {
                        break;
                    }
                    if grep.includes(relative)
                        && let Some(file) = tree.file(path)
                        && searchable(file)
                    {
                        collector.search(&grep, path, &file.bytes);
                    }
                }
                Ok(collector.finish())
            }
        }
    }
}
