//! The file contract (`Backend`) and `Sandbox::execute` on a `DockerSandbox`.

use std::time::Duration;

use async_trait::async_trait;
use burrow_backend::text::{apply_edit, check_size, edit_result, read_window};
use burrow_backend::{
    Backend, Capabilities, CompiledGrep, EditResult, Error, ErrorKind, ExecuteResponse,
    FileContext, FileInfo, Glob, GlobResult, GrepQuery, GrepResult, KeyLock, Limits, LineWindow,
    Listing, Result, Sandbox, VPath, WriteResult,
};
use futures::StreamExt;

use crate::archive;
use crate::exec::{self, ExecEnv};
use crate::listing::{self, Place};
use crate::options::{MAX_EXEC_TIMEOUT, MIN_EXEC_TIMEOUT, clamp};
use crate::paths::{self, Follow, Kind, Resolved, special};
use crate::sandbox::DockerSandbox;
use crate::search::{self, GrepVisit};

/// Permission bits of a new file.
const NEW_FILE_MODE: u32 = 0o644;

impl DockerSandbox {
    fn exec_env(&self) -> ExecEnv<'_> {
        ExecEnv {
            id: &self.id,
            work_dir: self.layout.work_dir(),
            env: &self.env,
            user: self.options.user.as_deref(),
        }
    }

    fn place(&self) -> Place<'_> {
        Place {
            docker: &self.docker,
            at: self.exec_env(),
            layout: &self.layout,
        }
    }

    fn limits(&self) -> Limits {
        Limits {
            max_file_size: self.options.max_file_size,
            max_results: self.options.max_results,
        }
    }

    async fn resolve(&self, path: &VPath, follow: Follow) -> Result<Resolved> {
        paths::resolve(&self.docker, &self.id, &self.layout, path, follow).await
    }

    /// The real path of the regular file at `path`, refusing anything else.
    async fn file(&self, path: &VPath) -> Result<(String, paths::Stat)> {
        let resolved = self.resolve(path, Follow::Yes).await?;
        match resolved.target {
            None => Err(Error::not_found(path)),
            Some((_, s)) if s.kind == Kind::Dir => Err(Error::is_a_directory(path)),
            Some((_, s)) if s.kind != Kind::File => Err(special(path)),
            Some((real, s)) => {
                check_size(path, s.size, self.options.max_file_size)?;
                Ok((real, s))
            }
        }
    }

    async fn fetch(&self, path: &VPath) -> Result<(Vec<u8>, String, u32)> {
        let (real, stat) = self.file(path).await?;
        let bytes = archive::download_file(
            &self.docker,
            &self.id,
            &real,
            path,
            self.options.max_file_size,
        )
        .await?;
        Ok((bytes, real, stat.perm))
    }

    /// Waits for, and holds, the lock of the file `path` resolves to (its
    /// link's target, when it is a link), so edits through a link and
    /// through its target serialise. A path that cannot be resolved is
    /// locked as given; the operation then refuses it.
    async fn lock_resolved(&self, path: &VPath, follow: Follow) -> KeyLock<String> {
        let real = match self.resolve(path, follow).await {
            Ok(Resolved {
                target: Some((real, _)),
                ..
            }) => real,
            Ok(r) if !r.dangling => paths::join(&r.base, &r.missing.join("/")),
            _ => self.layout.container(path),
        };
        self.locks.lock(real).await
    }

    /// Writes `bytes` at `path` (the caller holds its lock).
    async fn put(&self, path: &VPath, bytes: &[u8]) -> Result<()> {
        if path.is_root() {
            return Err(Error::is_a_directory(path));
        }
        check_size(path, bytes.len() as u64, self.options.max_file_size)?;
        let resolved = self.resolve(path, Follow::Yes).await?;
        if resolved.dangling {
            return Err(Error::refusal(
                ErrorKind::PermissionDenied,
                format!(
                    "{path} goes through a symbolic link that leads nowhere; write to the link's target instead."
                ),
            ));
        }
        if let Some(file) = &resolved.blocked_by {
            return Err(Error::not_a_directory(file));
        }
        let (dest, dirs, name, perm) = match &resolved.target {
            Some((_, s)) if s.kind == Kind::Dir => return Err(Error::is_a_directory(path)),
            Some((_, s)) if s.kind != Kind::File => return Err(special(path)),
            Some((real, s)) => {
                let (parent, name) = paths::split(real);
                (parent.to_owned(), Vec::new(), name.to_owned(), s.perm)
            }
            None => {
                let missing = &resolved.missing;
                let dirs: Vec<String> =
                    (1..missing.len()).map(|n| missing[..n].join("/")).collect();
                (
                    resolved.base.clone(),
                    dirs,
                    missing.join("/"),
                    NEW_FILE_MODE,
                )
            }
        };
        let tar = archive::tar_of(&dirs, Some((&name, bytes, perm)), self.owner)?;
        archive::upload(&self.docker, &self.id, &dest, tar).await
    }
}

#[async_trait]
impl Backend for DockerSandbox {
    fn capabilities(&self) -> Capabilities {
        Capabilities::minimal()
            .with_exec(true)
            .with_empty_dirs(true)
            .with_make_dir(true)
            .with_modified_at(true)
            .with_symlinks(true)
            .with_limits(self.limits())
    }

