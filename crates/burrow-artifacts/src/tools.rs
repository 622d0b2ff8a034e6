//! The generic artifact tools over burrow-runtime's `Tool` trait (`list_artifacts`, `read_artifact`, `create_artifact`, `edit_artifact`, `archive_artifact`, and the runner's `ask_user` when `ask` is set), `describe_outcome`, which words every outcome for the model, and `ArtifactDraft`, a live-only snapshot.
//!
//! The definitions are built once from the workspace's kinds (their schemas
//! are described once, in `create_artifact`'s description) and never change
//! between requests, so a provider's prompt cache holds. A refusal (a
//! conflict, a validation failure, a missing anchor) is a tool result with
//! `is_error` that says what to do next; only a store failure is an `Err`.

use std::collections::BTreeSet;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, OnceLock};

use burrow_backend::Error;
use burrow_runtime::agent::Agent;
use burrow_runtime::runner::{RunnerConfig, emit_draft};
use burrow_runtime::session::Scope;
use burrow_runtime::subagent::{Child, ChildSetup};
use burrow_runtime::tool::{CallContext, FnTool, Tool, ToolAnnotations, ToolOutput, ToolRegistry};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::change::Change;
use crate::error::{ArtifactError, ArtifactErrorKind};
use crate::kind::clip;
use crate::store::{Actor, ArtifactStore, Committed, Proposal, Versioned};

/// How much of an artifact's rendering a read returns, in characters.
pub const DEFAULT_MAX_RENDER_CHARS: usize = 4000;
/// How much of a summary a listing shows, in characters.
pub const DEFAULT_MAX_SUMMARY_CHARS: usize = 200;

/// Whether the agent's changes apply at once or wait for a person.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum WritePolicy {
    /// Changes apply at once (unless a call asks to propose).
    #[default]
    Direct,
    /// Every change is recorded as a proposal.
    Propose,
}

/// What a submitted change did.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// It was committed.
    Applied(Committed),
    /// It was recorded as a proposal.
    Proposed(Proposal),
}

/// The outcome of a change in words for the model: applied (the new
/// version), proposed (the proposal and that nothing changed yet), a
/// conflict (the head, the changes since, and "read it again, then retry"),
/// a validation failure (with the paths), any other refusal or failure.
pub fn describe_outcome(result: &Result<Outcome, ArtifactError>) -> String {
    match result {
        Ok(Outcome::Applied(c)) => {
            let a = &c.artifact;
            let what = match c.revision.op.as_str() {
                "create" => "Created",
                "archive" => "Archived",
                "revert" => "Reverted",
                _ => "Changed",
            };
            format!(
                "{what} {} ({}): it is now at version {}; use base_version {} for its next change.",
                a.id, a.kind, a.version, a.version
            )
        }
        Ok(Outcome::Proposed(p)) => format!(
            "Proposed as proposal {}: nothing changes until a person applies it; you will be told the decision. Carry on meanwhile.",
            p.id
        ),
        Err(e) => match e.kind() {
            ArtifactErrorKind::Conflict { head, .. } => format!(
                "Conflict: {} Read it again (it is at version {head}), then retry your change against it.",
                e.message()
            ),
            ArtifactErrorKind::Validation { paths } => {
                let shown: Vec<&str> = paths
                    .iter()
                    .map(|p| if p.is_empty() { "/" } else { p.as_str() })
                    .collect();
                format!(
                    "Refused, nothing changed: {} Fix the fields at {} and try again.",
                    capital(e.message()),
                    shown.join(", ")
                )
            }
            ArtifactErrorKind::Store => format!("The artifact store failed: {}", e.message()),
            _ => format!("Refused, nothing changed: {}", capital(e.message())),
        },
    }
}

