//! The tool call as the unit of durability: each call is recorded started (with its effect key) before it runs and finished after; a history left with unanswered calls is repaired from those records.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use burrow_backend::{Error, LockKey};
use serde_json::Value;

use crate::message::{Message, ToolCall, ToolResult};
use crate::tool::{CallContext, Tool, ToolAnnotations, ToolRegistry, effect_key};
use crate::tools::ToolOutput;

/// What the model reads for a call that was running when its run was lost and
/// that is not safe to run again.
pub const OUTCOME_UNKNOWN: &str = "The outcome of this call is unknown: the run was interrupted while it ran, and the tool is not safe to run twice. Check whether it took effect before calling it again.";

/// What the model reads for a call of an interrupted run that was never
/// allowed to start (its run was lost before its hooks decided, or it was
/// refused and the refusal was not saved).
pub const NOT_RUN: &str = "The call was not run: its run was interrupted before the call was allowed to start. Call it again if it is still needed.";

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
        self.log
            .started(&cx.run_id, &cx.call_id, name, &key)
            .await
            .map_err(|why| Error::failure_msg(format!("recording the call failed: {why}")))?;
        let result = self.inner.call(cx, args).await;
        let recorded = match &result {
            Ok(output) => output.clone(),
            Err(e) => ToolOutput::refused(format!("The tool {name} failed: {e}.")),
        };
        self.log
            .finished(&cx.run_id, &cx.call_id, name, &recorded)
            .await
            .map_err(|why| {
                Error::failure_msg(format!("recording the call's result failed: {why}"))
            })?;
        result
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

/// Gives every unanswered call of the history's last answer its result, in
/// call order: a finished call's recorded result; a call that started and
/// never finished is run again only when its tool is idempotent, else the
/// model is told its outcome is unknown; a call that never started (never
/// allowed) does not run and the model is told so.
/// `run_id` is the run that made the calls. Returns the results appended,
/// each with whether it is the call's recorded result.
pub(crate) async fn repair(
    history: &mut Vec<Message>,
    tools: &ToolRegistry,
    log: &Arc<dyn CallLog>,
    run_id: &str,
    records: &HashMap<String, CallState>,
) -> Vec<(ToolResult, bool)> {
    let calls = unanswered(history);
    let mut results = Vec::with_capacity(calls.len());
    for call in calls {
        let (output, recorded) = match (records.get(&call.id), tools.get(&call.name)) {
            (Some(CallState::Finished(output)), _) => (output.clone(), true),
            (_, None) => (ToolOutput::refused(tools.unknown_tool(&call.name)), false),
            // Never recorded started: its hooks, capabilities and checks never
            // allowed it (or were never asked), so it does not run here, where
            // none of them would be asked (ADR 0240).
            (None, Some(_)) => (ToolOutput::refused(NOT_RUN), false),
            (Some(CallState::Started), Some(tool)) if !tool.annotations().idempotent => {
                (ToolOutput::refused(OUTCOME_UNKNOWN), false)
            }
            // Recorded started: it was allowed and was about to run; an
            // idempotent tool runs again under the same effect keys.
            (Some(CallState::Started), Some(tool)) => {
                let durable = Durable {
                    inner: tool.clone(),
                    log: log.clone(),
                };
                let cx = CallContext {
                    run_id: Arc::from(run_id),
                    call_id: call.id.clone(),
                };
                let args = match &call.arguments {
                    Value::Null => Value::Object(serde_json::Map::new()),
                    other => other.clone(),
                };
                match tool.validate(&args) {
                    Err(why) => (ToolOutput::refused(why), false),
                    Ok(()) => match durable.call(&cx, args).await {
                        Ok(output) => (output, true),
                        Err(e) => (ToolOutput::refused(format!("{e}")), false),
                    },
                }
            }
        };
        let result = ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content: output.text,
            is_error: output.is_error,
        };
        history.push(Message::ToolResult(result.clone()));
        results.push((result, recorded));
    }
    results
}
