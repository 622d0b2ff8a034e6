//! `FsBackend`: the `Backend` contract over a local folder, each operation on a blocking thread.

use std::collections::HashMap;
use std::fmt;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::Path;
use std::sync::{Arc, LazyLock, Mutex, PoisonError, Weak};

use async_trait::async_trait;
use burrow_backend::{
    Backend, Capabilities, EditResult, Error, FileContext, GlobResult, GrepQuery, GrepResult,
    LineWindow, Listing, LockKey, LockTable, Result, VPath, WriteResult, text,
};
use cap_std::ambient_authority;
use cap_std::fs::Dir;

use crate::options::FsOptions;
use crate::root::Root;

/// The tenant every lock key is built with: one folder is one workspace.
const ONE_WORKSPACE: &str = "*";

/// The in-process lock of every path being changed, keyed by the root folder
/// and the path: shared by every `FsBackend` of the process, so two backends
/// opened on one folder serialise too. Other processes are covered by the
/// advisory lock on the file's directory taken inside the blocking work
/// (`xlock`, ADR 0064).
static PATH_LOCKS: LazyLock<LockTable<(Arc<str>, VPath)>> = LazyLock::new(LockTable::new);

/// The tree gate of every root folder open in the process (ADR 0223): every
/// mutation holds its root's gate shared, `delete_tree` holds it exclusive,
/// so no write, edit, delete or `make_dir` runs while a tree is being
/// removed, and the removal never meets a file made mid-way. An entry goes
/// once no backend of its root is left (the map holds weak references).
static TREE_GATES: LazyLock<Mutex<HashMap<Arc<str>, Weak<TreeGate>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// One root's tree gate.
type TreeGate = tokio::sync::RwLock<()>;

/// The tree gate of the root `root_id`, shared by every backend opened on it.
fn tree_gate(root_id: &Arc<str>) -> Arc<TreeGate> {
    let mut gates = TREE_GATES.lock().unwrap_or_else(PoisonError::into_inner);
    gates.retain(|_, gate| gate.strong_count() > 0);
    if let Some(gate) = gates.get(root_id).and_then(Weak::upgrade) {
        return gate;
    }
    let gate = Arc::new(TreeGate::new(()));
    gates.insert(Arc::clone(root_id), Arc::downgrade(&gate));
    gate
}

/// A local folder as a burrow backend.
///
/// # Confinement
///
/// Every access goes through a `cap_std::fs::Dir` handle of the root (see the
/// crate docs): paths are resolved beneath it by the kernel or by cap-std,
/// never as host paths. A symbolic link that leads outside the root (absolute,
/// or climbing with `..`, or through a symlinked parent) is refused with
/// PermissionDenied and never followed; a link that stays inside is followed
/// by reads, and a write through it replaces its target. A link that leads
/// nowhere is refused by writes and edits. `delete` removes a link itself,
/// never its target. No message names a host path.
///
/// # Special files
///
/// A FIFO, socket or device is never opened: reads, edits and writes refuse it
/// with PermissionDenied (checked before the open, and again on the handle,
/// which is opened non-blocking, in case one is swapped in). `ls`, `glob` and
/// `grep` do not show such entries, nor links that lead out or nowhere, nor
/// names that are not UTF-8. `delete` unlinks a special file without opening it.
///
/// # Atomic writes
///
/// `write` and `edit` write the new content to a temporary file in the same
/// directory, named `.burrow-tmp-` plus 16 hex digits (short enough for any
/// target name), and rename it over the target: a reader or a crash sees the
/// old or the new content, never half of it. The replaced file's permissions
/// are kept (its owner is not: the new file belongs to this process's user).
/// With [`FsOptions::fsync`] (default off) the file and its directory are
/// flushed to the disk before the call returns; without it a power loss
/// shortly after a write may lose the write, but never leaves half of it.
/// A crash may leave a temporary file behind.
///
/// # No reserved names
///
/// Every legal name is the user's, including names that start with
/// [`crate::TEMP_PREFIX`] (".burrow-tmp-"). The temporary files this process
/// is writing right now are hidden from its `ls`, `glob` and `grep`; another
/// process's, for the moment it writes, and those a crash left behind, are
/// ordinary files.
///
/// # Concurrency
///
/// Mutations of one path are serialised within the process (by every
/// `FsBackend` on the same folder) with a per-path async mutex, and across
/// processes with an exclusive advisory lock (`flock`) on the directory that
/// holds the file, taken inside the blocking work for the whole
/// read-modify-write (ADR 0064). Both are held until the blocking work ends,
/// even when the caller's future is dropped, so concurrent edits, from tasks
/// or from processes, never lose an update (`conditional_writes: true`). The
/// lock creates no file. A program that writes the folder without burrow
/// does not take the lock and can still race an edit.
///
/// # One folder, one workspace
///
/// The tenant of the [`FileContext`] is ignored (`tenants: false`): give each
/// tenant its own folder. Effect keys are not recorded (`effect_keys: false`):
/// a plain folder has nowhere durable to keep them without showing extra
/// files to the user; the runtime guards those calls itself.
///
/// # Limits and cost
///
/// Files larger than [`FsOptions::max_file_size`] (default 10 MiB) are
/// refused by reads and writes (TooLarge; the size is checked before reading
/// and a read never loads more than the limit plus one buffer) and skipped by
/// grep. `glob` and `grep` walk every directory beneath `under`; grep reads
/// and searches files on up to [`FsOptions::threads`] threads of tokio's
/// blocking pool. `ls`, `glob` and `grep` hold at most `limit + 1` entries or
/// matches while they work, however large the folder. With
/// [`FsOptions::respect_ignore_files`], `.gitignore` rules and hidden-file
/// rules apply to glob and grep. All file I/O runs on tokio's blocking pool.
#[derive(Clone)]
pub struct FsBackend {
    root: Arc<Root>,
    /// Identifies the root folder in the process-wide lock registry.
    root_id: Arc<str>,
    /// This backend's lock scope (a hash of the folder, never its host path).
    scope: String,
    /// The root's tree gate: shared by mutations, exclusive for `delete_tree`.
    gate: Arc<TreeGate>,
}

