//! Effect keys: each mutation a tool call makes carries SHA-256(run id, call id, operation, path) in its `FileContext`.
//!
//! A durable backend records the key with the mutation's outcome and
//! replays it when the same key comes again, so a retried call never writes
//! twice. The file tools of round 1 take one fixed `FileContext`; rather than
//! thread a context through each of them, [`EffectKeyed`] wraps their
//! backend and stamps every mutation made while a call runs (the call is
//! known through a task-local set by [`scope`]) with the run id and the key.
//! Calls outside a scope pass through unchanged.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use burrow_backend::{
    Backend, Capabilities, EditResult, ExecuteResponse, FileContext, GlobResult, GrepQuery,
    GrepResult, LineWindow, Listing, LockKey, Result, Sandbox, VPath, WriteResult,
};
use sha2::{Digest, Sha256};

use super::CallContext;

/// The effect key of `operation` on `path` made by call `call_id` of run
/// `run_id`: hex SHA-256 over the four fields, each prefixed by its length
/// (8 bytes, big-endian), so no two different field lists share a key.
pub fn effect_key(run_id: &str, call_id: &str, operation: &str, path: &str) -> String {
    let mut hasher = Sha256::new();
    for field in [run_id, call_id, operation, path] {
        hasher.update((field.len() as u64).to_be_bytes());
        hasher.update(field.as_bytes());
    }
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

tokio::task_local! {
    static CALL: CallContext;
}

/// Runs `fut` as the call `cx`: mutations through an [`EffectKeyed`] backend carry its keys.
pub(crate) async fn scope<F: Future>(cx: CallContext, fut: F) -> F::Output {
    CALL.scope(cx, fut).await
}

/// A backend wrapper that stamps each mutation made inside a tool call with
/// the call's run id and effect key (operations `write`, `edit`, `delete`).
pub struct EffectKeyed {
    inner: Arc<dyn Backend>,
}

impl std::fmt::Debug for EffectKeyed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EffectKeyed").finish_non_exhaustive()
    }
}

impl EffectKeyed {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn Backend>) -> Self {
        Self { inner }
    }

    /// The wrapped backend.
    pub fn inner(&self) -> &Arc<dyn Backend> {
        &self.inner
    }

    fn mutation(ctx: &FileContext, operation: &str, path: &VPath) -> FileContext {
        CALL.try_with(|cx| {
            let mut keyed = ctx.clone();
            keyed.run_id = Some(cx.run_id.to_string());
            keyed.effect_key = Some(effect_key(
                &cx.run_id,
                &cx.call_id,
                operation,
                path.as_str(),
            ));
            keyed
        })
        .unwrap_or_else(|_| ctx.clone())
    }
}

#[async_trait]
impl Backend for EffectKeyed {
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
        self.inner.ls(ctx, dir, limit).await
    }
    async fn read(
        &self,
        ctx: &FileContext,
        path: &VPath,
        offset: usize,
        limit: usize,
    ) -> Result<LineWindow> {
        self.inner.read(ctx, path, offset, limit).await
    }
    async fn read_bytes(&self, ctx: &FileContext, path: &VPath) -> Result<Vec<u8>> {
        self.inner.read_bytes(ctx, path).await
    }
    async fn write(&self, ctx: &FileContext, path: &VPath, text: &str) -> Result<WriteResult> {
        let ctx = Self::mutation(ctx, "write", path);
        self.inner.write(&ctx, path, text).await
    }
    async fn write_bytes(
        &self,
        ctx: &FileContext,
        path: &VPath,
        bytes: &[u8],
    ) -> Result<WriteResult> {
        let ctx = Self::mutation(ctx, "write", path);
        self.inner.write_bytes(&ctx, path, bytes).await
    }
    async fn edit(
        &self,
        ctx: &FileContext,
        path: &VPath,
        old: &str,
        new: &str,
        replace_all: bool,
    ) -> Result<EditResult> {
        let ctx = Self::mutation(ctx, "edit", path);
        self.inner.edit(&ctx, path, old, new, replace_all).await
    }
    async fn delete(&self, ctx: &FileContext, path: &VPath) -> Result<()> {
        let ctx = Self::mutation(ctx, "delete", path);
        self.inner.delete(&ctx, path).await
    }
    async fn glob(
        &self,
        ctx: &FileContext,
        pattern: &str,
        under: &VPath,
        limit: usize,
    ) -> Result<GlobResult> {
        self.inner.glob(ctx, pattern, under, limit).await
    }
    async fn grep(
        &self,
        ctx: &FileContext,
        query: &GrepQuery,
        under: &VPath,
        limit: usize,
    ) -> Result<GrepResult> {
        self.inner.grep(ctx, query, under, limit).await
    }
    fn as_sandbox(&self) -> Option<&dyn Sandbox> {
        self.inner.as_sandbox().map(|_| self as &dyn Sandbox)
    }
}

#[async_trait]
impl Sandbox for EffectKeyed {
    async fn execute(
        &self,
        ctx: &FileContext,
        command: &str,
        timeout: Option<Duration>,
    ) -> Result<ExecuteResponse> {
        match self.inner.as_sandbox() {
            Some(sandbox) => sandbox.execute(ctx, command, timeout).await,
            None => Err(burrow_backend::Error::unsupported(
                "running commands in this workspace",
            )),
        }
    }
}
