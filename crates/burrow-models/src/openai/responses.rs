//! OpenAI Responses (`openai-responses:NAME`): the request (stateless: `store: false`, reasoning sent back encrypted) and the decoder of its typed events, correlated by `output_index`/`item_id` and answered by `call_id`.
//!
//! Each output item becomes parts: a `message` item one text part per
//! content index, a `function_call` item one tool-call part (its id is the
//! item's `call_id`, which the tool result echoes), a `reasoning` item one
//! thinking part whose deltas are the summary (or reasoning) text. At a
//! reasoning item's `output_item.done` the whole item as it stands then
//! (with `encrypted_content`, which may be incomplete before) is the
//! part's signature, as JSON; the next request sends it back verbatim
//! before the calls it preceded, since a reasoning model refuses a tool
//! result whose reasoning was dropped (rig #1334). The answer ends at
//! `response.completed` or `response.incomplete`; `response.failed` and
//! `error` are errors.

use std::collections::VecDeque;
use std::sync::Arc;

use async_trait::async_trait;
use burrow_runtime::message::{AssistantPart, Message, Usage};
use burrow_runtime::model::{
    EventStream, FinishReason, Model, ModelError, ModelErrorKind, ModelRequest, PartKind,
    StreamEvent,
};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{ErrorInfo, arguments_text, bearer_request, responses_tool_choice, responses_tools};
use crate::http::{ClientConfig, Decoder, Failure, Flow, HttpClient, Wire};
use crate::ids::CallIds;
use crate::sse::SseEvent;

/// A Responses model: `openai-responses:NAME`.
#[derive(Debug, Clone)]
pub struct OpenAiResponses {
    label: String,
    model: String,
    client: HttpClient,
    parallel_tool_calls: Option<bool>,
    wire: Arc<ResponsesWire>,
}

impl OpenAiResponses {
    /// The model named `model` at the endpoint `config` describes.
    pub fn new(model: impl Into<String>, config: ClientConfig) -> Result<Self, ModelError> {
        let model = model.into();
        Ok(Self {
            label: format!("openai-responses:{model}"),
            model,
            client: HttpClient::new(config)?,
            parallel_tool_calls: None,
            wire: Arc::new(ResponsesWire),
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
        if !request.system.is_empty() {
            body.insert("instructions".into(), json!(request.system));
        }
        body.insert("input".into(), Value::Array(input(request.messages)));
        body.insert("stream".into(), json!(true));
        body.insert("store".into(), json!(false));
        body.insert("include".into(), json!(["reasoning.encrypted_content"]));
        if !request.tools.is_empty() {
            body.insert("tools".into(), responses_tools(request.tools));
            body.insert(
                "tool_choice".into(),
                responses_tool_choice(&request.settings.tool_choice),
            );
            if let Some(parallel) = self.parallel_tool_calls {
                body.insert("parallel_tool_calls".into(), json!(parallel));
            }
        }
        if let Some(max) = request.settings.max_tokens {
            body.insert("max_output_tokens".into(), json!(max));
        }
        if let Some(t) = request.settings.temperature {
            body.insert("temperature".into(), super::temperature(t));
        }
        Value::Object(body)
    }
}

/// A thinking part's signature as a Responses reasoning item, when it is one.
fn reasoning_item(signature: Option<&str>) -> Option<Value> {
    let item: Value = serde_json::from_str(signature?).ok()?;
    (item.get("type").and_then(Value::as_str) == Some("reasoning")).then_some(item)
}

fn input(messages: &[Message]) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len());
    for message in messages {
        match message {
            Message::System { text } => out.push(json!({"role": "system", "content": text})),
            Message::User { text } => out.push(json!({"role": "user", "content": text})),
            Message::Compaction(c) => out.push(json!({"role": "user", "content": c.text})),
            Message::Assistant { parts } => {
                for part in parts {
                    match part {
                        AssistantPart::Text { text } if !text.is_empty() => {
                            out.push(json!({"role": "assistant", "content": text}));
                        }
                        AssistantPart::Text { .. } => {}
                        // Reasoning from another provider (or without its
                        // item) cannot be sent back; it is left out.
                        AssistantPart::Thinking { signature, .. } => {
                            if let Some(item) = reasoning_item(signature.as_deref()) {
                                out.push(item);
                            }
                        }
                        AssistantPart::ToolCall(call) => out.push(json!({
                            "type": "function_call",
                            "call_id": call.id,
                            "name": call.name,
                            "arguments": arguments_text(&call.arguments),
                        })),
                    }
                }
            }
            Message::ToolResult(result) => out.push(json!({
                "type": "function_call_output",
                "call_id": result.call_id,
                "output": result.content,
            })),
        }
    }
    out
}

