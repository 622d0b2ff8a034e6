//! The HTTP side every adapter shares: client configuration (key redacted), one streamed JSON POST with retries, status codes mapped to error kinds.
//!
//! An adapter describes its wire with a [`Wire`]: a fresh [`Decoder`] per
//! attempt that turns SSE events into [`StreamEvent`]s, and how an error
//! status's body reads. [`HttpClient::stream`] does the rest: it sends the
//! request, maps a failed status (with `retry-after-ms`, `retry-after` and
//! `x-should-retry`) to a [`ModelError`], feeds the body through the SSE
//! parser and the decoder, and retries as the [`RetryPolicy`] says while
//! **no part of the answer has reached the caller**. Events are held back
//! until the first part starts (usage reported before it, as Anthropic's
//! `message_start` does, commits nothing), so an overloaded error right
//! after the stream opened is retried, and one after the first text is
//! not: the caller gets the text, then the error, then nothing.
//!
//! A stream that ends before its end marker is a transport failure. No error
//! message holds the key, a header, or the request body; the provider's own
//! error message is kept (cut to one line, the key blanked out if it were
//! ever echoed), except for authentication failures, which get ours.
//!
//! Dropping the stream drops the response and so the connection: that is
//! how a cancelled run stops a request.

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use burrow_runtime::model::{EventStream, ModelError, ModelErrorKind, StreamEvent};
use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};

use crate::retry::{RetryPolicy, retry_after};
use crate::sse::{SseEvent, SseParser};

/// Most bytes of an error response's body read to find its message.
const ERROR_BODY_LIMIT: usize = 64 * 1024;
/// Longest provider message kept in an error (characters).
const MESSAGE_CHARS: usize = 300;

/// An API key. Its `Debug` shows nothing of it.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// A key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The key's text, for the one header that carries it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// True when there is no key.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

impl From<String> for ApiKey {
    fn from(key: String) -> Self {
        Self(key)
    }
}

impl From<&str> for ApiKey {
    fn from(key: &str) -> Self {
        Self(key.to_owned())
    }
}

/// How to reach a provider. Build with [`ClientConfig::new`] and adjust the fields.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// The provider's base URL (e.g. `https://api.openai.com/v1`); the
    /// adapter appends its path. A trailing `/` is ignored.
    pub base_url: String,
    /// The key the adapter sends in its auth header.
    pub api_key: ApiKey,
    /// How long one attempt waits for the response to start (its status and
    /// headers; for an error status, its body too). An attempt that times out
    /// is not sent again: a server silent that long is not expected to answer
    /// the next time, so a silent server costs this much once, not once per
    /// retry (docs/adr/0230). `None` waits forever. Default 600 s, as the
    /// official SDKs.
    pub request_timeout: Option<Duration>,
    /// How long a started stream may send no byte at all; past it the attempt
    /// fails as a cut connection does (retried while nothing of the answer
    /// reached the caller). A long answer is never cut while bytes flow, and
    /// providers' keep-alives count. `None` waits forever. Default 120 s.
    pub idle_timeout: Option<Duration>,
    /// How long to wait for the TCP and TLS connection. `None` waits as long
    /// as the system does. Default 5 s, as the official SDKs.
    pub connect_timeout: Option<Duration>,
    /// How long an idle connection is kept for the next request. `None`
    /// keeps it until the server closes it. Default 90 s.
    pub pool_idle_timeout: Option<Duration>,
    /// When failed requests are sent again.
    pub retry: RetryPolicy,
}

impl ClientConfig {
    /// A configuration with the default timeouts and retry policy.
    pub fn new(base_url: impl Into<String>, api_key: impl Into<ApiKey>) -> Self {
        Self {
            base_url: base_url.into(),
            api_key: api_key.into(),
            request_timeout: Some(Duration::from_secs(600)),
            idle_timeout: Some(Duration::from_secs(120)),
            connect_timeout: Some(Duration::from_secs(5)),
            pool_idle_timeout: Some(Duration::from_secs(90)),
            retry: RetryPolicy::default(),
        }
    }

    /// The same configuration with another retry policy.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// The same configuration with another request timeout (see [`request_timeout`](Self::request_timeout)).
    pub fn with_request_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// The same configuration with another stream idle timeout (see [`idle_timeout`](Self::idle_timeout)).
    pub fn with_idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.idle_timeout = timeout;
        self
    }
}

