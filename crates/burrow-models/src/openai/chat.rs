//! OpenAI chat completions (`openai:NAME`): the request body, and the decoder that routes tool-call fragments by id, then by index, so compatible servers that get the index wrong still give every call.
//!
//! The routing rule (research §2.1, agno #8880): a fragment with an id goes
//! to the latest call with that id, or starts a new one (two distinct ids are
//! never merged; nor are two calls of one id at different indexes, each
//! naming its tool, as servers that send one id for several calls do); a
//! fragment without an id goes to the latest call with its
//! index; one whose index no call has goes to a new call when it names a
//! tool and to the latest call otherwise (a head sent with the wrong index,
//! as DeepSeek does); a fragment that names a tool while the call it would
//! join already has a name and arguments starts a new call (servers that
//! send every call at index 0 without ids). A call's part starts once its
//! name is known; parts end, and the answer finishes, at `[DONE]`, after
//! the usage chunk `stream_options.include_usage` asks for (or, when the
//! server closes the stream after a `finish_reason` without `[DONE]`, at
//! that close). A call sent without an id gets one made up
//! ([`CallIds`](crate::ids::CallIds)), unique across turns and runs.

use std::collections::VecDeque;
use std::sync::Arc;

use async_trait::async_trait;
use burrow_runtime::message::{AssistantPart, Message, Usage};
use burrow_runtime::model::{
    EventStream, FinishReason, Model, ModelError, ModelRequest, PartKind, StreamEvent,
};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{ErrorInfo, arguments_text, bearer_request, chat_tool_choice, chat_tools};
use crate::http::{ClientConfig, Decoder, Failure, Flow, HttpClient, Wire};
use crate::ids::CallIds;
use crate::sse::SseEvent;

/// A chat-completions model: `openai:NAME`, over OpenAI or any compatible server.
#[derive(Debug, Clone)]
pub struct OpenAiChat {
    label: String,
    model: String,
    client: HttpClient,
    parallel_tool_calls: Option<bool>,
    wire: Arc<ChatWire>,
}

impl OpenAiChat {
    /// The model named `model` at the endpoint `config` describes.
    pub fn new(model: impl Into<String>, config: ClientConfig) -> Result<Self, ModelError> {
        let model = model.into();
        Ok(Self {
            label: format!("openai:{model}"),
            model,
            client: HttpClient::new(config)?,
            parallel_tool_calls: None,
            wire: Arc::new(ChatWire),
        })
    }

    /// The model named `model`, with the key and endpoint from `OPENAI_API_KEY` and `OPENAI_BASE_URL`.
    pub fn from_env(model: impl Into<String>) -> Result<Self, ModelError> {
        Self::new(model, super::config_from_env()?)
    }

    /// Sends `parallel_tool_calls` with the tools (left to the server's default otherwise).
    pub fn with_parallel_tool_calls(mut self, parallel: bool) -> Self {
        self.parallel_tool_calls = Some(parallel);
        self
    }

    /// The JSON body this adapter sends for `request`.
    pub fn request_body(&self, request: ModelRequest<'_>) -> Value {
        let mut body = Map::new();
        body.insert("model".into(), json!(self.model));
        body.insert("messages".into(), Value::Array(messages(request)));
        body.insert("stream".into(), json!(true));
        body.insert("stream_options".into(), json!({"include_usage": true}));
        if !request.tools.is_empty() {
            body.insert("tools".into(), chat_tools(request.tools));
            body.insert(
                "tool_choice".into(),
                chat_tool_choice(&request.settings.tool_choice),
            );
            if let Some(parallel) = self.parallel_tool_calls {
                body.insert("parallel_tool_calls".into(), json!(parallel));
            }
        }
        if let Some(max) = request.settings.max_tokens {
            body.insert("max_completion_tokens".into(), json!(max));
        }
        if let Some(t) = request.settings.temperature {
            body.insert("temperature".into(), super::temperature(t));
        }
        Value::Object(body)
    }
}

