//! The synchronous `task` tool: runs a child agent in the thread `PARENT/task-CALL` through a runner of its own, to its end, and answers with its final text and a usage line (ADR 0272).

use std::sync::Arc;
use std::time::Duration;

use burrow_backend::Error;
use futures::stream::BoxStream;
use schemars::JsonSchema;
use serde::Deserialize;

use super::SubAgent;
use super::background::Board;
use crate::agent::{Agent, Outcome, RunResult};
use crate::hooks::{HookContext, Hooks};
use crate::message::{AssistantPart, Message, Usage};
use crate::model::Model;
use crate::runner::{
    DEFAULT_CLAIM_TTL, LiveChannel, LiveEvent, LiveFrame, RunHandle, Runner, RunnerConfig,
    RunnerErrorKind,
};
use crate::session::{RunRecord, RunStatus, Scope, SessionStore, ThreadKey};
use crate::tool::{CallContext, FnTool, Tool, ToolAnnotations, ToolOutput, ToolRegistry};

/// The tool's name.
pub const TASK: &str = "task";

/// The subagent a `task` call without `subagent_type` runs: the parent's
/// model and tools, no instructions of its own (unless a definition takes the name).
pub const GENERAL_PURPOSE: &str = "general-purpose";

/// How deep tasks nest by default: 1, a child has no `task` tool.
pub const DEFAULT_MAX_DEPTH: usize = 1;

/// The most model requests a child makes by default.
pub const DEFAULT_CHILD_MAX_TURNS: usize = 50;

/// How many children of one [`Tasks`] run at once by default; more wait.
pub const DEFAULT_MAX_CONCURRENT: usize = 4;

/// The author of the prompt posted to a child's thread.
pub const CHILD_MESSAGE_AUTHOR: &str = "task";

/// The run label naming the parent run of a child's run.
pub const PARENT_RUN_LABEL: &str = "burrow.parent_run";
/// The run label naming the subagent a child runs.
pub const SUBAGENT_LABEL: &str = "burrow.subagent";
/// The run label naming the parent's `task` call.
pub const TASK_CALL_LABEL: &str = "burrow.task_call";

/// The longest final text a result carries before it is cut (characters).
const MAX_RESULT_CHARS: usize = 80_000;

/// `task`'s arguments, Claude Code's Agent tool's.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskArgs {
    /// A short (3-5 word) description of the task.
    pub description: String,
    /// The task for the subagent: everything it needs to know, since it sees
    /// nothing of this conversation.
    pub prompt: String,
    /// Which subagent runs it (general-purpose when left out).
    #[serde(default)]
    pub subagent_type: Option<String>,
    /// Run it in the background and return at once with its task id; its
    /// report comes as a message once it ends.
    #[serde(default)]
    pub run_in_background: bool,
}

/// What a `task` call's child does, for a front end to print (nested under
/// the parent's call).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum TaskEvent {
    /// A child run (segment) started.
    Started {
        /// The child's run id.
        run_id: String,
        /// The parent's run id.
        parent_run_id: String,
        /// The child's thread.
        thread_id: String,
        /// The subagent it runs.
        subagent_type: String,
        /// The call's description.
        description: String,
    },
    /// A live frame of the child's run.
    Frame {
        /// The child's run id.
        run_id: String,
        /// The parent's run id.
        parent_run_id: String,
        /// What happened.
        event: LiveEvent,
    },
    /// The child ended.
    Ended {
        /// The child's run id.
        run_id: String,
        /// The parent's run id.
        parent_run_id: String,
        /// The child's thread.
        thread_id: String,
        /// The subagent it ran.
        subagent_type: String,
        /// `completed`, `failed`, `paused` or `stopped`.
        outcome: String,
        /// Why, when it did not complete.
        reason: Option<String>,
        /// Its model requests (0 when only its record was read).
        turns: usize,
        /// Its tool calls (0 when only its record was read).
        tool_calls: usize,
        /// Its usage.
        usage: Usage,
    },
}

/// Where [`TaskEvent`]s go; called from the child's run, so it must not block.
pub type TaskEventSink = Arc<dyn Fn(TaskEvent) + Send + Sync>;

/// The thread of the child of call `call_id` of a run in thread `parent`.
pub fn child_thread(parent: &str, call_id: &str) -> String {
    format!("{parent}/task-{call_id}")
}

