//! Teams: a shared todo list and messages between members, kept in the session store (the `TeamStore` port), the rules every store applies, the team tools and the capability that delivers messages.
//!
//! # Key design decision: a small port of its own, rules written once
//!
//! A team's todo list and messages belong to no one thread (every member's
//! thread reads and changes them), so they are not [`Write`](crate::session::Write)s
//! of a thread's commit but a port of their own, [`TeamStore`], that the
//! session stores implement next to [`SessionStore`](crate::session::SessionStore)
//! (reached with `SessionStore::teams`). Each change is one transaction that
//! loads the team's items, decides with the rules here ([`decide`]) and saves
//! the one item that changed, under the team's lock (the memory store's mutex,
//! SQLite's `BEGIN IMMEDIATE`, a PostgreSQL advisory lock on the team): two
//! members claiming one item at once are serialised, the second sees the first's
//! claim and is refused. ADR 0265.
//!
//! A [`Team`] runs the members under a lead's run, each in its own thread
//! of the same store (the [`run`] module, ADR 0357); each member's delivery
//! cursor is kept in the store too (ADR 0356).

pub mod capability;
pub mod run;
pub mod tools;

use async_trait::async_trait;
use burrow_types::{SharedTodoItem, TeamMessage, TodoStatus};
use serde::{Deserialize, Serialize};

use crate::session::{Scope, StoreError, StoreErrorKind, StoreResult};

pub use capability::TeamInbox;
pub use run::{LEAD, MemberDef, Team, TeamEvent, TeamEventSink, TeamHandle, member_thread};
pub use tools::{TeamContext, team_tools};

/// A team of a workspace.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TeamKey {
    /// The workspace.
    pub scope: Scope,
    /// The team's name.
    pub team: String,
}

impl TeamKey {
    /// The team `team` of `scope`.
    pub fn new(scope: Scope, team: impl Into<String>) -> Self {
        Self {
            scope,
            team: team.into(),
        }
    }
}

/// A team message with its place in the team's log (1, 2, ...).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoggedMessage {
    /// Its place in the team's message log, from 1, gap-free.
    pub seq: u64,
    /// The message.
    pub message: TeamMessage,
}

/// A change to a team's todo list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TodoChange {
    /// Adds a new item (pending, unassigned).
    Add(SharedTodoItem),
    /// `member` takes item `id`.
    Claim {
        /// The item.
        id: String,
        /// Who takes it.
        member: String,
    },
    /// `member` completes item `id`, which it holds.
    Complete {
        /// The item.
        id: String,
        /// Who completes it.
        member: String,
    },
}

/// What a store saves for a decided change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decided {
    /// Insert this new item (after the others).
    Insert(SharedTodoItem),
    /// Replace the item of this id.
    Update(SharedTodoItem),
    /// Nothing changes (the member already holds the item); this is it.
    Unchanged(SharedTodoItem),
}

impl Decided {
    /// The item as it stands after the change.
    pub fn item(&self) -> &SharedTodoItem {
        match self {
            Self::Insert(i) | Self::Update(i) | Self::Unchanged(i) => i,
        }
    }
}

fn refuse(kind: StoreErrorKind, message: impl Into<String>) -> StoreError {
    StoreError::new(kind, message)
}

fn check_name(what: &str, value: &str) -> StoreResult<()> {
    if value.is_empty() {
        return Err(StoreError::invalid_argument(format!("the {what} is empty")));
    }
    if value.contains('\0') {
        return Err(StoreError::invalid_argument(format!(
            "the {what} holds a NUL character"
        )));
    }
    Ok(())
}

/// Refuses a team key with an empty or NUL-holding part.
pub fn check_team(team: &TeamKey) -> StoreResult<()> {
    check_name("tenant", &team.scope.tenant)?;
    check_name("workspace", &team.scope.workspace)?;
    check_name("team name", &team.team)
}

