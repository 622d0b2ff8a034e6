//! The one error type of the contract: a refusal (the caller asked for something not allowed) or a failure (storage broke).

use std::fmt;

use crate::path::VPath;
use crate::shown;

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
    /// A directory operation was given a file, or a write or `make_dir` found a
    /// file among the parents of its path. Reading, listing or deleting a
    /// path beneath a file is NotFound: nothing stands there.
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
///
/// An error about one path keeps that path as a field ([`Error::path`]) and
/// renders its message from it: `before`, the path as [`shown`] shows it,
/// `after`. So a composite that mounted the backend re-prefixes the path
/// ([`Error::map_path`]) instead of rewriting words in the text, and a path
/// holding a control character is quoted wherever it appears.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Error {
    kind: ErrorKind,
    message: String,
    at: Option<Box<At>>,
    #[source]
    source: Option<Source>,
}

/// The path an error is about, and the words either side of it.
#[derive(Debug)]
struct At {
    path: VPath,
    before: String,
    after: String,
}

impl At {
    fn render(&self) -> String {
        format!("{}{}{}", self.before, shown(self.path.as_str()), self.after)
    }
}

/// The contract's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A refusal of `kind` with a message for the model. Use [`Error::failure`]
    /// for broken storage, and [`Error::refusal_at`] when the message names a path.
    pub fn refusal(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            at: None,
            source: None,
        }
    }

    /// A refusal of `kind` about `path`, whose message is `before`, the path
    /// (control characters quoted, see [`shown`]), then `after`:
    /// `Error::refusal_at(ErrorKind::Conflict, path, "", " changed meanwhile; try again.")`.
    pub fn refusal_at(
        kind: ErrorKind,
        path: &VPath,
        before: impl Into<String>,
        after: impl Into<String>,
    ) -> Self {
        let at = At {
            path: path.clone(),
            before: before.into(),
            after: after.into(),
        };
        Self {
            kind,
            message: at.render(),
            at: Some(Box::new(at)),
            source: None,
        }
    }

    /// A failure of the storage. `message` must not name a host path; the
    /// source may (it is for logs, not for the model).
    pub fn failure(message: impl Into<String>, source: impl Into<Source>) -> Self {
        Self {
            kind: ErrorKind::Failure,
            message: message.into(),
            at: None,
            source: Some(source.into()),
        }
    }

    /// A failure with no underlying error value.
    pub fn failure_msg(message: impl Into<String>) -> Self {
        Self {
            kind: ErrorKind::Failure,
            message: message.into(),
            at: None,
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

    /// The path the error is about, when it was built with one.
    pub fn path(&self) -> Option<&VPath> {
        self.at.as_ref().map(|at| &at.path)
    }

    /// The same error about `f(path)`, its message rendered anew; unchanged
    /// when it names no path field. Kind and source are kept.
    pub fn map_path(mut self, f: impl FnOnce(&VPath) -> VPath) -> Self {
        if let Some(at) = self.at.as_mut() {
            at.path = f(&at.path);
            self.message = at.render();
        }
        self
    }

    /// True for a refusal, false for a failure.
    pub fn is_refusal(&self) -> bool {
        self.kind != ErrorKind::Failure
    }

    /// A refusal about `path` (a [`VPath`], or the string of one), keeping it
    /// as the path field when it is one; otherwise the text shows it as given.
    fn about(kind: ErrorKind, path: impl fmt::Display, after: &str) -> Self {
        let text = path.to_string();
        match VPath::parse(&text) {
            Ok(parsed) if parsed.as_str() == text => Self::refusal_at(kind, &parsed, "", after),
            _ => Self::refusal(kind, format!("{}{after}", shown(&text))),
        }
    }

    /// `path` does not exist.
    pub fn not_found(path: impl fmt::Display) -> Self {
        Self::about(
            ErrorKind::NotFound,
            path,
            " does not exist; list its directory to see what is there.",
        )
    }

    /// `path` is a directory where a file was expected.
    pub fn is_a_directory(path: impl fmt::Display) -> Self {
        Self::about(
            ErrorKind::IsADirectory,
            path,
            " is a directory, not a file; use ls to see its entries.",
        )
    }

    /// `path` (or one of its parents) is a file where a directory was expected.
    pub fn not_a_directory(path: impl fmt::Display) -> Self {
        Self::about(
            ErrorKind::NotADirectory,
            path,
            " is a file, not a directory.",
        )
    }

    /// `path` holds bytes that are not UTF-8 text.
    pub fn not_text(path: impl fmt::Display) -> Self {
        Self::about(
            ErrorKind::NotText,
            path,
            " is not UTF-8 text; read it as bytes instead.",
        )
    }

    /// A bad argument, described by `message`.
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Self::refusal(ErrorKind::InvalidArgument, message)
    }

    /// Content of `size` bytes for `path` is larger than `max`.
    pub fn too_large(path: impl fmt::Display, size: u64, max: u64) -> Self {
        Self::about(
            ErrorKind::TooLarge,
            path,
            &format!(" is {size} bytes, more than the limit of {max} bytes."),
        )
    }

    /// Deleting the directory `path`, which still has entries: DirectoryNotEmpty.
    pub fn directory_not_empty(path: &VPath) -> Self {
        Self::refusal_at(
            ErrorKind::DirectoryNotEmpty,
            path,
            "",
            " is a directory that still has entries; delete them first.",
        )
    }

    /// Deleting "/": InvalidPath.
    pub fn root_cannot_be_deleted() -> Self {
        Self::refusal(
            ErrorKind::InvalidPath,
            "the root \"/\" cannot be deleted; delete the entries inside it instead.",
        )
    }

    /// Something already stands at `path`, where a directory was to be made.
    pub fn already_exists(path: &VPath) -> Self {
        Self::refusal_at(
            ErrorKind::AlreadyExists,
            path,
            "",
            " already exists; give parents (mkdir -p) to accept an existing directory.",
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

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> VPath {
        VPath::parse(s).unwrap()
    }

    #[test]
    fn path_errors_keep_the_path_and_render_from_it() {
        let e = Error::not_found(p("/a/b.txt"));
        assert_eq!(e.path(), Some(&p("/a/b.txt")));
        assert_eq!(
            e.message(),
            "/a/b.txt does not exist; list its directory to see what is there."
        );
        let e = e.map_path(|inner| inner.under_prefix(&p("/m")));
        assert_eq!(e.kind(), ErrorKind::NotFound);
        assert_eq!(e.path(), Some(&p("/m/a/b.txt")));
        assert!(e.message().starts_with("/m/a/b.txt does not exist"));
        let e = Error::refusal_at(ErrorKind::Conflict, &p("/x"), "writing ", " lost a race.")
            .map_path(|inner| inner.under_prefix(&p("/m")));
        assert_eq!(e.message(), "writing /m/x lost a race.");
        assert_eq!(Error::not_found("/x").path(), Some(&p("/x")));
    }

    #[test]
    fn errors_without_a_path_field_are_left_as_they_are() {
        let e = Error::invalid_argument("/a is odd").map_path(|_| p("/zzz"));
        assert_eq!(e.path(), None);
        assert_eq!(e.message(), "/a is odd");
        let e = Error::not_found("not a/../path");
        assert_eq!(e.path(), None);
        assert!(e.message().starts_with("not a/../path does not exist"));
    }

    #[test]
    fn a_path_with_control_characters_is_quoted() {
        let e = Error::is_a_directory(p("/a\nb"));
        assert!(
            e.message().starts_with("\"/a\\nb\" is a directory"),
            "{}",
            e.message()
        );
        assert!(!e.message().contains('\n'));
        let e = Error::not_found("x\ny");
        assert!(!e.message().contains('\n'), "{}", e.message());
    }

    #[test]
    fn shared_delete_refusals() {
        let e = Error::root_cannot_be_deleted();
        assert_eq!(e.kind(), ErrorKind::InvalidPath);
        assert!(e.message().starts_with("the root \"/\" cannot be deleted"));
        let e = Error::directory_not_empty(&p("/d"));
        assert_eq!(e.kind(), ErrorKind::DirectoryNotEmpty);
        assert!(e.message().starts_with("/d is a directory"));
    }
}
