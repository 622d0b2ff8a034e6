//! The burrow runner over HTTP: threads, messages, answers and stops as JSON under `/v1`, live runs as Server-Sent Events, bearer tokens per tenant, and one embedded page at `/`.
//!
//! # Key design decision: the server is a thin surface over one `Runner`
//!
//! Everything a request does is a runner call the terminal surface
//! (`burrow run --session`, `burrow thread ...`) makes too: a message is a
//! [`Command::Send`](burrow_runtime::runner::Command) carried out once per
//! command id by `Runner::execute`, an answer a `Command::Answer`, a stop
//! `Runner::request_stop`, a live run `Runner::watch`. The server adds only
//! what HTTP needs (docs/adr/0340-burrow-serve-shape.md):
//!
//! - **Tenants.** A bearer token (its SHA-256 in the tokens file, compared in
//!   constant time, [`Tokens`]) names a tenant; every request works in that
//!   tenant's workspace of the session store, so another tenant's thread or
//!   run is not found (404, never 403).
//! - **Idempotency.** A message or answer with a `command_id` is carried out
//!   once; a repeat gets the remembered result and `Idempotent-Replayed: true`.
//! - **Live frames as SSE.** Each frame of `Runner::watch` is one event, named
//!   by its `type` and carrying the JSON `burrow run --json` prints, with
//!   `id:` its number in the run segment, so `Last-Event-ID` resumes.
//! - **Limits.** A body limit, a header-read timeout (a slowloris client is
//!   cut off), a body-read timeout, a bound on watchers, and a graceful
//!   shutdown that ends every watcher with an `end` event.

mod api;
mod error;
mod events;
mod server;
mod tokens;

pub use error::{PROBLEM_JSON, ServeError, ServeErrorKind, ServeResult};
pub use server::{Limits, Server};
pub use tokens::{Principal, Tokens, add_token};

/// The header a repeated command's response carries.
pub const IDEMPOTENT_REPLAYED: &str = "idempotent-replayed";
