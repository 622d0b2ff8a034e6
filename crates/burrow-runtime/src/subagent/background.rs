//! Background tasks (ADR 0275): a `task` call with `run_in_background` returns at once with its task id, the child runs under the same bounds, `task_status` and `task_cancel` manage it, its report reaches the parent's history before the parent's next model request, and a parent that is stopped or fails cancels it.
//!
//! The child is a run in its own thread `PARENT/task-CALL`, as a
//! synchronous task's is; its task id is that thread's id. What the
//! process knows of it (its [`TaskHandle`], its report waiting to be
//! delivered) is kept in the [`Board`] of the [`Tasks`] that started it.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use burrow_backend::Error;
use burrow_types::{TaskHandle, TaskPriority, TaskStatus};
use schemars::JsonSchema;
use serde::Deserialize;

use super::SubAgent;
use super::task::{
    ChildEnd, NEXT_CHILD, TaskArgs, Tasks, child_thread, lock, run_child, store_failure,
};
use crate::agent::{CancelToken, Capability, Outcome, RunFailure, RunInfo};
use crate::checkpoint::now_rfc3339;
use crate::message::Message;
use crate::session::ThreadKey;
use crate::tool::{CallContext, FnTool, Tool, ToolAnnotations, ToolOutput, ToolRegistry};

/// The tool showing a background task's handle.
pub const TASK_STATUS: &str = "task_status";
/// The tool cancelling a background task.
pub const TASK_CANCEL: &str = "task_cancel";

/// The tool answering a background task's question.
pub const TASK_ANSWER: &str = "task_answer";
/// The tool a background task's child (with `can_ask_questions`) asks its parent with.
pub const ASK_PARENT: &str = "ask_parent";
/// How many questions a child may ask when its definition does not say.
pub const DEFAULT_MAX_QUESTIONS: u32 = 3;

/// `task_answer`'s arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskAnswerArgs {
    /// The task that asked.
    pub task_id: String,
    /// The answer to its question.
    pub answer: String,
}

/// `ask_parent`'s arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskParentArgs {
    /// The question, complete enough to answer without your context.
    pub question: String,
}

/// `task_status`'s and `task_cancel`'s arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskIdArgs {
    /// The id the `task` call with `run_in_background` answered with.
    pub task_id: String,
}

/// The background tasks of one [`Tasks`], by task id.
#[derive(Default)]
pub(crate) struct Board {
    entries: Mutex<HashMap<String, Entry>>,
    changed: tokio::sync::Notify,
}

struct Entry {
    /// The run whose call started it.
    parent_run: String,
    /// That run's thread (its run id outside a session).
    parent_thread: String,
    handle: TaskHandle,
    cancel: CancelToken,
    /// The message for the parent once the task ended, until it is delivered.
    report: Option<String>,
    /// The message telling the parent of the child's question, until it is delivered.
    question: Option<String>,
    /// Where `task_answer` sends the answer to the question the child waits on.
    answer: Option<tokio::sync::oneshot::Sender<String>>,
    /// How many questions the child asked.
    asked: u32,
}

impl Entry {
    fn of_run(&self, run: &RunInfo) -> bool {
        self.parent_run == run.run_id || run.thread_id.as_deref() == Some(&self.parent_thread)
    }
}

