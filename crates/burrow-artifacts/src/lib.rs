//! The artifact workspace: typed, versioned JSON documents that agents and people change together.
//!
//! # Key design decision: one pure write path under every store's lock
//!
//! An artifact is a JSON document of a kind (a JSON Schema, from a Rust type
//! deriving `JsonSchema` or from a `KIND.schema.json` value). Every change
//! (create, RFC 6902 JSON Patch, anchored text edit, archive, revert) names
//! the version it was made against, and is decided by one pure function,
//! [`change::apply`], called by one write path, [`store::engine`], inside
//! the store's own transaction: the head is read, the base version checked,
//! the result validated, and only then are the revision, the head and the
//! workspace's event written, together. A store (memory, SQLite, PostgreSQL) only
//! supplies rows and a transaction ([`store::engine::Tx`],
//! [`store::engine::Transact`]); so every store refuses, versions and logs
//! alike, and the conformance suite ([`conformance`]) proves it on each.
//!
//! # Features
//!
//! - `postgres`: [`store::PostgresArtifactStore`], the store in PostgreSQL
//!   (each call one transaction holding the workspace's advisory lock).
//!   Costs: tokio-postgres (and its protocol crates), tokio's `net`.
//!
//! Proposals are changes recorded with a rationale that change nothing until
//! a person applies (re-checked against the head then) or rejects them.
//!
//! The agent tools ([`tools::ArtifactWorkspace`]) sit on burrow-runtime's
//! `Tool` trait: their definitions are built once and never change between
//! requests, and every outcome is said in words ([`tools::describe_outcome`]).
//! With `ask`, the runner adds its `ask_user`, which pauses the run until a
//! person answers. A tool streams an unfinished artifact to live watchers
//! with [`tools::ArtifactDraft`]; a draft is never stored.
//!
//! In a run, [`tools::ArtifactWorkspace::install`] gives an agent the tools,
//! renders the artifacts it follows fresh into every request's instructions
//! and, with `notices`, appends a change note of what others did since its
//! last look before each model request ([`notices`]). A schema kind renders
//! through a `KIND.md` [`template::Template`] when it has one.
//!
//! Permission rules reach the artifacts as paths, `/artifacts/KIND/ID`:
//! [`permissions::PermissionArtifactStore`] enforces the `Read(...)` and
//! `Edit(...)` deny rules over any store, below the tools (ADR 0395).
//!
//! Files that are not JSON documents (images, PDFs) are binary artifacts
//! ([`binary::BinaryArtifacts`], Google ADK's shape): versions 0, 1, 2...
//! of a name over any `burrow_backend::Backend`, each claimed create-only.

pub mod binary;
pub mod change;
pub mod conformance;
mod error;
mod kind;
pub mod notices;
pub mod permissions;
pub mod store;
pub mod template;
pub mod tools;

pub use binary::{BinaryArtifact, BinaryArtifacts, BinaryVersion};
pub use change::Change;
pub use error::{ArtifactError, ArtifactErrorKind, ChangeSince, Result};
pub use kind::{Artifact, DEFAULT_MAX_SNAPSHOT_BYTES, Kind, Kinds};
pub use permissions::PermissionArtifactStore;
pub use store::{
    Actor, ArtifactStore, Committed, Event, EventKind, MemoryArtifactStore, Proposal,
    ProposalStatus, Revision, SqliteArtifactStore, Versioned,
};