/// A configuration from the conventional environment variables: the key
/// from `key_var` (required, non-empty) and the base URL from `base_var`
/// (else `default_base_url`).
///
/// # Behavior
/// A missing or empty key is an `Authentication` error that names the
/// variable, before any request is made.
pub fn config_from_env(
    key_var: &str,
    base_var: &str,
    default_base_url: &str,
) -> Result<ClientConfig, ModelError> {
    let key = std::env::var(key_var).unwrap_or_default();
    if key.trim().is_empty() {
        return Err(ModelError::new(
            ModelErrorKind::Authentication,
            format!(
                "{key_var} is not set: export the API key in it (any non-empty value for a server that needs none)"
            ),
        ));
    }
    let base = std::env::var(base_var)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| default_base_url.to_owned());
    Ok(ClientConfig::new(base.trim(), key.trim()))
}

/// One POST of a JSON body to a path under the base URL.
#[derive(Debug, Clone)]
pub struct JsonRequest {
    path: String,
    headers: HeaderMap,
    body: Bytes,
}

impl JsonRequest {
    /// A request of `body` (already JSON) to `path` (e.g. `/chat/completions`).
    pub fn new(path: impl Into<String>, body: impl Into<Bytes>) -> Self {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(
            reqwest::header::ACCEPT,
            HeaderValue::from_static("text/event-stream"),
        );
        Self {
            path: path.into(),
            headers,
            body: body.into(),
        }
    }

    /// A request of `body` serialised as JSON.
    pub fn json(path: impl Into<String>, body: &serde_json::Value) -> Result<Self, ModelError> {
        let bytes = serde_json::to_vec(body).map_err(|e| {
            ModelError::new(
                ModelErrorKind::InvalidRequest,
                format!("the request could not be written as JSON: {e}"),
            )
        })?;
        Ok(Self::new(path, bytes))
    }

    /// The same request with a header (an invalid value is an `InvalidRequest` error naming the header).
    pub fn header(mut self, name: &'static str, value: &str) -> Result<Self, ModelError> {
        let value = header_value(name, value)?;
        self.headers.insert(HeaderName::from_static(name), value);
        Ok(self)
    }

    /// The same request with a header that carries a secret: marked
    /// sensitive, and its value never appears in an error.
    pub fn secret_header(mut self, name: &'static str, value: &str) -> Result<Self, ModelError> {
        let mut value = header_value(name, value)?;
        value.set_sensitive(true);
        self.headers.insert(HeaderName::from_static(name), value);
        Ok(self)
    }

    /// The path under the base URL.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The body's bytes.
    pub fn body(&self) -> &[u8] {
        &self.body
    }
}

fn header_value(name: &str, value: &str) -> Result<HeaderValue, ModelError> {
    HeaderValue::from_str(value).map_err(|_| {
        ModelError::new(
            ModelErrorKind::InvalidRequest,
            format!("the value for the {name} header holds characters a header cannot carry"),
        )
    })
}

/// A failed attempt: the error and whether it may be retried.
#[derive(Debug, Clone)]
pub struct Failure {
    /// What went wrong.
    pub error: ModelError,
    /// Whether sending the request again may help (the policy still decides how often).
    pub retry: bool,
}

impl Failure {
    /// A failure retried when its kind is ([`ModelErrorKind::is_retryable`]).
    pub fn new(error: ModelError) -> Self {
        let retry = error.kind.is_retryable();
        Self { error, retry }
    }

    /// A failure of `kind` with `message`.
    pub fn of(kind: ModelErrorKind, message: impl Into<String>) -> Self {
        Self::new(ModelError::new(kind, message))
    }

    /// A failure for an HTTP `status`: retried for 408, 409, 429 and 5xx, as the official SDKs do.
    pub fn for_status(status: u16, error: ModelError) -> Self {
        Self {
            error,
            retry: status_retryable(status),
        }
    }

    /// The same failure, never retried.
    pub fn no_retry(mut self) -> Self {
        self.retry = false;
        self
    }

    /// A stream that ended before its end marker: a transport failure, retried.
    pub fn ended_early() -> Self {
        Self::of(
            ModelErrorKind::Transport,
            "the model's stream ended before its end marker (the connection was probably cut)",
        )
    }
}

impl From<ModelError> for Failure {
    fn from(error: ModelError) -> Self {
        Self::new(error)
    }
}

