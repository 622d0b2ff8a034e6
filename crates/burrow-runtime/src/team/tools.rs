//! The team tools over a [`TeamStore`]: `team_todos` (list, and add items), `claim_todo`, `complete_todo` and `send_message`, each acting as one member of one team.
//!
//! A store refusal (an item claimed by another member, blocked, unknown)
//! is the call's refusal (`is_error`) with the store's sentence; a store
//! failure is the call's failure.

use std::sync::Arc;

use burrow_backend::{Error, LockKey};
use burrow_types::{SharedTodoItem, TeamMessage, TodoStatus};
use schemars::JsonSchema;
use serde::Deserialize;

use super::{TeamKey, TeamStore, TodoChange};
use crate::session::{SessionStore, StoreError, StoreErrorKind};
use crate::tool::{FnTool, Tool, ToolAnnotations, ToolOutput};

/// `team_todos`' name.
pub const TEAM_TODOS: &str = "team_todos";
/// `claim_todo`'s name.
pub const CLAIM_TODO: &str = "claim_todo";
/// `complete_todo`'s name.
pub const COMPLETE_TODO: &str = "complete_todo";
/// `send_message`'s name.
pub const SEND_MESSAGE: &str = "send_message";

/// Who the tools act as: a member of a team whose part of a session store they use.
#[derive(Debug, Clone)]
pub struct TeamContext {
    /// The session store holding the team.
    pub store: Arc<dyn SessionStore>,
    /// The team.
    pub team: TeamKey,
    /// The member the tools act as.
    pub member: String,
}

impl TeamContext {
    fn teams(&self) -> Result<&dyn TeamStore, Error> {
        self.store.teams().ok_or_else(|| {
            Error::failure_msg("the session store keeps no teams, so the team tools cannot work")
        })
    }
}

/// A store error as the tool's answer: refusals to the model, failures to the loop.
fn answer(e: StoreError) -> Result<ToolOutput, Error> {
    match e.kind() {
        StoreErrorKind::Storage | StoreErrorKind::Corrupt => Err(Error::failure_msg(format!(
            "the team store failed: {}",
            e.message()
        ))),
        _ => Ok(ToolOutput::refused(format!("{}.", e.message()))),
    }
}

fn mark(status: &TodoStatus) -> &'static str {
    match status {
        TodoStatus::Pending => "pending",
        TodoStatus::InProgress => "in_progress",
        TodoStatus::Completed => "completed",
    }
}

/// The list as the model reads it: one line per item, then the items as JSON.
pub fn render(items: &[SharedTodoItem]) -> String {
    if items.is_empty() {
        return "The team's todo list is empty.".to_owned();
    }
    let mut text = format!("The team's todo list ({} items):\n", items.len());
    for i in items {
        text.push_str(&format!("- [{}] {} ({})", i.id, i.content, mark(&i.status)));
        if let Some(who) = &i.assigned_to {
            text.push_str(&format!(", assigned to {who}"));
        }
        if !i.blocked_by.is_empty() {
            text.push_str(&format!(", blocked by {}", i.blocked_by.join(", ")));
        }
        text.push('\n');
    }
    text
}

/// A new item of `team_todos`' `add`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct NewItem {
    /// Its id (8 hex digits are made up when left out).
    #[serde(default)]
    id: Option<String>,
    /// What to do.
    content: String,
    /// Ids of the items that must complete before this one can be started.
    #[serde(default)]
    blocked_by: Vec<String>,
}

/// `team_todos`' arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    /// Items to add first, in order (pending, unassigned, created by you).
    #[serde(default)]
    add: Vec<NewItem>,
}

/// `claim_todo`'s and `complete_todo`'s arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ItemArgs {
    /// The item's id.
    id: String,
}

/// `send_message`'s arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SendArgs {
    /// The member it is for; leave it out (or empty) to send it to every other member.
    #[serde(default)]
    to: String,
    /// The message.
    content: String,
}

/// 8 hex digits, as the seed makes ids: the random tail of a UUIDv7.
fn short_id() -> String {
    let id = uuid::Uuid::now_v7().simple().to_string();
    id[id.len().saturating_sub(8)..].to_owned()
}

fn not_read_only() -> ToolAnnotations {
    ToolAnnotations {
        read_only: false,
        destructive: false,
        idempotent: false,
    }
}

