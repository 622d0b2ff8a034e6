//! `ObjectStoreOptions`: the knobs of an `ObjectStoreBackend` (root prefix, limits, conditional puts, retries, key limits).

use std::time::Duration;

use burrow_backend::{DEFAULT_MAX_FILE_SIZE, DEFAULT_MAX_RESULTS, Limits};

/// The longest object key Amazon S3 accepts, in bytes.
pub const S3_MAX_KEY_BYTES: usize = 1024;
/// The longest file name most host file systems accept, in bytes.
pub const HOST_MAX_NAME_BYTES: usize = 255;

/// How an [`crate::ObjectStoreBackend`] behaves.
///
/// The defaults suit a store that supports conditional puts (InMemory, S3,
/// GCS, Azure). [`crate::ObjectStoreBackend::local`] turns conditional puts
/// off, since `LocalFileSystem` cannot do `PutMode::Update`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ObjectStoreOptions {
    /// The key prefix every object of this backend lives beneath ("" for the
    /// whole bucket), e.g. "agents/prod".
    pub root: String,
    /// Largest file, in bytes, that may be written, read, edited or searched
    /// (default 10 MiB). Larger objects are refused with TooLarge by reads
    /// (before their body is downloaded) and skipped by grep.
    pub max_file_size: u64,
    /// Most entries one ls, glob or grep returns (default 10,000).
    pub max_results: usize,
    /// Replace existing objects with `PutMode::Update` (If-Match on the ETag
    /// or version), so a concurrent change from another process is never
    /// overwritten unseen (default on). Turn it off only for a store that
    /// cannot do conditional updates; the capabilities then say
    /// `conditional_writes: false`, and an edit racing another process may
    /// lose that process's update (last writer wins).
    pub conditional_puts: bool,
    /// Create new objects with `PutMode::Create` (If-None-Match: *), so two
    /// processes creating one file cannot both think they made it (default
    /// on). Effect keys need it (capabilities `effect_keys`): their records
    /// are claimed with a create-only put.
    pub conditional_creates: bool,
    /// How many times a mutation that lost a race (a precondition failed) is
    /// tried in all before it is refused with Conflict (default 10).
    pub max_attempts: u32,
    /// The first pause before a retry after a lost race; each later pause
    /// doubles, up to [`ObjectStoreOptions::max_backoff`], with jitter (default 5 ms).
    pub initial_backoff: Duration,
    /// The longest pause between two attempts (default 250 ms).
    pub max_backoff: Duration,
    /// How long a pending effect record (a change with an effect key still
    /// being applied) blocks a retry with the same key before the retry
    /// takes it over, assuming the first process died (default 120 s; see
    /// [`crate::replay`]).
    pub pending_effect_ttl: Duration,
    /// The longest object key the store accepts (S3: 1024 bytes); a path
    /// whose key would be longer is refused with InvalidPath (default: no limit).
    pub max_key_bytes: Option<usize>,
    /// The longest key segment the store accepts (a host file system: 255
    /// bytes); a longer escaped name is refused with InvalidPath (default: no limit).
    pub max_segment_bytes: Option<usize>,
    /// How many requests one operation keeps in flight at once (ancestor
    /// checks, grep's reads; default 8).
    pub concurrency: usize,
}

impl Default for ObjectStoreOptions {
    fn default() -> Self {
        Self {
            root: String::new(),
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            max_results: DEFAULT_MAX_RESULTS,
            conditional_puts: true,
            conditional_creates: true,
            max_attempts: 10,
            initial_backoff: Duration::from_millis(5),
            max_backoff: Duration::from_millis(250),
            pending_effect_ttl: Duration::from_secs(120),
            max_key_bytes: None,
            max_segment_bytes: None,
            concurrency: 8,
        }
    }
}

impl ObjectStoreOptions {
    /// Sets `root`.
    pub fn with_root(mut self, root: impl Into<String>) -> Self {
        self.root = root.into();
        self
    }

    /// Sets `max_file_size`.
    pub fn with_max_file_size(mut self, bytes: u64) -> Self {
        self.max_file_size = bytes;
        self
    }

    /// Sets `max_results`.
    pub fn with_max_results(mut self, n: usize) -> Self {
        self.max_results = n;
        self
    }

    /// Sets `conditional_puts`.
    pub fn with_conditional_puts(mut self, on: bool) -> Self {
        self.conditional_puts = on;
        self
    }

    /// Sets `conditional_creates`.
    pub fn with_conditional_creates(mut self, on: bool) -> Self {
        self.conditional_creates = on;
        self
    }

    /// Sets `max_attempts` (at least one).
    pub fn with_max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = n.max(1);
        self
    }

    /// Sets `initial_backoff` and `max_backoff`.
    pub fn with_backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.initial_backoff = initial;
        self.max_backoff = max.max(initial);
        self
    }

    /// Sets `pending_effect_ttl`.
    pub fn with_pending_effect_ttl(mut self, ttl: Duration) -> Self {
        self.pending_effect_ttl = ttl;
        self
    }

    /// Sets `max_key_bytes`.
    pub fn with_max_key_bytes(mut self, max: Option<usize>) -> Self {
        self.max_key_bytes = max;
        self
    }

    /// Sets `max_segment_bytes`.
    pub fn with_max_segment_bytes(mut self, max: Option<usize>) -> Self {
        self.max_segment_bytes = max;
        self
    }

    /// Sets `concurrency` (at least one).
    pub fn with_concurrency(mut self, n: usize) -> Self {
        self.concurrency = n.max(1);
        self
    }

    /// The limits these options impose.
    pub fn limits(&self) -> Limits {
        Limits {
            max_file_size: self.max_file_size,
            max_results: self.max_results,
        }
    }
}