/// Whether to read on after an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// More events follow.
    More,
    /// The end marker arrived: the answer is complete (the decoder pushed its
    /// `Finish`) and the rest of the body is not read.
    Done,
}

/// Turns one attempt's SSE events into stream events.
pub trait Decoder: Send + 'static {
    /// Takes one SSE event, pushing the stream events it means onto `out`.
    ///
    /// # Behavior
    /// Returns [`Flow::Done`] at the wire's end marker, having pushed the
    /// answer's last events (open parts ended, usage, one `Finish`). An
    /// error the provider sent inside the stream is an `Err`; events pushed
    /// before it reach the caller first if the answer has already started.
    fn event(&mut self, event: SseEvent, out: &mut VecDeque<StreamEvent>) -> Result<Flow, Failure>;

    /// The body ended without [`Flow::Done`].
    ///
    /// # Behavior
    /// By default a transport failure ([`Failure::ended_early`]), retried
    /// while nothing of the answer reached the caller. A decoder may instead
    /// finish the answer (push its last events and return `Ok`).
    fn end(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), Failure> {
        let _ = out;
        Err(Failure::ended_early())
    }
}

/// A provider's wire: its decoder and how its error bodies read.
pub trait Wire: Send + Sync + 'static {
    /// The decoder of one attempt.
    type Decoder: Decoder;

    /// A decoder for a new attempt (each retry starts from nothing).
    fn decoder(&self) -> Self::Decoder;

    /// The failure an error `status` with `body` means.
    ///
    /// # Behavior
    /// Picks the kind from the body when it says more than the status (a
    /// context-length error inside a 400, an in-body overload) and keeps the
    /// provider's message ([`status_message`] helps); the retry-after headers
    /// and `x-should-retry` are applied afterwards by [`HttpClient::stream`].
    /// It is also asked about a 2xx answer that came as `application/json`
    /// instead of an event stream.
    fn status_error(&self, status: u16, body: &[u8]) -> Failure;
}

/// The error kind an HTTP status means on its own.
pub fn status_kind(status: u16) -> ModelErrorKind {
    match status {
        401 | 403 => ModelErrorKind::Authentication,
        408 => ModelErrorKind::Transport,
        413 => ModelErrorKind::ContextTooLong,
        429 => ModelErrorKind::RateLimited,
        503 | 529 => ModelErrorKind::Overloaded,
        500..=599 => ModelErrorKind::Server,
        _ => ModelErrorKind::InvalidRequest,
    }
}

/// Whether a status is worth a retry on its own: 408, 409, 429 and 5xx.
pub fn status_retryable(status: u16) -> bool {
    matches!(status, 408 | 409 | 429) || status >= 500
}

/// The error kind a provider's error `type` or `code` string names, if it names one
/// (`rate_limit_error`, `overloaded_error`, `context_length_exceeded`, ...).
pub fn code_kind(code: &str) -> Option<ModelErrorKind> {
    let code = code.to_ascii_lowercase();
    let kind = if code.contains("rate_limit") || code == "too_many_requests" {
        ModelErrorKind::RateLimited
    } else if code.contains("overloaded") || code.contains("unavailable") {
        ModelErrorKind::Overloaded
    } else if code.contains("context_length") || code.contains("context_window") {
        ModelErrorKind::ContextTooLong
    } else if code.contains("authentication")
        || code.contains("permission")
        || code.contains("api_key")
        || code == "unauthorized"
    {
        ModelErrorKind::Authentication
    } else if code.contains("invalid_request") || code == "invalid_prompt" || code == "not_found" {
        ModelErrorKind::InvalidRequest
    } else if code.contains("server_error") || code == "api_error" || code.contains("internal") {
        ModelErrorKind::Server
    } else if code.contains("timeout") {
        ModelErrorKind::Transport
    } else {
        return None;
    };
    Some(kind)
}

/// True when a provider's message says the conversation does not fit the context window.
pub fn says_context_too_long(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("maximum context length")
        || m.contains("context window")
        || m.contains("context_length_exceeded")
        || m.contains("prompt is too long")
        || m.contains("too many tokens")
}

