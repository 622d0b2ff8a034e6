//! `burrow run --session ... --thread ID` and `burrow thread ...`: runs in session threads through the runtime's `Runner`, shared by every process that opens the same session store (ADR 0180).
//!
//! An idle thread starts a run here and streams it. A thread another process
//! runs is steered: the message goes into that run and this process waits
//! until it is carried out, taking the thread over (and recording the run
//! left behind as abandoned) when the holder's claim lapses. A paused thread
//! takes the message as the answer and resumes here.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use burrow_runtime::agent::{Agent, AgentEvent, Outcome};
use burrow_runtime::message::{AssistantPart, Message};
use burrow_runtime::runner::{
    Carried, Command, CommandResult, FanoutChannel, LiveChannel, LiveEvent, LiveFrame, RunHandle,
    Runner, RunnerConfig, RunnerErrorKind, StopRequest, Taken,
};
use burrow_runtime::session::{
    Answer, CommandKey, MemoryStore, RequestKind, RunRecord, RunStatus, Scope, SessionStore,
    ThreadKey,
};
use serde_json::{Value, json};

use crate::agent::{Printer, TranscriptWriter};
use crate::display;
use crate::output::Exit;

/// The author every message and answer of the command is recorded under.
const AUTHOR: &str = "user";
/// The workspace of the session store the command's threads live in.
pub(crate) const WORKSPACE: &str = "default";
/// How often a waiting process looks at the store.
const POLL: Duration = Duration::from_millis(100);

/// The run labels `burrow run` records its setup under (ADR 0198).
const MODEL_LABEL: &str = "burrow.model";
const SETTINGS_LABEL: &str = "burrow.settings";
const MAX_TURNS_LABEL: &str = "burrow.max_turns";
const TODOS_LABEL: &str = "burrow.todos";
const MEMORY_LABEL: &str = "burrow.memory";
const AGENTS_LABEL: &str = "burrow.agents";
/// The label of the team file (`--team`).
const TEAM_LABEL: &str = "burrow.team_file";
const TASK_DEPTH_LABEL: &str = "burrow.max_task_depth";
const TASK_TURNS_LABEL: &str = "burrow.task_max_turns";
const TASK_TOKENS_LABEL: &str = "burrow.task_max_tokens";
const COMPACT_AT_LABEL: &str = "burrow.compact_at";
const COMPACT_KEEP_LABEL: &str = "burrow.compact_keep";
const LARGE_RESULT_LABEL: &str = "burrow.large_result_tokens";
const ARTIFACTS_LABEL: &str = "burrow.artifacts";
const NO_NOTICES_LABEL: &str = "burrow.no_notices";
const WATCH_AFTER_LABEL: &str = "burrow.watch_after";
const MCP_TIMEOUT_LABEL: &str = "burrow.mcp_timeout";
const STRICT_MCP_LABEL: &str = "burrow.strict_mcp";
/// The workspace the run's files are in (`spec::workspace`, ADR 0359).
const BACKEND_LABEL: &str = "burrow.backend";
/// The tenant the run's files are read and written as (ADR 0359).
const BACKEND_TENANT_LABEL: &str = "burrow.backend_tenant";
/// The turn limit of a segment whose run recorded none (`burrow run`'s default).
const DEFAULT_MAX_TURNS: u32 = 100;

/// Where the session is kept and how its threads are claimed.
pub struct SessionArgs {
    /// `sqlite:FILE.db`, `postgres://...` or `memory:`.
    pub spec: String,
    /// The tenant (the workspace's owner).
    pub tenant: String,
    /// The claim TTL in seconds.
    pub claim_ttl: u64,
    /// How the runs this process starts are set up (kept in their records).
    pub setup: Setup,
}

/// The label of the `i`th settings file (from 0): the first keeps the label
/// one file always had, the next are `burrow.settings.2`, `.3`, ...
fn settings_label(i: usize) -> String {
    match i {
        0 => SETTINGS_LABEL.to_owned(),
        _ => format!("{SETTINGS_LABEL}.{}", i + 1),
    }
}

/// How a run is set up: the model, the hooks' settings file and the turn
/// limit. `burrow run` keeps it in the labels of the runs it starts, so that
/// `burrow thread answer` resumes a run as it was started, in any process.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Setup {
    /// The model spec (`scripted:FILE`, `openai:NAME`, ...).
    pub model: Option<String>,
    /// The settings files with the hooks and permissions, layered in order.
    pub settings: Vec<PathBuf>,
    /// The most model requests per segment.
    pub max_turns: Option<u32>,
    /// The agent has `write_todos` (`--todos`).
    pub todos: bool,
    /// The agent has the memory tool (`--memory`).
    pub memory: bool,
    /// The subagents' folder (`--agents`).
    pub agents: Option<PathBuf>,
    /// How deep tasks nest (`--max-task-depth`).
    pub task_depth: Option<u32>,
    /// Each child's most model requests (`--task-max-turns`).
    pub task_max_turns: Option<u32>,
    /// Each child's most tokens per run (`--task-max-tokens`).
    pub task_max_tokens: Option<u64>,
    /// The team file (`--team`): a resumed lead leads the same team.
    pub team: Option<PathBuf>,
    /// The compaction threshold in tokens (`--compact-at`).
    pub compact_at: Option<u64>,
    /// The messages a compaction keeps (`--compact-keep`).
    pub compact_keep: Option<u32>,
    /// Tool results past this many estimated tokens are spilled (`--large-result-tokens`).
    pub large_result_tokens: Option<u32>,
    /// The artifact kinds folder (`--artifacts`): a resumed run gets the same workspace (ADR 0337).
    pub artifacts: Option<PathBuf>,
    /// With `artifacts`: no change notes (`--no-notices`).
    pub no_notices: bool,
    /// With `artifacts`: the workspace's event seq after which others'
    /// changes are noted (`--watch-after`, else the head when the thread
    /// first ran with the workspace, ADR 0363).
    pub watch_after: Option<u64>,
    /// An MCP tool call's timeout in seconds (`--mcp-timeout`).
    pub mcp_timeout: Option<u64>,
    /// An MCP server that fails to start fails the run (`--strict-mcp`).
    pub strict_mcp: bool,
    /// The workspace its files are in: `--backend` as `spec::workspace`
    /// writes it, so a rewind can refuse another one (ADR 0359).
    pub backend: Option<String>,
    /// The tenant its files are read and written as (`--tenant` of the
    /// process that ran it; for `burrow serve`, the server's).
    pub backend_tenant: Option<String>,
}

impl Setup {
    /// The setup given on the command line, its file paths made absolute (the
    /// process that resumes the run may work in another folder).
    pub fn given(model: &str, settings: &[PathBuf], max_turns: u32, todos: bool) -> Self {
        let model = match model.strip_prefix("scripted:") {
            Some(file) => format!("scripted:{}", absolute(Path::new(file)).display()),
            None => model.to_owned(),
        };
        Self {
            model: Some(model),
            settings: settings.iter().map(|f| absolute(f)).collect(),
            max_turns: Some(max_turns),
            todos,
            memory: false,
            agents: None,
            task_depth: None,
            task_max_turns: None,
            task_max_tokens: None,
            team: None,
            compact_at: None,
            compact_keep: None,
            large_result_tokens: None,
            artifacts: None,
            no_notices: false,
            watch_after: None,
            mcp_timeout: None,
            strict_mcp: false,
            backend: None,
            backend_tenant: None,
        }
    }

    /// The same setup recording the workspace of `backends` as the `tenant`
    /// sees it: the files its runs change (ADR 0359).
    pub fn with_workspace(mut self, backends: &[crate::spec::BackendArg], tenant: &str) -> Self {
        self.backend = Some(crate::spec::workspace(backends));
        self.backend_tenant = Some(tenant.to_owned());
        self
    }

    /// The same setup with `--mcp-timeout` and `--strict-mcp`, so that a
    /// resumed run calls its MCP servers as the run did.
    pub fn with_mcp(mut self, timeout_secs: u64, strict: bool) -> Self {
        self.mcp_timeout = Some(timeout_secs);
        self.strict_mcp = strict;
        self
    }

