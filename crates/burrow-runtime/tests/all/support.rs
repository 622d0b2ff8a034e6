//! Test support: the file tools over a StateBackend, called by name, a scripted sandbox, and backends that fail or refuse on purpose.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use burrow_backend::{
    Backend, Capabilities, EditResult, Error, ErrorKind, ExecuteResponse, FileContext, GlobResult,
    GrepQuery, GrepResult, LineWindow, Listing, Result, Sandbox, VPath, WriteResult,
};
use burrow_runtime::model::ToolDefinition;
use burrow_runtime::runner::{RunHandle, Runner};
use burrow_runtime::session::ThreadKey;
use burrow_runtime::tool::{CallContext, ToolRegistry};
use burrow_runtime::tools::{AfterChange, ToolConfig, ToolOutput, ToolSession, Toolset};
use burrow_state::StateBackend;
use serde_json::Value;

pub fn p(path: &str) -> VPath {
    VPath::parse(path).unwrap()
}

pub fn ctx() -> FileContext {
    FileContext::default()
}

/// A StateBackend holding `files` (path, bytes).
pub async fn state_with(files: &[(&str, &[u8])]) -> StateBackend {
    let backend = StateBackend::new();
    for (path, bytes) in files {
        backend.write_bytes(&ctx(), &p(path), bytes).await.unwrap();
    }
    backend
}

/// The file tools of one session over a backend, called by name through a
/// registry as the agent loop and the MCP server call them (each call with
/// a call id of its own).
pub struct Tools {
    backend: Arc<dyn Backend>,
    config: ToolConfig,
    toolset: Arc<Toolset>,
    registry: ToolRegistry,
    next_call: AtomicUsize,
}

impl Tools {
    fn build(
        backend: Arc<dyn Backend>,
        config: ToolConfig,
        hook: Option<Arc<dyn AfterChange>>,
    ) -> Self {
        let mut toolset = Toolset::new(backend.clone(), ctx()).with_config(config.clone());
        if let Some(hook) = hook {
            toolset = toolset.with_after_change(hook);
        }
        let toolset = Arc::new(toolset);
        let mut registry = ToolRegistry::new();
        registry.add_toolset(toolset.clone());
        Self {
            backend,
            config,
            toolset,
            registry,
            next_call: AtomicUsize::new(0),
        }
    }

    /// The same tools (a new session), calling `hook` after every change.
    pub fn with_after_change(self, hook: Arc<dyn AfterChange>) -> Self {
        Self::build(self.backend, self.config, Some(hook))
    }

    /// Calls `tool` on `args` as a fresh call of run `test-run`.
    pub async fn call(&self, tool: &str, args: Value) -> Result<ToolOutput> {
        let n = self.next_call.fetch_add(1, Ordering::SeqCst);
        let cx = CallContext {
            run_id: "test-run".into(),
            call_id: format!("call-{n}"),
        };
        self.registry.call(&cx, tool, args).await
    }

    /// The session state (what the agent has read).
    pub fn session(&self) -> &ToolSession {
        self.toolset.session()
    }

    /// The tools as a model sees them.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.registry.definitions().to_vec()
    }

    /// The registry (for the MCP server).
    #[cfg(feature = "mcp")]
    pub fn registry(&self) -> ToolRegistry {
        self.registry.clone()
    }
}

/// The file tools over `backend` with the default config.
pub fn toolset(backend: Arc<dyn Backend>) -> Tools {
    Tools::build(backend, ToolConfig::default(), None)
}

/// The file tools over `backend` with `config`.
pub fn toolset_with(backend: Arc<dyn Backend>, config: ToolConfig) -> Tools {
    Tools::build(backend, config, None)
}

/// Calls `tool` and expects `Ok` (a result or a refusal).
pub async fn call(tools: &Tools, tool: &str, args: Value) -> ToolOutput {
    match tools.call(tool, args.clone()).await {
        Ok(out) => out,
        Err(e) => panic!("{tool} {args} failed: {e}"),
    }
}

/// Calls `tool` and expects a successful result.
pub async fn ok(tools: &Tools, tool: &str, args: Value) -> String {
    let out = call(tools, tool, args.clone()).await;
    assert!(!out.is_error, "{tool} {args} was refused: {}", out.text);
    out.text
}

/// Calls `tool` and expects a refusal.
pub async fn refused(tools: &Tools, tool: &str, args: Value) -> String {
    let out = call(tools, tool, args.clone()).await;
    assert!(out.is_error, "{tool} {args} was not refused: {}", out.text);
    out.text
}

/// The text content of `path` in `backend`.
pub async fn content(backend: &dyn Backend, path: &str) -> String {
    String::from_utf8(backend.read_bytes(&ctx(), &p(path)).await.unwrap()).unwrap()
}

/// Counts the calls of an [`AfterChange`] hook; fails them when asked to.
#[derive(Default)]
pub struct CountingHook {
    pub calls: AtomicUsize,
    pub fail: bool,
}

