//! The tool call as the unit of durability: each call is recorded started (with its effect key) before it runs and finished after; a history left with unanswered calls is repaired from those records.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use burrow_backend::{Error, LockKey};
use serde_json::Value;

use crate::agent::batch::LoopPanic;
use crate::message::{Message, ToolCall, ToolResult};
use crate::tool::ToolOutput;
use crate::tool::{CallContext, Tool, ToolAnnotations, ToolRegistry, effect_key};

/// What the model reads for a call that was running when its run was lost and
/// that is not safe to run again.
pub const OUTCOME_UNKNOWN: &str = "The outcome of this call is unknown: the run was interrupted while it ran, and the tool is not safe to run twice. Check whether it took effect before calling it again.";

/// What the model reads for a call of an interrupted run that was never
/// allowed to start and could not be decided again (its run was cancelled
/// meanwhile).
pub const NOT_RUN: &str = "The call was not run: its run was interrupted before the call was allowed to start. Call it again if it is still needed.";

/// What the model reads for an `ask_user` call of an interrupted run: no one
/// answered, and the run that would have waited for the answer is over.
pub const QUESTION_UNANSWERED: &str = "The question went unanswered: its run was interrupted before anyone could answer it. Ask it again if the answer is still needed.";

/// Where a run's tool calls are recorded.
#[async_trait]
pub(crate) trait CallLog: Send + Sync {
    /// Records that a call is about to run.
    async fn started(
        &self,
        run_id: &str,
        call_id: &str,
        tool: &str,
        effect_key: &str,
    ) -> Result<(), String>;

    /// Records the result a call ended with.
    async fn finished(
        &self,
        run_id: &str,
        call_id: &str,
        tool: &str,
        output: &ToolOutput,
    ) -> Result<(), String>;
}

/// What the records say about one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CallState {
    /// It started and never finished.
    Started,
    /// It finished with this result.
    Finished(ToolOutput),
}

/// A tool whose every call is recorded started before it runs and finished after.
pub(crate) struct Durable {
    inner: Arc<dyn Tool>,
    log: Arc<dyn CallLog>,
}

impl Durable {
    /// `inner`, recorded in `log`.
    pub(crate) fn one(inner: Arc<dyn Tool>, log: Arc<dyn CallLog>) -> Arc<dyn Tool> {
        Arc::new(Durable { inner, log })
    }

    /// Every tool of `tools`, recorded in `log`.
    pub(crate) fn wrap(tools: &ToolRegistry, log: &Arc<dyn CallLog>) -> ToolRegistry {
        if tools.definitions().iter().all(|d| d.native_type.is_none()) {
            // The same definitions (a `Durable` keeps name, description
            // and schema): shared, so a run copies no schema (issue 26).
            return tools.rewrapped(|tool| {
                Arc::new(Durable {
                    inner: tool.clone(),
                    log: log.clone(),
                })
            });
        }
        let mut wrapped = ToolRegistry::new();
        for tool in tools.tools() {
            wrapped.add_arc(Arc::new(Durable {
                inner: tool.clone(),
                log: log.clone(),
            }));
        }
        // A call of a tool absent on purpose still says why.
        for (name, why) in tools.absent() {
            wrapped.note_absent(name, why);
        }
        wrapped
    }
}

/// The effect key of a whole call: the run, the call and the tool.
pub(crate) fn call_key(run_id: &str, call_id: &str, tool: &str) -> String {
    effect_key(run_id, call_id, "call", tool)
}

#[async_trait]
impl Tool for Durable {
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

    fn locks(&self, args: &Value) -> Vec<LockKey> {
        self.inner.locks(args)
    }

