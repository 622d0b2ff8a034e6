//! The model a backend is compared with: a fresh `StateBackend`, plus an overlay of empty directories when the backend keeps them.
//!
//! `StateBackend` has implicit directories (they vanish with their last
//! file). A backend with `empty_dirs` legitimately keeps them, which changes
//! later answers (ls of an emptied directory, writing a file where it stands).
//! Rather than weakening the comparison, the model then tracks every
//! directory that was created and not deleted, and answers as such a backend must.

use std::collections::BTreeSet;

use burrow_backend::{
    Backend, Error, ErrorKind, FileContext, FileInfo, GrepQuery, Listing, Result, VPath,
};
use burrow_state::StateBackend;

use super::Observed;

/// The reference implementation a backend's results are compared with.
pub(crate) struct Model {
    state: StateBackend,
    ctx: FileContext,
    /// Some: the backend keeps empty directories; these are every directory that exists.
    dirs: Option<BTreeSet<VPath>>,
    /// The backend's `make_dir` capability: off, every `make_dir` is Unsupported.
    make_dir: bool,
}

impl Model {
    /// A model with `limits` like the backend's; `keep_dirs` when the backend has
    /// `empty_dirs`, `make_dir` when it has that capability. `root` is the
    /// fixture's root, a directory that stands from the start (a mount point
    /// of a composite), so making a directory in it needs no `parents`.
    pub(crate) async fn new(
        limits: burrow_backend::Limits,
        keep_dirs: bool,
        make_dir: bool,
        ctx: FileContext,
        root: &VPath,
    ) -> Result<Self> {
        let mut model = Model {
            state: StateBackend::with_limits(limits),
            ctx,
            dirs: keep_dirs.then(BTreeSet::new),
            make_dir,
        };
        if !root.is_root() {
            match &mut model.dirs {
                Some(dirs) => {
                    dirs.extend(root.ancestors().into_iter().filter(|a| !a.is_root()));
                    dirs.insert(root.clone());
                }
                None => model.state.make_dir(&model.ctx, root, true).await?,
            }
        }
        Ok(model)
    }

    fn is_kept_dir(&self, path: &VPath) -> bool {
        self.dirs.as_ref().is_some_and(|d| d.contains(path))
    }

    pub(crate) async fn write(&mut self, path: &VPath, bytes: &[u8]) -> Result<Observed> {
        if self.is_kept_dir(path) {
            return Err(Error::is_a_directory(path));
        }
        let r = self.state.write_bytes(&self.ctx, path, bytes).await?;
        if let Some(dirs) = &mut self.dirs {
            dirs.extend(path.ancestors().into_iter().filter(|a| !a.is_root()));
        }
        Ok(Observed::Written(r))
    }

    pub(crate) async fn edit(
        &mut self,
        path: &VPath,
        old: &str,
        new: &str,
        all: bool,
    ) -> Result<Observed> {
        if self.is_kept_dir(path) {
            return Err(Error::is_a_directory(path));
        }
        Ok(Observed::Edited(
            self.state.edit(&self.ctx, path, old, new, all).await?,
        ))
    }

    pub(crate) async fn read(&self, path: &VPath, offset: usize, limit: usize) -> Result<Observed> {
        if self.is_kept_dir(path) {
            return Err(Error::is_a_directory(path));
        }
        Ok(Observed::Window(
            self.state.read(&self.ctx, path, offset, limit).await?,
        ))
    }

    pub(crate) async fn read_bytes(&self, path: &VPath) -> Result<Observed> {
        if self.is_kept_dir(path) {
            return Err(Error::is_a_directory(path));
        }
        Ok(Observed::Bytes(
            self.state.read_bytes(&self.ctx, path).await?,
        ))
    }

    pub(crate) async fn delete(&mut self, path: &VPath) -> Result<Observed> {
        if !self.is_kept_dir(path) {
            self.state.delete(&self.ctx, path).await?;
            return Ok(Observed::Done);
        }
        let listing = self.ls(path, 1).await?;
        if !listing.entries.is_empty() {
            return Err(Error::refusal(
                ErrorKind::DirectoryNotEmpty,
                format!("{path} is not empty"),
            ));
        }
        if let Some(dirs) = &mut self.dirs {
            dirs.remove(path);
        }
        Ok(Observed::Done)
    }

