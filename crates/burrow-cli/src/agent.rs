//! `burrow run`: an agent from `burrow-runtime` over the opened backend, its events printed as text and progress lines or as JSON lines (docs/adr/0123).
//!
//! The configuration (the model spec, the script, the hook settings) is
//! checked by [`Config::load`] before any backend is opened, so a bad one
//! is one sentence and exit 2 with nothing run. The run itself uses the
//! runtime's file tools over the backend, outside any save group: a
//! `state:FILE.json` workspace locks and saves every change by itself,
//! before the tool returns, so a tool result the model (or a `--json`
//! reader) sees is already on disk, as with `burrow mcp` (ADR 0112).

use std::collections::VecDeque;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use burrow::FileContext;
use burrow_runtime::ToolConfig;
use burrow_runtime::agent::{Agent, AgentEvent, CancelToken, Outcome, RunOptions, RunResult};
use burrow_runtime::hooks::{HookEvent, HookFailure, Hooks, Transcript};
use burrow_runtime::mcp::client::McpServers;
use burrow_runtime::message::{AssistantPart, Message, ToolCall, ToolResult, Usage};
use burrow_runtime::model::{Model, ScriptedModel};
use burrow_runtime::runner::{FanoutChannel, LiveChannel, LiveEvent, LiveFrame};
use burrow_runtime::session::{MemoryStore, Scope, SessionStore, ThreadKey};
use burrow_runtime::subagent::{SubAgent, TaskEvent, TaskEventSink, Tasks};
use burrow_runtime::team::{MemberDef, Team, TeamEvent, TeamHandle, TeamKey};
use burrow_runtime::tool::ToolRegistry;
use futures::StreamExt;
use serde::Serialize;
use serde_json::Value;

use crate::display;
use crate::output::Exit;
use crate::pipe;
use crate::spec::Opened;

/// Provider model specs (their adapters live in burrow-models, one cargo feature each).
const PROVIDERS: [&str; 3] = ["openai", "openai-responses", "anthropic"];

/// Longest argument summary a progress line shows (characters).
const SUMMARY_CHARS: usize = 80;

/// Live frames kept for the printer of a run this process drives: it reads
/// them as fast as the output queue takes them (docs/adr/0262).
pub const LIVE_FRAMES: usize = 1 << 16;

/// A run's configuration, checked before anything runs.
pub struct Config {
    model: Arc<dyn Model>,
    hooks: Hooks,
    max_turns: usize,
    /// The agent has `write_todos` (`--todos`).
    todos: bool,
    /// The agent has the memory tool (`--memory`).
    memory: bool,
    /// The files of `--upload`, listed in every request.
    uploads: Option<burrow_runtime::uploads::Uploads>,
    /// The skills of `--skills` and `--workspace-skills` (with `skill`), if given.
    skills: Option<Arc<burrow_runtime::skills::Skills>>,
    /// The subagents of `--agents DIR` (with `task`), if given.
    agents: Option<Vec<SubAgent>>,
    /// How deep tasks nest (`--max-task-depth`).
    task_depth: usize,
    /// Each child's most model requests (`--task-max-turns`).
    task_max_turns: usize,
    /// Each child's most tokens per run (`--task-max-tokens`; `None`: no bound).
    task_max_tokens: Option<u64>,
    /// How long a child's runner claims its thread (`--claim-ttl`).
    task_claim_ttl: Duration,
    /// The members of `--team FILE` (the agent leads them), if given.
    team: Option<Vec<MemberDef>>,
    /// The note for SubagentStop hooks, dropped once subagents are given.
    subagent_note: Option<String>,
    /// Notes for stderr (settings that name hooks burrow does not run).
    notes: Vec<String>,
    /// How the agent compacts its history (`--compact-at`, `--compact-keep`).
    compaction: burrow_runtime::compaction::CompactionConfig,
    /// Tool results past this many characters are spilled (`--large-result-tokens` × 4).
    large_result_chars: Option<usize>,
    /// The MCP servers of the settings' `mcpServers`, started (ADR 0313).
    mcp: Option<Arc<McpServers>>,
    /// Warnings for stderr (MCP servers that are not used).
    warnings: Vec<String>,
    /// The artifact workspace of `--artifacts DIR` (ADR 0332), if given.
    #[cfg(feature = "artifacts")]
    artifacts: Option<Arc<burrow_artifacts::tools::ArtifactWorkspace>>,
    /// The settings' permissions, which withhold tools (plan mode, bare deny rules).
    permissions: Option<Arc<burrow::permissions::Permissions>>,
    /// The tools annotated read-only, for the permission hook (ADR 0365).
    read_only: crate::permissions::ReadOnlyTools,
}

impl Config {
    /// Reads the model spec and the settings file; an `Err` is one sentence.
    pub fn load(
        model: &str,
        settings: &[PathBuf],
        max_turns: u32,
        request_timeout: Duration,
    ) -> Result<Config, String> {
        let model = open_model(model, request_timeout)?;
        let (hooks, notes) = match crate::settings_files::merged(settings)? {
            Some(merged) => load_hooks(&merged)?,
            None => (Hooks::new(), Vec::new()),
        };
        let subagent_note = hooks
            .has_event(HookEvent::SubagentStop)
            .then(|| "the settings name SubagentStop hooks, which run only for subagents (--agents DIR); they do not run".to_owned());
        Ok(Config {
            model,
            hooks,
            max_turns: usize::try_from(max_turns).unwrap_or(usize::MAX),
            todos: false,
            memory: false,
            uploads: None,
            skills: None,
            agents: None,
            task_depth: burrow_runtime::subagent::DEFAULT_MAX_DEPTH,
            task_max_turns: burrow_runtime::subagent::DEFAULT_CHILD_MAX_TURNS,
            task_max_tokens: None,
            task_claim_ttl: burrow_runtime::runner::DEFAULT_CLAIM_TTL,
            team: None,
            subagent_note,
            notes,
            compaction: burrow_runtime::compaction::CompactionConfig::default(),
            large_result_chars: None,
            mcp: None,
            warnings: Vec::new(),
            #[cfg(feature = "artifacts")]
            artifacts: None,
            permissions: None,
            read_only: crate::permissions::ReadOnlyTools::default(),
        })
    }

    /// The same configuration with the tools of the settings' `mcpServers`
    /// (stdio servers, started now, each call waiting at most `timeout`).
    /// A server that is not used is a warning naming it, or with `strict`
    /// (`--strict-mcp`) an `Err` (every server started is stopped); a
    /// `mcpServers` that cannot be read is an `Err`. Each is one sentence.
    /// Once servers run, `guard` says which signals kill them and end burrow.
    pub async fn with_mcp(
        mut self,
        settings: &[PathBuf],
        strict: bool,
        timeout: Duration,
        guard: crate::mcp_signals::Guard,
    ) -> Result<Self, String> {
        let Some(merged) = crate::settings_files::merged(settings)? else {
            return Ok(self);
        };
        let shown = &merged.shown;
        // `${VAR}` and `${VAR:-default}` from the environment (ADR 0322).
        let (value, unset) =
            burrow_runtime::mcp::expand::expand_servers(&merged.value, |v| std::env::var(v).ok());
        self.warnings.extend(unset);
        let (servers, mut failures) = burrow_runtime::mcp::client::servers_from_settings(&value)
            .map_err(|e| format!("{shown} cannot be used: {e}"))?;
        if servers.is_empty() && failures.is_empty() {
            return Ok(self);
        }
        let started = McpServers::start(&servers, timeout).await;
        failures.extend(started.failures().iter().cloned());
        if strict && let Some(failure) = failures.first() {
            started.close().await;
            return Err(format!("{failure} (--strict-mcp)"));
        }
        self.warnings.extend(
            failures
                .iter()
                .map(|f| format!("{f}; the run goes on without it")),
        );
        // SIGTERM and SIGHUP end burrow at once: the servers go first (ADR 0314).
        crate::mcp_signals::guard(guard);
        self.mcp = Some(Arc::new(started));
        Ok(self)
    }

