//! How a database file is opened: durability, lock waits and the read pool (`SqliteOptions`).

use std::time::Duration;

/// The default time a writer waits for another writer's lock before failing.
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest busy timeout used (SQLite takes it in milliseconds as a C
/// `int`: about 24.8 days); longer ones, from code or configuration, are
/// clamped to it rather than overflowing.
pub const MAX_BUSY_TIMEOUT: Duration = Duration::from_millis(i32::MAX as u64);
/// The default number of idle read connections kept open.
pub const DEFAULT_READ_CONNECTIONS: usize = 4;
/// The default most bytes of the file each connection memory-maps (256 MiB).
pub const DEFAULT_MMAP_SIZE: u64 = 256 * 1024 * 1024;

/// SQLite's `PRAGMA synchronous`: how often a commit waits for the disk.
///
/// With WAL (always on here), `Normal` never corrupts the database and never
/// loses a commit when the *process* dies; after a power cut the last few
/// commits before the cut may roll back. `Full` waits for the disk on every
/// commit, so an acknowledged write survives a power cut too, at a cost per
/// write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Synchronous {
    /// No syncs at all: fastest, and a power cut may corrupt the database.
    Off,
    /// Sync at checkpoints only (the default).
    #[default]
    Normal,
    /// Sync the WAL on every commit.
    Full,
}

impl Synchronous {
    pub(crate) fn pragma_value(self) -> &'static str {
        match self {
            Synchronous::Off => "OFF",
            Synchronous::Normal => "NORMAL",
            Synchronous::Full => "FULL",
        }
    }
}

/// How a database file is opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqliteOptions {
    /// `PRAGMA synchronous` of every connection.
    pub synchronous: Synchronous,
    /// How long an operation waits for another connection's (or process's)
    /// lock before it fails. Waiting is silent; only running out of time is
    /// reported, as a failure. Clamped to [`MAX_BUSY_TIMEOUT`] on open.
    pub busy_timeout: Duration,
    /// How many idle read connections are kept for reuse.
    pub read_connections: usize,
    /// `PRAGMA mmap_size`: how much of the file reads may memory-map instead
    /// of copying pages through SQLite's cache (0 turns it off). A scan over
    /// many files (grep) is about twice as fast with it.
    pub mmap_size: u64,
}

impl SqliteOptions {
    /// These options with every duration within what SQLite and the clock can take.
    pub(crate) fn clamped(mut self) -> Self {
        self.busy_timeout = self.busy_timeout.min(MAX_BUSY_TIMEOUT);
        self
    }
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self {
            synchronous: Synchronous::Normal,
            busy_timeout: DEFAULT_BUSY_TIMEOUT,
            read_connections: DEFAULT_READ_CONNECTIONS,
            mmap_size: DEFAULT_MMAP_SIZE,
        }
    }
}