#[async_trait]
impl Model for OpenAiResponses {
    fn name(&self) -> &str {
        &self.label
    }

    async fn stream(&self, request: ModelRequest<'_>) -> Result<EventStream, ModelError> {
        let body = self.request_body(request);
        let request = bearer_request("/responses", &body, self.client.config())?;
        self.client.stream(request, self.wire.clone()).await
    }
}

/// The Responses wire.
#[derive(Debug, Clone, Copy, Default)]
pub struct ResponsesWire;

impl Wire for ResponsesWire {
    type Decoder = ResponsesDecoder;

    fn decoder(&self) -> ResponsesDecoder {
        ResponsesDecoder::default()
    }

    fn status_error(&self, status: u16, body: &[u8]) -> Failure {
        super::status_failure(status, body)
    }
}

/// The fields of the events the decoder reads (each event has a few).
#[derive(Debug, Deserialize)]
struct WireEvent {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    output_index: Option<u64>,
    #[serde(default)]
    item_id: Option<String>,
    #[serde(default)]
    content_index: Option<u64>,
    #[serde(default)]
    summary_index: Option<u64>,
    #[serde(default)]
    delta: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
    #[serde(default)]
    item: Option<Value>,
    #[serde(default)]
    response: Option<Value>,
    #[serde(default)]
    code: Option<Value>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    error: Option<ErrorInfo>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ItemKind {
    Message,
    Call,
    Reasoning,
    Other,
}

#[derive(Debug)]
struct Item {
    output_index: Option<u64>,
    id: Option<String>,
    /// The call's or the reasoning's part.
    part: Option<usize>,
    /// A message's text parts, by content index.
    texts: Vec<(u64, usize)>,
    /// Whether deltas (text, arguments, reasoning) arrived for it.
    streamed: bool,
    summary_index: Option<u64>,
}

/// Decodes one Responses stream.
#[derive(Debug, Default)]
pub struct ResponsesDecoder {
    /// The ids made up for calls that came with neither `call_id` nor `id`.
    ids: CallIds,
    next_index: usize,
    items: Vec<Item>,
    /// Parts started and not ended, in start order.
    open: Vec<usize>,
    called: bool,
    refused: bool,
}

impl ResponsesDecoder {
    fn start(&mut self, part: PartKind, out: &mut VecDeque<StreamEvent>) -> usize {
        let index = self.next_index;
        self.next_index += 1;
        self.open.push(index);
        out.push_back(StreamEvent::PartStart { index, part });
        index
    }

    fn end(&mut self, index: usize, out: &mut VecDeque<StreamEvent>) {
        if let Some(at) = self.open.iter().position(|&i| i == index) {
            self.open.remove(at);
            out.push_back(StreamEvent::PartEnd { index });
        }
    }

    fn find(&self, output_index: Option<u64>, item_id: Option<&str>) -> Option<usize> {
        if let Some(id) = item_id
            && let Some(i) = self
                .items
                .iter()
                .position(|it| it.id.as_deref() == Some(id))
        {
            return Some(i);
        }
        let ix = output_index?;
        self.items
            .iter()
            .rposition(|it| it.output_index == Some(ix))
    }

    /// The item an event names, added when it was never announced.
    fn item(&mut self, ev: &WireEvent) -> usize {
        match self.find(ev.output_index, ev.item_id.as_deref()) {
            Some(i) => i,
            None => self.add(ev.output_index, ev.item_id.clone()),
        }
    }

    fn add(&mut self, output_index: Option<u64>, id: Option<String>) -> usize {
        self.items.push(Item {
            output_index,
            id,
            part: None,
            texts: Vec::new(),
            streamed: false,
            summary_index: None,
        });
        self.items.len() - 1
    }

    fn text(
        &mut self,
        slot: usize,
        content_index: u64,
        text: String,
        out: &mut VecDeque<StreamEvent>,
    ) {
        let found = self.items[slot]
            .texts
            .iter()
            .find(|(c, _)| *c == content_index)
            .map(|(_, p)| *p);
        let index = match found {
            Some(p) => p,
            None => {
                let p = self.start(PartKind::Text, out);
                self.items[slot].texts.push((content_index, p));
                p
            }
        };
        self.items[slot].streamed = true;
        out.push_back(StreamEvent::TextDelta { index, text });
    }

    fn reasoning_part(&mut self, slot: usize, out: &mut VecDeque<StreamEvent>) -> usize {
        match self.items[slot].part {
            Some(p) => p,
            None => {
                let p = self.start(PartKind::Thinking, out);
                self.items[slot].part = Some(p);
                p
            }
        }
    }