    fn lock_scope(&self) -> &str {
        &self.scope
    }

    async fn ls(&self, _ctx: &FileContext, dir: &VPath, limit: usize) -> Result<Listing> {
        let _busy = self.begin()?;
        let resolved = self.resolve(dir, Follow::Yes).await?;
        match resolved.target {
            None => Err(Error::not_found(dir)),
            Some((_, s)) if s.kind == Kind::File => Err(Error::not_a_directory(dir)),
            Some((_, s)) if s.kind != Kind::Dir => Err(special(dir)),
            Some((real, _)) => {
                listing::list(&self.place(), dir, &real, self.limits().results(limit)).await
            }
        }
    }

    async fn read(
        &self,
        _ctx: &FileContext,
        path: &VPath,
        offset: usize,
        limit: usize,
    ) -> Result<LineWindow> {
        let _busy = self.begin()?;
        let (bytes, _, _) = self.fetch(path).await?;
        read_window(path, &bytes, offset, limit)
    }

    async fn read_bytes(&self, _ctx: &FileContext, path: &VPath) -> Result<Vec<u8>> {
        let _busy = self.begin()?;
        Ok(self.fetch(path).await?.0)
    }

    async fn write_bytes(
        &self,
        _ctx: &FileContext,
        path: &VPath,
        bytes: &[u8],
    ) -> Result<WriteResult> {
        let _busy = self.begin()?;
        let _gate = self.tree_gate.read().await;
        let _lock = self.lock_resolved(path, Follow::Yes).await;
        self.put(path, bytes).await?;
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
        let _busy = self.begin()?;
        burrow_backend::text::check_edit_args(old, new)?;
        let _gate = self.tree_gate.read().await;
        let _lock = self.lock_resolved(path, Follow::Yes).await;
        let (bytes, _, _) = self.fetch(path).await?;
        let (edited, count) = apply_edit(path, &bytes, old, new, replace_all)?;
        self.put(path, &edited).await?;
        Ok(edit_result(path, count))
    }

    async fn delete(&self, _ctx: &FileContext, path: &VPath) -> Result<()> {
        let _busy = self.begin()?;
        if path.is_root() {
            return Err(Error::refusal(
                ErrorKind::InvalidPath,
                "the workspace root \"/\" cannot be deleted; delete the entries beneath it.",
            ));
        }
        let _gate = self.tree_gate.read().await;
        let _lock = self.lock_resolved(path, Follow::No).await;
        let resolved = self.resolve(path, Follow::No).await?;
        match resolved.target {
            None => Err(Error::not_found(path)),
            Some((real, _)) => listing::delete(&self.place(), path, &real).await,
        }
    }

    /// `mkdir` (`-p` with `parents`) through exec, the path an argv element,
    /// after resolving each component as every write does (ADR 0102).
    async fn make_dir(&self, _ctx: &FileContext, path: &VPath, parents: bool) -> Result<()> {
        let _busy = self.begin()?;
        let existing = || {
            if parents {
                Ok(())
            } else {
                Err(Error::already_exists(path))
            }
        };
        if path.is_root() {
            return existing();
        }
        let _gate = self.tree_gate.read().await;
        let _lock = self.lock_resolved(path, Follow::Yes).await;
        let resolved = self.resolve(path, Follow::Yes).await?;
        if resolved.dangling {
            return Err(Error::refusal(
                ErrorKind::PermissionDenied,
                format!(
                    "{path} goes through a symbolic link that leads nowhere; make the link's target instead."
                ),
            ));
        }
        if let Some(file) = &resolved.blocked_by {
            return Err(Error::not_a_directory(file));
        }
        match &resolved.target {
            Some((_, s)) if s.kind == Kind::Dir => existing(),
            Some(_) => Err(Error::already_exists(path)),
            None => {
                if !parents && resolved.missing.len() > 1 {
                    let parent = path.parent().unwrap_or_else(VPath::root);
                    return Err(Error::not_found(&parent));
                }
                let real = paths::join(&resolved.base, &resolved.missing.join("/"));
                listing::make_dir(&self.place(), path, &real, parents).await
            }
        }
    }

    /// `rm -rf` through exec in one step, the path an argv element; a link
    /// at `path` is removed, never its target.
    async fn delete_tree(&self, _ctx: &FileContext, path: &VPath) -> Result<()> {
        let _busy = self.begin()?;
        if path.is_root() {
            return Err(Error::root_cannot_be_deleted());
        }
        // Exclusive: no change of this sandbox lands beneath the tree while `rm -rf` runs (ADR 0223).
        let _gate = self.tree_gate.write().await;
        let _lock = self.lock_resolved(path, Follow::No).await;
        let resolved = self.resolve(path, Follow::No).await?;
        match resolved.target {
            None => Err(Error::not_found(path)),
            Some((real, _)) => listing::delete_tree(&self.place(), path, &real).await,
        }
    }

