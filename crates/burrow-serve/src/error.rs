//! `ServeError`: what the server refuses or fails at, as a kind and one sentence, and its RFC 9457 `application/problem+json` response.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use burrow_runtime::runner::{RunnerError, RunnerErrorKind};
use burrow_runtime::session::StoreError;
use serde_json::{Map, Value, json};

/// What kind of refusal or failure a [`ServeError`] is.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServeErrorKind {
    /// No bearer token, or one the tokens file does not hold (401).
    Unauthorized,
    /// The thread or run does not exist for this tenant (404).
    NotFound,
    /// The request is malformed: bad JSON, a missing field, a bad id (400).
    InvalidArgument,
    /// The request does not fit the thread's state (409).
    InvalidState,
    /// An id is already used (409).
    IdInUse,
    /// The body is larger than the server accepts (413).
    TooLarge,
    /// The server is at its bound of watchers, or shutting down (503).
    Unavailable,
    /// The tokens file cannot be read or written, or holds a bad line.
    Tokens,
    /// An artifact change was made against a version that is no longer the
    /// head (409); the problem carries `head` and `changes_since`.
    Conflict,
    /// An artifact's snapshot does not fit its kind's schema (422); the
    /// problem carries the failing `paths`.
    Validation,
    /// The artifact kind is not one of the workspace's kinds (422).
    UnknownKind,
    /// A text edit's anchor does not occur exactly once (422); the problem
    /// carries `occurrences`.
    Edit,
    /// A JSON Patch cannot be applied: a missing path, a failed `test` (422).
    Patch,
    /// The session store failed (500).
    Store,
    /// Binding or serving the socket failed.
    Io,
}

impl ServeErrorKind {
    /// A short stable name (`unauthorized`, `not_found`, ...): the problem's `kind`.
    pub fn as_str(self) -> &'static str {
        match self {
            ServeErrorKind::Unauthorized => "unauthorized",
            ServeErrorKind::NotFound => "not_found",
            ServeErrorKind::InvalidArgument => "invalid_argument",
            ServeErrorKind::InvalidState => "invalid_state",
            ServeErrorKind::IdInUse => "id_in_use",
            ServeErrorKind::TooLarge => "too_large",
            ServeErrorKind::Unavailable => "unavailable",
            ServeErrorKind::Tokens => "tokens",
            ServeErrorKind::Conflict => "conflict",
            ServeErrorKind::Validation => "validation",
            ServeErrorKind::UnknownKind => "unknown_kind",
            ServeErrorKind::Edit => "edit",
            ServeErrorKind::Patch => "patch",
            ServeErrorKind::Store => "store",
            ServeErrorKind::Io => "io",
        }
    }

    /// The HTTP status a refusal of this kind is answered with.
    pub fn status(self) -> StatusCode {
        match self {
            ServeErrorKind::Unauthorized => StatusCode::UNAUTHORIZED,
            ServeErrorKind::NotFound => StatusCode::NOT_FOUND,
            ServeErrorKind::InvalidArgument => StatusCode::BAD_REQUEST,
            ServeErrorKind::InvalidState | ServeErrorKind::IdInUse | ServeErrorKind::Conflict => {
                StatusCode::CONFLICT
            }
            ServeErrorKind::Validation
            | ServeErrorKind::UnknownKind
            | ServeErrorKind::Edit
            | ServeErrorKind::Patch => StatusCode::UNPROCESSABLE_ENTITY,
            ServeErrorKind::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ServeErrorKind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            ServeErrorKind::Tokens | ServeErrorKind::Store | ServeErrorKind::Io => {
                StatusCode::INTERNAL_SERVER_ERROR
            }
        }
    }

    fn title(self) -> &'static str {
        match self {
            ServeErrorKind::Unauthorized => "No valid bearer token",
            ServeErrorKind::NotFound => "Not found",
            ServeErrorKind::InvalidArgument => "Invalid argument",
            ServeErrorKind::InvalidState => "Not possible in the thread's state",
            ServeErrorKind::IdInUse => "Id already used",
            ServeErrorKind::TooLarge => "Request body too large",
            ServeErrorKind::Unavailable => "Unavailable",
            ServeErrorKind::Tokens => "Tokens file error",
            ServeErrorKind::Conflict => "Conflict with the head version",
            ServeErrorKind::Validation => "The snapshot does not fit its kind",
            ServeErrorKind::UnknownKind => "Unknown artifact kind",
            ServeErrorKind::Edit => "The edit's anchor does not occur once",
            ServeErrorKind::Patch => "The patch cannot be applied",
            ServeErrorKind::Store => "Session store error",
            ServeErrorKind::Io => "I/O error",
        }
    }
}

