//! What a backend supports (`Capabilities`) and how big its answers may get (`Limits`).

use serde::{Deserialize, Serialize};

/// Default largest file, 10 MiB.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 10 * 1024 * 1024;
/// Default most entries one listing, glob or grep may return.
pub const DEFAULT_MAX_RESULTS: usize = 10_000;

/// What a backend supports, so scenarios and tools can gate on it and skip visibly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Capabilities {
    /// The backend is a [`crate::Sandbox`]: `execute` runs commands.
    pub exec: bool,
    /// Directories exist on their own: an empty directory can be listed and deleted.
    pub empty_dirs: bool,
    /// `make_dir` makes a directory that stays, empty, until it is deleted
    /// (on a backend without `empty_dirs`, a made directory is the one kind
    /// of empty directory it keeps). Absent in older JSON: false.
    #[serde(default)]
    pub make_dir: bool,
    /// Listings report `modified_at`.
    pub modified_at: bool,
    /// Files are scoped by `FileContext::tenant`.
    pub tenants: bool,
    /// Mutations carrying an effect key are recorded and replayed.
    pub effect_keys: bool,
    /// Concurrent edits of one file from several handles (processes, machines) never lose an update.
    pub conditional_writes: bool,
    /// The backend can hold symbolic links (a real file system).
    pub symlinks: bool,
    /// The bounds this backend applies.
    pub limits: Limits,
}

impl Capabilities {
    /// The capabilities of a plain in-process store: nothing optional.
    pub fn minimal() -> Self {
        Self {
            exec: false,
            empty_dirs: false,
            make_dir: false,
            modified_at: false,
            tenants: false,
            effect_keys: false,
            conditional_writes: false,
            symlinks: false,
            limits: Limits::default(),
        }
    }

    /// Sets `exec`.
    pub fn with_exec(mut self, on: bool) -> Self {
        self.exec = on;
        self
    }
    /// Sets `empty_dirs`.
    pub fn with_empty_dirs(mut self, on: bool) -> Self {
        self.empty_dirs = on;
        self
    }
    /// Sets `make_dir`.
    pub fn with_make_dir(mut self, on: bool) -> Self {
        self.make_dir = on;
        self
    }
    /// Sets `modified_at`.
    pub fn with_modified_at(mut self, on: bool) -> Self {
        self.modified_at = on;
        self
    }
    /// Sets `tenants`.
    pub fn with_tenants(mut self, on: bool) -> Self {
        self.tenants = on;
        self
    }
    /// Sets `effect_keys`.
    pub fn with_effect_keys(mut self, on: bool) -> Self {
        self.effect_keys = on;
        self
    }
    /// Sets `conditional_writes`.
    pub fn with_conditional_writes(mut self, on: bool) -> Self {
        self.conditional_writes = on;
        self
    }
    /// Sets `symlinks`.
    pub fn with_symlinks(mut self, on: bool) -> Self {
        self.symlinks = on;
        self
    }
    /// Sets `limits`.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }
}

/// The bounds a backend applies on top of the caller's `limit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Largest file, in bytes, that may be written or read.
    pub max_file_size: u64,
    /// Most entries one ls, glob or grep returns, whatever the caller's limit.
    pub max_results: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            max_results: DEFAULT_MAX_RESULTS,
        }
    }
}

impl Limits {
    /// The effective limit for a caller who asked for `requested` results.
    pub fn results(&self, requested: usize) -> usize {
        requested.min(self.max_results)
    }
}
