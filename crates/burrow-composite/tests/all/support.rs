//! Test helpers: building composites over StateBackends, a `Rebase` adapter, and a recording sandbox.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use burrow_backend::{
    Backend, Capabilities, EditResult, Error, ExecuteResponse, FileContext, GlobResult, GrepQuery,
    GrepResult, LineWindow, Listing, LockKey, Result, Sandbox, VPath, WriteResult,
};
use burrow_composite::CompositeBackend;
use burrow_state::StateBackend;

pub fn p(s: &str) -> VPath {
    VPath::parse(s).unwrap()
}

pub fn ctx() -> FileContext {
    FileContext::default()
}

/// A composite over a fresh default StateBackend with a fresh StateBackend at each prefix.
/// Returns the composite, the default and the mounted backends (in `prefixes` order).
pub fn composite(prefixes: &[&str]) -> (CompositeBackend, StateBackend, Vec<StateBackend>) {
    let default = StateBackend::new();
    let mounts: Vec<StateBackend> = prefixes.iter().map(|_| StateBackend::new()).collect();
    let mut builder = CompositeBackend::builder(Arc::new(default.clone()));
    for (prefix, backend) in prefixes.iter().zip(&mounts) {
        builder = builder.mount(*prefix, Arc::new(backend.clone()));
    }
    (builder.build().unwrap(), default, mounts)
}

pub async fn put(b: &dyn Backend, path: &str, text: &str) {
    b.write(&ctx(), &p(path), text).await.unwrap();
}

pub fn paths<T>(items: &[T], path: impl Fn(&T) -> &str) -> Vec<String> {
    items.iter().map(|i| path(i).to_owned()).collect()
}

/// A backend whose root is `prefix` of `inner`: every path is prefixed on the
/// way in and stripped on the way out (like object_store's PrefixStore).
/// Used to run the conformance scenarios, which use absolute paths, inside a mount.
pub struct Rebase {
    pub inner: Arc<dyn Backend>,
    pub prefix: VPath,
}

impl Rebase {
    fn inward(&self, path: &VPath) -> VPath {
        path.under_prefix(&self.prefix)
    }

    fn out(&self, path: &str) -> String {
        VPath::parse(path)
            .ok()
            .and_then(|v| v.strip_prefix(&self.prefix))
            .map(|v| v.to_string())
            .unwrap_or_else(|| path.to_owned())
    }

    /// The refusal with `prefix` removed from the paths its message names.
    fn err(&self, e: Error) -> Error {
        if !e.is_refusal() {
            return e;
        }
        let prefix = self.prefix.as_str();
        let message = e
            .message()
            .split(' ')
            .map(|word| match word.strip_prefix(prefix) {
                Some(rest)
                    if rest.is_empty() || rest.starts_with(['/', '.', ',', ';', ':', '"']) =>
                {
                    if rest.starts_with('/') {
                        rest.to_owned()
                    } else {
                        format!("/{rest}")
                    }
                }
                _ => word.to_owned(),
            })
            .collect::<Vec<_>>()
            .join(" ");
        Error::refusal(e.kind(), message)
    }
}