impl CountingHook {
    pub fn count(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl AfterChange for CountingHook {
    async fn after_change(&self) -> Result<()> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self.fail {
            return Err(Error::failure_msg("the state file could not be saved"));
        }
        Ok(())
    }
}

/// How a [`Wrapped`] backend misbehaves.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Mode {
    /// Behaves as the inner backend.
    Plain,
    /// Every operation is a failure (the storage broke).
    Broken,
    /// Writes are refused (a read-only mount); reads work.
    ReadOnly,
}

/// A StateBackend that may fail or refuse, and may be a scripted sandbox.
///
/// As a sandbox, `execute` interprets a tiny language: `echo TEXT` prints
/// TEXT, `flood N` prints N lines and reports the output cut, `sleep` times
/// out, `fail` exits 3 with a message, `quiet` prints nothing.
pub struct Wrapped {
    pub inner: StateBackend,
    pub mode: Mode,
    pub sandbox: bool,
}

impl Wrapped {
    pub fn new(inner: StateBackend, mode: Mode, sandbox: bool) -> Self {
        Self {
            inner,
            mode,
            sandbox,
        }
    }

    fn check(&self) -> Result<()> {
        match self.mode {
            Mode::Broken => Err(Error::failure(
                "the store is unreachable",
                std::io::Error::other("connection reset"),
            )),
            _ => Ok(()),
        }
    }

    fn check_write(&self) -> Result<()> {
        self.check()?;
        match self.mode {
            Mode::ReadOnly => Err(Error::refusal(
                ErrorKind::PermissionDenied,
                "this workspace is read-only.",
            )),
            _ => Ok(()),
        }
    }
}

#[async_trait]
impl Backend for Wrapped {
    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities().with_exec(self.sandbox)
    }
    async fn ls(&self, c: &FileContext, dir: &VPath, limit: usize) -> Result<Listing> {
        self.check()?;
        self.inner.ls(c, dir, limit).await
    }
    async fn read(
        &self,
        c: &FileContext,
        path: &VPath,
        offset: usize,
        limit: usize,
    ) -> Result<LineWindow> {
        self.check()?;
        self.inner.read(c, path, offset, limit).await
    }
    async fn read_bytes(&self, c: &FileContext, path: &VPath) -> Result<Vec<u8>> {
        self.check()?;
        self.inner.read_bytes(c, path).await
    }
    async fn write_bytes(
        &self,
        c: &FileContext,
        path: &VPath,
        bytes: &[u8],
    ) -> Result<WriteResult> {
        self.check_write()?;
        self.inner.write_bytes(c, path, bytes).await
    }
    async fn edit(
        &self,
        c: &FileContext,
        path: &VPath,
        old: &str,
        new: &str,
        all: bool,
    ) -> Result<EditResult> {
        self.check_write()?;
        self.inner.edit(c, path, old, new, all).await
    }
    async fn delete(&self, c: &FileContext, path: &VPath) -> Result<()> {
        self.check_write()?;
        self.inner.delete(c, path).await
    }
    async fn glob(
        &self,
        c: &FileContext,
        pattern: &str,
        under: &VPath,
        limit: usize,
    ) -> Result<GlobResult> {
        self.check()?;
        self.inner.glob(c, pattern, under, limit).await
    }
    async fn grep(
        &self,
        c: &FileContext,
        q: &GrepQuery,
        under: &VPath,
        limit: usize,
    ) -> Result<GrepResult> {
        self.check()?;
        self.inner.grep(c, q, under, limit).await
    }
    fn as_sandbox(&self) -> Option<&dyn Sandbox> {
        if self.sandbox { Some(self) } else { None }
    }
}

#[async_trait]
impl Sandbox for Wrapped {
    async fn execute(
        &self,
        _: &FileContext,
        command: &str,
        timeout: Option<Duration>,
    ) -> Result<ExecuteResponse> {
        self.check()?;
        let (word, rest) = command.split_once(' ').unwrap_or((command, ""));
        Ok(match word {
            "echo" => ExecuteResponse {
                output: format!("{rest}\n"),
                exit_code: Some(0),
                truncated: false,
            },
            "flood" => {
                let n: usize = rest.parse().unwrap();
                let output: String = (1..=n)
                    .map(|i| format!("line {i} of the flood\n"))
                    .collect();
                ExecuteResponse {
                    output,
                    exit_code: Some(0),
                    truncated: true,
                }
            }
            "sleep" => ExecuteResponse {
                output: format!(
                    "waiting...\n[burrow: killed after {} s]",
                    timeout.map_or(120, |t| t.as_secs())
                ),
                exit_code: Some(124),
                truncated: false,
            },
            "fail" => ExecuteResponse {
                output: "error: it broke".into(),
                exit_code: Some(3),
                truncated: false,
            },
            _ => ExecuteResponse {
                output: String::new(),
                exit_code: Some(0),
                truncated: false,
            },
        })
    }
}

/// Sends `text` from `author` to the idle `thread` and returns the run it started.
pub async fn start_run(runner: &Runner, thread: &ThreadKey, author: &str, text: &str) -> RunHandle {
    runner
        .send(thread, author, text, None)
        .await
        .unwrap()
        .run
        .expect("a message in an idle thread starts a run")
}
