//! The one error type of the contract: a refusal (the caller asked for something not allowed) or a failure (storage broke).

use std::fmt;

/// Why an operation did not succeed.
///
/// Every kind but [`ErrorKind::Failure`] is a *refusal*: the model asked for
/// something the contract does not allow, a tool returns the message to the
/// model as text and the run goes on. A `Failure` means the storage broke
/// (I/O error, lost connection, corrupt row) and must not be hidden.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The path does not exist (or belongs to another tenant).
    NotFound,
    /// Something already stands where the operation would create it.
    AlreadyExists,
    /// A file operation was given a directory.
    IsADirectory,
    /// A directory operation was given a file, or a parent is a file.
    NotADirectory,
    /// Deleting a directory that still has entries.
    DirectoryNotEmpty,
    /// A path that cannot be parsed or climbs above the root.
    InvalidPath,
    /// A bad regex, a bad glob, an offset past the end, an edit that cannot apply.
    InvalidArgument,
    /// Binary content asked for as text.
    NotText,
    /// Content or a result larger than the backend allows.
    TooLarge,
    /// A write past the tenant's quota.
    QuotaExceeded,
    /// A concurrent change won.
    Conflict,
    /// The backend does not allow this access (e.g. a symlink leading out).
    PermissionDenied,
    /// The backend cannot do this at all.
    Unsupported,
    /// The operation ran out of time.
    Timeout,
    /// The storage broke; not a refusal.
    Failure,
}

impl ErrorKind {
    /// The snake_case name printed by the CLI and the tools (`not_found`, `invalid_path`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::NotFound => "not_found",
            ErrorKind::AlreadyExists => "already_exists",
            ErrorKind::IsADirectory => "is_a_directory",
            ErrorKind::NotADirectory => "not_a_directory",
            ErrorKind::DirectoryNotEmpty => "directory_not_empty",
            ErrorKind::InvalidPath => "invalid_path",
            ErrorKind::InvalidArgument => "invalid_argument",
            ErrorKind::NotText => "not_text",
            ErrorKind::TooLarge => "too_large",
            ErrorKind::QuotaExceeded => "quota_exceeded",
            ErrorKind::Conflict => "conflict",
            ErrorKind::PermissionDenied => "permission_denied",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Failure => "failure",
        }
    }

    /// Every kind, for tables and parsers.
    pub const ALL: [ErrorKind; 15] = [
        ErrorKind::NotFound,
        ErrorKind::AlreadyExists,
        ErrorKind::IsADirectory,
        ErrorKind::NotADirectory,
        ErrorKind::DirectoryNotEmpty,
        ErrorKind::InvalidPath,
        ErrorKind::InvalidArgument,
        ErrorKind::NotText,
        ErrorKind::TooLarge,
        ErrorKind::QuotaExceeded,
        ErrorKind::Conflict,
        ErrorKind::PermissionDenied,
        ErrorKind::Unsupported,
        ErrorKind::Timeout,
        ErrorKind::Failure,
    ];

    /// The kind named by `name` (the inverse of [`ErrorKind::as_str`]).
    pub fn from_name(name: &str) -> Option<ErrorKind> {
        Self::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

type Source = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A refusal or a failure, with one clear sentence that names only virtual paths.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Error {
    kind: ErrorKind,
    message: String,
    #[source]
    source: Option<Source>,
}

/// The contract's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A refusal of `kind` with a message for the model. Use [`Error::failure`] for broken storage.
    pub fn refusal(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            source: None,
        }
    }

    /// A failure of the storage. `message` must not name a host path; the
    /// source may (it is for logs, not for the model).
    pub fn failure(message: impl Into<String>, source: impl Into<Source>) -> Self {
        Self {
            kind: ErrorKind::Failure,
            message: message.into(),
            source: Some(source.into()),
        }
    }

    /// A failure with no underlying error value.
    pub fn failure_msg(message: impl Into<String>) -> Self {
        Self {
            kind: ErrorKind::Failure,
            message: message.into(),
            source: None,
        }
    }

    /// What kind of error this is.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The one-sentence message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// True for a refusal, false for a failure.
    pub fn is_refusal(&self) -> bool {
        self.kind != ErrorKind::Failure
    }

    /// `path` does not exist.
    pub fn not_found(path: impl fmt::Display) -> Self {
        Self::refusal(
            ErrorKind::NotFound,
            format!("{path} does not exist; list its directory to see what is there."),
        )
    }

    /// `path` is a directory where a file was expected.
    pub fn is_a_directory(path: impl fmt::Display) -> Self {
        Self::refusal(
            ErrorKind::IsADirectory,
            format!("{path} is a directory, not a file; use ls to see its entries."),
        )
    }

    /// `path` (or one of its parents) is a file where a directory was expected.
    pub fn not_a_directory(path: impl fmt::Display) -> Self {
        Self::refusal(
            ErrorKind::NotADirectory,
            format!("{path} is a file, not a directory."),
        )
    }

    /// `path` holds bytes that are not UTF-8 text.
    pub fn not_text(path: impl fmt::Display) -> Self {
        Self::refusal(
            ErrorKind::NotText,
            format!("{path} is not UTF-8 text; read it as bytes instead."),
        )
    }

    /// A bad argument, described by `message`.
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Self::refusal(ErrorKind::InvalidArgument, message)
    }

    /// Content of `size` bytes for `path` is larger than `max`.
    pub fn too_large(path: impl fmt::Display, size: u64, max: u64) -> Self {
        Self::refusal(
            ErrorKind::TooLarge,
            format!("{path} is {size} bytes, more than the limit of {max} bytes."),
        )
    }

    /// The backend does not support `what`.
    pub fn unsupported(what: impl fmt::Display) -> Self {
        Self::refusal(
            ErrorKind::Unsupported,
            format!("this backend does not support {what}."),
        )
    }
}
