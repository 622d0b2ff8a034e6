//! `burrow docker gc` (remove orphaned sandbox containers) and the signal guard that removes this run's `docker:` containers on SIGTERM, SIGINT or SIGHUP (docs/adr/0122).

use std::io::{self, Write};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use burrow::docker::DockerOptions;
use burrow::{Error, Result};

use crate::output::{Exit, error_json, error_text};

/// The label every `docker:` container of this process carries, with
/// [`session`] as its value: what the signal guard removes.
pub const SESSION_LABEL: &str = "burrow.cli.session";

/// This process's session token: its pid and start instant, unique on the host.
fn session() -> &'static str {
    static SESSION: OnceLock<String> = OnceLock::new();
    SESSION.get_or_init(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        format!("{}-{nanos}", std::process::id())
    })
}

/// Set once a signal was caught: the guard thread is removing the
/// containers and will end the process with 128+signal.
static CAUGHT: AtomicBool = AtomicBool::new(false);

/// The options a `docker:` container of this process starts with: the
/// defaults, labelled with this process's session. Installs the signal
/// guard first, so a signal from now on removes the container.
pub fn options() -> DockerOptions {
    guard();
    DockerOptions::default().with_label(SESSION_LABEL, session())
}

/// When a signal was caught, waits for the guard thread to end the process
/// (so the command's own outcome does not win the race to exit).
pub fn settle() {
    if CAUGHT.load(Ordering::Acquire) {
        loop {
            std::thread::park();
        }
    }
}

/// Set once the signal guard is installed.
static GUARD: OnceLock<()> = OnceLock::new();

/// True once the signal guard is installed: it ends the process on a
/// signal (after the MCP servers' guard killed the servers, docs/adr/0314).
#[cfg(feature = "run")]
pub fn guarding() -> bool {
    GUARD.get().is_some()
}

/// Starts, once, a thread that waits for SIGTERM, SIGINT or SIGHUP; on one,
/// it removes this session's containers and exits with 128+signal. Returns
/// once the handlers are installed.
fn guard() {
    GUARD.get_or_init(|| {
        let (ready, installed) = std::sync::mpsc::channel::<()>();
        let spawned = std::thread::Builder::new()
            .name("burrow-signals".to_owned())
            .spawn(move || {
                let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                else {
                    let _ = ready.send(());
                    return;
                };
                runtime.block_on(async move {
                    use tokio::signal::unix::{SignalKind, signal};
                    let streams = (
                        signal(SignalKind::terminate()),
                        signal(SignalKind::interrupt()),
                        signal(SignalKind::hangup()),
                    );
                    let _ = ready.send(());
                    let (Ok(mut term), Ok(mut int), Ok(mut hup)) = streams else {
                        return;
                    };
                    let number = tokio::select! {
                        _ = term.recv() => 15,
                        _ = int.recv() => 2,
                        _ = hup.recv() => 1,
                    };
                    CAUGHT.store(true, Ordering::Release);
                    #[cfg(feature = "run")]
                    burrow_runtime::mcp::client::kill_all();
                    if let Err(e) = remove_session().await {
                        let _ = writeln!(io::stderr(), "{}", error_text(&e));
                    }
                    std::process::exit(128 + number);
                });
            });
        if spawned.is_ok() {
            let _ = installed.recv();
        }
    });
}

/// Removes every container of this session, on a connection of its own.
async fn remove_session() -> Result<usize> {
    let docker = burrow::docker::connect(&DockerOptions::default()).await?;
    burrow::docker::remove_labelled(&docker, Some((SESSION_LABEL, session())), Duration::ZERO)
        .await
        .map_err(|e| {
            Error::failure(
                "cannot remove the docker: container (it carries the label burrow.sandbox=1)",
                e,
            )
        })
}

/// `burrow docker gc`: removes the sandbox containers of this host whose
/// owner process is gone and prints how many.
pub async fn gc(json: bool) -> io::Result<Exit> {
    let removed = match burrow::docker::connect(&DockerOptions::default()).await {
        Ok(docker) => burrow::docker::remove_orphans(&docker).await,
        Err(e) => Err(e),
    };
    match removed {
        Ok(n) => {
            let mut out = io::stdout().lock();
            if json {
                writeln!(out, "{}", serde_json::json!({ "removed": n }))?;
            } else {
                let s = if n == 1 { "" } else { "s" };
                writeln!(out, "removed {n} orphaned container{s}")?;
            }
            out.flush()?;
            Ok(Exit::Success)
        }
        Err(e) => {
            if json {
                let mut out = io::stdout().lock();
                writeln!(out, "{}", error_json(&e))?;
                out.flush()?;
            } else {
                writeln!(io::stderr(), "{}", error_text(&e))?;
            }
            Ok(Exit::Failed)
        }
    }
}