impl Board {
    fn entries(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn update(&self, task_id: &str, f: impl FnOnce(&mut Entry)) {
        if let Some(entry) = self.entries().get_mut(task_id) {
            f(entry);
        }
        self.changed.notify_waiters();
    }

    /// Cancels every task `pick` chooses that has not ended, and waits until each has.
    async fn cancel_and_wait(&self, pick: impl Fn(&Entry) -> bool) {
        for entry in self.entries().values() {
            if pick(entry) && !entry.handle.status.is_terminal() {
                entry.cancel.cancel();
            }
        }
        self.wait_ended(pick).await;
    }

    /// Waits until every task `pick` chooses has ended.
    async fn wait_ended(&self, pick: impl Fn(&Entry) -> bool) {
        self.wait_until(|e| pick(e) && !e.handle.status.is_terminal())
            .await;
    }

    /// Waits until no task is `busy`.
    async fn wait_until(&self, busy: impl Fn(&Entry) -> bool) {
        loop {
            let notified = self.changed.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            if !self.entries().values().any(&busy) {
                return;
            }
            notified.await;
        }
    }
}

/// What the child of a background task came to.
struct Settled {
    status: TaskStatus,
    result: Option<String>,
    error: Option<String>,
}

impl Tasks {
    /// Starts the child of a `task` call with `run_in_background` and
    /// answers at once with its task id. A call run again (after a crash
    /// in this process's run) answers with the task it started.
    pub(super) async fn start_background(
        &self,
        args: TaskArgs,
        cx: CallContext,
        depth: usize,
        name: String,
        def: SubAgent,
    ) -> Result<ToolOutput, Error> {
        let parent_thread = self.parent_thread(&cx.run_id).await?;
        let thread = self
            .inner
            .scope
            .thread(child_thread(&parent_thread, &cx.call_id));
        let task_id = thread.thread.clone();
        let cancel = CancelToken::new();
        {
            let mut entries = self.inner.board.entries();
            if let Some(entry) = entries.get(&task_id) {
                return Ok(ToolOutput::ok(started_text(&entry.handle)));
            }
            let handle = TaskHandle {
                task_id: task_id.clone(),
                subagent_name: name.clone(),
                description: args.description.clone(),
                status: TaskStatus::Pending,
                priority: TaskPriority::Normal,
                created_at: now_rfc3339(),
                started_at: None,
                completed_at: None,
                result: None,
                error: None,
                pending_question: None,
            };
            let text = started_text(&handle);
            entries.insert(
                task_id,
                Entry {
                    parent_run: cx.run_id.to_string(),
                    parent_thread: parent_thread.clone(),
                    handle,
                    cancel: cancel.clone(),
                    report: None,
                    question: None,
                    answer: None,
                    asked: 0,
                },
            );
            drop(entries);
            let tasks = self.clone();
            tokio::spawn(async move {
                let child = Child {
                    args,
                    cx,
                    depth,
                    name,
                    def,
                    thread,
                    parent_thread,
                };
                tasks.run_background(child, cancel).await;
            });
            Ok(ToolOutput::ok(text))
        }
    }

    /// Runs a background child to its end (waiting for a slot first) and
    /// puts its end on the board.
    async fn run_background(self, child: Child, cancel: CancelToken) {
        let board = self.inner.board.clone();
        let task_id = child.thread.thread.clone();
        let slot = tokio::select! {
            biased;
            () = cancel.cancelled() => None,
            slot = self.inner.slots.clone().acquire_owned() => slot.ok(),
        };
        let Some(slot) = slot else {
            board.update(&task_id, |e| {
                settle(
                    e,
                    Settled {
                        status: TaskStatus::Cancelled,
                        result: None,
                        error: Some("cancelled before it started".to_owned()),
                    },
                    None,
                );
            });
            return;
        };
        board.update(&task_id, |e| {
            e.handle.status = TaskStatus::Running;
            e.handle.started_at = Some(now_rfc3339());
        });
        let runner = self.child_runner(
            self.child_agent(&child.def, child.depth, Some(&task_id), &child.thread),
            &child.cx,
            &child.name,
            &child.args.description,
            &child.thread,
        );
        let id = NEXT_CHILD.fetch_add(1, Ordering::Relaxed);
        lock(&self.inner.children).insert(id, runner.clone());
        let ended = tokio::select! {
            biased;
            () = cancel.cancelled() => None,
            end = run_child(&runner, &child.thread, &child.args.prompt) => Some(end),
        };
        runner.aclose().await;
        lock(&self.inner.children).remove(&id);
        drop(slot);
        let cancelled = ended.is_none();
        let ended = match ended {
            Some(end) => end.map_err(|e| store_failure(&e)),
            None => self.last_end(&child.thread).await,
        };
        let (settled, report) = self.settled(&child, &ended, cancelled).await;
        board.update(&task_id, |e| settle(e, settled, report));
        if let Ok(end) = &ended {
            self.emit_ended(&child.name, &child.thread, &child.cx.run_id, end);
        }
    }

