//! The store rules, written once: whether a commit or a claim change is valid, and what it changes, over rows a store loaded in its transaction.
//!
//! A store calls [`needs`] to learn which rows a commit touches, loads them
//! into a [`Snapshot`] inside its transaction (rows locked where the store
//! locks), calls [`apply`], and saves the [`Changes`] in the same
//! transaction. The claim functions work the same way over one [`ClaimRow`].

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::clock::duration_ms;
use super::error::{StoreError, StoreErrorKind, StoreResult};
use super::types::{
    Checkpoint, Claim, ClaimAttempt, CommandKey, CommandRecord, Commit, Committed, Event,
    EventKind, HistoryItem, MAX_LABEL_NAME, MAX_LABEL_VALUE, MAX_RUN_LABELS, PostedMessage,
    Request, RequestKind, RunRecord, RunStatus, ThreadInfo, ThreadKey, ThreadStatus,
    ToolCallRecord, ToolCallStatus, Write,
};
use crate::message::{Message, Usage};

/// A thread's claim as stored: the holder is `None` once released; the token stays.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ClaimRow {
    pub holder: Option<String>,
    pub token: u64,
    pub expires_at_ms: i64,
}

impl ClaimRow {
    fn current(&self) -> Option<Claim> {
        self.holder.as_ref().map(|holder| Claim {
            holder: holder.clone(),
            token: self.token,
            expires_at_ms: self.expires_at_ms,
        })
    }
}

/// The rows a commit reads, by key.
#[derive(Debug, Default)]
pub(crate) struct Needs {
    pub runs: BTreeSet<String>,
    pub calls: BTreeSet<(String, String)>,
    pub messages: BTreeSet<String>,
    pub cursors: BTreeSet<String>,
    pub checkpoints: BTreeSet<String>,
}

/// The rows a store loaded for a commit (only those that exist).
#[derive(Debug, Default)]
pub(crate) struct Snapshot {
    pub thread: Option<ThreadInfo>,
    pub claim: Option<ClaimRow>,
    /// Runs of the workspace, by id (any thread).
    pub runs: BTreeMap<String, RunRecord>,
    /// Tool calls by (run, call).
    pub calls: BTreeMap<(String, String), ToolCallRecord>,
    /// Posted messages of the workspace: id to thread.
    pub messages: BTreeMap<String, String>,
    pub cursors: BTreeMap<String, u64>,
    /// Checkpoint ids of this thread that exist.
    pub checkpoints: BTreeSet<String>,
    /// Whether the commit's command key is recorded already.
    pub command_exists: bool,
}

/// One history row to insert.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HistoryRow {
    pub pos: u64,
    pub run_id: Option<String>,
    pub item: HistoryItem,
}

/// What a valid commit writes.
#[derive(Debug)]
pub(crate) struct Changes {
    /// The thread's row after the commit.
    pub thread: ThreadInfo,
    pub messages: Vec<PostedMessage>,
    pub history: Vec<HistoryRow>,
    /// Runs after the commit (each touched run once; insert or replace).
    pub runs: Vec<RunRecord>,
    /// The ids of the runs this commit started (inserted, never replacing).
    /// Only the PostgreSQL store asks (it inserts new rows apart from updates).
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub new_runs: BTreeSet<String>,
    /// Tool calls after the commit (insert or replace).
    pub calls: Vec<ToolCallRecord>,
    pub events: Vec<Event>,
    /// Cursors after the commit (insert or replace).
    pub cursors: Vec<(String, u64)>,
    pub checkpoints: Vec<Checkpoint>,
    pub command: Option<CommandRecord>,
    pub committed: Committed,
}

