//! Per-tenant backends: a `BackendResolver` builds the backend for a `FileContext`, and `ResolvingBackend` routes each call to it.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use burrow_backend::{
    Backend, Capabilities, EditResult, Error, ExecuteResponse, FileContext, GlobResult, GrepQuery,
    GrepResult, LineWindow, Listing, Result, Sandbox, VPath, WriteResult,
};
use tokio::sync::OnceCell;

/// Builds (or finds) the backend that serves a caller.
///
/// A server that hosts many tenants, or gives each run its own scratch
/// mount, resolves the backend from the context: typically a
/// [`crate::CompositeBackend`] whose mounts depend on the tenant.
#[async_trait]
pub trait BackendResolver: Send + Sync {
    /// The backend for `ctx`.
    async fn resolve(&self, ctx: &FileContext) -> Result<Arc<dyn Backend>>;
}

/// A [`BackendResolver`] from an async function of the context.
///
/// ```
/// use std::sync::Arc;
/// use burrow_backend::{Backend, Capabilities, FileContext};
/// use burrow_composite::{CompositeBackend, ResolverFn, ResolvingBackend};
/// use burrow_state::StateBackend;
///
/// // Each tenant gets its own workspace with its own "/memories" mount.
/// let resolver = ResolverFn::new(|_ctx: FileContext| async move {
///     let composite = CompositeBackend::builder(Arc::new(StateBackend::new()))
///         .mount("/memories", Arc::new(StateBackend::new()))
///         .build()?;
///     Ok(Arc::new(composite) as Arc<dyn Backend>)
/// });
/// let caps = Capabilities::minimal().with_modified_at(true);
/// let backend = ResolvingBackend::new(Arc::new(resolver), caps);
/// # let _ = backend;
/// ```
pub struct ResolverFn<F, Fut> {
    f: F,
    _future: PhantomData<fn() -> Fut>,
}

impl<F, Fut> fmt::Debug for ResolverFn<F, Fut> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ResolverFn")
    }
}

impl<F, Fut> ResolverFn<F, Fut>
where
    F: Fn(FileContext) -> Fut + Send + Sync,
    Fut: Future<Output = Result<Arc<dyn Backend>>> + Send,
{
    /// A resolver that calls `f` with a copy of the context.
    pub fn new(f: F) -> Self {
        Self {
            f,
            _future: PhantomData,
        }
    }
}

#[async_trait]
impl<F, Fut> BackendResolver for ResolverFn<F, Fut>
where
    F: Fn(FileContext) -> Fut + Send + Sync,
    Fut: Future<Output = Result<Arc<dyn Backend>>> + Send,
{
    async fn resolve(&self, ctx: &FileContext) -> Result<Arc<dyn Backend>> {
        (self.f)(ctx.clone()).await
    }
}

/// The cache key: one backend per (tenant, run id).
type Key = (String, Option<String>);

/// How many resolved backends a [`ResolvingBackend`] keeps by default.
pub const DEFAULT_RESOLVER_CACHE: usize = 1024;

/// A backend that resolves the real backend per call from the caller's
/// (tenant, run id), so one process serves many tenants with different mounts.
///
/// # Semantics
///
/// - **Cache.** Resolved backends are kept per (tenant, run id), at most
///   `capacity` of them; past that the oldest is dropped (and resolved again
///   if it is asked for). Concurrent first calls for one key resolve once. A
///   failed resolution is not cached: the next call tries again.
/// - **Capabilities.** `capabilities()` is synchronous and constant, so the
///   caller states them at construction: what every resolved backend supports.
/// - **Locks.** Keys are (this backend's scope, tenant, path), the same
///   before and after a context is resolved, so mutations of one path by one
///   tenant always meet.
/// - **Execute.** When the stated capabilities say `exec`, `execute` goes to
///   the resolved backend's sandbox (Unsupported when it has none).
pub struct ResolvingBackend {
    resolver: Arc<dyn BackendResolver>,
    caps: Capabilities,
    capacity: usize,
    cache: Mutex<Cache>,
}

#[derive(Default)]
struct Cache {
    cells: HashMap<Key, Arc<OnceCell<Arc<dyn Backend>>>>,
    order: VecDeque<Key>,
}

impl fmt::Debug for ResolvingBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cached = self.cache.lock().map(|c| c.cells.len()).ok();
        f.debug_struct("ResolvingBackend")
            .field("capabilities", &self.caps)
            .field("capacity", &self.capacity)
            .field("cached", &cached)
            .finish()
    }
}

impl ResolvingBackend {
    /// Resolves with `resolver`; `capabilities` is what every resolved backend supports.
    pub fn new(resolver: Arc<dyn BackendResolver>, capabilities: Capabilities) -> Self {
        Self {
            resolver,
            caps: capabilities,
            capacity: DEFAULT_RESOLVER_CACHE,
            cache: Mutex::new(Cache::default()),
        }
    }