    /// How the child's run ended, from its record (once it was stopped).
    async fn last_end(&self, thread: &ThreadKey) -> Result<ChildEnd, Error> {
        let runs = self
            .inner
            .store
            .runs(thread)
            .await
            .map_err(|e| store_failure(&e))?;
        Ok(runs.last().map_or_else(
            || ChildEnd {
                run_id: String::new(),
                outcome: "stopped".to_owned(),
                reason: Some("cancelled".to_owned()),
                message: None,
                turns: 0,
                tool_calls: 0,
                usage: crate::message::Usage::default(),
            },
            ChildEnd::of_record,
        ))
    }

    /// The handle's end and the parent's message (none for a cancelled task).
    async fn settled(
        &self,
        child: &Child,
        ended: &Result<ChildEnd, Error>,
        cancelled: bool,
    ) -> (Settled, Option<String>) {
        let head = |how: &str| {
            format!(
                "[background task {} ({}: {}) {how}]",
                child.thread.thread, child.name, child.args.description
            )
        };
        let failed = |error: String| {
            let report = format!("{}\n\n{error}", head("failed"));
            (
                Settled {
                    status: TaskStatus::Failed,
                    result: None,
                    error: Some(error),
                },
                Some(report),
            )
        };
        let end = match ended {
            Ok(end) => end,
            Err(e) => return failed(e.to_string()),
        };
        let stopped = cancelled || end.outcome == "stopped";
        let out = match self
            .report(
                &child.name,
                &child.thread,
                child.parent_thread.clone(),
                &child.cx,
                end,
                !stopped,
            )
            .await
        {
            Ok(out) => out,
            Err(e) => return failed(e.to_string()),
        };
        if stopped {
            return (
                Settled {
                    status: TaskStatus::Cancelled,
                    result: None,
                    error: Some(out.text),
                },
                None,
            );
        }
        if out.is_error {
            return failed(out.text);
        }
        let report = format!("{}\n\n{}", head("completed"), out.text);
        (
            Settled {
                status: TaskStatus::Completed,
                result: Some(out.text),
                error: None,
            },
            Some(report),
        )
    }

    /// Adds `task_status` and `task_cancel` to `tools`.
    pub(super) fn add_background_tools(&self, tools: &mut ToolRegistry) {
        tools.add_arc(self.status_tool());
        tools.add_arc(self.cancel_tool());
        tools.add_arc(self.answer_tool());
    }

    /// The capability delivering finished background tasks' reports before
    /// the parent's next model request and cancelling a stopped or failed
    /// parent's tasks.
    pub(super) fn background_capability(&self, depth: usize) -> Arc<dyn Capability> {
        Arc::new(Deliver {
            board: self.inner.board.clone(),
            tasks: self.clone(),
            depth,
        })
    }

