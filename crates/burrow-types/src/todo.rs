//! `Todo` and `TodoStatus`: an agent's planning items.

use serde::{Deserialize, Serialize};

/// Where a todo stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started (the default).
    #[default]
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
}

/// One planning item, as the Python pydantic model `Todo` serialises it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Todo {
    /// What to do, in the imperative ("Implement authentication").
    pub content: String,
    /// Where it stands.
    pub status: TodoStatus,
    /// The present continuous form shown while it runs ("Implementing authentication").
    pub active_form: String,
}