fn capital(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(first) => first.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// An agent's place in a workspace: its store, workspace, name and limits,
/// from which the tools are made.
pub struct ArtifactWorkspace {
    pub(crate) store: Arc<dyn ArtifactStore>,
    pub(crate) scope: Scope,
    pub(crate) agent: String,
    policy: WritePolicy,
    max_render_chars: usize,
    pub(crate) max_summary_chars: usize,
    ask: bool,
    followed: Mutex<BTreeSet<String>>,
    /// Change notes before each model request ([`crate::notices`]).
    notices: bool,
    /// The seq after which others' changes are noted, when the history has no note yet.
    pub(crate) watch_after: u64,
    /// Whether the log's head at this process's first look is a floor too
    /// ([`ArtifactWorkspace::with_watch_from_first_look`]).
    pub(crate) from_first_look: bool,
    /// The head at this process's first look, once looked.
    pub(crate) first_look: OnceLock<u64>,
    /// The last seq this process looked at, so a look does not read it again.
    pub(crate) seen: AtomicU64,
}

impl std::fmt::Debug for ArtifactWorkspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArtifactWorkspace")
            .field("scope", &self.scope)
            .field("agent", &self.agent)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl ArtifactWorkspace {
    /// The agent `agent` in the workspace `scope` of `store`; each change is
    /// attributed to the agent in the calling run.
    pub fn new(store: Arc<dyn ArtifactStore>, scope: Scope, agent: impl Into<String>) -> Self {
        Self {
            store,
            scope,
            agent: agent.into(),
            policy: WritePolicy::Direct,
            max_render_chars: DEFAULT_MAX_RENDER_CHARS,
            max_summary_chars: DEFAULT_MAX_SUMMARY_CHARS,
            ask: false,
            followed: Mutex::default(),
            notices: true,
            watch_after: 0,
            from_first_look: false,
            first_look: OnceLock::new(),
            seen: AtomicU64::new(0),
        }
    }

    /// The workspace of a child of this agent (a subagent's run, ADR 0364):
    /// the same store, workspace, kinds, policy, limits and notices choice;
    /// its own name, `agent`, so its changes are its own and its parent hears
    /// of them; its own followed set; noting only what others do after its
    /// first look.
    pub fn for_child(&self, agent: impl Into<String>) -> Self {
        Self {
            store: Arc::clone(&self.store),
            scope: self.scope.clone(),
            agent: agent.into(),
            policy: self.policy,
            max_render_chars: self.max_render_chars,
            max_summary_chars: self.max_summary_chars,
            ask: false,
            followed: Mutex::default(),
            notices: self.notices,
            watch_after: 0,
            from_first_look: true,
            first_look: OnceLock::new(),
            seen: AtomicU64::new(0),
        }
    }

    /// What gives each child of a `task` call (at any depth) its own place
    /// in this workspace ([`ArtifactWorkspace::for_child`]): named
    /// `AGENT/task-CALL` after its thread, with the artifact tools its
    /// definition names (all five when it names none), the artifacts it
    /// follows in its instructions and, with notices, change notes.
    pub fn child_setup(self: &Arc<Self>) -> ChildSetup {
        let parent = Arc::clone(self);
        Arc::new(move |agent: Agent, child: Child<'_>| {
            let own = child
                .thread
                .thread
                .split_once('/')
                .map_or(child.thread.thread.as_str(), |(_, rest)| rest);
            // A definition that names tools but none of the five: no workspace.
            if child
                .tools
                .is_some_and(|names| !names.iter().any(|n| TOOL_NAMES.contains(&n.as_str())))
            {
                return agent;
            }
            let workspace = Arc::new(parent.for_child(format!("{}/{own}", parent.agent)));
            workspace.install_only(agent, child.tools)
        })
    }

    /// The same workspace with (or without) change notes: what others did
    /// after `watch_after` told to the agent as a run starts and before each
    /// later model request (on by default; see [`crate::notices`]).
    pub fn with_notices(mut self, notices: bool) -> Self {
        self.notices = notices;
        self
    }

    /// The same workspace noting only changes made after its first look in
    /// this process (the log's head then) while the history holds no note:
    /// an agent that starts now hears nothing of what came before it. (A
    /// later process resuming the same history without a note starts at its
    /// own first look; give it [`ArtifactWorkspace::with_watch_after`].)
    pub fn with_watch_from_first_look(mut self) -> Self {
        self.from_first_look = true;
        self
    }

    /// The seq of the workspace log's last event (0 while it has none).
    pub async fn head_seq(&self) -> Result<u64, ArtifactError> {
        let mut head = 0;
        loop {
            let page = self
                .store
                .events(&self.scope, head, crate::store::MAX_EVENTS_PAGE)
                .await?;
            match page.last() {
                Some(last) if page.len() >= crate::store::MAX_EVENTS_PAGE => head = last.seq,
                Some(last) => return Ok(last.seq),
                None => return Ok(head),
            }
        }
    }

    /// The same workspace noting only changes after the log's seq `seq`
    /// (0 by default: every change others made) while the history holds no
    /// note yet; a history's last note says where the next look starts.
    pub fn with_watch_after(mut self, seq: u64) -> Self {
        self.watch_after = seq;
        self
    }

    /// The seq after which others' changes are noted while the history holds no note.
    pub fn watch_after(&self) -> u64 {
        self.watch_after
    }

    /// Whether the agent gets change notes.
    pub fn notices(&self) -> bool {
        self.notices
    }

    /// `agent` in this workspace: with the five tools, the artifacts it
    /// follows rendered into every request's instructions, and with
    /// `notices` the change notes before each request. (Give its runner
    /// [`ArtifactWorkspace::runner_config`] for `ask_user`.)
    pub fn install(self: &Arc<Self>, agent: Agent) -> Agent {
        self.install_only(agent, None)
    }

    /// [`ArtifactWorkspace::install`] with only the artifact tools `only`
    /// names (`None`: all five); the instructions and notes come all the same.
    pub fn install_only(self: &Arc<Self>, agent: Agent, only: Option<&[String]>) -> Agent {
        let mut tools = agent.tools().clone();
        for tool in self.tools() {
            if only.is_none_or(|names| names.iter().any(|n| n == tool.name())) {
                tools.add_arc(tool);
            }
        }
        let mut agent = agent
            .with_tools(tools)
            .with_provider(Arc::new(crate::notices::Followed(Arc::clone(self))));
        if self.notices {
            agent = agent.with_capability(Arc::new(crate::notices::Notices(Arc::clone(self))));
        }
        agent
    }

    /// The same workspace with `policy`.
    pub fn with_policy(mut self, policy: WritePolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The same workspace rendering at most `chars` of an artifact (4,000).
    pub fn with_max_render_chars(mut self, chars: usize) -> Self {
        self.max_render_chars = chars;
        self
    }

    /// The same workspace showing at most `chars` of a summary (200).
    pub fn with_max_summary_chars(mut self, chars: usize) -> Self {
        self.max_summary_chars = chars;
        self
    }

    /// The same workspace with (or without) `ask_user`, the question that
    /// pauses the run until a person answers (false by default).
    ///
    /// The tool is the runner's own (a durable pause with a pending question,
    /// answered by the thread's next message or an `Answer` command, ADR
    /// 0336): give the runner [`ArtifactWorkspace::runner_config`].
    pub fn with_ask(mut self, ask: bool) -> Self {
        self.ask = ask;
        self
    }

    /// Whether the agent gets `ask_user`.
    pub fn ask(&self) -> bool {
        self.ask
    }

    /// `config` with the workspace's `ask`: the runner then gives the agent
    /// `ask_user` and pauses its run on a question.
    pub fn runner_config(&self, config: RunnerConfig) -> RunnerConfig {
        config.with_ask_user(self.ask)
    }

    /// The names of the tools the agent gets: the five artifact tools, and
    /// `ask_user` when `ask` is set (the runner adds that one).
    pub fn tool_names(&self) -> Vec<&'static str> {
        let mut names = vec![LIST, READ, CREATE, EDIT, ARCHIVE];
        if self.ask {
            names.push(burrow_runtime::runner::ASK_USER);
        }
        names
    }

    /// The ids of the artifacts the agent follows (those it read or made), sorted.
    pub fn followed(&self) -> Vec<String> {
        self.followed
            .lock()
            .map(|f| f.iter().cloned().collect())
            .unwrap_or_default()
    }

    fn follow(&self, id: &str) {
        if let Ok(mut f) = self.followed.lock() {
            f.insert(id.to_owned());
        }
    }

    fn actor(&self, cx: &CallContext) -> Actor {
        Actor::agent(self.agent.clone(), cx.run_id.to_string())
    }

    /// `artifact` as the agent reads it: a tagged block with its id, kind and
    /// version, its rendering clipped to `max_render_chars`.
    pub fn render(&self, artifact: &Versioned) -> String {
        let kind = self.store.kinds().get(&artifact.kind).ok();
        let text = match kind {
            Some(k) => k.render(&artifact.snapshot).0,
            None => serde_json::to_string_pretty(&artifact.snapshot).unwrap_or_default(),
        };
        format!(
            "<artifact id=\"{}\" kind=\"{}\" version=\"{}\"{}>\n{}\n</artifact>",
            artifact.id,
            artifact.kind,
            artifact.version,
            if artifact.archived {
                " archived=\"true\""
            } else {
                ""
            },
            clip(&text, self.max_render_chars)
        )
    }

    /// Submits `change` as the agent, as a proposal when `propose` or the
    /// policy says so.
    pub async fn submit(
        &self,
        cx: &CallContext,
        change: Change,
        propose: bool,
        rationale: Option<&str>,
    ) -> Result<Outcome, ArtifactError> {
        let actor = self.actor(cx);
        if propose || self.policy == WritePolicy::Propose {
            let rationale = rationale.map(str::trim).unwrap_or_default();
            if rationale.is_empty() {
                return Err(ArtifactError::invalid_argument(
                    "a proposal needs a rationale: say why, in `rationale`.",
                ));
            }
            return self
                .store
                .propose(&self.scope, &actor, change, rationale)
                .await
                .map(Outcome::Proposed);
        }
        let committed = self.store.submit(&self.scope, &actor, change).await?;
        self.follow(&committed.artifact.id);
        Ok(Outcome::Applied(committed))
    }

    /// The five tools, sharing this workspace; their definitions are built
    /// here, once.
    pub fn tools(self: &Arc<Self>) -> Vec<Arc<dyn Tool>> {
        vec![
            Arc::new(self.list_tool()),
            Arc::new(self.read_tool()),
            Arc::new(self.create_tool()),
            Arc::new(self.edit_tool()),
            Arc::new(self.archive_tool()),
        ]
    }

    /// Adds the five tools to `registry`.
    pub fn add_to(self: &Arc<Self>, registry: &mut ToolRegistry) {
        for tool in self.tools() {
            registry.add_arc(tool);
        }
    }

    fn list_tool(self: &Arc<Self>) -> FnTool<ListArgs> {
        let ws = Arc::clone(self);
        FnTool::new(
            LIST,
            "List the workspace's artifacts: id, kind, version and a one-line summary. \
             Give `kind` to list one kind; archived artifacts are left out unless `include_archived`.",
            move |args: ListArgs, _cx| {
                let ws = Arc::clone(&ws);
                async move {
                    let listed = ws
                        .store
                        .list(
                            &ws.scope,
                            args.kind.as_deref(),
                            args.include_archived.unwrap_or(false),
                        )
                        .await;
                    match listed {
                        Ok(list) => Ok(ToolOutput::ok(ws.list_text(&list))),
                        Err(e) => refuse(e),
                    }
                }
            },
        )
        .with_annotations(ToolAnnotations::READ_ONLY)
    }

    fn list_text(&self, list: &[Versioned]) -> String {
        if list.is_empty() {
            return "There are no artifacts.".to_owned();
        }
        let mut out = String::new();
        for a in list {
            let summary = self
                .store
                .kinds()
                .get(&a.kind)
                .ok()
                .and_then(|k| k.render(&a.snapshot).1);
            out.push_str(&format!(
                "- {} ({}, v{}{})",
                a.id,
                a.kind,
                a.version,
                if a.archived { ", archived" } else { "" }
            ));
            if let Some(s) = summary {
                out.push_str(": ");
                out.push_str(&clip(&s, self.max_summary_chars));
            }
            out.push('\n');
        }
        out
    }

    fn read_tool(self: &Arc<Self>) -> FnTool<ReadArgs> {
        let ws = Arc::clone(self);
        FnTool::new(
            READ,
            "Read an artifact (at its head, or at `version`), rendered inside \
             <artifact id kind version> tags, and follow it. Read it before you edit it: \
             an edit names the version it was made against.",
            move |args: ReadArgs, _cx| {
                let ws = Arc::clone(&ws);
                async move {
                    let head = ws.store.get(&ws.scope, &args.id).await;
                    let artifact = match (head, args.version) {
                        (Err(e), _) => return refuse(e),
                        (Ok(head), None) => head,
                        (Ok(head), Some(v)) if v == head.version => head,
                        (Ok(head), Some(v)) => {
                            match ws.store.revision(&ws.scope, &args.id, v).await {
                                Ok(r) => Versioned {
                                    version: r.version,
                                    snapshot: r.snapshot,
                                    updated_by: r.actor,
                                    archived: false,
                                    ..head
                                },
                                Err(e) => return refuse(e),
                            }
                        }
                    };
                    ws.follow(&artifact.id);
                    Ok(ToolOutput::ok(ws.render(&artifact)))
                }
            },
        )
        .with_annotations(ToolAnnotations::READ_ONLY)
    }

    fn create_tool(self: &Arc<Self>) -> FnTool<CreateArgs> {
        let ws = Arc::clone(self);
        let mut description = String::from(
            "Create an artifact of one of the kinds below; `snapshot` must fit its JSON Schema. \
             With `propose` (and a `rationale`) it is proposed to a person instead. The kinds:",
        );
        for kind in self.store.kinds().iter() {
            description.push_str(&format!(
                "\n- {}: {}",
                kind.name(),
                serde_json::to_string(kind.schema()).unwrap_or_default()
            ));
        }
        FnTool::new(CREATE, description, move |args: CreateArgs, cx| {
            let ws = Arc::clone(&ws);
            async move {
                let change = Change::Create {
                    kind: args.kind,
                    snapshot: args.snapshot,
                };
                let propose = args.propose.unwrap_or(false);
                reply(
                    ws.submit(&cx, change, propose, args.rationale.as_deref())
                        .await,
                )
            }
        })
    }

    fn edit_tool(self: &Arc<Self>) -> FnTool<EditArgs> {
        let ws = Arc::clone(self);
        FnTool::new(
            EDIT,
            "Change an artifact made at `base_version` (the version you read). Either give \
             `patch`, an RFC 6902 JSON Patch (add, remove, replace, move, copy, test), or \
             replace text in a string field: `old` (text that occurs exactly once), `new`, \
             and `field` (a JSON Pointer, /text by default). Line endings are kept. \
             Give a one-line `summary`. With `propose` (and a `rationale`) it is proposed to a person instead.",
            move |args: EditArgs, cx| {
                let ws = Arc::clone(&ws);
                async move {
                    let change = match args.change() {
                        Ok(change) => change,
                        Err(refusal) => return reply(Err(refusal)),
                    };
                    let propose = args.propose.unwrap_or(false);
                    reply(
                        ws.submit(&cx, change, propose, args.rationale.as_deref())
                            .await,
                    )
                }
            },
        )
    }

    fn archive_tool(self: &Arc<Self>) -> FnTool<ArchiveArgs> {
        let ws = Arc::clone(self);
        FnTool::new(
            ARCHIVE,
            "Archive an artifact made at `base_version`: it stays readable and takes no more changes.",
            move |args: ArchiveArgs, cx| {
                let ws = Arc::clone(&ws);
                async move {
                    let change = Change::Archive {
                        id: args.id,
                        base_version: args.base_version,
                    };
                    reply(ws.submit(&cx, change, false, None).await)
                }
            },
        )
        .with_annotations(ToolAnnotations {
            destructive: true,
            ..ToolAnnotations::default()
        })
    }
}

