//! A commit applied to the rows its store loaded: fencing, then each write in order, each recording one event.

use std::collections::{BTreeMap, BTreeSet};

use super::{Changes, ClaimRow, HistoryRow, Snapshot, precheck};
use crate::message::{ToolResult, Usage};
use crate::session::error::{StoreError, StoreErrorKind, StoreResult};
use crate::session::types::{
    Answer, Checkpoint, Commit, Committed, Event, EventKind, HistoryItem, MessageKind,
    PostedMessage, Request, RequestKind, RequestSpec, RunEnd, RunRecord, RunStatus, ThreadInfo,
    ThreadKey, ThreadStatus, ToolCallRecord, ToolCallStatus, Trigger, Write,
};

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

/// A commit in progress: the rows it read, as its writes change them, and the rows it adds.
pub(super) struct State<'a> {
    pub(super) key: &'a ThreadKey,
    pub(super) thread: ThreadInfo,
    pub(super) runs: BTreeMap<String, RunRecord>,
    pub(super) touched_runs: BTreeSet<String>,
    pub(super) new_runs: BTreeSet<String>,
    pub(super) calls: BTreeMap<(String, String), ToolCallRecord>,
    pub(super) touched_calls: BTreeSet<(String, String)>,
    /// Posted messages of the workspace: id to thread.
    pub(super) messages: BTreeMap<String, String>,
    /// Checkpoint ids of the thread.
    pub(super) checkpoints: BTreeSet<String>,
    pub(super) now: i64,
    /// The seq of the write being applied.
    pub(super) seq: u64,
    pub(super) new_messages: Vec<PostedMessage>,
    pub(super) new_history: Vec<HistoryRow>,
    pub(super) new_checkpoints: Vec<Checkpoint>,
    pub(super) new_checkpoint_files: Vec<(String, Vec<crate::checkpoint::FileImage>)>,
    pub(super) checkpoint_keep: Option<usize>,
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
        rewind: None,
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
        seq: 0,
        new_messages: Vec::new(),
        new_history: Vec::new(),
        new_checkpoints: Vec::new(),
        new_checkpoint_files: Vec::new(),
        checkpoint_keep: None,
    };
    let mut events = Vec::new();
    let mut seqs = Vec::new();
    for write in commit.writes {
        let seq = st.thread.head_seq + 1;
        st.seq = seq;
        let kind = apply_write(&mut st, write)?;
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
        let to = if mv.to == crate::session::types::CursorMove::HEAD {
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
        messages: st.new_messages,
        history: st.new_history,
        runs,
        new_runs: st.new_runs,
        calls,
        events,
        cursors,
        checkpoints: st.new_checkpoints,
        checkpoint_files: st.new_checkpoint_files,
        checkpoint_keep: st.checkpoint_keep,
        command: commit.command,
        committed,
    })
}

/// Applies one write at `st.seq`; the event it records.
fn apply_write(st: &mut State<'_>, write: Write) -> StoreResult<EventKind> {
    match write {
        Write::PostMessage {
            id,
            author,
            kind,
            text,
        } => st.post_message(id, author, kind, text),
        Write::AppendHistory { run_id, items } => st.append_history(run_id, items),
        Write::StartRun {
            run_id,
            trigger,
            requested_by,
            message_ids,
            labels,
        } => st.start_run(run_id, trigger, requested_by, message_ids, labels),
        Write::ResumeRun {
            run_id,
            requested_by,
        } => st.resume_run(run_id, requested_by),
        Write::PauseRun { run_id, requests } => st.pause_run(run_id, requests),
        Write::AnswerRequest {
            run_id,
            request_id,
            answer,
        } => st.answer_request(run_id, request_id, answer),
        Write::EndRun { run_id, end } => st.end_run(run_id, end),
        Write::ToolStarted {
            run_id,
            call_id,
            name,
            effect_key,
        } => st.tool_started(run_id, call_id, name, effect_key),
        Write::ToolFinished {
            run_id,
            call_id,
            result,
        } => st.tool_finished(run_id, call_id, result),
        Write::RecordUsage { run_id, usage } => st.record_usage(run_id, usage),
        Write::SaveCheckpoint {
            checkpoint_id,
            label,
            turn,
            metadata,
            files,
            keep,
        } => {
            let kind = st.save_checkpoint(checkpoint_id.clone(), label)?;
            st.checkpoint_extras(checkpoint_id, turn, metadata, files, keep);
            Ok(kind)
        }
        Write::BeginRewind {
            checkpoint_id,
            history_len,
            files,
            conversation,
        } => st.begin_rewind(checkpoint_id, history_len, files, conversation),
        Write::FinishRewind { checkpoint_id } => st.finish_rewind(checkpoint_id),
    }
}