    async fn glob(
        &self,
        _ctx: &FileContext,
        pattern: &str,
        under: &VPath,
        limit: usize,
    ) -> Result<GlobResult> {
        let _busy = self.begin()?;
        let glob = Glob::new(pattern)?;
        let limit = self.limits().results(limit);
        let resolved = self.resolve(under, Follow::Yes).await?;
        let real = match resolved.target {
            None => return Ok(GlobResult::default()),
            Some((_, s)) if s.kind == Kind::File => return Err(Error::not_a_directory(under)),
            Some((_, s)) if s.kind != Kind::Dir => return Ok(GlobResult::default()),
            Some((real, _)) => real,
        };
        let place = self.place();
        let (first, truncated) = listing::glob_files(&place, under, &real, &glob, limit)
            .await?
            .finish();
        let infos: Vec<Option<FileInfo>> = futures::stream::iter(first)
            .map(|found| listing::file_info(&place, found.path, found.real))
            .buffered(listing::STAT_CONCURRENCY)
            .collect::<Vec<Result<Option<FileInfo>>>>()
            .await
            .into_iter()
            .collect::<Result<_>>()?;
        Ok(GlobResult {
            files: infos.into_iter().flatten().collect(),
            truncated,
        })
    }

    async fn grep(
        &self,
        _ctx: &FileContext,
        query: &GrepQuery,
        under: &VPath,
        limit: usize,
    ) -> Result<GrepResult> {
        let _busy = self.begin()?;
        let grep = CompiledGrep::new(query)?;
        let limit = self.limits().results(limit);
        let resolved = self.resolve(under, Follow::Yes).await?;
        let max = self.options.max_file_size;
        let real = match resolved.target {
            None => return Ok(GrepResult::default()),
            Some((_, s)) if s.kind == Kind::File => {
                if !grep.includes(under.name()) || s.size > max {
                    return Ok(GrepResult::default());
                }
                let (bytes, _, _) = self.fetch(under).await?;
                let mut visit = GrepVisit::new(grep, under.clone(), limit, max);
                visit.offer(under, &bytes);
                return Ok(search::grep_result(visit.found));
            }
            Some((_, s)) if s.kind != Kind::Dir => return Ok(GrepResult::default()),
            Some((real, _)) => real,
        };
        let picked = search::grep_picked(&self.place(), &grep, under, &real, limit, max).await?;
        let mut visit = match picked {
            Some(visit) => visit,
            None => {
                let visit = GrepVisit::new(grep, under.clone(), limit, max);
                archive::walk(&self.docker, &self.id, &real, visit).await?
            }
        };
        for path in std::mem::take(&mut visit.later) {
            // A link leading out, nowhere, or to something not a file is passed by.
            if visit.wants(&path)
                && let Ok((bytes, _, _)) = self.fetch(&path).await
            {
                visit.offer(&path, &bytes);
            }
        }
        Ok(search::grep_result(visit.found))
    }

    fn as_sandbox(&self) -> Option<&dyn Sandbox> {
        Some(self)
    }
}

#[async_trait]
impl Sandbox for DockerSandbox {
    async fn execute(
        &self,
        _ctx: &FileContext,
        command: &str,
        timeout: Option<Duration>,
    ) -> Result<ExecuteResponse> {
        let _busy = self.begin()?;
        let timeout = exec_timeout(timeout, self.options.exec_timeout)?;
        exec::execute(
            &self.docker,
            self.exec_env(),
            command,
            self.options.output_cap,
            timeout,
        )
        .await
    }
}

/// The timeout one `execute` runs with: the caller's, or the configured
/// default (raised to [`MIN_EXEC_TIMEOUT`]), cut to [`MAX_EXEC_TIMEOUT`].
/// A timeout of zero from the caller is refused: it would kill every
/// command before it starts (the MCP tool refuses it too).
fn exec_timeout(given: Option<Duration>, default: Duration) -> Result<Duration> {
    match given {
        Some(Duration::ZERO) => Err(Error::invalid_argument(
            "a timeout of 0 s would kill the command before it starts; give a positive timeout, or none for the default.",
        )),
        Some(t) => Ok(t.min(MAX_EXEC_TIMEOUT)),
        None => Ok(clamp(default, (MIN_EXEC_TIMEOUT, MAX_EXEC_TIMEOUT))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_timeouts_are_clamped_and_zero_is_refused() {
        let default = Duration::from_secs(120);
        assert_eq!(
            exec_timeout(Some(Duration::ZERO), default)
                .unwrap_err()
                .kind(),
            ErrorKind::InvalidArgument
        );
        for huge in [Duration::from_secs(u64::MAX), Duration::MAX] {
            assert_eq!(exec_timeout(Some(huge), default).unwrap(), MAX_EXEC_TIMEOUT);
            assert_eq!(exec_timeout(None, huge).unwrap(), MAX_EXEC_TIMEOUT);
        }
        assert_eq!(
            exec_timeout(None, Duration::ZERO).unwrap(),
            MIN_EXEC_TIMEOUT
        );
        assert_eq!(
            exec_timeout(Some(Duration::from_millis(1)), default).unwrap(),
            Duration::from_millis(1)
        );
        assert_eq!(exec_timeout(None, default).unwrap(), default);
    }
}