    /// The same configuration with the permissions of `settings` deciding each
    /// call before it runs (ADR 0310), in `mode` (`--permission-mode`) when
    /// given, else the settings' `defaultMode`; `Err` is one sentence.
    pub fn with_permissions(
        mut self,
        settings: &[PathBuf],
        mode: Option<&str>,
    ) -> Result<Self, String> {
        if let Some((hook, permissions)) =
            crate::permissions::hook(settings, mode, self.read_only.clone())?
        {
            self.hooks.add(hook);
            self.hooks =
                std::mem::take(&mut self.hooks).with_permission_mode(permissions.mode().as_str());
            self.permissions = Some(permissions);
        }
        Ok(self)
    }

    /// The same configuration, each subagent's run stopped once its tokens
    /// pass `n` (`--task-max-tokens`; `None`: no bound).
    pub fn with_task_max_tokens(mut self, n: Option<u64>) -> Self {
        self.task_max_tokens = n;
        self
    }

    /// The same configuration with the subagents of `dir` (`--agents`), each
    /// `model:` opened now, nesting `depth` deep, each child making at most
    /// `max_turns` requests. An `Err` is one sentence naming what cannot be used.
    pub fn with_agents(
        mut self,
        dir: Option<&Path>,
        depth: u32,
        max_turns: u32,
        request_timeout: Duration,
    ) -> Result<Self, String> {
        self.task_depth = usize::try_from(depth).unwrap_or(usize::MAX);
        self.task_max_turns = usize::try_from(max_turns).unwrap_or(usize::MAX);
        let Some(dir) = dir else { return Ok(self) };
        let mut agents = Vec::new();
        for file in crate::subagents::load_dir(dir)? {
            let mut agent = SubAgent::new(file.config);
            if let Some(tools) = file.tools {
                agent = agent.with_tools(tools);
            }
            if let Some(spec) = agent.config.model.clone() {
                let model = open_model(&spec, request_timeout).map_err(|why| {
                    format!("the subagent {}: {why}", display::name(agent.name()))
                })?;
                agent = agent.with_model(model);
            }
            agents.push(agent);
        }
        // The tools a child may name: the file tools (execute on a sandbox only)
        // and MCP tools (`mcp__SERVER__TOOL`, offered when a server lists it, ADR 0316).
        let known = [
            "ls",
            "read_file",
            "write_file",
            "edit_file",
            "glob",
            "grep",
            "execute",
        ];
        for agent in &agents {
            for tool in agent.tools.iter().flatten() {
                if !known.contains(&tool.as_str()) && !tool.starts_with("mcp__") {
                    return Err(format!(
                        "the subagent {} names the tool {}, which subagents cannot get; give some of: {}, or mcp__SERVER__TOOL",
                        display::name(agent.name()),
                        display::name(tool),
                        known.join(", ")
                    ));
                }
            }
        }
        self.subagent_note = None;
        self.agents = Some(agents);
        Ok(self)
    }

    /// The same configuration leading the team of `file` (`--team`), each
    /// member's model opened now (`lead_model`, the lead's spec, when the
    /// file names none). An `Err` is one sentence naming the file.
    pub fn with_team(
        mut self,
        file: Option<&Path>,
        lead_model: &str,
        request_timeout: Duration,
    ) -> Result<Self, String> {
        let Some(file) = file else { return Ok(self) };
        let mut members = Vec::new();
        for loaded in crate::team::load(file, lead_model)? {
            let model = match &loaded.model {
                Some(spec) => Some(open_model(spec, request_timeout).map_err(|why| {
                    // The spec as the file gives it, not the path it was made into.
                    let given = loaded.given.as_deref().unwrap_or(spec);
                    format!(
                        "the team file {}: the member {}: {}",
                        crate::team::shown(file),
                        loaded.member.name,
                        why.replace(spec.as_str(), &display::name(given))
                    )
                })?),
                None => None,
            };
            members.push(MemberDef {
                member: loaded.member,
                model,
            });
        }
        self.team = Some(members);
        Ok(self)
    }

    /// The same configuration, children's runners claiming their threads
    /// for `ttl` (the parent's `--claim-ttl`).
    pub fn with_task_claim_ttl(mut self, ttl: Duration) -> Self {
        self.task_claim_ttl = ttl;
        self
    }

    /// The same configuration, with `skill` and the skill listing when `skills` is given.
    pub fn with_skills(mut self, skills: Option<Arc<burrow_runtime::skills::Skills>>) -> Self {
        self.skills = skills;
        self
    }

    /// The same configuration, with the artifact workspace when given (`--artifacts`).
    #[cfg(feature = "artifacts")]
    pub fn with_artifacts(
        mut self,
        workspace: Option<Arc<burrow_artifacts::tools::ArtifactWorkspace>>,
    ) -> Self {
        self.artifacts = workspace;
        self
    }

    /// The same configuration, with `write_todos` when `todos` (`--todos`).
    pub fn with_todos(mut self, todos: bool) -> Self {
        self.todos = todos;
        self
    }

    /// The same configuration, listing `uploads` in every request (`--upload`).
    pub fn with_uploads(mut self, uploads: Option<burrow_runtime::uploads::Uploads>) -> Self {
        self.uploads = uploads;
        self
    }

    /// The same configuration, with the memory tool when `memory` (`--memory`).
    pub fn with_memory(mut self, memory: bool) -> Self {
        self.memory = memory;
        self
    }

    /// The same configuration compacting past `at` tokens (`--compact-at`;
    /// `None`: the model's default) and keeping `keep` messages (`--compact-keep`).
    pub fn with_compaction(mut self, at: Option<u64>, keep: Option<u32>) -> Self {
        let mut config = burrow_runtime::compaction::CompactionConfig::default();
        if let Some(at) = at {
            config = config.with_threshold(at);
        }
        if let Some(keep) = keep {
            config = config.with_keep_messages(usize::try_from(keep).unwrap_or(usize::MAX));
        }
        self.compaction = config;
        self
    }

    /// The same configuration spilling tool results estimated past `tokens`
    /// (`--large-result-tokens`; `None`: the file tools' default).
    pub fn with_large_result_tokens(mut self, tokens: Option<u32>) -> Self {
        self.large_result_chars = tokens.map(|t| {
            usize::try_from(t)
                .unwrap_or(usize::MAX)
                .saturating_mul(burrow_runtime::compaction::CHARS_PER_TOKEN as usize)
        });
        self
    }

    /// The model, for a compaction by hand.
    pub fn model(&self) -> Arc<dyn Model> {
        self.model.clone()
    }

    /// The hooks of the settings, for a compaction by hand.
    pub fn hooks(&self) -> &Hooks {
        &self.hooks
    }
}

impl Config {
    /// Prints the configuration's notes on stderr.
    pub fn print_notes(&self) -> io::Result<()> {
        for note in self.notes.iter().chain(&self.subagent_note) {
            writeln!(io::stderr(), "burrow: note: {note}")?;
        }
        for warning in &self.warnings {
            writeln!(io::stderr(), "burrow: warning: {warning}")?;
        }
        Ok(())
    }

