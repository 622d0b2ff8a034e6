//! The burrow agent runtime: an agent loop (models, tools, hooks, subagents) that runs durably in session threads (a `Runner` over a SQLite, PostgreSQL or memory session store), the file tools rendered for a model over any backend, and an MCP server for them.
//!
//! The modules, bottom up: [`message`] and [`model`] (what a model reads and
//! answers), [`tool`] and [`tools`] (the `Tool` trait and the file tools),
//! [`hooks`] (Claude Code's hook events), [`agent`] (the loop and its call
//! pipeline), [`session`] (the session stores and their rules), [`runner`]
//! (runs in threads: claims, commits, pauses, recovery), [`subagent`],
//! [`todos`], [`skills`], [`memory`] and [`uploads`] (harness tools), [`compaction`] (the model's view of a long history), and `mcp` / `otel` behind their features.
//!
//! # Key design decision: tools render for a model
//!
//! The [`Backend`](burrow_backend::Backend) contract returns data; an agent
//! needs *text it can act on*. [`tools`] turns each operation into that text
//! once, for every backend and every front end (a model runner, `burrow mcp`):
//! numbered lines with a footer that names the next offset, lists capped with
//! a sentence that says how many more there are and how to narrow, results
//! too large to return saved to a file and replaced by a preview and its path.
//!
//! **Refusals are text, failures are errors.** A refusal (a missing file, a
//! path that climbs out, an ambiguous edit, arguments that do not fit the
//! schema) is something the model can fix, so it comes back as one sentence
//! with `is_error: true` and the run goes on. A failure (the storage broke)
//! is not the model's to fix: it comes back as a Rust `Err`, so an operator
//! sees it and a run never carries on over a broken store as if nothing
//! happened.
//!
//! **The read-before-edit ledger.** Each session keeps, per path, a
//! fingerprint (SHA-256) of the bytes the agent last read or wrote
//! ([`tools::ReadLedger`]). `edit_file`, and `write_file` over an existing
//! file, are refused unless the file's current bytes match it: an agent
//! never edits a file it has not seen, nor over a change someone else made
//! since. A successful change records the new bytes, so consecutive edits
//! need no re-read.
//!
//! # Features
//!
//! - `mcp`: [`mcp::serve_stdio`], an MCP server over stdio (the official
//!   `rmcp` SDK) that offers a [`tool::ToolRegistry`] to any MCP client, and
//!   [`mcp::client::McpServers`], MCP servers' tools as [`tool::Tool`]s. Costs:
//!   rmcp (server and client) and tokio's `io-std` and `process`.
//! - `sqlite`: [`session::SqliteStore`], the session store in one SQLite
//!   file. Costs: rusqlite with SQLite compiled from C (bundled), so a user
//!   without SQLite does not build it. The memory store needs no feature.
//! - `postgres`: [`session::PostgresStore`], the session store in PostgreSQL
//!   (tokio-postgres). Costs: tokio-postgres and tokio's `net`.
//! - `conformance`: [`session::conformance`] and
//!   [`session_conformance_suite!`], the scenarios every session store
//!   passes, for another crate's store to run in its tests. Costs: nothing.
//! - `otel`: `otel::layer`, a `tracing_subscriber` layer exporting the
//!   runtime's spans to an OpenTelemetry tracer provider, each turn its own
//!   trace; and `otel::metrics` with `agent::Agent::with_metrics`, the
//!   runtime's metrics (GenAI token usage and request duration, tool-call and
//!   run counters; no id as a label). Costs: opentelemetry (its trace and
//!   metrics API), opentelemetry_sdk, tracing-opentelemetry and
//!   tracing-subscriber's registry; no exporter.
//!
//! - `failpoints` (tests only): [`failpoint`], crash points at every step of
//!   a tool call and of a run's commits, for crash-recovery tests. Without
//!   it the crash points are not compiled at all.
//!
//! # Tracing
//!
//! The agent loop emits `tracing` spans whatever the features: `run` >
//! `turn` (one model request and its tool calls) > `model request` and
//! `tool call`, with OpenTelemetry GenAI field names (`gen_ai.request.model`,
//! `gen_ai.usage.input_tokens`, `gen_ai.tool.name`, `gen_ai.tool.call.id`
//! ...) and no prompt, answer, argument or result text. Install any
//! subscriber to see them (`tracing_subscriber::fmt`, or `otel::layer`
//! with the `otel` feature); with none installed they cost a callsite check.

/// `crash_point!(failpoint, point)`: awaits `failpoint::reach` with the
/// `failpoints` feature on; expands to nothing without it.
macro_rules! crash_point {
    ($failpoint:expr, $point:expr) => {
        #[cfg(feature = "failpoints")]
        $crate::failpoint::reach($failpoint, $point).await;
    };
}
pub(crate) use crash_point;

pub mod agent;
pub mod checkpoint;
pub mod compaction;
#[cfg(feature = "failpoints")]
pub mod failpoint;
pub mod hooks;
pub mod memory;
pub mod message;
pub mod model;
mod process_group;
pub mod runner;
pub mod session;
pub mod skills;
pub mod subagent;
pub mod team;
pub mod todos;
pub mod tool;
pub mod tools;
pub mod uploads;

#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(feature = "otel")]
pub mod otel;

pub use tools::{AfterChange, ToolConfig, ToolOutput, ToolSession, Toolset};
