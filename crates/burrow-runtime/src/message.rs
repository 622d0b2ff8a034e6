//! Normalised messages (system, user, assistant parts, tool results) and token usage where unknown is not zero.
//!
//! Every provider's wire is translated into these types and back, so the
//! agent loop, hooks, sessions and the CLI speak one vocabulary. What a
//! provider needs to be sent back verbatim (a thinking block's signature, an
//! encrypted reasoning item) is kept on the part, never dropped.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// Instructions from the application (not from the user).
    System {
        /// The instruction text.
        text: String,
    },
    /// What the user said.
    User {
        /// The prompt text.
        text: String,
    },
    /// What the model answered: text, thinking and tool calls, in the order produced.
    Assistant {
        /// The parts of the answer.
        parts: Vec<AssistantPart>,
    },
    /// The result of one tool call, answering the call with the same id.
    ToolResult(ToolResult),
    /// A compaction: from here on the model reads [`Compaction::text`] in
    /// place of the messages before the last [`Compaction::kept`] ones before
    /// it (see [`crate::compaction`]). The history keeps those messages; only
    /// the model's view leaves them out. A provider adapter sent one reads it
    /// as a user message holding its text.
    Compaction(Compaction),
}

/// A compaction entry of the history: what was summarised and the summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Compaction {
    /// The summary the model wrote of the messages it replaces.
    pub summary: String,
    /// What the model reads in place of the replaced messages: the summary,
    /// the todo list and the last user instruction (both verbatim).
    pub text: String,
    /// How many messages right before this entry stay in the model's view,
    /// verbatim (an entry of another compaction among them is not counted
    /// out: it is left out of the view however it falls).
    pub kept: usize,
    /// How many messages of the model's view before those the summary
    /// request read (an earlier compaction's text counts as one).
    pub summarised: usize,
    /// What asked for it: `auto` (the threshold) or `manual`.
    pub trigger: String,
    /// The estimated input tokens of the view it replaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_before: Option<u64>,
}

impl Message {
    /// A system message.
    pub fn system(text: impl Into<String>) -> Self {
        Message::System { text: text.into() }
    }

    /// A user message.
    pub fn user(text: impl Into<String>) -> Self {
        Message::User { text: text.into() }
    }

    /// An assistant message holding one text part.
    pub fn assistant_text(text: impl Into<String>) -> Self {
        Message::Assistant {
            parts: vec![AssistantPart::Text { text: text.into() }],
        }
    }

    /// The tool calls of an assistant message (none for any other message).
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        let parts: &[AssistantPart] = match self {
            Message::Assistant { parts } => parts,
            _ => &[],
        };
        parts.iter().filter_map(|p| match p {
            AssistantPart::ToolCall(call) => Some(call),
            _ => None,
        })
    }
}

/// One part of an assistant answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AssistantPart {
    /// Text for the user.
    Text {
        /// The text.
        text: String,
    },
    /// The model's visible reasoning.
    Thinking {
        /// The reasoning text (empty when the provider shows none).
        text: String,
        /// The provider's signature or encrypted payload, sent back verbatim with the history.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// A request to run a tool.
    ToolCall(ToolCall),
}

/// A tool call the model made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id for the call; its result carries the same id.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments. A JSON object when the model's text parsed; when it did
    /// not, the raw text as a JSON string, so the call can be answered with a
    /// result that says so.
    pub arguments: Value,
}

/// The result of one tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The id of the call this answers.
    pub call_id: String,
    /// The tool's name (as the call named it).
    pub name: String,
    /// The text the model reads.
    pub content: String,
    /// True when the call was refused, denied, unknown, invalid, cancelled or failed.
    pub is_error: bool,
}

/// Tokens one request (or a whole run) used. Each count is optional: `None`
/// means the provider did not say, which is not the same as zero.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Input (prompt) tokens, not counting cache reads and writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Output (completion) tokens, reasoning included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// Input tokens read from the provider's prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<u64>,
    /// Input tokens written to the provider's prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
}

impl Usage {
    /// Nothing known.
    pub const UNKNOWN: Usage = Usage {
        input_tokens: None,
        output_tokens: None,
        cache_read_tokens: None,
        cache_write_tokens: None,
    };

    /// True when no count is known.
    pub fn is_unknown(&self) -> bool {
        *self == Usage::UNKNOWN
    }

    /// Folds a later snapshot of the *same* request into this one: providers
    /// that report usage cumulatively (Anthropic's `message_start` then
    /// `message_delta`) send each count again as it grows, so a count the
    /// later snapshot knows replaces the earlier one and a count it leaves out
    /// stays as it was.
    pub fn update(&mut self, later: &Usage) {
        fn latest(a: &mut Option<u64>, b: Option<u64>) {
            if b.is_some() {
                *a = b;
            }
        }
        latest(&mut self.input_tokens, later.input_tokens);
        latest(&mut self.output_tokens, later.output_tokens);
        latest(&mut self.cache_read_tokens, later.cache_read_tokens);
        latest(&mut self.cache_write_tokens, later.cache_write_tokens);
    }

    /// Adds the usage of another request (for a run's total). A count is the
    /// sum of the requests that reported it, and stays unknown only when no
    /// request reported it (ADR 0131).
    pub fn add(&mut self, other: &Usage) {
        fn sum(a: &mut Option<u64>, b: Option<u64>) {
            *a = match (*a, b) {
                (None, None) => None,
                (x, y) => Some(x.unwrap_or(0).saturating_add(y.unwrap_or(0))),
            };
        }
        sum(&mut self.input_tokens, other.input_tokens);
        sum(&mut self.output_tokens, other.output_tokens);
        sum(&mut self.cache_read_tokens, other.cache_read_tokens);
        sum(&mut self.cache_write_tokens, other.cache_write_tokens);
    }
}
