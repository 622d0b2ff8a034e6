//! The Anthropic Messages adapter (`anthropic:NAME`): `/v1/messages` with `stream: true`, its SSE decoded into burrow's stream events.
//!
//! [`AnthropicModel`] builds the request body (`request`, ADR 0155), sends
//! it with `x-api-key` and `anthropic-version` through the crate's HTTP
//! layer (retries, status mapping, timeouts: [`HttpClient`]), and decodes
//! the event stream (`stream`, ADR 0156). The key is held only to set its
//! header; it is never printed, not even by `Debug`.

mod error;
mod request;
mod stream;

use std::sync::Arc;

use async_trait::async_trait;
use burrow_runtime::model::{EventStream, Model, ModelError, ModelErrorKind, ModelRequest};
use serde_json::Value;

use crate::http::{self, ClientConfig, Failure, HttpClient, JsonRequest, Wire};

/// Anthropic's API, when `ANTHROPIC_BASE_URL` names no other.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The variable that holds the key.
pub const API_KEY_VAR: &str = "ANTHROPIC_API_KEY";
/// The variable that names another endpoint (a proxy, a gateway, a compatible server).
pub const BASE_URL_VAR: &str = "ANTHROPIC_BASE_URL";
/// The API version this adapter speaks (the `anthropic-version` header).
pub const API_VERSION: &str = "2023-06-01";
/// `max_tokens` when a request's settings leave it open (ADR 0155).
pub const DEFAULT_MAX_TOKENS: u32 = 8192;
/// The path of the Messages endpoint under the base URL.
const PATH: &str = "/v1/messages";

/// A configuration from `ANTHROPIC_API_KEY` and `ANTHROPIC_BASE_URL`.
///
/// # Behavior
/// A missing or empty key is an `Authentication` error naming the variable,
/// before any request is made.
pub fn config_from_env() -> Result<ClientConfig, ModelError> {
    http::config_from_env(API_KEY_VAR, BASE_URL_VAR, DEFAULT_BASE_URL)
}

/// An Anthropic Messages model: `anthropic:NAME`.
#[derive(Debug, Clone)]
pub struct AnthropicModel {
    label: String,
    model: String,
    client: HttpClient,
    max_tokens: u32,
    thinking_budget: Option<u32>,
    wire: Arc<AnthropicWire>,
}

impl AnthropicModel {
    /// The model named `model` (e.g. `claude-sonnet-4-5`) at the endpoint
    /// `config` describes (its base URL without `/v1`).
    pub fn new(model: impl Into<String>, config: ClientConfig) -> Result<Self, ModelError> {
        let model = model.into();
        Ok(Self {
            label: format!("anthropic:{model}"),
            model,
            client: HttpClient::new(config)?,
            max_tokens: DEFAULT_MAX_TOKENS,
            thinking_budget: None,
            wire: Arc::new(AnthropicWire),
        })
    }

    /// The model named `model`, with the key and endpoint from
    /// `ANTHROPIC_API_KEY` and `ANTHROPIC_BASE_URL`.
    pub fn from_env(model: impl Into<String>) -> Result<Self, ModelError> {
        Self::new(model, config_from_env()?)
    }

    /// `max_tokens` for requests whose settings leave it open (default
    /// [`DEFAULT_MAX_TOKENS`]; the wire requires one on every request).
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// Turns extended thinking on with this token budget (`thinking:
    /// {"type": "enabled", "budget_tokens": N}`); it must be below the
    /// request's `max_tokens`, which the API checks.
    pub fn with_thinking_budget(mut self, budget_tokens: u32) -> Self {
        self.thinking_budget = Some(budget_tokens);
        self
    }

    /// The JSON body this adapter sends for `request`.
    pub fn request_body(&self, request: ModelRequest<'_>) -> Result<Value, ModelError> {
        let text = self.body_text(&request)?;
        serde_json::from_str(&text).map_err(|e| unwritable(&e))
    }

    fn body_text(&self, request: &ModelRequest<'_>) -> Result<String, ModelError> {
        let options = request::Options {
            model: &self.model,
            default_max_tokens: self.max_tokens,
            thinking_budget: self.thinking_budget,
        };
        request::body(request, &options).map_err(|e| unwritable(&e))
    }
}

fn unwritable(e: &serde_json::Error) -> ModelError {
    ModelError::new(
        ModelErrorKind::InvalidRequest,
        format!("the Anthropic request could not be written as JSON ({})", e),
    )
}

#[async_trait]
impl Model for AnthropicModel {
    fn name(&self) -> &str {
        &self.label
    }

    /// Sends `request` to `/v1/messages` and streams the answer.
    ///
    /// # Behavior
    /// The body is written before anything is sent (ADR 0155). Failed
    /// statuses, in-stream `error` events and a stream cut before
    /// `message_stop` are retried as the configuration's [`RetryPolicy`]
    /// says while no part of the answer has reached the caller; after that
    /// the error is the stream's last item. Dropping the stream drops the
    /// connection.
    ///
    /// [`RetryPolicy`]: crate::RetryPolicy
    async fn stream(&self, request: ModelRequest<'_>) -> Result<EventStream, ModelError> {
        let body = self.body_text(&request)?;
        let betas = request::betas(&request);
        let mut request = JsonRequest::new(PATH, body)
            .header("anthropic-version", API_VERSION)?
            .secret_header("x-api-key", self.client.config().api_key.expose())?;
        if !betas.is_empty() {
            request = request.header("anthropic-beta", &betas.join(","))?;
        }
        self.client.stream(request, Arc::clone(&self.wire)).await
    }
}

/// Anthropic's wire for the shared HTTP layer.
#[derive(Debug)]
struct AnthropicWire;

impl Wire for AnthropicWire {
    type Decoder = stream::Decoder;

    fn decoder(&self) -> Self::Decoder {
        stream::Decoder::new()
    }

    fn status_error(&self, status: u16, body: &[u8]) -> Failure {
        error::status_failure(status, body)
    }
}
