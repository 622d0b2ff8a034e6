//! The binary's log: a `tracing` subscriber that writes the runtime's events and span ends to stderr, filtered by `BURROW_LOG` (warnings only by default), never to stdout.
//!
//! stdout carries a command's output (`--json` lines, a run's stream, the MCP
//! protocol of `burrow mcp`), so the log goes to stderr whatever the filter.
//! `BURROW_LOG` takes `RUST_LOG`'s directives (`info`,
//! `burrow_runtime=debug,warn`, ...); unset or empty, it is `warn`, so a
//! normal run prints only what went wrong. With a span's target enabled at its
//! level, each span prints one line as it closes, with its fields (a run's id
//! and outcome, a turn's index, a model request's usage) and its busy and idle
//! times.

use std::io::{self, Write};

use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::fmt::format::FmtSpan;

/// The environment variable holding the log's filter.
pub const VAR: &str = "BURROW_LOG";

/// Installs the subscriber for the whole process. A `BURROW_LOG` that does
/// not parse is one line on stderr, and the log then keeps warnings only.
pub fn install() {
    let builder = EnvFilter::builder()
        .with_default_directive(LevelFilter::WARN.into())
        .with_env_var(VAR);
    let filter = match builder.from_env() {
        Ok(filter) => filter,
        Err(e) => {
            let _ = writeln!(
                io::stderr(),
                "burrow: note: {VAR} is not a filter ({e}); logging warnings only"
            );
            EnvFilter::new(LevelFilter::WARN.to_string())
        }
    };
    // Fails only when a subscriber is already installed, which `main` never does.
    let _ = tracing_subscriber::fmt()
        .with_writer(io::stderr)
        .with_env_filter(filter)
        .with_span_events(FmtSpan::CLOSE)
        .try_init();
}