/// The rows `commit` reads.
pub(crate) fn needs(commit: &Commit) -> Needs {
    let mut n = Needs::default();
    for write in &commit.writes {
        match write {
            Write::PostMessage { id, .. } => {
                n.messages.insert(id.clone());
            }
            Write::AppendHistory { run_id, items } => {
                if let Some(run) = run_id {
                    n.runs.insert(run.clone());
                }
                for item in items {
                    match item {
                        HistoryItem::Posted { message_id } => {
                            n.messages.insert(message_id.clone());
                        }
                        HistoryItem::ToolResult { call_id } => {
                            if let Some(run) = run_id {
                                n.calls.insert((run.clone(), call_id.clone()));
                            }
                        }
                        HistoryItem::Message { .. } => {}
                    }
                }
            }
            Write::StartRun {
                run_id,
                message_ids,
                ..
            } => {
                n.runs.insert(run_id.clone());
                n.messages.extend(message_ids.iter().cloned());
            }
            Write::ResumeRun { run_id, .. }
            | Write::PauseRun { run_id, .. }
            | Write::EndRun { run_id, .. }
            | Write::RecordUsage { run_id, .. } => {
                n.runs.insert(run_id.clone());
            }
            Write::AnswerRequest { run_id, answer, .. } => {
                n.runs.insert(run_id.clone());
                if let Some(m) = &answer.message_id {
                    n.messages.insert(m.clone());
                }
            }
            Write::ToolStarted {
                run_id, call_id, ..
            }
            | Write::ToolFinished {
                run_id, call_id, ..
            } => {
                n.runs.insert(run_id.clone());
                n.calls.insert((run_id.clone(), call_id.clone()));
            }
            Write::SaveCheckpoint { checkpoint_id, .. } => {
                n.checkpoints.insert(checkpoint_id.clone());
            }
        }
    }
    n.cursors = commit.cursors.iter().map(|c| c.name.clone()).collect();
    n
}

/// Refuses an empty name or one holding NUL (PostgreSQL cannot store it, and no id needs it).
pub(crate) fn check_name(what: &str, value: &str) -> StoreResult<()> {
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

pub(crate) fn check_thread(key: &ThreadKey) -> StoreResult<()> {
    check_name("tenant", &key.scope.tenant)?;
    check_name("workspace", &key.scope.workspace)?;
    check_name("thread id", &key.thread)
}

fn check_names(commit: &Commit) -> StoreResult<()> {
    if let Some(f) = &commit.fence {
        check_name("fence's holder", &f.holder)?;
    }
    for write in &commit.writes {
        match write {
            Write::PostMessage { id, author, .. } => {
                check_name("message id", id)?;
                check_name("author", author)?;
            }
            Write::AppendHistory { run_id, items } => {
                if let Some(r) = run_id {
                    check_name("run id", r)?;
                }
                for item in items {
                    match item {
                        HistoryItem::Posted { message_id } => check_name("message id", message_id)?,
                        HistoryItem::ToolResult { call_id } => check_name("call id", call_id)?,
                        HistoryItem::Message { .. } => {}
                    }
                }
            }
            Write::StartRun {
                run_id,
                message_ids,
                requested_by,
                labels,
                ..
            } => {
                check_name("run id", run_id)?;
                for m in message_ids {
                    check_name("message id", m)?;
                }
                if let Some(a) = requested_by {
                    check_name("author", a)?;
                }
                check_labels(labels)?;
            }
            Write::ResumeRun {
                run_id,
                requested_by,
            } => {
                check_name("run id", run_id)?;
                if let Some(a) = requested_by {
                    check_name("author", a)?;
                }
            }
            Write::PauseRun { run_id, requests } => {
                check_name("run id", run_id)?;
                for r in requests {
                    check_name("request id", &r.id)?;
                    check_name("call id", &r.call_id)?;
                    check_name("tool name", &r.tool_name)?;
                }
            }
            Write::AnswerRequest {
                run_id,
                request_id,
                answer,
            } => {
                check_name("run id", run_id)?;
                check_name("request id", request_id)?;
                check_name("author", &answer.author)?;
                if let Some(m) = &answer.message_id {
                    check_name("message id", m)?;
                }
            }
            Write::EndRun { run_id, end } => {
                check_name("run id", run_id)?;
                if let Some(reason) = end.reason() {
                    check_name("reason", reason)?;
                }
            }
            Write::ToolStarted {
                run_id,
                call_id,
                name,
                effect_key,
            } => {
                check_name("run id", run_id)?;
                check_name("call id", call_id)?;
                check_name("tool name", name)?;
                if let Some(k) = effect_key {
                    check_name("effect key", k)?;
                }
            }
            Write::ToolFinished {
                run_id, call_id, ..
            } => {
                check_name("run id", run_id)?;
                check_name("call id", call_id)?;
            }
            Write::RecordUsage { run_id, .. } => check_name("run id", run_id)?,
            Write::SaveCheckpoint { checkpoint_id, .. } => {
                check_name("checkpoint id", checkpoint_id)?;
            }
        }
    }
    for c in &commit.cursors {
        check_name("cursor name", &c.name)?;
    }
    if let Some(cmd) = &commit.command {
        check_command(&cmd.key)?;
    }
    Ok(())
}

/// Refuses labels over the limits of [`Write::StartRun`]'s `labels`.
fn check_labels(labels: &BTreeMap<String, String>) -> StoreResult<()> {
    if labels.len() > MAX_RUN_LABELS {
        return Err(StoreError::invalid_argument(format!(
            "a run carries at most {MAX_RUN_LABELS} labels, not {}",
            labels.len()
        )));
    }
    for (name, value) in labels {
        check_name("label name", name)?;
        if name.len() > MAX_LABEL_NAME {
            return Err(StoreError::invalid_argument(format!(
                "a label name is at most {MAX_LABEL_NAME} bytes, not {}",
                name.len()
            )));
        }
        if value.len() > MAX_LABEL_VALUE || value.contains('\0') {
            return Err(StoreError::invalid_argument(format!(
                "label {name}'s value must be at most {MAX_LABEL_VALUE} bytes, without NUL"
            )));
        }
    }
    Ok(())
}

/// Checks a command key's names.
pub(crate) fn check_command(key: &CommandKey) -> StoreResult<()> {
    check_name("tenant", &key.scope.tenant)?;
    check_name("workspace", &key.scope.workspace)?;
    check_name("command sender", &key.sender)?;
    check_name("command id", &key.command_id)
}

/// Checks the ids of `commit` before a store loads anything.
pub(crate) fn precheck(key: &ThreadKey, commit: &Commit) -> StoreResult<()> {
    check_thread(key)?;
    check_names(commit)?;
    if let Some(cmd) = &commit.command
        && cmd.key.scope != key.scope
    {
        return Err(StoreError::invalid_argument(
            "the command's workspace is not the thread's workspace",
        ));
    }
    Ok(())
}

fn add_usage(total: &mut Usage, more: &Usage) {
    fn add(a: &mut Option<u64>, b: Option<u64>) {
        if let Some(b) = b {
            *a = Some(a.unwrap_or(0).saturating_add(b));
        }
    }
    add(&mut total.input_tokens, more.input_tokens);
    add(&mut total.output_tokens, more.output_tokens);
    add(&mut total.cache_read_tokens, more.cache_read_tokens);
    add(&mut total.cache_write_tokens, more.cache_write_tokens);
}

struct State<'a> {
    key: &'a ThreadKey,
    thread: ThreadInfo,
    runs: BTreeMap<String, RunRecord>,
    touched_runs: BTreeSet<String>,
    new_runs: BTreeSet<String>,
    calls: BTreeMap<(String, String), ToolCallRecord>,
    touched_calls: BTreeSet<(String, String)>,
    messages: BTreeMap<String, String>,
    checkpoints: BTreeSet<String>,
    now: i64,
}