impl State<'_> {
    /// Posts a message (its id unused in the workspace).
    fn post_message(
        &mut self,
        id: String,
        author: String,
        kind: MessageKind,
        text: String,
    ) -> StoreResult<EventKind> {
        if self.messages.contains_key(&id) {
            return Err(StoreError::new(
                StoreErrorKind::IdInUse,
                format!("message id {id} is already used in this workspace"),
            ));
        }
        self.messages.insert(id.clone(), self.key.thread.clone());
        self.new_messages.push(PostedMessage {
            id: id.clone(),
            thread: self.key.thread.clone(),
            seq: self.seq,
            author: author.clone(),
            kind,
            text,
            at_ms: self.now,
        });
        Ok(EventKind::MessagePosted {
            message_id: id,
            author,
            kind,
        })
    }

    /// Appends history entries, each reference resolving to this thread.
    fn append_history(
        &mut self,
        run_id: Option<String>,
        items: Vec<HistoryItem>,
    ) -> StoreResult<EventKind> {
        if let Some(run) = &run_id {
            self.run_in(run, LIVE, "append to the history")?;
        }
        let from_pos = self.thread.history_len;
        let count = items.len() as u64;
        for item in items {
            match &item {
                HistoryItem::Posted { message_id } => self.message_of_thread(message_id)?,
                HistoryItem::ToolResult { call_id } => {
                    let Some(run) = &run_id else {
                        return Err(StoreError::invalid_argument(
                            "a tool result entry needs the history write's run id",
                        ));
                    };
                    let finished = self
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
                HistoryItem::Rewind { .. } => {
                    return Err(StoreError::invalid_argument(
                        "a rewind entry is written by finishing a rewind, not appended",
                    ));
                }
            }
            self.new_history.push(HistoryRow {
                pos: self.thread.history_len,
                run_id: run_id.clone(),
                item,
            });
            self.thread.history_len += 1;
        }
        Ok(EventKind::HistoryAppended {
            run_id,
            from_pos,
            count,
        })
    }

    /// Starts a run in the idle thread.
    fn start_run(
        &mut self,
        run_id: String,
        trigger: Trigger,
        requested_by: Option<String>,
        message_ids: Vec<String>,
        labels: BTreeMap<String, String>,
    ) -> StoreResult<EventKind> {
        if self.runs.contains_key(&run_id) {
            return Err(StoreError::new(
                StoreErrorKind::IdInUse,
                format!("run id {run_id} is already used in this workspace"),
            ));
        }
        if let Some(active) = &self.thread.active_run {
            return Err(StoreError::invalid_state(format!(
                "thread {} already has an unfinished run, {active}",
                self.key.thread
            )));
        }
        self.no_rewind_pending("start a run")?;
        for m in &message_ids {
            self.message_of_thread(m)?;
        }
        self.runs.insert(
            run_id.clone(),
            RunRecord {
                run_id: run_id.clone(),
                thread: self.key.thread.clone(),
                status: RunStatus::Running,
                trigger,
                requested_by,
                message_ids: message_ids.clone(),
                reason: None,
                failure: None,
                requests: Vec::new(),
                usage: Usage::UNKNOWN,
                segments: 1,
                started_seq: self.seq,
                started_at_ms: self.now,
                ended_at_ms: None,
                labels,
            },
        );
        self.touched_runs.insert(run_id.clone());
        self.new_runs.insert(run_id.clone());
        self.set_status(Some((&run_id, ThreadStatus::Running)));
        Ok(EventKind::RunStarted {
            run_id,
            trigger,
            message_ids,
        })
    }

    /// Resumes a paused run whose requests are all answered.
    fn resume_run(
        &mut self,
        run_id: String,
        requested_by: Option<String>,
    ) -> StoreResult<EventKind> {
        self.run_in(&run_id, &[RunStatus::Paused], "resume")?;
        let run = self.run(&run_id)?;
        if let Some(open) = run.requests.iter().find(|r| r.answer.is_none()) {
            return Err(StoreError::invalid_state(format!(
                "run {run_id} cannot resume: request {} is unanswered",
                open.spec.id
            )));
        }
        run.status = RunStatus::Running;
        run.segments += 1;
        run.requested_by = requested_by;
        self.set_status(Some((&run_id, ThreadStatus::Running)));
        Ok(EventKind::RunResumed { run_id })
    }

    /// Pauses a running run on its requests.
    fn pause_run(&mut self, run_id: String, requests: Vec<RequestSpec>) -> StoreResult<EventKind> {
        self.run_in(&run_id, &[RunStatus::Running], "pause")?;
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
        let run = self.run(&run_id)?;
        run.status = RunStatus::Paused;
        run.requests = requests
            .into_iter()
            .map(|spec| Request { spec, answer: None })
            .collect();
        self.set_status(Some((&run_id, ThreadStatus::Paused)));
        Ok(EventKind::RunPaused {
            run_id,
            requests: request_ids,
        })
    }

    /// Answers an open request of a paused run, as its kind allows.
    fn answer_request(
        &mut self,
        run_id: String,
        request_id: String,
        answer: Answer,
    ) -> StoreResult<EventKind> {
        self.run_in(&run_id, &[RunStatus::Paused], "be answered")?;
        if let Some(m) = &answer.message_id {
            self.message_of_thread(m)?;
        }
        let run = self.run(&run_id)?;
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
        Ok(EventKind::RequestAnswered { run_id, request_id })
    }

    /// Ends a live run; the thread becomes idle.
    fn end_run(&mut self, run_id: String, end: RunEnd) -> StoreResult<EventKind> {
        let now = self.now;
        self.run_in(&run_id, LIVE, "end")?;
        let run = self.run(&run_id)?;
        let status = end.status();
        run.status = status;
        run.reason = end.reason().map(str::to_string);
        if let RunEnd::Failed { message, .. } = &end {
            run.failure = Some(message.clone());
        }
        run.ended_at_ms = Some(now);
        self.set_status(None);
        Ok(EventKind::RunEnded {
            run_id,
            status,
            reason: end.reason().map(str::to_string),
        })
    }

    /// Records a tool call started (again, when unfinished).
    fn tool_started(
        &mut self,
        run_id: String,
        call_id: String,
        name: String,
        effect_key: Option<String>,
    ) -> StoreResult<EventKind> {
        let now = self.now;
        self.run_in(&run_id, &[RunStatus::Running], "start a tool call")?;
        let id = (run_id.clone(), call_id.clone());
        match self.calls.get_mut(&id) {
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
                self.calls.insert(
                    id.clone(),
                    ToolCallRecord {
                        run_id: run_id.clone(),
                        call_id: call_id.clone(),
                        name: name.clone(),
                        effect_key,
                        status: ToolCallStatus::Started,
                        attempts: 1,
                        result: None,
                        started_seq: self.seq,
                        started_at_ms: now,
                        finished_at_ms: None,
                    },
                );
            }
        }
        self.touched_calls.insert(id);
        Ok(EventKind::ToolCallStarted {
            run_id,
            call_id,
            name,
        })
    }

    /// Records a started tool call finished with its result.
    fn tool_finished(
        &mut self,
        run_id: String,
        call_id: String,
        result: ToolResult,
    ) -> StoreResult<EventKind> {
        let now = self.now;
        self.run_in(&run_id, LIVE, "finish a tool call")?;
        let id = (run_id.clone(), call_id.clone());
        let Some(call) = self.calls.get_mut(&id) else {
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
        self.touched_calls.insert(id);
        Ok(EventKind::ToolCallFinished {
            run_id,
            call_id,
            is_error,
        })
    }

    /// Adds a request's usage to its run.
    fn record_usage(&mut self, run_id: String, usage: Usage) -> StoreResult<EventKind> {
        self.run_in(&run_id, LIVE, "record usage")?;
        let run = self.run(&run_id)?;
        add_usage(&mut run.usage, &usage);
        Ok(EventKind::Usage { run_id, usage })
    }

    /// Marks the history's current length under a new checkpoint id.
    fn save_checkpoint(
        &mut self,
        checkpoint_id: String,
        label: Option<String>,
    ) -> StoreResult<EventKind> {
        self.no_rewind_pending("save a checkpoint")?;
        if !self.checkpoints.insert(checkpoint_id.clone()) {
            return Err(StoreError::new(
                StoreErrorKind::IdInUse,
                format!(
                    "checkpoint id {checkpoint_id} is already used in thread {}",
                    self.key.thread
                ),
            ));
        }
        self.new_checkpoints.push(Checkpoint {
            id: checkpoint_id.clone(),
            history_len: self.thread.history_len,
            seq: self.seq,
            label,
            at_ms: self.now,
            turn: None,
            metadata: serde_json::Map::new(),
            paths: Vec::new(),
        });
        Ok(EventKind::CheckpointSaved { checkpoint_id })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Message;
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
