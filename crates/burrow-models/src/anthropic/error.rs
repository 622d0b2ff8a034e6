//! Anthropic's error objects (`{"type":"error","error":{"type":"overloaded_error","message":...}}`) as model error kinds, for error statuses and for `error` events inside a 200 stream.
//!
//! The same object arrives as the body of a non-2xx response and as an
//! `error` event inside a 200 stream; both map through [`kind_of`], so an
//! in-stream `overloaded_error` is `overloaded` exactly as a 529 is
//! (ADR 0156). A 429 for the organisation's monthly spend limit is never
//! retried: waiting seconds cannot lift it.

use burrow_runtime::model::{ModelError, ModelErrorKind};
use serde::Deserialize;

use crate::http::{self, Failure};

/// The `error` member of an Anthropic error object.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct WireError {
    /// `overloaded_error`, `rate_limit_error`, `invalid_request_error`, ...
    #[serde(rename = "type", default)]
    pub kind: String,
    /// The provider's sentence.
    #[serde(default)]
    pub message: String,
    /// Extra details (a spend limit names itself here).
    #[serde(default)]
    pub details: Option<WireDetails>,
}

/// `error.details`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct WireDetails {
    #[serde(default)]
    pub error_code: Option<String>,
}

#[derive(Deserialize)]
struct WireBody {
    error: WireError,
}

/// The kind an Anthropic error names (`status`, when there is one, decides
/// for a type this adapter does not know).
pub(crate) fn kind_of(error: &WireError, status: Option<u16>) -> ModelErrorKind {
    if http::says_context_too_long(&error.message) || error.kind == "request_too_large" {
        return ModelErrorKind::ContextTooLong;
    }
    match error.kind.as_str() {
        "overloaded_error" => ModelErrorKind::Overloaded,
        "rate_limit_error" => ModelErrorKind::RateLimited,
        "authentication_error" | "permission_error" | "billing_error" => {
            ModelErrorKind::Authentication
        }
        "invalid_request_error" | "not_found_error" => ModelErrorKind::InvalidRequest,
        "api_error" => ModelErrorKind::Server,
        "timeout_error" => ModelErrorKind::Transport,
        _ => match status {
            Some(status) => http::status_kind(status),
            None => ModelErrorKind::Server,
        },
    }
}

/// True for a 429 that a retry cannot fix: the organisation's monthly spend limit.
fn is_spend_limit(error: &WireError) -> bool {
    error.details.as_ref().and_then(|d| d.error_code.as_deref())
        == Some("enforced_spend_limit_reached")
}

/// The failure an error status with this body means.
///
/// # Behavior
/// 401 and 403 are `authentication` with burrow's sentence (never the
/// provider's text); otherwise the body's `error.type` picks the kind
/// ([`kind_of`]) and its message is kept on one line. A 2xx body (JSON
/// instead of an event stream) is `invalid_stream`. Retried as
/// [`Failure::for_status`] says, except a spend limit.
pub(crate) fn status_failure(status: u16, body: &[u8]) -> Failure {
    let error = serde_json::from_slice::<WireBody>(body)
        .map(|b| b.error)
        .unwrap_or_default();
    let kind = match status {
        401 | 403 => ModelErrorKind::Authentication,
        200..=299 => ModelErrorKind::InvalidStream,
        _ if error.kind.is_empty() && error.message.is_empty() => http::status_kind(status),
        _ => kind_of(&error, Some(status)),
    };
    let said = (!error.message.is_empty()).then_some(error.message.as_str());
    let message = if (200..300).contains(&status) {
        "Anthropic answered with JSON, not an event stream (was `stream: true` dropped by a proxy?)"
            .to_owned()
    } else {
        http::status_message(status, said)
    };
    let failure = Failure::for_status(status, ModelError::new(kind, message));
    if is_spend_limit(&error) {
        failure.no_retry()
    } else {
        failure
    }
}

/// The failure an `error` event inside the stream means (retried by kind,
/// while nothing of the answer reached the caller).
pub(crate) fn stream_failure(error: Option<&WireError>) -> Failure {
    let Some(error) = error else {
        return Failure::of(
            ModelErrorKind::Server,
            "the Anthropic stream sent an error event without details",
        );
    };
    let kind = kind_of(error, None);
    let name = if error.kind.is_empty() {
        String::new()
    } else {
        format!(" ({})", http::one_line(&error.kind))
    };
    let message = match http::one_line(&error.message) {
        m if m.is_empty() => format!("the Anthropic stream reported an error{name}"),
        m => format!("the Anthropic stream reported an error{name}: {m}"),
    };
    let failure = Failure::new(ModelError::new(kind, message));
    if is_spend_limit(error) {
        failure.no_retry()
    } else {
        failure
    }
}
