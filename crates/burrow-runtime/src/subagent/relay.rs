//! A synchronous task's questions and approvals (ADRs 0385, 0392): the child's `ask_parent` pauses the child as `ask_user` pauses a run, the parent's `task` call relays the question so the parent's run pauses too, and the answer, once given, goes to the child, which runs on to its report.

use std::sync::Arc;

use async_trait::async_trait;
use burrow_backend::Error;
use serde_json::{Value, json};

use super::background::{ASK_PARENT, AskParentArgs, DEFAULT_MAX_QUESTIONS};
use super::task::{
    CHILD_MESSAGE_AUTHOR, ChildEnd, GENERAL_PURPOSE, StopOnDrop, TASK, TaskArgs, Tasks,
    child_thread, runner_failure, settle, store_failure,
};
use crate::message::Message;
use crate::runner::{PendingRequest, RequestKind, Resumed, Runner};
use crate::session::{Answer, RunStatus, StoreError, ThreadKey};
use crate::tool::{CallContext, FnTool, Tool, ToolAnnotations, ToolOutput};

/// What a synchronous task's child reads as the result of its `ask_parent`;
/// the answer follows as its next message once someone answers.
pub const ASKED_PARENT: &str = "The question was sent to the agent that gave you this task, and you pause until it is answered; the answer follows as your next message.";

/// The `task` tool: its calls run as [`Tasks`] says, and it takes on the
/// answers to the questions its children relayed.
pub(super) struct TaskTool {
    pub(super) inner: FnTool<TaskArgs>,
    pub(super) tasks: Tasks,
    /// The nesting of its children (as [`Tasks::tool_at`] was given it).
    pub(super) depth: usize,
}

#[async_trait]
impl Tool for TaskTool {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn description(&self) -> &str {
        self.inner.description()
    }

    fn input_schema(&self) -> &Value {
        self.inner.input_schema()
    }

    fn annotations(&self) -> ToolAnnotations {
        self.inner.annotations()
    }

    fn validate(&self, args: &Value) -> Result<(), String> {
        self.inner.validate(args)
    }

    async fn call(&self, cx: &CallContext, args: Value) -> Result<ToolOutput, Error> {
        self.inner.call(cx, args).await
    }

    async fn answered(
        &self,
        cx: &CallContext,
        args: Value,
        request: Option<&Value>,
        answer: &str,
    ) -> Option<Result<ToolOutput, Error>> {
        let args: TaskArgs = match serde_json::from_value(args) {
            Ok(args) => args,
            Err(e) => {
                return Some(Ok(ToolOutput::refused(format!(
                    "The task call's arguments no longer read ({e}); its subagent cannot be given the answer."
                ))));
            }
        };
        let child_request = request
            .and_then(|r| r.get("child_request"))
            .and_then(Value::as_str);
        let approved = request
            .and_then(|r| r.get("approved"))
            .and_then(Value::as_bool);
        Some(
            self.tasks
                .take_answer(args, cx, self.depth, child_request, approved, answer)
                .await,
        )
    }
}

impl Tasks {
    /// A synchronous task's child's `ask_parent`: the question pauses the
    /// child's run (a request of its own, durable) and, through the
    /// parent's `task` call, the parent's; at most `max` questions over the
    /// child's thread.
    pub(super) fn sync_ask_tool(&self, thread: &ThreadKey, max: Option<u32>) -> Arc<dyn Tool> {
        let store = self.inner.store.clone();
        let thread = thread.clone();
        let max = max.unwrap_or(DEFAULT_MAX_QUESTIONS);
        Arc::new(
            FnTool::new(
                ASK_PARENT,
                "Ask the agent that gave you this task a question, and wait for its answer. Ask only what you cannot find out yourself.",
                move |args: AskParentArgs, cx: CallContext| {
                    let store = store.clone();
                    let thread = thread.clone();
                    async move {
                        if args.question.trim().is_empty() {
                            return Ok(ToolOutput::refused(
                                "The question is empty; say what you need to know.",
                            ));
                        }
                        let history = store
                            .history(&thread, 0)
                            .await
                            .map_err(|e| store_failure(&e))?;
                        let before = history
                            .iter()
                            .filter(|e| {
                                matches!(&e.message, Message::ToolResult(r)
                                    if r.name == ASK_PARENT && !r.is_error)
                            })
                            .count();
                        let now = crate::runner::asked_in_batch().unwrap_or(0);
                        if before + now >= max as usize {
                            return Ok(ToolOutput::refused(format!(
                                "You have asked the {max} questions you may (max_questions); go on with what you know."
                            )));
                        }
                        let request = PendingRequest {
                            request_id: cx.call_id.clone(),
                            kind: RequestKind::Question,
                            tool_name: ASK_PARENT.to_owned(),
                            text: args.question,
                            arguments: None,
                            call_id: None,
                        };
                        match crate::runner::ask_in_run(request) {
                            Some(_) => Ok(ToolOutput::ok(ASKED_PARENT)),
                            None => Ok(ToolOutput::refused(
                                "Your question cannot be asked here: this run cannot pause for an answer. Go on with what you know.",
                            )),
                        }
                    }
                },
            )
            .with_annotations(ToolAnnotations {
                read_only: true,
                destructive: false,
                idempotent: false,
            }),
        )
    }

