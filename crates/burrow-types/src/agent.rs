//! Subagent types: configuration, execution modes, and handles of background tasks.
//!
//! Python fields that hold live objects (a subagent's `toolsets`, a compiled
//! agent instance) have no JSON form and are left out: these types keep only
//! the serialisable data (ADR 0011).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// How a subagent task runs (`Literal["sync", "async", "auto"]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionMode {
    /// Block until the task completes (the default).
    #[default]
    Sync,
    /// Run in the background and return a [`TaskHandle`] at once.
    Async,
    /// Decide from the task's characteristics.
    Auto,
}

/// How demanding a subagent's tasks usually are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskComplexity {
    /// Quick, self-contained.
    Simple,
    /// Some work.
    Moderate,
    /// Long or many-step.
    Complex,
}

/// A subagent's configuration, as the Python `SubAgentConfig` TypedDict holds
/// it: `name`, `description` and `instructions` always present, the optional
/// keys absent (not `null`) when unset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubAgentConfig {
    /// Unique identifier.
    pub name: String,
    /// When to use this subagent (shown to the parent agent).
    pub description: String,
    /// The subagent's system prompt.
    pub instructions: String,
    /// A model overriding the parent's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Whether the subagent may ask the parent questions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub can_ask_questions: Option<bool>,
    /// At most this many questions per task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_questions: Option<u32>,
    /// The execution mode this subagent prefers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preferred_mode: Option<ExecutionMode>,
    /// How demanding its tasks usually are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub typical_complexity: Option<TaskComplexity>,
    /// Whether its tasks usually need the user's context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub typically_needs_context: Option<bool>,
    /// Extra keyword arguments for the agent constructor, as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_kwargs: Option<Map<String, Value>>,
}

impl SubAgentConfig {
    /// A config with the three required keys and no optional ones.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        instructions: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            instructions: instructions.into(),
            model: None,
            can_ask_questions: None,
            max_questions: None,
            preferred_mode: None,
            typical_complexity: None,
            typically_needs_context: None,
            agent_kwargs: None,
        }
    }
}

/// A subagent ready for use: its name, description and original configuration
/// (the Python dataclass also holds the agent instance, which has no JSON form).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompiledSubAgent {
    /// Unique identifier.
    pub name: String,
    /// Brief description.
    pub description: String,
    /// The configuration it was compiled from.
    pub config: SubAgentConfig,
}

/// Where a background task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Queued (the default).
    #[default]
    Pending,
    /// Running.
    Running,
    /// Blocked on a question to the parent.
    WaitingForAnswer,
    /// Finished successfully.
    Completed,
    /// Finished with an error.
    Failed,
    /// Cancelled.
    Cancelled,
}

impl TaskStatus {
    /// True for the statuses a task never leaves.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}

/// How urgent a background task is.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum TaskPriority {
    /// Low.
    Low,
    /// Normal (the default).
    #[default]
    Normal,
    /// High.
    High,
    /// Critical.
    Critical,
}

/// The handle of a background subagent task, as the Python dataclass
/// serialises it: every field present, `None` as `null`, times RFC 3339.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskHandle {
    /// Unique identifier.
    pub task_id: String,
    /// The subagent running it.
    pub subagent_name: String,
    /// What the task is.
    pub description: String,
    /// Where it stands; pending by default.
    #[serde(default)]
    pub status: TaskStatus,
    /// How urgent it is; normal by default.
    #[serde(default)]
    pub priority: TaskPriority,
    /// When it was created.
    pub created_at: String,
    /// When it started running.
    #[serde(default)]
    pub started_at: Option<String>,
    /// When it finished.
    #[serde(default)]
    pub completed_at: Option<String>,
    /// Its result, once completed.
    #[serde(default)]
    pub result: Option<String>,
    /// Its error, once failed.
    #[serde(default)]
    pub error: Option<String>,
    /// The question it waits on, if any.
    #[serde(default)]
    pub pending_question: Option<String>,
}