    fn start_call(&mut self, slot: usize, item: &Value, out: &mut VecDeque<StreamEvent>) {
        if self.items[slot].part.is_some() {
            return;
        }
        let text = |k: &str| item.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        let mut id = text("call_id");
        if id.is_empty() {
            id = text("id");
        }
        if id.is_empty() {
            id = self.ids.make();
        }
        let part = PartKind::ToolCall {
            id,
            name: text("name"),
        };
        let p = self.start(part, out);
        self.items[slot].part = Some(p);
        self.called = true;
        let arguments = text("arguments");
        if !arguments.is_empty() {
            self.items[slot].streamed = true;
            out.push_back(StreamEvent::ArgumentsDelta {
                index: p,
                json: arguments,
            });
        }
    }

    fn item_added(&mut self, ev: &WireEvent, out: &mut VecDeque<StreamEvent>) {
        let Some(item) = &ev.item else { return };
        let kind = item_kind(item);
        let id = item.get("id").and_then(Value::as_str).map(str::to_owned);
        let slot = self.add(ev.output_index, id);
        match kind {
            ItemKind::Call => self.start_call(slot, item, out),
            ItemKind::Reasoning => {
                self.reasoning_part(slot, out);
            }
            ItemKind::Message | ItemKind::Other => {}
        }
    }

    fn item_done(&mut self, ev: &WireEvent, out: &mut VecDeque<StreamEvent>) {
        let Some(item) = &ev.item else { return };
        let kind = item_kind(item);
        let id = item.get("id").and_then(Value::as_str);
        let slot = match self.find(ev.output_index, id) {
            Some(s) => s,
            None => self.add(ev.output_index, id.map(str::to_owned)),
        };
        match kind {
            ItemKind::Call => {
                if self.items[slot].part.is_none() {
                    self.start_call(slot, item, out);
                } else if !self.items[slot].streamed
                    && let Some(arguments) = item.get("arguments").and_then(Value::as_str)
                    && !arguments.is_empty()
                    && let Some(p) = self.items[slot].part
                {
                    out.push_back(StreamEvent::ArgumentsDelta {
                        index: p,
                        json: arguments.to_owned(),
                    });
                }
                if let Some(p) = self.items[slot].part {
                    self.end(p, out);
                }
            }
            ItemKind::Reasoning => {
                let p = self.reasoning_part(slot, out);
                if !self.items[slot].streamed {
                    let summary = summary_text(item);
                    if !summary.is_empty() {
                        out.push_back(StreamEvent::ThinkingDelta {
                            index: p,
                            text: summary,
                        });
                    }
                }
                out.push_back(StreamEvent::SignatureDelta {
                    index: p,
                    signature: item.to_string(),
                });
                self.end(p, out);
            }
            ItemKind::Message => {
                if !self.items[slot].streamed {
                    for (c, text) in message_texts(item) {
                        if !text.is_empty() {
                            self.text(slot, c, text, out);
                        }
                    }
                }
                let parts: Vec<usize> = self.items[slot].texts.iter().map(|(_, p)| *p).collect();
                for p in parts {
                    self.end(p, out);
                }
            }
            ItemKind::Other => {}
        }
    }

    fn finish(
        &mut self,
        response: Option<&Value>,
        reason: FinishReason,
        out: &mut VecDeque<StreamEvent>,
    ) {
        for index in std::mem::take(&mut self.open) {
            out.push_back(StreamEvent::PartEnd { index });
        }
        if let Some(usage) = response.and_then(|r| r.get("usage")).map(usage_of)
            && !usage.is_unknown()
        {
            out.push_back(StreamEvent::Usage(usage));
        }
        out.push_back(StreamEvent::Finish { reason });
    }