#[async_trait]
impl Backend for Rebase {
    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }
    fn locks(&self, ctx: &FileContext, path: &VPath) -> Vec<LockKey> {
        self.inner.locks(ctx, &self.inward(path))
    }
    async fn ls(&self, ctx: &FileContext, dir: &VPath, limit: usize) -> Result<Listing> {
        let mut l = self
            .inner
            .ls(ctx, &self.inward(dir), limit)
            .await
            .map_err(|e| self.err(e))?;
        for e in &mut l.entries {
            e.path = self.out(&e.path);
        }
        Ok(l)
    }
    async fn read(
        &self,
        ctx: &FileContext,
        path: &VPath,
        offset: usize,
        limit: usize,
    ) -> Result<LineWindow> {
        self.inner
            .read(ctx, &self.inward(path), offset, limit)
            .await
            .map_err(|e| self.err(e))
    }
    async fn read_bytes(&self, ctx: &FileContext, path: &VPath) -> Result<Vec<u8>> {
        self.inner
            .read_bytes(ctx, &self.inward(path))
            .await
            .map_err(|e| self.err(e))
    }
    async fn write(&self, ctx: &FileContext, path: &VPath, text: &str) -> Result<WriteResult> {
        let mut r = self
            .inner
            .write(ctx, &self.inward(path), text)
            .await
            .map_err(|e| self.err(e))?;
        r.path = r.path.map(|p| self.out(&p));
        Ok(r)
    }
    async fn write_bytes(
        &self,
        ctx: &FileContext,
        path: &VPath,
        bytes: &[u8],
    ) -> Result<WriteResult> {
        let mut r = self
            .inner
            .write_bytes(ctx, &self.inward(path), bytes)
            .await
            .map_err(|e| self.err(e))?;
        r.path = r.path.map(|p| self.out(&p));
        Ok(r)
    }
    async fn edit(
        &self,
        ctx: &FileContext,
        path: &VPath,
        old: &str,
        new: &str,
        all: bool,
    ) -> Result<EditResult> {
        let mut r = self
            .inner
            .edit(ctx, &self.inward(path), old, new, all)
            .await
            .map_err(|e| self.err(e))?;
        r.path = r.path.map(|p| self.out(&p));
        Ok(r)
    }
    async fn delete(&self, ctx: &FileContext, path: &VPath) -> Result<()> {
        self.inner
            .delete(ctx, &self.inward(path))
            .await
            .map_err(|e| self.err(e))
    }
    async fn make_dir(&self, ctx: &FileContext, path: &VPath, parents: bool) -> Result<()> {
        self.inner
            .make_dir(ctx, &self.inward(path), parents)
            .await
            .map_err(|e| self.err(e))
    }
    async fn delete_tree(&self, ctx: &FileContext, path: &VPath) -> Result<()> {
        self.inner
            .delete_tree(ctx, &self.inward(path))
            .await
            .map_err(|e| self.err(e))
    }
    async fn glob(
        &self,
        ctx: &FileContext,
        pattern: &str,
        under: &VPath,
        limit: usize,
    ) -> Result<GlobResult> {
        let mut r = self
            .inner
            .glob(ctx, pattern, &self.inward(under), limit)
            .await
            .map_err(|e| self.err(e))?;
        for f in &mut r.files {
            f.path = self.out(&f.path);
        }
        Ok(r)
    }
    async fn grep(
        &self,
        ctx: &FileContext,
        query: &GrepQuery,
        under: &VPath,
        limit: usize,
    ) -> Result<GrepResult> {
        let mut r = self
            .inner
            .grep(ctx, query, &self.inward(under), limit)
            .await
            .map_err(|e| self.err(e))?;
        for m in &mut r.matches {
            m.path = self.out(&m.path);
        }
        Ok(r)
    }
}

/// A StateBackend that also "runs" commands by answering with the command
/// and the tenant, so tests can see which sandbox a call reached.
pub struct EchoSandbox {
    pub files: StateBackend,
    pub name: &'static str,
}

#[async_trait]
impl Backend for EchoSandbox {
    fn capabilities(&self) -> Capabilities {
        self.files.capabilities().with_exec(true)
    }
    async fn ls(&self, ctx: &FileContext, dir: &VPath, limit: usize) -> Result<Listing> {
        self.files.ls(ctx, dir, limit).await
    }
    async fn read(
        &self,
        ctx: &FileContext,
        path: &VPath,
        offset: usize,
        limit: usize,
    ) -> Result<LineWindow> {
        self.files.read(ctx, path, offset, limit).await
    }
    async fn read_bytes(&self, ctx: &FileContext, path: &VPath) -> Result<Vec<u8>> {
        self.files.read_bytes(ctx, path).await
    }
    async fn write_bytes(
        &self,
        ctx: &FileContext,
        path: &VPath,
        bytes: &[u8],
    ) -> Result<WriteResult> {
        self.files.write_bytes(ctx, path, bytes).await
    }
    async fn edit(
        &self,
        ctx: &FileContext,
        path: &VPath,
        old: &str,
        new: &str,
        all: bool,
    ) -> Result<EditResult> {
        self.files.edit(ctx, path, old, new, all).await
    }
    async fn delete(&self, ctx: &FileContext, path: &VPath) -> Result<()> {
        self.files.delete(ctx, path).await
    }
    async fn make_dir(&self, ctx: &FileContext, path: &VPath, parents: bool) -> Result<()> {
        self.files.make_dir(ctx, path, parents).await
    }
    async fn delete_tree(&self, ctx: &FileContext, path: &VPath) -> Result<()> {
        self.files.delete_tree(ctx, path).await
    }
    async fn glob(
        &self,
        ctx: &FileContext,
        pattern: &str,
        under: &VPath,
        limit: usize,
    ) -> Result<GlobResult> {
        self.files.glob(ctx, pattern, under, limit).await
    }
    async fn grep(
        &self,
        ctx: &FileContext,
        query: &GrepQuery,
        under: &VPath,
        limit: usize,
    ) -> Result<GrepResult> {
        self.files.grep(ctx, query, under, limit).await
    }
    fn as_sandbox(&self) -> Option<&dyn Sandbox> {
        Some(self)
    }
}

#[async_trait]
impl Sandbox for EchoSandbox {
    async fn execute(
        &self,
        ctx: &FileContext,
        command: &str,
        _timeout: Option<Duration>,
    ) -> Result<ExecuteResponse> {
        Ok(ExecuteResponse {
            output: format!("{} ran {command} for {}", self.name, ctx.tenant),
            exit_code: Some(0),
            truncated: false,
        })
    }
}