/// What a [`ChildSetup`] is told of the child whose agent it completes.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Child<'a> {
    /// The child's thread (`PARENT/task-CALL`, [`child_thread`]).
    pub thread: &'a ThreadKey,
    /// The tools its definition names (`None`: it takes every tool offered).
    pub tools: Option<&'a [String]>,
}

/// Completes a child's agent once its tools, hooks and limits are set: for
/// what a caller gives children that must know which child it is (the
/// artifact workspace names its agent after the child's thread).
pub type ChildSetup = Arc<dyn Fn(Agent, Child<'_>) -> Agent + Send + Sync>;

/// The subagents a parent may start and how: the `task` tool's setup.
#[derive(Clone)]
pub struct Tasks {
    pub(super) inner: Arc<Inner>,
}

pub(super) struct Inner {
    pub(super) agents: Vec<SubAgent>,
    pub(super) model: Arc<dyn Model>,
    pub(super) tools: ToolRegistry,
    pub(super) hooks: Hooks,
    pub(super) store: Arc<dyn SessionStore>,
    pub(super) scope: Scope,
    pub(super) max_depth: usize,
    pub(super) max_turns: usize,
    /// Each child's most tokens per run (`None`: no bound, ADR 0386).
    pub(super) max_tokens: Option<u64>,
    pub(super) claim_ttl: Duration,
    pub(super) events: Option<TaskEventSink>,
    pub(super) slots: Arc<tokio::sync::Semaphore>,
    pub(super) children: Children,
    pub(super) board: Arc<Board>,
    /// How children compact their histories (the parent's settings, ADR 0296).
    pub(super) compaction: Option<crate::compaction::CompactionConfig>,
    /// Where a final text past the large-result limit is saved (the parent's file tools).
    pub(super) spill: Option<Arc<crate::tools::Toolset>>,
    /// What completes each child's agent ([`Tasks::with_child_setup`]).
    pub(super) child_setup: Option<ChildSetup>,
    /// Each definition's children's tools by nesting depth, built once
    /// (issue 26: a task rebuilt them, copying every schema, per call).
    pub(super) child_tools: ChildTools,
}

/// The tools of a definition's children (by its name and their depth),
/// before the per-child `ask_parent`.
pub(super) type ChildTools =
    std::sync::Mutex<std::collections::HashMap<(String, usize), ToolRegistry>>;

/// The runners of the children running now, by a number of their own, so
/// [`Tasks::aclose`] can stop them and wait for their ends.
pub(super) type Children = Arc<std::sync::Mutex<std::collections::HashMap<u64, Runner>>>;

pub(super) static NEXT_CHILD: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tasks")
            .field("agents", &self.inner.agents)
            .field("max_depth", &self.inner.max_depth)
            .field("max_turns", &self.inner.max_turns)
            .field("max_tokens", &self.inner.max_tokens)
            .finish_non_exhaustive()
    }
}