impl State<'_> {
    /// The thread's run `run_id`, unchanged.
    fn run_ref(&self, run_id: &str) -> StoreResult<&RunRecord> {
        self.runs
            .get(run_id)
            .filter(|run| run.thread == self.key.thread)
            .ok_or_else(|| {
                StoreError::not_found(format!("thread {} has no run {run_id}", self.key.thread))
            })
    }

    /// The thread's run `run_id`, marked changed (its row is saved).
    fn run(&mut self, run_id: &str) -> StoreResult<&mut RunRecord> {
        self.run_ref(run_id)?;
        self.touched_runs.insert(run_id.to_string());
        self.runs
            .get_mut(run_id)
            .ok_or_else(|| StoreError::not_found(format!("no run {run_id}")))
    }

    /// Checks that the thread's run `run_id` is in one of `allowed` without
    /// marking it changed: a write that only needs the run live (history,
    /// tool calls) leaves the run's row alone, so a turn does not rewrite it.
    fn run_in(&self, run_id: &str, allowed: &[RunStatus], doing: &str) -> StoreResult<()> {
        let run = self.run_ref(run_id)?;
        if allowed.contains(&run.status) {
            Ok(())
        } else {
            Err(StoreError::invalid_state(format!(
                "run {run_id} is {}, so it cannot {doing}",
                run.status.as_str()
            )))
        }
    }

    fn message_of_thread(&self, id: &str) -> StoreResult<()> {
        match self.messages.get(id) {
            Some(t) if *t == self.key.thread => Ok(()),
            _ => Err(StoreError::not_found(format!(
                "thread {} has no posted message {id}",
                self.key.thread
            ))),
        }
    }

    fn set_status(&mut self, active: Option<(&str, ThreadStatus)>) {
        match active {
            Some((run, status)) => {
                self.thread.active_run = Some(run.to_string());
                self.thread.status = status;
            }
            None => {
                self.thread.active_run = None;
                self.thread.status = ThreadStatus::Idle;
            }
        }
    }
}