    /// The same setup with the artifact workspace of `dir` (`--artifacts`), its
    /// change notes off when `no_notices` (`--no-notices`), noting changes
    /// after `watch_after` (`--watch-after`).
    #[cfg(feature = "artifacts")]
    pub fn with_artifacts(
        mut self,
        dir: Option<&Path>,
        no_notices: bool,
        watch_after: Option<u64>,
    ) -> Self {
        self.artifacts = dir.map(absolute);
        self.no_notices = no_notices && dir.is_some();
        self.watch_after = watch_after.filter(|_| dir.is_some());
        self
    }

    /// The same setup spilling tool results past `tokens` (`--large-result-tokens`).
    pub fn with_large_result_tokens(mut self, tokens: Option<u32>) -> Self {
        self.large_result_tokens = tokens;
        self
    }

    /// The same setup compacting past `at` tokens and keeping `keep` messages.
    pub fn with_compaction(mut self, at: Option<u64>, keep: Option<u32>) -> Self {
        self.compact_at = at;
        self.compact_keep = keep;
        self
    }

    /// The same setup with the memory tool when `memory` (`--memory`).
    pub fn with_memory(mut self, memory: bool) -> Self {
        self.memory = memory;
        self
    }

    /// The same setup with `--agents`, `--max-task-depth` and `--task-max-turns`.
    pub fn with_tasks(mut self, agents: Option<&Path>, depth: u32, max_turns: u32) -> Self {
        self.agents = agents.map(absolute);
        self.task_depth = Some(depth);
        self.task_max_turns = Some(max_turns);
        self
    }

    /// The same setup with `--task-max-tokens`.
    pub fn with_task_max_tokens(mut self, n: Option<u64>) -> Self {
        self.task_max_tokens = n;
        self
    }

    /// The same setup leading the team of `file` (`--team`).
    pub fn with_team(mut self, file: Option<&Path>) -> Self {
        self.team = file.map(absolute);
        self
    }

    /// The agent's configuration, its model requests waiting at most
    /// `request_timeout` each; refused when no model is known.
    pub fn load(
        &self,
        request_timeout: std::time::Duration,
    ) -> Result<crate::agent::Config, String> {
        let Some(model) = &self.model else {
            return Err(
                "the paused run does not say which model it ran with (burrow run did not start it); give --model"
                    .to_owned(),
            );
        };
        crate::agent::Config::load(
            model,
            &self.settings,
            self.max_turns.unwrap_or(DEFAULT_MAX_TURNS),
            request_timeout,
        )
        .map(|config| {
            config
                .with_todos(self.todos)
                .with_memory(self.memory)
                .with_compaction(self.compact_at, self.compact_keep)
                .with_large_result_tokens(self.large_result_tokens)
        })?
        .with_agents(
            self.agents.as_deref(),
            self.task_depth
                .unwrap_or(burrow_runtime::subagent::DEFAULT_MAX_DEPTH as u32),
            self.task_max_turns
                .unwrap_or(burrow_runtime::subagent::DEFAULT_CHILD_MAX_TURNS as u32),
            request_timeout,
        )?
        .with_task_max_tokens(self.task_max_tokens)
        .with_team(self.team.as_deref(), model, request_timeout)
    }

    /// `self` continuing a run recorded with `recorded`: the run keeps the
    /// artifact workspace (and notices choice) it was started with, whatever
    /// this process's `--artifacts` says (ADR 0362), and the team it leads
    /// unless `--team` names a file (ADR 0391).
    pub fn continuing(mut self, recorded: &Setup) -> Self {
        if self.team.is_none() {
            self.team.clone_from(&recorded.team);
        }
        self.artifacts.clone_from(&recorded.artifacts);
        self.no_notices = recorded.no_notices;
        self.watch_after = recorded.watch_after;
        self
    }

    /// `self`, each part it leaves out taken from `recorded`.
    pub fn or(self, recorded: Setup) -> Self {
        Self {
            model: self.model.or(recorded.model),
            settings: if self.settings.is_empty() {
                recorded.settings
            } else {
                self.settings
            },
            max_turns: self.max_turns.or(recorded.max_turns),
            todos: self.todos || recorded.todos,
            memory: self.memory || recorded.memory,
            agents: self.agents.or(recorded.agents),
            task_depth: self.task_depth.or(recorded.task_depth),
            task_max_turns: self.task_max_turns.or(recorded.task_max_turns),
            task_max_tokens: self.task_max_tokens.or(recorded.task_max_tokens),
            team: self.team.or(recorded.team),
            compact_at: self.compact_at.or(recorded.compact_at),
            compact_keep: self.compact_keep.or(recorded.compact_keep),
            large_result_tokens: self.large_result_tokens.or(recorded.large_result_tokens),
            no_notices: if self.artifacts.is_some() {
                self.no_notices
            } else {
                recorded.no_notices
            },
            watch_after: if self.artifacts.is_some() {
                self.watch_after
            } else {
                recorded.watch_after
            },
            artifacts: self.artifacts.or(recorded.artifacts),
            mcp_timeout: self.mcp_timeout.or(recorded.mcp_timeout),
            strict_mcp: self.strict_mcp || recorded.strict_mcp,
            backend: self.backend.or(recorded.backend),
            backend_tenant: self.backend_tenant.or(recorded.backend_tenant),
        }
    }

    fn labels(&self) -> BTreeMap<String, String> {
        let mut labels = BTreeMap::new();
        if let Some(model) = &self.model {
            labels.insert(MODEL_LABEL.to_owned(), model.clone());
        }
        for (i, settings) in self.settings.iter().enumerate() {
            labels.insert(settings_label(i), settings.display().to_string());
        }
        if let Some(n) = self.max_turns {
            labels.insert(MAX_TURNS_LABEL.to_owned(), n.to_string());
        }
        if self.todos {
            labels.insert(TODOS_LABEL.to_owned(), "true".to_owned());
        }
        if self.memory {
            labels.insert(MEMORY_LABEL.to_owned(), "true".to_owned());
        }
        if let Some(n) = self.compact_at {
            labels.insert(COMPACT_AT_LABEL.to_owned(), n.to_string());
        }
        if let Some(n) = self.compact_keep {
            labels.insert(COMPACT_KEEP_LABEL.to_owned(), n.to_string());
        }
        if let Some(n) = self.large_result_tokens {
            labels.insert(LARGE_RESULT_LABEL.to_owned(), n.to_string());
        }
        if let Some(dir) = &self.artifacts {
            labels.insert(ARTIFACTS_LABEL.to_owned(), dir.display().to_string());
            if self.no_notices {
                labels.insert(NO_NOTICES_LABEL.to_owned(), "true".to_owned());
            }
            if let Some(seq) = self.watch_after {
                labels.insert(WATCH_AFTER_LABEL.to_owned(), seq.to_string());
            }
        }
        if let Some(n) = self.mcp_timeout {
            labels.insert(MCP_TIMEOUT_LABEL.to_owned(), n.to_string());
        }
        if self.strict_mcp {
            labels.insert(STRICT_MCP_LABEL.to_owned(), "true".to_owned());
        }
        if let Some(team) = &self.team {
            labels.insert(TEAM_LABEL.to_owned(), team.display().to_string());
        }
        // A label holds at most MAX_LABEL_VALUE bytes: a longer line (many
        // mounts) is not recorded, and a rewind then checks nothing.
        if let Some(line) = &self.backend
            && line.len() <= burrow_runtime::session::MAX_LABEL_VALUE
        {
            labels.insert(BACKEND_LABEL.to_owned(), line.clone());
            if let Some(tenant) = &self.backend_tenant {
                labels.insert(BACKEND_TENANT_LABEL.to_owned(), tenant.clone());
            }
        }
        if let Some(agents) = &self.agents {
            labels.insert(AGENTS_LABEL.to_owned(), agents.display().to_string());
            if let Some(n) = self.task_depth {
                labels.insert(TASK_DEPTH_LABEL.to_owned(), n.to_string());
            }
            if let Some(n) = self.task_max_turns {
                labels.insert(TASK_TURNS_LABEL.to_owned(), n.to_string());
            }
            if let Some(n) = self.task_max_tokens {
                labels.insert(TASK_TOKENS_LABEL.to_owned(), n.to_string());
            }
        }
        labels
    }