impl Tasks {
    /// Children of `agents` (plus [`GENERAL_PURPOSE`] unless one takes the
    /// name) running by default with `model`, as runs of `store` in `scope`;
    /// no tools, no hooks, the default bounds.
    pub fn new(
        agents: Vec<SubAgent>,
        model: Arc<dyn Model>,
        store: Arc<dyn SessionStore>,
        scope: Scope,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                agents,
                model,
                tools: ToolRegistry::new(),
                hooks: Hooks::new(),
                store,
                scope,
                max_depth: DEFAULT_MAX_DEPTH,
                max_turns: DEFAULT_CHILD_MAX_TURNS,
                max_tokens: None,
                claim_ttl: DEFAULT_CLAIM_TTL,
                events: None,
                slots: Arc::new(tokio::sync::Semaphore::new(DEFAULT_MAX_CONCURRENT)),
                children: Children::default(),
                board: Arc::default(),
                compaction: None,
                spill: None,
                child_setup: None,
                child_tools: ChildTools::default(),
            }),
        }
    }

    fn edit(mut self, f: impl FnOnce(&mut Inner)) -> Self {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            f(inner);
            // What the children's tools were built from may have changed.
            inner.child_tools = ChildTools::default();
            return self;
        }
        let old = &self.inner;
        let mut inner = Inner {
            agents: old.agents.clone(),
            model: old.model.clone(),
            tools: old.tools.clone(),
            hooks: old.hooks.clone(),
            store: old.store.clone(),
            scope: old.scope.clone(),
            max_depth: old.max_depth,
            max_turns: old.max_turns,
            max_tokens: old.max_tokens,
            claim_ttl: old.claim_ttl,
            events: old.events.clone(),
            slots: old.slots.clone(),
            children: old.children.clone(),
            board: old.board.clone(),
            compaction: old.compaction.clone(),
            spill: old.spill.clone(),
            child_setup: old.child_setup.clone(),
            child_tools: ChildTools::default(),
        };
        f(&mut inner);
        Self {
            inner: Arc::new(inner),
        }
    }

    /// The same, children picking their tools among `tools` (by default all of them).
    pub fn with_tools(self, tools: ToolRegistry) -> Self {
        self.edit(|i| i.tools = tools)
    }

    /// The same, with `hooks` deciding children's calls too and
    /// `SubagentStop` fired from them.
    pub fn with_hooks(self, hooks: Hooks) -> Self {
        self.edit(|i| i.hooks = hooks)
    }

    /// The same, tasks nesting `depth` deep (at least 1: 1 means a child has no `task` tool).
    pub fn with_max_depth(self, depth: usize) -> Self {
        self.edit(|i| i.max_depth = depth.max(1))
    }

    /// The same, each child making at most `n` model requests (at least 1).
    pub fn with_child_max_turns(self, n: usize) -> Self {
        self.edit(|i| i.max_turns = n.max(1))
    }

    /// The same, each child's run stopped once its tokens (input plus
    /// output, as its model reports them) pass `n`
    /// ([`Agent::with_max_run_tokens`]): its result is then an error whose
    /// reason is `max_run_tokens`.
    pub fn with_child_max_tokens(self, n: u64) -> Self {
        self.edit(|i| i.max_tokens = Some(n))
    }

    /// The same, at most `n` children running at once (at least 1); more wait.
    pub fn with_max_concurrent(self, n: usize) -> Self {
        self.edit(|i| i.slots = Arc::new(tokio::sync::Semaphore::new(n.max(1))))
    }

    /// The same, children's runners claiming their threads for `ttl`.
    pub fn with_claim_ttl(self, ttl: Duration) -> Self {
        self.edit(|i| i.claim_ttl = ttl)
    }

    /// The same, children compacting their histories as `config` says
    /// ([`Tasks::install`] gives them the parent agent's settings unless set here).
    pub fn with_compaction(self, config: crate::compaction::CompactionConfig) -> Self {
        self.edit(|i| i.compaction = Some(config))
    }

    /// The same, a child's final text longer than `toolset`'s large-result
    /// limit saved to a file of its workspace and replaced by a preview and
    /// the file's path, as the file tools' large results are (without it,
    /// the text is cut at 80,000 characters).
    pub fn with_spill(self, toolset: Arc<crate::tools::Toolset>) -> Self {
        self.edit(|i| i.spill = Some(toolset))
    }

    /// The same, each child's agent (at every depth) passed through `setup`
    /// last, with the child's thread and the tools its definition names.
    pub fn with_child_setup(self, setup: ChildSetup) -> Self {
        self.edit(|i| i.child_setup = Some(setup))
    }

    /// The same, sending what children do to `sink`.
    pub fn with_events(self, sink: TaskEventSink) -> Self {
        self.edit(|i| i.events = Some(sink))
    }

    /// Stops every child still running (those of calls dropped with their
    /// parent's run: their stop was asked as the call was dropped) and waits
    /// until each has recorded its end, so a process that exits after its
    /// parent's run leaves no child behind running.
    pub async fn aclose(&self) {
        self.cancel_background().await;
        let runners: Vec<Runner> = lock(&self.inner.children).values().cloned().collect();
        for runner in runners {
            runner.aclose().await;
        }
    }

    /// The definitions, [`GENERAL_PURPOSE`] first unless one takes its name.
    pub fn agents(&self) -> Vec<SubAgent> {
        let mut all = Vec::with_capacity(self.inner.agents.len() + 1);
        if !self
            .inner
            .agents
            .iter()
            .any(|a| a.name() == GENERAL_PURPOSE)
        {
            all.push(SubAgent::new(burrow_types::SubAgentConfig::new(
                GENERAL_PURPOSE,
                "A general agent with your tools, for research and multi-step work.",
                "",
            )));
        }
        all.extend(self.inner.agents.iter().cloned());
        all
    }

    /// `Err` with one sentence when a definition names a tool the children
    /// cannot get, or two definitions share a name.
    pub fn check(&self) -> Result<(), String> {
        let mut seen = std::collections::HashSet::new();
        for agent in &self.inner.agents {
            if !seen.insert(agent.name()) {
                return Err(format!(
                    "two subagents are named {}; names must be unique",
                    agent.name()
                ));
            }
            for tool in agent.tools.iter().flatten() {
                if self.inner.tools.get(tool).is_none() {
                    let names: Vec<&str> = self.inner.tools.names().collect();
                    return Err(format!(
                        "the subagent {} names the tool {tool}, which subagents cannot get; the tools are: {}",
                        agent.name(),
                        names.join(", ")
                    ));
                }
            }
        }
        Ok(())
    }

    /// The `task` tool, its children nesting down to the depth bound.
    pub fn tool(&self) -> Arc<dyn Tool> {
        self.tool_at(self.inner.max_depth)
    }

    pub(super) fn tool_at(&self, depth: usize) -> Arc<dyn Tool> {
        let tasks = self.clone();
        let inner = FnTool::new(TASK, self.description(), move |args: TaskArgs, cx| {
            let tasks = tasks.clone();
            async move { tasks.call(args, cx, depth).await }
        })
        .with_annotations(ToolAnnotations {
            read_only: false,
            destructive: false,
            // A call run again (after a crash) finds its child, not a new one.
            idempotent: true,
        });
        Arc::new(super::relay::TaskTool {
            inner,
            tasks: self.clone(),
            depth,
        })
    }

    /// `agent` with the `task` tool; children compact as `agent` does
    /// unless [`Tasks::with_compaction`] said otherwise.
    pub fn install(&self, agent: Agent) -> Agent {
        let this = match (&self.inner.compaction, agent.compaction()) {
            (None, Some(config)) => self.clone().with_compaction(config.clone()),
            _ => self.clone(),
        };
        let mut tools = agent.tools().clone();
        tools.add_arc(this.tool());
        this.add_background_tools(&mut tools);
        agent
            .with_tools(tools)
            .with_capability(this.background_capability(this.inner.max_depth))
    }

    fn description(&self) -> String {
        let mut text = String::from(
            "Start a subagent on a task and wait for its final report. The subagent sees \
only `prompt` (not this conversation), runs with its own tools, and answers with one final \
text, which is this call's result. Use it for independent work whose details you do not need \
to keep. Give a short `description` and a complete `prompt`. With `run_in_background: true` \
the call returns at once with a task id, the subagent works on while you go on, and its report \
comes to you as a message once it ends (`task_status` shows it, `task_cancel` stops it). The \
subagents (`subagent_type`):",
        );
        for agent in self.agents() {
            text.push_str(&format!(
                "\n- {}: {}",
                agent.name(),
                agent.config.description
            ));
        }
        text
    }

    pub(super) fn find_agent(&self, name: &str) -> Option<SubAgent> {
        self.agents().into_iter().find(|a| a.name() == name)
    }

    /// The tools of `def`'s children at nesting `depth` (its parent's),
    /// before the per-child `ask_parent`. Those of children that start no
    /// subagents (depth 1) are built once, then copied cheaply (tools and
    /// schemas shared); nesting children's hold a `task` tool that holds
    /// these `Tasks`, so they are built per child (kept, they would keep
    /// `Tasks` alive).
    fn child_tools(&self, def: &SubAgent, depth: usize) -> ToolRegistry {
        let inner = &self.inner;
        let key = (def.name().to_owned(), depth);
        if let Some(tools) = lock_tools(&inner.child_tools).get(&key) {
            return tools.clone();
        }
        let mut tools = ToolRegistry::new();
        match &def.tools {
            Some(names) => {
                for name in names {
                    if let Some(tool) = inner.tools.get(name) {
                        tools.add_arc(tool.clone());
                    } else if let Some((_, why)) = inner.tools.absent().find(|(n, _)| n == name) {
                        // Withheld from the parent too (plan mode): say why.
                        tools.note_absent(name.clone(), why);
                    }
                }
            }
            None => {
                for tool in inner.tools.tools() {
                    tools.add_arc(tool.clone());
                }
                for (name, why) in inner.tools.absent() {
                    tools.note_absent(name, why);
                }
            }
        }
        if depth > 1 {
            tools.add_arc(self.tool_at(depth - 1));
            self.add_background_tools(&mut tools);
        } else {
            tools.note_absent(
                TASK,
                format!(
                    "a subagent starts no subagents: tasks nest at most {} deep",
                    inner.max_depth
                ),
            );
        }
        if depth <= 1 {
            lock_tools(&inner.child_tools).insert(key, tools.clone());
        }
        tools
    }

    /// The child agent of `def` at nesting `depth` (its parent's), running in `thread`.
    pub(super) fn child_agent(
        &self,
        def: &SubAgent,
        depth: usize,
        asks: Option<&str>,
        thread: &ThreadKey,
    ) -> Agent {
        let inner = &self.inner;
        let mut tools = self.child_tools(def, depth);
        if def.config.can_ask_questions == Some(true) {
            tools.add_arc(match asks {
                Some(task_id) => self.ask_tool(task_id, def.config.max_questions),
                // A synchronous task's question pauses the parent's run (ADR 0385).
                None => self.sync_ask_tool(thread, def.config.max_questions),
            });
        }
        let nests = depth > 1;
        let model = def.model.clone().unwrap_or_else(|| inner.model.clone());
        let mut agent = Agent::new(model)
            .with_tools(tools)
            .with_hooks(inner.hooks.clone())
            .with_max_turns(inner.max_turns);
        if let Some(n) = inner.max_tokens {
            agent = agent.with_max_run_tokens(n);
        }
        if !def.config.instructions.is_empty() {
            agent = agent.with_instructions(def.config.instructions.clone());
        }
        if nests {
            agent = agent.with_capability(self.background_capability(depth - 1));
        }
        if let Some(config) = &inner.compaction {
            agent = agent.with_compaction(config.clone());
        }
        if let Some(setup) = &inner.child_setup {
            agent = setup(
                agent,
                Child {
                    thread,
                    tools: def.tools.as_deref(),
                },
            );
        }
        agent
    }

    async fn call(
        &self,
        args: TaskArgs,
        cx: CallContext,
        depth: usize,
    ) -> Result<ToolOutput, Error> {
        let inner = &self.inner;
        if args.prompt.trim().is_empty() {
            return Ok(ToolOutput::refused(
                "The task's prompt is empty: give the subagent everything it needs to know, and call task again.",
            ));
        }
        let name = args
            .subagent_type
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| GENERAL_PURPOSE.to_owned());
        let Some(def) = self.find_agent(&name) else {
            let names: Vec<String> = self.agents().iter().map(|a| a.name().to_owned()).collect();
            return Ok(ToolOutput::refused(format!(
                "There is no subagent named \"{}\"; the subagents are: {}.",
                name.chars().take(100).collect::<String>(),
                names.join(", ")
            )));
        };
        if args.run_in_background {
            return self.start_background(args, cx, depth, name, def).await;
        }
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
            &cx,
            &name,
            &args.description,
            &thread,
        );
        let guard = StopOnDrop::register(&runner, &thread, &inner.children);
        let ended = run_child(&runner, &thread, &args.prompt).await;
        runner.aclose().await;
        guard.finish();
        let ended = ended.map_err(|e| store_failure(&e))?;
        if ended.outcome == RunStatus::Paused.as_str()
            && let Some(asks) = self.relay_questions(&name, &thread, &cx).await?
        {
            // The parent's run pauses on the child's question (ADR 0385).
            self.emit_ended(&name, &thread, &cx.run_id, &ended);
            return Ok(ToolOutput::ok(asks));
        }
        let out = self
            .report(&name, &thread, parent_thread, &cx, &ended, true)
            .await;
        self.emit_ended(&name, &thread, &cx.run_id, &ended);
        out
    }

    /// The thread of the parent run `run_id`: its session thread, or its run
    /// id for a run outside a session.
    pub(super) async fn parent_thread(&self, run_id: &str) -> Result<String, Error> {
        match self.inner.store.run(&self.inner.scope, run_id).await {
            Ok(Some(run)) => Ok(run.thread),
            Ok(None) => Ok(run_id.to_owned()),
            Err(e) => Err(store_failure(&e)),
        }
    }

    /// The runner of the child `agent` of call `cx` in `thread`.
    pub(super) fn child_runner(
        &self,
        agent: Agent,
        cx: &CallContext,
        name: &str,
        description: &str,
        thread: &ThreadKey,
    ) -> Runner {
        let inner = &self.inner;
        let live = ChildLive {
            sink: inner.events.clone(),
            parent_run_id: cx.run_id.to_string(),
            thread_id: thread.thread.clone(),
            subagent_type: name.to_owned(),
            description: description.to_owned(),
        };
        let config = RunnerConfig::default()
            .with_claim_ttl(inner.claim_ttl)
            .with_live(Arc::new(live))
            .with_run_label(PARENT_RUN_LABEL, cx.run_id.to_string())
            .with_run_label(SUBAGENT_LABEL, name.to_owned())
            .with_run_label(TASK_CALL_LABEL, cx.call_id.clone());
        Runner::with_config(agent, inner.store.clone(), config)
    }

    /// The result of a child that ended `ended`: its final text and usage
    /// line, or an error with its reason; fires `SubagentStop` (when
    /// `stop_hook`).
    pub(super) async fn report(
        &self,
        name: &str,
        thread: &ThreadKey,
        parent_thread: String,
        cx: &CallContext,
        ended: &ChildEnd,
        stop_hook: bool,
    ) -> Result<ToolOutput, Error> {
        let inner = &self.inner;
        let parent_run_id: &str = &cx.run_id;
        let mut text = final_text(&*inner.store, thread)
            .await
            .map_err(|e| store_failure(&e))?;
        if ended.outcome == RunStatus::Completed.as_str() {
            text = match &inner.spill {
                Some(toolset) => {
                    let call = crate::tools::Call::new(toolset.context(), cx);
                    toolset.spill(TASK, text, &call).await?.0
                }
                None => cut(&text, MAX_RESULT_CHARS),
            };
        }
        let hook_cx = HookContext {
            session_id: parent_thread,
            run_id: parent_run_id.to_owned(),
        };
        if stop_hook && inner.hooks.has_event(crate::hooks::HookEvent::SubagentStop) {
            inner
                .hooks
                .subagent_stop(&hook_cx, &ended.run_id, name, None)
                .await;
        }
        Ok(result(name, &thread.thread, ended, text))
    }

    /// Sends the `Ended` event of the child in `thread`.
    pub(super) fn emit_ended(
        &self,
        name: &str,
        thread: &ThreadKey,
        parent_run_id: &str,
        ended: &ChildEnd,
    ) {
        if let Some(sink) = &self.inner.events {
            sink(TaskEvent::Ended {
                run_id: ended.run_id.clone(),
                parent_run_id: parent_run_id.to_owned(),
                thread_id: thread.thread.clone(),
                subagent_type: name.to_owned(),
                outcome: ended.outcome.clone(),
                reason: ended.reason.clone(),
                turns: ended.turns,
                tool_calls: ended.tool_calls,
                usage: ended.usage,
            });
        }
    }
}

