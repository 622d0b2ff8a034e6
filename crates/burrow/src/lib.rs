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
//! `cargo run -p burrow-agent --example quickstart`.
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
//! - `permissions`: Claude Code's `permissions` settings as typed rules
//!   and decisions ([`permissions`]), and [`PermissionBackend`], which
//!   enforces the `Read(...)`/`Edit(...)` deny rules over any backend: a
//!   denied path is refused to every operation and never listed or matched.
//!   Costs: nothing beyond the contract (serde_json, globset, thiserror).
//! - `sqlite`: [`SqliteStore`] (namespaced key/value long-term memory) and
//!   [`StoreBackend`] (files) in one SQLite file: WAL, one transaction per
//!   mutation, tenants, effect keys, quotas, safe with several processes.
//!   Builders, options and quotas are in [`sqlite`]. Costs: rusqlite with a
//!   **bundled SQLite compiled from C** (a C compiler at build time, the
//!   slowest feature to build), tokio (`rt`), jiff, serde_json. With
//!   `runtime`, also the SQLite session store (`runtime::session::SqliteStore`).
//! - `object-store`: [`ObjectStoreBackend`] over any store of the
//!   `object_store` crate (in-memory and local-folder stores included):
//!   directories are key prefixes, every change a conditional put, tenants
//!   key prefixes; for deployments that outgrow one machine. The crate (with
//!   the `object_store` crate it builds on) is [`object_store`]. Costs:
//!   object_store (with walkdir and nix for its local store), tokio (`rt`,
//!   `sync`, `time`), futures, bytes, sha2, jiff.
//! - `s3`: `ObjectStoreBackend::from_s3_url("s3://bucket/prefix")`, reading
//!   endpoint and credentials from the AWS environment variables. `gcs` and
//!   `azure` turn on object_store's Google Cloud Storage and Azure Blob
//!   stores, which you build and hand to `ObjectStoreBackend::new`. Each
//!   implies `object-store`. Costs: object_store's cloud client: reqwest,
//!   hyper, rustls with **aws-lc-rs compiled from C**, quick-xml, chrono
//!   (shared by all three).
//! - `runtime`: the agent runtime as [`runtime`]: the file tools an agent
//!   calls (ls, read_file, write_file, edit_file, delete_path, glob, grep, execute) with
//!   JSON Schemas, model-facing rendering and the read-before-edit guard.
//!   Costs: schemars, sha2, tokio (`sync`).
//! - `mcp`: the runtime's MCP server (`runtime::mcp::serve_stdio`) over the
//!   same tool registry the agent loop reads. Implies `runtime`. Costs: rmcp,
//!   tokio (`io-std`, `io-util`).
//! - `postgres`: the session store on PostgreSQL
//!   (`runtime::session::PostgresStore`), for runners on several machines.
//!   Implies `runtime`. Costs: tokio-postgres, tokio (`net`).
//! - `otel`: `runtime::otel::layer`, a `tracing_subscriber` layer exporting
//!   the runtime's spans (run, turn, model request, tool call; GenAI
//!   attribute names, no content) to an OpenTelemetry tracer provider, each
//!   turn its own trace; and `runtime::otel::metrics`, the runtime's metrics
//!   (GenAI token usage and request duration, tool-call and run counters),
//!   which an agent records when given them (`Agent::with_metrics`). Implies
//!   `runtime`. Costs: opentelemetry,
//!   opentelemetry_sdk, tracing-opentelemetry, tracing-subscriber
//!   (`registry`); no exporter.
//! - `docker`: [`DockerSandbox`] (and [`DockerOptions`]), a container as a
//!   backend *and* a [`Sandbox`]: files move through the Docker archive
//!   (tar) API, `execute` runs `sh -c` with a timeout and an output cap,
//!   containers start with no network and every capability dropped and are
//!   removed on `close`. Images built from a `RuntimeConfig` and the
//!   `SandboxManager` are in [`docker`]. Needs a Docker engine at run time.
//!   Costs: bollard (hyper, an HTTP client over the Docker socket), tar,
//!   tokio (`rt`, `sync`, `time`), futures, sha2, uuid, tracing.
//! - `openai`: the model adapters as [`models`]: OpenAI chat completions
//!   (`OpenAiChat`, also any OpenAI-compatible server) and Responses
//!   (`OpenAiResponses`), with the shared SSE parser, retry policy and HTTP
//!   layer. Implies `runtime`. Costs: reqwest (hyper, rustls with
//!   **aws-lc-rs compiled from C**), httpdate, tokio (`time`).
//! - `anthropic`: the Anthropic messages adapter in [`models`]. Implies
//!   `runtime`. Costs: the same HTTP client as `openai`.
//! - `artifacts`: the artifact workspace as [`artifacts`]: typed, versioned
//!   JSON documents that agents and people change together (JSON Schema
//!   kinds, JSON Patch and anchored text edits, optimistic versions,
//!   proposals, a gap-free event log), in memory or one SQLite file, with the
//!   agent tools over the runtime's `Tool` trait; with `postgres`, the
//!   PostgreSQL store too. Implies `runtime`. Costs:
//!   jsonschema, json-patch (jsonptr).
//! - `serve`: the runner over HTTP as [`serve`]: bearer tokens per tenant,
//!   threads, messages (once per command id), answers and stops as JSON,
//!   live runs as Server-Sent Events, an embedded page; with `artifacts`,
//!   the artifact workspace's operations too (`Server::with_artifacts`).
//!   Implies `runtime`. Costs: axum, hyper, hyper-util, tower, tower-http,
//!   subtle, getrandom.
//! - `full`: every feature above.

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
/// The journal of a state document (`burrow_state::journal`): framed, checksummed change records.
#[cfg(feature = "state")]
pub use burrow_state::journal as state_journal;

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

/// The `permissions` crate (`burrow-permissions`): rules, settings, modes and decisions.
#[cfg(feature = "permissions")]
pub use burrow_permissions as permissions;
#[cfg(feature = "permissions")]
#[doc(inline)]
pub use burrow_permissions::PermissionBackend;

/// The `object-store` backend crate (`burrow-object-store`): options, keys,
/// replay, and the `object_store` crate itself (`object_store::object_store`)
/// to build stores with.
#[cfg(feature = "object-store")]
pub use burrow_object_store as object_store;
#[cfg(feature = "object-store")]
#[doc(inline)]
pub use burrow_object_store::ObjectStoreBackend;

/// The agent runtime (`burrow-runtime`): the file tools an agent calls, rendered for a model.
#[cfg(feature = "runtime")]
pub use burrow_runtime as runtime;

/// The artifact workspace (`burrow-artifacts`): kinds, changes, stores and agent tools.
#[cfg(feature = "artifacts")]
pub use burrow_artifacts as artifacts;

/// The runner over HTTP (`burrow-serve`): the server behind `burrow serve`.
#[cfg(feature = "serve")]
pub use burrow_serve as serve;

/// The model adapters (`burrow-models`): OpenAI and Anthropic over reqwest.
#[cfg(any(feature = "openai", feature = "anthropic"))]
pub use burrow_models as models;

/// The `docker` backend crate (`burrow-docker`): images from a `RuntimeConfig`,
/// the `SandboxManager` with its idle reaper, and the engine connection.
#[cfg(feature = "docker")]
pub use burrow_docker as docker;
#[cfg(feature = "docker")]
#[doc(inline)]
pub use burrow_docker::{DockerOptions, DockerSandbox};