    /// The agent: the model, the file tools over `opened` as `ctx`, the
    /// hooks (their ignored failures printed as `json` says, told of the
    /// transcript of `session` when there is one); and a handle on the hooks
    /// and the subagents' children to settle before burrow exits.
    ///
    /// With `--agents`, the agent has `task`; its children are runs of
    /// `store` (the session's, else one in memory for this process) in `scope`.
    pub fn agent_for(
        self,
        opened: &Opened,
        ctx: FileContext,
        json: bool,
        session: Option<&str>,
        store: Option<(Arc<dyn SessionStore>, Scope)>,
    ) -> (Agent, Settle) {
        let (mut agent, parts, rest) = self.shared(opened, ctx, json, session.is_some());
        #[cfg(feature = "artifacts")]
        if let Some(workspace) = &rest.artifacts {
            agent = parts.with_artifacts(agent, workspace);
        }
        let (store, scope) = store.unwrap_or_else(|| {
            (
                Arc::new(MemoryStore::new()) as Arc<dyn SessionStore>,
                Scope::new(burrow::DEFAULT_TENANT, "default"),
            )
        });
        let mut team = None;
        if let Some(members) = rest.team {
            // The team is the lead's thread's (its run's outside a session).
            let name = session.map_or_else(|| "team".to_owned(), str::to_owned);
            let key = TeamKey::new(scope.clone(), name);
            let mut setup = Team::new(store.clone(), key, parts.model.clone(), members)
                .with_tools(parts.file_tools.clone())
                .with_hooks(parts.hooks.clone())
                .with_member_max_turns(parts.task_max_turns)
                .with_claim_ttl(parts.task_claim_ttl)
                .with_events(Arc::new(move |event: TeamEvent| team_event(event, json)));
            if let Some(config) = agent.compaction() {
                setup = setup.with_compaction(config.clone());
            }
            let (lead, handle) = setup.install(agent);
            agent = lead;
            team = Some(handle);
        }
        // Each child gets its own place in the workspace (ADR 0364).
        #[cfg(feature = "artifacts")]
        let child_setup = rest.artifacts.as_ref().map(|w| w.child_setup());
        #[cfg(not(feature = "artifacts"))]
        let child_setup = None;
        let sink: TaskEventSink = Arc::new(move |event: TaskEvent| task_event(event, json));
        let children = parts.tasks(store, scope, sink, child_setup);
        if let Some(tasks) = &children {
            agent = tasks.install(agent);
        }
        (
            agent,
            Settle {
                hooks: parts.hooks,
                children: children.into_iter().collect(),
                team,
                mcp: rest.mcp,
            },
        )
    }

    /// The agent of `burrow serve` and what makes each thread's own from it
    /// ([`Served::for_thread`]: the artifact workspace and `task`, ADR 0405).
    pub fn served(self, opened: &Opened, ctx: FileContext, json: bool) -> Served {
        // Served runs write no hook transcripts, as before (no one thread's).
        let (agent, parts, rest) = self.shared(opened, ctx, json, false);
        Served {
            agent,
            parts,
            mcp: rest.mcp,
            tasks: Arc::default(),
        }
    }

    /// What every thread's agent shares (the model, the file, memory and MCP
    /// tools as the permissions offer them, the hooks, todos, skills and
    /// uploads), what each thread's own parts are made of, and the rest.
    fn shared(
        self,
        opened: &Opened,
        ctx: FileContext,
        json: bool,
        transcripts: bool,
    ) -> (Agent, ThreadParts, Rest) {
        let mut tools = ToolRegistry::new();
        let memory_ctx = ctx.clone();
        let mut tool_config = ToolConfig::default();
        if let Some(chars) = self.large_result_chars {
            tool_config.large_result_chars = chars;
        }
        let toolset = Arc::new(
            burrow_runtime::tools::Toolset::new(opened.backend.clone(), ctx)
                .with_config(tool_config),
        );
        for tool in toolset.tools() {
            tools.add_arc(tool);
        }
        // Children of `task` get the file and MCP tools (as their lists allow,
        // ADR 0316); the memory tool is the parent's.
        for tool in self.mcp.iter().flat_map(|m| m.tools()) {
            tools.add_arc(tool.clone());
        }
        let mut file_tools = tools.clone();
        if self.memory {
            tools.add(burrow_runtime::memory::MemoryTool::new(
                opened.backend.clone(),
                memory_ctx,
            ));
        }
        if let Some(permissions) = &self.permissions {
            // The hook decides as `offered` does: a read-only MCP tool changes nothing.
            self.read_only.note(&tools);
            tools = crate::permissions::offered(tools, permissions, |tool| tool);
            // Children are offered what the parent is: in plan mode no changing tool.
            file_tools = crate::permissions::offered(file_tools, permissions, |tool| tool);
        }
        let model = self.model.clone();
        let mut hooks = self
            .hooks
            .with_failure_sink(Arc::new(move |f| report(&f, json)));
        if let (Some(dir), true) = (transcript_dir(), transcripts) {
            hooks = hooks.with_transcripts(dir);
        }
        let mut agent = Agent::new(self.model)
            .with_tools(tools)
            .with_hooks(hooks.clone())
            .with_max_turns(self.max_turns)
            .with_compaction(self.compaction);
        if self.todos {
            agent = burrow_runtime::todos::with_todos(agent);
        }
        if let Some(skills) = self.skills {
            agent = burrow_runtime::skills::with_skills(agent, skills);
        }
        if let Some(uploads) = self.uploads {
            agent = burrow_runtime::uploads::with_uploads(agent, uploads);
        }
        let parts = ThreadParts {
            model,
            agents: self.agents,
            file_tools,
            toolset,
            hooks,
            task_depth: self.task_depth,
            task_max_turns: self.task_max_turns,
            task_claim_ttl: self.task_claim_ttl,
            task_max_tokens: self.task_max_tokens,
            permissions: self.permissions,
            read_only: self.read_only,
        };
        let rest = Rest {
            team: self.team,
            mcp: self.mcp,
            #[cfg(feature = "artifacts")]
            artifacts: self.artifacts,
        };
        (agent, parts, rest)
    }
}

/// What a thread's agent gets beyond what every thread's shares: the
/// artifact tools of its place in the workspace and `task`, whose children
/// are runs of the thread's store and scope (ADR 0405).
#[derive(Clone)]
struct ThreadParts {
    model: Arc<dyn Model>,
    /// The subagents of `--agents DIR`, if given.
    agents: Option<Vec<SubAgent>>,
    /// The tools children may get (the file and MCP tools, as offered).
    file_tools: ToolRegistry,
    /// Where a child's long final text is spilled.
    toolset: Arc<burrow_runtime::tools::Toolset>,
    hooks: Hooks,
    task_depth: usize,
    task_max_turns: usize,
    task_claim_ttl: Duration,
    /// Each child's token bound (`--task-max-tokens`), if any.
    task_max_tokens: Option<u64>,
    /// What the artifact tools are offered under (ADR 0365).
    #[cfg_attr(not(feature = "artifacts"), allow(dead_code))]
    permissions: Option<Arc<burrow::permissions::Permissions>>,
    #[cfg_attr(not(feature = "artifacts"), allow(dead_code))]
    read_only: crate::permissions::ReadOnlyTools,
}

/// What [`Config::shared`] leaves to `burrow run`'s set-up.
struct Rest {
    team: Option<Vec<MemberDef>>,
    mcp: Option<Arc<McpServers>>,
    #[cfg(feature = "artifacts")]
    artifacts: Option<Arc<burrow_artifacts::tools::ArtifactWorkspace>>,
}