/// Stops the child's run when the call is dropped before its end (the
/// parent's run was stopped, cancelled or lost its claim): the child's calls
/// in flight end cancelled and it makes no more model requests. The runner
/// stays among the [`Children`] until it has closed, so [`Tasks::aclose`]
/// can wait for the child's end.
pub(super) struct StopOnDrop {
    pub(super) runner: Runner,
    pub(super) thread: ThreadKey,
    pub(super) children: Children,
    pub(super) id: u64,
    pub(super) done: bool,
}

impl StopOnDrop {
    /// The guard of `runner`'s child in `thread`, registered among `children`.
    pub(super) fn register(runner: &Runner, thread: &ThreadKey, children: &Children) -> Self {
        let guard = Self {
            runner: runner.clone(),
            thread: thread.clone(),
            children: children.clone(),
            id: NEXT_CHILD.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            done: false,
        };
        lock(&guard.children).insert(guard.id, guard.runner.clone());
        guard
    }

    /// The child ended and its runner closed: nothing to stop.
    pub(super) fn finish(mut self) {
        lock(&self.children).remove(&self.id);
        self.done = true;
    }
}

fn lock_tools(
    tools: &ChildTools,
) -> std::sync::MutexGuard<'_, std::collections::HashMap<(String, usize), ToolRegistry>> {
    match tools.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