/// A snapshot of an artifact a tool is still producing: sent to the live
/// watchers of the run the call belongs to, as a `draft` frame with the
/// artifact's kind and id, and never stored (not in the artifact store, not
/// in the run's history or events).
#[derive(Debug, Clone, PartialEq)]
pub struct ArtifactDraft {
    /// The artifact's kind.
    pub kind: String,
    /// The snapshot so far (not validated: it is unfinished).
    pub snapshot: Value,
    /// The artifact it will become or change, when it has an id already.
    pub artifact_id: Option<String>,
}

impl ArtifactDraft {
    /// A draft of a `kind` artifact not created yet.
    pub fn new(kind: impl Into<String>, snapshot: Value) -> Self {
        Self {
            kind: kind.into(),
            snapshot,
            artifact_id: None,
        }
    }

    /// The same draft, of the artifact `id`.
    pub fn of(mut self, id: impl Into<String>) -> Self {
        self.artifact_id = Some(id.into());
        self
    }

    /// Sends the draft to the live channel of the run making the call `cx`.
    /// Returns whether there was one: outside a runner's run (a plain
    /// `Agent::run`, a test) the draft is dropped. Emit from the call's own
    /// task.
    pub fn emit(self, cx: &CallContext) -> bool {
        emit_draft(
            Some(&cx.call_id),
            &self.kind,
            self.snapshot,
            self.artifact_id.as_deref(),
        )
    }
}

