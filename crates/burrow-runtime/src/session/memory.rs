//! `MemoryStore`: the session store in the process, behind one mutex (each commit is atomic because it holds the lock from load to save).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use super::clock::{Clock, SystemClock};
use super::error::StoreResult;
use super::rules::{self, ClaimRow, HistoryRow, Snapshot};
use super::types::{
    Checkpoint, Claim, ClaimAttempt, CommandKey, Commit, Committed, Event, HistoryEntry,
    HistoryItem, PostedMessage, Pruned, RunRecord, Scope, ThreadInfo, ThreadKey, ToolCallRecord,
};
use super::{MAX_PAGE, SessionStore};

mod team;

#[derive(Debug, Default)]
struct State {
    threads: BTreeMap<ThreadKey, ThreadInfo>,
    claims: BTreeMap<ThreadKey, ClaimRow>,
    events: BTreeMap<ThreadKey, Vec<Event>>,
    messages: BTreeMap<(Scope, String), PostedMessage>,
    thread_messages: BTreeMap<ThreadKey, Vec<String>>,
    history: BTreeMap<ThreadKey, Vec<HistoryRow>>,
    runs: BTreeMap<(Scope, String), RunRecord>,
    /// Run ids of each thread, in start order.
    thread_runs: BTreeMap<ThreadKey, Vec<String>>,
    calls: BTreeMap<(Scope, String, String), ToolCallRecord>,
    cursors: BTreeMap<(ThreadKey, String), u64>,
    checkpoints: BTreeMap<ThreadKey, Vec<Checkpoint>>,
    /// The pre-images of each checkpoint, by thread and checkpoint id.
    checkpoint_files: BTreeMap<(ThreadKey, String), Vec<crate::checkpoint::FileImage>>,
    /// Each command's result and when it was recorded.
    commands: BTreeMap<CommandKey, (Value, i64)>,
    /// Teams' todo lists and messages.
    teams: team::TeamState,
}

