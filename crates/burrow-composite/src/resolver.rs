//! Per-tenant backends: a `BackendResolver` builds the backend for a `FileContext`, and `ResolvingBackend` routes each call to it.

use std::collections::{BTreeMap, HashMap};
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
///   `capacity` of them; past that the least recently used one that no call
///   is using is dropped (and resolved again if it is asked for). An entry a
///   call is using (every method of this backend, and each [`Resolved`]
///   handed out, holds it) is never dropped: while every entry is in use the
///   cache holds more than `capacity`. Concurrent first calls for one key
///   resolve once. A failed resolution is not cached: the next call tries
///   again.
/// - **What a resolver must return.** The cache is a cache, not the owner of
///   anyone's files: an entry that was dropped is resolved again, and what
///   the resolver returns then is all that is seen. So a resolver must return
///   a backend whose files outlive the value: a handle on durable storage (a
///   folder, a SQLite file, a bucket), or an in-memory backend that the
///   resolver itself keeps and hands out again for the same key. A resolver
///   that builds a fresh in-memory `StateBackend` per call gives a tenant's
///   files the life of a cache entry.
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
    cache: Arc<Mutex<Cache>>,
}

/// Where a key's backend is resolved once.
type Cell = Arc<OnceCell<Arc<dyn Backend>>>;

/// One cached (tenant, run id).
struct Slot {
    cell: Cell,
    /// When it was last used (a tick of [`Cache::clock`]).
    used: u64,
    /// How many calls hold it now.
    leases: usize,
}

#[derive(Default)]
struct Cache {
    slots: HashMap<Key, Slot>,
    /// Keys by last use, oldest first.
    by_use: BTreeMap<u64, Key>,
    clock: u64,
}

impl Cache {
    /// Marks `key` used now and leased once more; false when it is not cached.
    fn touch(&mut self, key: &Key) -> bool {
        self.clock += 1;
        let now = self.clock;
        let Some(slot) = self.slots.get_mut(key) else {
            return false;
        };
        self.by_use.remove(&slot.used);
        slot.used = now;
        slot.leases += 1;
        self.by_use.insert(now, key.clone());
        true
    }

    /// Drops least recently used entries that no call holds until fewer
    /// than `capacity` remain (or only entries in use are left).
    fn make_room(&mut self, capacity: usize) {
        while self.slots.len() >= capacity {
            let idle = self
                .by_use
                .iter()
                .find(|(_, key)| self.slots.get(*key).is_some_and(|s| s.leases == 0))
                .map(|(used, key)| (*used, key.clone()));
            let Some((used, key)) = idle else {
                return;
            };
            self.by_use.remove(&used);
            self.slots.remove(&key);
        }
    }

    fn remove(&mut self, key: &Key) {
        if let Some(slot) = self.slots.remove(key) {
            self.by_use.remove(&slot.used);
        }
    }
}

/// A resolved backend, held: while it lives its cache entry is not dropped.
pub struct Resolved {
    backend: Arc<dyn Backend>,
    _lease: Lease,
}

impl fmt::Debug for Resolved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Resolved")
    }
}

impl std::ops::Deref for Resolved {
    type Target = Arc<dyn Backend>;
    fn deref(&self) -> &Arc<dyn Backend> {
        &self.backend
    }
}

/// One call's hold on a cache entry; released when dropped.
struct Lease {
    cache: Arc<Mutex<Cache>>,
    key: Key,
    /// The entry's cell, so a lease on a forgotten entry never counts off a newer one.
    cell: Cell,
}

impl Drop for Lease {
    fn drop(&mut self) {
        let mut cache = self
            .cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(slot) = cache.slots.get_mut(&self.key)
            && Arc::ptr_eq(&slot.cell, &self.cell)
        {
            slot.leases = slot.leases.saturating_sub(1);
        }
    }
}

impl fmt::Debug for ResolvingBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cached = self.cache.lock().map(|c| c.slots.len()).ok();
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
            cache: Arc::new(Mutex::new(Cache::default())),
        }
    }

    /// Keeps at most `capacity` resolved backends (at least one) that no call is using.
    pub fn with_capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity.max(1);
        self
    }

    /// The backend for `ctx`, resolved now or taken from the cache; its
    /// entry stays cached while the returned value lives.
    pub async fn backend(&self, ctx: &FileContext) -> Result<Resolved> {
        let (cell, lease) = self.lease(ctx)?;
        let backend = cell
            .get_or_try_init(|| self.resolver.resolve(ctx))
            .await
            .cloned()?;
        Ok(Resolved {
            backend,
            _lease: lease,
        })
    }

    /// Drops the cached backend of `ctx`'s (tenant, run id), e.g. when a run
    /// ends. Calls holding it keep it until they end.
    pub fn forget(&self, ctx: &FileContext) -> Result<()> {
        self.lock()?.remove(&key(ctx));
        Ok(())
    }

    /// How many backends are cached.
    pub fn cached(&self) -> Result<usize> {
        Ok(self.lock()?.slots.len())
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, Cache>> {
        self.cache
            .lock()
            .map_err(|_| Error::failure_msg("the resolver cache's lock was poisoned by a panic."))
    }

    /// The cell of `ctx`'s key, made if missing, and a lease on it.
    fn lease(&self, ctx: &FileContext) -> Result<(Cell, Lease)> {
        let key = key(ctx);
        let mut cache = self.lock()?;
        if !cache.touch(&key) {
            cache.make_room(self.capacity);
            cache.slots.insert(
                key.clone(),
                Slot {
                    cell: Arc::new(OnceCell::new()),
                    used: 0,
                    leases: 0,
                },
            );
            cache.touch(&key);
        }
        let cell = cache
            .slots
            .get(&key)
            .map(|slot| slot.cell.clone())
            .ok_or_else(|| Error::failure_msg("the resolver cache lost an entry it just made."))?;
        let lease = Lease {
            cache: Arc::clone(&self.cache),
            key,
            cell: cell.clone(),
        };
        Ok((cell, lease))
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

    async fn make_dir(&self, ctx: &FileContext, path: &VPath, parents: bool) -> Result<()> {
        self.backend(ctx).await?.make_dir(ctx, path, parents).await
    }

    async fn delete_tree(&self, ctx: &FileContext, path: &VPath) -> Result<()> {
        self.backend(ctx).await?.delete_tree(ctx, path).await
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