impl ThreadParts {
    /// `agent` in `workspace`: its tools offered and decided as the others
    /// are (ADR 0365): plan mode offers, and runs, the reading ones only.
    #[cfg(feature = "artifacts")]
    fn with_artifacts(
        &self,
        agent: Agent,
        workspace: &Arc<burrow_artifacts::tools::ArtifactWorkspace>,
    ) -> Agent {
        let mut agent = workspace.install(agent);
        if let Some(permissions) = &self.permissions {
            self.read_only.note(agent.tools());
            let tools = crate::permissions::offered(agent.tools().clone(), permissions, |t| t);
            agent = agent.with_tools(tools);
        }
        agent
    }

    /// With `--agents`, the `task` set-up: children as runs of `store` in
    /// `scope`, what they do sent to `sink`, each agent completed by
    /// `child_setup` when given.
    fn tasks(
        &self,
        store: Arc<dyn SessionStore>,
        scope: Scope,
        sink: TaskEventSink,
        child_setup: Option<burrow_runtime::subagent::ChildSetup>,
    ) -> Option<Tasks> {
        let agents = self.agents.clone()?;
        let tasks = Tasks::new(agents, self.model.clone(), store, scope)
            .with_tools(self.file_tools.clone())
            .with_spill(self.toolset.clone())
            .with_hooks(self.hooks.clone())
            .with_max_depth(self.task_depth)
            .with_child_max_turns(self.task_max_turns)
            .with_claim_ttl(self.task_claim_ttl)
            .with_events(sink);
        let tasks = match self.task_max_tokens {
            Some(n) => tasks.with_child_max_tokens(n),
            None => tasks,
        };
        Some(match child_setup {
            Some(setup) => tasks.with_child_setup(setup),
            None => tasks,
        })
    }
}

/// `burrow serve`'s agent: what every thread's shares, and what makes each
/// thread's own (ADR 0405).
pub struct Served {
    agent: Agent,
    parts: ThreadParts,
    mcp: Option<Arc<McpServers>>,
    /// The `task` set-up of each thread's latest segment, stopped and
    /// settled at shutdown.
    tasks: Arc<std::sync::Mutex<std::collections::HashMap<ThreadKey, Tasks>>>,
}

impl Served {
    /// What every thread's agent shares.
    pub fn agent(&self) -> Agent {
        self.agent.clone()
    }

    /// Whether threads' agents have `task` (`--agents`).
    pub fn has_tasks(&self) -> bool {
        self.parts.agents.is_some()
    }

    /// The agent of a segment in `thread`: `agent` in `workspace` (the
    /// thread's place in the artifact workspace, when served) and with
    /// `task`, its children runs of the thread's tenant and workspace, what
    /// they do sent to `sink`, each child in its own place in `workspace`.
    #[cfg(feature = "artifacts")]
    pub fn for_thread(
        &self,
        agent: &Agent,
        thread: &ThreadKey,
        store: Arc<dyn SessionStore>,
        sink: TaskEventSink,
        workspace: Option<Arc<burrow_artifacts::tools::ArtifactWorkspace>>,
    ) -> Agent {
        let mut agent = agent.clone();
        if let Some(workspace) = &workspace {
            agent = self.parts.with_artifacts(agent, workspace);
        }
        let child_setup = workspace.as_ref().map(|w| w.child_setup());
        self.with_tasks(agent, thread, store, sink, child_setup)
    }

    /// The agent of a segment in `thread`: `agent` with `task`, its
    /// children runs of the thread's tenant and workspace, what they do
    /// sent to `sink`.
    #[cfg(not(feature = "artifacts"))]
    pub fn for_thread(
        &self,
        agent: &Agent,
        thread: &ThreadKey,
        store: Arc<dyn SessionStore>,
        sink: TaskEventSink,
    ) -> Agent {
        self.with_tasks(agent.clone(), thread, store, sink, None)
    }

    fn with_tasks(
        &self,
        agent: Agent,
        thread: &ThreadKey,
        store: Arc<dyn SessionStore>,
        sink: TaskEventSink,
        child_setup: Option<burrow_runtime::subagent::ChildSetup>,
    ) -> Agent {
        let Some(tasks) = self
            .parts
            .tasks(store, thread.scope.clone(), sink, child_setup)
        else {
            return agent;
        };
        let agent = tasks.install(agent);
        // One thread runs one segment at a time here: its latest set-up is
        // the one with children that may still run.
        let mut all = match self.tasks.lock() {
            Ok(all) => all,
            Err(poisoned) => poisoned.into_inner(),
        };
        all.insert(thread.clone(), tasks);
        agent
    }

    /// What to settle once the server has stopped: the threads' children
    /// (stopped with their runs), the hooks' background runs, the MCP servers.
    pub fn settle(&self) -> Settle {
        let children = match self.tasks.lock() {
            Ok(all) => all.values().cloned().collect(),
            Err(poisoned) => poisoned.into_inner().values().cloned().collect(),
        };
        Settle {
            hooks: self.parts.hooks.clone(),
            children,
            team: None,
            mcp: self.mcp.clone(),
        }
    }
}

/// What runs on after an agent's run and is settled before burrow exits:
/// the hooks' background runs, and the children of `task` calls that were
/// stopped with their parent (so none is left recorded running).
pub struct Settle {
    hooks: Hooks,
    children: Vec<Tasks>,
    /// The team the agent leads: its members' runs stopped and settled.
    team: Option<TeamHandle>,
    /// The MCP servers, stopped once the run has settled.
    mcp: Option<Arc<McpServers>>,
}

impl Settle {
    /// Waits for stopped children to record their ends, then for the
    /// background hooks (a child's SubagentStop among them).
    pub async fn settle(&self) {
        for tasks in &self.children {
            tasks.aclose().await;
        }
        if let Some(team) = &self.team {
            team.aclose().await;
        }
        self.hooks.settle().await;
        if let Some(mcp) = &self.mcp {
            mcp.close().await;
        }
    }
}

/// Reports a hook failure its policy ignored: a line on stderr, and with
/// `--json` a `hook_error` event on stdout too. Queued at once: the hook's
/// caller never waits for the reader.
fn report(failure: &HookFailure, json: bool) {
    let line = format!(
        "burrow: a {} hook failed and was ignored (on_error: allow): {}",
        failure.event.as_str(),
        failure.message
    );
    pipe::now(format!("{}\n", display::sentence(&line)), false);
    if json {
        let event = serde_json::json!({
            "type": "hook_error",
            "event": failure.event.as_str(),
            "hook": failure.hook,
            "message": failure.message,
        });
        pipe::now(format!("{event}\n"), true);
    }
}

/// Prints what a `task` child does, queued at once (the child's run never
/// waits for the reader): with `--json` its events ([`task_event_json`]);
/// else one line on stderr as it starts and as it ends.
fn task_event(event: TaskEvent, json: bool) {
    if json {
        if let Some((_, line)) = task_event_json(&event) {
            pipe::now(format!("{line}\n"), true);
        }
        return;
    }
    match event {
        TaskEvent::Started {
            run_id,
            thread_id,
            subagent_type,
            description,
            ..
        } => {
            let line = format!(
                "burrow: task {subagent_type} started: {} (run {run_id}, thread {thread_id})",
                cut(&description, SUMMARY_CHARS)
            );
            pipe::now(format!("{}\n", display::sentence(&line)), false);
        }
        TaskEvent::Ended {
            run_id,
            subagent_type,
            outcome,
            reason,
            turns,
            tool_calls,
            usage,
            ..
        } => {
            let how = match reason {
                Some(reason) => format!("{outcome} ({reason})"),
                None => outcome,
            };
            let line = format!(
                "burrow: task {subagent_type} {how}: {}, {}, {} (run {run_id})",
                count(turns, "turn"),
                count(tool_calls, "tool call"),
                usage_text(&usage)
            );
            pipe::now(format!("{}\n", display::sentence(&line)), false);
        }
        _ => {}
    }
}

