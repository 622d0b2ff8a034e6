//! What a backend's tests hand the suite (`Fixture`) and what each scenario is given besides the backend (`Ctx`).

use std::any::Any;
use std::fmt;
use std::io;
use std::path::Path;
use std::sync::Arc;

use burrow_backend::{Backend, Capabilities, FileContext, VPath};

use crate::outcome::ScenarioError;

/// The tenant the scenarios act as.
pub const TENANT: &str = "conformance-a";
/// The second tenant, used by the isolation scenarios.
pub const OTHER_TENANT: &str = "conformance-b";

/// Host-side powers a fixture may lend the suite, for scenarios that need a
/// real file system beneath the backend (symbolic links that lead out, FIFOs).
///
/// A fixture of `FsBackend` implements this over its root folder; a backend
/// with no host beneath it gives none, and the scenarios that need one skip.
pub trait HostAccess: Send + Sync + 'static {
    /// Makes `link` (a virtual path; its parent exists) a symbolic link to the host path `target`.
    fn symlink(&self, link: &VPath, target: &Path) -> io::Result<()>;

    /// Makes a FIFO (named pipe) at `path` (a virtual path; its parent exists).
    fn fifo(&self, path: &VPath) -> io::Result<()> {
        let _ = path;
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this fixture cannot make FIFOs",
        ))
    }

    /// The host path of the backend's root, so scenarios can check that no message shows it.
    fn host_root(&self) -> Option<String> {
        None
    }
}

/// Powers over a backend's storage that a backend's test may lend the suite, for
/// the `# Behavior` sentences the trait alone cannot show: a file already past the
/// max file size (no mutation can make one) and the `created_at` a file keeps.
///
/// Both are optional: a method left at its default makes the scenario that needs
/// it skip (`limits_read_past_max_size_is_too_large`,
/// `write_replace_keeps_created_at`), which the backend's `conformance_suite!`
/// must then declare. Every fixture in this workspace lends `plant`; those of
/// `StateBackend`, SQLite and the composite lend `created_at` too.
pub trait StoreAccess: Send + Sync + 'static {
    /// A backend like the fixture's (same kind, limits and tenant view) whose
    /// storage holds exactly one file, `bytes` at `path` (its parents implied),
    /// stored as they are even when they are past the max file size.
    ///
    /// A backend whose storage can be written beneath it (a folder, a database)
    /// may plant the file into the fixture's own backend and return that. The
    /// default plants nothing: `Unsupported`, and the scenario skips.
    fn plant(&self, path: &VPath, bytes: &[u8]) -> io::Result<Arc<dyn Backend>> {
        let _ = (path, bytes);
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this fixture cannot plant files past the max file size",
        ))
    }

    /// The `created_at` the fixture's backend keeps for the file at `path`, as
    /// the store renders it; `None` when the file is missing or the fixture
    /// cannot tell (the default: the scenario skips).
    fn created_at(&self, path: &VPath) -> Option<String> {
        let _ = path;
        None
    }
}

/// A backend ready for one scenario, with whatever must outlive it.
///
/// Built by the `make_fixture` function a backend's tests pass to
/// [`conformance_suite!`](crate::conformance_suite), once per scenario:
/// every scenario starts from a fresh, empty backend.
pub struct Fixture {
    // Declared first so it drops first, before the guard it may depend on.
    backend: Arc<dyn Backend>,
    ctx: FileContext,
    other: FileContext,
    root: VPath,
    host: Option<Arc<dyn HostAccess>>,
    store: Option<Arc<dyn StoreAccess>>,
    guard: Option<Box<dyn Any + Send>>,
}

impl fmt::Debug for Fixture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fixture")
            .field("ctx", &self.ctx)
            .field("other", &self.other)
            .field("root", &self.root)
            .field("host", &self.host.is_some())
            .field("store", &self.store.is_some())
            .field("guard", &self.guard.is_some())
            .finish_non_exhaustive()
    }
}

impl Fixture {
    /// A fixture of `backend`, acting as tenant [`TENANT`], working under "/".
    pub fn new(backend: Arc<dyn Backend>) -> Self {
        Fixture {
            backend,
            ctx: FileContext::for_tenant(TENANT).with_run_id("conformance"),
            other: FileContext::for_tenant(OTHER_TENANT).with_run_id("conformance"),
            root: VPath::root(),
            host: None,
            store: None,
            guard: None,
        }
    }

    /// A fixture of `backend` that keeps `guard` (a `TempDir`, a container
    /// handle) alive until the scenario ends; the backend is dropped first.
    pub fn with_guard(backend: Arc<dyn Backend>, guard: impl Any + Send) -> Self {
        Fixture {
            guard: Some(Box::new(guard)),
            ..Fixture::new(backend)
        }
    }

