//! `DockerSandbox`: one container per sandbox, started with secure defaults and removed on close, on drop, or by a reaper.

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bollard::Docker;
use bollard::models::{ContainerCreateBody, HostConfig, Mount, MountType};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, ListContainersOptionsBuilder, RemoveContainerOptionsBuilder,
};
use burrow_backend::{Error, LockTable, Result};
use burrow_types::RuntimeConfig;

use crate::archive::{self, Owner};
use crate::engine;
use crate::image;
use crate::options::{DockerOptions, SANDBOX_LABEL};
use crate::paths::{self, Kind, Layout};

/// A Docker container as a burrow backend and sandbox.
///
/// See the crate docs for how files and commands reach the container, and
/// [`burrow_backend::Backend`]'s contract for what each operation means.
///
/// # Lifecycle
///
/// [`DockerSandbox::start`] (or `start_with`, `start_on`, `from_runtime`)
/// creates and starts one container, labelled `burrow.sandbox=1`, whose main
/// process is a shell waiting on an open stdin (so the image needs nothing but
/// `sh`). [`DockerSandbox::close`] removes it. Dropping a sandbox that was not
/// closed spawns its removal on the current tokio runtime, if there is one
/// (best effort: a runtime shutting down may cancel it; close explicitly, or
/// sweep leftovers with [`remove_labelled`]). After close every operation is
/// a failure that says so.
///
/// # Confinement
///
/// The virtual "/" is the container's work dir. Every path is resolved
/// component by component before use (see the crate docs): a symbolic link
/// that leads outside the work dir is refused with PermissionDenied, one
/// that stays inside is followed (delete removes the link itself), a FIFO,
/// socket or device is refused and never opened, and listings, glob and grep
/// pass such entries by. This confines the *file* operations; `execute` runs
/// any command the container allows, anywhere in it.
pub struct DockerSandbox {
    pub(crate) docker: Docker,
    pub(crate) id: String,
    pub(crate) layout: Layout,
    pub(crate) options: DockerOptions,
    pub(crate) env: Vec<String>,
    pub(crate) owner: Owner,
    /// One lock per resolved container path being changed (a link and its target share one).
    pub(crate) locks: LockTable<String>,
    /// Held shared by every file mutation and exclusive by `delete_tree`, taken
    /// before the path's lock (ADR 0223).
    pub(crate) tree_gate: tokio::sync::RwLock<()>,
    pub(crate) scope: String,
    last_used: Mutex<Instant>,
    active: AtomicUsize,
    closed: AtomicBool,
}

impl fmt::Debug for DockerSandbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DockerSandbox")
            .field("id", &self.id)
            .field("work_dir", &self.layout.work_dir())
            .field("closed", &self.closed.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// Marks one operation in flight: the sandbox is busy, and used now.
pub(crate) struct Busy<'a>(&'a DockerSandbox);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.touch();
        self.0.active.fetch_sub(1, Ordering::AcqRel);
    }
}

impl DockerSandbox {
    /// Starts a sandbox from `image` with the default options, on the engine
    /// named by `DOCKER_HOST` (the local socket when unset).
    ///
    /// For a one-command sandbox (the CLI's `--backend docker:IMAGE`): start,
    /// use, then [`DockerSandbox::close`].
    pub async fn start(image: &str) -> Result<DockerSandbox> {
        Self::start_with(image, DockerOptions::default()).await
    }

    /// Starts a sandbox from `image` with `options`.
    pub async fn start_with(image: &str, options: DockerOptions) -> Result<DockerSandbox> {
        let docker = engine::connect(&options).await?;
        Self::create(docker, image, options).await
    }

    /// Starts a sandbox from `image` on an engine connection of your own.
    pub async fn start_on(
        docker: Docker,
        image: &str,
        options: DockerOptions,
    ) -> Result<DockerSandbox> {
        let docker = engine::negotiate(docker, &options).await?;
        Self::create(docker, image, options).await
    }

    /// Starts a sandbox for `config`: its ready `image`, or the image built
    /// from its generated Dockerfile (reused while the config is unchanged).
    ///
    /// The config's `work_dir` and `env_vars` override `options`'; with
    /// `run_as_uid` (and a `base_image`) commands run as that user.
    pub async fn from_runtime(
        config: &RuntimeConfig,
        options: DockerOptions,
    ) -> Result<DockerSandbox> {
        let docker = engine::connect(&options).await?;
        Self::from_runtime_on(docker, config, options).await
    }