pub(super) fn lock(
    children: &Children,
) -> std::sync::MutexGuard<'_, std::collections::HashMap<u64, Runner>> {
    match children.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        if let Some(handle) = self.runner.running(&self.thread) {
            self.runner.stop(&self.thread.scope, handle.run_id());
        }
        // Closed in the background; `Tasks::aclose` waits for it too.
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let runner = self.runner.clone();
            let children = self.children.clone();
            let id = self.id;
            rt.spawn(async move {
                runner.aclose().await;
                lock(&children).remove(&id);
            });
        }
    }
}

/// How a child ended, from its run's result or its record.
#[derive(Debug, Clone)]
pub(super) struct ChildEnd {
    pub(super) run_id: String,
    /// `completed`, `failed`, `paused` or `stopped`.
    pub(super) outcome: String,
    /// The stable reason, when it did not complete.
    pub(super) reason: Option<String>,
    /// The failure's sentence, if any.
    pub(super) message: Option<String>,
    pub(super) turns: usize,
    pub(super) tool_calls: usize,
    pub(super) usage: Usage,
}

impl ChildEnd {
    pub(super) fn of_result(r: &RunResult) -> Self {
        Self {
            run_id: r.run_id.clone(),
            outcome: r.outcome.name().to_owned(),
            reason: r.outcome.reason().map(str::to_owned),
            message: match &r.outcome {
                Outcome::Failed { message, .. } => Some(message.clone()),
                _ => None,
            },
            turns: r.turns,
            tool_calls: r.tool_calls,
            usage: r.usage,
        }
    }