const LIVE: &[RunStatus] = &[RunStatus::Running, RunStatus::Paused];

/// Applies `commit` to the loaded rows; the error leaves everything unchanged.
pub(crate) fn apply(
    key: &ThreadKey,
    snap: Snapshot,
    commit: Commit,
    now: i64,
) -> StoreResult<Changes> {
    precheck(key, &commit)?;
    match (&commit.fence, &snap.claim) {
        (Some(fence), claim) => {
            let current = claim.as_ref().and_then(ClaimRow::current);
            if current
                .as_ref()
                .is_none_or(|c| c.holder != fence.holder || c.token != fence.token)
            {
                return Err(StoreError::new(
                    StoreErrorKind::StaleClaim,
                    format!(
                        "the commit's claim (token {}) is no longer thread {}'s claim",
                        fence.token, key.thread
                    ),
                ));
            }
        }
        (None, _) => {
            if commit
                .writes
                .iter()
                .any(|w| !matches!(w, Write::PostMessage { .. }))
            {
                return Err(StoreError::new(
                    StoreErrorKind::StaleClaim,
                    "a write to a run or the history needs the thread's claim, and this commit carries no fence",
                ));
            }
        }
    }
    if commit.command.is_some() && snap.command_exists {
        return Err(StoreError::new(
            StoreErrorKind::DuplicateCommand,
            "this command was carried out already",
        ));
    }
    let thread = snap.thread.clone().unwrap_or(ThreadInfo {
        thread: key.thread.clone(),
        created_at_ms: now,
        updated_at_ms: now,
        head_seq: 0,
        history_len: 0,
        status: ThreadStatus::Idle,
        active_run: None,
    });
    let mut st = State {
        key,
        thread,
        runs: snap.runs,
        touched_runs: BTreeSet::new(),
        new_runs: BTreeSet::new(),
        calls: snap.calls,
        touched_calls: BTreeSet::new(),
        messages: snap.messages,
        checkpoints: snap.checkpoints,
        now,
    };
    let mut messages = Vec::new();
    let mut history = Vec::new();
    let mut events = Vec::new();
    let mut checkpoints = Vec::new();
    let mut seqs = Vec::new();
    for write in commit.writes {
        let seq = st.thread.head_seq + 1;
        let kind = apply_write(
            &mut st,
            write,
            seq,
            &mut messages,
            &mut history,
            &mut checkpoints,
        )?;
        st.thread.head_seq = seq;
        seqs.push(seq);
        events.push(Event {
            seq,
            at_ms: now,
            kind,
        });
    }
    let mut cursors = Vec::new();
    for mv in commit.cursors {
        let current = snap.cursors.get(&mv.name).copied().unwrap_or(0);
        let current = cursors
            .iter()
            .rev()
            .find(|(n, _): &&(String, u64)| *n == mv.name)
            .map_or(current, |(_, v)| *v);
        let to = if mv.to == super::types::CursorMove::HEAD {
            st.thread.head_seq
        } else {
            mv.to
        };
        if to > st.thread.head_seq {
            return Err(StoreError::invalid_argument(format!(
                "cursor {} cannot move to seq {to}: thread {}'s log ends at {}",
                mv.name, key.thread, st.thread.head_seq
            )));
        }
        if let Some(expect) = mv.expect
            && expect != current
        {
            return Err(StoreError::new(
                StoreErrorKind::Conflict,
                format!(
                    "cursor {} stands at {current}, not at {expect} as the commit expected",
                    mv.name
                ),
            ));
        }
        cursors.retain(|(n, _)| *n != mv.name);
        cursors.push((mv.name, current.max(to)));
    }
    // A cursor that did not move is not rewritten (a runner names its taken
    // cursor in every commit of a turn; it moves only when a message is taken).
    cursors.retain(|(name, value)| snap.cursors.get(name).copied().unwrap_or(0) != *value);
    st.thread.updated_at_ms = now;
    let runs = st
        .touched_runs
        .iter()
        .filter_map(|id| st.runs.get(id).cloned())
        .collect();
    let calls = st
        .touched_calls
        .iter()
        .filter_map(|id| st.calls.get(id).cloned())
        .collect();
    let committed = Committed {
        seqs,
        head_seq: st.thread.head_seq,
        history_len: st.thread.history_len,
    };
    Ok(Changes {
        thread: st.thread,
        messages,
        history,
        runs,
        new_runs: st.new_runs,
        calls,
        events,
        cursors,
        checkpoints,
        command: commit.command,
        committed,
    })
}