/// The sentence for an error status: `the model provider answered HTTP 429 (Too Many Requests): MESSAGE`.
/// An authentication failure never carries the provider's text.
pub fn status_message(status: u16, provider_message: Option<&str>) -> String {
    let reason = reqwest::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .map(|r| format!(" ({r})"))
        .unwrap_or_default();
    if matches!(status, 401 | 403) {
        return format!(
            "the model provider answered HTTP {status}{reason}: the API key is missing, wrong or not allowed to use this model"
        );
    }
    match provider_message.map(one_line).filter(|m| !m.is_empty()) {
        Some(message) => format!("the model provider answered HTTP {status}{reason}: {message}"),
        None => format!("the model provider answered HTTP {status}{reason}"),
    }
}

/// A provider's message as one line of at most a few hundred characters.
pub fn one_line(text: &str) -> String {
    let flat: String = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .filter(|c| !c.is_control())
        .collect();
    match flat.char_indices().nth(MESSAGE_CHARS) {
        Some((at, _)) => format!("{}...", &flat[..at]),
        None => flat,
    }
}

/// A client for one provider endpoint; cheap to clone.
#[derive(Debug, Clone)]
pub struct HttpClient {
    inner: reqwest::Client,
    config: Arc<ClientConfig>,
}

impl HttpClient {
    /// Builds the reqwest client (rustls) for `config`.
    pub fn new(config: ClientConfig) -> Result<Self, ModelError> {
        let mut builder = reqwest::Client::builder().pool_idle_timeout(config.pool_idle_timeout);
        if let Some(timeout) = config.connect_timeout {
            builder = builder.connect_timeout(timeout);
        }
        let inner = builder.build().map_err(|_| {
            ModelError::new(
                ModelErrorKind::Transport,
                "the HTTP client could not be set up (TLS roots or resolver unavailable)",
            )
        })?;
        reqwest::Url::parse(config.base_url.trim_end_matches('/')).map_err(|e| {
            ModelError::new(
                ModelErrorKind::InvalidRequest,
                format!("the model provider's base URL is not a URL: {e}"),
            )
        })?;
        Ok(Self {
            inner,
            config: Arc::new(config),
        })
    }

    /// The configuration it was built with.
    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// The full URL of `path` under the base URL.
    pub fn endpoint(&self, path: &str) -> String {
        format!(
            "{}/{}",
            self.config.base_url.trim_end_matches('/'),
            path.trim_start_matches('/')
        )
    }

    /// Sends `request` and returns its answer as events decoded by `wire`,
    /// retrying as the configuration's policy says.
    ///
    /// # Behavior
    /// Resolves once the first event of the answer is there, or the first
    /// attempt failed and is retried (the stream's first item is then a
    /// [`StreamEvent::Retry`], one before each retry's wait), or the first
    /// attempt failed for good (the outer `Err`). Retries happen only before
    /// the answer's first part; an error after a retry or after a part is the
    /// stream's last item. A stream that ends before its end marker is a
    /// `Transport` error.
    pub async fn stream<W: Wire>(
        &self,
        request: JsonRequest,
        wire: Arc<W>,
    ) -> Result<EventStream, ModelError> {
        let mut driver = Driver {
            client: self.clone(),
            request,
            wire,
            retries: 0,
            body: None,
            parser: SseParser::new(),
            decoder: None,
            out: VecDeque::new(),
            committed: false,
            done: false,
            error: None,
            over: false,
            wait: None,
        };
        match driver.next().await {
            Some(Ok(first)) => {
                let rest = futures::stream::unfold(driver, |mut d| async move {
                    let item = d.next().await?;
                    Some((item, d))
                });
                Ok(futures::stream::once(async move { Ok(first) })
                    .chain(rest)
                    .boxed())
            }
            Some(Err(e)) => Err(e),
            None => Err(ModelError::new(
                ModelErrorKind::InvalidStream,
                "the model's stream ended without any event",
            )),
        }
    }

    fn redact(&self, mut error: ModelError) -> ModelError {
        let key = self.config.api_key.expose();
        if key.len() >= 4 && error.message.contains(key) {
            error.message = error.message.replace(key, "<redacted>");
        }
        error
    }

    fn host(&self) -> String {
        match reqwest::Url::parse(&self.config.base_url) {
            Ok(url) => match (url.host_str(), url.port_or_known_default()) {
                (Some(host), Some(port)) => format!("{host}:{port}"),
                (Some(host), None) => host.to_owned(),
                _ => "its host".to_owned(),
            },
            Err(_) => "its host".to_owned(),
        }
    }
}

type Body = BoxStream<'static, Result<Bytes, reqwest::Error>>;