    pub(super) fn of_record(r: &RunRecord) -> Self {
        Self {
            run_id: r.run_id.clone(),
            outcome: r.status.as_str().to_owned(),
            reason: r.reason.clone(),
            message: r.failure.clone(),
            turns: 0,
            tool_calls: 0,
            usage: r.usage,
        }
    }
}

/// What a child whose run was left behind (its process died) is told, in a
/// new run of its thread, when the parent's call runs again.
pub const RESUME_TEXT: &str = "Your previous run was interrupted before it ended. Go on with the task from where you stopped, then give your final report.";

/// Starts the child (posting `prompt` once: its message id is the
/// thread's), or finds it again when the call runs a second time, and waits
/// for its end. A child that ended before is not run again; one whose run
/// was left behind abandoned goes on in a new run of its thread, with its
/// history, told [`RESUME_TEXT`].
pub(super) async fn run_child(
    runner: &Runner,
    thread: &ThreadKey,
    prompt: &str,
) -> Result<ChildEnd, crate::session::StoreError> {
    let message_id = format!("{}#prompt", thread.thread);
    match runner
        .send(thread, CHILD_MESSAGE_AUTHOR, prompt, Some(&message_id))
        .await
    {
        Ok(sent) => return settle(runner, thread, sent.run).await,
        Err(e) if e.kind() != RunnerErrorKind::IdInUse => return Err(runner_failure(e)),
        Err(_) => {}
    }
    // Posted by an earlier attempt of this call: take up what is left.
    let handle = runner.take_thread(thread).await.map_err(runner_failure)?;
    let end = settle(runner, thread, handle).await?;
    if !(end.outcome == RunStatus::Failed.as_str() && end.reason.as_deref() == Some("abandoned")) {
        return Ok(end);
    }
    let runs = runner.store().runs(thread).await?.len();
    let resume_id = format!("{}#resume-{runs}", thread.thread);
    match runner
        .send(thread, CHILD_MESSAGE_AUTHOR, RESUME_TEXT, Some(&resume_id))
        .await
    {
        Ok(sent) => settle(runner, thread, sent.run).await,
        Err(e) if e.kind() == RunnerErrorKind::IdInUse => settle(runner, thread, None).await,
        Err(e) => Err(runner_failure(e)),
    }
}