/// The lock key every team tool's call holds: one agent's team calls of one
/// answer run in call order (an item added, then claimed), as file calls
/// on one path do.
fn team_lock(team: &TeamKey) -> LockKey {
    LockKey::new(format!(
        "team\u{1f}{}\u{1f}{}\u{1f}{}",
        team.scope.tenant, team.scope.workspace, team.team
    ))
}

/// The four team tools acting as `cx.member` of `cx.team`.
pub fn team_tools(cx: TeamContext) -> Vec<Arc<dyn Tool>> {
    let key = team_lock(&cx.team);
    let list = {
        let cx = cx.clone();
        FnTool::new(
            TEAM_TODOS,
            "List the team's shared todo list (every item's id, content, status, who holds it and \
             what blocks it). With `add`, first add new items (pending, unassigned), each blocked by \
             the ids in its `blocked_by` until those are completed.",
            move |args: ListArgs, _| {
                let cx = cx.clone();
                async move {
                    let teams = cx.teams()?;
                    for new in args.add {
                        let item = SharedTodoItem {
                            id: new.id.unwrap_or_else(short_id),
                            content: new.content,
                            status: TodoStatus::Pending,
                            assigned_to: None,
                            blocked_by: new.blocked_by,
                            created_by: Some(cx.member.clone()),
                        };
                        if let Err(e) = teams.change_todo(&cx.team, TodoChange::Add(item)).await {
                            return answer(e);
                        }
                    }
                    match teams.team_todos(&cx.team).await {
                        Ok(items) => Ok(ToolOutput::ok(render(&items))),
                        Err(e) => answer(e),
                    }
                }
            },
        )
        .with_annotations(not_read_only())
        .with_locks({
            let key = key.clone();
            move |_| vec![key.clone()]
        })
    };
    let change = |name: &'static str, description: &'static str, complete: bool| {
        let cx = cx.clone();
        FnTool::new(name, description, move |args: ItemArgs, _| {
            let cx = cx.clone();
            async move {
                let change = if complete {
                    TodoChange::Complete {
                        id: args.id,
                        member: cx.member.clone(),
                    }
                } else {
                    TodoChange::Claim {
                        id: args.id,
                        member: cx.member.clone(),
                    }
                };
                match cx.teams()?.change_todo(&cx.team, change).await {
                    Ok(item) => Ok(ToolOutput::ok(format!(
                        "{} item {}: {}.",
                        if complete { "Completed" } else { "Claimed" },
                        item.id,
                        item.content
                    ))),
                    Err(e) => answer(e),
                }
            }
        })
        .with_annotations(not_read_only())
        .with_locks({
            let key = key.clone();
            move |_| vec![key.clone()]
        })
    };
    let claim = change(
        CLAIM_TODO,
        "Claim a pending item of the team's todo list by its id: it becomes in progress and \
         yours. Refused when another member holds it, when it is completed, or while an item it \
         is blocked by is unfinished.",
        false,
    );
    let complete = change(
        COMPLETE_TODO,
        "Mark an item you claimed as completed, by its id; items blocked by it can then be claimed.",
        true,
    );
    let send = {
        let cx = cx.clone();
        FnTool::new(
            SEND_MESSAGE,
            "Send a message to one team member (`to`: its name) or, with `to` left out, to every \
             other member. It reaches them before their next model request.",
            move |args: SendArgs, _| {
                let cx = cx.clone();
                async move {
                    if args.content.trim().is_empty() {
                        return Ok(ToolOutput::refused(
                            "The message is empty; write what you want to tell and send it again.",
                        ));
                    }
                    if args.to == cx.member {
                        return Ok(ToolOutput::refused(
                            "That message is addressed to you; send it to another member or leave `to` out to send it to everyone.",
                        ));
                    }
                    let message = TeamMessage {
                        id: short_id(),
                        sender: cx.member.clone(),
                        receiver: args.to.clone(),
                        content: args.content,
                        timestamp: crate::checkpoint::now_rfc3339(),
                    };
                    match cx.teams()?.send_message(&cx.team, message).await {
                        Ok(_) if args.to.is_empty() => {
                            Ok(ToolOutput::ok("Sent the message to every other member."))
                        }
                        Ok(_) => Ok(ToolOutput::ok(format!("Sent the message to {}.", args.to))),
                        Err(e) => answer(e),
                    }
                }
            },
        )
        .with_annotations(not_read_only())
        .with_locks({
            let key = key.clone();
            move |_| vec![key.clone()]
        })
    };
    vec![
        Arc::new(list) as Arc<dyn Tool>,
        Arc::new(claim),
        Arc::new(complete),
        Arc::new(send),
    ]
}