/// Decides `change` over the team's current `items` (in the order they were added).
///
/// # Behavior
/// - `Add`: the id and content are not empty and hold no NUL (`InvalidArgument`);
///   the item is pending and unassigned (`InvalidArgument`); the id is unused in
///   the team (`IdInUse`); each `blocked_by` id names another item of the team
///   (`NotFound`).
/// - `Claim`: the item exists (`NotFound`); it is not completed and not held by
///   another member (`InvalidState`); every item it is blocked by is completed
///   (`InvalidState`, naming the unfinished ones). The item becomes in progress,
///   assigned to the member. Claiming an item the member already holds changes nothing.
/// - `Complete`: the item exists (`NotFound`); it is in progress and held by the
///   member (`InvalidState`). It becomes completed, still assigned to the member.
pub fn decide(items: &[SharedTodoItem], change: &TodoChange) -> StoreResult<Decided> {
    let find = |id: &str| {
        items.iter().find(|i| i.id == id).ok_or_else(|| {
            refuse(
                StoreErrorKind::NotFound,
                format!("the team has no todo item \"{id}\""),
            )
        })
    };
    match change {
        TodoChange::Add(item) => {
            check_name("todo item's id", &item.id)?;
            if item.content.trim().is_empty() || item.content.contains('\0') {
                return Err(StoreError::invalid_argument(
                    "a todo item's content must be text, not empty and without NUL characters",
                ));
            }
            if item.status != TodoStatus::Pending || item.assigned_to.is_some() {
                return Err(StoreError::invalid_argument(
                    "a new todo item is pending and unassigned: claim it to start it",
                ));
            }
            if let Some(by) = &item.created_by {
                check_name("todo item's creator", by)?;
            }
            if items.iter().any(|i| i.id == item.id) {
                return Err(refuse(
                    StoreErrorKind::IdInUse,
                    format!(
                        "the todo item id \"{}\" is already used in the team",
                        item.id
                    ),
                ));
            }
            for b in &item.blocked_by {
                if *b == item.id {
                    return Err(StoreError::invalid_argument(
                        "a todo item cannot be blocked by itself",
                    ));
                }
                find(b)?;
            }
            Ok(Decided::Insert(item.clone()))
        }
        TodoChange::Claim { id, member } => {
            check_name("member's name", member)?;
            let item = find(id)?;
            match (&item.status, item.assigned_to.as_deref()) {
                (TodoStatus::Completed, _) => {
                    return Err(refuse(
                        StoreErrorKind::InvalidState,
                        format!("the todo item \"{id}\" is already completed"),
                    ));
                }
                (TodoStatus::InProgress, Some(holder)) if holder == member => {
                    return Ok(Decided::Unchanged(item.clone()));
                }
                (TodoStatus::InProgress, holder) => {
                    return Err(refuse(
                        StoreErrorKind::InvalidState,
                        format!(
                            "the todo item \"{id}\" is already claimed by {}",
                            holder.unwrap_or("another member")
                        ),
                    ));
                }
                (TodoStatus::Pending, _) => {}
            }
            let unfinished: Vec<&str> = item
                .blocked_by
                .iter()
                .filter(|b| {
                    !items
                        .iter()
                        .any(|i| i.id == **b && i.status == TodoStatus::Completed)
                })
                .map(String::as_str)
                .collect();
            if !unfinished.is_empty() {
                return Err(refuse(
                    StoreErrorKind::InvalidState,
                    format!(
                        "the todo item \"{id}\" is blocked by unfinished items: {}",
                        unfinished.join(", ")
                    ),
                ));
            }
            let mut next = item.clone();
            next.status = TodoStatus::InProgress;
            next.assigned_to = Some(member.clone());
            Ok(Decided::Update(next))
        }
        TodoChange::Complete { id, member } => {
            check_name("member's name", member)?;
            let item = find(id)?;
            match (&item.status, item.assigned_to.as_deref()) {
                (TodoStatus::InProgress, Some(holder)) if holder == member => {
                    let mut next = item.clone();
                    next.status = TodoStatus::Completed;
                    Ok(Decided::Update(next))
                }
                (TodoStatus::Completed, _) => Err(refuse(
                    StoreErrorKind::InvalidState,
                    format!("the todo item \"{id}\" is already completed"),
                )),
                (TodoStatus::InProgress, holder) => Err(refuse(
                    StoreErrorKind::InvalidState,
                    format!(
                        "the todo item \"{id}\" is claimed by {}, not by {member}",
                        holder.unwrap_or("another member")
                    ),
                )),
                (TodoStatus::Pending, _) => Err(refuse(
                    StoreErrorKind::InvalidState,
                    format!("the todo item \"{id}\" is not claimed: claim it before completing it"),
                )),
            }
        }
    }
}

