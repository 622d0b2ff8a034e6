//! The agent-facing file tools (`ls`, `read_file`, `write_file`, `edit_file`, `delete_path`, `glob`, `grep`, `execute`) over any backend.
//!
//! A [`Toolset`] holds a backend, the [`FileContext`] its calls run under,
//! the [`ToolSession`] (what the agent has read) and a [`ToolConfig`].
//! [`Toolset::tools`] gives each tool as an ordinary [`Tool`]: its name,
//! description for a model, annotations and lock keys are stated once, next
//! to its typed arguments ([`args`]), from which its JSON Schema is derived
//! (`op.rs`). The agent loop and the MCP server call them through a
//! [`ToolRegistry`]; every mutation a call makes carries its effect key.
//!
//! What a call returns:
//!
//! - Success: text for the model (`is_error: false`).
//! - A refusal (the contract or the read-before-edit guard does not allow
//!   what was asked; an unknown tool; arguments that do not fit the schema):
//!   one sentence the model can act on, with `is_error: true`. The run goes on.
//! - A failure (the storage broke): a Rust `Err`, for the caller to handle.
//!   It is never turned into text, so it cannot be hidden from the operator.

pub mod args;
mod exec;
mod files;
mod op;
mod render;
mod search;
mod session;
mod spill;

use std::sync::Arc;

use crate::tool::{CallContext, Tool, ToolRegistry, effect_key};
use async_trait::async_trait;
use burrow_backend::{Backend, Error, FileContext, Result, VPath};

pub use args::{
    DEFAULT_READ_LIMIT, DeletePathArgs, EditFileArgs, ExecuteArgs, GlobArgs, GrepArgs, LsArgs,
    MAX_TIMEOUT_SECS, OutputMode, ReadFileArgs, WriteFileArgs,
};
pub use session::{Fingerprint, LedgerCheck, ReadLedger, ToolSession};
// The tool contract's own types, at the paths they have always had here too.
pub use crate::tool::{ToolOutput, object_arguments, schema_of};

/// Where results too large to return are saved.
pub const LARGE_RESULTS_DIR: &str = "/.burrow/large_results";

/// How the tools bound and shape what they return.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolConfig {
    /// Lines `read_file` returns when the model gives no limit (2000).
    pub read_limit: usize,
    /// Longer lines are cut, with a marker, in `read_file` and grep content (2000 characters).
    pub max_line_chars: usize,
    /// A result longer than this many characters is saved to a file and
    /// replaced by a preview and the file's path (80,000: 20,000 tokens at
    /// the compaction estimate's 4 characters a token); `read_file`
    /// instead stops early and gives the offset to continue from.
    pub large_result_chars: usize,
    /// How many characters of a large result the preview shows (4,000).
    pub preview_chars: usize,
    /// Most entries `ls` and `glob` show, and most files grep lists or counts (500).
    pub max_entries: usize,
    /// Most matching lines grep shows in content mode (200).
    pub max_grep_lines: usize,
    /// How many entries, files or matching lines are asked of the backend,
    /// so a capped list can say how many more there are (10,000).
    pub count_limit: usize,
    /// The directory large results are saved in ([`LARGE_RESULTS_DIR`]).
    /// `glob` and `grep` leave its files out unless they search inside it.
    pub large_results_dir: VPath,
    /// Most large results kept there: saving one more deletes the oldest (20).
    pub max_large_results: usize,
}

impl Default for ToolConfig {
    fn default() -> Self {
        Self {
            read_limit: DEFAULT_READ_LIMIT,
            max_line_chars: 2000,
            large_result_chars: crate::compaction::DEFAULT_LARGE_RESULT_TOKENS
                * crate::compaction::CHARS_PER_TOKEN as usize,
            preview_chars: 4_000,
            max_entries: 500,
            max_grep_lines: 200,
            count_limit: 10_000,
            large_results_dir: VPath::parse(LARGE_RESULTS_DIR).unwrap_or_else(|_| VPath::root()),
            max_large_results: 20,
        }
    }
}

/// Called after a tool call changed the workspace, before its result is
/// returned: e.g. to write a state file back to disk. An error here is a
/// failure of the call.
#[async_trait]
pub trait AfterChange: Send + Sync {
    /// Persists (or reports) the change.
    async fn after_change(&self) -> Result<()>;
}

/// What one tool produced before spilling and hooks.
pub(crate) struct Outcome {
    pub text: String,
    pub changed: bool,
}

