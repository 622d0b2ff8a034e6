//! The `Model` trait: one request answered as a stream of events with part indices, and collecting that stream into a response.
//!
//! Every provider streams an answer as parts (text, thinking, tool calls)
//! that start, grow by deltas and end. The adapter assigns each part an
//! index and translates its wire into [`StreamEvent`]s; [`check_stream`]
//! states what a well-formed stream is, and [`collect`] turns one into a
//! [`ModelResponse`] (a tool call's arguments are parsed only when its part
//! ends). A non-streaming answer is the same events, collected.

mod check;
mod scripted;

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::message::{AssistantPart, Message, ToolCall, Usage};

pub use check::{StreamChecker, StreamViolation, check_stream};
pub use scripted::{ScriptedModel, ScriptedResponse, ScriptedToolCall};

/// A tool as a model sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// The name the model calls it by.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// The JSON Schema of its arguments object.
    pub input_schema: Value,
    /// The provider's own type for the tool ([`Tool::native_type`](crate::tool::Tool::native_type)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native_type: Option<String>,
}

/// Whether and which tool the model must call.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides (the default).
    #[default]
    Auto,
    /// The model must not call a tool.
    None,
    /// The model must call some tool.
    Required,
    /// The model must call this tool.
    Tool(String),
}

/// Settings of one request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelSettings {
    /// Most output tokens (the provider's default when `None`).
    pub max_tokens: Option<u32>,
    /// Sampling temperature (the provider's default when `None`).
    pub temperature: Option<f32>,
    /// Whether and which tool the model must call.
    pub tool_choice: ToolChoice,
}

/// One request to a model. It borrows the history: building a request never copies it.
#[derive(Debug, Clone, Copy)]
pub struct ModelRequest<'a> {
    /// Instructions for this request (evaluated anew for each request).
    pub system: &'a str,
    /// The conversation so far.
    pub messages: &'a [Message],
    /// The tools the model may call.
    pub tools: &'a [ToolDefinition],
    /// Settings.
    pub settings: &'a ModelSettings,
}

/// What kind of part starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PartKind {
    /// Text for the user.
    Text,
    /// Visible reasoning.
    Thinking,
    /// A tool call; id and name are known at its start (every provider sends them first).
    ToolCall {
        /// The call's id.
        id: String,
        /// The tool's name.
        name: String,
    },
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// The answer is complete.
    Stop,
    /// The model wants its tool calls run.
    ToolCalls,
    /// The output-token limit cut the answer.
    MaxTokens,
    /// The provider's filter withheld content.
    ContentFilter,
    /// The model refused.
    Refusal,
    /// Any other reason, as the provider named it.
    Other(String),
}

/// One event of a streamed answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    /// A part starts at `index` (which the adapter assigns, unique within the answer).
    PartStart {
        /// The part's index.
        index: usize,
        /// What the part is.
        part: PartKind,
    },
    /// More text of a text part.
    TextDelta {
        /// The part's index.
        index: usize,
        /// The text.
        text: String,
    },
    /// More reasoning of a thinking part.
    ThinkingDelta {
        /// The part's index.
        index: usize,
        /// The reasoning text.
        text: String,
    },
    /// More of a thinking part's signature (or encrypted payload).
    SignatureDelta {
        /// The part's index.
        index: usize,
        /// The signature fragment.
        signature: String,
    },
    /// A fragment of a tool call's arguments (JSON text, parsed when the part ends).
    ArgumentsDelta {
        /// The part's index.
        index: usize,
        /// The fragment.
        json: String,
    },
    /// The part at `index` is complete.
    PartEnd {
        /// The part's index.
        index: usize,
    },
    /// Usage so far; a later event replaces the counts it knows (cumulative, as providers report it).
    Usage(Usage),
    /// The answer is complete; nothing follows.
    Finish {
        /// Why the model stopped.
        reason: FinishReason,
    },
    /// The request failed and is sent again after a wait: a notice for the
    /// run's events, never part of the answer (it comes only before the
    /// answer's first part, and builders and checkers pass over it).
    Retry {
        /// The attempt about to be made (2 for the first retry).
        attempt: u32,
        /// The most attempts the adapter makes.
        attempts: u32,
        /// The wait before it, in milliseconds.
        wait_ms: u64,
        /// What kind of failure it was.
        kind: ModelErrorKind,
        /// The failure, as one sentence.
        reason: String,
    },
}

