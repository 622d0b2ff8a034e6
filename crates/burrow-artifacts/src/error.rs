//! `ArtifactError`: a kind the caller matches on (refusals carry what a caller needs to act), and one sentence for people and models.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::store::Actor;

/// A change committed after the version a stale change was made against.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeSince {
    /// The version the change made.
    pub version: u64,
    /// Who made it.
    pub actor: Actor,
    /// What it was (`edit`, `archive`, `revert`, ...).
    pub op: String,
    /// Its summary, when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

/// What kind of error a call met. Everything but `Store` is a refusal:
/// the call changed nothing.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArtifactErrorKind {
    /// The snapshot does not fit its kind's schema; `paths` are the failing
    /// JSON paths (instance paths, `""` for the whole document).
    Validation {
        /// Each failing instance path, once, in the validator's order.
        paths: Vec<String>,
    },
    /// The kind is not one of the workspace's kinds.
    UnknownKind,
    /// No artifact, version or proposal by that id.
    NotFound,
    /// The change named a base version that is no longer the head.
    Conflict {
        /// The artifact's head version.
        head: u64,
        /// The changes committed after the base version, oldest first.
        changes_since: Vec<ChangeSince>,
    },
    /// The snapshot is larger than the size limit.
    TooLarge {
        /// The snapshot's size as compact JSON, in bytes.
        size: usize,
        /// The limit, in bytes.
        limit: usize,
    },
    /// An anchored text edit's anchor does not occur exactly once.
    Edit {
        /// How many times it occurs (0: not found).
        occurrences: usize,
    },
    /// A JSON Patch could not be applied (a missing path, a failed `test`).
    Patch,
    /// The change does not fit the artifact's state (an archived artifact, a
    /// proposal already decided, a field that is not a string).
    InvalidState,
    /// An argument is malformed (a bad JSON Pointer, a schema that is not one).
    InvalidArgument,
    /// A permission rule denies the artifact (ADR 0395): a `Read` rule
    /// hides it, an `Edit` or `Write` rule takes no change of it.
    PermissionDenied,
    /// The backend under the binary artifacts ([`crate::binary`]) refused:
    /// its kind (`unsupported`, `quota_exceeded`, `permission_denied`, ...).
    Backend(burrow_backend::ErrorKind),
    /// The store failed (I/O, a database error, a record it cannot decode).
    Store,
}

impl ArtifactErrorKind {
    /// A short stable name (`validation`, `conflict`, ...).
    pub fn as_str(&self) -> &'static str {
        match self {
            ArtifactErrorKind::Validation { .. } => "validation",
            ArtifactErrorKind::UnknownKind => "unknown_kind",
            ArtifactErrorKind::NotFound => "not_found",
            ArtifactErrorKind::Conflict { .. } => "conflict",
            ArtifactErrorKind::TooLarge { .. } => "too_large",
            ArtifactErrorKind::Edit { .. } => "edit",
            ArtifactErrorKind::Patch => "patch",
            ArtifactErrorKind::InvalidState => "invalid_state",
            ArtifactErrorKind::InvalidArgument => "invalid_argument",
            ArtifactErrorKind::PermissionDenied => "permission_denied",
            ArtifactErrorKind::Backend(_) => "backend",
            ArtifactErrorKind::Store => "store",
        }
    }
}

impl fmt::Display for ArtifactErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error from the artifact workspace: its kind and one sentence.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct ArtifactError {
    kind: ArtifactErrorKind,
    message: String,
    #[source]
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

/// The result of an artifact call.
pub type Result<T, E = ArtifactError> = std::result::Result<T, E>;

impl ArtifactError {
    /// An error of `kind` saying `message` (one sentence).
    pub fn new(kind: ArtifactErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            source: None,
        }
    }

    /// A store failure saying `message`, caused by `source`.
    pub fn store(
        message: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self {
            kind: ArtifactErrorKind::Store,
            message: message.into(),
            source: Some(Box::new(source)),
        }
    }

    /// A store failure with no cause to attach (a record that cannot be decoded).
    pub fn corrupt(message: impl Into<String>) -> Self {
        Self::new(ArtifactErrorKind::Store, message)
    }

    /// NotFound saying `message`.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ArtifactErrorKind::NotFound, message)
    }

    /// InvalidArgument saying `message`.
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Self::new(ArtifactErrorKind::InvalidArgument, message)
    }

    /// InvalidState saying `message`.
    pub fn invalid_state(message: impl Into<String>) -> Self {
        Self::new(ArtifactErrorKind::InvalidState, message)
    }

    /// The conflict a change made against `base` meets when the head is `head`.
    pub fn conflict(id: &str, base: u64, head: u64, changes_since: Vec<ChangeSince>) -> Self {
        let n = changes_since.len();
        let who: Vec<String> = changes_since
            .iter()
            .map(|c| format!("v{} {} by {}", c.version, c.op, c.actor))
            .collect();
        let message = format!(
            "{id} is at version {head}, not {base}: {n} change{} since ({}).",
            if n == 1 { "" } else { "s" },
            who.join(", ")
        );
        Self::new(
            ArtifactErrorKind::Conflict {
                head,
                changes_since,
            },
            message,
        )
    }

    /// What kind of error this is.
    pub fn kind(&self) -> &ArtifactErrorKind {
        &self.kind
    }

    /// The sentence saying what happened.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// True for a refusal (the call changed nothing and can be corrected);
    /// false for a store failure.
    pub fn is_refusal(&self) -> bool {
        !matches!(self.kind, ArtifactErrorKind::Store)
    }
}
