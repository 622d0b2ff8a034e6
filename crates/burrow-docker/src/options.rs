//! `DockerOptions`: how a sandbox's container is created (work dir, user, limits, network) and what its answers are bounded by.

use std::collections::BTreeMap;
use std::time::Duration;

use burrow_backend::{
    DEFAULT_EXEC_OUTPUT_CAP, DEFAULT_EXEC_TIMEOUT, DEFAULT_MAX_FILE_SIZE, DEFAULT_MAX_RESULTS,
};
use burrow_types::DEFAULT_WORK_DIR;

/// The label every sandbox container carries, so leftovers can be found and reaped.
pub const SANDBOX_LABEL: &str = "burrow.sandbox";
/// The label holding the session id a [`crate::SandboxManager`] gave the container.
pub const SESSION_LABEL: &str = "burrow.session";

/// The longest an `execute` may run: a longer timeout (from the caller or
/// [`DockerOptions::exec_timeout`]) is cut to this. One day is far beyond
/// any command an agent waits for, and keeps every deadline representable.
pub const MAX_EXEC_TIMEOUT: Duration = Duration::from_secs(24 * 3600);
/// The shortest default `execute` timeout: a shorter [`DockerOptions::exec_timeout`] is raised to this.
pub const MIN_EXEC_TIMEOUT: Duration = Duration::from_secs(1);
/// The bounds of [`DockerOptions::connect_timeout`] (shorter or longer values are clamped).
pub const CONNECT_TIMEOUT_BOUNDS: (Duration, Duration) =
    (Duration::from_millis(100), Duration::from_secs(3600));
/// The bounds of [`DockerOptions::request_timeout`]: the engine client counts
/// whole seconds, so at least one; at most a day.
pub const REQUEST_TIMEOUT_BOUNDS: (Duration, Duration) =
    (Duration::from_secs(1), Duration::from_secs(24 * 3600));

/// `d` clamped into `bounds` (inclusive).
pub(crate) fn clamp(d: Duration, bounds: (Duration, Duration)) -> Duration {
    d.clamp(bounds.0, bounds.1)
}

/// How a [`crate::DockerSandbox`]'s container is created, and its limits.
///
/// The defaults are the secure ones: no network, every Linux capability
/// dropped, `no-new-privileges`, at most 512 processes, 1 GiB of memory and
/// one CPU, and docker's `--init` so killed commands leave no zombies.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DockerOptions {
    /// The directory inside the container that the virtual path "/" maps to; created when missing.
    pub work_dir: String,
    /// Keep the work dir on an anonymous volume, removed with the container
    /// (the default): file I/O bypasses the container's copy-on-write layer,
    /// names may be 255 bytes whatever the storage driver allows, and the
    /// image's content at the work dir is copied in when the volume is made.
    pub work_dir_volume: bool,
    /// The user commands run as and files belong to (`"uid"` or `"uid:gid"`); `None` keeps the image's user.
    pub user: Option<String>,
    /// Environment variables of the container and of every command.
    pub env: BTreeMap<String, String>,
    /// The docker network mode; `None` (the default) means `"none"`: no network at all.
    pub network: Option<String>,
    /// Memory limit in bytes (`None`: unlimited).
    pub memory_bytes: Option<i64>,
    /// CPU limit in billionths of a CPU (`None`: unlimited).
    pub nano_cpus: Option<i64>,
    /// Most processes the container may hold (`None`: unlimited).
    pub pids_limit: Option<i64>,
    /// Linux capabilities added back after dropping all of them (e.g. `"CHOWN"`).
    pub cap_add: Vec<String>,
    /// Run docker's init process as PID 1 (reaps orphaned processes).
    pub init: bool,
    /// Extra labels on the container (the sandbox label is always set).
    pub labels: BTreeMap<String, String>,
    /// Bytes of command output kept by `execute`; the rest is drained and discarded.
    pub output_cap: usize,
    /// The timeout of `execute` when the caller gives none (clamped to
    /// [`MIN_EXEC_TIMEOUT`]..=[`MAX_EXEC_TIMEOUT`]).
    pub exec_timeout: Duration,
    /// The largest file read, written or searched, in bytes.
    pub max_file_size: u64,
    /// The most entries one ls, glob or grep returns.
    pub max_results: usize,
    /// How long connecting to the engine (the first version probe) may take
    /// (clamped to [`CONNECT_TIMEOUT_BOUNDS`]).
    pub connect_timeout: Duration,
    /// How long one engine request may take until its response starts
    /// (clamped to [`REQUEST_TIMEOUT_BOUNDS`]).
    pub request_timeout: Duration,
}