/// What kind of model error this is, so a retry policy and a run can decide.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ModelErrorKind {
    /// The account's rate limit (HTTP 429, or in-stream).
    RateLimited,
    /// The provider is overloaded (HTTP 529/503, or in-stream).
    Overloaded,
    /// The key is missing, wrong or lacks permission.
    Authentication,
    /// The request was malformed or refused as such.
    InvalidRequest,
    /// The conversation does not fit the model's context window.
    ContextTooLong,
    /// The provider failed (5xx).
    Server,
    /// The connection broke or the stream ended early.
    Transport,
    /// The stream broke its contract ([`check_stream`]).
    InvalidStream,
    /// A scripted model has no answer left.
    Exhausted,
}

impl ModelErrorKind {
    /// The kind's stable snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            ModelErrorKind::RateLimited => "rate_limited",
            ModelErrorKind::Overloaded => "overloaded",
            ModelErrorKind::Authentication => "authentication",
            ModelErrorKind::InvalidRequest => "invalid_request",
            ModelErrorKind::ContextTooLong => "context_too_long",
            ModelErrorKind::Server => "server",
            ModelErrorKind::Transport => "transport",
            ModelErrorKind::InvalidStream => "invalid_stream",
            ModelErrorKind::Exhausted => "exhausted",
        }
    }

    /// True when the same request may succeed if sent again later.
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            ModelErrorKind::RateLimited
                | ModelErrorKind::Overloaded
                | ModelErrorKind::Server
                | ModelErrorKind::Transport
        )
    }
}

/// A model request that did not produce an answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ModelError {
    /// What kind of error.
    pub kind: ModelErrorKind,
    /// One sentence; never a key or a header.
    pub message: String,
    /// How long the provider asked to wait before a retry.
    pub retry_after: Option<Duration>,
}

impl ModelError {
    /// An error of `kind`.
    pub fn new(kind: ModelErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            retry_after: None,
        }
    }

    /// The same error with a wait before retrying.
    pub fn with_retry_after(mut self, wait: Duration) -> Self {
        self.retry_after = Some(wait);
        self
    }
}

/// A streamed answer.
pub type EventStream = BoxStream<'static, Result<StreamEvent, ModelError>>;

/// A language model: one request answered as a stream of events.
///
/// An adapter owns its wire: it serialises the request before it returns the
/// stream (the stream borrows nothing), assigns part indices, sends each
/// tool call's id and name at its start and its arguments as fragments, sends
/// usage as the provider reports it (cumulative snapshots are fine) and ends
/// with one [`StreamEvent::Finish`]. An error before the first event is the
/// outer `Err`; one mid-stream is an `Err` item, after which nothing follows.
#[async_trait]
pub trait Model: Send + Sync {
    /// A short name for logs and events (e.g. `anthropic:claude-...`).
    fn name(&self) -> &str;

    /// Sends `request` and returns the answer as a stream.
    async fn stream(&self, request: ModelRequest<'_>) -> Result<EventStream, ModelError>;
}

/// A complete answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelResponse {
    /// The parts, in index order.
    pub parts: Vec<AssistantPart>,
    /// The usage the provider reported (unknown counts stay `None`).
    pub usage: Usage,
    /// Why the model stopped.
    pub finish: FinishReason,
}

impl ModelResponse {
    /// The answer as a history message.
    pub fn into_message(self) -> Message {
        Message::Assistant { parts: self.parts }
    }
}

/// Builds a [`ModelResponse`] from events as they arrive, checking them.
#[derive(Debug, Default)]
pub struct ResponseBuilder {
    checker: StreamChecker,
    parts: Vec<(usize, PartBuf)>,
    usage: Usage,
    finish: Option<FinishReason>,
}

#[derive(Debug)]
enum PartBuf {
    Text(String),
    Thinking(String, Option<String>),
    Call {
        id: String,
        name: String,
        json: String,
        arguments: Option<Value>,
    },
}