/// The parent's run id and the JSON `burrow run --json` prints for what a
/// `task` child does: `task_started`, each of the child's frames with the
/// child's `run_id` and the parent's `parent_run_id`, `task_ended`; also
/// what `burrow serve` sends in the parent's live frames (ADR 0405).
pub(crate) fn task_event_json(event: &TaskEvent) -> Option<(String, Value)> {
    match event {
        TaskEvent::Started {
            run_id,
            parent_run_id,
            thread_id,
            subagent_type,
            description,
        } => Some((
            parent_run_id.clone(),
            serde_json::json!({"type": "task_started", "run_id": run_id,
                "parent_run_id": parent_run_id, "thread_id": thread_id,
                "subagent_type": subagent_type, "description": description}),
        )),
        TaskEvent::Frame {
            run_id,
            parent_run_id,
            event,
        } => match serde_json::to_value(event) {
            Ok(Value::Object(mut fields)) => {
                fields.insert("run_id".to_owned(), Value::String(run_id.clone()));
                fields.insert(
                    "parent_run_id".to_owned(),
                    Value::String(parent_run_id.clone()),
                );
                Some((parent_run_id.clone(), Value::Object(fields)))
            }
            _ => None,
        },
        TaskEvent::Ended {
            run_id,
            parent_run_id,
            thread_id,
            subagent_type,
            outcome,
            reason,
            turns,
            tool_calls,
            usage,
        } => Some((
            parent_run_id.clone(),
            serde_json::json!({"type": "task_ended", "run_id": run_id,
                "parent_run_id": parent_run_id, "thread_id": thread_id,
                "subagent_type": subagent_type, "outcome": outcome, "reason": reason,
                "turns": turns, "tool_calls": tool_calls, "usage": usage}),
        )),
        _ => None,
    }
}

/// Prints what a team's member does, queued at once (the member's run never
/// waits for the reader): with `--json` its events, each with the member's
/// `run_id`, the lead's `parent_run_id` and the `member` (`member_started`,
/// the member's frames, `member_ended`); else one line on stderr as it
/// starts and as it ends.
fn team_event(event: TeamEvent, json: bool) {
    let (line, json_line) = match event {
        TeamEvent::Started {
            run_id,
            parent_run_id,
            thread_id,
            member,
        } => (
            format!("burrow: member {member} started (run {run_id}, thread {thread_id})"),
            serde_json::json!({"type": "member_started", "run_id": run_id,
                "parent_run_id": parent_run_id, "thread_id": thread_id, "member": member}),
        ),
        TeamEvent::Frame {
            run_id,
            parent_run_id,
            member,
            event,
        } => {
            if json && let Ok(Value::Object(mut fields)) = serde_json::to_value(&event) {
                fields.insert("run_id".to_owned(), Value::String(run_id));
                fields.insert("parent_run_id".to_owned(), Value::String(parent_run_id));
                fields.insert("member".to_owned(), Value::String(member));
                pipe::now(format!("{}\n", Value::Object(fields)), true);
            }
            return;
        }
        TeamEvent::Ended {
            run_id,
            parent_run_id,
            thread_id,
            member,
            outcome,
            reason,
            turns,
            tool_calls,
            usage,
        } => {
            let how = match &reason {
                Some(reason) => format!("{outcome} ({reason})"),
                None => outcome.clone(),
            };
            (
                format!(
                    "burrow: member {member} {how}: {}, {}, {} (run {run_id})",
                    count(turns, "turn"),
                    count(tool_calls, "tool call"),
                    usage_text(&usage)
                ),
                serde_json::json!({"type": "member_ended", "run_id": run_id,
                    "parent_run_id": parent_run_id, "thread_id": thread_id, "member": member,
                    "outcome": outcome, "reason": reason, "turns": turns,
                    "tool_calls": tool_calls, "usage": usage}),
            )
        }
        TeamEvent::NotStarted { member, message } => (
            format!("burrow: warning: the member {member} was not started: {message}"),
            serde_json::json!({"type": "member_error", "member": member, "message": message}),
        ),
        _ => return,
    };
    if json {
        pipe::now(format!("{json_line}\n"), true);
    } else {
        pipe::now(format!("{}\n", display::sentence(&line)), false);
    }
}

/// Where the transcripts hooks read are written (docs/adr/0260):
/// `$BURROW_TRANSCRIPT_DIR`, else `$XDG_STATE_HOME/burrow/transcripts`, else
/// `~/.local/state/burrow/transcripts`; `None` when none of them is set.
pub fn transcript_dir() -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var("BURROW_TRANSCRIPT_DIR") {
        return Some(PathBuf::from(dir));
    }
    if let Some(state) = var("XDG_STATE_HOME") {
        return Some(PathBuf::from(state).join("burrow").join("transcripts"));
    }
    var("HOME").map(|home| {
        PathBuf::from(home)
            .join(".local")
            .join("state")
            .join("burrow")
            .join("transcripts")
    })
}

/// Writes a session's transcript from the run's events as they happen (in
/// the run's own task, so a `PreToolUse` hook always finds the call it is
/// asked about). As in Claude Code's transcripts, an answer is written one
/// part a line: its text, then each call.
pub struct TranscriptWriter {
    file: Transcript,
    run_id: Option<String>,
    /// This process's prompt, written once the model is asked (a prompt a
    /// hook blocks never reaches the transcript).
    prompt: Option<String>,
    /// The answer text being streamed.
    text: String,
}

impl TranscriptWriter {
    /// A fresh transcript of `session` in `dir` holding `history`; `None`
    /// (with a note on stderr) when it cannot be written.
    pub fn create(dir: &Path, session: &str, history: &[Message]) -> Option<Self> {
        let made = Transcript::create(dir, session).and_then(|mut file| {
            for message in history {
                file.append(message, None)?;
            }
            Ok(file)
        });
        match made {
            Ok(file) => Some(Self {
                file,
                run_id: None,
                prompt: None,
                text: String::new(),
            }),
            Err(e) => {
                let _ = writeln!(
                    io::stderr(),
                    "burrow: note: the transcript for hooks cannot be written ({}); hooks get its path all the same",
                    e.kind()
                );
                None
            }
        }
    }

    /// The same writer, to write `prompt` once the model is asked.
    pub fn with_prompt(mut self, prompt: &str) -> Self {
        self.prompt = Some(prompt.to_owned());
        self
    }

    fn append(&mut self, message: &Message) {
        let _ = self.file.append(message, self.run_id.as_deref());
    }

    /// Follows one event of the run.
    pub fn event(&mut self, event: &AgentEvent) {
        if !matches!(
            event,
            AgentEvent::RunStarted { .. } | AgentEvent::RunEnded { .. }
        ) && let Some(prompt) = self.prompt.take()
        {
            self.append(&Message::user(prompt));
        }
        match event {
            AgentEvent::RunStarted { run_id, .. } => self.run_id = Some(run_id.clone()),
            AgentEvent::TextDelta { text } => self.text.push_str(text),
            AgentEvent::Usage { .. } | AgentEvent::RunEnded { .. } => self.text(),
            AgentEvent::ToolCall {
                id,
                name,
                arguments,
            } => {
                self.text();
                let call = ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    arguments: arguments.clone(),
                };
                self.append(&Message::Assistant {
                    parts: vec![AssistantPart::ToolCall(call)],
                });
            }
            AgentEvent::ToolResult {
                id,
                name,
                content,
                is_error,
            } => self.append(&Message::ToolResult(ToolResult {
                call_id: id.clone(),
                name: name.clone(),
                content: content.clone(),
                is_error: *is_error,
            })),
            _ => {}
        }
    }

    /// Writes the answer text gathered so far, if any.
    fn text(&mut self) {
        if !self.text.is_empty() {
            let text = std::mem::take(&mut self.text);
            self.append(&Message::assistant_text(text));
        }
    }
}