/// One request's attempts, as a state machine read one event at a time.
struct Driver<W: Wire> {
    client: HttpClient,
    request: JsonRequest,
    wire: Arc<W>,
    retries: u32,
    body: Option<Body>,
    parser: SseParser,
    decoder: Option<W::Decoder>,
    /// Events decoded and not yet handed out.
    out: VecDeque<StreamEvent>,
    /// Whether the answer has started reaching the caller (no retry after).
    committed: bool,
    /// The end marker arrived.
    done: bool,
    /// An error to hand out once `out` is drained.
    error: Option<ModelError>,
    /// Nothing more will be handed out.
    over: bool,
    /// The wait before the next attempt, announced and not yet waited.
    wait: Option<Duration>,
}

impl<W: Wire> Driver<W> {
    async fn next(&mut self) -> Option<Result<StreamEvent, ModelError>> {
        loop {
            if let Some(wait) = self.wait.take() {
                tokio::time::sleep(wait).await;
            }
            if self.committed
                && let Some(event) = self.out.pop_front()
            {
                return Some(Ok(event));
            }
            if let Some(error) = self.error.take() {
                self.over = true;
                return Some(Err(error));
            }
            if self.over || (self.done && self.out.is_empty()) {
                self.body = None;
                return None;
            }
            match self.advance().await {
                Ok(()) => {
                    if !self.committed
                        && (self.done
                            || self.out.iter().any(|e| !matches!(e, StreamEvent::Usage(_))))
                    {
                        self.committed = true;
                    }
                }
                Err(failure) => {
                    self.body = None;
                    let error = self.client.redact(failure.error);
                    if self.committed {
                        // What was decoded before the error still reaches the caller.
                        self.error = Some(error);
                        continue;
                    }
                    let wait = if failure.retry {
                        self.client.config.retry.delay(self.retries, &error)
                    } else {
                        None
                    };
                    let Some(wait) = wait else {
                        self.over = true;
                        return Some(Err(error));
                    };
                    self.retries += 1;
                    self.out.clear();
                    self.decoder = None;
                    self.parser = SseParser::new();
                    self.wait = Some(wait);
                    let max = self.client.config.retry.max_retries;
                    return Some(Ok(StreamEvent::Retry {
                        attempt: self.retries.saturating_add(1),
                        attempts: max.saturating_add(1),
                        wait_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                        kind: error.kind,
                        reason: error.message,
                    }));
                }
            }
        }
    }

    /// Makes progress: opens the response if none is open, else decodes the
    /// events already buffered, else reads the next chunk.
    async fn advance(&mut self) -> Result<(), Failure> {
        if self.body.is_none() {
            let body = self.open().await?;
            self.body = Some(body);
            self.decoder = Some(self.wire.decoder());
            return Ok(());
        }
        let Some(decoder) = self.decoder.as_mut() else {
            return Err(Failure::of(
                ModelErrorKind::InvalidStream,
                "the model stream lost its decoder",
            ));
        };
        let mut decoded = false;
        while let Some(event) = self.parser.next_event().map_err(parse_failure)? {
            decoded = true;
            if decoder.event(event, &mut self.out)? == Flow::Done {
                self.done = true;
                self.body = None;
                return Ok(());
            }
        }
        if decoded {
            return Ok(());
        }
        let timeout = self.client.config.idle_timeout;
        let Some(body) = self.body.as_mut() else {
            return Ok(());
        };
        let chunk = match timeout {
            Some(limit) => match tokio::time::timeout(limit, body.next()).await {
                Ok(chunk) => chunk,
                Err(_) => {
                    return Err(Failure::of(
                        ModelErrorKind::Transport,
                        format!(
                            "the model's stream sent nothing for {} s",
                            limit.as_secs_f64()
                        ),
                    ));
                }
            },
            None => body.next().await,
        };
        match chunk {
            Some(Ok(bytes)) => {
                self.parser.push(&bytes);
                Ok(())
            }
            Some(Err(e)) => Err(Failure::of(
                ModelErrorKind::Transport,
                format!(
                    "the connection to the model provider broke mid-answer ({})",
                    root_cause(&e)
                ),
            )),
            None => {
                while let Some(event) = self.parser.finish().map_err(parse_failure)? {
                    if decoder.event(event, &mut self.out)? == Flow::Done {
                        self.done = true;
                        self.body = None;
                        return Ok(());
                    }
                }
                decoder.end(&mut self.out)?;
                self.done = true;
                self.body = None;
                Ok(())
            }
        }
    }