fn apply_write(
    st: &mut State<'_>,
    write: Write,
    seq: u64,
    messages: &mut Vec<PostedMessage>,
    history: &mut Vec<HistoryRow>,
    checkpoints: &mut Vec<Checkpoint>,
) -> StoreResult<EventKind> {
    let now = st.now;
    Ok(match write {
        Write::PostMessage {
            id,
            author,
            kind,
            text,
        } => {
            if st.messages.contains_key(&id) {
                return Err(StoreError::new(
                    StoreErrorKind::IdInUse,
                    format!("message id {id} is already used in this workspace"),
                ));
            }
            st.messages.insert(id.clone(), st.key.thread.clone());
            messages.push(PostedMessage {
                id: id.clone(),
                thread: st.key.thread.clone(),
                seq,
                author: author.clone(),
                kind,
                text,
                at_ms: now,
            });
            EventKind::MessagePosted {
                message_id: id,
                author,
                kind,
            }
        }
        Write::AppendHistory { run_id, items } => {
            if let Some(run) = &run_id {
                st.run_in(run, LIVE, "append to the history")?;
            }
            let from_pos = st.thread.history_len;
            let count = items.len() as u64;
            for item in items {
                match &item {
                    HistoryItem::Posted { message_id } => st.message_of_thread(message_id)?,
                    HistoryItem::ToolResult { call_id } => {
                        let Some(run) = &run_id else {
                            return Err(StoreError::invalid_argument(
                                "a tool result entry needs the history write's run id",
                            ));
                        };
                        let finished = st
                            .calls
                            .get(&(run.clone(), call_id.clone()))
                            .is_some_and(|c| c.status == ToolCallStatus::Finished);
                        if !finished {
                            return Err(StoreError::not_found(format!(
                                "run {run} has no finished tool call {call_id}"
                            )));
                        }
                    }
                    HistoryItem::Message { .. } => {}
                }
                history.push(HistoryRow {
                    pos: st.thread.history_len,
                    run_id: run_id.clone(),
                    item,
                });
                st.thread.history_len += 1;
            }
            EventKind::HistoryAppended {
                run_id,
                from_pos,
                count,
            }
        }
        Write::StartRun {
            run_id,
            trigger,
            requested_by,
            message_ids,
            labels,
        } => {
            if st.runs.contains_key(&run_id) {
                return Err(StoreError::new(
                    StoreErrorKind::IdInUse,
                    format!("run id {run_id} is already used in this workspace"),
                ));
            }
            if let Some(active) = &st.thread.active_run {
                return Err(StoreError::invalid_state(format!(
                    "thread {} already has an unfinished run, {active}",
                    st.key.thread
                )));
            }
            for m in &message_ids {
                st.message_of_thread(m)?;
            }
            st.runs.insert(
                run_id.clone(),
                RunRecord {
                    run_id: run_id.clone(),
                    thread: st.key.thread.clone(),
                    status: RunStatus::Running,
                    trigger,
                    requested_by,
                    message_ids: message_ids.clone(),
                    reason: None,
                    failure: None,
                    requests: Vec::new(),
                    usage: Usage::UNKNOWN,
                    segments: 1,
                    started_seq: seq,
                    started_at_ms: now,
                    ended_at_ms: None,
                    labels,
                },
            );
            st.touched_runs.insert(run_id.clone());
            st.new_runs.insert(run_id.clone());
            st.set_status(Some((&run_id, ThreadStatus::Running)));
            EventKind::RunStarted {
                run_id,
                trigger,
                message_ids,
            }
        }
        Write::ResumeRun {
            run_id,
            requested_by,
        } => {
            st.run_in(&run_id, &[RunStatus::Paused], "resume")?;
            let run = st.run(&run_id)?;
            if let Some(open) = run.requests.iter().find(|r| r.answer.is_none()) {
                return Err(StoreError::invalid_state(format!(
                    "run {run_id} cannot resume: request {} is unanswered",
                    open.spec.id
                )));
            }
            run.status = RunStatus::Running;
            run.segments += 1;
            run.requested_by = requested_by;
            st.set_status(Some((&run_id, ThreadStatus::Running)));
            EventKind::RunResumed { run_id }
        }
        Write::PauseRun { run_id, requests } => {
            st.run_in(&run_id, &[RunStatus::Running], "pause")?;
            if requests.is_empty() {
                return Err(StoreError::invalid_argument(format!(
                    "run {run_id} cannot pause on no request"
                )));
            }
            let ids: BTreeSet<&str> = requests.iter().map(|r| r.id.as_str()).collect();
            if ids.len() != requests.len() {
                return Err(StoreError::invalid_argument(format!(
                    "run {run_id}'s pause names a request id twice"
                )));
            }
            let request_ids = requests.iter().map(|r| r.id.clone()).collect();
            let run = st.run(&run_id)?;
            run.status = RunStatus::Paused;
            run.requests = requests
                .into_iter()
                .map(|spec| Request { spec, answer: None })
                .collect();
            st.set_status(Some((&run_id, ThreadStatus::Paused)));
            EventKind::RunPaused {
                run_id,
                requests: request_ids,
            }
        }
        Write::AnswerRequest {
            run_id,
            request_id,
            answer,
        } => {
            st.run_in(&run_id, &[RunStatus::Paused], "be answered")?;
            if let Some(m) = &answer.message_id {
                st.message_of_thread(m)?;
            }
            let run = st.run(&run_id)?;
            let Some(request) = run.requests.iter_mut().find(|r| r.spec.id == request_id) else {
                return Err(StoreError::not_found(format!(
                    "run {run_id} has no request {request_id}"
                )));
            };
            if request.answer.is_some() {
                return Err(StoreError::invalid_state(format!(
                    "request {request_id} of run {run_id} is already answered"
                )));
            }
            match (request.spec.kind, answer.approved) {
                (RequestKind::Approval, None) => {
                    return Err(StoreError::invalid_argument(format!(
                        "request {request_id} is an approval: its answer must say approved or not"
                    )));
                }
                (RequestKind::Question, Some(_)) => {
                    return Err(StoreError::invalid_argument(format!(
                        "request {request_id} is a question: its answer cannot approve"
                    )));
                }
                _ => {}
            }
            request.answer = Some(answer);
            EventKind::RequestAnswered { run_id, request_id }
        }
        Write::EndRun { run_id, end } => {
            st.run_in(&run_id, LIVE, "end")?;
            let run = st.run(&run_id)?;
            let status = end.status();
            run.status = status;
            run.reason = end.reason().map(str::to_string);
            if let super::types::RunEnd::Failed { message, .. } = &end {
                run.failure = Some(message.clone());
            }
            run.ended_at_ms = Some(now);
            st.set_status(None);
            EventKind::RunEnded {
                run_id,
                status,
                reason: end.reason().map(str::to_string),
            }
        }
        Write::ToolStarted {
            run_id,
            call_id,
            name,
            effect_key,
        } => {
            st.run_in(&run_id, &[RunStatus::Running], "start a tool call")?;
            let id = (run_id.clone(), call_id.clone());
            match st.calls.get_mut(&id) {
                Some(call) if call.status == ToolCallStatus::Finished => {
                    return Err(StoreError::invalid_state(format!(
                        "tool call {call_id} of run {run_id} has finished; it is replayed, never started again"
                    )));
                }
                Some(call) => {
                    call.attempts += 1;
                    call.name = name.clone();
                    call.effect_key = effect_key;
                }
                None => {
                    st.calls.insert(
                        id.clone(),
                        ToolCallRecord {
                            run_id: run_id.clone(),
                            call_id: call_id.clone(),
                            name: name.clone(),
                            effect_key,
                            status: ToolCallStatus::Started,
                            attempts: 1,
                            result: None,
                            started_seq: seq,
                            started_at_ms: now,
                            finished_at_ms: None,
                        },
                    );
                }
            }
            st.touched_calls.insert(id);
            EventKind::ToolCallStarted {
                run_id,
                call_id,
                name,
            }
        }
        Write::ToolFinished {
            run_id,
            call_id,
            result,
        } => {
            st.run_in(&run_id, LIVE, "finish a tool call")?;
            let id = (run_id.clone(), call_id.clone());
            let Some(call) = st.calls.get_mut(&id) else {
                return Err(StoreError::not_found(format!(
                    "run {run_id} has no started tool call {call_id}"
                )));
            };
            if call.status == ToolCallStatus::Finished {
                return Err(StoreError::invalid_state(format!(
                    "tool call {call_id} of run {run_id} has finished already"
                )));
            }
            if result.call_id != call_id {
                return Err(StoreError::invalid_argument(format!(
                    "the result of tool call {call_id} answers call {}",
                    result.call_id
                )));
            }
            let is_error = result.is_error;
            call.status = ToolCallStatus::Finished;
            call.result = Some(result);
            call.finished_at_ms = Some(now);
            st.touched_calls.insert(id);
            EventKind::ToolCallFinished {
                run_id,
                call_id,
                is_error,
            }
        }
        Write::RecordUsage { run_id, usage } => {
            st.run_in(&run_id, LIVE, "record usage")?;
            let run = st.run(&run_id)?;
            add_usage(&mut run.usage, &usage);
            EventKind::Usage { run_id, usage }
        }
        Write::SaveCheckpoint {
            checkpoint_id,
            label,
        } => {
            if !st.checkpoints.insert(checkpoint_id.clone()) {
                return Err(StoreError::new(
                    StoreErrorKind::IdInUse,
                    format!(
                        "checkpoint id {checkpoint_id} is already used in thread {}",
                        st.key.thread
                    ),
                ));
            }
            checkpoints.push(Checkpoint {
                id: checkpoint_id.clone(),
                history_len: st.thread.history_len,
                seq,
                label,
                at_ms: now,
            });
            EventKind::CheckpointSaved { checkpoint_id }
        }
    })
}