impl Outcome {
    pub fn read(text: String) -> Self {
        Self {
            text,
            changed: false,
        }
    }
    pub fn changed(text: String) -> Self {
        Self {
            text,
            changed: true,
        }
    }
}

/// The file tools over one backend, for one agent session: the state the
/// tools share (the backend, the context their calls run under, the
/// read-before-edit ledger, the config, the after-change hook).
///
/// [`Toolset::tools`] gives the tools themselves, each an ordinary
/// [`Tool`]; [`Toolset::into_registry`] puts them in a
/// [`ToolRegistry`], which the agent loop and the MCP server both read.
pub struct Toolset {
    backend: Arc<dyn Backend>,
    ctx: FileContext,
    session: ToolSession,
    config: ToolConfig,
    after_change: Option<Arc<dyn AfterChange>>,
}

impl std::fmt::Debug for Toolset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Toolset")
            .field("ctx", &self.ctx)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Toolset {
    /// The tools over `backend`, every call made as `ctx`, with the default config.
    pub fn new(backend: Arc<dyn Backend>, ctx: FileContext) -> Self {
        Self {
            backend,
            ctx,
            session: ToolSession::new(),
            config: ToolConfig::default(),
            after_change: None,
        }
    }

    /// The same toolset with `config`.
    pub fn with_config(mut self, config: ToolConfig) -> Self {
        self.config = config;
        self
    }

    /// The same toolset, calling `hook` after every call that changed the workspace.
    pub fn with_after_change(mut self, hook: Arc<dyn AfterChange>) -> Self {
        self.after_change = Some(hook);
        self
    }

    /// The backend the tools work on.
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    /// The context every call runs under (each mutation adds its run id and effect key).
    pub fn context(&self) -> &FileContext {
        &self.ctx
    }

    /// The session state (what the agent has read).
    pub fn session(&self) -> &ToolSession {
        &self.session
    }

    /// The config.
    pub fn config(&self) -> &ToolConfig {
        &self.config
    }

    /// The file tools, in a stable order (`ls`, `read_file`, `write_file`,
    /// `edit_file`, `delete_path`, `glob`, `grep`, then `execute` only when the backend is
    /// a [`burrow_backend::Sandbox`]), all sharing this toolset.
    pub fn tools(self: &Arc<Self>) -> Vec<Arc<dyn Tool>> {
        op::tools(self)
    }

    /// The file tools in a registry of their own; when the backend runs no
    /// commands, a call of `execute` is told so.
    pub fn into_registry(self) -> ToolRegistry {
        let mut registry = ToolRegistry::new();
        registry.add_toolset(Arc::new(self));
        registry
    }

    /// Runs the shared part of every file tool's call: the refusal text,
    /// spilling a large result, and the after-change hook.
    pub(crate) async fn finish(
        &self,
        name: &str,
        spills: bool,
        result: Result<Outcome>,
        call: &Call<'_>,
    ) -> Result<ToolOutput> {
        let outcome = match result {
            Ok(outcome) => outcome,
            Err(e) if e.is_refusal() => return Ok(ToolOutput::refused(render::refusal_text(&e))),
            Err(e) => return Err(e),
        };
        let Outcome { text, mut changed } = outcome;
        let text = if spills {
            let (text, spilled) = self.spill(name, text, call).await?;
            changed |= spilled;
            text
        } else {
            text
        };
        if changed && let Some(hook) = &self.after_change {
            hook.after_change().await?;
        }
        Ok(ToolOutput::ok(text))
    }
}

/// The file tools join a [`ToolRegistry`] here, so the tool contract
/// (`tool`) needs nothing of them.
impl ToolRegistry {
    /// Adds the file tools over `backend` ([`file_tools`]), every call made as
    /// `ctx` with the default [`ToolConfig`].
    pub fn add_file_tools(&mut self, backend: Arc<dyn Backend>, ctx: FileContext) -> &mut Self {
        self.add_toolset(Arc::new(Toolset::new(backend, ctx)))
    }

    /// Adds the file tools of `toolset` ([`Toolset::tools`]); when its
    /// backend runs no commands, a call of `execute` is told so.
    pub fn add_toolset(&mut self, toolset: Arc<Toolset>) -> &mut Self {
        let sandbox = toolset.backend().as_sandbox().is_some();
        for tool in toolset.tools() {
            self.add_arc(tool);
        }
        if !sandbox && self.get(op::EXECUTE_NAME).is_none() {
            self.note_absent(op::EXECUTE_NAME, "this workspace cannot run commands");
        }
        self
    }
}

