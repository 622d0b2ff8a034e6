//! `FsOptions`: the knobs of an `FsBackend` (limits, durability, ignore rules, threads).

use burrow_backend::{DEFAULT_MAX_FILE_SIZE, DEFAULT_MAX_RESULTS, Limits};

/// The name prefix of the temporary files writes go through.
///
/// No name is reserved (ADR 0061): a user's file may start with it too. Only
/// the temporary files the process is writing right now are hidden from its
/// `ls`, `glob` and `grep`.
pub const TEMP_PREFIX: &str = ".burrow-tmp-";

/// How an [`crate::FsBackend`] behaves. `FsOptions::default()` is what
/// [`crate::FsBackend::open`] uses.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FsOptions {
    /// Largest file, in bytes, that may be written, read, edited or searched
    /// (default 10 MiB). Larger files are refused with TooLarge by reads and
    /// skipped by grep.
    pub max_file_size: u64,
    /// Most entries one ls, glob or grep returns (default 10,000).
    pub max_results: usize,
    /// Flush each written file, and its directory after the rename, to the
    /// disk before returning (default off).
    ///
    /// Off, a write is still atomic (a reader or a crash of this process sees
    /// the old or the new content, never half), but a power loss shortly
    /// after a write may lose it. On, each write costs two `fsync` calls.
    pub fsync: bool,
    /// Apply `.gitignore` files and skip hidden (dot) files and directories
    /// in `glob` and `grep` (default off, so results are the same as on every
    /// other backend). `ls`, `read` and the mutations are never affected.
    pub respect_ignore_files: bool,
    /// How many threads of tokio's blocking pool one grep reads and searches
    /// files with, its own included (default: the number of CPUs). No thread
    /// is created for a grep beyond what the pool already manages.
    pub threads: usize,
}

impl Default for FsOptions {
    fn default() -> Self {
        Self {
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            max_results: DEFAULT_MAX_RESULTS,
            fsync: false,
            respect_ignore_files: false,
            threads: std::thread::available_parallelism().map_or(1, usize::from),
        }
    }
}

impl FsOptions {
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

    /// Sets `fsync`.
    pub fn with_fsync(mut self, on: bool) -> Self {
        self.fsync = on;
        self
    }

    /// Sets `respect_ignore_files`.
    pub fn with_respect_ignore_files(mut self, on: bool) -> Self {
        self.respect_ignore_files = on;
        self
    }

    /// Sets `threads` (at least one is used).
    pub fn with_threads(mut self, n: usize) -> Self {
        self.threads = n.max(1);
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
