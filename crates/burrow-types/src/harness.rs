//! Harness documents: checkpoints, output styles, memory and context files.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A snapshot of a conversation, as the Python dataclass serialises it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Identifier (a UUID).
    pub id: String,
    /// Human-readable label, e.g. `"auto-3"` or `"before-refactor"`.
    pub label: String,
    /// The model-request counter when it was taken.
    pub turn: u64,
    /// The conversation so far, each message in its own JSON form.
    pub messages: Vec<Value>,
    /// How many messages it holds.
    pub message_count: u64,
    /// When it was taken, RFC 3339.
    pub created_at: String,
    /// Free-form metadata, e.g. `{"last_tool": "write_file"}`.
    #[serde(default)]
    pub metadata: Map<String, Value>,
}

/// An output style: instructions for the system prompt that set tone and format.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputStyle {
    /// Identifier, e.g. `"concise"`.
    pub name: String,
    /// Brief description.
    pub description: String,
    /// The instructions.
    pub content: String,
}

/// An agent's loaded memory file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryFile {
    /// The agent it belongs to: `"main"`, `"code-reviewer"`, ...
    pub agent_name: String,
    /// Its path in the backend.
    pub path: String,
    /// Its content.
    pub content: String,
}

/// A loaded project context file (AGENTS.md and the like).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextFile {
    /// The file name, e.g. `"AGENTS.md"`.
    pub name: String,
    /// Its full path, e.g. `"/project/AGENTS.md"`.
    pub path: String,
    /// Its content.
    pub content: String,
}