/// An agent for commands that only ask runs to stop: its model answers nothing.
pub fn idle_agent() -> Agent {
    Agent::new(Arc::new(ScriptedModel::from_responses(Vec::new())))
}

/// The model `spec` names.
fn open_model(spec: &str, request_timeout: Duration) -> Result<Arc<dyn Model>, String> {
    if spec.is_empty() {
        return Err(
            "the --model value is empty: give scripted:FILE.jsonl, openai:NAME, openai-responses:NAME or anthropic:NAME"
                .to_owned(),
        );
    }
    let Some((scheme, rest)) = spec.split_once(':') else {
        return Err(unknown_model(spec));
    };
    if scheme == "scripted" {
        if rest.is_empty() {
            return Err("the model scripted: names no file; give scripted:FILE.jsonl".to_owned());
        }
        let path = PathBuf::from(rest);
        return match ScriptedModel::from_file(&path) {
            Ok(model) => Ok(Arc::new(model)),
            Err(e) => Err(format!(
                "the model {} cannot be used: {}",
                display::name(spec),
                display::sentence(&e.message)
            )),
        };
    }
    if PROVIDERS.contains(&scheme) {
        if rest.is_empty() {
            return Err(format!(
                "the model {scheme}: names no model; give {scheme}:NAME"
            ));
        }
        return provider_model(scheme, rest, request_timeout).map_err(|message| {
            format!(
                "the model {} cannot be used: {}",
                display::name(spec),
                display::sentence(&message)
            )
        });
    }
    Err(unknown_model(spec))
}

/// The adapter for `scheme:name`, with its key and endpoint from the
/// conventional variables and `request_timeout` for each request; a missing
/// key is refused here, before any request.
#[cfg_attr(
    not(any(feature = "openai", feature = "anthropic")),
    allow(unused_variables)
)]
fn provider_model(
    scheme: &str,
    name: &str,
    request_timeout: Duration,
) -> Result<Arc<dyn Model>, String> {
    match scheme {
        #[cfg(feature = "openai")]
        "openai" => burrow_models::openai::config_from_env()
            .and_then(|c| {
                burrow_models::openai::OpenAiChat::new(
                    name,
                    c.with_request_timeout(Some(request_timeout)),
                )
            })
            .map(|m| Arc::new(m) as Arc<dyn Model>)
            .map_err(|e| e.message),
        #[cfg(feature = "openai")]
        "openai-responses" => burrow_models::openai::config_from_env()
            .and_then(|c| {
                burrow_models::openai::OpenAiResponses::new(
                    name,
                    c.with_request_timeout(Some(request_timeout)),
                )
            })
            .map(|m| Arc::new(m) as Arc<dyn Model>)
            .map_err(|e| e.message),
        #[cfg(feature = "anthropic")]
        "anthropic" => burrow_models::anthropic::config_from_env()
            .and_then(|c| {
                burrow_models::anthropic::AnthropicModel::new(
                    name,
                    c.with_request_timeout(Some(request_timeout)),
                )
            })
            .map(|m| Arc::new(m) as Arc<dyn Model>)
            .map_err(|e| e.message),
        _ => Err(format!(
            "the {scheme} adapter is not built into this burrow (rebuild burrow-agent-cli with its `{}` feature)",
            scheme.split('-').next().unwrap_or(scheme)
        )),
    }
}

fn unknown_model(spec: &str) -> String {
    format!(
        "{} is not a model burrow knows: give scripted:FILE.jsonl, openai:NAME, openai-responses:NAME or anthropic:NAME",
        display::name(spec)
    )
}

/// The hooks of the settings files, and notes about hooks that will not run.
fn load_hooks(merged: &crate::settings_files::Merged) -> Result<(Hooks, Vec<String>), String> {
    let hooks = Hooks::from_settings(&merged.text())
        .map_err(|e| format!("{} cannot be used: {e}", merged.shown))?;
    let mut notes = Vec::new();
    for name in hooks.ignored_events() {
        notes.push(format!(
            "the settings name {} hooks, an event burrow does not know; they never run",
            display::sentence(name)
        ));
    }
    Ok((hooks, notes))
}

/// Runs the agent over `opened` as `ctx`, printing as `json` says.
///
/// The run is a task of its own whose events go to a live channel that
/// never blocks it; this function prints them as a watcher, the way a
/// session run is printed (docs/adr/0262), so a slow reader of stdout
/// slows the printing only.
pub async fn run(
    config: Config,
    prompt: String,
    opened: &Opened,
    ctx: FileContext,
    json: bool,
) -> io::Result<Exit> {
    config.print_notes()?;
    let run_id = format!("run_{}", uuid::Uuid::now_v7().simple());
    let scope = Scope::new(ctx.tenant.clone(), "default");
    let (agent, hooks) = config.agent_for(
        opened,
        ctx,
        json,
        Some(&run_id),
        Some((Arc::new(MemoryStore::new()) as Arc<dyn SessionStore>, scope)),
    );
    let live = Arc::new(FanoutChannel::new(LIVE_FRAMES));
    live.open(&run_id);
    let frames = live.watch(&run_id);
    let options = RunOptions {
        run_id: Some(run_id.clone()),
        ..RunOptions::default()
    };
    let cancel = options.cancel.clone();
    let interrupts = cancel_on_interrupt(cancel.clone());
    let task = {
        let (live, run_id) = (live.clone(), run_id.clone());
        tokio::spawn(async move {
            let mut history = Vec::new();
            let mut transcript = hooks_transcript(&agent, &run_id, &prompt);
            let result = agent
                .run_with(&mut history, Some(prompt), options, &mut |event| {
                    if let Some(t) = transcript.as_mut() {
                        t.event(&event);
                    }
                    if let Some(event) = LiveEvent::from_agent(event) {
                        live.send(LiveFrame {
                            run_id: run_id.clone(),
                            event,
                        });
                    }
                })
                .await;
            live.close(
                &run_id,
                LiveEvent::End {
                    outcome: Some(result.outcome.name().to_owned()),
                    reason: result.outcome.reason().map(str::to_owned),
                },
            );
            result
        })
    };
    let mut printer = Printer::new(json);
    printer
        .event(AgentEvent::RunStarted {
            run_id: run_id.clone(),
            thread_id: None,
        })
        .await;
    if let Some(frames) = frames {
        printer.frames(frames, || cancel.cancel()).await;
    }
    let result = match task.await {
        Ok(result) => result,
        Err(e) => {
            pipe::flush().await?;
            let why = if e.is_panic() {
                "panicked"
            } else {
                "was cancelled"
            };
            writeln!(io::stderr(), "burrow: the run {why} before it ended")?;
            return Ok(Exit::Failed);
        }
    };
    // Background hooks run to their end before burrow exits; a second
    // Ctrl-C meanwhile still ends it at once, the MCP servers killed first.
    hooks.settle().await;
    if let Some(interrupts) = interrupts {
        interrupts.abort();
    }
    // Outside a group this saves nothing more (each change saved itself);
    // it surfaces a save that a composite's part still owes.
    let saved = opened.finish();
    printer.event(run_ended(&result)).await;
    printer.end(&result).await?;
    if let Err(e) = saved {
        writeln!(io::stderr(), "{}", crate::output::error_text(&e))?;
        return Ok(Exit::Failed);
    }
    Ok(exit_of(&result.outcome))
}