    fn handle(&mut self, ev: WireEvent, out: &mut VecDeque<StreamEvent>) -> Result<Flow, Failure> {
        match ev.kind.as_str() {
            "response.output_item.added" => self.item_added(&ev, out),
            "response.output_item.done" => self.item_done(&ev, out),
            "response.output_text.delta" | "response.refusal.delta" => {
                if ev.kind == "response.refusal.delta" {
                    self.refused = true;
                }
                let slot = self.item(&ev);
                if let Some(delta) = ev.delta.filter(|d| !d.is_empty()) {
                    self.text(slot, ev.content_index.unwrap_or(0), delta, out);
                }
            }
            "response.function_call_arguments.delta" => {
                if let Some(slot) = self.find(ev.output_index, ev.item_id.as_deref())
                    && let Some(p) = self.items[slot].part
                    && let Some(delta) = ev.delta.filter(|d| !d.is_empty())
                {
                    self.items[slot].streamed = true;
                    out.push_back(StreamEvent::ArgumentsDelta {
                        index: p,
                        json: delta,
                    });
                }
            }
            "response.function_call_arguments.done" => {
                if let Some(slot) = self.find(ev.output_index, ev.item_id.as_deref())
                    && !self.items[slot].streamed
                    && let Some(p) = self.items[slot].part
                    && let Some(arguments) = ev.arguments.filter(|a| !a.is_empty())
                {
                    self.items[slot].streamed = true;
                    out.push_back(StreamEvent::ArgumentsDelta {
                        index: p,
                        json: arguments,
                    });
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let slot = self.item(&ev);
                let p = self.reasoning_part(slot, out);
                let Some(delta) = ev.delta.filter(|d| !d.is_empty()) else {
                    return Ok(Flow::More);
                };
                let item = &mut self.items[slot];
                if let Some(s) = ev.summary_index {
                    if item.summary_index.is_some_and(|prev| prev != s) {
                        out.push_back(StreamEvent::ThinkingDelta {
                            index: p,
                            text: "\n\n".to_owned(),
                        });
                    }
                    item.summary_index = Some(s);
                }
                item.streamed = true;
                out.push_back(StreamEvent::ThinkingDelta {
                    index: p,
                    text: delta,
                });
            }
            "response.completed" => {
                let reason = if self.called {
                    FinishReason::ToolCalls
                } else if self.refused {
                    FinishReason::Refusal
                } else {
                    FinishReason::Stop
                };
                self.finish(ev.response.as_ref(), reason, out);
                return Ok(Flow::Done);
            }
            "response.incomplete" => {
                let why = ev
                    .response
                    .as_ref()
                    .and_then(|r| r.pointer("/incomplete_details/reason"))
                    .and_then(Value::as_str)
                    .unwrap_or("incomplete");
                let reason = match why {
                    "max_output_tokens" => FinishReason::MaxTokens,
                    "content_filter" => FinishReason::ContentFilter,
                    other => FinishReason::Other(other.to_owned()),
                };
                self.finish(ev.response.as_ref(), reason, out);
                return Ok(Flow::Done);
            }
            "response.failed" => {
                let info = ev
                    .response
                    .as_ref()
                    .and_then(|r| r.get("error"))
                    .and_then(|e| serde_json::from_value::<ErrorInfo>(e.clone()).ok())
                    .unwrap_or_default();
                return Err(super::stream_failure(&info));
            }
            "error" => {
                let info = match ev.error {
                    Some(info) => info,
                    None => ErrorInfo {
                        message: ev.message,
                        kind: None,
                        code: ev.code,
                    },
                };
                return Err(super::stream_failure(&info));
            }
            // Lifecycle (`response.created`, `.in_progress`, `.queued`),
            // `*.done` events whose content came as deltas, and item kinds
            // burrow does not run (web search, MCP, ...).
            _ => {}
        }
        Ok(Flow::More)
    }
}

fn item_kind(item: &Value) -> ItemKind {
    match item.get("type").and_then(Value::as_str) {
        Some("message") => ItemKind::Message,
        Some("function_call") => ItemKind::Call,
        Some("reasoning") => ItemKind::Reasoning,
        _ => ItemKind::Other,
    }
}

/// A reasoning item's summary texts, joined by blank lines.
fn summary_text(item: &Value) -> String {
    let texts = |key: &str| -> Vec<String> {
        item.get(key)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.get("text").and_then(Value::as_str))
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut parts = texts("summary");
    if parts.is_empty() {
        parts = texts("content");
    }
    parts.join("\n\n")
}

/// A message item's text (and refusal) contents, by content index.
fn message_texts(item: &Value) -> Vec<(u64, String)> {
    let Some(content) = item.get("content").and_then(Value::as_array) else {
        return Vec::new();
    };
    content
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let text = c
                .get("text")
                .or_else(|| c.get("refusal"))
                .and_then(Value::as_str)?;
            Some((i as u64, text.to_owned()))
        })
        .collect()
}

fn usage_of(usage: &Value) -> Usage {
    let n = |p: &str| usage.pointer(p).and_then(Value::as_u64);
    let cached = n("/input_tokens_details/cached_tokens");
    Usage {
        input_tokens: n("/input_tokens").map(|i| i.saturating_sub(cached.unwrap_or(0))),
        output_tokens: n("/output_tokens"),
        cache_read_tokens: cached,
        cache_write_tokens: n("/input_tokens_details/cache_write_tokens"),
    }
}

impl Decoder for ResponsesDecoder {
    fn event(&mut self, event: SseEvent, out: &mut VecDeque<StreamEvent>) -> Result<Flow, Failure> {
        let data = event.data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(Flow::More);
        }
        let ev: WireEvent = serde_json::from_str(data).map_err(|e| {
            Failure::of(
                ModelErrorKind::InvalidStream,
                format!("the model provider sent an event that is not valid JSON ({e})"),
            )
        })?;
        self.handle(ev, out)
    }
}