    /// Takes up the background tasks a run of `thread_id` started in an
    /// earlier process whose reports its history does not have: each
    /// child is found in its thread (never started twice) and goes on to its
    /// end, and its report is delivered as any other.
    async fn adopt(&self, run: &RunInfo, thread_id: &str, depth: usize) -> Result<(), Error> {
        let thread = self.inner.scope.thread(thread_id.to_owned());
        let history = self
            .inner
            .store
            .history(&thread, 0)
            .await
            .map_err(|e| store_failure(&e))?;
        let mut started: Vec<(String, TaskArgs)> = Vec::new();
        let mut answered = std::collections::HashSet::new();
        let mut delivered = std::collections::HashSet::new();
        for entry in &history {
            match &entry.message {
                Message::Assistant { .. } => {
                    for call in entry.message.tool_calls() {
                        if call.name != super::TASK {
                            continue;
                        }
                        if let Ok(args) = serde_json::from_value::<TaskArgs>(call.arguments.clone())
                            && args.run_in_background
                        {
                            started.push((call.id.clone(), args));
                        }
                    }
                }
                Message::ToolResult(r) if !r.is_error => {
                    answered.insert(r.call_id.clone());
                }
                Message::User { text } => {
                    if let Some(rest) = text.strip_prefix("[background task ")
                        && let Some((id, _)) = rest.split_once(' ')
                    {
                        delivered.insert(id.to_owned());
                    }
                }
                _ => {}
            }
        }
        for (call_id, args) in started {
            let task_id = child_thread(thread_id, &call_id);
            if !answered.contains(&call_id) || delivered.contains(&task_id) {
                continue;
            }
            let name = args
                .subagent_type
                .clone()
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| super::GENERAL_PURPOSE.to_owned());
            let cx = CallContext {
                run_id: Arc::from(run.run_id.as_str()),
                call_id,
            };
            let cancel = CancelToken::new();
            {
                let mut entries = self.inner.board.entries();
                if entries.contains_key(&task_id) {
                    continue;
                }
                entries.insert(
                    task_id.clone(),
                    Entry {
                        parent_run: run.run_id.clone(),
                        parent_thread: thread_id.to_owned(),
                        handle: TaskHandle {
                            task_id: task_id.clone(),
                            subagent_name: name.clone(),
                            description: args.description.clone(),
                            status: TaskStatus::Pending,
                            priority: TaskPriority::Normal,
                            created_at: now_rfc3339(),
                            started_at: None,
                            completed_at: None,
                            result: None,
                            error: None,
                            pending_question: None,
                        },
                        cancel: cancel.clone(),
                        report: None,
                        question: None,
                        answer: None,
                        asked: 0,
                    },
                );
            }
            let Some(def) = self.find_agent(&name) else {
                let error = format!("there is no subagent named {name} any more");
                self.inner.board.update(&task_id, |e| {
                    let report = format!(
                        "[background task {task_id} ({name}: {}) failed]\n\n{error}",
                        args.description
                    );
                    settle(
                        e,
                        Settled {
                            status: TaskStatus::Failed,
                            result: None,
                            error: Some(error.clone()),
                        },
                        Some(report),
                    );
                });
                continue;
            };
            let child = Child {
                thread: self.inner.scope.thread(task_id),
                args,
                cx,
                depth,
                name,
                def,
                parent_thread: thread_id.to_owned(),
            };
            let tasks = self.clone();
            tokio::spawn(async move { tasks.run_background(child, cancel).await });
        }
        Ok(())
    }

    /// Cancels every background task that has not ended and waits for their ends.
    pub(super) async fn cancel_background(&self) {
        self.inner.board.cancel_and_wait(|_| true).await;
    }

    /// The handle of background task `task_id` as the run of `cx` may see
    /// it (one started in its thread), its report taken as delivered when
    /// it ended; `Err` with the refusal otherwise.
    async fn visible(&self, cx: &CallContext, task_id: &str) -> Result<Result<(), String>, Error> {
        let parent = {
            let entries = self.inner.board.entries();
            match entries.get(task_id) {
                Some(e) if e.parent_run == *cx.run_id => return Ok(Ok(())),
                Some(e) => e.parent_thread.clone(),
                None => String::new(),
            }
        };
        if !parent.is_empty() && self.parent_thread(&cx.run_id).await? == parent {
            return Ok(Ok(()));
        }
        Ok(Err(format!(
            "There is no background task {} in this conversation; a task id is what a task call with run_in_background answered with.",
            task_id.chars().take(200).collect::<String>()
        )))
    }

    /// The child's `ask_parent`: its question becomes the handle's
    /// `pending_question` (status `waiting_for_answer`) and a message to the
    /// parent, and the call waits for `task_answer`; at most `max` questions.
    pub(super) fn ask_tool(&self, task_id: &str, max: Option<u32>) -> Arc<dyn Tool> {
        let board = self.inner.board.clone();
        let task_id = task_id.to_owned();
        let max = max.unwrap_or(DEFAULT_MAX_QUESTIONS);
        Arc::new(FnTool::new(
            ASK_PARENT,
            "Ask the agent that gave you this task a question, and wait for its answer. Ask only what you cannot find out yourself.",
            move |args: AskParentArgs, _cx| {
                let board = board.clone();
                let task_id = task_id.clone();
                async move {
                    let (tx, rx) = tokio::sync::oneshot::channel();
                    let mut refused = None;
                    board.update(&task_id, |e| {
                        if e.asked >= max {
                            refused = Some(format!(
                                "You have asked the {max} questions you may; go on with what you know."
                            ));
                            return;
                        }
                        e.asked += 1;
                        e.handle.status = TaskStatus::WaitingForAnswer;
                        e.handle.pending_question = Some(args.question.clone());
                        e.question = Some(format!(
                            "[background task {task_id} ({}: {}) asks]\n\n{}\n\nAnswer with task_answer {{\"task_id\": \"{task_id}\", \"answer\": ...}}.",
                            e.handle.subagent_name, e.handle.description, args.question
                        ));
                        e.answer = Some(tx);
                    });
                    if let Some(why) = refused {
                        return Ok(ToolOutput::refused(why));
                    }
                    let answer = rx.await;
                    board.update(&task_id, |e| {
                        if e.handle.status == TaskStatus::WaitingForAnswer {
                            e.handle.status = TaskStatus::Running;
                        }
                        e.handle.pending_question = None;
                        e.question = None;
                    });
                    match answer {
                        Ok(answer) => Ok(ToolOutput::ok(answer)),
                        Err(_) => Ok(ToolOutput::refused("The question was not answered.")),
                    }
                }
            },
        ))
    }