    /// Relays the open `ask_parent` questions of the child in `thread`
    /// (paused) to the run of the parent's call `cx`, which pauses on them
    /// once its batch ends, and its pending approvals (a PreToolUse `ask`,
    /// ADR 0392) likewise; the text the parent's model reads. `None` when
    /// the child paused for something else or the parent's run cannot
    /// pause (it is not a runner's).
    pub(super) async fn relay_questions(
        &self,
        name: &str,
        thread: &ThreadKey,
        cx: &CallContext,
    ) -> Result<Option<String>, Error> {
        let store = &self.inner.store;
        let runs = store.runs(thread).await.map_err(|e| store_failure(&e))?;
        let Some(run) = runs.last().filter(|r| r.status == RunStatus::Paused) else {
            return Ok(None);
        };
        let open: Vec<_> = run.requests.iter().filter(|r| r.answer.is_none()).collect();
        if open.is_empty()
            || open.iter().any(|r| {
                r.spec.kind == crate::session::RequestKind::Question
                    && r.spec.tool_name != ASK_PARENT
            })
        {
            return Ok(None);
        }
        let history = store
            .history(thread, 0)
            .await
            .map_err(|e| store_failure(&e))?;
        let mut texts = Vec::new();
        for (i, request) in open.iter().enumerate() {
            if request.spec.kind == crate::session::RequestKind::Approval {
                // A PreToolUse `ask` in the child (ADR 0392): the parent's
                // run pauses on the approval; the decision goes to the child,
                // which then runs (or refuses) that call alone.
                let spec = &request.spec;
                let arguments = spec.arguments.clone().or_else(|| {
                    history
                        .iter()
                        .rev()
                        .flat_map(|e| e.message.tool_calls())
                        .find(|c| c.id == spec.call_id && c.name == spec.tool_name)
                        .map(|c| c.arguments.clone())
                });
                let id = format!("{}/{}", cx.call_id, spec.id);
                let text = format!(
                    "The subagent {name} (task {}) waits for approval of its call {} ({}).",
                    thread.thread, spec.call_id, spec.tool_name
                );
                let asked = PendingRequest {
                    request_id: id.clone(),
                    kind: RequestKind::Approval,
                    tool_name: TASK.to_owned(),
                    text: text.clone(),
                    arguments: Some(json!({
                        "subagent": name,
                        "task_id": thread.thread,
                        "tool": spec.tool_name,
                        "call_id": spec.call_id,
                        "arguments": arguments,
                        "child_request": spec.id,
                    })),
                    call_id: Some(cx.call_id.clone()),
                };
                if crate::runner::ask_in_run(asked).is_none() {
                    debug_assert_eq!(i, 0);
                    return Ok(None);
                }
                texts.push(format!(
                    "{text}\n\nThe run pauses until the call is approved or declined (request {id}); the subagent then goes on, that call alone running or refused, and its report follows as the next message."
                ));
                continue;
            }
            let question = history
                .iter()
                .rev()
                .flat_map(|e| e.message.tool_calls())
                .find(|c| c.id == request.spec.call_id && c.name == ASK_PARENT)
                .and_then(|c| c.arguments.get("question").and_then(Value::as_str))
                .unwrap_or("(its question could not be read)")
                .to_owned();
            let id = format!("{}/{}", cx.call_id, request.spec.id);
            let asked = PendingRequest {
                request_id: id.clone(),
                kind: RequestKind::Question,
                tool_name: TASK.to_owned(),
                text: question.clone(),
                arguments: Some(json!({
                    "subagent": name,
                    "task_id": thread.thread,
                    "question": question,
                    "child_request": request.spec.id,
                })),
                call_id: Some(cx.call_id.clone()),
            };
            if crate::runner::ask_in_run(asked).is_none() {
                // Only the first can find no run: they share one.
                debug_assert_eq!(i, 0);
                return Ok(None);
            }
            texts.push(format!(
                "The subagent {name} (task {}) asks: {question}\n\nThe run pauses until the question is answered (request {id}); the subagent then goes on with the answer, and its report follows as the next message.",
                thread.thread
            ));
        }
        Ok(Some(texts.join("\n\n")))
    }

