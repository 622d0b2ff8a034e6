//! The store's error: a small kind the caller matches on, one sentence of context, and the cause when a database failed.

use std::fmt;

/// What kind of error a store call met.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StoreErrorKind {
    /// A run, message, request, tool call or checkpoint the call names does not exist.
    NotFound,
    /// The write does not fit the current state (a run already ended, a thread
    /// that already has an unfinished run, a request already answered).
    InvalidState,
    /// An argument is malformed (an empty id, a NUL character, a cursor past the head).
    InvalidArgument,
    /// The commit's fence (or the claim to renew) is not the thread's current claim.
    StaleClaim,
    /// An id that is used once (a message id in a workspace, a run id, a checkpoint id)
    /// is already used.
    IdInUse,
    /// The command's key was already recorded: nothing was done. Read the remembered
    /// result with `SessionStore::command_result`.
    DuplicateCommand,
    /// A cursor was not where the commit expected it (compare-and-set failed).
    Conflict,
    /// The database failed (I/O, a lost connection, a driver error).
    Storage,
    /// Stored data could not be decoded.
    Corrupt,
}

impl StoreErrorKind {
    /// A short stable name (`not_found`, `stale_claim`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            StoreErrorKind::NotFound => "not_found",
            StoreErrorKind::InvalidState => "invalid_state",
            StoreErrorKind::InvalidArgument => "invalid_argument",
            StoreErrorKind::StaleClaim => "stale_claim",
            StoreErrorKind::IdInUse => "id_in_use",
            StoreErrorKind::DuplicateCommand => "duplicate_command",
            StoreErrorKind::Conflict => "conflict",
            StoreErrorKind::Storage => "storage",
            StoreErrorKind::Corrupt => "corrupt",
        }
    }
}

impl fmt::Display for StoreErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error from a [`SessionStore`](super::SessionStore).
#[derive(Debug, thiserror::Error)]
#[error("{kind}: {message}")]
pub struct StoreError {
    kind: StoreErrorKind,
    message: String,
    #[source]
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl StoreError {
    /// An error of `kind` with one sentence saying what happened.
    pub fn new(kind: StoreErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            source: None,
        }
    }

    /// A database failure with its cause.
    pub fn storage(
        message: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self {
            kind: StoreErrorKind::Storage,
            message: message.into(),
            source: Some(Box::new(source)),
        }
    }

    /// The kind.
    pub fn kind(&self) -> StoreErrorKind {
        self.kind
    }

    /// The sentence, without the kind.
    pub fn message(&self) -> &str {
        &self.message
    }

    pub(crate) fn not_found(message: impl Into<String>) -> Self {
        Self::new(StoreErrorKind::NotFound, message)
    }

    pub(crate) fn invalid_state(message: impl Into<String>) -> Self {
        Self::new(StoreErrorKind::InvalidState, message)
    }

    pub(crate) fn invalid_argument(message: impl Into<String>) -> Self {
        Self::new(StoreErrorKind::InvalidArgument, message)
    }

    pub(crate) fn corrupt(message: impl Into<String>) -> Self {
        Self::new(StoreErrorKind::Corrupt, message)
    }
}

/// The result of a store call.
pub type StoreResult<T> = std::result::Result<T, StoreError>;