    fn from_labels(labels: &BTreeMap<String, String>) -> Self {
        Self {
            model: labels.get(MODEL_LABEL).cloned(),
            settings: (0..)
                .map_while(|i| labels.get(&settings_label(i)).map(PathBuf::from))
                .collect(),
            max_turns: labels.get(MAX_TURNS_LABEL).and_then(|n| n.parse().ok()),
            todos: labels.get(TODOS_LABEL).is_some_and(|v| v == "true"),
            memory: labels.get(MEMORY_LABEL).is_some_and(|v| v == "true"),
            agents: labels.get(AGENTS_LABEL).map(PathBuf::from),
            task_depth: labels.get(TASK_DEPTH_LABEL).and_then(|n| n.parse().ok()),
            task_max_turns: labels.get(TASK_TURNS_LABEL).and_then(|n| n.parse().ok()),
            task_max_tokens: labels.get(TASK_TOKENS_LABEL).and_then(|n| n.parse().ok()),
            team: labels.get(TEAM_LABEL).map(PathBuf::from),
            compact_at: labels.get(COMPACT_AT_LABEL).and_then(|n| n.parse().ok()),
            compact_keep: labels.get(COMPACT_KEEP_LABEL).and_then(|n| n.parse().ok()),
            large_result_tokens: labels.get(LARGE_RESULT_LABEL).and_then(|n| n.parse().ok()),
            artifacts: labels.get(ARTIFACTS_LABEL).map(PathBuf::from),
            no_notices: labels.get(NO_NOTICES_LABEL).is_some_and(|v| v == "true"),
            watch_after: labels.get(WATCH_AFTER_LABEL).and_then(|n| n.parse().ok()),
            mcp_timeout: labels.get(MCP_TIMEOUT_LABEL).and_then(|n| n.parse().ok()),
            strict_mcp: labels.get(STRICT_MCP_LABEL).is_some_and(|v| v == "true"),
            backend: labels.get(BACKEND_LABEL).cloned(),
            backend_tenant: labels.get(BACKEND_TENANT_LABEL).cloned(),
        }
    }
}

/// `path` made absolute against the current folder (left as it is if that is unknown).
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// A refusal or failure: its exit, its kind and one sentence.
pub struct Refused {
    exit: Exit,
    kind: &'static str,
    message: String,
}

impl Refused {
    /// Its sentence.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// A bad `--session` value: exit 2, like other bad usage.
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Self {
            exit: Exit::Failed,
            kind: "invalid_argument",
            message: message.into(),
        }
    }

    /// The session store broke: exit 2.
    pub(crate) fn failure(message: impl Into<String>) -> Self {
        Self {
            exit: Exit::Failed,
            kind: "failure",
            message: message.into(),
        }
    }

    /// The session does not allow what was asked: exit 1.
    pub(crate) fn not_allowed(kind: &'static str, message: impl Into<String>) -> Self {
        Self {
            exit: Exit::Refused,
            kind,
            message: message.into(),
        }
    }

    /// Prints it (JSON on stdout, or a sentence on stderr) and returns its exit.
    pub fn report(&self, json: bool) -> io::Result<Exit> {
        if self.kind == BROKEN_PIPE {
            return Ok(self.exit);
        }
        if json {
            print_json(&json!({"error": {"kind": self.kind, "message": self.message}}))?;
        } else {
            writeln!(io::stderr(), "burrow: {}", display::sentence(&self.message))?;
        }
        Ok(self.exit)
    }
}

impl From<burrow_runtime::session::StoreError> for Refused {
    fn from(e: burrow_runtime::session::StoreError) -> Self {
        Refused::failure(format!("the session store failed: {e}"))
    }
}

impl From<burrow_runtime::runner::RunnerError> for Refused {
    fn from(e: burrow_runtime::runner::RunnerError) -> Self {
        use burrow_runtime::runner::RunnerErrorKind as K;
        match e.kind() {
            K::Store => Refused::failure(format!("the session store failed: {}", e.message())),
            other => Refused::not_allowed(other.as_str(), e.message().to_owned()),
        }
    }
}

impl From<io::Error> for Refused {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::BrokenPipe {
            // The reader went away (`| head`): a quiet end, as for any command.
            return Refused {
                exit: Exit::Success,
                kind: BROKEN_PIPE,
                message: String::new(),
            };
        }
        Refused::failure(format!("cannot write output: {e}"))
    }
}

/// The kind of a [`Refused`] that is no refusal: stdout's reader went away.
const BROKEN_PIPE: &str = "broken_pipe";

/// Opens the session store `spec` names.
pub async fn open_store(spec: &str) -> Result<Arc<dyn SessionStore>, Refused> {
    open_store_with(spec, None, true).await
}

/// Opens the session store `spec` names for a server whose callers come at
/// once: up to `pg_pool` idle PostgreSQL connections kept (`None`: the store's
/// default; `burrow serve` sizes it, docs/adr/0343), and every SQLite call
/// queued for the store's own thread, none run in place (docs/adr/0400).
pub async fn open_store_pooled(
    spec: &str,
    pg_pool: Option<usize>,
) -> Result<Arc<dyn SessionStore>, Refused> {
    open_store_with(spec, pg_pool, false).await
}

/// Opens the session store `spec` names; `sqlite_in_place`: a SQLite call that
/// finds its connection free may run in place (`SqliteOptions::in_place`).
async fn open_store_with(
    spec: &str,
    pg_pool: Option<usize>,
    sqlite_in_place: bool,
) -> Result<Arc<dyn SessionStore>, Refused> {
    if spec == "memory:" {
        return Ok(Arc::new(MemoryStore::new()));
    }
    if let Some(path) = spec.strip_prefix("sqlite:") {
        if path.is_empty() {
            return Err(Refused::usage(
                "the session sqlite: names no file; give sqlite:FILE.db",
            ));
        }
        return open_sqlite(path, sqlite_in_place);
    }
    if spec.starts_with("postgres://") || spec.starts_with("postgresql://") {
        return open_postgres(spec, pg_pool).await;
    }
    Err(Refused::usage(format!(
        "{} is not a session burrow knows: give sqlite:FILE.db, postgres://... or memory:",
        display::name(spec)
    )))
}

#[cfg(feature = "sqlite")]
fn open_sqlite(path: &str, in_place: bool) -> Result<Arc<dyn SessionStore>, Refused> {
    use burrow_runtime::session::{SqliteOptions, SqliteStore, SystemClock};
    let mut options = SqliteOptions::default();
    options.in_place = in_place;
    SqliteStore::open_with(path, Arc::new(SystemClock), options)
        .map(|s| Arc::new(s) as Arc<dyn SessionStore>)
        .map_err(|e| Refused::usage(format!("the session store cannot be opened: {e}")))
}

#[cfg(not(feature = "sqlite"))]
fn open_sqlite(_path: &str, _in_place: bool) -> Result<Arc<dyn SessionStore>, Refused> {
    Err(Refused::usage(
        "SQLite sessions are not built into this burrow (rebuild burrow-agent-cli with its `sqlite` feature)",
    ))
}

#[cfg(feature = "postgres")]
async fn open_postgres(url: &str, pool: Option<usize>) -> Result<Arc<dyn SessionStore>, Refused> {
    use burrow_runtime::session::{PostgresOptions, PostgresStore, SystemClock};
    let mut options = PostgresOptions::default();
    if let Some(pool) = pool {
        options.pool = pool;
    }
    PostgresStore::connect_with(url, Arc::new(SystemClock), options)
        .await
        .map(|s| Arc::new(s) as Arc<dyn SessionStore>)
        .map_err(|e| Refused::usage(format!("the session store cannot be opened: {e}")))
}