/// The message a history item stands for, given its posted message or tool call.
pub(crate) fn resolve(
    item: &HistoryItem,
    posted: Option<&PostedMessage>,
    call: Option<&ToolCallRecord>,
) -> StoreResult<Message> {
    match item {
        HistoryItem::Message { message } => Ok(message.clone()),
        HistoryItem::Posted { message_id } => posted
            .map(|m| Message::user(m.text.clone()))
            .ok_or_else(|| {
                StoreError::corrupt(format!(
                    "the history refers to posted message {message_id}, which is missing"
                ))
            }),
        HistoryItem::ToolResult { call_id } => call
            .and_then(|c| c.result.clone())
            .map(Message::ToolResult)
            .ok_or_else(|| {
                StoreError::corrupt(format!(
                    "the history refers to the result of tool call {call_id}, which is missing"
                ))
            }),
    }
}

fn check_ttl(ttl: Duration) -> StoreResult<i64> {
    let ms = duration_ms(ttl);
    if ms <= 0 {
        return Err(StoreError::invalid_argument(
            "a claim's TTL must be at least one millisecond",
        ));
    }
    Ok(ms)
}

/// Acquiring a claim: the attempt's answer and the row to save, if it changes.
pub(crate) fn acquire(
    row: Option<&ClaimRow>,
    holder: &str,
    now: i64,
    ttl: Duration,
) -> StoreResult<(ClaimAttempt, Option<ClaimRow>)> {
    check_name("claim holder", holder)?;
    let ttl = check_ttl(ttl)?;
    let expires_at_ms = now.saturating_add(ttl);
    let last_token = row.map_or(0, |r| r.token);
    match row.and_then(ClaimRow::current) {
        Some(live) if live.holder == holder => {
            let claim = Claim {
                expires_at_ms,
                ..live
            };
            let row = ClaimRow {
                holder: Some(claim.holder.clone()),
                token: claim.token,
                expires_at_ms,
            };
            Ok((ClaimAttempt::Granted(claim), Some(row)))
        }
        Some(live) if now < live.expires_at_ms => Ok((ClaimAttempt::Busy(live), None)),
        _ => {
            let claim = Claim {
                holder: holder.to_string(),
                token: last_token + 1,
                expires_at_ms,
            };
            let row = ClaimRow {
                holder: Some(claim.holder.clone()),
                token: claim.token,
                expires_at_ms,
            };
            Ok((ClaimAttempt::Granted(claim), Some(row)))
        }
    }
}