fn messages(request: ModelRequest<'_>) -> Vec<Value> {
    let mut out = Vec::with_capacity(request.messages.len() + 1);
    if !request.system.is_empty() {
        out.push(json!({"role": "system", "content": request.system}));
    }
    for message in request.messages {
        match message {
            Message::System { text } => out.push(json!({"role": "system", "content": text})),
            Message::User { text } => out.push(json!({"role": "user", "content": text})),
            Message::Compaction(c) => out.push(json!({"role": "user", "content": c.text})),
            Message::Assistant { parts } => {
                let mut text = String::new();
                let mut calls = Vec::new();
                for part in parts {
                    match part {
                        AssistantPart::Text { text: t } => text.push_str(t),
                        // Chat completions has no way to send reasoning back.
                        AssistantPart::Thinking { .. } => {}
                        AssistantPart::ToolCall(call) => calls.push(json!({
                            "id": call.id,
                            "type": "function",
                            "function": {
                                "name": call.name,
                                "arguments": arguments_text(&call.arguments),
                            }
                        })),
                    }
                }
                if text.is_empty() && calls.is_empty() {
                    continue;
                }
                let mut m = Map::new();
                m.insert("role".into(), json!("assistant"));
                m.insert(
                    "content".into(),
                    if text.is_empty() {
                        Value::Null
                    } else {
                        Value::String(text)
                    },
                );
                if !calls.is_empty() {
                    m.insert("tool_calls".into(), Value::Array(calls));
                }
                out.push(Value::Object(m));
            }
            Message::ToolResult(result) => out.push(json!({
                "role": "tool",
                "tool_call_id": result.call_id,
                "content": result.content,
            })),
        }
    }
    out
}

#[async_trait]
impl Model for OpenAiChat {
    fn name(&self) -> &str {
        &self.label
    }

    async fn stream(&self, request: ModelRequest<'_>) -> Result<EventStream, ModelError> {
        let body = self.request_body(request);
        let request = bearer_request("/chat/completions", &body, self.client.config())?;
        self.client.stream(request, self.wire.clone()).await
    }
}

/// The chat-completions wire.
#[derive(Debug, Clone, Copy, Default)]
pub struct ChatWire;

impl Wire for ChatWire {
    type Decoder = ChatDecoder;

    fn decoder(&self) -> ChatDecoder {
        ChatDecoder::default()
    }

    fn status_error(&self, status: u16, body: &[u8]) -> Failure {
        super::status_failure(status, body)
    }
}

#[derive(Debug, Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<ErrorInfo>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
    /// DeepSeek, vLLM and others stream reasoning here.
    #[serde(default)]
    reasoning_content: Option<String>,
    /// Ollama and OpenRouter use this name.
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<CallDelta>>,
}

#[derive(Debug, Deserialize)]
struct CallDelta {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Debug, Default, Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Debug, Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

impl WireUsage {
    fn usage(&self) -> Usage {
        let cached = self
            .prompt_tokens_details
            .as_ref()
            .and_then(|d| d.cached_tokens);
        Usage {
            input_tokens: self
                .prompt_tokens
                .map(|p| p.saturating_sub(cached.unwrap_or(0))),
            output_tokens: self.completion_tokens,
            cache_read_tokens: cached,
            cache_write_tokens: None,
        }
    }
}

#[derive(Debug)]
struct Call {
    id: Option<String>,
    wire_index: Option<u64>,
    name: Option<String>,
    /// Argument text received before the part could start.
    pending: String,
    has_arguments: bool,
    part: Option<usize>,
}

/// Decodes one chat-completions stream.
#[derive(Debug, Default)]
pub struct ChatDecoder {
    /// The ids made up for calls the server sent without one.
    ids: CallIds,
    next_index: usize,
    text: Option<usize>,
    thinking: Option<usize>,
    calls: Vec<Call>,
    /// Parts started, in start order (they end in this order at `[DONE]`).
    open: Vec<usize>,
    finish: Option<String>,
    refused: bool,
}

impl ChatDecoder {
    fn start(&mut self, part: PartKind, out: &mut VecDeque<StreamEvent>) -> usize {
        let index = self.next_index;
        self.next_index += 1;
        self.open.push(index);
        out.push_back(StreamEvent::PartStart { index, part });
        index
    }

