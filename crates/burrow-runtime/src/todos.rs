//! Todos (issue 26, opt-in): the `write_todos` tool in Claude Code's TodoWrite shape, one per model answer, the list kept in the history the session store already keeps (ADR 0270).
//!
//! `write_todos` takes `{"todos": [{"content", "status", "activeForm"}]}`
//! and replaces the whole list. The list is not held anywhere else: it is
//! the arguments of the last `write_todos` call that succeeded, read back
//! from the history with [`current`]. In a session thread that history is
//! the store's, so the list survives a crash, a take-over and a resume of
//! the thread without a table of its own.
//!
//! [`TodoCapability`] refuses a second `write_todos` in one model answer
//! (the list is replaced whole, so two in one answer would race): the first
//! in call order runs, every later one gets a refusal.

use std::sync::Arc;

use async_trait::async_trait;
use burrow_types::{Todo, TodoStatus};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::agent::{Agent, CallInfo, Capability};
use crate::message::Message;
use crate::tool::{FnTool, Tool, ToolOutput};

/// The tool's name.
pub const WRITE_TODOS: &str = "write_todos";

/// The most items one list holds.
pub const MAX_TODOS: usize = 200;

const DESCRIPTION: &str = "Replace your todo list for this task with `todos` (the whole list, \
every call). Use it for work of three or more steps: write the steps as pending, mark one \
in_progress before you start it and completed as soon as it is done. Each item has `content` \
(imperative: \"Run the tests\"), `status` (pending, in_progress or completed) and `activeForm` \
(present continuous: \"Running the tests\"). Call it at most once per answer.";

/// Where an item stands, as the model writes it.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Status {
    Pending,
    InProgress,
    Completed,
}

impl From<Status> for TodoStatus {
    fn from(s: Status) -> Self {
        match s {
            Status::Pending => TodoStatus::Pending,
            Status::InProgress => TodoStatus::InProgress,
            Status::Completed => TodoStatus::Completed,
        }
    }
}

/// One item of the list, as Claude Code's TodoWrite takes it.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Item {
    /// What to do, in the imperative ("Run the tests").
    content: String,
    /// pending, in_progress or completed.
    status: Status,
    /// The present continuous form shown while it runs ("Running the tests").
    #[serde(rename = "activeForm", alias = "active_form")]
    active_form: String,
}

/// `write_todos`' arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The whole new list, in order.
    todos: Vec<Item>,
}

/// The items of `args`, or the refusal that says what is wrong with them.
fn items(args: Args) -> Result<Vec<Todo>, String> {
    if args.todos.len() > MAX_TODOS {
        return Err(format!(
            "The todo list has {} items, more than {MAX_TODOS}; merge small steps and call write_todos again.",
            args.todos.len()
        ));
    }
    let mut todos = Vec::with_capacity(args.todos.len());
    for (i, item) in args.todos.into_iter().enumerate() {
        if item.content.trim().is_empty() || item.active_form.trim().is_empty() {
            return Err(format!(
                "Todo {} has an empty content or activeForm; give both and call write_todos again.",
                i + 1
            ));
        }
        todos.push(Todo {
            content: item.content,
            status: item.status.into(),
            active_form: item.active_form,
        });
    }
    Ok(todos)
}

/// The list as the model reads it back: one `N. [ ] content` line per item
/// (`[*]` in progress, `[x]` completed), then the counts.
pub fn render(todos: &[Todo]) -> String {
    if todos.is_empty() {
        return "The todo list is now empty.".to_owned();
    }
    let mut text = format!("Updated the todo list ({} items):\n", todos.len());
    let (mut done, mut doing, mut waiting) = (0, 0, 0);
    for (i, todo) in todos.iter().enumerate() {
        let mark = match todo.status {
            TodoStatus::Pending => {
                waiting += 1;
                "[ ]"
            }
            TodoStatus::InProgress => {
                doing += 1;
                "[*]"
            }
            TodoStatus::Completed => {
                done += 1;
                "[x]"
            }
        };
        text.push_str(&format!("{}. {mark} {}\n", i + 1, todo.content));
    }
    text.push_str(&format!(
        "Summary: {done} completed, {doing} in progress, {waiting} pending."
    ));
    text
}

/// The todo list a `write_todos` call's arguments set (`None` when they do not fit).
pub fn parse(arguments: &serde_json::Value) -> Option<Vec<Todo>> {
    let args: Args = serde_json::from_value(arguments.clone()).ok()?;
    items(args).ok()
}

/// The current todo list of a conversation: the list of its last
/// `write_todos` call that succeeded (its result is in `history` and not an
/// error); `None` when no such call was made.
pub fn current(history: &[Message]) -> Option<Vec<Todo>> {
    let mut ok = std::collections::HashSet::new();
    for message in history {
        if let Message::ToolResult(r) = message
            && r.name == WRITE_TODOS
            && !r.is_error
        {
            ok.insert(r.call_id.as_str());
        }
    }
    history
        .iter()
        .rev()
        .flat_map(|m| m.tool_calls().collect::<Vec<_>>().into_iter().rev())
        .filter(|call| call.name == WRITE_TODOS && ok.contains(call.id.as_str()))
        .find_map(|call| parse(&call.arguments))
}

/// The `write_todos` tool. It changes nothing outside the conversation: its
/// result is the list it set, and the list is read back from the history.
pub fn write_todos_tool() -> Arc<dyn Tool> {
    Arc::new(
        FnTool::new(WRITE_TODOS, DESCRIPTION, |args: Args, _cx| async move {
            Ok(match items(args) {
                Ok(todos) => ToolOutput::ok(render(&todos)),
                Err(refusal) => ToolOutput::refused(refusal),
            })
        })
        .with_annotations(crate::tool::ToolAnnotations {
            read_only: false,
            destructive: false,
            idempotent: true,
        }),
    )
}

/// Refuses every `write_todos` call of a model answer but the first.
#[derive(Debug, Default, Clone, Copy)]
pub struct TodoCapability;

#[async_trait]
impl Capability for TodoCapability {
    fn name(&self) -> &str {
        "todos"
    }

    async fn before_call(&self, call: &CallInfo<'_>) -> Result<(), String> {
        if call.tool != WRITE_TODOS {
            return Ok(());
        }
        let first = call.batch.iter().find(|c| c.name == WRITE_TODOS);
        match first {
            Some(first) if first.id != call.call_id => Err(format!(
                "This answer already called write_todos (call {}); only the first call of an answer replaces the list, so put every item in one call.",
                first.id
            )),
            _ => Ok(()),
        }
    }
}

/// `agent` with todos: the `write_todos` tool and the capability that allows one per answer.
pub fn with_todos(agent: Agent) -> Agent {
    let mut tools = agent.tools().clone();
    tools.add_arc(write_todos_tool());
    agent
        .with_tools(tools)
        .with_capability(Arc::new(TodoCapability))
}
