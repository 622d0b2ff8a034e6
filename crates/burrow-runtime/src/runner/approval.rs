//! Approvals answered: what the answers to a paused run's requests say as the user's next message, the approved calls run through the call pipeline (ADRs 0241, 0242).

use std::collections::HashMap;
use std::sync::Arc;

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
}