impl Default for DockerOptions {
    fn default() -> Self {
        Self {
            work_dir: DEFAULT_WORK_DIR.to_owned(),
            work_dir_volume: true,
            user: None,
            env: BTreeMap::new(),
            network: None,
            memory_bytes: Some(1 << 30),
            nano_cpus: Some(1_000_000_000),
            pids_limit: Some(512),
            cap_add: Vec::new(),
            init: true,
            labels: BTreeMap::new(),
            output_cap: DEFAULT_EXEC_OUTPUT_CAP,
            exec_timeout: DEFAULT_EXEC_TIMEOUT,
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            max_results: DEFAULT_MAX_RESULTS,
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(120),
        }
    }
}

impl DockerOptions {
    /// Sets `work_dir`.
    pub fn with_work_dir(mut self, work_dir: impl Into<String>) -> Self {
        self.work_dir = work_dir.into();
        self
    }
    /// Sets `work_dir_volume`.
    pub fn with_work_dir_volume(mut self, on: bool) -> Self {
        self.work_dir_volume = on;
        self
    }
    /// Sets `user` (`"uid"` or `"uid:gid"`).
    pub fn with_user(mut self, user: impl Into<String>) -> Self {
        self.user = Some(user.into());
        self
    }
    /// Adds one environment variable.
    pub fn with_env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }
    /// Sets the docker network mode (`"bridge"`, `"host"`, a network name); `None` is no network.
    pub fn with_network(mut self, network: Option<String>) -> Self {
        self.network = network;
        self
    }
    /// Sets the memory limit in bytes.
    pub fn with_memory_bytes(mut self, bytes: Option<i64>) -> Self {
        self.memory_bytes = bytes;
        self
    }
    /// Sets the CPU limit in billionths of a CPU.
    pub fn with_nano_cpus(mut self, nano_cpus: Option<i64>) -> Self {
        self.nano_cpus = nano_cpus;
        self
    }
    /// Sets the process limit.
    pub fn with_pids_limit(mut self, pids: Option<i64>) -> Self {
        self.pids_limit = pids;
        self
    }
    /// Adds back one Linux capability.
    pub fn with_cap_add(mut self, cap: impl Into<String>) -> Self {
        self.cap_add.push(cap.into());
        self
    }
    /// Adds one container label.
    pub fn with_label(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.labels.insert(key.into(), value.into());
        self
    }
    /// Sets the output cap of `execute`.
    pub fn with_output_cap(mut self, bytes: usize) -> Self {
        self.output_cap = bytes;
        self
    }
    /// Sets the default timeout of `execute`.
    pub fn with_exec_timeout(mut self, timeout: Duration) -> Self {
        self.exec_timeout = timeout;
        self
    }
    /// Sets the largest file size.
    pub fn with_max_file_size(mut self, bytes: u64) -> Self {
        self.max_file_size = bytes;
        self
    }
    /// Sets the most results of one ls, glob or grep.
    pub fn with_max_results(mut self, n: usize) -> Self {
        self.max_results = n;
        self
    }
    /// Sets how long connecting to the engine may take.
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }
    /// Sets how long one engine request may take until its response starts.
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }
}
