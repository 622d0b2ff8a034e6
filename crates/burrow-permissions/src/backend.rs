//! `PermissionBackend`: any backend with the `Read`/`Edit` deny rules enforced on every operation.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use burrow_backend::{
    Backend, Capabilities, EditResult, Error, ErrorKind, ExecuteResponse, FileContext, GlobResult,
    GrepQuery, GrepResult, LineWindow, Listing, LockKey, Result, Sandbox, VPath, WriteResult,
};

use crate::paths::PathRules;

/// A backend whose deny path rules no tool, hook or MCP client can route around.
///
/// # Semantics
///
/// - **Hidden paths** (covered by a `Read` deny rule): every operation on
///   one is refused with PermissionDenied, one sentence naming the rule,
///   before the inner backend is asked, so a refusal says nothing about
///   whether the path exists. They never appear in an `ls`, `glob` or
///   `grep` result: results are filtered *before* the limit (the inner
///   backend is asked again for more when filtering emptied part of a page),
///   so `truncated` is true exactly when more visible results exist; see
///   ADR 0311 for the one case it cannot be (an inner backend that caps its
///   answers below what was asked).
/// - **Locked paths** (covered by an `Edit`/`Write` deny rule): `write`,
///   `write_bytes`, `edit`, `delete`, `make_dir` and `delete_tree` are
///   refused, nothing changed; reads go on.
/// - A mutation that would create a path beneath a covered directory is a
///   mutation of a covered path (coverage is inherited, as in gitignore).
/// - `delete_tree` of a tree holding a hidden or locked path is refused,
///   nothing removed: the tree is walked first (with the inner `ls`) when a
///   rule may cover something beneath it. A tree with a directory of more
///   entries than one listing returns is refused, since it cannot be checked.
/// - `execute` (when the inner backend is a sandbox) cannot be checked from
///   outside the sandbox: while any path rule is set it is refused, naming
///   the first rule; with none it is the inner sandbox's.
/// - Capabilities, lock keys and limits are the inner backend's.
#[derive(Clone)]
pub struct PermissionBackend {
    inner: Arc<dyn Backend>,
    rules: Arc<PathRules>,
}

impl std::fmt::Debug for PermissionBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PermissionBackend")
            .field("rules", &self.rules.texts().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// Where one round of filling a page stands.
enum Page<T> {
    /// The page and its `truncated` flag.
    Done(Vec<T>, bool),
    /// Ask the inner backend again for this many.
    More(usize),
}

/// One round of filling a page of `limit` visible results from `got`, the
/// inner backend's answer to a request for `asked`.
fn page<T>(
    got: Vec<T>,
    truncated: bool,
    asked: usize,
    limit: usize,
    visible: impl Fn(&T) -> bool,
) -> Page<T> {
    let returned = got.len();
    let mut kept: Vec<T> = got.into_iter().filter(|item| visible(item)).collect();
    if kept.len() > limit {
        kept.truncate(limit);
        return Page::Done(kept, true);
    }
    if !truncated {
        return Page::Done(kept, false);
    }
    if returned < asked {
        // The inner backend capped its answer below what was asked: it
        // cannot be paged further, and more results exist (ADR 0311).
        return Page::Done(kept, true);
    }
    Page::More(asked.saturating_mul(2))
}

impl PermissionBackend {
    /// `inner` with `rules` enforced.
    pub fn new(inner: Arc<dyn Backend>, rules: PathRules) -> Self {
        Self {
            inner,
            rules: Arc::new(rules),
        }
    }

    /// The wrapped backend.
    pub fn inner(&self) -> &Arc<dyn Backend> {
        &self.inner
    }

    /// The rules enforced.
    pub fn rules(&self) -> &PathRules {
        &self.rules
    }

    fn check_visible(&self, path: &VPath) -> Result<()> {
        match self.rules.hidden_by(path) {
            Some(rule) => Err(PathRules::refusal(path, rule)),
            None => Ok(()),
        }
    }

    fn check_mutable(&self, path: &VPath) -> Result<()> {
        match self.rules.locked_by(path) {
            Some(rule) => Err(PathRules::refusal(path, rule)),
            None => Ok(()),
        }
    }

    fn visible(&self, path: &str) -> bool {
        VPath::parse(path).is_ok_and(|p| !self.rules.hides(&p))
    }

    fn limit(&self, requested: usize) -> usize {
        self.inner.capabilities().limits.results(requested)
    }

    /// Refuses `delete_tree(path)` when something beneath it is covered.
    async fn check_tree(&self, ctx: &FileContext, path: &VPath) -> Result<()> {
        if !self.rules.may_cover_beneath(path) {
            return Ok(());
        }
        let page = self.inner.capabilities().limits.max_results;
        let mut stack = vec![path.clone()];
        while let Some(dir) = stack.pop() {
            let listing = match self.inner.ls(ctx, &dir, page).await {
                Ok(listing) => listing,
                // A file, or nothing: the inner delete_tree says what it is.
                Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
                    continue;
                }
                Err(e) => return Err(e),
            };
            if listing.truncated {
                return Err(Error::refusal_at(
                    ErrorKind::PermissionDenied,
                    path,
                    "",
                    format!(
                        " holds a directory of more than {page} entries, too many to check against the permission rules; delete its parts one by one."
                    ),
                ));
            }
            for entry in listing.entries {
                let child = VPath::parse(&entry.path).map_err(|e| {
                    Error::failure("a listing named an entry that is no valid path", e)
                })?;
                if let Some(rule) = self.rules.locked_by(&child) {
                    return Err(Error::refusal_at(
                        ErrorKind::PermissionDenied,
                        path,
                        "",
                        format!(
                            " holds a path denied by the permission rule {rule}; it cannot be deleted whole."
                        ),
                    ));
                }
                if entry.is_dir && self.rules.may_cover_beneath(&child) {
                    stack.push(child);
                }
            }
        }
        Ok(())
    }
}