/// The file tools over `backend`, every call made as `ctx` (each mutation
/// with its run id and effect key), with `config`. `execute` is among them
/// only when the backend runs commands.
pub fn file_tools(
    backend: Arc<dyn Backend>,
    ctx: FileContext,
    config: ToolConfig,
) -> Vec<Arc<dyn Tool>> {
    Arc::new(Toolset::new(backend, ctx).with_config(config)).tools()
}

/// One call of a file tool: the context reads run under, and who is
/// calling, from which each mutation's effect key is made.
pub(crate) struct Call<'a> {
    ctx: &'a FileContext,
    cx: &'a CallContext,
}

impl<'a> Call<'a> {
    pub(crate) fn new(ctx: &'a FileContext, cx: &'a CallContext) -> Self {
        Self { ctx, cx }
    }

    /// The context of a read (no run id, no key: reads take none).
    pub(crate) fn ctx(&self) -> &FileContext {
        self.ctx
    }

    /// The context of the mutation `operation` (`write`, `edit`, `delete`)
    /// of `path`: the run id and the effect key
    /// SHA-256(run id, call id, operation, path).
    pub(crate) fn mutation(&self, operation: &str, path: &VPath) -> FileContext {
        let mut ctx = self.ctx.clone();
        ctx.run_id = Some(self.cx.run_id.to_string());
        ctx.effect_key = Some(effect_key(
            &self.cx.run_id,
            &self.cx.call_id,
            operation,
            path.as_str(),
        ));
        ctx
    }
}

pub(crate) const LS: &str = "List the entries directly inside a directory of the workspace. \
Directories end with \"/\"; files show their size in bytes. Paths are absolute, starting at \"/\". \
Use glob to find files by name at any depth.";

pub(crate) const READ_FILE: &str = "Read a text file of the workspace. Lines come numbered (`     1\\t...`): the number and \
the tab are not part of the file. Reads up to 2000 lines from offset (0-based); when more remain, the last line says \
which offset to continue from. Lines longer than 2000 characters are cut with a marker. You must read a file before \
you edit it or write over it.";

pub(crate) const WRITE_FILE: &str = "Create a file, or replace the whole content of one, in the workspace. Parent directories are \
created as needed. To replace an existing file you must have read it first in this session (and it must not have \
changed since); prefer edit_file for changing part of a file.";

pub(crate) const EDIT_FILE: &str = "Replace text in a file of the workspace: old_string must occur exactly once (give more \
surrounding lines to make it unique), or set replace_all to replace every occurrence. Copy old_string exactly from \
what read_file showed, without the line-number prefix. You must have read the file in this session, and it must not \
have changed since; after a successful edit you can edit it again without re-reading. Line endings (CRLF or LF) are \
kept as the file has them.";

pub(crate) const DELETE_PATH: &str = "Delete a file or an empty directory of the workspace; set recursive to true to \
delete a directory with everything in it. Deleting cannot be undone. \"/\" cannot be deleted, nor (where other \
storage is mounted) a mount point.";

pub(crate) const GLOB: &str = "Find files by path pattern, e.g. \"*.rs\" (any depth), \"src/**/*.py\" or \"/*.md\" (top level \
only). Returns matching file paths sorted by path. `*` stays within one directory, `**` spans directories, `{a,b}` \
alternates.";

pub(crate) const GREP: &str = "Search file contents with a regular expression (Rust regex syntax, as ripgrep) or a literal \
string (fixed_strings). output_mode \"files_with_matches\" (default) lists the matching files, \"content\" shows \
matching lines as path:line_number:line, \"count\" shows how many lines match per file. Narrow with path (a \
directory or a file) and glob (e.g. \"*.py\"). Binary files are skipped.";

pub(crate) const EXECUTE: &str = "Run a shell command (sh -c) in the workspace directory and return its output (stdout and \
stderr interleaved) and exit code. Output is capped; a command is killed at its timeout (default 120 s) with exit \
code 124. Use it for builds, tests and tools; use the file tools to read and change files.";

/// True when `e` says a file does not exist.
pub(crate) fn is_not_found(e: &Error) -> bool {
    e.kind() == burrow_backend::ErrorKind::NotFound
}