fn is_current(row: Option<&ClaimRow>, claim: &Claim) -> bool {
    row.and_then(ClaimRow::current)
        .is_some_and(|c| c.holder == claim.holder && c.token == claim.token)
}

/// Renewing a claim: the renewed claim and the row to save.
pub(crate) fn renew(
    row: Option<&ClaimRow>,
    claim: &Claim,
    now: i64,
    ttl: Duration,
) -> StoreResult<(Claim, ClaimRow)> {
    let ttl = check_ttl(ttl)?;
    if !is_current(row, claim) {
        return Err(StoreError::new(
            StoreErrorKind::StaleClaim,
            format!(
                "the claim with token {} was released or taken over",
                claim.token
            ),
        ));
    }
    let renewed = Claim {
        expires_at_ms: now.saturating_add(ttl),
        ..claim.clone()
    };
    let row = ClaimRow {
        holder: Some(renewed.holder.clone()),
        token: renewed.token,
        expires_at_ms: renewed.expires_at_ms,
    };
    Ok((renewed, row))
}

/// Releasing a claim: the row to save when it was current.
pub(crate) fn release(row: Option<&ClaimRow>, claim: &Claim) -> Option<ClaimRow> {
    if is_current(row, claim) {
        Some(ClaimRow {
            holder: None,
            token: claim.token,
            expires_at_ms: claim.expires_at_ms,
        })
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::types::{Fence, MessageKind, RunEnd, Scope, Trigger};

    fn fenced() -> Commit {
        Commit::new().fenced(Fence {
            holder: "runner".into(),
            token: 1,
        })
    }

    /// The rows a store holds after a commit that left `thread`, as the next commit's snapshot.
    fn snapshot(thread: ThreadInfo, run: Option<&RunRecord>, taken: Option<u64>) -> Snapshot {
        Snapshot {
            thread: Some(thread),
            claim: Some(ClaimRow {
                holder: Some("runner".into()),
                token: 1,
                expires_at_ms: i64::MAX,
            }),
            runs: run
                .map(|r| (r.run_id.clone(), r.clone()))
                .into_iter()
                .collect(),
            messages: [("m1".to_string(), "th".to_string())].into(),
            cursors: taken
                .map(|v| ("taken".to_string(), v))
                .into_iter()
                .collect(),
            ..Snapshot::default()
        }
    }

    #[test]
    fn only_writes_that_change_a_run_or_move_a_cursor_rewrite_it() {
        let key = Scope::new("t", "w").thread("th");
        let post = Commit::new().write(Write::PostMessage {
            id: "m1".into(),
            author: "alice".into(),
            kind: MessageKind::Message,
            text: "go".into(),
        });
        let posted = apply(&key, Snapshot::default(), post, 1).unwrap();
        let start = fenced()
            .write(Write::StartRun {
                run_id: "r1".into(),
                trigger: Trigger::Message,
                requested_by: Some("alice".into()),
                message_ids: vec!["m1".into()],
                labels: BTreeMap::new(),
            })
            .cursor("taken", 1);
        let started = apply(&key, snapshot(posted.thread, None, None), start, 2).unwrap();
        assert_eq!(started.runs.len(), 1, "a start writes its run");
        assert_eq!(started.cursors, vec![("taken".to_string(), 1)]);
        let run = started.runs[0].clone();

        let append = fenced()
            .write(Write::AppendHistory {
                run_id: Some("r1".into()),
                items: vec![HistoryItem::Message {
                    message: Message::user("hello"),
                }],
            })
            .cursor("taken", 1);
        let snap = snapshot(started.thread, Some(&run), Some(1));
        let appended = apply(&key, snap, append, 3).unwrap();
        assert_eq!(appended.history.len(), 1);
        assert!(
            appended.runs.is_empty(),
            "a history append leaves its run's row alone"
        );
        assert!(
            appended.cursors.is_empty(),
            "a cursor that did not move is not written"
        );

        let end = fenced()
            .write(Write::EndRun {
                run_id: "r1".into(),
                end: RunEnd::Completed,
            })
            .cursor("taken", 2);
        let snap = snapshot(appended.thread, Some(&run), Some(1));
        let ended = apply(&key, snap, end, 4).unwrap();
        assert_eq!(ended.runs.len(), 1, "an end writes its run");
        assert_eq!(ended.runs[0].status, RunStatus::Completed);
        assert_eq!(ended.cursors, vec![("taken".to_string(), 2)]);
    }
}