/// The `run_ended` event of `result`.
pub(crate) fn run_ended(result: &RunResult) -> AgentEvent {
    AgentEvent::RunEnded {
        outcome: result.outcome.name().to_owned(),
        reason: result.outcome.reason().map(str::to_owned),
        message: match &result.outcome {
            Outcome::Failed { message, .. } => Some(message.clone()),
            _ => None,
        },
        usage: result.usage,
    }
}

/// The transcript writer of a plain run (its session is the run), when it has hooks.
fn hooks_transcript(agent: &Agent, run_id: &str, prompt: &str) -> Option<TranscriptWriter> {
    let dir = transcript_dir()?;
    if agent.hooks().is_empty() {
        return None;
    }
    Some(TranscriptWriter::create(&dir, run_id, &[])?.with_prompt(prompt))
}

/// Ctrl-C (SIGINT) cancels the run: calls in flight end "cancelled", the
/// run ends `stopped` and its closing line is printed (docs/adr/0137). A
/// second Ctrl-C ends burrow at once (exit 130). `None` when the signal
/// cannot be watched (the run then just is not cancellable).
fn cancel_on_interrupt(cancel: CancelToken) -> Option<tokio::task::JoinHandle<()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt()).ok()?;
    Some(tokio::spawn(async move {
        if interrupt.recv().await.is_some() {
            cancel.cancel();
        }
        if interrupt.recv().await.is_some() {
            crate::mcp_signals::end_now(130, "interrupted again; stopping now");
        }
    }))
}

/// 0 completed, 3 paused, 2 failed or stopped.
pub(crate) fn exit_of(outcome: &Outcome) -> Exit {
    match outcome {
        Outcome::Completed => Exit::Success,
        Outcome::Paused { .. } => Exit::Paused,
        Outcome::Failed { .. } | Outcome::Stopped { .. } => Exit::Failed,
    }
}

/// The stderr line of a retried model request:
/// `burrow: model request failed (REASON); retrying in N s, attempt 2 of 3`.
fn retry_line(attempt: u32, attempts: u32, wait_ms: u64, reason: &str) -> String {
    let tenths = wait_ms.saturating_add(50) / 100;
    let wait = if tenths.is_multiple_of(10) {
        format!("{}", tenths / 10)
    } else {
        format!("{}.{}", tenths / 10, tenths % 10)
    };
    format!(
        "burrow: model request failed ({}); retrying in {wait} s, attempt {attempt} of {attempts}",
        reason.trim_end_matches('.')
    )
}

/// The agent event a live frame stands for (`None` for frames `burrow run` does not print).
pub(crate) fn agent_event(event: LiveEvent) -> Option<AgentEvent> {
    Some(match event {
        LiveEvent::TextDelta { text } => AgentEvent::TextDelta { text },
        LiveEvent::ThinkingDelta { text } => AgentEvent::ThinkingDelta { text },
        LiveEvent::ToolCall {
            id,
            name,
            arguments,
        } => AgentEvent::ToolCall {
            id,
            name,
            arguments,
        },
        LiveEvent::ToolResult {
            id,
            name,
            content,
            is_error,
        } => AgentEvent::ToolResult {
            id,
            name,
            content,
            is_error,
        },
        LiveEvent::Usage { usage } => AgentEvent::Usage { usage },
        LiveEvent::Retry {
            attempt,
            attempts,
            wait_ms,
            kind,
            reason,
        } => AgentEvent::Retry {
            attempt,
            attempts,
            wait_ms,
            kind,
            reason,
        },
        LiveEvent::Compacted {
            trigger,
            summarised,
            kept,
            tokens_before,
            summary,
        } => AgentEvent::Compacted {
            trigger,
            summarised,
            kept,
            tokens_before,
            summary,
        },
        LiveEvent::CompactionFailed { reason, message } => {
            AgentEvent::CompactionFailed { reason, message }
        }
        LiveEvent::CompactionBlocked { reason } => AgentEvent::CompactionBlocked { reason },
        _ => return None,
    })
}

/// Prints a run's events as they come, through the output thread
/// ([`crate::pipe`]). Once the reader is gone the events are dropped: the
/// run's changes are made whether or not anyone reads them.
pub(crate) struct Printer {
    json: bool,
    /// The calls of the current batch, in call order, waiting for their results.
    pending: VecDeque<(String, Value)>,
    /// Human output: stdout holds text not ended by a newline.
    mid_line: bool,
    /// The `write_todos` calls waiting for their results, by call id, with their arguments.
    todo_calls: Vec<(String, Value)>,
}

impl Printer {
    pub(crate) fn new(json: bool) -> Self {
        Self {
            json,
            pending: VecDeque::new(),
            mid_line: false,
            todo_calls: Vec::new(),
        }
    }

    /// Prints `frames` until their end; `stop` is called once if the reader
    /// goes away meanwhile (the run is then stopped cleanly and recorded so).
    pub(crate) async fn frames(
        &mut self,
        mut frames: futures::stream::BoxStream<'static, LiveFrame>,
        stop: impl FnOnce(),
    ) {
        let mut stop = Some(stop);
        loop {
            let frame = tokio::select! {
                frame = frames.next() => frame,
                () = pipe::closed(), if stop.is_some() => {
                    if let Some(stop) = stop.take() {
                        stop();
                    }
                    continue;
                }
            };
            let Some(frame) = frame else { break };
            match frame.event {
                LiveEvent::Gap { missed } => self.gap(missed).await,
                event => {
                    if let Some(event) = agent_event(event) {
                        self.event(event).await;
                    }
                }
            }
        }
    }

    pub(crate) async fn event(&mut self, event: AgentEvent) {
        if let AgentEvent::Retry {
            attempt,
            attempts,
            wait_ms,
            reason,
            ..
        } = &event
        {
            // On stderr in both modes; `--json` also gets the event.
            let line = retry_line(*attempt, *attempts, *wait_ms, reason);
            self.end_text_line().await;
            pipe::err(format!("{}\n", display::sentence(&line)).into_bytes()).await;
            if !self.json {
                return;
            }
        }
        let todos = self.todos_set(&event);
        if self.json {
            self.json_event(event).await;
            if let Some(todos) = todos {
                json_line(&serde_json::json!({"type": "todos", "todos": todos})).await;
            }
        } else {
            self.human_event(event).await
        }
    }

    /// The todo list a `write_todos` call's successful result sets, once the result comes.
    fn todos_set(&mut self, event: &AgentEvent) -> Option<Vec<burrow::types::Todo>> {
        use burrow_runtime::todos::{WRITE_TODOS, parse};
        match event {
            AgentEvent::ToolCall {
                id,
                name,
                arguments,
            } if name == WRITE_TODOS => {
                self.todo_calls.push((id.clone(), arguments.clone()));
                None
            }
            AgentEvent::ToolResult {
                id, name, is_error, ..
            } if name == WRITE_TODOS => {
                let at = self.todo_calls.iter().position(|(call, _)| call == id)?;
                let (_, arguments) = self.todo_calls.remove(at);
                if *is_error { None } else { parse(&arguments) }
            }
            _ => None,
        }
    }

    /// The printer fell so far behind that the live channel dropped frames.
    async fn gap(&mut self, missed: u64) {
        if self.json {
            json_line(&serde_json::json!({"type": "gap", "missed": missed})).await;
        } else {
            self.end_text_line().await;
            let line = format!(
                "burrow: the output fell {missed} live frames behind the run and skipped them; the run's record has them\n"
            );
            pipe::err(line.into_bytes()).await;
        }
    }