/// An error of the server: a kind and one sentence (never a host path or a token).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}: {message}", kind.as_str())]
pub struct ServeError {
    kind: ServeErrorKind,
    message: String,
    /// Members the problem carries beside the standard ones (a conflict's
    /// `head` and `changes_since`, a validation's `paths`).
    extensions: Map<String, Value>,
}

/// A result of the server.
pub type ServeResult<T> = Result<T, ServeError>;

impl ServeError {
    /// An error of `kind` saying `message`.
    pub fn new(kind: ServeErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            extensions: Map::new(),
        }
    }

    /// The same error, its problem carrying the member `name` (one of
    /// `type`, `title`, `status`, `detail` or `kind` is never replaced).
    pub fn with_member(mut self, name: &str, value: Value) -> Self {
        if !["type", "title", "status", "detail", "kind"].contains(&name) {
            self.extensions.insert(name.to_owned(), value);
        }
        self
    }

    /// The problem's members beside the standard ones.
    pub fn members(&self) -> &Map<String, Value> {
        &self.extensions
    }

    /// Its kind.
    pub fn kind(&self) -> ServeErrorKind {
        self.kind
    }

    /// Its sentence.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The kind of a runner refusal.
    pub(crate) fn of_runner_kind(kind: RunnerErrorKind, message: impl Into<String>) -> Self {
        let kind = match kind {
            RunnerErrorKind::NotFound => ServeErrorKind::NotFound,
            RunnerErrorKind::InvalidState => ServeErrorKind::InvalidState,
            RunnerErrorKind::InvalidArgument => ServeErrorKind::InvalidArgument,
            RunnerErrorKind::IdInUse => ServeErrorKind::IdInUse,
            RunnerErrorKind::Closed => ServeErrorKind::Unavailable,
            _ => ServeErrorKind::Store,
        };
        Self::new(kind, message)
    }
}

impl From<RunnerError> for ServeError {
    fn from(e: RunnerError) -> Self {
        if e.kind() == RunnerErrorKind::Store {
            return store_failed(&e);
        }
        Self::of_runner_kind(e.kind(), e.message())
    }
}

impl From<StoreError> for ServeError {
    fn from(e: StoreError) -> Self {
        use burrow_runtime::session::StoreErrorKind as K;
        match e.kind() {
            K::InvalidArgument => Self::new(ServeErrorKind::InvalidArgument, e.message()),
            K::NotFound => Self::new(ServeErrorKind::NotFound, e.message()),
            _ => store_failed(&e),
        }
    }
}

/// A store failure: the cause goes to the server's log, never to the client (it may
/// name a host path or a database detail).
fn store_failed(e: &dyn std::fmt::Display) -> ServeError {
    tracing::error!(error = %e, "the session store failed");
    ServeError::new(
        ServeErrorKind::Store,
        "the session store failed; the server's log has the cause",
    )
}

/// The media type of RFC 9457 problem details.
pub const PROBLEM_JSON: &str = "application/problem+json";

impl IntoResponse for ServeError {
    fn into_response(self) -> Response {
        let status = self.kind.status();
        let mut body = json!({
            "type": format!("urn:burrow:problem:{}", self.kind.as_str()),
            "title": self.kind.title(),
            "status": status.as_u16(),
            "detail": self.message,
            "kind": self.kind.as_str(),
        });
        if let Value::Object(members) = &mut body {
            members.extend(self.extensions);
        }
        let mut response = (status, body.to_string()).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
        if self.kind == ServeErrorKind::Unauthorized {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}
