//! `SandboxManager`: one sandbox per session id, reused while it lives, at most N running, idle ones reaped.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use bollard::Docker;
use burrow_backend::{Error, ErrorKind, Result};
use burrow_types::RuntimeConfig;
use tokio::sync::{Mutex, OnceCell};
use tokio::task::JoinHandle;

use crate::engine;
use crate::options::{DockerOptions, SESSION_LABEL};
use crate::sandbox::DockerSandbox;

/// The shortest and longest interval of [`SandboxManager::spawn_reaper`]; others are clamped to these.
pub const REAP_INTERVAL_BOUNDS: (Duration, Duration) =
    (Duration::from_millis(10), Duration::from_secs(24 * 3600));

/// What a manager starts its sandboxes from.
#[derive(Debug, Clone, PartialEq)]
pub enum SandboxSource {
    /// A ready image.
    Image(String),
    /// A runtime config (its image built once and reused).
    Runtime(RuntimeConfig),
}

type Slot = Arc<OnceCell<Arc<DockerSandbox>>>;

/// Hands out one [`DockerSandbox`] per session id.
///
/// - [`SandboxManager::get`] returns the session's sandbox, starting it on
///   first use; concurrent calls for one new session start one container.
/// - At most `max_running` sandboxes exist at once. When full, sandboxes idle
///   past the idle timeout are reaped first; if none is, `get` for a new
///   session is refused with QuotaExceeded (release one, or wait).
/// - [`SandboxManager::reap_idle`] closes sandboxes with no operation in
///   flight for longer than the idle timeout; [`SandboxManager::spawn_reaper`]
///   runs it periodically. A reaped sandbox still held by a caller fails
///   every later operation with a message saying it was closed.
#[derive(Debug)]
pub struct SandboxManager {
    docker: Docker,
    source: SandboxSource,
    options: DockerOptions,
    max_running: usize,
    idle_timeout: Duration,
    slots: Mutex<HashMap<String, Slot>>,
}

impl SandboxManager {
    /// A manager of sandboxes from `source` with `options`, on the engine
    /// named by `DOCKER_HOST`: at most 8 running, reaped after 10 idle minutes.
    pub async fn new(source: SandboxSource, options: DockerOptions) -> Result<SandboxManager> {
        let docker = engine::connect(&options).await?;
        // Containers of a burrow that died without removing them (SIGKILL) go first.
        if let Err(e) = crate::owner::remove_orphans(&docker).await {
            tracing::warn!(error = %e, "could not remove orphaned sandbox containers");
        }
        Ok(Self::on(docker, source, options))
    }

    /// As [`SandboxManager::new`], on an engine connection of your own (already negotiated).
    pub fn on(docker: Docker, source: SandboxSource, options: DockerOptions) -> SandboxManager {
        SandboxManager {
            docker,
            source,
            options,
            max_running: 8,
            idle_timeout: Duration::from_secs(600),
            slots: Mutex::new(HashMap::new()),
        }
    }

    /// Sets how many sandboxes may exist at once (at least one).
    pub fn with_max_running(mut self, n: usize) -> Self {
        self.max_running = n.max(1);
        self
    }

    /// Sets how long a sandbox may stay unused before the reaper closes it.
    pub fn with_idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// How many sandboxes exist or are starting.
    pub async fn running(&self) -> usize {
        self.slots.lock().await.len()
    }

    /// The sandbox of `session`, started on first use and reused after.
    pub async fn get(&self, session: &str) -> Result<Arc<DockerSandbox>> {
        let slot = self.slot(session).await?;
        let started = slot
            .get_or_try_init(|| async {
                let options = self.options.clone().with_label(SESSION_LABEL, session);
                let sandbox = match &self.source {
                    SandboxSource::Image(image) => {
                        DockerSandbox::start_on(self.docker.clone(), image, options).await?
                    }
                    SandboxSource::Runtime(config) => {
                        DockerSandbox::from_runtime_on(self.docker.clone(), config, options).await?
                    }
                };
                Ok::<_, Error>(Arc::new(sandbox))
            })
            .await;
        match started {
            Ok(sandbox) if !sandbox.is_closed() => Ok(Arc::clone(sandbox)),
            Ok(_) => {
                // Closed behind our back (released concurrently): start afresh.
                self.forget(session, &slot).await;
                Box::pin(self.get(session)).await
            }
            Err(e) => {
                self.forget(session, &slot).await;
                Err(e)
            }
        }
    }