    fn text(&mut self, text: String, out: &mut VecDeque<StreamEvent>) {
        let index = match self.text {
            Some(i) => i,
            None => {
                let i = self.start(PartKind::Text, out);
                self.text = Some(i);
                i
            }
        };
        out.push_back(StreamEvent::TextDelta { index, text });
    }

    fn thinking(&mut self, text: String, out: &mut VecDeque<StreamEvent>) {
        let index = match self.thinking {
            Some(i) => i,
            None => {
                let i = self.start(PartKind::Thinking, out);
                self.thinking = Some(i);
                i
            }
        };
        out.push_back(StreamEvent::ThinkingDelta { index, text });
    }

    /// The call a fragment belongs to (see the module docs).
    fn route(&mut self, id: Option<&str>, index: Option<u64>, names: bool) -> usize {
        if let Some(id) = id {
            if let Some(i) = self.calls.iter().rposition(|c| c.id.as_deref() == Some(id)) {
                let c = &self.calls[i];
                // One id for several calls (at other indexes): a new call,
                // which the loop renames (ADR 0253).
                let another = names && c.name.is_some() && c.has_arguments && c.wire_index != index;
                if !another {
                    return i;
                }
            }
            return self.new_call(Some(id.to_owned()), index);
        }
        let found = index.and_then(|ix| self.calls.iter().rposition(|c| c.wire_index == Some(ix)));
        let found = match (found, index) {
            (Some(i), _) => Some(i),
            // No index at all: the latest call.
            (None, None) => self.calls.len().checked_sub(1),
            (None, Some(_)) => None,
        };
        match found {
            Some(i) if names && self.calls[i].name.is_some() && self.calls[i].has_arguments => {
                self.new_call(None, index)
            }
            Some(i) => i,
            None if names || self.calls.is_empty() => self.new_call(None, index),
            None => self.calls.len() - 1,
        }
    }

    fn new_call(&mut self, id: Option<String>, wire_index: Option<u64>) -> usize {
        self.calls.push(Call {
            id,
            wire_index,
            name: None,
            pending: String::new(),
            has_arguments: false,
            part: None,
        });
        self.calls.len() - 1
    }

    fn call_delta(&mut self, delta: CallDelta, out: &mut VecDeque<StreamEvent>) {
        let function = delta.function.unwrap_or_default();
        let name = function.name.filter(|n| !n.is_empty());
        let id = delta.id.filter(|i| !i.is_empty());
        let slot = self.route(id.as_deref(), delta.index, name.is_some());
        if self.calls[slot].name.is_none() {
            self.calls[slot].name = name;
        }
        let arguments = function.arguments.unwrap_or_default();
        if !arguments.is_empty() {
            self.calls[slot].has_arguments = true;
        }
        match self.calls[slot].part {
            Some(index) => {
                if !arguments.is_empty() {
                    out.push_back(StreamEvent::ArgumentsDelta {
                        index,
                        json: arguments,
                    });
                }
            }
            None => {
                self.calls[slot].pending.push_str(&arguments);
                if self.calls[slot].name.is_some() {
                    self.start_call(slot, out);
                }
            }
        }
    }

    fn start_call(&mut self, slot: usize, out: &mut VecDeque<StreamEvent>) {
        let call = &mut self.calls[slot];
        let id = match &call.id {
            Some(id) => id.clone(),
            None => {
                let id = self.ids.make();
                call.id = Some(id.clone());
                id
            }
        };
        let name = call.name.clone().unwrap_or_default();
        let pending = std::mem::take(&mut call.pending);
        let index = self.start(PartKind::ToolCall { id, name }, out);
        self.calls[slot].part = Some(index);
        if !pending.is_empty() {
            out.push_back(StreamEvent::ArgumentsDelta {
                index,
                json: pending,
            });
        }
    }