    /// As [`DockerSandbox::from_runtime`], on an engine connection of your own.
    pub async fn from_runtime_on(
        docker: Docker,
        config: &RuntimeConfig,
        mut options: DockerOptions,
    ) -> Result<DockerSandbox> {
        let docker = engine::negotiate(docker, &options).await?;
        let built = image::runtime_image(&docker, config).await?;
        options.work_dir = config.work_dir.clone();
        options
            .env
            .extend(config.env_vars.iter().map(|(k, v)| (k.clone(), v.clone())));
        if built.user.is_some() {
            options.user = built.user;
        }
        Self::create(docker, &built.image, options).await
    }

    /// Creates, starts and prepares the container.
    async fn create(docker: Docker, image: &str, options: DockerOptions) -> Result<DockerSandbox> {
        let layout = Layout::new(&options.work_dir)?;
        image::ensure_image(&docker, image).await?;
        let mut labels: HashMap<String, String> = options
            .labels
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        labels.insert(SANDBOX_LABEL.to_owned(), "1".to_owned());
        // Containers left by a burrow that died (SIGKILL) go first; this one names its owner.
        if let Err(e) = crate::owner::remove_orphans(&docker).await {
            tracing::warn!(error = %e, "could not remove orphaned sandbox containers");
        }
        if let Some(me) = crate::owner::Owner::current() {
            labels.extend(me.labels());
        }
        let env: Vec<String> = options
            .env
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let body = ContainerCreateBody {
            image: Some(image.to_owned()),
            entrypoint: Some(vec!["sh".to_owned()]),
            cmd: Some(Vec::new()),
            open_stdin: Some(true),
            stdin_once: Some(false),
            tty: Some(false),
            attach_stdin: Some(false),
            attach_stdout: Some(false),
            attach_stderr: Some(false),
            env: Some(env.clone()),
            user: options.user.clone(),
            labels: Some(labels),
            host_config: Some(HostConfig {
                network_mode: Some(options.network.clone().unwrap_or_else(|| "none".to_owned())),
                cap_drop: Some(vec!["ALL".to_owned()]),
                cap_add: (!options.cap_add.is_empty()).then(|| options.cap_add.clone()),
                security_opt: Some(vec!["no-new-privileges".to_owned()]),
                pids_limit: options.pids_limit,
                memory: options.memory_bytes,
                nano_cpus: options.nano_cpus,
                init: Some(options.init),
                mounts: (options.work_dir_volume && layout.work_dir() != "/").then(|| {
                    vec![Mount {
                        target: Some(layout.work_dir().to_owned()),
                        typ: Some(MountType::VOLUME),
                        ..Default::default()
                    }]
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let created = docker
            .create_container(Some(CreateContainerOptionsBuilder::default().build()), body)
            .await
            .map_err(|e| engine::failure("create the sandbox container", e))?;
        let sandbox = DockerSandbox {
            scope: format!("docker-{}", created.id.chars().take(12).collect::<String>()),
            owner: Owner::from_user(options.user.as_deref()),
            docker,
            id: created.id,
            layout,
            env,
            options,
            locks: LockTable::new(),
            tree_gate: tokio::sync::RwLock::new(()),
            last_used: Mutex::new(Instant::now()),
            active: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
        };
        // From here on, a failed step removes the container (close) before returning.
        if let Err(e) = sandbox.prepare().await {
            let _ = sandbox.close().await;
            return Err(e);
        }
        Ok(sandbox)
    }

    /// Starts the container and makes its work dir, owned by the sandbox's user.
    async fn prepare(&self) -> Result<()> {
        self.docker
            .start_container(&self.id, None)
            .await
            .map_err(|e| engine::failure("start the sandbox container", e))?;
        crate::exec::ensure_running(&self.docker, &self.id)
            .await
            .map_err(|_| Error::failure_msg("the sandbox container stopped right after starting; does the image have /bin/sh?"))?;
        ensure_dir(&self.docker, &self.id, self.layout.work_dir(), self.owner).await
    }

    /// The container's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The directory inside the container that "/" maps to.
    pub fn work_dir(&self) -> &str {
        self.layout.work_dir()
    }

    /// The container path of the virtual `path` (before any link in it is resolved).
    pub fn container_path(&self, path: &burrow_backend::VPath) -> String {
        self.layout.container(path)
    }

    /// The engine connection.
    pub fn docker(&self) -> &Docker {
        &self.docker
    }

    /// The options the sandbox was started with.
    pub fn options(&self) -> &DockerOptions {
        &self.options
    }

    /// How long since the last operation ended (zero while one runs).
    pub fn idle_for(&self) -> Duration {
        if self.active.load(Ordering::Acquire) > 0 {
            return Duration::ZERO;
        }
        self.last_used
            .lock()
            .map(|t| t.elapsed())
            .unwrap_or(Duration::ZERO)
    }

    /// True once [`DockerSandbox::close`] ran (or a reaper closed it).
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    fn touch(&self) {
        if let Ok(mut t) = self.last_used.lock() {
            *t = Instant::now();
        }
    }

    /// Starts an operation: a failure if the sandbox was closed.
    pub(crate) fn begin(&self) -> Result<Busy<'_>> {
        if self.is_closed() {
            return Err(Error::failure_msg(
                "the sandbox was closed (explicitly, or by the idle reaper); start a new one",
            ));
        }
        self.active.fetch_add(1, Ordering::AcqRel);
        self.touch();
        Ok(Busy(self))
    }

    /// Removes the container (and its anonymous volumes). Idempotent: a
    /// second call, or a container already gone, is fine.
    pub async fn close(&self) -> Result<()> {
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        remove(&self.docker, &self.id).await
    }
}

impl Drop for DockerSandbox {
    fn drop(&mut self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            let docker = self.docker.clone();
            let id = std::mem::take(&mut self.id);
            handle.spawn(async move {
                if let Err(e) = remove(&docker, &id).await {
                    tracing::warn!(container = %id, error = %e, "could not remove a dropped sandbox container");
                }
            });
        } else {
            tracing::warn!(container = %self.id, "a sandbox was dropped outside a tokio runtime; its container is left running");
        }
    }
}

/// Removes container `id` by force; one already gone is fine.
pub(crate) async fn remove(docker: &Docker, id: &str) -> Result<()> {
    let options = RemoveContainerOptionsBuilder::default()
        .force(true)
        .v(true)
        .build();
    match docker.remove_container(id, Some(options)).await {
        Ok(()) => Ok(()),
        Err(e) if engine::status(&e) == Some(404) => Ok(()),
        // 409: a removal is already in progress.
        Err(e) if engine::status(&e) == Some(409) => Ok(()),
        Err(e) => Err(engine::failure("remove the sandbox container", e)),
    }
}

/// Removes every container labelled `burrow.sandbox=1` (and, when given,
/// `label=value`) created more than `older_than` ago; returns how many.
///
/// A sweep for containers whose process died before it could remove them
/// (run it at startup with an age longer than any sandbox lives).
pub async fn remove_labelled(
    docker: &Docker,
    label: Option<(&str, &str)>,
    older_than: Duration,
) -> Result<usize> {
    let mut filters = vec![format!("{SANDBOX_LABEL}=1")];
    if let Some((k, v)) = label {
        filters.push(format!("{k}={v}"));
    }
    let options = ListContainersOptionsBuilder::default()
        .all(true)
        .filters(&HashMap::from([("label", filters)]))
        .build();
    let containers = docker
        .list_containers(Some(options))
        .await
        .map_err(|e| engine::failure("list sandbox containers", e))?;
    let now = jiff::Timestamp::now().as_second();
    let limit = i64::try_from(older_than.as_secs()).unwrap_or(i64::MAX);
    let mut removed = 0;
    for c in containers {
        let (Some(id), Some(created)) = (c.id, c.created) else {
            continue;
        };
        if now.saturating_sub(created) >= limit {
            remove(docker, &id).await?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// Makes the absolute container directory `dir` (and missing parents), the
/// new ones owned by `owner`; an existing `dir` is handed to a non-root
/// `owner` (a volume's mount point starts out as root's).
pub(crate) async fn ensure_dir(docker: &Docker, id: &str, dir: &str, owner: Owner) -> Result<()> {
    let segments: Vec<&str> = dir.split('/').filter(|s| !s.is_empty()).collect();
    let mut base = "/".to_owned();
    for (i, segment) in segments.iter().enumerate() {
        let here = paths::join(&base, segment);
        match paths::stat(docker, id, &here).await? {
            Some(s) if s.kind == Kind::Dir || s.kind == Kind::Symlink => base = here,
            Some(_) => {
                return Err(Error::failure_msg(format!(
                    "the work dir {dir} cannot be made: a file stands in its way"
                )));
            }
            None => {
                let missing: Vec<String> = (i..segments.len())
                    .map(|j| segments[i..=j].join("/"))
                    .collect();
                let tar = archive::tar_of(&missing, None, owner)?;
                return archive::upload(docker, id, &base, tar).await;
            }
        }
    }
    match (owner.uid, segments.split_last()) {
        (0, _) | (_, None) => Ok(()),
        (_, Some((last, parents))) => {
            let parent = format!("/{}", parents.join("/"));
            let tar = archive::tar_of(&[(*last).to_owned()], None, owner)?;
            archive::upload(docker, id, &parent, tar).await
        }
    }
}
