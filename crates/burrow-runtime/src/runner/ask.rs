//! The `ask_user` tool: a question to the thread's people that pauses the run durably until someone answers; the answer reaches the model as the user's next message.

use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use burrow_backend::Error;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::tool::{CallContext, Tool, ToolAnnotations};
use crate::tool::{ToolOutput, schema_of};

/// The tool's name.
pub const ASK_USER: &str = "ask_user";

/// What the model reads as the result of its question; the answer follows as
/// the user's next message once someone answers.
pub const ASKED: &str = "The question was sent to the user and the run pauses until they answer; their answer follows as their next message.";

/// The arguments of `ask_user`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
pub struct AskArgs {
    /// The question, as the user should read it.
    pub question: String,
}

/// What kind of answer a pending request waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestKind {
    /// A question (`ask_user`): any text answers it.
    Question,
    /// An approval (a hook's `ask`): approved or declined, with an optional reason.
    Approval,
}

/// A request that a paused run waits for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingRequest {
    /// The request's id: the id of the tool call that made it.
    pub request_id: String,
    /// Question or approval.
    pub kind: RequestKind,
    /// The tool that was called (`ask_user`, or the tool awaiting approval).
    pub tool_name: String,
    /// The question, or why approval is needed.
    pub text: String,
    /// For an approval: the arguments the call runs with once approved, when
    /// a hook's `updatedInput` replaced the model's. For a question a tool
    /// relays (a subagent's `ask_parent`): what the tool needs to take the
    /// answer on, and what the person is shown (ADR 0385).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    /// The tool call the request belongs to, when it is not `request_id`
    /// (a call that asks more than once over its run's segments).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}

impl From<crate::agent::PendingApproval> for PendingRequest {
    fn from(approval: crate::agent::PendingApproval) -> Self {
        Self {
            request_id: approval.call_id,
            kind: RequestKind::Approval,
            tool_name: approval.tool_name,
            text: approval.reason,
            arguments: approval.arguments,
            call_id: None,
        }
    }
}

/// The questions asked during one batch, collected for the runner.
#[derive(Debug, Default)]
pub(crate) struct Asked {
    pending: Mutex<Vec<PendingRequest>>,
}

impl Asked {
    /// True when no question is waiting to be taken.
    pub(crate) fn is_empty(&self) -> bool {
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_empty()
    }

    /// How many questions wait to be taken.
    pub(crate) fn len(&self) -> usize {
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Takes the questions asked since the last call.
    pub(crate) fn take(&self) -> Vec<PendingRequest> {
        std::mem::take(&mut *self.pending.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

tokio::task_local! {
    /// The questions of the run segment whose calls run in this task.
    static ASKING: Arc<Asked>;
}

/// Runs `f` (a segment's model loop, or its answers' follow-up) with
/// `asked` as the place where [`ask_in_run`] puts questions.
pub(crate) async fn asking<F: std::future::Future>(asked: Arc<Asked>, f: F) -> F::Output {
    ASKING.scope(asked, f).await
}

/// Adds `request` (a question) to the requests the run segment making this
/// call pauses on once its batch ends, as `ask_user` does: the run pauses
/// durably and resumes when the request is answered (ADR 0385).
///
/// # Behavior
/// Returns how many questions the batch has asked with this one, or `None`
/// when the call does not run inside a runner's segment (an agent run by
/// hand cannot pause for an answer), in which case nothing is recorded.
pub(crate) fn ask_in_run(request: PendingRequest) -> Option<usize> {
    ASKING
        .try_with(|asked| {
            let mut pending = asked.pending.lock().unwrap_or_else(PoisonError::into_inner);
            pending.push(request);
            pending.len()
        })
        .ok()
}

/// How many questions the run segment making this call has asked in its
/// current batch (`None` outside a runner's segment).
pub(crate) fn asked_in_batch() -> Option<usize> {
    ASKING.try_with(|asked| asked.len()).ok()
}

/// `ask_user` for one run: each call records its question in `asked`.
pub(crate) struct AskUser {
    schema: Value,
    asked: Arc<Asked>,
}

impl AskUser {
    pub(crate) fn new(asked: Arc<Asked>) -> Self {
        Self {
            schema: schema_of::<AskArgs>(),
            asked,
        }
    }
}

#[async_trait]
impl Tool for AskUser {
    fn name(&self) -> &str {
        ASK_USER
    }

    fn description(&self) -> &str {
        "Ask the user a question when you cannot go on without their answer. The run pauses until they answer; their answer arrives as their next message."
    }

    fn input_schema(&self) -> &Value {
        &self.schema
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            read_only: true,
            destructive: false,
            idempotent: false,
        }
    }

    fn validate(&self, args: &Value) -> Result<(), String> {
        match serde_json::from_value::<AskArgs>(args.clone()) {
            Ok(a) if a.question.trim().is_empty() => {
                Err("The question is empty; say what you need to know.".to_owned())
            }
            Ok(_) => Ok(()),
            Err(e) => Err(format!(
                "The arguments for ask_user do not fit its schema ({e}); send {{\"question\": \"...\"}}."
            )),
        }
    }

    async fn call(&self, cx: &CallContext, args: Value) -> Result<ToolOutput, Error> {
        let args: AskArgs = match serde_json::from_value(args) {
            Ok(a) => a,
            Err(e) => {
                return Ok(ToolOutput::refused(format!(
                    "The arguments for ask_user do not fit its schema ({e}); send {{\"question\": \"...\"}}."
                )));
            }
        };
        self.asked
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(PendingRequest {
                request_id: cx.call_id.clone(),
                kind: RequestKind::Question,
                tool_name: ASK_USER.to_owned(),
                text: args.question,
                arguments: None,
                call_id: None,
            });
        Ok(ToolOutput::ok(ASKED))
    }
}