impl ResponseBuilder {
    /// A builder that has seen nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes in one event; a violation of the stream contract is an `InvalidStream` error.
    pub fn push(&mut self, event: StreamEvent) -> Result<(), ModelError> {
        self.checker
            .push(&event)
            .map_err(|v| ModelError::new(ModelErrorKind::InvalidStream, v.to_string()))?;
        match event {
            StreamEvent::PartStart { index, part } => {
                let buf = match part {
                    PartKind::Text => PartBuf::Text(String::new()),
                    PartKind::Thinking => PartBuf::Thinking(String::new(), None),
                    PartKind::ToolCall { id, name } => PartBuf::Call {
                        id,
                        name,
                        json: String::new(),
                        arguments: None,
                    },
                };
                self.parts.push((index, buf));
            }
            StreamEvent::TextDelta { index, text } | StreamEvent::ThinkingDelta { index, text } => {
                match self.part(index) {
                    Some(PartBuf::Text(t)) | Some(PartBuf::Thinking(t, _)) => t.push_str(&text),
                    _ => {}
                }
            }
            StreamEvent::SignatureDelta { index, signature } => {
                if let Some(PartBuf::Thinking(_, sig)) = self.part(index) {
                    sig.get_or_insert_with(String::new).push_str(&signature);
                }
            }
            StreamEvent::ArgumentsDelta { index, json } => {
                if let Some(PartBuf::Call { json: buf, .. }) = self.part(index) {
                    buf.push_str(&json);
                }
            }
            StreamEvent::PartEnd { index } => {
                if let Some(PartBuf::Call {
                    json, arguments, ..
                }) = self.part(index)
                {
                    *arguments = Some(parse_arguments(json));
                }
            }
            StreamEvent::Usage(usage) => self.usage.update(&usage),
            StreamEvent::Finish { reason } => self.finish = Some(reason),
            StreamEvent::Retry { .. } => {}
        }
        Ok(())
    }

    fn part(&mut self, index: usize) -> Option<&mut PartBuf> {
        // Parts are few and the one growing is nearly always the last.
        self.parts
            .iter_mut()
            .rev()
            .find(|(i, _)| *i == index)
            .map(|(_, p)| p)
    }

    /// The response, once the stream finished well formed.
    pub fn finish(mut self) -> Result<ModelResponse, ModelError> {
        self.checker
            .finish()
            .map_err(|v| ModelError::new(ModelErrorKind::InvalidStream, v.to_string()))?;
        self.parts.sort_by_key(|(i, _)| *i);
        let parts = self
            .parts
            .into_iter()
            .map(|(_, p)| match p {
                PartBuf::Text(text) => AssistantPart::Text { text },
                PartBuf::Thinking(text, signature) => AssistantPart::Thinking { text, signature },
                PartBuf::Call {
                    id,
                    name,
                    json,
                    arguments,
                } => AssistantPart::ToolCall(ToolCall {
                    id,
                    name,
                    arguments: arguments.unwrap_or_else(|| parse_arguments(&json)),
                }),
            })
            .collect();
        Ok(ModelResponse {
            parts,
            usage: self.usage,
            finish: self.finish.unwrap_or(FinishReason::Stop),
        })
    }
}

/// A tool call's argument text as JSON: empty text is `{}`; text that is not
/// JSON is kept as a JSON string so the call can be answered with a result
/// that says so.
pub fn parse_arguments(json: &str) -> Value {
    if json.trim().is_empty() {
        return Value::Object(serde_json::Map::new());
    }
    serde_json::from_str(json).unwrap_or_else(|_| Value::String(json.to_owned()))
}

/// Collects a whole stream into a response, checking it as it goes.
pub async fn collect(mut stream: EventStream) -> Result<ModelResponse, ModelError> {
    let mut builder = ResponseBuilder::new();
    while let Some(event) = stream.next().await {
        builder.push(event?)?;
    }
    builder.finish()
}

/// Sends `request` to `model` and collects the answer.
pub async fn complete(
    model: &dyn Model,
    request: ModelRequest<'_>,
) -> Result<ModelResponse, ModelError> {
    collect(model.stream(request).await?).await
}

impl fmt::Display for FinishReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FinishReason::Stop => f.write_str("stop"),
            FinishReason::ToolCalls => f.write_str("tool_calls"),
            FinishReason::MaxTokens => f.write_str("max_tokens"),
            FinishReason::ContentFilter => f.write_str("content_filter"),
            FinishReason::Refusal => f.write_str("refusal"),
            FinishReason::Other(s) => f.write_str(s),
        }
    }
}
