//! burrow: a place for AI agents to keep and work on files; this facade re-exports the contract and every backend.
//!
//! # Key design decision: a facade that only re-exports
//!
//! burrow is a family of small crates cut at one seam, the [`Backend`]
//! trait: `burrow-types` (the wire types), `burrow-backend` (the contract:
//! [`VPath`], [`Error`], the [`Backend`] and [`Sandbox`] traits and the
//! shared text helpers) and one crate per backend. This crate adds no code
//! of its own, as ripgrep's `grep` crate does for its engines: it gives one
//! name to depend on, and one cargo feature per optional backend, so an
//! application pays in compile time and dependencies only for the storage it
//! uses, while every backend keeps behaving the same (each one passes the
//! same conformance suite).
//!
//! What is always here, whatever the features:
//!
//! - [`types`]: the plain data types with their Python-compatible JSON
//!   forms (`burrow_types`), e.g. [`types::FileInfo`].
//! - The contract, re-exported at the root: [`Backend`], [`Sandbox`],
//!   [`VPath`], [`FileContext`], [`Error`] and [`ErrorKind`] (refusal or
//!   failure), [`Capabilities`], the bounded results ([`Listing`],
//!   [`LineWindow`], [`GlobResult`], [`GrepResult`]), and the helpers in
//!   [`text`], [`glob`] and [`grep`] for people writing a backend.
//!
//! Start with `examples/quickstart.rs`:
//! `cargo run -p burrow --example quickstart`.
//!
//! # Feature flags
//!
//! Each optional backend is one feature. Costs are what the feature adds to
//! your dependency tree on top of the always-present contract (which costs
//! serde, serde_json, base64, regex, globset, thiserror and async-trait).
//!
//! - `state` *(default)*: [`StateBackend`], the in-memory workspace: a map
//!   path -> file plus a directory index, saved and restored as a FileData
//!   JSON document that the Python libraries read too. Costs: `jiff` (for
//!   timestamps). No tokio, no I/O.
//! - `full`: every feature below that this build of the facade offers.
//!
//! The backends below are being written and are not offered by this build
//! of the facade yet; each will be one feature as listed (DESIGN.md §2):
//!
//! - `fs` *(will be default)*: `FsBackend`, a local folder confined with
//!   cap-std. Costs: tokio (`rt`, `sync`: the blocking pool), cap-std,
//!   ignore (ripgrep's walker), jiff.
//! - `composite` *(will be default)*: `CompositeBackend`, several backends
//!   mounted by path prefix. Costs: futures, tokio (`sync`).
//! - `sqlite`: `SqliteStore` and `StoreBackend`. Costs: rusqlite with a
//!   bundled SQLite, compiled from C (a C compiler at build time), tokio
//!   (`rt`), jiff.
//! - `object-store`: `ObjectStoreBackend` over the `object_store` crate
//!   (in-memory and local stores). `s3`, `gcs`, `azure` add those clouds and
//!   with them an HTTP client with rustls.
//! - `docker`: `DockerSandbox`, files and `execute` in a container. Costs:
//!   bollard (hyper, an HTTP client over the Docker socket) and tar.
//! - `runtime`: the agent runtime (tools, hooks, models, sessions, runner).
//!   Costs: reqwest, rusqlite, schemars and the `sqlite` and `composite`
//!   backends it builds on.

// ---------------------------------------------------------------------------
// Always: the wire types and the contract.
// ---------------------------------------------------------------------------

pub use burrow_backend::*;
pub use burrow_types as types;

// ---------------------------------------------------------------------------
// Backends, one cargo feature each.
// ---------------------------------------------------------------------------

#[cfg(feature = "state")]
#[doc(inline)]
pub use burrow_state::StateBackend;

// --- backends being written in parallel: wire each one here, behind its
// --- feature, with the same shape as `state` above, e.g.
// #[cfg(feature = "fs")]
// #[doc(inline)]
// pub use burrow_fs::FsBackend;
// #[cfg(feature = "sqlite")]          -> burrow_sqlite::{SqliteStore, StoreBackend}
// #[cfg(feature = "composite")]       -> burrow_composite::CompositeBackend
// #[cfg(feature = "object-store")]    -> burrow_object_store::ObjectStoreBackend
// #[cfg(feature = "docker")]          -> burrow_docker::DockerSandbox
// #[cfg(feature = "runtime")]         -> pub use burrow_runtime as runtime;