    /// Sends the request; a failed status is a failure with its waits applied.
    async fn open(&mut self) -> Result<Body, Failure> {
        let config = &self.client.config;
        let send = self
            .client
            .inner
            .post(self.client.endpoint(&self.request.path))
            .headers(self.request.headers.clone())
            .body(self.request.body.clone())
            .send();
        let sent = match config.request_timeout {
            Some(limit) => match tokio::time::timeout(limit, send).await {
                Ok(sent) => sent,
                Err(_) => {
                    // One attempt: see `ClientConfig::request_timeout`.
                    return Err(Failure::of(
                        ModelErrorKind::Transport,
                        format!(
                            "the model provider at {} did not answer within {} s",
                            self.client.host(),
                            limit.as_secs_f64()
                        ),
                    )
                    .no_retry());
                }
            },
            None => send.await,
        };
        let response = sent.map_err(|e| self.send_failure(&e))?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let is_json = headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.to_ascii_lowercase().starts_with("application/json"));
        if (200..300).contains(&status) && !is_json {
            return Ok(response.bytes_stream().boxed());
        }
        let body = read_limited(response, config.request_timeout).await;
        let mut failure = self.wire.status_error(status, &body);
        if let Some(wait) = retry_after(&headers) {
            failure.error.retry_after = Some(wait);
        }
        match headers.get("x-should-retry").and_then(|v| v.to_str().ok()) {
            Some("true") => failure.retry = true,
            Some("false") => failure.retry = false,
            _ => {}
        }
        Err(failure)
    }

    fn send_failure(&self, e: &reqwest::Error) -> Failure {
        let host = self.client.host();
        let message = if e.is_connect() {
            format!(
                "could not connect to the model provider at {host} ({})",
                root_cause(e)
            )
        } else if e.is_timeout() {
            format!("the model provider at {host} did not answer in time")
        } else {
            format!(
                "the request to the model provider at {host} failed ({})",
                root_cause(e)
            )
        };
        Failure::of(ModelErrorKind::Transport, message)
    }
}

/// A stream the SSE parser refused (a line past its limit): never retried,
/// the same answer would come again.
fn parse_failure(error: ModelError) -> Failure {
    Failure::new(error).no_retry()
}

/// Reads at most [`ERROR_BODY_LIMIT`] bytes of an error body (what cannot be read is left out).
async fn read_limited(response: reqwest::Response, timeout: Option<Duration>) -> Vec<u8> {
    let mut body = response.bytes_stream();
    let read = async {
        let mut out = Vec::new();
        while let Some(Ok(chunk)) = body.next().await {
            out.extend_from_slice(&chunk);
            if out.len() >= ERROR_BODY_LIMIT {
                out.truncate(ERROR_BODY_LIMIT);
                break;
            }
        }
        out
    };
    match timeout {
        Some(limit) => tokio::time::timeout(limit, read).await.unwrap_or_default(),
        None => read.await,
    }
}

/// The innermost cause of a reqwest error, without its URL.
fn root_cause(e: &reqwest::Error) -> String {
    let mut source: &dyn std::error::Error = e;
    while let Some(next) = source.source() {
        source = next;
    }
    let text = one_line(&source.to_string());
    if text.is_empty() {
        "no detail".to_owned()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_never_show_in_debug() {
        let config = ClientConfig::new("https://example.invalid", "sk-secret-123");
        assert!(!format!("{config:?}").contains("sk-secret"));
    }

    #[test]
    fn statuses_map_to_kinds() {
        assert_eq!(status_kind(401), ModelErrorKind::Authentication);
        assert_eq!(status_kind(429), ModelErrorKind::RateLimited);
        assert_eq!(status_kind(529), ModelErrorKind::Overloaded);
        assert_eq!(status_kind(502), ModelErrorKind::Server);
        assert_eq!(status_kind(400), ModelErrorKind::InvalidRequest);
        assert!(status_retryable(409) && status_retryable(529) && !status_retryable(401));
    }

    #[test]
    fn authentication_errors_carry_no_provider_text() {
        let m = status_message(401, Some("Incorrect API key provided: sk-abc"));
        assert!(!m.contains("sk-abc"), "{m}");
        let m = status_message(400, Some("bad\nthing"));
        assert_eq!(
            m,
            "the model provider answered HTTP 400 (Bad Request): bad thing"
        );
    }
}
