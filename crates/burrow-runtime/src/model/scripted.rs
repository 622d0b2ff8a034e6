//! `ScriptedModel`: a model answered by a closure (sync or async) or by a JSON-lines script, for tests, benches and offline runs.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    EventStream, FinishReason, Model, ModelError, ModelErrorKind, ModelRequest, PartKind,
    StreamEvent,
};
use crate::message::Usage;

/// One scripted answer: optional thinking, optional text, then tool calls.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedResponse {
    /// Reasoning streamed before the text (as one delta).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<String>,
    /// Text (as one delta); none or empty means no text part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Tool calls, each streamed whole.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ScriptedToolCall>,
    /// Usage to report (unknown when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

impl ScriptedResponse {
    /// An answer that is only `text`.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: Some(text.into()),
            ..Self::default()
        }
    }

    /// The same answer with one more tool call.
    pub fn call(
        mut self,
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: Value,
    ) -> Self {
        self.tool_calls.push(ScriptedToolCall {
            id: Some(id.into()),
            name: name.into(),
            arguments,
        });
        self
    }

    /// An answer with no text and no calls yet (add calls with [`ScriptedResponse::call`]).
    pub fn calls() -> Self {
        Self::default()
    }

    /// The answer as stream events (ids missing from the script become `call_{answer}_{i}`).
    pub fn events(&self, answer: usize) -> Vec<StreamEvent> {
        let mut events = Vec::with_capacity(4 + 3 * self.tool_calls.len());
        let mut index = 0;
        if let Some(thinking) = self.thinking.as_ref().filter(|t| !t.is_empty()) {
            events.push(StreamEvent::PartStart {
                index,
                part: PartKind::Thinking,
            });
            events.push(StreamEvent::ThinkingDelta {
                index,
                text: thinking.clone(),
            });
            events.push(StreamEvent::PartEnd { index });
            index += 1;
        }
        if let Some(text) = self.text.as_ref().filter(|t| !t.is_empty()) {
            events.push(StreamEvent::PartStart {
                index,
                part: PartKind::Text,
            });
            events.push(StreamEvent::TextDelta {
                index,
                text: text.clone(),
            });
            events.push(StreamEvent::PartEnd { index });
            index += 1;
        }
        for (i, call) in self.tool_calls.iter().enumerate() {
            let id = call
                .id
                .clone()
                .unwrap_or_else(|| format!("call_{answer}_{i}"));
            events.push(StreamEvent::PartStart {
                index,
                part: PartKind::ToolCall {
                    id,
                    name: call.name.clone(),
                },
            });
            events.push(StreamEvent::ArgumentsDelta {
                index,
                json: call.arguments.to_string(),
            });
            events.push(StreamEvent::PartEnd { index });
            index += 1;
        }
        if let Some(usage) = self.usage {
            events.push(StreamEvent::Usage(usage));
        }
        let reason = if self.tool_calls.is_empty() {
            FinishReason::Stop
        } else {
            FinishReason::ToolCalls
        };
        events.push(StreamEvent::Finish { reason });
        events
    }
}

/// A scripted tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedToolCall {
    /// The call's id (generated when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The tool's name.
    pub name: String,
    /// The arguments (an object, `{}` when absent).
    #[serde(default = "empty_object")]
    pub arguments: Value,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

type Answer = Arc<
    dyn Fn(ModelRequest<'_>, usize) -> BoxFuture<'static, Result<ScriptedResponse, ModelError>>
        + Send
        + Sync,
>;

/// A model whose answers come from a closure or a script.
///
/// Streamed, a text part is one delta and each tool call is whole (one
/// argument fragment). Each request is counted; the count (from 0) is passed
/// to the closure and names generated call ids.
#[derive(Clone)]
pub struct ScriptedModel {
    name: String,
    answer: Answer,
    requests: Arc<AtomicUsize>,
}

impl std::fmt::Debug for ScriptedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedModel")
            .field("name", &self.name)
            .field("requests", &self.requests())
            .finish_non_exhaustive()
    }
}

impl ScriptedModel {
    /// Answers each request with `f(request)`, synchronously.
    pub fn new<F>(f: F) -> Self
    where
        F: Fn(ModelRequest<'_>) -> Result<ScriptedResponse, ModelError> + Send + Sync + 'static,
    {
        Self::build(
            "scripted",
            Arc::new(move |request, _| std::future::ready(f(request)).boxed()),
        )
    }

    /// Answers each request with the future `f(request)` returns. The future
    /// borrows nothing: take from the request what it needs before it starts.
    pub fn new_async<F, Fut>(f: F) -> Self
    where
        F: Fn(ModelRequest<'_>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ScriptedResponse, ModelError>> + Send + 'static,
    {
        Self::build("scripted", Arc::new(move |request, _| f(request).boxed()))
    }

    /// Answers the requests with `responses` in order; running out is an `Exhausted` error.
    pub fn from_responses(responses: Vec<ScriptedResponse>) -> Self {
        let responses = Arc::new(responses);
        Self::build(
            "scripted",
            Arc::new(move |_, n| {
                let answer = responses.get(n).cloned().ok_or_else(|| {
                    ModelError::new(
                        ModelErrorKind::Exhausted,
                        format!(
                            "the scripted model has no answer left: all {} answers were used",
                            responses.len()
                        ),
                    )
                });
                std::future::ready(answer).boxed()
            }),
        )
    }

    /// Parses a JSON-lines script: one [`ScriptedResponse`] per non-blank line.
    pub fn from_jsonl(text: &str) -> Result<Self, ModelError> {
        let mut responses = Vec::new();
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let response = serde_json::from_str(line).map_err(|e| {
                ModelError::new(
                    ModelErrorKind::InvalidRequest,
                    format!("line {} of the script is not a scripted answer: {e}", n + 1),
                )
            })?;
            responses.push(response);
        }
        Ok(Self::from_responses(responses))
    }

    /// Reads a JSON-lines script from a file (`scripted:FILE.jsonl`), named
    /// `scripted:` and the file's name: its folder stays out of the spans and
    /// metrics the name goes into.
    pub fn from_file(path: &Path) -> Result<Self, ModelError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            ModelError::new(
                ModelErrorKind::InvalidRequest,
                format!("the script file cannot be read: {e}"),
            )
        })?;
        let file = path.file_name().unwrap_or_default().to_string_lossy();
        Ok(Self::from_jsonl(&text)?.named(format!("scripted:{file}")))
    }

    /// The same model under another name.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// How many requests it has answered (or been asked).
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::Relaxed)
    }

    fn build(name: &str, answer: Answer) -> Self {
        Self {
            name: name.to_owned(),
            answer,
            requests: Arc::new(AtomicUsize::new(0)),
        }
    }
}

#[async_trait]
impl Model for ScriptedModel {
    fn name(&self) -> &str {
        &self.name
    }

    async fn stream(&self, request: ModelRequest<'_>) -> Result<EventStream, ModelError> {
        let n = self.requests.fetch_add(1, Ordering::Relaxed);
        let response = (self.answer)(request, n).await?;
        let events = response.events(n);
        Ok(futures::stream::iter(events.into_iter().map(Ok)).boxed())
    }
}