#[async_trait]
impl Backend for PermissionBackend {
    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    fn locks(&self, ctx: &FileContext, path: &VPath) -> Vec<LockKey> {
        self.inner.locks(ctx, path)
    }

    fn lock_scope(&self) -> &str {
        self.inner.lock_scope()
    }

    async fn ls(&self, ctx: &FileContext, dir: &VPath, limit: usize) -> Result<Listing> {
        self.check_visible(dir)?;
        let limit = self.limit(limit);
        let mut asked = limit.saturating_add(1);
        loop {
            let got = self.inner.ls(ctx, dir, asked).await?;
            match page(got.entries, got.truncated, asked, limit, |e| {
                self.visible(&e.path)
            }) {
                Page::Done(entries, truncated) => return Ok(Listing { entries, truncated }),
                Page::More(next) => asked = next,
            }
        }
    }

    async fn read(
        &self,
        ctx: &FileContext,
        path: &VPath,
        offset: usize,
        limit: usize,
    ) -> Result<LineWindow> {
        self.check_visible(path)?;
        self.inner.read(ctx, path, offset, limit).await
    }

    async fn read_bytes(&self, ctx: &FileContext, path: &VPath) -> Result<Vec<u8>> {
        self.check_visible(path)?;
        self.inner.read_bytes(ctx, path).await
    }

    async fn write(&self, ctx: &FileContext, path: &VPath, text: &str) -> Result<WriteResult> {
        self.check_mutable(path)?;
        self.inner.write(ctx, path, text).await
    }

    async fn write_bytes(
        &self,
        ctx: &FileContext,
        path: &VPath,
        bytes: &[u8],
    ) -> Result<WriteResult> {
        self.check_mutable(path)?;
        self.inner.write_bytes(ctx, path, bytes).await
    }

    async fn edit(
        &self,
        ctx: &FileContext,
        path: &VPath,
        old: &str,
        new: &str,
        replace_all: bool,
    ) -> Result<EditResult> {
        self.check_mutable(path)?;
        self.inner.edit(ctx, path, old, new, replace_all).await
    }

    async fn delete(&self, ctx: &FileContext, path: &VPath) -> Result<()> {
        self.check_mutable(path)?;
        self.inner.delete(ctx, path).await
    }

    async fn make_dir(&self, ctx: &FileContext, path: &VPath, parents: bool) -> Result<()> {
        self.check_mutable(path)?;
        self.inner.make_dir(ctx, path, parents).await
    }

    async fn delete_tree(&self, ctx: &FileContext, path: &VPath) -> Result<()> {
        if !path.is_root() {
            self.check_mutable(path)?;
            self.check_tree(ctx, path).await?;
        }
        self.inner.delete_tree(ctx, path).await
    }

    async fn glob(
        &self,
        ctx: &FileContext,
        pattern: &str,
        under: &VPath,
        limit: usize,
    ) -> Result<GlobResult> {
        self.check_visible(under)?;
        let limit = self.limit(limit);
        let mut asked = limit.saturating_add(1);
        loop {
            let got = self.inner.glob(ctx, pattern, under, asked).await?;
            match page(got.files, got.truncated, asked, limit, |f| {
                self.visible(&f.path)
            }) {
                Page::Done(files, truncated) => return Ok(GlobResult { files, truncated }),
                Page::More(next) => asked = next,
            }
        }
    }

    async fn grep(
        &self,
        ctx: &FileContext,
        query: &GrepQuery,
        under: &VPath,
        limit: usize,
    ) -> Result<GrepResult> {
        self.check_visible(under)?;
        let limit = self.limit(limit);
        let mut asked = limit.saturating_add(1);
        loop {
            let got = self.inner.grep(ctx, query, under, asked).await?;
            match page(got.matches, got.truncated, asked, limit, |m| {
                self.visible(&m.path)
            }) {
                Page::Done(matches, truncated) => return Ok(GrepResult { matches, truncated }),
                Page::More(next) => asked = next,
            }
        }
    }

    fn as_sandbox(&self) -> Option<&dyn Sandbox> {
        self.inner.as_sandbox().map(|_| self as &dyn Sandbox)
    }
}

#[async_trait]
impl Sandbox for PermissionBackend {
    /// Refused while any path rule is set (a command reads and writes files
    /// the rules cannot see); otherwise the inner sandbox runs it.
    async fn execute(
        &self,
        ctx: &FileContext,
        command: &str,
        timeout: Option<Duration>,
    ) -> Result<ExecuteResponse> {
        if let Some(rule) = self.rules.texts().next() {
            return Err(Error::refusal(
                ErrorKind::PermissionDenied,
                format!(
                    "commands cannot be checked against the permission rule {rule} from outside the sandbox, so execute is refused while that rule holds."
                ),
            ));
        }
        match self.inner.as_sandbox() {
            Some(sandbox) => sandbox.execute(ctx, command, timeout).await,
            None => Err(Error::unsupported("running commands")),
        }
    }
}