    /// Gives the answer to the question `child_request` of the child of the
    /// call `cx` and runs the child on: its report once it ends, its next
    /// question relayed when it asks again, nothing (an empty text) while it
    /// waits for the answers to its other questions.
    pub(super) async fn take_answer(
        &self,
        args: TaskArgs,
        cx: &CallContext,
        depth: usize,
        child_request: Option<&str>,
        approved: Option<bool>,
        answer: &str,
    ) -> Result<ToolOutput, Error> {
        let inner = &self.inner;
        let name = args
            .subagent_type
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| GENERAL_PURPOSE.to_owned());
        let Some(def) = self.find_agent(&name) else {
            return Ok(ToolOutput::refused(format!(
                "There is no subagent named {name} any more; its question's answer cannot reach it."
            )));
        };
        let _slot = inner
            .slots
            .acquire()
            .await
            .map_err(|_| Error::failure_msg("the task slots were closed"))?;
        let parent_thread = self.parent_thread(&cx.run_id).await?;
        let thread = inner
            .scope
            .thread(child_thread(&parent_thread, &cx.call_id));
        let runner = self.child_runner(
            self.child_agent(&def, depth, None, &thread),
            cx,
            &name,
            &args.description,
            &thread,
        );
        let guard = StopOnDrop::register(&runner, &thread, &inner.children);
        let ended = answer_child(&runner, &thread, child_request, approved, answer).await;
        runner.aclose().await;
        guard.finish();
        let Some(ended) = ended.map_err(|e| store_failure(&e))? else {
            return Ok(ToolOutput::ok(String::new()));
        };
        if ended.outcome == RunStatus::Paused.as_str()
            && let Some(asks) = self.relay_questions(&name, &thread, cx).await?
        {
            self.emit_ended(&name, &thread, &cx.run_id, &ended);
            return Ok(ToolOutput::ok(asks));
        }
        let out = self
            .report(&name, &thread, parent_thread, cx, &ended, true)
            .await;
        self.emit_ended(&name, &thread, &cx.run_id, &ended);
        out
    }
}

/// Answers the child's question `request` (or decides its approval when
/// `approved` is given, ADR 0392) and waits for the child's run to
/// settle; `None` while the child waits for answers to its other
/// questions. A question answered before (the parent's resume run again)
/// is not answered twice: the child's run is resumed or waited for.
async fn answer_child(
    runner: &Runner,
    thread: &ThreadKey,
    request: Option<&str>,
    approved: Option<bool>,
    answer: &str,
) -> Result<Option<ChildEnd>, StoreError> {
    let runs = runner.store().runs(thread).await?;
    if let Some(run) = runs.last().filter(|r| r.status == RunStatus::Paused) {
        let open = |id: &str| {
            run.requests
                .iter()
                .any(|r| r.spec.id == id && r.answer.is_none())
        };
        if let Some(id) = request.filter(|id| open(id)) {
            let given = Answer {
                author: CHILD_MESSAGE_AUTHOR.to_owned(),
                approved,
                text: (approved.is_none() || !answer.is_empty()).then(|| answer.to_owned()),
                message_id: None,
            };
            let sent = runner
                .answer(thread, &run.run_id, id, given)
                .await
                .map_err(runner_failure)?;
            if let Some(handle) = sent.run {
                return Ok(Some(ChildEnd::of_result(&handle.wait().await)));
            }
        }
        match runner
            .resume(thread, &run.run_id)
            .await
            .map_err(runner_failure)?
        {
            Resumed::Resumed(handle) => {
                return Ok(Some(ChildEnd::of_result(&handle.wait().await)));
            }
            Resumed::Unanswered { .. } => return Ok(None),
            _ => {}
        }
    }
    settle(runner, thread, None).await.map(Some)
}