    /// `delete_tree`: the StateBackend's, then every kept directory at or beneath `path`.
    pub(crate) async fn delete_tree(&mut self, path: &VPath) -> Result<Observed> {
        if path.is_root() {
            return Err(Error::root_cannot_be_deleted());
        }
        let kept = self.is_kept_dir(path);
        match self.state.delete_tree(&self.ctx, path).await {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::NotFound && kept => {}
            Err(e) => return Err(e),
        }
        if let Some(dirs) = &mut self.dirs {
            let prefix = format!("{}/", path.as_str());
            dirs.retain(|d| d != path && !d.as_str().starts_with(&prefix));
        }
        Ok(Observed::Done)
    }

    /// `make_dir`: the StateBackend's where directories are implicit; where the
    /// backend keeps every directory, the same sentences over the kept set
    /// (checked in the order the contract lists them: the path itself, a file
    /// among its parents, a missing parent). Unsupported, and nothing made,
    /// where the backend cannot make directories.
    pub(crate) async fn make_dir(&mut self, path: &VPath, parents: bool) -> Result<Observed> {
        if !self.make_dir {
            return Err(Error::unsupported("making directories"));
        }
        if self.dirs.is_none() {
            self.state.make_dir(&self.ctx, path, parents).await?;
            return Ok(Observed::Done);
        }
        let exists = || {
            if parents {
                Ok(Observed::Done)
            } else {
                Err(Error::already_exists(path))
            }
        };
        if path.is_root() || self.is_kept_dir(path) {
            return exists();
        }
        if self.is_file(path).await? {
            return Err(Error::already_exists(path));
        }
        let above: Vec<VPath> = path
            .ancestors()
            .into_iter()
            .filter(|a| !a.is_root() && a != path)
            .collect();
        for a in &above {
            if self.is_file(a).await? {
                return Err(Error::not_a_directory(a));
            }
        }
        if !parents
            && let Some(parent) = path.parent()
            && !parent.is_root()
            && !self.is_kept_dir(&parent)
        {
            return Err(Error::not_found(&parent));
        }
        if let Some(dirs) = &mut self.dirs {
            dirs.extend(above);
            dirs.insert(path.clone());
        }
        Ok(Observed::Done)
    }

    /// True when a file stands at `path` in the StateBackend.
    async fn is_file(&self, path: &VPath) -> Result<bool> {
        match self.state.ls(&self.ctx, path, 1).await {
            Err(e) if e.kind() == ErrorKind::NotADirectory => Ok(true),
            Ok(_) => Ok(false),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// `ls`, with the kept empty directories merged in.
    pub(crate) async fn ls(&self, dir: &VPath, limit: usize) -> Result<Listing> {
        let Some(dirs) = &self.dirs else {
            return self.state.ls(&self.ctx, dir, limit).await;
        };
        if !dir.is_root() && !dirs.contains(dir) {
            return self.state.ls(&self.ctx, dir, limit).await;
        }
        let mut entries = match self.state.ls(&self.ctx, dir, usize::MAX).await {
            Ok(listing) => listing.entries,
            Err(e) if e.kind() == ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e),
        };
        for kept in dirs.iter().filter(|d| d.parent().as_ref() == Some(dir)) {
            if !entries.iter().any(|e| e.path == kept.as_str()) {
                entries.push(FileInfo {
                    name: kept.name().to_owned(),
                    path: kept.as_str().to_owned(),
                    is_dir: true,
                    size: None,
                    modified_at: None,
                });
            }
        }
        entries.sort_by(|a, b| a.path.cmp(&b.path));
        let limit = self.state.limits().results(limit);
        let truncated = entries.len() > limit;
        entries.truncate(limit);
        Ok(Listing { entries, truncated })
    }

    pub(crate) async fn glob(
        &self,
        pattern: &str,
        under: &VPath,
        limit: usize,
    ) -> Result<Observed> {
        Ok(Observed::Globbed(
            self.state.glob(&self.ctx, pattern, under, limit).await?,
        ))
    }

    pub(crate) async fn grep(
        &self,
        query: &GrepQuery,
        under: &VPath,
        limit: usize,
    ) -> Result<Observed> {
        Ok(Observed::Grepped(
            self.state.grep(&self.ctx, query, under, limit).await?,
        ))
    }
}