    async fn json_event(&mut self, event: AgentEvent) {
        match event {
            AgentEvent::RunEnded {
                outcome,
                reason,
                message,
                usage,
            } => {
                json_line(&RunEnded {
                    kind: "run_ended",
                    outcome: &outcome,
                    reason: reason.as_deref(),
                    message: message.as_deref(),
                    usage,
                })
                .await
            }
            // thread_id is always there (null until runs belong to sessions).
            AgentEvent::RunStarted { run_id, thread_id } => {
                json_line(&RunStarted {
                    kind: "run_started",
                    run_id,
                    thread_id,
                })
                .await
            }
            // The runtime's own form: "type" first, then the event's fields.
            other => json_line(&other).await,
        }
    }

    async fn human_event(&mut self, event: AgentEvent) {
        match event {
            AgentEvent::TextDelta { text } => {
                if text.is_empty() {
                    return;
                }
                self.mid_line = !text.ends_with('\n');
                pipe::out(text.into_bytes()).await;
            }
            AgentEvent::ToolCall {
                name, arguments, ..
            } => self.pending.push_back((name, arguments)),
            AgentEvent::ToolResult {
                name,
                content,
                is_error,
                ..
            } => {
                let arguments = match self.pending.pop_front() {
                    Some((_, arguments)) => arguments,
                    None => Value::Null,
                };
                self.end_text_line().await;
                let outcome = if is_error {
                    format!("refused: {}", first_line(&content))
                } else {
                    "ok".to_owned()
                };
                let line = format!("burrow: tool {name} {}: {outcome}", summary(&arguments));
                pipe::err(format!("{}\n", display::sentence(&line)).into_bytes()).await;
            }
            AgentEvent::Compacted {
                summarised, kept, ..
            } => {
                self.end_text_line().await;
                let line = format!(
                    "burrow: compacted the history: {} summarised, the last {} kept",
                    count(summarised, "message"),
                    count(kept, "message")
                );
                pipe::err(format!("{}\n", display::sentence(&line)).into_bytes()).await;
            }
            AgentEvent::CompactionFailed { message, .. } => {
                self.end_text_line().await;
                let line =
                    format!("burrow: compaction failed, the run goes on uncompacted: {message}");
                pipe::err(format!("{}\n", display::sentence(&line)).into_bytes()).await;
            }
            AgentEvent::CompactionBlocked { reason } => {
                self.end_text_line().await;
                let line = format!("burrow: a PreCompact hook blocked the compaction: {reason}");
                pipe::err(format!("{}\n", display::sentence(&line)).into_bytes()).await;
            }
            // Thinking is not the answer; usage is summed in the closing line.
            _ => {}
        }
    }

    /// Ends a line of answer text on stdout, so stderr lines start on their own.
    async fn end_text_line(&mut self) {
        if self.mid_line {
            self.mid_line = false;
            pipe::out(b"\n".to_vec()).await;
        }
    }

    /// Prints the end of the run: the closing line (`--json` printed
    /// `run_ended` already), then waits until the reader has it all. An
    /// `Err` when the output could not be written (a broken pipe included).
    pub(crate) async fn end(mut self, result: &RunResult) -> io::Result<()> {
        if !self.json {
            self.end_text_line().await;
            let line = format!(
                "burrow: run {}: {}, {}, {}",
                outcome_text(&result.outcome),
                count(result.turns, "turn"),
                count(result.tool_calls, "tool call"),
                usage_text(&result.usage)
            );
            pipe::err(format!("{}\n", display::sentence(&line)).into_bytes()).await;
        }
        pipe::flush().await
    }
}

/// `run_started` as `--json` prints it.
#[derive(Serialize)]
struct RunStarted {
    #[serde(rename = "type")]
    kind: &'static str,
    run_id: String,
    thread_id: Option<String>,
}

/// `run_ended` as `--json` prints it: the runtime's fields and, for a
/// failure, its one-sentence message.
#[derive(Serialize)]
struct RunEnded<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    outcome: &'a str,
    reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a str>,
    usage: Usage,
}

async fn json_line(value: &impl Serialize) {
    // Plain data with string keys: serialising cannot fail.
    if let Ok(mut line) = serde_json::to_vec(value) {
        line.push(b'\n');
        pipe::out(line).await;
    }
}

/// `completed`, `failed (model_error: ...)`, `paused (...)`, `stopped (...)`.
fn outcome_text(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Completed => "completed".to_owned(),
        Outcome::Failed { reason, message } => {
            format!("failed ({}: {message})", reason.as_str())
        }
        Outcome::Paused { reason } => format!("paused (waiting for approval: {reason})"),
        Outcome::Stopped { reason } => format!("stopped ({reason})"),
    }
}

fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// `usage unknown`, or each count the model reported (a missing one as `unknown`).
fn usage_text(usage: &Usage) -> String {
    if usage.is_unknown() {
        return "usage unknown".to_owned();
    }
    let show = |n: Option<u64>| n.map_or_else(|| "unknown".to_owned(), |n| n.to_string());
    let mut parts = vec![
        format!("{} input", show(usage.input_tokens)),
        format!("{} output", show(usage.output_tokens)),
    ];
    if let Some(n) = usage.cache_read_tokens {
        parts.push(format!("{n} cache read"));
    }
    if let Some(n) = usage.cache_write_tokens {
        parts.push(format!("{n} cache write"));
    }
    format!("usage: {} tokens", parts.join(", "))
}

/// A short view of a call's arguments: the path, pattern or command it is
/// about, else its JSON cut to [`SUMMARY_CHARS`].
fn summary(arguments: &Value) -> String {
    const MAIN: [&str; 4] = ["file_path", "path", "pattern", "command"];
    let main = MAIN
        .iter()
        .find_map(|key| arguments.get(key).and_then(Value::as_str));
    let text = match main {
        Some(text) => display::name(text).into_owned(),
        None => arguments.to_string(),
    };
    cut(&text, SUMMARY_CHARS)
}

fn first_line(text: &str) -> String {
    cut(text.lines().next().unwrap_or(""), 2 * SUMMARY_CHARS)
}

fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_usage_is_not_zero() {
        assert_eq!(usage_text(&Usage::UNKNOWN), "usage unknown");
        let some = Usage {
            input_tokens: Some(0),
            ..Usage::UNKNOWN
        };
        assert_eq!(usage_text(&some), "usage: 0 input, unknown output tokens");
    }

    #[test]
    fn summaries_quote_controls_and_cut_long_arguments() {
        let args = serde_json::json!({"file_path": "/a\nb", "content": "x"});
        assert_eq!(summary(&args), "\"/a\\nb\"");
        let long = serde_json::json!({"x": "y".repeat(200)});
        assert_eq!(summary(&long).chars().count(), SUMMARY_CHARS + 3);
    }

    #[test]
    fn model_specs_are_checked() {
        #[cfg(not(feature = "anthropic"))]
        {
            let refused = open_model("anthropic:claude", Duration::from_secs(600))
                .err()
                .unwrap();
            assert!(refused.contains("not built into this burrow"), "{refused}");
        }
        assert!(
            open_model("openai:", Duration::from_secs(600))
                .err()
                .unwrap()
                .contains("names no model")
        );
        assert!(
            open_model("gpt-4", Duration::from_secs(600))
                .err()
                .unwrap()
                .contains("not a model")
        );
        assert!(
            open_model("scripted:", Duration::from_secs(600))
                .err()
                .unwrap()
                .contains("names no file")
        );
    }
}
