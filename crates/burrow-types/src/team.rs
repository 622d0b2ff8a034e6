//! Team types: todos shared by a team of agents, messages between members, members.

use serde::{Deserialize, Serialize};

use crate::TodoStatus;

/// A todo shared by a team, as the Python dataclass serialises it (every
/// field present, `None` as `null`). Python generates `id` (8 hex digits)
/// when none is given; on the wire it is always there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedTodoItem {
    /// Identifier, e.g. `"3f9a1c2b"`.
    pub id: String,
    /// What to do.
    #[serde(default)]
    pub content: String,
    /// Where it stands; pending by default.
    #[serde(default)]
    pub status: TodoStatus,
    /// The member who claimed it.
    #[serde(default)]
    pub assigned_to: Option<String>,
    /// Ids of the items that must complete first.
    #[serde(default)]
    pub blocked_by: Vec<String>,
    /// The member who created it.
    #[serde(default)]
    pub created_by: Option<String>,
}

/// A message between team members; an empty `receiver` is a broadcast.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamMessage {
    /// Identifier, e.g. `"a1b2c3d4"`.
    pub id: String,
    /// Who sent it.
    #[serde(default)]
    pub sender: String,
    /// Who it is for; `""` for everyone.
    #[serde(default)]
    pub receiver: String,
    /// The message.
    #[serde(default)]
    pub content: String,
    /// When it was sent, RFC 3339.
    pub timestamp: String,
}

impl TeamMessage {
    /// True when the message is for every member.
    pub fn is_broadcast(&self) -> bool {
        self.receiver.is_empty()
    }
}

/// The model a [`TeamMember`] runs on unless told otherwise.
pub const DEFAULT_TEAM_MEMBER_MODEL: &str = "openai:gpt-4.1";

/// A member of an agent team (the Python dataclass's `toolsets` hold live
/// objects and have no JSON form, so they are left out).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamMember {
    /// Unique name within the team.
    pub name: String,
    /// Its role, e.g. `"reviewer"`.
    pub role: String,
    /// What it does.
    pub description: String,
    /// Its system prompt.
    pub instructions: String,
    /// Its model; `"openai:gpt-4.1"` by default.
    #[serde(default = "default_model")]
    pub model: String,
}

fn default_model() -> String {
    DEFAULT_TEAM_MEMBER_MODEL.to_owned()
}