impl fmt::Debug for FsBackend {
    // The host path stays out of Debug output too: it may end up in logs a model reads.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FsBackend")
            .field("scope", &self.scope)
            .field("options", &self.root.options)
            .finish_non_exhaustive()
    }
}

impl FsBackend {
    /// Opens the existing folder `root` with the default options.
    pub fn open(root: impl AsRef<Path>) -> Result<FsBackend> {
        Self::open_with(root, FsOptions::default())
    }

    /// Opens the existing folder `root` with `options`.
    pub fn open_with(root: impl AsRef<Path>, options: FsOptions) -> Result<FsBackend> {
        let root = root.as_ref();
        let dir = Dir::open_ambient_dir(root, ambient_authority())
            .map_err(|e| Error::failure("could not open the workspace folder", e))?;
        let canonical = std::fs::canonicalize(root)
            .map_err(|e| Error::failure("could not resolve the workspace folder", e))?;
        let root_id: Arc<str> = Arc::from(canonical.to_string_lossy().as_ref());
        let mut hasher = DefaultHasher::new();
        root_id.hash(&mut hasher);
        Ok(FsBackend {
            root: Arc::new(Root { dir, options }),
            gate: tree_gate(&root_id),
            root_id,
            scope: format!("fs-{:016x}", hasher.finish()),
        })
    }

    /// Creates the folder `root` (and its parents) when missing, then opens it.
    pub fn open_or_create(root: impl AsRef<Path>, options: FsOptions) -> Result<FsBackend> {
        std::fs::create_dir_all(root.as_ref())
            .map_err(|e| Error::failure("could not create the workspace folder", e))?;
        Self::open_with(root, options)
    }

    /// The key of this backend's root in the lock registry (for tests).
    #[cfg(test)]
    pub(crate) fn root_id(&self) -> &str {
        &self.root_id
    }

    /// The options this backend was opened with.
    pub fn options(&self) -> &FsOptions {
        &self.root.options
    }

    /// Runs `f` on the root on tokio's blocking pool.
    async fn blocking<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Root) -> Result<T> + Send + 'static,
    {
        let root = Arc::clone(&self.root);
        tokio::task::spawn_blocking(move || f(&root))
            .await
            .map_err(|e| Error::failure("a file operation did not complete", e))?
    }

    /// Runs the mutation `f` on the blocking pool while holding `path`'s
    /// in-process lock, which is moved into the blocking work: dropping the
    /// returned future (a cancelled call) does not release the lock while the
    /// write goes on, so the next mutation of the path waits for it to end.
    ///
    /// It holds the root's tree gate too, shared, or exclusive for a
    /// `delete_tree` (`whole_tree`); the gate is taken before the path's
    /// lock, by every mutation, so the two never wait on each other in a cycle.
    async fn mutate<T, F>(&self, path: &VPath, whole_tree: bool, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Root) -> Result<T> + Send + 'static,
    {
        #[cfg(test)]
        let counted = crate::hook::count_lock_user(&self.root_id, path);
        let gate = Arc::clone(&self.gate);
        let (shared, exclusive) = if whole_tree {
            (None, Some(gate.write_owned().await))
        } else {
            (Some(gate.read_owned().await), None)
        };
        let guard = PATH_LOCKS
            .lock((Arc::clone(&self.root_id), path.clone()))
            .await;
        self.blocking(move |root| {
            let result = f(root);
            drop(guard);
            drop((shared, exclusive));
            #[cfg(test)]
            drop(counted);
            result
        })
        .await
    }
}