/// A session store in the process: nothing survives it, and every clone shares the same data.
#[derive(Debug, Clone)]
pub struct MemoryStore {
    state: Arc<Mutex<State>>,
    clock: Arc<dyn Clock>,
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryStore {
    /// An empty store on the system clock.
    pub fn new() -> Self {
        Self::with_clock(Arc::new(SystemClock))
    }

    /// An empty store reading time from `clock`.
    pub fn with_clock(clock: Arc<dyn Clock>) -> Self {
        Self {
            state: Arc::new(Mutex::new(State::default())),
            clock,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave a half-applied commit:
        // changes are computed first and saved without any fallible step.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn snapshot(st: &State, key: &ThreadKey, commit: &Commit) -> Snapshot {
    let needs = rules::needs(commit);
    let scope = &key.scope;
    let mut snap = Snapshot {
        thread: st.threads.get(key).cloned(),
        claim: st.claims.get(key).cloned(),
        ..Snapshot::default()
    };
    for run in needs.runs {
        if let Some(r) = st.runs.get(&(scope.clone(), run.clone())) {
            snap.runs.insert(run, r.clone());
        }
    }
    for (run, call) in needs.calls {
        if let Some(c) = st.calls.get(&(scope.clone(), run.clone(), call.clone())) {
            snap.calls.insert((run, call), c.clone());
        }
    }
    for id in needs.messages {
        if let Some(m) = st.messages.get(&(scope.clone(), id.clone())) {
            snap.messages.insert(id, m.thread.clone());
        }
    }
    for name in needs.cursors {
        if let Some(v) = st.cursors.get(&(key.clone(), name.clone())) {
            snap.cursors.insert(name, *v);
        }
    }
    let existing = st.checkpoints.get(key);
    for id in needs.checkpoints {
        if existing.is_some_and(|cs| cs.iter().any(|c| c.id == id)) {
            snap.checkpoints.insert(id);
        }
    }
    snap.command_exists = commit
        .command
        .as_ref()
        .is_some_and(|c| st.commands.contains_key(&c.key));
    snap
}

#[async_trait]
impl SessionStore for MemoryStore {
    async fn commit(&self, thread: &ThreadKey, commit: Commit) -> StoreResult<Committed> {
        rules::precheck(thread, &commit)?;
        let now = self.clock.now_ms();
        let mut st = self.lock();
        let snap = snapshot(&st, thread, &commit);
        let changes = rules::apply(thread, snap, commit, now)?;
        let scope = &thread.scope;
        st.threads.insert(thread.clone(), changes.thread);
        for m in changes.messages {
            st.thread_messages
                .entry(thread.clone())
                .or_default()
                .push(m.id.clone());
            st.messages.insert((scope.clone(), m.id.clone()), m);
        }
        st.history
            .entry(thread.clone())
            .or_default()
            .extend(changes.history);
        for run in changes.runs {
            let id = (scope.clone(), run.run_id.clone());
            if !st.runs.contains_key(&id) {
                st.thread_runs
                    .entry(thread.clone())
                    .or_default()
                    .push(run.run_id.clone());
            }
            st.runs.insert(id, run);
        }
        for call in changes.calls {
            st.calls.insert(
                (scope.clone(), call.run_id.clone(), call.call_id.clone()),
                call,
            );
        }
        st.events
            .entry(thread.clone())
            .or_default()
            .extend(changes.events);
        for (name, value) in changes.cursors {
            st.cursors.insert((thread.clone(), name), value);
        }
        st.checkpoints
            .entry(thread.clone())
            .or_default()
            .extend(changes.checkpoints);
        for (id, files) in changes.checkpoint_files {
            st.checkpoint_files.insert((thread.clone(), id), files);
        }
        if let Some(keep) = changes.checkpoint_keep
            && let Some(list) = st.checkpoints.get_mut(thread)
        {
            let cut = list.len().saturating_sub(keep);
            let dropped: Vec<Checkpoint> = list.drain(..cut).collect();
            for c in dropped {
                st.checkpoint_files.remove(&(thread.clone(), c.id));
            }
        }
        if let Some(cmd) = changes.command {
            st.commands.insert(cmd.key, (cmd.result, now));
        }
        Ok(changes.committed)
    }

    async fn acquire_claim(
        &self,
        thread: &ThreadKey,
        holder: &str,
        ttl: Duration,
    ) -> StoreResult<ClaimAttempt> {
        rules::check_thread(thread)?;
        let now = self.clock.now_ms();
        let mut st = self.lock();
        let (attempt, row) = rules::acquire(st.claims.get(thread), holder, now, ttl)?;
        if let Some(row) = row {
            st.claims.insert(thread.clone(), row);
        }
        Ok(attempt)
    }

    async fn renew_claim(
        &self,
        thread: &ThreadKey,
        claim: &Claim,
        ttl: Duration,
    ) -> StoreResult<Claim> {
        rules::check_thread(thread)?;
        let now = self.clock.now_ms();
        let mut st = self.lock();
        let (claim, row) = rules::renew(st.claims.get(thread), claim, now, ttl)?;
        st.claims.insert(thread.clone(), row);
        Ok(claim)
    }

    async fn release_claim(&self, thread: &ThreadKey, claim: &Claim) -> StoreResult<bool> {
        rules::check_thread(thread)?;
        let mut st = self.lock();
        match rules::release(st.claims.get(thread), claim) {
            Some(row) => {
                st.claims.insert(thread.clone(), row);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    async fn claim(&self, thread: &ThreadKey) -> StoreResult<Option<Claim>> {
        let st = self.lock();
        Ok(st.claims.get(thread).and_then(|row| {
            row.holder.as_ref().map(|holder| Claim {
                holder: holder.clone(),
                token: row.token,
                expires_at_ms: row.expires_at_ms,
            })
        }))
    }

    async fn thread(&self, thread: &ThreadKey) -> StoreResult<Option<ThreadInfo>> {
        Ok(self.lock().threads.get(thread).cloned())
    }

    async fn threads(
        &self,
        scope: &Scope,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<ThreadInfo>> {
        let st = self.lock();
        Ok(st
            .threads
            .iter()
            .filter(|(k, _)| k.scope == *scope && after.is_none_or(|a| k.thread.as_str() > a))
            .take(limit.min(MAX_PAGE))
            .map(|(_, t)| t.clone())
            .collect())
    }

    async fn events(
        &self,
        thread: &ThreadKey,
        after_seq: u64,
        limit: usize,
    ) -> StoreResult<Vec<Event>> {
        let st = self.lock();
        Ok(st
            .events
            .get(thread)
            .map(|evs| {
                // Seqs grow along the list; a prune may have removed a prefix.
                let start = evs.partition_point(|e| e.seq <= after_seq);
                evs[start..]
                    .iter()
                    .take(limit.min(MAX_PAGE))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default())
    }

    async fn messages(
        &self,
        thread: &ThreadKey,
        after_seq: u64,
        limit: usize,
    ) -> StoreResult<Vec<PostedMessage>> {
        let st = self.lock();
        let Some(ids) = st.thread_messages.get(thread) else {
            return Ok(Vec::new());
        };
        Ok(ids
            .iter()
            .filter_map(|id| st.messages.get(&(thread.scope.clone(), id.clone())))
            .filter(|m| m.seq > after_seq)
            .take(limit.min(MAX_PAGE))
            .cloned()
            .collect())
    }

    async fn message(&self, scope: &Scope, id: &str) -> StoreResult<Option<PostedMessage>> {
        Ok(self
            .lock()
            .messages
            .get(&(scope.clone(), id.to_string()))
            .cloned())
    }

    async fn history(&self, thread: &ThreadKey, from_pos: u64) -> StoreResult<Vec<HistoryEntry>> {
        let st = self.lock();
        let Some(rows) = st.history.get(thread) else {
            return Ok(Vec::new());
        };
        let scope = &thread.scope;
        rows.iter()
            .filter(|r| r.pos >= from_pos)
            .map(|row| {
                let posted = match &row.item {
                    HistoryItem::Posted { message_id } => {
                        st.messages.get(&(scope.clone(), message_id.clone()))
                    }
                    _ => None,
                };
                let call = match (&row.item, &row.run_id) {
                    (HistoryItem::ToolResult { call_id }, Some(run)) => {
                        st.calls.get(&(scope.clone(), run.clone(), call_id.clone()))
                    }
                    _ => None,
                };
                Ok(HistoryEntry {
                    pos: row.pos,
                    run_id: row.run_id.clone(),
                    message: rules::resolve(&row.item, posted, call)?,
                    item: row.item.clone(),
                })
            })
            .collect()
    }

    async fn run(&self, scope: &Scope, run_id: &str) -> StoreResult<Option<RunRecord>> {
        Ok(self
            .lock()
            .runs
            .get(&(scope.clone(), run_id.to_string()))
            .cloned())
    }

    async fn runs(&self, thread: &ThreadKey) -> StoreResult<Vec<RunRecord>> {
        let st = self.lock();
        Ok(st
            .thread_runs
            .get(thread)
            .map(|ids| {
                ids.iter()
                    .filter_map(|id| st.runs.get(&(thread.scope.clone(), id.clone())).cloned())
                    .collect()
            })
            .unwrap_or_default())
    }

    async fn tool_calls(&self, scope: &Scope, run_id: &str) -> StoreResult<Vec<ToolCallRecord>> {
        let st = self.lock();
        let mut calls: Vec<ToolCallRecord> = st
            .calls
            .iter()
            .filter(|((s, r, _), _)| s == scope && r == run_id)
            .map(|(_, c)| c.clone())
            .collect();
        calls.sort_by_key(|c| c.started_seq);
        Ok(calls)
    }

    async fn cursor(&self, thread: &ThreadKey, name: &str) -> StoreResult<u64> {
        Ok(self
            .lock()
            .cursors
            .get(&(thread.clone(), name.to_string()))
            .copied()
            .unwrap_or(0))
    }

    async fn checkpoints(&self, thread: &ThreadKey) -> StoreResult<Vec<Checkpoint>> {
        Ok(self
            .lock()
            .checkpoints
            .get(thread)
            .cloned()
            .unwrap_or_default())
    }

    async fn checkpoint_files(
        &self,
        thread: &ThreadKey,
        checkpoint_id: &str,
    ) -> StoreResult<Option<Vec<crate::checkpoint::FileImage>>> {
        let st = self.lock();
        let known = st
            .checkpoints
            .get(thread)
            .is_some_and(|cs| cs.iter().any(|c| c.id == checkpoint_id));
        if !known {
            return Ok(None);
        }
        Ok(Some(
            st.checkpoint_files
                .get(&(thread.clone(), checkpoint_id.to_owned()))
                .cloned()
                .unwrap_or_default(),
        ))
    }

    async fn command_result(&self, key: &CommandKey) -> StoreResult<Option<Value>> {
        Ok(self.lock().commands.get(key).map(|(v, _)| v.clone()))
    }

    async fn record_command(&self, key: &CommandKey, result: Value) -> StoreResult<Option<Value>> {
        rules::check_command(key)?;
        let now = self.clock.now_ms();
        let mut st = self.lock();
        if let Some((existing, _)) = st.commands.get(key) {
            return Ok(Some(existing.clone()));
        }
        st.commands.insert(key.clone(), (result, now));
        Ok(None)
    }

    async fn prune(&self, scope: &Scope, before_ms: i64) -> StoreResult<Pruned> {
        let mut guard = self.lock();
        let st = &mut *guard;
        let mut pruned = Pruned::default();
        let keys: Vec<ThreadKey> = st
            .threads
            .keys()
            .filter(|k| k.scope == *scope)
            .cloned()
            .collect();
        for key in keys {
            let Some(info) = st.threads.get(&key) else {
                continue;
            };
            let runs: Vec<RunRecord> = st
                .thread_runs
                .get(&key)
                .map(|ids| {
                    ids.iter()
                        .filter_map(|id| st.runs.get(&(scope.clone(), id.clone())).cloned())
                        .collect()
                })
                .unwrap_or_default();
            let last_assistant = st.history.get(&key).and_then(|rows| {
                rows.iter()
                    .rev()
                    .find(|r| rules::prune::is_assistant(&r.item))
                    .and_then(|r| r.run_id.clone())
            });
            let plan = rules::prune::plan(info, &runs, last_assistant.as_deref(), before_ms);
            if let Some(events) = st.events.get_mut(&key) {
                let before = events.len();
                events.retain(|e| !(e.seq < plan.events_below_seq && e.at_ms < before_ms));
                pruned.events += (before - events.len()) as u64;
            }
            for run in &plan.runs {
                if let Some(rows) = st.history.get_mut(&key) {
                    for row in rows.iter_mut().filter(|r| r.run_id.as_ref() == Some(run)) {
                        if let HistoryItem::ToolResult { call_id } = &row.item {
                            let call = st.calls.get(&(scope.clone(), run.clone(), call_id.clone()));
                            if let Some(item) = rules::prune::inline(&row.item, call) {
                                row.item = item;
                            }
                        }
                    }
                }
                let before = st.calls.len();
                st.calls.retain(|(s, r, _), _| !(s == scope && r == run));
                pruned.tool_calls += (before - st.calls.len()) as u64;
            }
        }
        let before = st.commands.len();
        st.commands
            .retain(|k, (_, at)| !(k.scope == *scope && *at < before_ms));
        pruned.commands = (before - st.commands.len()) as u64;
        Ok(pruned)
    }

    async fn lagging_threads(
        &self,
        ahead: &str,
        behind: &str,
        limit: usize,
    ) -> StoreResult<Vec<ThreadKey>> {
        let st = self.lock();
        let mut out = Vec::new();
        for key in st.threads.keys() {
            if out.len() >= limit.min(MAX_PAGE) {
                break;
            }
            let get = |name: &str| {
                st.cursors
                    .get(&(key.clone(), name.to_string()))
                    .copied()
                    .unwrap_or(0)
            };
            if get(ahead) > get(behind) {
                out.push(key.clone());
            }
        }
        Ok(out)
    }

    fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    fn teams(&self) -> Option<&dyn crate::team::TeamStore> {
        Some(self)
    }
}