    /// Acts as `ctx` instead of tenant [`TENANT`] (an effect key in it is ignored).
    pub fn with_ctx(mut self, ctx: FileContext) -> Self {
        self.ctx = FileContext {
            effect_key: None,
            ..ctx
        };
        self
    }

    /// Uses `other` as the second tenant of the isolation scenarios.
    pub fn with_other_tenant(mut self, other: FileContext) -> Self {
        self.other = FileContext {
            effect_key: None,
            ..other
        };
        self
    }

    /// Works beneath `root` instead of "/" (e.g. a mount of a composite).
    ///
    /// `root` must hold nothing when the scenario starts. Scenarios about "/"
    /// itself (ls of an empty root, deleting or writing "/") still use "/".
    pub fn with_root(mut self, root: VPath) -> Self {
        self.root = root;
        self
    }

    /// Lends the suite host-side powers (symlinks, FIFOs) for the scenarios that need them.
    pub fn with_host(mut self, host: impl HostAccess) -> Self {
        self.host = Some(Arc::new(host));
        self
    }

    /// Lends the suite powers over the backend's storage (a file past the max
    /// file size, the created_at a file keeps) for the scenarios that need them.
    pub fn with_store(mut self, store: impl StoreAccess) -> Self {
        self.store = Some(Arc::new(store));
        self
    }

    /// The backend under test.
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    /// The context scenarios get, with the backend's capabilities read once.
    pub fn ctx(&self) -> Ctx {
        Ctx {
            ctx: self.ctx.clone(),
            other: self.other.clone(),
            root: self.root.clone(),
            caps: self.backend.capabilities(),
            host: self.host.clone(),
            store: self.store.clone(),
            shared: Some(Arc::clone(&self.backend)),
        }
    }
}

/// What a scenario is given besides the backend.
#[derive(Clone)]
pub struct Ctx {
    /// The context every operation of the scenario uses.
    pub ctx: FileContext,
    /// A second tenant, for the isolation scenarios.
    pub other: FileContext,
    /// The directory the scenario works beneath ("/" unless the fixture says otherwise).
    pub root: VPath,
    /// The backend's capabilities, read once before the scenario.
    pub caps: Capabilities,
    host: Option<Arc<dyn HostAccess>>,
    store: Option<Arc<dyn StoreAccess>>,
    shared: Option<Arc<dyn Backend>>,
}

impl fmt::Debug for Ctx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ctx")
            .field("ctx", &self.ctx)
            .field("other", &self.other)
            .field("root", &self.root)
            .field("caps", &self.caps)
            .field("host", &self.host.is_some())
            .field("store", &self.store.is_some())
            .finish()
    }
}

impl Ctx {
    /// The default context for `backend`: tenant [`TENANT`], root "/", no host access.
    ///
    /// For calling scenario functions directly; the macro builds it from the [`Fixture`].
    pub fn new(backend: &dyn Backend) -> Self {
        Ctx {
            ctx: FileContext::for_tenant(TENANT).with_run_id("conformance"),
            other: FileContext::for_tenant(OTHER_TENANT).with_run_id("conformance"),
            root: VPath::root(),
            caps: backend.capabilities(),
            host: None,
            store: None,
            shared: None,
        }
    }

    /// The same context with `backend` as the shared handle the concurrency
    /// scenarios spawn their tasks with (a [`Fixture`]'s context has it already).
    pub fn with_shared(mut self, backend: Arc<dyn Backend>) -> Self {
        self.shared = Some(backend);
        self
    }

    /// The backend as a shareable handle, for scenarios that spawn tasks.
    pub fn shared(&self) -> Result<Arc<dyn Backend>, ScenarioError> {
        self.shared.clone().ok_or_else(|| {
            ScenarioError::new(
                "this scenario spawns tasks and needs the backend as an Arc: build the Ctx \
                 with Fixture::ctx() or Ctx::with_shared",
            )
        })
    }

    /// The path `rel` beneath the scenario's root.
    #[track_caller]
    pub fn p(&self, rel: &str) -> Result<VPath, ScenarioError> {
        self.root.join(rel).map_err(|e| {
            ScenarioError::new(format!(
                "the scenario's own path {rel:?} does not parse: {}",
                e.message()
            ))
        })
    }

    /// The same context lending `store` (a [`Fixture`]'s context has the fixture's).
    pub fn with_store(mut self, store: Arc<dyn StoreAccess>) -> Self {
        self.store = Some(store);
        self
    }

    /// The powers over the backend's storage the fixture lends, if any.
    pub fn store(&self) -> Option<&dyn StoreAccess> {
        self.store.as_deref()
    }

    /// The host-side powers the fixture lends, if any.
    pub fn host(&self) -> Option<&dyn HostAccess> {
        self.host.as_deref()
    }
}