    fn chunk(&mut self, chunk: Chunk, out: &mut VecDeque<StreamEvent>) -> Result<(), Failure> {
        if let Some(error) = &chunk.error {
            return Err(super::stream_failure(error));
        }
        for choice in chunk.choices {
            // Only the first choice is the answer (`n` is never sent).
            if choice.index.unwrap_or(0) != 0 {
                continue;
            }
            if let Some(delta) = choice.delta {
                for reasoning in [delta.reasoning_content, delta.reasoning]
                    .into_iter()
                    .flatten()
                {
                    if !reasoning.is_empty() {
                        self.thinking(reasoning, out);
                    }
                }
                if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                    self.text(text, out);
                }
                if let Some(refusal) = delta.refusal.filter(|t| !t.is_empty()) {
                    self.refused = true;
                    self.text(refusal, out);
                }
                for call in delta.tool_calls.into_iter().flatten() {
                    self.call_delta(call, out);
                }
            }
            if let Some(reason) = choice.finish_reason.filter(|r| !r.is_empty()) {
                self.finish = Some(reason);
            }
        }
        if let Some(usage) = chunk.usage {
            let usage = usage.usage();
            if !usage.is_unknown() {
                out.push_back(StreamEvent::Usage(usage));
            }
        }
        Ok(())
    }

    fn done(&mut self, out: &mut VecDeque<StreamEvent>) {
        // A call that never got a name still gets a part, so the model is
        // told it called no tool, rather than the call vanishing.
        for slot in 0..self.calls.len() {
            if self.calls[slot].part.is_none() && self.calls[slot].has_arguments {
                self.start_call(slot, out);
            }
        }
        for index in std::mem::take(&mut self.open) {
            out.push_back(StreamEvent::PartEnd { index });
        }
        let called = self.calls.iter().any(|c| c.part.is_some());
        let reason = match self.finish.as_deref() {
            Some("tool_calls" | "function_call") => FinishReason::ToolCalls,
            // Some servers say `stop` after tool calls.
            Some("stop") | None if called => FinishReason::ToolCalls,
            Some("stop") | None if self.refused => FinishReason::Refusal,
            Some("stop") | None => FinishReason::Stop,
            Some("length") => FinishReason::MaxTokens,
            Some("content_filter") => FinishReason::ContentFilter,
            Some(other) => FinishReason::Other(other.to_owned()),
        };
        out.push_back(StreamEvent::Finish { reason });
    }
}

impl Decoder for ChatDecoder {
    fn event(&mut self, event: SseEvent, out: &mut VecDeque<StreamEvent>) -> Result<Flow, Failure> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.done(out);
            return Ok(Flow::Done);
        }
        if data.is_empty() {
            return Ok(Flow::More);
        }
        if event.event.as_deref() == Some("error") {
            let info = serde_json::from_str::<Value>(data)
                .ok()
                .and_then(|v| {
                    let inner = v.get("error").cloned().unwrap_or(v);
                    serde_json::from_value::<ErrorInfo>(inner).ok()
                })
                .unwrap_or_default();
            return Err(super::stream_failure(&info));
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|e| {
            Failure::of(
                burrow_runtime::model::ModelErrorKind::InvalidStream,
                format!("the model provider sent a chunk that is not valid JSON ({e})"),
            )
        })?;
        self.chunk(chunk, out)?;
        Ok(Flow::More)
    }

    /// A stream that ends after its `finish_reason` but without `[DONE]`
    /// (some compatible servers close there) is complete; one that ends
    /// before its `finish_reason` was cut.
    fn end(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), Failure> {
        if self.finish.is_none() {
            return Err(Failure::ended_early());
        }
        self.done(out);
        Ok(())
    }
}