    /// Keeps at most `capacity` resolved backends (at least one).
    pub fn with_capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity.max(1);
        self
    }

    /// The backend for `ctx`, resolved now or taken from the cache.
    pub async fn backend(&self, ctx: &FileContext) -> Result<Arc<dyn Backend>> {
        let cell = self.cell(ctx)?;
        cell.get_or_try_init(|| self.resolver.resolve(ctx))
            .await
            .cloned()
    }

    /// Drops the cached backend of `ctx`'s (tenant, run id), e.g. when a run ends.
    pub fn forget(&self, ctx: &FileContext) -> Result<()> {
        let key = key(ctx);
        let mut cache = self.lock()?;
        cache.cells.remove(&key);
        cache.order.retain(|k| *k != key);
        Ok(())
    }

    /// How many backends are cached.
    pub fn cached(&self) -> Result<usize> {
        Ok(self.lock()?.cells.len())
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, Cache>> {
        self.cache
            .lock()
            .map_err(|_| Error::failure_msg("the resolver cache's lock was poisoned by a panic."))
    }

    fn cell(&self, ctx: &FileContext) -> Result<Arc<OnceCell<Arc<dyn Backend>>>> {
        let key = key(ctx);
        let mut cache = self.lock()?;
        if let Some(cell) = cache.cells.get(&key) {
            return Ok(cell.clone());
        }
        while cache.order.len() >= self.capacity {
            match cache.order.pop_front() {
                Some(old) => {
                    cache.cells.remove(&old);
                }
                None => break,
            }
        }
        let cell = Arc::new(OnceCell::new());
        cache.cells.insert(key.clone(), cell.clone());
        cache.order.push_back(key);
        Ok(cell)
    }
}

fn key(ctx: &FileContext) -> Key {
    (ctx.tenant.clone(), ctx.run_id.clone())
}

#[async_trait]
impl Backend for ResolvingBackend {
    fn capabilities(&self) -> Capabilities {
        self.caps.clone()
    }

    fn lock_scope(&self) -> &str {
        "resolving"
    }

    async fn ls(&self, ctx: &FileContext, dir: &VPath, limit: usize) -> Result<Listing> {
        self.backend(ctx).await?.ls(ctx, dir, limit).await
    }

    async fn read(
        &self,
        ctx: &FileContext,
        path: &VPath,
        offset: usize,
        limit: usize,
    ) -> Result<LineWindow> {
        self.backend(ctx)
            .await?
            .read(ctx, path, offset, limit)
            .await
    }

    async fn read_bytes(&self, ctx: &FileContext, path: &VPath) -> Result<Vec<u8>> {
        self.backend(ctx).await?.read_bytes(ctx, path).await
    }

    async fn write(&self, ctx: &FileContext, path: &VPath, text: &str) -> Result<WriteResult> {
        self.backend(ctx).await?.write(ctx, path, text).await
    }

    async fn write_bytes(
        &self,
        ctx: &FileContext,
        path: &VPath,
        bytes: &[u8],
    ) -> Result<WriteResult> {
        self.backend(ctx).await?.write_bytes(ctx, path, bytes).await
    }

    async fn edit(
        &self,
        ctx: &FileContext,
        path: &VPath,
        old: &str,
        new: &str,
        replace_all: bool,
    ) -> Result<EditResult> {
        self.backend(ctx)
            .await?
            .edit(ctx, path, old, new, replace_all)
            .await
    }

    async fn delete(&self, ctx: &FileContext, path: &VPath) -> Result<()> {
        self.backend(ctx).await?.delete(ctx, path).await
    }

    async fn glob(
        &self,
        ctx: &FileContext,
        pattern: &str,
        under: &VPath,
        limit: usize,
    ) -> Result<GlobResult> {
        self.backend(ctx)
            .await?
            .glob(ctx, pattern, under, limit)
            .await
    }

    async fn grep(
        &self,
        ctx: &FileContext,
        query: &GrepQuery,
        under: &VPath,
        limit: usize,
    ) -> Result<GrepResult> {
        self.backend(ctx)
            .await?
            .grep(ctx, query, under, limit)
            .await
    }

    fn as_sandbox(&self) -> Option<&dyn Sandbox> {
        if self.caps.exec { Some(self) } else { None }
    }
}

#[async_trait]
impl Sandbox for ResolvingBackend {
    async fn execute(
        &self,
        ctx: &FileContext,
        command: &str,
        timeout: Option<Duration>,
    ) -> Result<ExecuteResponse> {
        let backend = self.backend(ctx).await?;
        match backend.as_sandbox() {
            Some(sandbox) => sandbox.execute(ctx, command, timeout).await,
            None => Err(Error::unsupported("running commands for this tenant")),
        }
    }
}