#[cfg(not(feature = "postgres"))]
async fn open_postgres(_url: &str, _pool: Option<usize>) -> Result<Arc<dyn SessionStore>, Refused> {
    Err(Refused::usage(
        "PostgreSQL sessions are not built into this burrow (rebuild burrow-agent-cli with its `postgres` feature)",
    ))
}

/// The workspace of the session store the command's threads live in, for `tenant`.
pub fn scope(tenant: &str) -> Scope {
    Scope::new(tenant, WORKSPACE)
}

fn runner(
    agent: Agent,
    store: Arc<dyn SessionStore>,
    args: &SessionArgs,
    transcript: Option<TranscriptWriter>,
) -> Runner {
    let live = Live {
        fanout: FanoutChannel::new(crate::agent::LIVE_FRAMES),
        transcript: Mutex::new(transcript),
        watched: Mutex::default(),
    };
    runner_with_live(agent, store, args, Arc::new(live), None)
}

/// The runner `burrow run --session` and `burrow thread` use (the claim TTL,
/// `ask_user`, the setup's run labels), its live frames going to `live`:
/// `burrow serve` runs threads the same way, each thread's agent made by
/// `agent_for` when given (ADR 0405).
pub fn runner_with_live(
    agent: Agent,
    store: Arc<dyn SessionStore>,
    args: &SessionArgs,
    live: Arc<dyn LiveChannel>,
    agent_for: Option<burrow_runtime::runner::AgentForThread>,
) -> Runner {
    let mut config = RunnerConfig::default()
        .with_claim_ttl(Duration::from_secs(args.claim_ttl))
        .with_ask_user(true)
        .with_live(live);
    if let Some(agent_for) = agent_for {
        config = config.with_agent_for_thread(agent_for);
    }
    for (name, value) in args.setup.labels() {
        config = config.with_run_label(name, value);
    }
    if let Some(checkpointer) = crate::thread_checkpoint::checkpointer() {
        config = config.with_checkpoints(checkpointer);
    }
    Runner::with_config(agent, store, config)
}

/// `burrow run PROMPT --session S --thread T [--command-id C]`.
pub async fn run(
    agent: Agent,
    store: Arc<dyn SessionStore>,
    args: &SessionArgs,
    thread: &str,
    prompt: &str,
    command_id: Option<&str>,
    json: bool,
) -> Result<Exit, Refused> {
    let scope = scope(&args.tenant);
    let key = scope.thread(thread);
    let transcript = transcript(&agent, &*store, &key)
        .await
        .map(|t| t.with_prompt(prompt));
    let runner = runner(agent, store.clone(), args, transcript);
    let exit = post_and_follow(&runner, &key, prompt, command_id, json).await;
    runner.drain().await;
    runner.aclose().await;
    exit
}

async fn post_and_follow(
    runner: &Runner,
    thread: &ThreadKey,
    prompt: &str,
    command_id: Option<&str>,
    json: bool,
) -> Result<Exit, Refused> {
    let store = runner.store().clone();
    let seq = match command_id {
        None => {
            let sent = runner.send(thread, AUTHOR, prompt, None).await?;
            if let Some(handle) = sent.run {
                return stream(runner, handle, json).await;
            }
            sent.seq
        }
        Some(id) => {
            let command_key = CommandKey {
                scope: thread.scope.clone(),
                sender: AUTHOR.to_owned(),
                command_id: id.to_owned(),
            };
            if let Some(remembered) = runner.remembered(&command_key).await? {
                return carry_on(runner, thread, id, &remembered, json).await;
            }
            let command = Command::Send {
                thread: thread.thread.clone(),
                text: prompt.to_owned(),
                message_id: None,
            };
            let result = runner.execute(&thread.scope, AUTHOR, command, id).await?;
            // Nothing awaited since the run (if any) started: it is still open to watch.
            if let Some(handle) = runner.running(thread) {
                return stream(runner, handle, json).await;
            }
            let message_id = match &result {
                CommandResult::Posted { message_id, .. } => message_id,
                CommandResult::Rejected { kind, message } => {
                    let kind = match kind {
                        RunnerErrorKind::InvalidArgument => "invalid_argument",
                        RunnerErrorKind::NotFound => "not_found",
                        _ => "invalid_state",
                    };
                    return Err(Refused::not_allowed(kind, message.clone()));
                }
                // The id was used by a command of another kind: say what it did.
                _ => return remembered_result(id, &result, json),
            };
            match store.message(&thread.scope, message_id).await? {
                Some(message) => message.seq,
                None => return remembered_result(id, &result, json),
            }
        }
    };
    follow(runner, thread, seq, json).await
}

/// A repeated command id: its message was posted the first time. Once that
/// message's run is carried out, prints its outcome; a run left abandoned by
/// a dead process is taken over when its claim lapses and carried on here
/// (docs/adr/0285-a-retried-command-carries-its-abandoned-run-on.md).
async fn carry_on(
    runner: &Runner,
    thread: &ThreadKey,
    id: &str,
    remembered: &CommandResult,
    json: bool,
) -> Result<Exit, Refused> {
    let CommandResult::Posted { message_id, .. } = remembered else {
        return remembered_result(id, remembered, json);
    };
    match runner.wait_carried(thread, message_id, POLL).await? {
        Carried::Here(handle) => {
            note(
                json,
                json!({"type": "taken_over", "thread_id": thread.thread, "run_id": handle.run_id(), "command_id": id}),
                &format!(
                    "command {id} was posted by a process that died: this process took the thread over and carries it out"
                ),
            )?;
            stream(runner, handle, json).await
        }
        Carried::Ended(run) => {
            remembered_result(id, remembered, json)?;
            print_record_end(&run, json)?;
            Ok(exit_of_status(run.status))
        }
        _ => remembered_result(id, remembered, json),
    }
}

/// Prints what a repeated command id did the first time; does nothing else.
fn remembered_result(id: &str, result: &CommandResult, json: bool) -> Result<Exit, Refused> {
    if json {
        print_json(&json!({"type": "remembered", "command_id": id, "result": result}))?;
    } else {
        let did = match result {
            CommandResult::Posted { thread, message_id } => {
                format!("message {message_id} posted to thread {thread}")
            }
            CommandResult::Answered {
                run_id, request_id, ..
            } => format!("request {request_id} of run {run_id} answered"),
            CommandResult::Stopped { run_id, .. } => format!("run {run_id} asked to stop"),
            _ => "another command".to_owned(),
        };
        let line = format!("burrow: command {id} was carried out already ({did}); nothing is done");
        writeln!(io::stderr(), "{}", display::sentence(&line))?;
    }
    Ok(Exit::Success)
}

/// The message at `seq` was posted while another process holds the thread:
/// waits until it is carried out, or takes the thread over.
async fn follow(
    runner: &Runner,
    thread: &ThreadKey,
    seq: u64,
    json: bool,
) -> Result<Exit, Refused> {
    let store = runner.store().clone();
    let active = store.thread(thread).await?.and_then(|info| info.active_run);
    note(
        json,
        json!({"type": "steering", "thread_id": thread.thread, "run_id": active}),
        &format!(
            "thread {} is running in another process{}; the message steers it, waiting until it is carried out",
            thread.thread,
            active
                .as_deref()
                .map(|r| format!(" (run {r})"))
                .unwrap_or_default()
        ),
    )?;
    match runner.wait_taken(thread, seq, POLL).await? {
        Taken::Here(handle) => {
            note(
                json,
                json!({"type": "taken_over", "thread_id": thread.thread, "run_id": handle.run_id()}),
                "the other process's claim lapsed: this process took the thread over",
            )?;
            stream(runner, handle, json).await
        }
        Taken::Elsewhere(None) => Ok(Exit::Success),
        Taken::Elsewhere(Some(run_id)) => {
            let run = runner.wait_settled(thread, &run_id, POLL).await?;
            print_record_end(&run, json)?;
            Ok(exit_of_status(run.status))
        }
        _ => Ok(Exit::Success),
    }
}