/// The tools' names.
pub const LIST: &str = "list_artifacts";
/// See [`LIST`].
pub const READ: &str = "read_artifact";
/// See [`LIST`].
pub const CREATE: &str = "create_artifact";
/// See [`LIST`].
pub const EDIT: &str = "edit_artifact";
/// See [`LIST`].
pub const ARCHIVE: &str = "archive_artifact";
/// The five artifact tools' names.
pub const TOOL_NAMES: [&str; 5] = [LIST, READ, CREATE, EDIT, ARCHIVE];

/// A change's result: the outcome in words, `is_error` for a refusal, `Err` for a store failure.
fn reply(result: Result<Outcome, ArtifactError>) -> Result<ToolOutput, Error> {
    match &result {
        Ok(_) => Ok(ToolOutput::ok(describe_outcome(&result))),
        Err(e) => failed(e, describe_outcome(&result)),
    }
}

/// A read's error: a refusal as a result with `is_error`, a store failure as `Err`.
fn refuse(e: ArtifactError) -> Result<ToolOutput, Error> {
    let text = format!("Refused: {}", capital(e.message()));
    failed(&e, text)
}

fn failed(e: &ArtifactError, text: String) -> Result<ToolOutput, Error> {
    if e.is_refusal() {
        Ok(ToolOutput::refused(text))
    } else {
        Err(Error::failure_msg(format!(
            "the artifact store failed: {}",
            e.message()
        )))
    }
}