#[async_trait]
impl Backend for FsBackend {
    fn capabilities(&self) -> Capabilities {
        Capabilities::minimal()
            .with_empty_dirs(true)
            .with_make_dir(true)
            .with_modified_at(true)
            .with_symlinks(true)
            .with_conditional_writes(true)
            .with_limits(self.root.options.limits())
    }

    /// One key per path, whatever the tenant: every tenant sees the same folder.
    fn locks(&self, _ctx: &FileContext, path: &VPath) -> Vec<LockKey> {
        vec![LockKey::for_path(self.lock_scope(), ONE_WORKSPACE, path)]
    }

    fn lock_scope(&self) -> &str {
        &self.scope
    }

    async fn ls(&self, _ctx: &FileContext, dir: &VPath, limit: usize) -> Result<Listing> {
        let limit = self.root.options.limits().results(limit);
        let dir = dir.clone();
        self.blocking(move |root| root.ls(&dir, limit)).await
    }

    async fn read(
        &self,
        _ctx: &FileContext,
        path: &VPath,
        offset: usize,
        limit: usize,
    ) -> Result<LineWindow> {
        let path = path.clone();
        self.blocking(move |root| {
            let bytes = root.read_all(&path)?;
            text::read_window(&path, &bytes, offset, limit)
        })
        .await
    }

    async fn read_bytes(&self, _ctx: &FileContext, path: &VPath) -> Result<Vec<u8>> {
        let path = path.clone();
        self.blocking(move |root| root.read_all(&path)).await
    }

    async fn write_bytes(
        &self,
        _ctx: &FileContext,
        path: &VPath,
        bytes: &[u8],
    ) -> Result<WriteResult> {
        text::check_size(path, bytes.len() as u64, self.root.options.max_file_size)?;
        let (vpath, bytes) = (path.clone(), bytes.to_vec());
        self.mutate(path, false, move |root| {
            let path = vpath;
            root.write(&path, &bytes)?;
            Ok(WriteResult::written(path.as_str()))
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
        text::check_edit_args(old, new)?;
        let (vpath, old, new) = (path.clone(), old.to_owned(), new.to_owned());
        self.mutate(path, false, move |root| {
            let path = vpath;
            let count = root.edit(&path, &old, &new, replace_all)?;
            Ok(text::edit_result(&path, count))
        })
        .await
    }

    async fn delete(&self, _ctx: &FileContext, path: &VPath) -> Result<()> {
        let vpath = path.clone();
        self.mutate(path, false, move |root| root.delete(&vpath))
            .await
    }

    async fn make_dir(&self, _ctx: &FileContext, path: &VPath, parents: bool) -> Result<()> {
        let vpath = path.clone();
        self.mutate(path, false, move |root| root.make_dir(&vpath, parents))
            .await
    }

    /// The folder's own recursive removal, in the locked parent directory,
    /// with the root's tree gate held exclusive: no change of this process
    /// lands beneath the tree while it goes (ADR 0223).
    async fn delete_tree(&self, _ctx: &FileContext, path: &VPath) -> Result<()> {
        let vpath = path.clone();
        self.mutate(path, true, move |root| root.delete_tree(&vpath))
            .await
    }

    async fn glob(
        &self,
        _ctx: &FileContext,
        pattern: &str,
        under: &VPath,
        limit: usize,
    ) -> Result<GlobResult> {
        let limit = self.root.options.limits().results(limit);
        let (pattern, under) = (pattern.to_owned(), under.clone());
        self.blocking(move |root| root.glob(&pattern, &under, limit))
            .await
    }

    async fn grep(
        &self,
        _ctx: &FileContext,
        query: &GrepQuery,
        under: &VPath,
        limit: usize,
    ) -> Result<GrepResult> {
        let limit = self.root.options.limits().results(limit);
        let (query, under, root) = (query.clone(), under.clone(), Arc::clone(&self.root));
        self.blocking(move |_| root.grep(&query, &under, limit))
            .await
    }
}
