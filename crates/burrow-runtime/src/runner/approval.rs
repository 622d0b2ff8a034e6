//! Approvals answered: what the answers to a paused run's requests say as the user's next message, the approved calls run through the call pipeline (ADRs 0241, 0242).

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::agent::{Agent, CancelToken};
use crate::message::{Message, ToolResult};
use crate::session::{RequestKind, RequestSpec, RunRecord, ThreadKey};

use super::engine::Inner;

impl Inner {
    /// What the answers to a paused run's requests say, as the user's next
    /// message. The approved calls run here, together, through the call
    /// pipeline (capabilities, locks, cancellation, panic isolation, the
    /// recorded start, post-tool hooks; the approval is their decision, so no
    /// `PreToolUse` hook is asked again), with the arguments a hook's
    /// `updatedInput` gave them when it asked (ADR 0241, 0242).
    pub(super) async fn answers_text(
        &self,
        agent: &Agent,
        history: &[Message],
        run: &RunRecord,
        thread: &ThreadKey,
        cancel: &CancelToken,
    ) -> String {
        let approved: Vec<(&RequestSpec, Option<&crate::message::ToolCall>)> = run
            .requests
            .iter()
            .filter(|r| {
                r.spec.kind == RequestKind::Approval
                    && !relayed(&r.spec)
                    && r.answer.as_ref().and_then(|a| a.approved) == Some(true)
            })
            .map(|r| {
                let call = history
                    .iter()
                    .rev()
                    .flat_map(|m| m.tool_calls())
                    .find(|c| c.id == r.spec.call_id && c.name == r.spec.tool_name);
                (&r.spec, call)
            })
            .collect();
        let entries: Vec<crate::agent::PipelineCall<'_>> = approved
            .iter()
            .filter_map(|(spec, call)| {
                call.map(|call| crate::agent::PipelineCall {
                    call,
                    approved: Some(spec.arguments.as_ref().unwrap_or(&call.arguments)),
                })
            })
            .collect();
        let mut outputs: HashMap<String, ToolResult> = HashMap::new();
        if !entries.is_empty() {
            let run_id: Arc<str> = Arc::from(run.run_id.as_str());
            let hook_cx = crate::hooks::HookContext {
                session_id: thread.thread.clone(),
                run_id: run.run_id.clone(),
            };
            let pipeline = crate::agent::CallPipeline {
                #[cfg(feature = "failpoints")]
                failpoint: self.config.failpoint.as_ref(),
                ..agent.call_pipeline(&hook_cx, &run_id, cancel)
            };
            let ran = pipeline.run(&entries).await;
            outputs.extend(ran.results.into_iter().map(|r| (r.call_id.clone(), r)));
        }
        let mut parts = Vec::new();
        for request in &run.requests {
            let Some(answer) = &request.answer else {
                continue;
            };
            let spec = &request.spec;
            let text = answer.text.clone().unwrap_or_default();
            match spec.kind {
                RequestKind::Question if spec.tool_name != super::ask::ASK_USER => {
                    // A relayed answer that is not its call's last says nothing.
                    let request = spec.arguments.clone();
                    parts.extend(
                        self.relayed_answer(agent, history, run, spec, request, text)
                            .await,
                    );
                }
                RequestKind::Approval if relayed(spec) => {
                    // A subagent's approval its `task` call relayed (ADR 0392):
                    // the tool gives the decision to the child; nothing runs here.
                    let mut request = spec.arguments.clone().unwrap_or_else(|| json!({}));
                    if let Some(fields) = request.as_object_mut() {
                        fields.insert(
                            "approved".to_owned(),
                            Value::Bool(answer.approved == Some(true)),
                        );
                    }
                    parts.extend(
                        self.relayed_answer(agent, history, run, spec, Some(request), text)
                            .await,
                    );
                }
                RequestKind::Question => parts.push(text),
                RequestKind::Approval if answer.approved == Some(true) => {
                    parts.push(match outputs.remove(&spec.call_id) {
                        Some(result) => format!(
                            "I approved the call {} ({}); it ran. Its result{}:\n{}",
                            spec.call_id,
                            spec.tool_name,
                            if result.is_error { " (an error)" } else { "" },
                            result.content
                        ),
                        None => format!(
                            "I approved the call {} ({}), but it could not be found to run.",
                            spec.call_id, spec.tool_name
                        ),
                    });
                }
                RequestKind::Approval => parts.push(if text.is_empty() {
                    format!(
                        "I declined the call {} ({}); do not run it.",
                        spec.call_id, spec.tool_name
                    )
                } else {
                    format!(
                        "I declined the call {} ({}): {text}",
                        spec.call_id, spec.tool_name
                    )
                }),
            }
        }
        parts.join("\n\n")
    }

    /// What the model reads of the answer `text` to a question (or the
    /// decision on an approval, ADR 0392) a tool's call relayed (ADR 0385): what the tool made of it, or the bare answer when
    /// the tool takes none.
    async fn relayed_answer(
        &self,
        agent: &Agent,
        history: &[Message],
        run: &RunRecord,
        spec: &RequestSpec,
        request: Option<Value>,
        text: String,
    ) -> Option<String> {
        let call = history
            .iter()
            .rev()
            .flat_map(|m| m.tool_calls())
            .find(|c| c.id == spec.call_id && c.name == spec.tool_name);
        let (Some(call), Some(tool)) = (call, agent.tools().get(&spec.tool_name)) else {
            return Some(text);
        };
        let cx = crate::tool::CallContext {
            run_id: Arc::from(run.run_id.as_str()),
            call_id: call.id.clone(),
        };
        let taken = tool
            .answered(&cx, call.arguments.clone(), request.as_ref(), &text)
            .await;
        let output = match taken {
            None => return Some(text),
            Some(Ok(output)) => output,
            Some(Err(e)) => crate::tool::ToolOutput::refused(format!(
                "The tool {} failed: {e}.",
                spec.tool_name
            )),
        };
        if output.text.is_empty() {
            return None;
        }
        Some(format!(
            "I answered the question of the call {} ({}). What came of it{}:\n{}",
            spec.call_id,
            spec.tool_name,
            if output.is_error { " (an error)" } else { "" },
            output.text
        ))
    }
}

/// Whether the approval `spec` is one a tool's call relayed for another run
/// (a subagent's, ADR 0392): its id is not its call's, as a call's own
/// approval's is.
fn relayed(spec: &RequestSpec) -> bool {
    spec.id != spec.call_id
}
