//! `CompositeBackend` and its builder: routing each operation to the backend mounted at the longest matching prefix.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use burrow_backend::{
    Backend, Capabilities, EditResult, Error, ErrorKind, ExecuteResponse, FileContext, FileInfo,
    GlobResult, GrepQuery, GrepResult, Limits, LineWindow, Listing, LockKey, Result, Sandbox,
    VPath, WriteResult, text,
};

use crate::mounts::MountTable;
use crate::search;

/// Several backends mounted by path prefix, seen as one file tree.
///
/// Build one with [`CompositeBackend::builder`]. See the crate docs for the
/// routing and shadowing rules; in short:
///
/// # Semantics
///
/// - **Routing.** Every operation goes to the mount with the longest prefix
///   containing the path (the default when none does), which sees the path
///   relative to its mount; result paths and refusal messages come back in
///   composite paths.
/// - **Shadowing.** Under a mount's prefix the default's (or an outer
///   mount's) files are invisible to `ls`, `read`, `glob` and `grep`, and
///   mutations never reach them.
/// - **Mount points are directories.** A mount point and every ancestor of
///   one exist as directories, whatever the default holds there. Writing,
///   reading or editing one is IsADirectory. Deleting a mount point is
///   InvalidPath (it is the root of its backend, and deleting a root is
///   InvalidPath); deleting an ancestor of one is DirectoryNotEmpty.
/// - **No cross-mount rename.** The contract has no rename; moving a file
///   from one mount to another is a read, a write and a delete, not atomic.
/// - **Size.** Writes are checked against the smallest `max_file_size` of
///   all parts (the one the composite advertises); each part still applies
///   its own limits to everything else.
/// - **Context.** The `FileContext` (tenant, run id, effect key) is passed
///   to the routed backend untouched.
#[derive(Clone)]
pub struct CompositeBackend {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) table: MountTable,
    pub(crate) caps: Capabilities,
    /// Where `execute` goes: an index into `table.parts`, if one place is a sandbox.
    exec_target: Option<usize>,
}

impl fmt::Debug for CompositeBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompositeBackend")
            .field("mounts", &self.mount_prefixes())
            .field("capabilities", &self.inner.caps)
            .finish()
    }
}

/// Collects a default backend and its mounts; [`CompositeBuilder::build`] validates them.
pub struct CompositeBuilder {
    default: Arc<dyn Backend>,
    mounts: Vec<(String, Arc<dyn Backend>)>,
}

impl fmt::Debug for CompositeBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let prefixes: Vec<&str> = self.mounts.iter().map(|(p, _)| p.as_str()).collect();
        f.debug_struct("CompositeBuilder")
            .field("mounts", &prefixes)
            .finish()
    }
}

impl CompositeBuilder {
    /// Mounts `backend` at `prefix` (a path such as "/memories"; checked by [`CompositeBuilder::build`]).
    pub fn mount(mut self, prefix: impl Into<String>, backend: Arc<dyn Backend>) -> Self {
        self.mounts.push((prefix.into(), backend));
        self
    }

    /// The composite.
    ///
    /// Refuses a prefix that is not a valid path (InvalidPath), a mount at "/"
    /// (InvalidArgument: that is the default's place) and two mounts at the
    /// same prefix (AlreadyExists). Nested prefixes are allowed: the longest wins.
    pub fn build(self) -> Result<CompositeBackend> {
        let table = MountTable::new(self.default, self.mounts)?;
        let exec_target = exec_target(&table);
        let caps = compose_capabilities(&table, exec_target.is_some());
        Ok(CompositeBackend {
            inner: Arc::new(Inner {
                table,
                caps,
                exec_target,
            }),
        })
    }
}

/// Where `execute` goes: the default when it is a sandbox, else the one
/// mount that is; `None` when no part is one, or several mounts are and the
/// default is not (which of them is meant cannot be told).
fn exec_target(table: &MountTable) -> Option<usize> {
    let mut sandboxes = table
        .parts
        .iter()
        .enumerate()
        .filter(|(_, part)| part.backend.as_sandbox().is_some())
        .map(|(index, _)| index);
    let first = sandboxes.next()?;
    if first == 0 || sandboxes.next().is_none() {
        Some(first)
    } else {
        None
    }
}

