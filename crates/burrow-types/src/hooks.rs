//! Hook definitions: commands run around tool calls.

use serde::{Deserialize, Serialize};

/// When a hook fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookEvent {
    /// Before a tool runs; the hook may deny or modify the call.
    PreToolUse,
    /// After a tool succeeded.
    PostToolUse,
    /// After a tool failed.
    PostToolUseFailure,
}

/// The default hook timeout, in seconds.
pub const DEFAULT_HOOK_TIMEOUT_SECS: u64 = 30;

/// A hook, as the Python dataclass serialises it (every field present, `None`
/// as `null`). The Python `handler` is a live function with no JSON form and is
/// left out; a runtime attaches handlers beside this data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hook {
    /// When it fires.
    pub event: HookEvent,
    /// A shell command receiving the event as JSON on stdin.
    #[serde(default)]
    pub command: Option<String>,
    /// A regex over the tool name; `None` matches every tool.
    #[serde(default)]
    pub matcher: Option<String>,
    /// Timeout in seconds; 30 by default.
    #[serde(default = "default_timeout")]
    pub timeout: u64,
    /// Run without blocking the call; false by default.
    #[serde(default)]
    pub background: bool,
}

fn default_timeout() -> u64 {
    DEFAULT_HOOK_TIMEOUT_SECS
}

impl Hook {
    /// A hook running `command` on `event`, for every tool, with default timeout.
    pub fn command(event: HookEvent, command: impl Into<String>) -> Self {
        Self {
            event,
            command: Some(command.into()),
            matcher: None,
            timeout: DEFAULT_HOOK_TIMEOUT_SECS,
            background: false,
        }
    }
}