/// Waits for the child's run: `handle` when this runner runs it, else its
/// record once it has settled (taking the thread over when its holder's
/// claim lapses).
pub(super) async fn settle(
    runner: &Runner,
    thread: &ThreadKey,
    handle: Option<RunHandle>,
) -> Result<ChildEnd, crate::session::StoreError> {
    if let Some(handle) = handle {
        return Ok(ChildEnd::of_result(&handle.wait().await));
    }
    loop {
        let runs = runner.store().runs(thread).await?;
        match runs.last() {
            Some(run) if run.status.is_ended() || run.status == RunStatus::Paused => {
                return Ok(ChildEnd::of_record(run));
            }
            Some(run) => {
                let run = runner
                    .wait_settled(thread, &run.run_id, Duration::from_millis(100))
                    .await
                    .map_err(runner_failure)?;
                if run.status.is_ended() || run.status == RunStatus::Paused {
                    return Ok(ChildEnd::of_record(&run));
                }
            }
            None => {
                if let Some(handle) = runner.take_thread(thread).await.map_err(runner_failure)? {
                    return Ok(ChildEnd::of_result(&handle.wait().await));
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

pub(super) fn runner_failure(e: crate::runner::RunnerError) -> crate::session::StoreError {
    crate::session::StoreError::new(
        crate::session::StoreErrorKind::Storage,
        format!("the subagent's runner failed: {}", e.message()),
    )
}

pub(super) fn store_failure(e: &crate::session::StoreError) -> Error {
    Error::failure_msg(format!("the subagent's session store failed: {e}"))
}

/// The child's final text: its last assistant message's text.
async fn final_text(
    store: &dyn SessionStore,
    thread: &ThreadKey,
) -> Result<String, crate::session::StoreError> {
    let history = store.history(thread, 0).await?;
    Ok(history
        .iter()
        .rev()
        .find_map(|e| match &e.message {
            Message::Assistant { parts } => {
                let text: String = parts
                    .iter()
                    .filter_map(|p| match p {
                        AssistantPart::Text { text } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect();
                (!text.trim().is_empty()).then_some(text)
            }
            _ => None,
        })
        .unwrap_or_default())
}

/// The call's result: the child's text and a usage line, or an error with
/// the reason it stopped.
fn result(name: &str, thread: &str, ended: &ChildEnd, text: String) -> ToolOutput {
    let mut usage = format!(
        "[subagent {name} {}: {}, {}, {}; thread {thread}]",
        ended.outcome,
        count(ended.turns, "turn"),
        count(ended.tool_calls, "tool call"),
        usage_text(&ended.usage)
    );
    if ended.turns == 0 && ended.tool_calls == 0 {
        // Read from the record of a run that ended before this call ran again.
        usage = format!(
            "[subagent {name} {}: {}; thread {thread}]",
            ended.outcome,
            usage_text(&ended.usage)
        );
    }
    if ended.outcome == RunStatus::Completed.as_str() {
        let body = if text.trim().is_empty() {
            "(The subagent ended without a final text.)".to_owned()
        } else {
            text
        };
        return ToolOutput::ok(format!("{body}\n\n{usage}"));
    }
    let why = match (&ended.reason, &ended.message) {
        (Some(reason), Some(message)) => format!("{reason}: {message}"),
        (Some(reason), None) => reason.clone(),
        (None, Some(message)) => message.clone(),
        (None, None) => "no reason recorded".to_owned(),
    };
    let mut text = format!(
        "The subagent {name} did not complete its task: it ended {} ({}).",
        ended.outcome,
        why.trim_end_matches('.')
    );
    if ended.outcome == RunStatus::Paused.as_str() {
        text.push_str(
            " A subagent that waits for an approval or asks a question cannot go on inside a task where its parent's run cannot pause for it (a run outside a runner).",
        );
    }
    text.push_str(&format!("\n\n{usage}"));
    ToolOutput::refused(text)
}

fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!(
            "{}\n[... the report was cut at {max} characters]",
            &text[..at]
        ),
        None => text.to_owned(),
    }
}

fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

fn usage_text(usage: &Usage) -> String {
    if usage.is_unknown() {
        return "usage unknown".to_owned();
    }
    let show = |n: Option<u64>| n.map_or_else(|| "unknown".to_owned(), |n| n.to_string());
    format!(
        "usage: {} input, {} output tokens",
        show(usage.input_tokens),
        show(usage.output_tokens)
    )
}

/// The child runner's live channel: every frame goes to the event sink,
/// with the child's and the parent's run ids; nothing is kept to watch.
struct ChildLive {
    sink: Option<TaskEventSink>,
    parent_run_id: String,
    thread_id: String,
    subagent_type: String,
    description: String,
}

impl LiveChannel for ChildLive {
    fn open(&self, run_id: &str) {
        if let Some(sink) = &self.sink {
            sink(TaskEvent::Started {
                run_id: run_id.to_owned(),
                parent_run_id: self.parent_run_id.clone(),
                thread_id: self.thread_id.clone(),
                subagent_type: self.subagent_type.clone(),
                description: self.description.clone(),
            });
        }
    }

    fn send(&self, frame: LiveFrame) {
        if let Some(sink) = &self.sink
            && !matches!(frame.event, LiveEvent::Started { .. })
        {
            sink(TaskEvent::Frame {
                run_id: frame.run_id,
                parent_run_id: self.parent_run_id.clone(),
                event: frame.event,
            });
        }
    }

    fn close(&self, _run_id: &str, _end: LiveEvent) {}

    fn watch(&self, _run_id: &str) -> Option<BoxStream<'static, LiveFrame>> {
        None
    }
}