    fn answer_tool(&self) -> Arc<dyn Tool> {
        let tasks = self.clone();
        Arc::new(
            FnTool::new(
                TASK_ANSWER,
                "Answer the question a background task asked (its status is waiting_for_answer); it goes on with the answer.",
                move |args: TaskAnswerArgs, cx| {
                    let tasks = tasks.clone();
                    async move {
                        if let Err(why) = tasks.visible(&cx, &args.task_id).await? {
                            return Ok(ToolOutput::refused(why));
                        }
                        let mut entries = tasks.inner.board.entries();
                        let Some(entry) = entries.get_mut(&args.task_id) else {
                            return Ok(ToolOutput::refused("The background task is gone."));
                        };
                        let Some(tx) = entry.answer.take() else {
                            return Ok(ToolOutput::refused(format!(
                                "The background task {} is not waiting for an answer (it is {}).",
                                args.task_id,
                                status_name(entry.handle.status)
                            )));
                        };
                        entry.question = None;
                        // Working again from now: a run waiting for its tasks waits for it.
                        entry.handle.status = TaskStatus::Running;
                        entry.handle.pending_question = None;
                        drop(entries);
                        if tx.send(args.answer).is_err() {
                            return Ok(ToolOutput::refused(
                                "The background task stopped waiting for the answer.",
                            ));
                        }
                        Ok(ToolOutput::ok(format!(
                            "Answered the background task {}; it goes on.",
                            args.task_id
                        )))
                    }
                },
            )
            .with_annotations(ToolAnnotations {
                read_only: false,
                destructive: false,
                idempotent: false,
            }),
        )
    }

    fn status_tool(&self) -> Arc<dyn Tool> {
        let tasks = self.clone();
        Arc::new(
            FnTool::new(
                TASK_STATUS,
                "Show where a background task started with task (run_in_background) stands: its status (pending, running, waiting_for_answer, completed, failed, cancelled), its result or error, and its times.",
                move |args: TaskIdArgs, cx| {
                    let tasks = tasks.clone();
                    async move {
                        if let Err(why) = tasks.visible(&cx, &args.task_id).await? {
                            return Ok(ToolOutput::refused(why));
                        }
                        let handle = {
                            let mut entries = tasks.inner.board.entries();
                            let Some(entry) = entries.get_mut(&args.task_id) else {
                                return Ok(ToolOutput::refused("The background task is gone."));
                            };
                            if entry.handle.status.is_terminal() {
                                // Its result is in this call's: no second delivery.
                                entry.report = None;
                            }
                            entry.handle.clone()
                        };
                        handle_json(&handle)
                    }
                },
            )
            .with_annotations(ToolAnnotations {
                read_only: true,
                destructive: false,
                idempotent: true,
            }),
        )
    }

    fn cancel_tool(&self) -> Arc<dyn Tool> {
        let tasks = self.clone();
        Arc::new(
            FnTool::new(
                TASK_CANCEL,
                "Cancel a background task started with task (run_in_background): its subagent stops, its calls in flight end cancelled, and its status becomes cancelled.",
                move |args: TaskIdArgs, cx| {
                    let tasks = tasks.clone();
                    async move {
                        if let Err(why) = tasks.visible(&cx, &args.task_id).await? {
                            return Ok(ToolOutput::refused(why));
                        }
                        let status = tasks
                            .inner
                            .board
                            .entries()
                            .get(&args.task_id)
                            .map(|e| e.handle.status);
                        if let Some(status) = status.filter(|s| s.is_terminal()) {
                            return Ok(ToolOutput::refused(format!(
                                "The background task {} already ended ({}); there is nothing to cancel.",
                                args.task_id,
                                status_name(status)
                            )));
                        }
                        let id = args.task_id.clone();
                        tasks.inner.board.cancel_and_wait(|e| e.handle.task_id == id).await;
                        let handle = tasks
                            .inner
                            .board
                            .entries()
                            .get(&args.task_id)
                            .map(|e| e.handle.clone());
                        match handle {
                            Some(handle) => handle_json(&handle),
                            None => Ok(ToolOutput::refused("The background task is gone.")),
                        }
                    }
                },
            )
            .with_annotations(ToolAnnotations {
                read_only: false,
                destructive: false,
                idempotent: true,
            }),
        )
    }
}