/// Arguments of `list_artifacts`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    /// List only this kind.
    #[serde(default)]
    pub kind: Option<String>,
    /// Include archived artifacts (false).
    #[serde(default)]
    pub include_archived: Option<bool>,
}

/// Arguments of `read_artifact`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadArgs {
    /// The artifact's id.
    pub id: String,
    /// A past version to read (the head when absent).
    #[serde(default)]
    pub version: Option<u64>,
}

/// Arguments of `create_artifact`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateArgs {
    /// One of the kinds in the description.
    pub kind: String,
    /// The artifact's content, fitting its kind's schema.
    pub snapshot: Value,
    /// Propose it to a person instead of creating it.
    #[serde(default)]
    pub propose: Option<bool>,
    /// Why (needed with `propose`).
    #[serde(default)]
    pub rationale: Option<String>,
}

/// Arguments of `edit_artifact`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditArgs {
    /// The artifact's id.
    pub id: String,
    /// The version the change was made against.
    pub base_version: u64,
    /// An RFC 6902 JSON Patch: an array of operations.
    #[serde(default)]
    pub patch: Option<Value>,
    /// Text that occurs exactly once in `field`.
    #[serde(default)]
    pub old: Option<String>,
    /// The text that replaces `old`.
    #[serde(default)]
    pub new: Option<String>,
    /// A JSON Pointer to a string field (/text by default).
    #[serde(default)]
    pub field: Option<String>,
    /// What the change does, in a line.
    #[serde(default)]
    pub summary: Option<String>,
    /// Propose it to a person instead of applying it.
    #[serde(default)]
    pub propose: Option<bool>,
    /// Why (needed with `propose`).
    #[serde(default)]
    pub rationale: Option<String>,
}