/// A note: a JSON line with `--json`, else a `burrow: ...` line on stderr.
fn note(json: bool, value: Value, text: &str) -> io::Result<()> {
    if json {
        print_json(&value)
    } else {
        writeln!(io::stderr(), "burrow: {}", display::sentence(text))
    }
}

/// Streams the run segment `handle` as `burrow run` prints a run, and its
/// end: the printer is a watcher of the run's live frames, so a slow reader
/// slows it only; a reader that goes away stops the run cleanly (docs/adr/0262).
async fn stream(runner: &Runner, handle: RunHandle, json: bool) -> Result<Exit, Refused> {
    let scope = handle.thread().scope.clone();
    let thread_id = handle.thread().thread.clone();
    let frames = runner.watch(&scope, handle.run_id());
    let mut printer = Printer::new(json);
    printer
        .event(AgentEvent::RunStarted {
            run_id: handle.run_id().to_owned(),
            thread_id: Some(thread_id),
        })
        .await;
    let interrupts = stop_on_interrupt(runner, &handle.thread().scope, handle.run_id());
    printer
        .frames(frames, || {
            runner.stop(&scope, handle.run_id());
        })
        .await;
    let result = handle.wait().await;
    if let Some(interrupts) = interrupts {
        interrupts.abort();
    }
    printer.event(crate::agent::run_ended(&result)).await;
    if let Err(e) = printer.end(&result).await {
        return Err(e.into());
    }
    if matches!(result.outcome, Outcome::Paused { .. }) {
        print_pending(runner, &scope, handle.run_id(), json).await?;
    }
    Ok(crate::agent::exit_of(&result.outcome))
}

/// Ctrl-C (SIGINT) stops the run as `burrow run` does without a session: it
/// ends `stopped`, recorded so; a second Ctrl-C ends burrow at once (exit 130).
fn stop_on_interrupt(
    runner: &Runner,
    scope: &Scope,
    run_id: &str,
) -> Option<tokio::task::JoinHandle<()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt()).ok()?;
    let runner = runner.clone();
    let run_id = run_id.to_owned();
    let scope = scope.clone();
    Some(tokio::spawn(async move {
        if interrupt.recv().await.is_some() {
            runner.stop(&scope, &run_id);
        }
        if interrupt.recv().await.is_some() {
            crate::mcp_signals::end_now(130, "interrupted again; stopping now");
        }
    }))
}

/// The runner's live channel: an in-process fan-out with room for
/// [`crate::agent::LIVE_FRAMES`] frames, writing the session's transcript
/// from the frames as the run sends them, when its hooks are told of one.
/// A run that ends before this process watched it is kept until it is
/// watched (the run no longer waits for the printer, so it may end first).
struct Live {
    fanout: FanoutChannel,
    transcript: Mutex<Option<TranscriptWriter>>,
    /// Runs watched here, and the ends of runs closed before their watch.
    watched: Mutex<(
        std::collections::HashSet<String>,
        BTreeMap<String, LiveEvent>,
    )>,
}

impl Live {
    fn watched(
        &self,
    ) -> std::sync::MutexGuard<
        '_,
        (
            std::collections::HashSet<String>,
            BTreeMap<String, LiveEvent>,
        ),
    > {
        self.watched.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl LiveChannel for Live {
    fn open(&self, run_id: &str) {
        // A new segment (a paused run resumed) waits for a watch of its own.
        self.watched().0.remove(run_id);
        self.fanout.open(run_id);
    }

    fn send(&self, frame: LiveFrame) {
        if let Some(t) = self
            .transcript
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_mut()
        {
            match &frame.event {
                LiveEvent::Started { thread_id } => t.event(&AgentEvent::RunStarted {
                    run_id: frame.run_id.clone(),
                    thread_id: thread_id.clone(),
                }),
                other => {
                    if let Some(event) = crate::agent::agent_event(other.clone()) {
                        t.event(&event);
                    }
                }
            }
        }
        self.fanout.send(frame);
    }

    fn close(&self, run_id: &str, end: LiveEvent) {
        if let Some(t) = self
            .transcript
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_mut()
        {
            t.event(&AgentEvent::RunEnded {
                outcome: String::new(),
                reason: None,
                message: None,
                usage: burrow_runtime::message::Usage::UNKNOWN,
            });
        }
        let mut watched = self.watched();
        if watched.0.contains(run_id) {
            self.fanout.close(run_id, end);
        } else {
            watched.1.insert(run_id.to_owned(), end);
        }
    }

    fn watch(&self, run_id: &str) -> Option<futures::stream::BoxStream<'static, LiveFrame>> {
        let mut watched = self.watched();
        watched.0.insert(run_id.to_owned());
        let frames = self.fanout.watch(run_id);
        if let Some(end) = watched.1.remove(run_id) {
            self.fanout.close(run_id, end);
        }
        frames
    }
}

/// The transcript of `thread` for the agent's hooks, holding the thread's
/// history so far (`None` without hooks or a transcript folder).
async fn transcript(
    agent: &Agent,
    store: &dyn SessionStore,
    thread: &ThreadKey,
) -> Option<TranscriptWriter> {
    if agent.hooks().is_empty() {
        return None;
    }
    let dir = crate::agent::transcript_dir()?;
    let history = burrow_runtime::session::load_history(store, thread)
        .await
        .unwrap_or_default();
    TranscriptWriter::create(&dir, &thread.thread, &history)
}

/// After a pause: the open requests, so `burrow thread answer` can name one.
async fn print_pending(
    runner: &Runner,
    scope: &Scope,
    run_id: &str,
    json: bool,
) -> Result<(), Refused> {
    let Some(run) = runner.store().run(scope, run_id).await? else {
        return Ok(());
    };
    for request in run.requests.iter().filter(|r| r.answer.is_none()) {
        let spec = &request.spec;
        let mut event = json!({"type": "request", "run_id": run_id, "request_id": spec.id,
                   "kind": kind_name(spec.kind), "tool_name": spec.tool_name});
        relayed_question(&mut event, spec);
        let asks = relayed_line(&event);
        let asks = if asks.is_empty() {
            asks
        } else {
            format!(" ({})", asks.trim_start_matches(": "))
        };
        note(
            json,
            event,
            &format!(
                "run {run_id} waits for an answer to request {} ({} of {}){asks}; answer with `burrow thread answer THREAD --request {} TEXT`",
                spec.id,
                kind_name(spec.kind),
                spec.tool_name,
                spec.id
            ),
        )?;
    }
    Ok(())
}

/// A subagent's question relayed by its `task` call (ADR 0385): its
/// `subagent` and `question` added to the request's JSON `p`; a subagent's
/// approval relayed (ADR 0392): its `subagent`, `task_id`, `tool` and
/// `subagent_call_id`.
fn relayed_question(p: &mut Value, spec: &burrow_runtime::session::RequestSpec) {
    let Some(args) = &spec.arguments else { return };
    if spec.kind == RequestKind::Approval {
        if spec.id == spec.call_id {
            return;
        }
        for (from, to) in [
            ("subagent", "subagent"),
            ("task_id", "task_id"),
            ("tool", "tool"),
            ("call_id", "subagent_call_id"),
        ] {
            if let Some(v) = args.get(from) {
                p[to] = v.clone();
            }
        }
        return;
    }
    for field in ["subagent", "question", "task_id"] {
        if let Some(v) = args.get(field) {
            p[field] = v.clone();
        }
    }
}

/// What a request relayed from a subagent says, after `: `; empty for
/// another request.
fn relayed_line(p: &Value) -> String {
    match (
        p["subagent"].as_str(),
        p["question"].as_str(),
        p["tool"].as_str(),
    ) {
        (Some(subagent), Some(question), _) => {
            format!(": the subagent {subagent} asks: {question}")
        }
        (Some(subagent), None, Some(tool)) => format!(
            ": the subagent {subagent} waits for approval of its call {} ({tool})",
            p["subagent_call_id"].as_str().unwrap_or_default()
        ),
        _ => String::new(),
    }
}

fn kind_name(kind: RequestKind) -> &'static str {
    match kind {
        RequestKind::Question => "question",
        RequestKind::Approval => "approval",
    }
}