/// What a composite supports, from what its parts support.
///
/// `exec` holds when `execute` has one place to go (see [`exec_target`]). Every other
/// flag must hold wherever a file may land, so it holds only when every part
/// has it: a scenario gated on `tenants` must not run against a mount that
/// ignores tenants. Limits are the smallest of all parts.
fn compose_capabilities(table: &MountTable, can_execute: bool) -> Capabilities {
    let all: Vec<Capabilities> = table
        .parts
        .iter()
        .map(|p| p.backend.capabilities())
        .collect();
    let every = |f: fn(&Capabilities) -> bool| all.iter().all(f);
    let limits = Limits {
        max_file_size: all
            .iter()
            .map(|c| c.limits.max_file_size)
            .min()
            .unwrap_or_default(),
        max_results: all
            .iter()
            .map(|c| c.limits.max_results)
            .min()
            .unwrap_or_default(),
    };
    Capabilities::minimal()
        .with_exec(can_execute)
        .with_empty_dirs(every(|c| c.empty_dirs))
        .with_make_dir(every(|c| c.make_dir))
        .with_modified_at(every(|c| c.modified_at))
        .with_tenants(every(|c| c.tenants))
        .with_effect_keys(every(|c| c.effect_keys))
        .with_conditional_writes(every(|c| c.conditional_writes))
        .with_symlinks(every(|c| c.symlinks))
        .with_limits(limits)
}

impl CompositeBackend {
    /// A builder over `default`, the backend that owns every path no mount claims.
    pub fn builder(default: Arc<dyn Backend>) -> CompositeBuilder {
        CompositeBuilder {
            default,
            mounts: Vec::new(),
        }
    }

    /// The mount prefixes, in path order (the default, at "/", not included).
    pub fn mount_prefixes(&self) -> Vec<VPath> {
        self.inner.table.parts[1..]
            .iter()
            .map(|p| p.prefix.clone())
            .collect()
    }

    /// The backend mounted at exactly `prefix`, if any.
    pub fn mounted(&self, prefix: &VPath) -> Option<&Arc<dyn Backend>> {
        self.inner.table.parts[1..]
            .iter()
            .find(|p| p.prefix == *prefix)
            .map(|p| &p.backend)
    }

    /// The default backend.
    pub fn default_backend(&self) -> &Arc<dyn Backend> {
        &self.inner.table.parts[0].backend
    }

    /// The prefix of the part `execute` goes to ("/" for the default), if any.
    pub fn exec_prefix(&self) -> Option<&VPath> {
        self.inner
            .exec_target
            .and_then(|i| self.inner.table.parts.get(i))
            .map(|part| &part.prefix)
    }

    /// Runs `command` in the sandbox mounted at `prefix`.
    ///
    /// For a composite whose `execute` cannot tell which sandbox is meant
    /// (several mounts are sandboxes, the default is not), or to reach a
    /// mounted sandbox other than the default: the caller names the mount. No mount at `prefix`: NotFound; a mount that is not a
    /// sandbox: Unsupported.
    pub async fn execute_in(
        &self,
        prefix: &VPath,
        ctx: &FileContext,
        command: &str,
        timeout: Option<Duration>,
    ) -> Result<ExecuteResponse> {
        let Some(backend) = self.mounted(prefix) else {
            return Err(Error::refusal_at(
                ErrorKind::NotFound,
                prefix,
                "nothing is mounted at ",
                "; name one of the mount points.",
            ));
        };
        match backend.as_sandbox() {
            Some(sandbox) => sandbox.execute(ctx, command, timeout).await,
            None => Err(Error::unsupported(format!(
                "running commands in the mount at {prefix}"
            ))),
        }
    }

    pub(crate) fn state(&self) -> &Inner {
        &self.inner
    }

    /// IsADirectory when the mounts make `path` a directory.
    fn refuse_mount_dir(&self, path: &VPath) -> Result<()> {
        if self.inner.table.is_dir_by_mounts(path) {
            return Err(Error::is_a_directory(path));
        }
        Ok(())
    }

    /// IsADirectory when `path` is an ancestor of a mount point (a mount point
    /// itself is routed to its backend's root, which says so itself).
    fn refuse_implied_dir(&self, path: &VPath) -> Result<()> {
        if self.inner.table.has_mount_below(path) {
            return Err(Error::is_a_directory(path));
        }
        Ok(())
    }

    /// InvalidPath for a mount point, DirectoryNotEmpty for a directory above
    /// one: neither can be deleted, whole or not.
    fn refuse_deleting_mounts(&self, path: &VPath) -> Result<()> {
        let table = &self.inner.table;
        if !path.is_root() && table.is_mount_point(path) {
            return Err(Error::refusal_at(
                ErrorKind::InvalidPath,
                path,
                "",
                " is a mount point, the root of another backend; it cannot be deleted (delete the files inside it instead).",
            ));
        }
        if !path.is_root() && table.has_mount_below(path) {
            return Err(Error::refusal_at(
                ErrorKind::DirectoryNotEmpty,
                path,
                "",
                " holds a mount point; it cannot be deleted.",
            ));
        }
        Ok(())
    }

