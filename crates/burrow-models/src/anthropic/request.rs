//! The Anthropic Messages request body: history, system prompt, tools and settings as the `/v1/messages` JSON.
//!
//! The wire wants strictly alternating `user` and `assistant` turns, a
//! top-level `system` string, tool results as `tool_result` blocks of a user
//! turn (before any text of that turn), thinking blocks sent back with their
//! signature, and a `max_tokens` on every request. [`body`] builds exactly
//! that from the normalised history (ADR 0155).

use burrow_runtime::message::{AssistantPart, Message};
use burrow_runtime::model::{ModelRequest, ToolChoice, ToolDefinition};
use serde::Serialize;
use serde_json::Value;

/// The prefix under which a `redacted_thinking` block's opaque `data` is kept
/// in a thinking part's signature. A real signature is base64, which has no
/// `:`, so the two never collide.
pub(crate) const REDACTED_PREFIX: &str = "redacted_thinking:";

/// What the adapter adds to a request beyond the request itself.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Options<'a> {
    /// The model's id on the wire (e.g. `claude-sonnet-4-5`).
    pub model: &'a str,
    /// `max_tokens` when the request's settings leave it open.
    pub default_max_tokens: u32,
    /// Extended thinking's token budget, when thinking is on.
    pub thinking_budget: Option<u32>,
}

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "String::is_empty")]
    system: String,
    messages: Vec<Turn<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Choice<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Thinking>,
    stream: bool,
}

#[derive(Serialize)]
struct Turn<'a> {
    role: Role,
    content: Vec<Block<'a>>,
}

#[derive(Serialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum Role {
    User,
    Assistant,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text {
        text: &'a str,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Input<'a>,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: &'a str,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

#[derive(Serialize)]
#[serde(untagged)]
enum Tool<'a> {
    Function {
        name: &'a str,
        #[serde(skip_serializing_if = "str::is_empty")]
        description: &'a str,
        input_schema: &'a Value,
    },
    /// A tool type Anthropic defines (its schema is Anthropic's own).
    Native {
        #[serde(rename = "type")]
        kind: &'a str,
        name: &'a str,
    },
}

/// The tool types Anthropic defines that this adapter sends as themselves,
/// each with the beta its requests must name in `anthropic-beta`.
const NATIVE_TOOLS: &[(&str, &str)] = &[("memory_20250818", "context-management-2025-06-27")];

/// The native type `tool` is sent as, with its beta, if this adapter knows it.
fn native(tool: &ToolDefinition) -> Option<(&'static str, &'static str)> {
    let kind = tool.native_type.as_deref()?;
    NATIVE_TOOLS
        .iter()
        .copied()
        .find(|(known, _)| *known == kind)
}

/// The betas `request`'s tools need, in the order first needed, each once.
pub(crate) fn betas(request: &ModelRequest<'_>) -> Vec<&'static str> {
    let mut betas = Vec::new();
    for (_, beta) in request.tools.iter().filter_map(native) {
        if !betas.contains(&beta) {
            betas.push(beta);
        }
    }
    betas
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Choice<'a> {
    None,
    Any,
    Tool { name: &'a str },
}

#[derive(Serialize)]
struct Thinking {
    #[serde(rename = "type")]
    kind: &'static str,
    budget_tokens: u32,
}

/// A tool call's `input`: its arguments, or `{}` for a call whose arguments
/// were not a JSON object (the model got a result saying so; the wire needs an object).
#[derive(Serialize)]
#[serde(untagged)]
enum Input<'a> {
    Arguments(&'a Value),
    Empty(EmptyObject),
}

#[derive(Serialize)]
struct EmptyObject {}

/// The request body for `request`, as JSON text.
pub(crate) fn body(
    request: &ModelRequest<'_>,
    options: &Options<'_>,
) -> serde_json::Result<String> {
    serde_json::to_string(&build(request, options))
}

fn build<'a>(request: &ModelRequest<'a>, options: &Options<'a>) -> Body<'a> {
    let mut system = request.system.to_owned();
    let mut messages: Vec<Turn<'a>> = Vec::new();
    for message in request.messages {
        let (role, blocks) = match message {
            Message::System { text } => {
                // The wire has one system prompt: later system messages join it, in order.
                if !text.is_empty() {
                    if !system.is_empty() {
                        system.push_str("\n\n");
                    }
                    system.push_str(text);
                }
                continue;
            }
            // The wire refuses empty text blocks.
            Message::User { text } if text.is_empty() => continue,
            Message::User { text } => (Role::User, vec![Block::Text { text }]),
            Message::Compaction(c) => (Role::User, vec![Block::Text { text: &c.text }]),
            Message::ToolResult(result) => (
                Role::User,
                vec![Block::ToolResult {
                    tool_use_id: &result.call_id,
                    content: &result.content,
                    is_error: result.is_error,
                }],
            ),
            Message::Assistant { parts } => (Role::Assistant, assistant_blocks(parts)),
        };
        if blocks.is_empty() {
            continue;
        }
        match messages.last_mut() {
            Some(last) if last.role == role => last.content.extend(blocks),
            _ => messages.push(Turn {
                role,
                content: blocks,
            }),
        }
    }
    for turn in &mut messages {
        if turn.role == Role::User {
            // Tool results come first in a user turn; the rest keeps its order.
            turn.content
                .sort_by_key(|b| !matches!(b, Block::ToolResult { .. }));
        }
    }
    let tools: Vec<Tool<'a>> = request
        .tools
        .iter()
        .map(|t| match native(t) {
            Some((kind, _)) => Tool::Native {
                kind,
                name: &t.name,
            },
            None => Tool::Function {
                name: &t.name,
                description: &t.description,
                input_schema: &t.input_schema,
            },
        })
        .collect();
    let tool_choice = if tools.is_empty() {
        None
    } else {
        match &request.settings.tool_choice {
            ToolChoice::Auto => None,
            ToolChoice::None => Some(Choice::None),
            ToolChoice::Required => Some(Choice::Any),
            ToolChoice::Tool(name) => Some(Choice::Tool { name }),
        }
    };
    Body {
        model: options.model,
        max_tokens: request
            .settings
            .max_tokens
            .unwrap_or(options.default_max_tokens),
        system,
        messages,
        tools,
        tool_choice,
        temperature: request.settings.temperature,
        thinking: options.thinking_budget.map(|budget_tokens| Thinking {
            kind: "enabled",
            budget_tokens,
        }),
        stream: true,
    }
}

fn assistant_blocks(parts: &[AssistantPart]) -> Vec<Block<'_>> {
    parts
        .iter()
        .filter_map(|part| match part {
            // The wire refuses empty text blocks.
            AssistantPart::Text { text } if text.is_empty() => None,
            AssistantPart::Text { text } => Some(Block::Text { text }),
            // A thinking part without a signature came from elsewhere (another
            // provider, a script): Anthropic refuses unsigned thinking, so it stays out.
            AssistantPart::Thinking {
                signature: None, ..
            } => None,
            AssistantPart::Thinking {
                text,
                signature: Some(signature),
            } => Some(match signature.strip_prefix(REDACTED_PREFIX) {
                Some(data) => Block::RedactedThinking { data },
                None => Block::Thinking {
                    thinking: text,
                    signature,
                },
            }),
            AssistantPart::ToolCall(call) => Some(Block::ToolUse {
                id: &call.id,
                name: &call.name,
                input: match &call.arguments {
                    Value::Object(_) => Input::Arguments(&call.arguments),
                    _ => Input::Empty(EmptyObject {}),
                },
            }),
        })
        .collect()
}
