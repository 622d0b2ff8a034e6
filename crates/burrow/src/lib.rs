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
//! - `fs` *(default)*: [`FsBackend`] (and [`FsOptions`]), a local folder
//!   confined beneath its root with cap-std: symlinks that lead out are
//!   refused, writes are atomic renames, grep walks in parallel with
//!   ripgrep's walker. The whole crate is [`fs`]. Costs: tokio (`rt`,
//!   `sync`: every file operation runs on the blocking pool, so it needs a
//!   tokio runtime), cap-std, ignore, jiff, libc.
//! - `composite` *(default)*: [`CompositeBackend`], several backends
//!   mounted by path prefix and seen as one tree (longest prefix wins, a
//!   mount shadows what lies beneath it), plus the per-tenant
//!   `ResolvingBackend` in [`composite`]. Costs: futures, tokio (`sync`).
//! - `sqlite`: [`SqliteStore`] (namespaced key/value long-term memory) and
//!   [`StoreBackend`] (files) in one SQLite file: WAL, one transaction per
//!   mutation, tenants, effect keys, quotas, safe with several processes.
//!   Builders, options and quotas are in [`sqlite`]. Costs: rusqlite with a
//!   **bundled SQLite compiled from C** (a C compiler at build time, the
//!   slowest feature to build), tokio (`rt`), jiff, serde_json.
//! - `full`: every feature below that this build of the facade offers.
//!
//! The backends below are being written and are not offered by this build
//! of the facade yet; each will be one feature as listed (DESIGN.md §2):
//!
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

/// The `fs` backend crate (`burrow-fs`): [`FsBackend`], its options and reserved names.
#[cfg(feature = "fs")]
pub use burrow_fs as fs;
#[cfg(feature = "fs")]
#[doc(inline)]
pub use burrow_fs::{FsBackend, FsOptions};

/// The `sqlite` backend crate (`burrow-sqlite`): builders, options, quotas, the KV store's types.
#[cfg(feature = "sqlite")]
pub use burrow_sqlite as sqlite;
#[cfg(feature = "sqlite")]
#[doc(inline)]
pub use burrow_sqlite::{SqliteStore, StoreBackend};

/// The `composite` crate (`burrow-composite`): the builder and the per-tenant resolver.
#[cfg(feature = "composite")]
pub use burrow_composite as composite;
#[cfg(feature = "composite")]
#[doc(inline)]
pub use burrow_composite::CompositeBackend;

// --- backends being written in parallel: wire each one here, behind its
// --- feature, with the same shape as `fs` above, e.g.
// #[cfg(feature = "object-store")]    -> burrow_object_store::ObjectStoreBackend
// #[cfg(feature = "docker")]          -> burrow_docker::DockerSandbox
// #[cfg(feature = "runtime")]         -> pub use burrow_runtime as runtime;