/// The end of a run carried out elsewhere, from its record.
fn print_record_end(run: &RunRecord, json: bool) -> io::Result<()> {
    if json {
        return print_json(&json!({
            "type": "run_ended",
            "run_id": run.run_id,
            "outcome": run.status.as_str(),
            "reason": run.reason,
            "usage": run.usage,
        }));
    }
    let line = format!("burrow: run {}: {}", run.run_id, status_text(run));
    writeln!(io::stderr(), "{}", display::sentence(&line))
}

fn status_text(run: &RunRecord) -> String {
    match (&run.reason, &run.failure) {
        (Some(reason), Some(failure)) => format!("{} ({reason}: {failure})", run.status.as_str()),
        (Some(reason), None) => format!("{} ({reason})", run.status.as_str()),
        _ => run.status.as_str().to_owned(),
    }
}

fn exit_of_status(status: RunStatus) -> Exit {
    match status {
        RunStatus::Completed => Exit::Success,
        RunStatus::Paused => Exit::Paused,
        _ => Exit::Failed,
    }
}

fn print_json(value: &Value) -> io::Result<()> {
    let mut out = io::stdout().lock();
    writeln!(out, "{value}")?;
    out.flush()
}

/// `burrow thread list`.
pub async fn list(args: &SessionArgs, json: bool) -> Result<Exit, Refused> {
    let store = open_store(&args.spec).await?;
    let scope = scope(&args.tenant);
    let mut threads = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = store
            .threads(&scope, after.as_deref(), burrow_runtime::session::MAX_PAGE)
            .await?;
        let Some(last) = page.last() else { break };
        after = Some(last.thread.clone());
        threads.extend(page);
    }
    if json {
        print_json(&json!({"threads": threads}))?;
        return Ok(Exit::Success);
    }
    let mut out = io::stdout().lock();
    for t in &threads {
        writeln!(
            out,
            "{} {} {}",
            display::name(&t.thread),
            serde_json::to_value(t.status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
            t.active_run.as_deref().unwrap_or("-")
        )?;
    }
    Ok(Exit::Success)
}

/// `burrow thread prune --before TIME`: forgets what the session's threads no
/// longer need from before the cutoff (ADR 0255) and says what it removed.
pub async fn prune(
    args: &SessionArgs,
    before: crate::cli::Before,
    json: bool,
) -> Result<Exit, Refused> {
    let store = open_store(&args.spec).await?;
    let now = store.now_ms();
    let before_ms = before.at_ms(now);
    if before_ms > now {
        return Err(Refused::usage(
            "--before names a time in the future: prune forgets only what is older than a time past",
        ));
    }
    let pruned = store.prune(&scope(&args.tenant), before_ms).await?;
    let at = jiff::Timestamp::from_millisecond(before_ms)
        .map(|t| t.to_string())
        .unwrap_or_else(|_| before_ms.to_string());
    if json {
        print_json(&json!({
            "before": at,
            "commands": pruned.commands,
            "events": pruned.events,
            "tool_calls": pruned.tool_calls,
        }))?;
        return Ok(Exit::Success);
    }
    let mut out = io::stdout().lock();
    writeln!(
        out,
        "pruned {} command results, {} events and {} tool-call records from before {at}",
        pruned.commands, pruned.events, pruned.tool_calls
    )?;
    Ok(Exit::Success)
}

/// `burrow thread show ID`: history, runs with outcome and reason, pending requests.
pub async fn show(args: &SessionArgs, thread: &str, json: bool) -> Result<Exit, Refused> {
    let store = open_store(&args.spec).await?;
    let key = scope(&args.tenant).thread(thread);
    let Some(info) = store.thread(&key).await? else {
        return Err(Refused::not_allowed(
            "not_found",
            format!("the session has no thread {}", display::name(thread)),
        ));
    };
    let history = store.history(&key, 0).await?;
    let runs = store.runs(&key).await?;
    let pending: Vec<Value> = runs
        .iter()
        .filter(|r| r.status == RunStatus::Paused)
        .flat_map(|r| {
            r.requests.iter().filter(|q| q.answer.is_none()).map(|q| {
                let mut p = json!({"run_id": r.run_id, "request_id": q.spec.id,
                       "kind": kind_name(q.spec.kind), "tool_name": q.spec.tool_name});
                relayed_question(&mut p, &q.spec);
                p
            })
        })
        .collect();
    let messages: Vec<Message> = history.iter().map(|e| e.message.clone()).collect();
    let todos = burrow_runtime::todos::current(&messages).unwrap_or_default();
    let children = children(&*store, &key).await?;
    let members = members(&*store, &key).await?;
    if json {
        let history: Vec<Value> = history
            .iter()
            .map(|e| json!({"pos": e.pos, "run_id": e.run_id, "message": e.message}))
            .collect();
        print_json(
            &json!({"thread": info, "history": history, "runs": runs, "pending": pending,
                           "todos": todos, "children": children, "members": members}),
        )?;
        return Ok(Exit::Success);
    }
    let mut out = io::stdout().lock();
    writeln!(out, "thread {}", display::name(thread))?;
    writeln!(out, "history:")?;
    for entry in &history {
        writeln!(
            out,
            "  {}",
            display::sentence(&message_line(&entry.message))
        )?;
    }
    writeln!(out, "runs:")?;
    for run in &runs {
        let model = match run.labels.get(MODEL_LABEL) {
            Some(model) => format!(" (model {model})"),
            None => String::new(),
        };
        writeln!(
            out,
            "  {}",
            display::sentence(&format!("{} {}{model}", run.run_id, status_text(run)))
        )?;
    }
    if !todos.is_empty() {
        writeln!(out, "todos:")?;
        for todo in &todos {
            let mark = match todo.status {
                burrow::types::TodoStatus::Pending => "[ ]",
                burrow::types::TodoStatus::InProgress => "[*]",
                burrow::types::TodoStatus::Completed => "[x]",
            };
            writeln!(out, "  {mark} {}", display::sentence(&todo.content))?;
        }
    }
    if !children.is_empty() {
        writeln!(out, "children:")?;
        for c in &children {
            let how = match c["reason"].as_str() {
                Some(reason) => format!("{} ({reason})", c["status"].as_str().unwrap_or("?")),
                None => c["status"].as_str().unwrap_or("?").to_owned(),
            };
            let line = format!(
                "{} {} {how} (run {})",
                c["thread_id"].as_str().unwrap_or_default(),
                c["subagent_type"].as_str().unwrap_or("?"),
                c["run_id"].as_str().unwrap_or("-")
            );
            writeln!(out, "  {}", display::sentence(&line))?;
        }
    }
    if !members.is_empty() {
        writeln!(out, "members:")?;
        for m in &members {
            let status = m["status"].as_str().unwrap_or("?");
            let how = match m["reason"].as_str() {
                Some(reason) => format!("{status} ({reason})"),
                None => status.to_owned(),
            };
            let runs = m["runs"].as_u64().unwrap_or_default();
            let line = format!(
                "{} {} {how} (run {}; {runs} {})",
                m["thread_id"].as_str().unwrap_or_default(),
                m["member"].as_str().unwrap_or("?"),
                m["run_id"].as_str().unwrap_or("-"),
                if runs == 1 { "run" } else { "runs" }
            );
            writeln!(out, "  {}", display::sentence(&line))?;
        }
    }
    writeln!(out, "pending requests:")?;
    for p in &pending {
        let mut line = format!(
            "{} {} of {} (run {})",
            p["request_id"].as_str().unwrap_or_default(),
            p["kind"].as_str().unwrap_or_default(),
            p["tool_name"].as_str().unwrap_or_default(),
            p["run_id"].as_str().unwrap_or_default()
        );
        line.push_str(&relayed_line(p));
        writeln!(out, "  {}", display::sentence(&line))?;
    }
    Ok(Exit::Success)
}

