//! The runner's error: a small kind the caller matches on, one sentence, and the store's error as the cause.

use crate::session::{StoreError, StoreErrorKind};

/// What kind of error a runner call met.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RunnerErrorKind {
    /// A message id (or run id) is already used in the workspace; nothing was done.
    IdInUse,
    /// The thread, run or request named does not exist.
    NotFound,
    /// The call does not fit the state (the run is not paused, the request is answered).
    InvalidState,
    /// An argument is malformed (an empty id, a NUL character).
    InvalidArgument,
    /// The runner is closed (`aclose`) and starts nothing.
    Closed,
    /// The store failed.
    Store,
}

impl RunnerErrorKind {
    /// A short stable name (`id_in_use`, `not_found`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            RunnerErrorKind::IdInUse => "id_in_use",
            RunnerErrorKind::NotFound => "not_found",
            RunnerErrorKind::InvalidState => "invalid_state",
            RunnerErrorKind::InvalidArgument => "invalid_argument",
            RunnerErrorKind::Closed => "closed",
            RunnerErrorKind::Store => "store",
        }
    }

    /// The kind named `name` ([`as_str`](Self::as_str)'s inverse).
    pub fn from_name(name: &str) -> Option<Self> {
        [
            RunnerErrorKind::IdInUse,
            RunnerErrorKind::NotFound,
            RunnerErrorKind::InvalidState,
            RunnerErrorKind::InvalidArgument,
            RunnerErrorKind::Closed,
            RunnerErrorKind::Store,
        ]
        .into_iter()
        .find(|k| k.as_str() == name)
    }
}

/// An error from a [`Runner`](super::Runner) call.
#[derive(Debug, thiserror::Error)]
#[error("{}: {message}", kind.as_str())]
pub struct RunnerError {
    kind: RunnerErrorKind,
    message: String,
    #[source]
    source: Option<StoreError>,
}

impl RunnerError {
    /// An error of `kind` with one sentence saying what happened.
    pub fn new(kind: RunnerErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            source: None,
        }
    }

    /// The kind.
    pub fn kind(&self) -> RunnerErrorKind {
        self.kind
    }

    /// The sentence, without the kind.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether a store failure that may pass caused it (ADR 0250).
    pub(crate) fn transient(&self) -> bool {
        self.source.as_ref().is_some_and(super::retry::transient)
    }
}

impl From<StoreError> for RunnerError {
    fn from(e: StoreError) -> Self {
        let kind = match e.kind() {
            StoreErrorKind::IdInUse => RunnerErrorKind::IdInUse,
            StoreErrorKind::NotFound => RunnerErrorKind::NotFound,
            StoreErrorKind::InvalidState | StoreErrorKind::Conflict => {
                RunnerErrorKind::InvalidState
            }
            StoreErrorKind::InvalidArgument => RunnerErrorKind::InvalidArgument,
            _ => RunnerErrorKind::Store,
        };
        Self {
            kind,
            message: e.message().to_owned(),
            source: Some(e),
        }
    }
}

/// The result of a runner call.
pub type RunnerResult<T> = std::result::Result<T, RunnerError>;
