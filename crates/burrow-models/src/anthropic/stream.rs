//! The Anthropic Messages stream decoder: SSE events (`message_start`, `content_block_*`, `message_delta`, `message_stop`, `ping`, `error`) into burrow's stream events.
//!
//! One [`Decoder`] per answer. It is fed each SSE event's data (the JSON's
//! `type` names the event, as the SSE `event:` line does) and appends the
//! [`StreamEvent`]s it means. Anthropic numbers content blocks itself; the
//! decoder maps each block it understands to a part index of its own, in
//! order, so blocks it leaves out (server-tool blocks, which burrow never
//! asks for) leave no hole. Tool-call fragments pass through as they come:
//! the runtime parses them once, at the part's end.

use std::collections::{HashMap, VecDeque};

use burrow_runtime::message::Usage;
use burrow_runtime::model::{FinishReason, ModelErrorKind, PartKind, StreamEvent};
use serde::Deserialize;
use serde_json::Value;

use super::error::{WireError, stream_failure};
use super::request::REDACTED_PREFIX;
use crate::http::{self, Failure, Flow};
use crate::ids::CallIds;
use crate::sse::SseEvent;

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireEvent {
    MessageStart {
        #[serde(default)]
        message: WireMessage,
    },
    ContentBlockStart {
        index: u64,
        content_block: WireBlock,
    },
    ContentBlockDelta {
        index: u64,
        delta: WireDelta,
    },
    ContentBlockStop {
        index: u64,
    },
    MessageDelta {
        #[serde(default)]
        delta: WireMessageDelta,
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    MessageStop,
    Ping,
    Error {
        #[serde(default)]
        error: Option<WireError>,
    },
    /// An event type this decoder does not know: Anthropic's versioning
    /// policy adds event types, and a client is to ignore what it does not know.
    #[serde(other)]
    Unknown,
}

#[derive(Deserialize, Default)]
struct WireMessage {
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize, Default)]
struct WireMessageDelta {
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
        #[serde(default)]
        signature: Option<String>,
    },
    RedactedThinking {
        #[serde(default)]
        data: String,
    },
    ToolUse {
        #[serde(default)]
        id: String,
        name: String,
        #[serde(default)]
        input: Option<Value>,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireDelta {
    TextDelta {
        text: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    ThinkingDelta {
        thinking: String,
    },
    SignatureDelta {
        signature: String,
    },
    /// `citations_delta` and any delta type added later.
    #[serde(other)]
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BlockKind {
    Text,
    Thinking,
    Call,
    /// A block burrow does not turn into a part; its deltas are skipped.
    Skipped,
}

#[derive(Debug)]
struct Block {
    part: usize,
    kind: BlockKind,
    /// For a call: whether any `input_json_delta` came.
    fragments: bool,
    /// For a call: the `input` its start carried, when not empty.
    start_input: Option<Value>,
}

/// Turns one answer's SSE events into stream events.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    /// The ids made up for calls that came without one.
    ids: CallIds,
    blocks: HashMap<u64, Block>,
    open: usize,
    next_part: usize,
    stop_reason: Option<FinishReason>,
    done: bool,
}

fn invalid(message: impl Into<String>) -> Failure {
    Failure::of(ModelErrorKind::InvalidStream, message)
}

type Out = VecDeque<StreamEvent>;

impl Decoder {
    /// A decoder that has seen nothing.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Decodes one SSE event's `data`, appending what it means to `out`.
    ///
    /// # Behavior
    /// An `error` event is the error it names (kind from its `error.type`);
    /// data that is not the JSON of an event, a delta or stop for a block
    /// that is not open, a block started twice and a `message_stop` with a
    /// block still open are `invalid_stream` errors. `ping`, unknown event
    /// types and unknown delta types append nothing. After `message_stop`
    /// every event is ignored.
    pub(crate) fn decode(&mut self, data: &str, out: &mut Out) -> Result<Flow, Failure> {
        if self.done {
            return Ok(Flow::Done);
        }
        let event: WireEvent = serde_json::from_str(data).map_err(|e| {
            invalid(format!(
                "the Anthropic stream sent an event that is not valid JSON ({})",
                e
            ))
        })?;
        match event {
            WireEvent::MessageStart { message } => {
                if let Some(usage) = message.usage {
                    out.push_back(StreamEvent::Usage(usage.into()));
                }
            }
            WireEvent::ContentBlockStart {
                index,
                content_block,
            } => self.start(index, content_block, out)?,
            WireEvent::ContentBlockDelta { index, delta } => self.delta(index, delta, out)?,
            WireEvent::ContentBlockStop { index } => self.stop(index, out)?,
            WireEvent::MessageDelta { delta, usage } => {
                if let Some(reason) = delta.stop_reason {
                    self.stop_reason = Some(finish_reason(&reason));
                }
                if let Some(usage) = usage {
                    out.push_back(StreamEvent::Usage(usage.into()));
                }
            }
            WireEvent::MessageStop => {
                if self.open > 0 {
                    let mut open: Vec<u64> = self.blocks.keys().copied().collect();
                    open.sort_unstable();
                    return Err(invalid(format!(
                        "the Anthropic stream ended its message with content blocks {open:?} still open"
                    )));
                }
                self.done = true;
                out.push_back(StreamEvent::Finish {
                    reason: self
                        .stop_reason
                        .take()
                        .unwrap_or_else(|| FinishReason::Other("unknown".to_owned())),
                });
                return Ok(Flow::Done);
            }
            WireEvent::Ping | WireEvent::Unknown => {}
            WireEvent::Error { error } => {
                return Err(stream_failure(error.as_ref()));
            }
        }
        Ok(Flow::More)
    }

    fn start(&mut self, index: u64, block: WireBlock, out: &mut Out) -> Result<(), Failure> {
        if self.blocks.contains_key(&index) {
            return Err(invalid(format!(
                "the Anthropic stream started content block {index} twice"
            )));
        }
        let part = self.next_part;
        let (kind, start_input) = match block {
            WireBlock::Text { text } => {
                out.push_back(StreamEvent::PartStart {
                    index: part,
                    part: PartKind::Text,
                });
                if !text.is_empty() {
                    out.push_back(StreamEvent::TextDelta { index: part, text });
                }
                (BlockKind::Text, None)
            }
            WireBlock::Thinking {
                thinking,
                signature,
            } => {
                out.push_back(StreamEvent::PartStart {
                    index: part,
                    part: PartKind::Thinking,
                });
                if !thinking.is_empty() {
                    out.push_back(StreamEvent::ThinkingDelta {
                        index: part,
                        text: thinking,
                    });
                }
                if let Some(signature) = signature.filter(|s| !s.is_empty()) {
                    out.push_back(StreamEvent::SignatureDelta {
                        index: part,
                        signature,
                    });
                }
                (BlockKind::Thinking, None)
            }
            WireBlock::RedactedThinking { data } => {
                out.push_back(StreamEvent::PartStart {
                    index: part,
                    part: PartKind::Thinking,
                });
                out.push_back(StreamEvent::SignatureDelta {
                    index: part,
                    signature: format!("{REDACTED_PREFIX}{data}"),
                });
                (BlockKind::Thinking, None)
            }
            WireBlock::ToolUse { id, name, input } => {
                let id = if id.is_empty() { self.ids.make() } else { id };
                out.push_back(StreamEvent::PartStart {
                    index: part,
                    part: PartKind::ToolCall { id, name },
                });
                let input = input.filter(|v| !matches!(v, Value::Object(m) if m.is_empty()));
                (BlockKind::Call, input.filter(|v| !v.is_null()))
            }
            WireBlock::Other => (BlockKind::Skipped, None),
        };
        if kind != BlockKind::Skipped {
            self.next_part += 1;
        }
        self.blocks.insert(
            index,
            Block {
                part,
                kind,
                fragments: false,
                start_input,
            },
        );
        self.open += 1;
        Ok(())
    }

    fn delta(&mut self, index: u64, delta: WireDelta, out: &mut Out) -> Result<(), Failure> {
        let Some(block) = self.blocks.get_mut(&index) else {
            return Err(invalid(format!(
                "the Anthropic stream sent a delta for content block {index}, which is not open"
            )));
        };
        let part = block.part;
        let event = match (block.kind, delta) {
            (BlockKind::Skipped, _) | (_, WireDelta::Other) => None,
            (BlockKind::Text, WireDelta::TextDelta { text }) => {
                Some(StreamEvent::TextDelta { index: part, text })
            }
            (BlockKind::Thinking, WireDelta::ThinkingDelta { thinking }) => {
                Some(StreamEvent::ThinkingDelta {
                    index: part,
                    text: thinking,
                })
            }
            (BlockKind::Thinking, WireDelta::SignatureDelta { signature }) => {
                Some(StreamEvent::SignatureDelta {
                    index: part,
                    signature,
                })
            }
            (BlockKind::Call, WireDelta::InputJsonDelta { partial_json }) => {
                block.fragments = true;
                Some(StreamEvent::ArgumentsDelta {
                    index: part,
                    json: partial_json,
                })
            }
            (kind, delta) => {
                return Err(invalid(format!(
                    "the Anthropic stream sent a {} into content block {index}, a {} block",
                    delta.name(),
                    kind.name()
                )));
            }
        };
        // Empty fragments carry nothing; the runtime would only append "".
        match event {
            Some(StreamEvent::TextDelta { ref text, .. })
            | Some(StreamEvent::ThinkingDelta { ref text, .. })
                if text.is_empty() => {}
            Some(StreamEvent::ArgumentsDelta { ref json, .. }) if json.is_empty() => {}
            Some(event) => out.push_back(event),
            None => {}
        }
        Ok(())
    }

    fn stop(&mut self, index: u64, out: &mut Out) -> Result<(), Failure> {
        let Some(block) = self.blocks.remove(&index) else {
            return Err(invalid(format!(
                "the Anthropic stream stopped content block {index}, which is not open"
            )));
        };
        self.open -= 1;
        if block.kind == BlockKind::Skipped {
            return Ok(());
        }
        if let (false, Some(input)) = (block.fragments, block.start_input) {
            // A server that sends the whole input at the start and no fragments.
            out.push_back(StreamEvent::ArgumentsDelta {
                index: block.part,
                json: input.to_string(),
            });
        }
        out.push_back(StreamEvent::PartEnd { index: block.part });
        Ok(())
    }
}

impl http::Decoder for Decoder {
    fn event(&mut self, event: SseEvent, out: &mut Out) -> Result<Flow, Failure> {
        self.decode(&event.data, out)
    }

    /// A stream closed after its `message_delta` gave the stop reason, every
    /// block ended, but before `message_stop`, is complete; any other early
    /// end was cut.
    fn end(&mut self, out: &mut Out) -> Result<(), Failure> {
        if self.open == 0
            && let Some(reason) = self.stop_reason.take()
        {
            self.done = true;
            out.push_back(StreamEvent::Finish { reason });
            return Ok(());
        }
        Err(Failure::of(
            ModelErrorKind::Transport,
            "the Anthropic stream ended before message_stop (the connection was probably cut)",
        ))
    }
}

impl BlockKind {
    fn name(self) -> &'static str {
        match self {
            BlockKind::Text => "text",
            BlockKind::Thinking => "thinking",
            BlockKind::Call => "tool_use",
            BlockKind::Skipped => "skipped",
        }
    }
}

impl WireDelta {
    fn name(&self) -> &'static str {
        match self {
            WireDelta::TextDelta { .. } => "text_delta",
            WireDelta::InputJsonDelta { .. } => "input_json_delta",
            WireDelta::ThinkingDelta { .. } => "thinking_delta",
            WireDelta::SignatureDelta { .. } => "signature_delta",
            WireDelta::Other => "delta",
        }
    }
}

impl From<WireUsage> for Usage {
    fn from(u: WireUsage) -> Self {
        Usage {
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            cache_read_tokens: u.cache_read_input_tokens,
            cache_write_tokens: u.cache_creation_input_tokens,
        }
    }
}

/// burrow's finish reason for an Anthropic `stop_reason`.
pub(crate) fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "tool_use" => FinishReason::ToolCalls,
        "max_tokens" => FinishReason::MaxTokens,
        "refusal" => FinishReason::Refusal,
        other => FinishReason::Other(other.to_owned()),
    }
}