    async fn ls_with_mounts(
        &self,
        ctx: &FileContext,
        dir: &VPath,
        limit: usize,
    ) -> Result<Listing> {
        let table = &self.inner.table;
        let (i, inner) = table.route(dir);
        let part = &table.parts[i];
        let synthetic: BTreeSet<VPath> = table.mount_children(dir);
        // The owner may have nothing at `dir`, or a file that the mounts shadow.
        let own = match part.backend.ls(ctx, &inner, limit).await {
            Ok(listing) => listing,
            Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
                Listing::default()
            }
            Err(e) => return Err(part.outer_error(e, &inner)),
        };
        let mut entries: Vec<FileInfo> = own
            .entries
            .into_iter()
            .map(|e| part.outer_info(e))
            .filter(|e| !synthetic.iter().any(|s| s.as_str() == e.path))
            .collect();
        entries.extend(synthetic.iter().map(|s| FileInfo {
            name: s.name().to_owned(),
            path: s.as_str().to_owned(),
            is_dir: true,
            size: None,
            modified_at: None,
        }));
        entries.sort_by(|a, b| a.path.cmp(&b.path));
        // The owner's first `limit` entries are all here, so the first
        // `limit` of the merge are exact; more exist if the owner had more
        // or the merge overflowed.
        let truncated = own.truncated || entries.len() > limit;
        entries.truncate(limit);
        Ok(Listing { entries, truncated })
    }
}

#[async_trait]
impl Backend for CompositeBackend {
    fn capabilities(&self) -> Capabilities {
        self.inner.caps.clone()
    }

    fn lock_scope(&self) -> &str {
        "composite"
    }

    /// The routed backend's keys for the path it sees, prefixed by its mount
    /// so two mounts of the same kind of backend never share a key.
    fn locks(&self, ctx: &FileContext, path: &VPath) -> Vec<LockKey> {
        let (i, inner) = self.inner.table.route(path);
        let part = &self.inner.table.parts[i];
        let keys = part.backend.locks(ctx, &inner);
        if part.is_default() {
            return keys;
        }
        keys.into_iter()
            .map(|k| LockKey::new(format!("{}{}", part.lock_prefix, k.as_str())))
            .collect()
    }

    async fn ls(&self, ctx: &FileContext, dir: &VPath, limit: usize) -> Result<Listing> {
        let limit = self.inner.caps.limits.results(limit);
        let table = &self.inner.table;
        if table.has_mount_below(dir) {
            return self.ls_with_mounts(ctx, dir, limit).await;
        }
        let (i, inner) = table.route(dir);
        let part = &table.parts[i];
        let mut listing = part
            .backend
            .ls(ctx, &inner, limit)
            .await
            .map_err(|e| part.outer_error(e, &inner))?;
        if !part.is_default() {
            listing.entries = listing
                .entries
                .into_iter()
                .map(|e| part.outer_info(e))
                .collect();
        }
        Ok(listing)
    }

    async fn read(
        &self,
        ctx: &FileContext,
        path: &VPath,
        offset: usize,
        limit: usize,
    ) -> Result<LineWindow> {
        self.refuse_implied_dir(path)?;
        let (i, inner) = self.inner.table.route(path);
        let part = &self.inner.table.parts[i];
        part.backend
            .read(ctx, &inner, offset, limit)
            .await
            .map_err(|e| part.outer_error(e, &inner))
    }

    async fn read_bytes(&self, ctx: &FileContext, path: &VPath) -> Result<Vec<u8>> {
        self.refuse_implied_dir(path)?;
        let (i, inner) = self.inner.table.route(path);
        let part = &self.inner.table.parts[i];
        part.backend
            .read_bytes(ctx, &inner)
            .await
            .map_err(|e| part.outer_error(e, &inner))
    }

    async fn write(&self, ctx: &FileContext, path: &VPath, content: &str) -> Result<WriteResult> {
        self.refuse_mount_dir(path)?;
        text::check_size(
            path,
            content.len() as u64,
            self.inner.caps.limits.max_file_size,
        )?;
        let (i, inner) = self.inner.table.route(path);
        let part = &self.inner.table.parts[i];
        let mut result = part
            .backend
            .write(ctx, &inner, content)
            .await
            .map_err(|e| part.outer_error(e, &inner))?;
        result.path = result.path.map(|p| part.outer(&p));
        Ok(result)
    }

    async fn write_bytes(
        &self,
        ctx: &FileContext,
        path: &VPath,
        bytes: &[u8],
    ) -> Result<WriteResult> {
        self.refuse_mount_dir(path)?;
        text::check_size(
            path,
            bytes.len() as u64,
            self.inner.caps.limits.max_file_size,
        )?;
        let (i, inner) = self.inner.table.route(path);
        let part = &self.inner.table.parts[i];
        let mut result = part
            .backend
            .write_bytes(ctx, &inner, bytes)
            .await
            .map_err(|e| part.outer_error(e, &inner))?;
        result.path = result.path.map(|p| part.outer(&p));
        Ok(result)
    }