/// The threads right under `thread` whose last segment starts with
/// `segment` (`task-`, `member-`), in id order, with their runs: the store
/// lists threads in id order, so they are the threads after
/// `THREAD/SEGMENT` that start with it.
async fn under(
    store: &dyn SessionStore,
    thread: &ThreadKey,
    segment: &str,
) -> Result<Vec<(String, Vec<RunRecord>)>, Refused> {
    let prefix = format!("{}/{segment}", thread.thread);
    let mut found = Vec::new();
    let mut after = prefix.clone();
    'pages: loop {
        let page = store
            .threads(
                &thread.scope,
                Some(&after),
                burrow_runtime::session::MAX_PAGE,
            )
            .await?;
        let Some(last) = page.last() else { break };
        after = last.thread.clone();
        for info in page {
            let Some(rest) = info.thread.strip_prefix(&prefix) else {
                break 'pages;
            };
            // A thread further down (`.../task-a/task-b`) is its own parent's.
            if rest.contains('/') {
                continue;
            }
            let runs = store
                .runs(&thread.scope.thread(info.thread.clone()))
                .await?;
            found.push((info.thread, runs));
        }
    }
    Ok(found)
}

/// The `task` children of `thread` (threads `THREAD/task-CALL`), each with
/// its last run's outcome: `thread_id`, `subagent_type`, `run_id`,
/// `status`, `reason`, `usage`.
async fn children(store: &dyn SessionStore, thread: &ThreadKey) -> Result<Vec<Value>, Refused> {
    Ok(under(store, thread, "task-")
        .await?
        .into_iter()
        .map(|(thread_id, runs)| {
            let last = runs.last();
            json!({
                "thread_id": thread_id,
                "subagent_type": last.and_then(|r| r.labels.get(burrow_runtime::subagent::SUBAGENT_LABEL)),
                "run_id": last.map(|r| r.run_id.clone()),
                "status": last.map(|r| r.status.as_str()),
                "reason": last.and_then(|r| r.reason.clone()),
                "usage": last.map(|r| r.usage),
            })
        })
        .collect())
}

/// The members of the team `thread` leads (threads `THREAD/member-NAME`,
/// ADR 0357), each with its last run's outcome: `thread_id`, `member`,
/// `runs` (how many it made), `run_id`, `status`, `reason`, `usage`
/// (docs/adr/0390-thread-show-lists-a-team-s-members.md).
async fn members(store: &dyn SessionStore, thread: &ThreadKey) -> Result<Vec<Value>, Refused> {
    let prefix = format!("{}/member-", thread.thread);
    Ok(under(store, thread, "member-")
        .await?
        .into_iter()
        .map(|(thread_id, runs)| {
            let last = runs.last();
            json!({
                "member": thread_id.strip_prefix(&prefix).unwrap_or_default(),
                "thread_id": thread_id,
                "runs": runs.len(),
                "run_id": last.map(|r| r.run_id.clone()),
                "status": last.map(|r| r.status.as_str()),
                "reason": last.and_then(|r| r.reason.clone()),
                "usage": last.map(|r| r.usage),
            })
        })
        .collect())
}

/// One history message on one line.
fn message_line(message: &Message) -> String {
    match message {
        Message::System { text } => format!("system: {text}"),
        Message::User { text } => format!("user: {text}"),
        Message::Assistant { parts } => {
            let said: Vec<String> = parts
                .iter()
                .filter_map(|p| match p {
                    AssistantPart::Text { text } => Some(text.clone()),
                    AssistantPart::ToolCall(call) => Some(format!("[calls {}]", call.name)),
                    _ => None,
                })
                .collect();
            format!("assistant: {}", said.join(" "))
        }
        Message::ToolResult(r) => format!(
            "tool {}{}: {}",
            r.name,
            if r.is_error { " (error)" } else { "" },
            r.content.lines().next().unwrap_or("")
        ),
        Message::Compaction(c) => format!(
            "compaction ({}): {} messages summarised, the last {} kept; summary: {}",
            c.trigger,
            c.summarised,
            c.kept,
            c.summary.lines().next().unwrap_or("")
        ),
    }
}

/// The thread's active run, which `burrow thread answer` answers.
async fn paused_run(store: &dyn SessionStore, key: &ThreadKey) -> Result<RunRecord, Refused> {
    let active = store.thread(key).await?.and_then(|info| info.active_run);
    let Some(run_id) = active else {
        return Err(Refused::not_allowed(
            "invalid_state",
            format!(
                "thread {} has no paused run to answer",
                display::name(&key.thread)
            ),
        ));
    };
    match store.run(&key.scope, &run_id).await? {
        Some(run) => Ok(run),
        None => Err(Refused::not_allowed(
            "not_found",
            "the thread's run is not in the session store",
        )),
    }
}

/// `burrow thread compact ID`: the model summarises the idle thread's older
/// history and a compaction entry joins it, under the thread's claim; the
/// next run reads the compacted view (ADR 0293). The model and the hooks are
/// `given`'s, else those the thread's last run was started with.
#[allow(clippy::too_many_arguments)]
pub async fn compact(
    args: &SessionArgs,
    thread: &str,
    given: Setup,
    instructions: Option<&str>,
    keep: u32,
    request_timeout: Duration,
    json: bool,
) -> Result<Exit, Refused> {
    use burrow_runtime::compaction::{self, MANUAL};
    use burrow_runtime::session::{ClaimAttempt, Commit, HistoryItem, Write};
    let store = open_store(&args.spec).await?;
    let key = scope(&args.tenant).thread(thread);
    let Some(info) = store.thread(&key).await? else {
        return Err(Refused::not_allowed(
            "not_found",
            format!("the session has no thread {}", display::name(thread)),
        ));
    };
    if let Some(run) = &info.active_run {
        return Err(Refused::not_allowed(
            "invalid_state",
            format!(
                "thread {} has a run ({run}) that has not ended; compact it once the run has ended",
                display::name(thread)
            ),
        ));
    }
    let recorded = store
        .runs(&key)
        .await?
        .last()
        .map(|r| Setup::from_labels(&r.labels))
        .unwrap_or_default();
    let setup = given.or(recorded);
    if setup.model.is_none() {
        return Err(Refused::usage(
            "the thread's runs do not say which model they ran with; give --model",
        ));
    }
    let config = setup.load(request_timeout).map_err(Refused::usage)?;
    let holder = format!("burrow-compact-{}", uuid::Uuid::now_v7().simple());
    let ttl = request_timeout + Duration::from_secs(60);
    let claim = match store.acquire_claim(&key, &holder, ttl).await? {
        ClaimAttempt::Granted(claim) => claim,
        _ => {
            return Err(Refused::not_allowed(
                "busy",
                format!(
                    "thread {} is claimed by another process; try again once it is idle",
                    display::name(thread)
                ),
            ));
        }
    };
    let done = async {
        // The conversation as the next run reads it: a rewound thread's view (ADR 0297).
        let history: Vec<Message> =
            burrow_runtime::checkpoint::load_view(store.as_ref(), &key).await?;
        let hooks = config.hooks();
        if hooks.has_event(burrow_runtime::hooks::HookEvent::PreCompact) {
            let cx = burrow_runtime::hooks::HookContext {
                session_id: thread.to_owned(),
                run_id: holder.clone(),
            };
            let said = hooks.pre_compact(&cx, MANUAL, instructions).await;
            if let Some(message) = said.run_failure {
                return Err(Refused::failure(message));
            }
            if let Some(reason) = said.block.or(said.stop) {
                return Err(Refused::not_allowed(
                    "blocked",
                    format!("a PreCompact hook blocked the compaction: {reason}"),
                ));
            }
        }
        let tools = compaction::tools_named_in(&history);
        let settings = burrow_runtime::model::ModelSettings::default();
        let request = compaction::Request {
            trigger: MANUAL,
            instructions,
            keep_messages: usize::try_from(keep).unwrap_or(usize::MAX),
            tools: &tools,
            settings: &settings,
            tokens_before: Some(compaction::estimate_tokens(
                "",
                &tools,
                &compaction::view(&history),
            )),
        };
        let model = config.model();
        let (entry, _usage) = compaction::compact(model.as_ref(), &history, request)
            .await
            .map_err(|e| Refused {
                // Nothing to compact is a refusal; a failed summary request, a failure.
                exit: if e.kind == compaction::CompactionErrorKind::NothingToCompact {
                    Exit::Refused
                } else {
                    Exit::Failed
                },
                kind: e.kind.as_str(),
                message: e.message,
            })?;
        let commit = Commit::new()
            .fenced(claim.fence())
            .write(Write::AppendHistory {
                run_id: None,
                items: vec![HistoryItem::Message {
                    message: Message::Compaction(entry.clone()),
                }],
            });
        store.commit(&key, commit).await?;
        Ok(entry)
    }
    .await;
    // Best effort: a claim left behind lapses at its expiry.
    let _ = store.release_claim(&key, &claim).await;
    let entry = done?;
    note(
        json,
        json!({"type": "compacted", "thread_id": thread, "trigger": MANUAL,
               "summarised": entry.summarised, "kept": entry.kept,
               "tokens_before": entry.tokens_before, "summary": entry.summary}),
        &format!(
            "compacted thread {thread}: {} messages summarised, the last {} kept",
            entry.summarised, entry.kept
        ),
    )?;
    Ok(Exit::Success)
}

