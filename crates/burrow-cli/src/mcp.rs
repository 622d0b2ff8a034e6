//! `burrow mcp`: serves the agent file tools of `burrow-runtime` to an MCP client over stdin/stdout.
//!
//! stdout carries the MCP protocol (JSON-RPC lines) and nothing else; notes
//! and failures go to stderr. The server runs until the client closes stdin.
//!
//! A backend that must be written back (`state:FILE.json`) is saved after
//! every tool call that changed the workspace, before the client gets the
//! result, so a client (or a crash) never sees a success that is not on
//! disk. The savers live on this task (they need not be `Send`); the
//! toolset's after-change hook asks this task to save and waits for the
//! answer (docs/adr/0112).

use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use burrow::{Error, FileContext, Result};
use burrow_runtime::tools::{AfterChange, Toolset};
use tokio::sync::{mpsc, oneshot};

use crate::output::Exit;
use crate::spec::Opened;

/// A request to save, answered with the outcome.
type SaveRequest = oneshot::Sender<Result<()>>;

/// The toolset's hook: forwards "save now" to the task that owns the savers.
struct SaveOnChange {
    requests: mpsc::Sender<SaveRequest>,
}

#[async_trait]
impl AfterChange for SaveOnChange {
    async fn after_change(&self) -> Result<()> {
        let (answer, outcome) = oneshot::channel();
        let gone =
            || Error::failure_msg("the workspace could not be saved: the server is stopping");
        self.requests.send(answer).await.map_err(|_| gone())?;
        outcome.await.map_err(|_| gone())?
    }
}

/// Serves the tools over `opened` as `ctx` until the client disconnects,
/// each call decided by the permissions of `settings` (docs/adr/0319), its
/// tool hooks around it (docs/adr/0367).
pub async fn run(opened: Opened, ctx: FileContext, settings: &[PathBuf]) -> io::Result<Exit> {
    let (requests, mut pending) = mpsc::channel::<SaveRequest>(16);
    let tools = Toolset::new(opened.backend.clone(), ctx)
        .with_after_change(Arc::new(SaveOnChange { requests }))
        .into_registry();
    // The hooks run outside the rules: a hook's rewrite is decided too (ADR 0367).
    let decided = crate::mcp_permissions::decide_tools(tools, settings)
        .and_then(|tools| crate::mcp_hooks::hooked(tools, settings));
    let (tools, hooks) = match decided {
        Ok((tools, hooks, notes)) => {
            for note in notes {
                writeln!(io::stderr(), "burrow: note: {note}")?;
            }
            (tools, hooks)
        }
        Err(message) => {
            writeln!(io::stderr(), "burrow: {message}")?;
            return Ok(Exit::Failed);
        }
    };
    let server = burrow_runtime::mcp::serve_stdio(tools);
    tokio::pin!(server);
    let served = loop {
        tokio::select! {
            served = &mut server => break served,
            Some(answer) = pending.recv() => {
                // The caller may have gone (a cancelled request): nothing to tell.
                let _ = answer.send(opened.finish());
            }
        }
    };
    // Background hooks run to their end before burrow exits.
    if let Some(hooks) = &hooks {
        hooks.settle().await;
    }
    match served {
        Ok(()) => Ok(Exit::Success),
        Err(e) => {
            writeln!(io::stderr(), "burrow: {e}")?;
            Ok(Exit::of(&e))
        }
    }
}