    /// The slot of `session`, reserving one (reaping idle sandboxes if full).
    async fn slot(&self, session: &str) -> Result<Slot> {
        let mut reaped = Vec::new();
        let slot = {
            let mut slots = self.slots.lock().await;
            if let Some(slot) = slots.get(session) {
                return Ok(Arc::clone(slot));
            }
            if slots.len() >= self.max_running {
                reaped = self.take_idle(&mut slots);
            }
            if slots.len() >= self.max_running {
                drop(slots);
                close_all(reaped).await;
                return Err(Error::refusal(
                    ErrorKind::QuotaExceeded,
                    format!(
                        "{} sandboxes are running, the most allowed; release one or try again later.",
                        self.max_running
                    ),
                ));
            }
            let slot: Slot = Arc::new(OnceCell::new());
            slots.insert(session.to_owned(), Arc::clone(&slot));
            slot
        };
        close_all(reaped).await;
        Ok(slot)
    }

    /// Removes `session`'s entry if it is still `slot`.
    async fn forget(&self, session: &str, slot: &Slot) {
        let mut slots = self.slots.lock().await;
        if slots.get(session).is_some_and(|s| Arc::ptr_eq(s, slot)) {
            slots.remove(session);
        }
    }

    /// Takes out the started sandboxes idle longer than the timeout.
    fn take_idle(&self, slots: &mut HashMap<String, Slot>) -> Vec<Arc<DockerSandbox>> {
        let idle: Vec<String> = slots
            .iter()
            .filter(|(_, slot)| {
                slot.get()
                    .is_some_and(|s| s.is_closed() || s.idle_for() > self.idle_timeout)
            })
            .map(|(k, _)| k.clone())
            .collect();
        idle.iter()
            .filter_map(|k| slots.remove(k))
            .filter_map(|slot| slot.get().cloned())
            .collect()
    }

    /// Closes and forgets `session`'s sandbox, if it has one.
    pub async fn release(&self, session: &str) -> Result<()> {
        let slot = self.slots.lock().await.remove(session);
        match slot.and_then(|s| s.get().cloned()) {
            Some(sandbox) => sandbox.close().await,
            None => Ok(()),
        }
    }

    /// Closes every sandbox idle longer than the idle timeout; returns how many.
    pub async fn reap_idle(&self) -> usize {
        let reaped = {
            let mut slots = self.slots.lock().await;
            self.take_idle(&mut slots)
        };
        let n = reaped.len();
        close_all(reaped).await;
        n
    }

    /// Closes every sandbox.
    pub async fn shutdown(&self) -> Result<()> {
        let all: Vec<Slot> = self.slots.lock().await.drain().map(|(_, s)| s).collect();
        let mut first_error = None;
        for sandbox in all.iter().filter_map(|s| s.get()) {
            if let Err(e) = sandbox.close().await {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Runs [`SandboxManager::reap_idle`] every `every` (clamped to
    /// [`REAP_INTERVAL_BOUNDS`]: zero would spin, and a huge interval cannot
    /// be scheduled) on the current runtime until the manager is dropped.
    pub fn spawn_reaper(self: &Arc<Self>, every: Duration) -> JoinHandle<()> {
        let every = every.clamp(REAP_INTERVAL_BOUNDS.0, REAP_INTERVAL_BOUNDS.1);
        let weak: Weak<Self> = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.tick().await;
            loop {
                tick.tick().await;
                let Some(manager) = weak.upgrade() else {
                    return;
                };
                manager.reap_idle().await;
            }
        })
    }
}

async fn close_all(sandboxes: Vec<Arc<DockerSandbox>>) {
    for sandbox in sandboxes {
        if let Err(e) = sandbox.close().await {
            tracing::warn!(container = %sandbox.id(), error = %e, "could not remove a reaped sandbox");
        }
    }
}