impl EditArgs {
    fn change(&self) -> Result<Change, ArtifactError> {
        match (&self.patch, &self.old, &self.new) {
            (Some(patch), None, None) => {
                let patch = serde_json::from_value(patch.clone()).map_err(|e| {
                    ArtifactError::invalid_argument(format!(
                        "`patch` is not an RFC 6902 JSON Patch ({}); give an array of operations like {{\"op\": \"replace\", \"path\": \"/title\", \"value\": \"...\"}}.",
                        clip(&e.to_string(), 200)
                    ))
                })?;
                Ok(Change::Patch {
                    id: self.id.clone(),
                    base_version: self.base_version,
                    patch,
                    summary: self.summary.clone(),
                })
            }
            (None, Some(old), Some(new)) => Ok(Change::EditText {
                id: self.id.clone(),
                base_version: self.base_version,
                field: self.field.clone().unwrap_or_else(|| "/text".to_owned()),
                old: old.clone(),
                new: new.clone(),
                summary: self.summary.clone(),
            }),
            _ => Err(ArtifactError::invalid_argument(
                "give either `patch`, or both `old` and `new` (with an optional `field`), not both and not neither.",
            )),
        }
    }
}

/// Arguments of `archive_artifact`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArchiveArgs {
    /// The artifact's id.
    pub id: String,
    /// The version the archive was decided against.
    pub base_version: u64,
}
