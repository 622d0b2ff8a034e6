//! The memory store's team part: each team's todo items and message log in the store's state, changed under its mutex.

use std::collections::BTreeMap;

use async_trait::async_trait;
use burrow_types::{SharedTodoItem, TeamMessage};

use super::MemoryStore;
use crate::session::{StoreErrorKind, StoreResult};
use crate::team::{self, Decided, LoggedMessage, TeamKey, TeamStore, TodoChange};

/// Teams' todo items (in the order added) and message logs.
#[derive(Debug, Default)]
pub(super) struct TeamState {
    todos: BTreeMap<TeamKey, Vec<SharedTodoItem>>,
    messages: BTreeMap<TeamKey, Vec<TeamMessage>>,
    /// Members' delivery cursors.
    cursors: BTreeMap<(TeamKey, String), u64>,
}

#[async_trait]
impl TeamStore for MemoryStore {
    async fn change_todo(&self, team: &TeamKey, change: TodoChange) -> StoreResult<SharedTodoItem> {
        team::check_team(team)?;
        let mut st = self.lock();
        let items = st.teams.todos.entry(team.clone()).or_default();
        let decided = team::decide(items, &change)?;
        match &decided {
            Decided::Insert(item) => items.push(item.clone()),
            Decided::Update(item) => {
                if let Some(slot) = items.iter_mut().find(|i| i.id == item.id) {
                    *slot = item.clone();
                }
            }
            Decided::Unchanged(_) => {}
        }
        Ok(decided.item().clone())
    }

    async fn team_todos(&self, team: &TeamKey) -> StoreResult<Vec<SharedTodoItem>> {
        team::check_team(team)?;
        Ok(self
            .lock()
            .teams
            .todos
            .get(team)
            .cloned()
            .unwrap_or_default())
    }

    async fn send_message(&self, team: &TeamKey, message: TeamMessage) -> StoreResult<u64> {
        team::check_team(team)?;
        team::check_message(&message)?;
        let mut st = self.lock();
        let log = st.teams.messages.entry(team.clone()).or_default();
        if log.iter().any(|m| m.id == message.id) {
            return Err(crate::session::StoreError::new(
                StoreErrorKind::IdInUse,
                "the team message id is already used in the team",
            ));
        }
        log.push(message);
        Ok(log.len() as u64)
    }

    async fn messages_for(
        &self,
        team: &TeamKey,
        member: &str,
        after: u64,
    ) -> StoreResult<Vec<LoggedMessage>> {
        team::check_team(team)?;
        let st = self.lock();
        Ok(st
            .teams
            .messages
            .get(team)
            .map(|log| {
                log.iter()
                    .enumerate()
                    .map(|(i, m)| (i as u64 + 1, m))
                    .filter(|(seq, m)| *seq > after && team::is_for(m, member))
                    .map(|(seq, m)| LoggedMessage {
                        seq,
                        message: m.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default())
    }

    async fn delivered(&self, team: &TeamKey, member: &str) -> StoreResult<u64> {
        team::check_team(team)?;
        let st = self.lock();
        Ok(st
            .teams
            .cursors
            .get(&(team.clone(), member.to_owned()))
            .copied()
            .unwrap_or(0))
    }

    async fn mark_delivered(&self, team: &TeamKey, member: &str, seq: u64) -> StoreResult<u64> {
        team::check_team(team)?;
        let mut st = self.lock();
        let last = st
            .teams
            .messages
            .get(team)
            .map_or(0, |log| log.len() as u64);
        team::check_cursor(member, seq, last)?;
        let cursor = st
            .teams
            .cursors
            .entry((team.clone(), member.to_owned()))
            .or_insert(0);
        *cursor = (*cursor).max(seq);
        Ok(*cursor)
    }
}
