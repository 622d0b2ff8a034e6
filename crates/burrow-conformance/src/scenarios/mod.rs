//! The scenarios, one module per topic. Every `pub async fn` here is one scenario and one entry of [`crate::SCENARIOS`].
//!
//! A scenario takes the backend and a [`Ctx`](crate::Ctx), starts from an
//! empty root, and returns [`Outcome`](crate::Outcome): passed, skipped with
//! a reason (only when the backend lacks a capability the scenario needs), or
//! a [`ScenarioError`](crate::ScenarioError) saying what was expected and
//! what came back.

pub mod concurrency;
pub mod content;
pub mod crlf;
pub mod delete;
pub mod dirs;
pub mod edit;
pub mod glob;
pub mod grep;
pub mod host;
pub mod limits;
pub mod ls;
pub mod meta;
pub mod paths;
pub mod read;
pub mod replay;
pub mod sandbox;
pub mod tenants;
pub mod write;

/// What every scenario module uses.
mod prelude {
    pub(crate) use burrow_backend::{Backend, ErrorKind, GrepQuery, VPath};

    pub(crate) use crate::fixture::{Ctx, HostAccess};
    pub(crate) use crate::outcome::{
        Outcome, ScenarioError, expect_kind, expect_refusal, passed, show, skipped,
    };
    pub(crate) use crate::support::{
        BIG, abs, bytes_of, ensure_unchanged, hits, lines_of, paths, put, put_bytes, re, snapshot,
        sorted,
    };
    pub(crate) use crate::{ensure, ensure_eq, fail};
}