    async fn call(&self, cx: &CallContext, args: Value) -> Result<ToolOutput, Error> {
        let name = self.inner.name();
        let key = call_key(&cx.run_id, &cx.call_id, name);
        store_step(self.log.started(&cx.run_id, &cx.call_id, name, &key))
            .await
            .map_err(|why| Error::failure_msg(format!("recording the call failed: {why}")))?;
        let result = self.inner.call(cx, args).await;
        let recorded = match &result {
            Ok(output) => output.clone(),
            Err(e) => ToolOutput::refused(format!("The tool {name} failed: {e}.")),
        };
        store_step(self.log.finished(&cx.run_id, &cx.call_id, name, &recorded))
            .await
            .map_err(|why| {
                Error::failure_msg(format!("recording the call's result failed: {why}"))
            })?;
        result
    }

    async fn answered(
        &self,
        cx: &CallContext,
        args: Value,
        request: Option<&Value>,
        answer: &str,
    ) -> Option<Result<ToolOutput, Error>> {
        self.inner.answered(cx, args, request, answer).await
    }
}

/// Runs one of the call log's steps; a panic in it (the session store's) is the
/// loop's, not the tool's, so it unwinds on as a [`LoopPanic`] and ends the run
/// `failed/panicked` (ADR 0352).
async fn store_step<T>(step: impl std::future::Future<Output = T>) -> T {
    use futures::FutureExt;
    match std::panic::AssertUnwindSafe(step).catch_unwind().await {
        Ok(done) => done,
        Err(panic) => std::panic::resume_unwind(Box::new(LoopPanic(
            crate::agent::batch::panic_message(panic.as_ref()),
        ))),
    }
}

/// The calls of the history's last answer that have no result yet, in call order.
pub(crate) fn unanswered(history: &[Message]) -> Vec<ToolCall> {
    let Some(at) = history
        .iter()
        .rposition(|m| matches!(m, Message::Assistant { .. }))
    else {
        return Vec::new();
    };
    let answered: Vec<&str> = history[at + 1..]
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult(r) => Some(r.call_id.as_str()),
            _ => None,
        })
        .collect();
    history[at]
        .tool_calls()
        .filter(|c| !answered.contains(&c.id.as_str()))
        .cloned()
        .collect()
}

/// What the model reads for a call of an interrupted run that a hook sent for
/// approval when it was decided again: the run it belonged to is over, so no
/// one can approve it there.
pub(crate) fn approval_lost(reason: &str) -> String {
    format!(
        "The call was not run: it needs approval ({reason}), and its run was interrupted before it could wait for one. Call it again to ask for approval."
    )
}

/// The run whose unanswered calls are repaired.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LeftRun<'a> {
    /// The session (thread) the run belongs to.
    pub(crate) session_id: &'a str,
    /// The run that made the calls.
    pub(crate) run_id: &'a str,
    /// How many tool results the run had before its last answer's calls.
    pub(crate) prior: usize,
    /// Whether the run had the `ask_user` tool.
    pub(crate) ask_user: bool,
}