    async fn edit(
        &self,
        ctx: &FileContext,
        path: &VPath,
        old: &str,
        new: &str,
        replace_all: bool,
    ) -> Result<EditResult> {
        self.refuse_implied_dir(path)?;
        let (i, inner) = self.inner.table.route(path);
        let part = &self.inner.table.parts[i];
        let mut result = part
            .backend
            .edit(ctx, &inner, old, new, replace_all)
            .await
            .map_err(|e| part.outer_error(e, &inner))?;
        result.path = result.path.map(|p| part.outer(&p));
        Ok(result)
    }

    async fn delete(&self, ctx: &FileContext, path: &VPath) -> Result<()> {
        self.refuse_deleting_mounts(path)?;
        let table = &self.inner.table;
        let (i, inner) = table.route(path);
        let part = &table.parts[i];
        part.backend
            .delete(ctx, &inner)
            .await
            .map_err(|e| part.outer_error(e, &inner))
    }

    /// A mount point, or a directory the mounts imply, already exists: no
    /// change with `parents`, AlreadyExists without. Anything else is routed
    /// like a write.
    async fn make_dir(&self, ctx: &FileContext, path: &VPath, parents: bool) -> Result<()> {
        let table = &self.inner.table;
        if !path.is_root() && (table.is_mount_point(path) || table.is_dir_by_mounts(path)) {
            return if parents {
                Ok(())
            } else {
                Err(Error::refusal_at(
                    ErrorKind::AlreadyExists,
                    path,
                    "",
                    " is a mount point (or holds one) and already exists.",
                ))
            };
        }
        let (i, inner) = table.route(path);
        let part = &table.parts[i];
        part.backend
            .make_dir(ctx, &inner, parents)
            .await
            .map_err(|e| part.outer_error(e, &inner))
    }

    /// Refused on a mount point and on a directory holding one, as `delete`
    /// is; anything else is the routed backend's own `delete_tree`.
    async fn delete_tree(&self, ctx: &FileContext, path: &VPath) -> Result<()> {
        if path.is_root() {
            return Err(Error::root_cannot_be_deleted());
        }
        self.refuse_deleting_mounts(path)?;
        let table = &self.inner.table;
        let (i, inner) = table.route(path);
        let part = &table.parts[i];
        part.backend
            .delete_tree(ctx, &inner)
            .await
            .map_err(|e| part.outer_error(e, &inner))
    }

    async fn glob(
        &self,
        ctx: &FileContext,
        pattern: &str,
        under: &VPath,
        limit: usize,
    ) -> Result<GlobResult> {
        search::glob(self, ctx, pattern, under, limit).await
    }

    async fn grep(
        &self,
        ctx: &FileContext,
        query: &GrepQuery,
        under: &VPath,
        limit: usize,
    ) -> Result<GrepResult> {
        search::grep(self, ctx, query, under, limit).await
    }

    fn as_sandbox(&self) -> Option<&dyn Sandbox> {
        if self.inner.exec_target.is_some() {
            Some(self)
        } else {
            None
        }
    }
}

#[async_trait]
impl Sandbox for CompositeBackend {
    /// Runs `command` in the part that is a sandbox: the default when it is
    /// one, else the one mount that is (the command runs in that mount's
    /// workspace, whose root the composite shows at its prefix). No sandbox,
    /// or several mounted ones and the default none: Unsupported, naming
    /// them (use [`CompositeBackend::execute_in`]).
    async fn execute(
        &self,
        ctx: &FileContext,
        command: &str,
        timeout: Option<Duration>,
    ) -> Result<ExecuteResponse> {
        let target = self
            .inner
            .exec_target
            .and_then(|i| self.inner.table.parts.get(i))
            .and_then(|part| part.backend.as_sandbox());
        if let Some(sandbox) = target {
            return sandbox.execute(ctx, command, timeout).await;
        }
        let sandboxes: Vec<String> = self.inner.table.parts[1..]
            .iter()
            .filter(|part| part.backend.as_sandbox().is_some())
            .map(|part| burrow_backend::shown(part.prefix.as_str()).to_string())
            .collect();
        Err(if sandboxes.is_empty() {
            Error::unsupported("running commands: none of its parts is a sandbox")
        } else {
            Error::unsupported(format!(
                "running commands without naming a sandbox: the mounts at {} are sandboxes and the default is not; name one with execute_in",
                sandboxes.join(", ")
            ))
        })
    }
}