/// What a background task's child runs.
struct Child {
    args: TaskArgs,
    cx: CallContext,
    depth: usize,
    name: String,
    def: SubAgent,
    thread: ThreadKey,
    parent_thread: String,
}

fn settle(entry: &mut Entry, settled: Settled, report: Option<String>) {
    entry.handle.status = settled.status;
    entry.handle.result = settled.result;
    entry.handle.error = settled.error;
    entry.handle.completed_at = Some(now_rfc3339());
    entry.handle.pending_question = None;
    entry.report = report;
    entry.question = None;
    entry.answer = None;
}

fn started_text(handle: &TaskHandle) -> String {
    format!(
        "Started the background task {id} (subagent {name}). Its report comes to you as a message once it ends; task_status {{\"task_id\": \"{id}\"}} shows where it stands and task_cancel stops it.",
        id = handle.task_id,
        name = handle.subagent_name
    )
}

fn status_name(status: TaskStatus) -> String {
    serde_json::to_value(status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn handle_json(handle: &TaskHandle) -> Result<ToolOutput, Error> {
    serde_json::to_string_pretty(handle)
        .map(ToolOutput::ok)
        .map_err(|e| Error::failure_msg(format!("the task's handle cannot be shown: {e}")))
}

/// Delivers finished tasks' reports to the run that started them (or a
/// later run of its thread) and cancels the tasks of a run that was stopped
/// or failed.
struct Deliver {
    board: Arc<Board>,
    tasks: Tasks,
    /// The depth of the `task` tool of the agent it is installed in.
    depth: usize,
}

#[async_trait]
impl Capability for Deliver {
    fn name(&self) -> &str {
        "background_tasks"
    }

    async fn before_run(&self, run: &RunInfo) -> Result<(), RunFailure> {
        let Some(thread_id) = &run.thread_id else {
            return Ok(());
        };
        self.tasks
            .adopt(run, thread_id, self.depth)
            .await
            .map_err(|e| RunFailure::new("store_failed", e.to_string()))
    }

    async fn before_request(
        &self,
        run: &RunInfo,
        _history: &[Message],
    ) -> Result<Vec<Message>, RunFailure> {
        Ok(self.reports(run))
    }

    async fn before_end(&self, run: &RunInfo) -> Vec<Message> {
        // A run does not end while its background tasks work: their
        // reports (or their questions) are what it waits for.
        self.board
            .wait_until(|e| {
                e.of_run(run)
                    && !e.handle.status.is_terminal()
                    && e.handle.status != TaskStatus::WaitingForAnswer
            })
            .await;
        self.reports(run)
    }

    async fn after_run(&self, run: &RunInfo, outcome: &Outcome) {
        if matches!(outcome, Outcome::Stopped { .. } | Outcome::Failed { .. }) {
            self.board.cancel_and_wait(|e| e.of_run(run)).await;
        }
    }
}

impl Deliver {
    /// The reports of the run's ended tasks not delivered yet, oldest task first.
    fn reports(&self, run: &RunInfo) -> Vec<Message> {
        let mut ready: Vec<(String, String, String)> = Vec::new();
        for entry in self.board.entries().values_mut() {
            if !entry.of_run(run) {
                continue;
            }
            for news in [entry.question.take(), entry.report.take()]
                .into_iter()
                .flatten()
            {
                ready.push((
                    entry.handle.created_at.clone(),
                    entry.handle.task_id.clone(),
                    news,
                ));
            }
        }
        ready.sort();
        ready
            .into_iter()
            .map(|(_, _, report)| Message::user(report))
            .collect()
    }
}