/// Gives every unanswered call of the history's last answer its result, in
/// call order (ADR 0241): a finished call's recorded result; a call never
/// recorded started (its decision was never reached, or its refusal was not
/// saved) is decided again through the call pipeline, its hooks asked again;
/// a call that started and never finished is replayed through the pipeline
/// under the same effect keys when its tool is idempotent, else the model is
/// told its outcome is unknown. `agent` carries the tools (recorded in the
/// run's log), hooks and capabilities; `left` is the run that made the
/// calls. Returns the results appended, each with whether it is the call's
/// recorded result from before.
///
/// The agent's `max_tool_calls` applies again (ADR 0244): with `left.prior`
/// results before them, calls over the limit are refused whole, as the agent
/// loop refuses them. With `left.ask_user`, an unanswered `ask_user` call
/// gets [`QUESTION_UNANSWERED`].
pub(crate) async fn repair(
    history: &mut Vec<Message>,
    agent: &crate::agent::Agent,
    left: &LeftRun<'_>,
    records: &HashMap<String, CallState>,
    cancel: &crate::agent::CancelToken,
) -> Vec<(ToolResult, bool)> {
    let LeftRun {
        session_id,
        run_id,
        prior,
        ask_user,
    } = *left;
    let calls = unanswered(history);
    let tools = agent.tools();
    let limit_text = agent
        .max_tool_calls()
        .filter(|max| prior + calls.len() > *max)
        .map(crate::agent::over_limit_text);
    let mut fixed: Vec<Option<(ToolOutput, bool)>> = Vec::with_capacity(calls.len());
    let mut entries = Vec::new();
    let mut replays = Vec::new();
    for call in &calls {
        let asked = ask_user && call.name == super::ask::ASK_USER;
        let record = records.get(&call.id);
        if let Some(CallState::Finished(output)) = record
            // A question recorded asked was never answered: its run is over.
            && (!asked || output.is_error)
        {
            fixed.push(Some((output.clone(), true)));
            continue;
        }
        if let Some(text) = &limit_text {
            fixed.push(Some((ToolOutput::refused(text.clone()), false)));
            continue;
        }
        if asked {
            fixed.push(Some((ToolOutput::refused(QUESTION_UNANSWERED), false)));
            continue;
        }
        fixed.push(match (record, tools.get(&call.name)) {
            (Some(CallState::Finished(output)), _) => Some((output.clone(), true)),
            (_, None) => Some((ToolOutput::refused(tools.unknown_tool(&call.name)), false)),
            (Some(CallState::Started), Some(tool)) if !tool.annotations().idempotent => {
                Some((ToolOutput::refused(OUTCOME_UNKNOWN), false))
            }
            (state, Some(_)) => {
                entries.push(crate::agent::PipelineCall::decide(call));
                replays.push(state.is_some());
                None
            }
        });
    }
    let mut ran = Vec::new().into_iter();
    if !entries.is_empty() {
        let run: Arc<str> = Arc::from(run_id);
        let hook_cx = crate::hooks::HookContext {
            session_id: session_id.to_owned(),
            run_id: run_id.to_owned(),
        };
        let outcome = agent
            .call_pipeline(&hook_cx, &run, cancel)
            .run(&entries)
            .await;
        let approvals: HashMap<&str, &str> = outcome
            .approvals
            .iter()
            .map(|a| (a.call_id.as_str(), a.reason.as_str()))
            .collect();
        let decided: Vec<ToolResult> = outcome
            .results
            .iter()
            .zip(&outcome.ran)
            .zip(&replays)
            .map(|((result, ran), replay)| {
                let mut result = result.clone();
                if let Some(reason) = approvals.get(result.call_id.as_str()) {
                    result.content = approval_lost(reason);
                    result.is_error = true;
                } else if *replay && !ran {
                    // Its first attempt may have taken effect; this one did not run.
                    result.content =
                        format!("{OUTCOME_UNKNOWN} It was not run again: {}", result.content);
                    result.is_error = true;
                } else if *replay && result.is_error {
                    // Run again, it was refused: the refusal may be the first
                    // attempt's own effect (a file it wrote), so say both.
                    result.content = format!(
                        "{OUTCOME_UNKNOWN} Run again, it was refused: {}",
                        result.content
                    );
                }
                result
            })
            .collect();
        ran = decided.into_iter();
    }
    let mut results = Vec::with_capacity(calls.len());
    for (call, fixed) in calls.into_iter().zip(fixed) {
        let (result, recorded) = match fixed {
            Some((output, recorded)) => (
                ToolResult {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    content: output.text,
                    is_error: output.is_error,
                },
                recorded,
            ),
            None => match ran.next() {
                Some(result) => (result, false),
                None => (
                    ToolResult {
                        call_id: call.id.clone(),
                        name: call.name.clone(),
                        content: NOT_RUN.to_owned(),
                        is_error: true,
                    },
                    false,
                ),
            },
        };
        history.push(Message::ToolResult(result.clone()));
        results.push((result, recorded));
    }
    results
}