/// The workspace the thread's files are in, as its latest run that recorded
/// one names it: the `spec::workspace` line and the tenant its files were
/// read and written as (ADR 0359); `None` when no run recorded one.
pub async fn recorded_workspace(
    store: &dyn SessionStore,
    key: &ThreadKey,
) -> Result<Option<(String, Option<String>)>, Refused> {
    let runs = store.runs(key).await?;
    Ok(runs.iter().rev().find_map(|run| {
        let setup = Setup::from_labels(&run.labels);
        Some((setup.backend?, setup.backend_tenant))
    }))
}

/// The setup thread `thread`'s paused run was started with (what `burrow run` recorded).
pub async fn recorded_setup(args: &SessionArgs, thread: &str) -> Result<Setup, Refused> {
    let store = open_store(&args.spec).await?;
    let key = scope(&args.tenant).thread(thread);
    let run = paused_run(&*store, &key).await?;
    Ok(Setup::from_labels(&run.labels))
}

/// Where thread `thread`'s earlier runs with an artifact workspace started
/// watching it (ADR 0363): `None` when none of its runs had one, 0 for runs
/// recorded before the seq was kept (they noted every change).
pub async fn recorded_watch_after(
    args: &SessionArgs,
    thread: &str,
) -> Result<Option<u64>, Refused> {
    let store = open_store(&args.spec).await?;
    let key = scope(&args.tenant).thread(thread);
    let runs = store.runs(&key).await?;
    let mut with_workspace = runs
        .iter()
        .rev()
        .filter(|r| r.labels.contains_key(ARTIFACTS_LABEL))
        .peekable();
    if with_workspace.peek().is_none() {
        return Ok(None);
    }
    Ok(Some(
        with_workspace
            .find_map(|r| r.labels.get(WATCH_AFTER_LABEL)?.parse().ok())
            .unwrap_or(0),
    ))
}

/// The recorded setup of the run `burrow run --session --thread THREAD`
/// continues, if it continues one (ADR 0362): the thread's paused run (the
/// prompt answers it), its running run (the prompt steers it, and a lapsed
/// claim is taken over here), or the run that took a retried `command_id`'s
/// message (carried on here); `None` when the prompt starts a run afresh.
pub async fn continued_setup(
    args: &SessionArgs,
    thread: &str,
    command_id: Option<&str>,
) -> Result<Option<Setup>, Refused> {
    // A SQLite file that does not exist yet holds no run to continue; it is not
    // made here, so a refusal after this look (a bad team file) leaves nothing.
    if let Some(path) = args.spec.strip_prefix("sqlite:")
        && !path.is_empty()
        && !std::path::Path::new(path).exists()
    {
        return Ok(None);
    }
    let store = open_store(&args.spec).await?;
    let key = scope(&args.tenant).thread(thread);
    let Some(info) = store.thread(&key).await? else {
        return Ok(None);
    };
    if let Some(run_id) = &info.active_run {
        let run = store.run(&key.scope, run_id).await?;
        return Ok(run.map(|r| Setup::from_labels(&r.labels)));
    }
    let Some(id) = command_id else {
        return Ok(None);
    };
    let command = CommandKey {
        scope: key.scope.clone(),
        sender: AUTHOR.to_owned(),
        command_id: id.to_owned(),
    };
    let remembered = store.command_result(&command).await?;
    let Some(Ok(CommandResult::Posted { message_id, .. })) =
        remembered.map(serde_json::from_value::<CommandResult>)
    else {
        return Ok(None);
    };
    Ok(store
        .runs(&key)
        .await?
        .iter()
        .rev()
        .find(|r| r.message_ids.contains(&message_id))
        .map(|r| Setup::from_labels(&r.labels)))
}

/// `burrow thread answer ID --request R TEXT`: answers and resumes the run here.
#[allow(clippy::too_many_arguments)]
pub async fn answer(
    agent: Agent,
    store: Arc<dyn SessionStore>,
    args: &SessionArgs,
    thread: &str,
    request: &str,
    text: &str,
    approve: bool,
    json: bool,
) -> Result<Exit, Refused> {
    let key = scope(&args.tenant).thread(thread);
    let run = paused_run(&*store, &key).await?;
    let run_id = run.run_id.clone();
    let Some(asked) = run.requests.iter().find(|r| r.spec.id == request) else {
        return Err(Refused::not_allowed(
            "not_found",
            format!("run {run_id} has no request {}", display::name(request)),
        ));
    };
    let answer = Answer {
        author: AUTHOR.to_owned(),
        approved: (asked.spec.kind == RequestKind::Approval).then_some(approve),
        text: Some(text.to_owned()),
        message_id: None,
    };
    let transcript = transcript(&agent, &*store, &key).await;
    let runner = runner(agent, store, args, transcript);
    let exit = match runner.answer(&key, &run_id, request, answer).await {
        Ok(sent) => match sent.run {
            Some(handle) => stream(&runner, handle, json).await,
            None => {
                note(
                    json,
                    json!({"type": "answered", "run_id": run_id, "request_id": request, "resumed": false}),
                    "answered; the run resumes once every request is answered",
                )?;
                Ok(Exit::Success)
            }
        },
        Err(e) => Err(e.into()),
    };
    runner.drain().await;
    runner.aclose().await;
    exit
}

/// `burrow thread stop ID`: stops the thread's run wherever it runs and waits until it ended.
pub async fn stop(
    agent: Agent,
    args: &SessionArgs,
    thread: &str,
    json: bool,
) -> Result<Exit, Refused> {
    let store = open_store(&args.spec).await?;
    let key = scope(&args.tenant).thread(thread);
    let runner = runner(agent, store, args, None);
    let run_id = match runner.request_stop(&key).await? {
        StopRequest::Idle => {
            note(
                json,
                json!({"type": "stopped", "thread_id": thread, "run_id": null, "stopped": false}),
                &format!("thread {thread} has no running or paused run; nothing to stop"),
            )?;
            return Ok(Exit::Success);
        }
        StopRequest::Stopped { run_id } | StopRequest::Requested { run_id } => run_id,
        _ => return Ok(Exit::Success),
    };
    let run = runner.wait_settled(&key, &run_id, POLL).await?;
    runner.aclose().await;
    note(
        json,
        json!({"type": "stopped", "thread_id": thread, "run_id": run_id,
               "stopped": run.status == RunStatus::Stopped,
               "outcome": run.status.as_str(), "reason": run.reason}),
        &format!("run {run_id}: {}", status_text(&run)),
    )?;
    Ok(Exit::Success)
}