/// Checks a message before it is logged: id and sender not empty, no NUL anywhere.
pub fn check_message(message: &TeamMessage) -> StoreResult<()> {
    check_name("message id", &message.id)?;
    check_name("sender", &message.sender)?;
    if message.receiver.contains('\0') || message.content.contains('\0') {
        return Err(StoreError::invalid_argument(
            "a team message's receiver and content hold no NUL character",
        ));
    }
    Ok(())
}

/// Whether `member` receives `message`: it is addressed to the member, or a
/// broadcast the member did not send.
pub fn is_for(message: &TeamMessage, member: &str) -> bool {
    if message.is_broadcast() {
        message.sender != member
    } else {
        message.receiver == member
    }
}

/// Where a team's todo list and messages are kept: a part of a session store.
///
/// Every change is one transaction under the team's lock.
#[async_trait]
pub trait TeamStore: Send + Sync + std::fmt::Debug {
    /// Applies `change` to the team's todo list and returns the item as it stands after it.
    ///
    /// # Behavior
    /// - The team key's parts are not empty and hold no NUL (`InvalidArgument`).
    /// - Decided by [`decide`] over the items as they are inside the
    ///   transaction: of two members claiming one item at once (on one or two
    ///   connections, in one or two processes) exactly one wins and the other
    ///   is refused `InvalidState`; a refusal writes nothing.
    async fn change_todo(&self, team: &TeamKey, change: TodoChange) -> StoreResult<SharedTodoItem>;

    /// The team's todo items, in the order they were added.
    ///
    /// # Behavior
    /// Each item as its last change left it; none for a team never written to;
    /// another team's (or workspace's) items never appear.
    async fn team_todos(&self, team: &TeamKey) -> StoreResult<Vec<SharedTodoItem>>;

    /// Logs `message` for the team and returns its seq.
    ///
    /// # Behavior
    /// - Checked by [`check_message`] (`InvalidArgument`); the id is unused in
    ///   the team (`IdInUse`).
    /// - Seqs are 1, 2, ... in the order messages were logged, without gaps.
    async fn send_message(&self, team: &TeamKey, message: TeamMessage) -> StoreResult<u64>;

    /// The messages for `member` with a seq above `after`, oldest first.
    ///
    /// # Behavior
    /// Those addressed to `member` and every broadcast `member` did not send
    /// ([`is_for`]), each with its seq, as sent; another team's never appear.
    async fn messages_for(
        &self,
        team: &TeamKey,
        member: &str,
        after: u64,
    ) -> StoreResult<Vec<LoggedMessage>>;

    /// `member`'s delivery cursor: the greatest seq of the team's messages
    /// known to be in the member's history (0 when none is).
    ///
    /// # Behavior
    /// What [`TeamStore::mark_delivered`] last raised it to; 0 for a member
    /// never marked; another team's (or workspace's) cursors never count.
    async fn delivered(&self, team: &TeamKey, member: &str) -> StoreResult<u64>;

    /// Raises `member`'s delivery cursor to `seq` and returns the cursor as it
    /// then stands.
    ///
    /// # Behavior
    /// - The member's name is not empty and holds no NUL (`InvalidArgument`).
    /// - The cursor only moves forward: a `seq` at or below it changes
    ///   nothing and the cursor is returned as it is.
    /// - A `seq` past the team's last message is refused (`InvalidArgument`)
    ///   and changes nothing.
    /// - It outlives the process (a reopened store reads it back).
    async fn mark_delivered(&self, team: &TeamKey, member: &str, seq: u64) -> StoreResult<u64>;
}

/// Refuses a delivery cursor past the team's `last` message.
pub fn check_cursor(member: &str, seq: u64, last: u64) -> StoreResult<()> {
    check_name("member's name", member)?;
    if seq > last {
        return Err(StoreError::invalid_argument(format!(
            "a delivery cursor cannot pass the team's last message ({last}); {seq} was given"
        )));
    }
    Ok(())
}
