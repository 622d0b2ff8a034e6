//! Subagents (issue 26): definitions ([`SubAgent`], the seed's `SubAgentConfig` with its tools and model) and the synchronous `task` tool, whose child is a run in its own thread of the same session store (ADR 0271, 0272).
//!
//! A `task` call runs a child agent to its end in the thread
//! `PARENT/task-CALL` of the parent's store (the parent's thread, or its run
//! id for a run outside a session), through a [`Runner`](crate::runner::Runner)
//! of its own: the child is durable like any run, its history is its own
//! (it sees its instructions and the prompt, not the parent's
//! conversation), and it is found again, not started twice, when the
//! parent's call is run again after a crash. The call's result is the
//! child's final text and a usage line; a child that does not complete
//! makes the result an error with the reason.
//!
//! A call with `run_in_background` answers at once with its task id (the
//! child's thread); `task_status`, `task_cancel` and `task_answer` manage
//! the task, its report reaches the parent's history before the parent's
//! next model request, and a run waits for its tasks before it ends (ADR
//! 0275, 0276).

mod background;
mod relay;
mod task;

use std::sync::Arc;

use burrow_types::SubAgentConfig;

use crate::model::Model;

pub use background::{
    ASK_PARENT, AskParentArgs, DEFAULT_MAX_QUESTIONS, TASK_ANSWER, TASK_CANCEL, TASK_STATUS,
    TaskAnswerArgs, TaskIdArgs,
};
pub use relay::ASKED_PARENT;
pub use task::{
    CHILD_MESSAGE_AUTHOR, Child, ChildSetup, DEFAULT_CHILD_MAX_TURNS, DEFAULT_MAX_CONCURRENT,
    DEFAULT_MAX_DEPTH, GENERAL_PURPOSE, PARENT_RUN_LABEL, RESUME_TEXT, SUBAGENT_LABEL, TASK,
    TASK_CALL_LABEL, TaskArgs, TaskEvent, TaskEventSink, Tasks, child_thread,
};

/// A subagent definition: the seed's [`SubAgentConfig`] (name, description,
/// instructions, model, questions, preferred mode, complexity, context),
/// the tools it gets (the seed's `toolsets`, as names of the parent's
/// tools) and its model, resolved.
#[derive(Clone)]
pub struct SubAgent {
    /// The seed's configuration.
    pub config: SubAgentConfig,
    /// The names of the parent's tools the child gets; `None`: every tool
    /// the [`Tasks`] were given.
    pub tools: Option<Vec<String>>,
    /// The model the child runs with (`config.model` opened); `None`: the parent's.
    pub model: Option<Arc<dyn Model>>,
}

impl std::fmt::Debug for SubAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubAgent")
            .field("config", &self.config)
            .field("tools", &self.tools)
            .field("model", &self.model.as_ref().map(|m| m.name().to_owned()))
            .finish()
    }
}

impl SubAgent {
    /// A definition of `config` with the parent's tools and model.
    pub fn new(config: SubAgentConfig) -> Self {
        Self {
            config,
            tools: None,
            model: None,
        }
    }

    /// The same definition giving the child only the tools named `tools`.
    pub fn with_tools(mut self, tools: Vec<String>) -> Self {
        self.tools = Some(tools);
        self
    }

    /// The same definition running the child with `model`.
    pub fn with_model(mut self, model: Arc<dyn Model>) -> Self {
        self.model = Some(model);
        self
    }

    /// Its name (`subagent_type` in a `task` call).
    pub fn name(&self) -> &str {
        &self.config.name
    }
}
