//! The signal guard of `burrow run`'s MCP servers: on SIGTERM or SIGHUP every stdio server's process group is killed before burrow ends with 128+signal (docs/adr/0314).
//!
//! Ctrl-C (SIGINT) keeps its meaning: the first stops the run, which then
//! closes its servers as on any end; a second ends burrow at once, and
//! [`end_now`] kills the servers first. SIGTERM and SIGHUP keep theirs too
//! (burrow ends at once, as it did before it had MCP servers), but only
//! once the servers are gone: an `std::process::exit` runs no destructor,
//! and a server in a process group of its own is sent no signal of the
//! terminal's.
//!
//! With a `docker:` backend its own guard catches the same signals to
//! remove the container; it kills the servers too, and this guard then
//! leaves the exit to it, so the container is removed first.
//!
//! `burrow serve` keeps SIGTERM and Ctrl-C as its graceful shutdown (the
//! runs are handed back, then its servers are stopped): there the guard takes
//! SIGHUP only ([`Guard::Hangup`], docs/adr/0366).

use std::io::Write;
use std::sync::OnceLock;

/// Kills every MCP server of this process and ends it with `code`, saying
/// `why` on stderr: the second Ctrl-C of a run.
pub fn end_now(code: i32, why: &str) -> ! {
    burrow_runtime::mcp::client::kill_all();
    let _ = writeln!(std::io::stderr(), "burrow: {why}");
    std::process::exit(code)
}

/// Which signals the guard takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guard {
    /// SIGTERM and SIGHUP (`burrow run`, `burrow thread answer`).
    TermAndHangup,
    /// SIGHUP only: `burrow serve` keeps SIGTERM as its graceful shutdown,
    /// which stops the servers once the runs are handed back (docs/adr/0366).
    Hangup,
}

/// Starts, once, a thread that waits for SIGTERM (unless `signals` is
/// [`Guard::Hangup`]) or SIGHUP; on one, it kills every MCP server's process
/// group and ends burrow with 128+signal. Returns once the handlers are installed.
pub fn guard(signals: Guard) {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let (ready, installed) = std::sync::mpsc::channel::<()>();
        let spawned = std::thread::Builder::new()
            .name("burrow-mcp-signals".to_owned())
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
                    let term = match signals {
                        Guard::TermAndHangup => match signal(SignalKind::terminate()) {
                            Ok(term) => Some(term),
                            Err(_) => {
                                let _ = ready.send(());
                                return;
                            }
                        },
                        Guard::Hangup => None,
                    };
                    let hup = signal(SignalKind::hangup());
                    let _ = ready.send(());
                    let Ok(mut hup) = hup else {
                        return;
                    };
                    let number = match term {
                        Some(mut term) => tokio::select! {
                            _ = term.recv() => 15,
                            _ = hup.recv() => 1,
                        },
                        None => {
                            hup.recv().await;
                            1
                        }
                    };
                    burrow_runtime::mcp::client::kill_all();
                    #[cfg(feature = "docker")]
                    if crate::docker::guarding() {
                        // The docker guard removes the container, then ends burrow.
                        return;
                    }
                    std::process::exit(128 + number);
                });
            });
        if spawned.is_ok() {
            let _ = installed.recv();
        }
    });
}
