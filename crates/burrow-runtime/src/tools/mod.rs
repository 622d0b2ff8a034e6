//! The agent-facing file tools (`ls`, `read_file`, `write_file`, `edit_file`, `glob`, `grep`, `execute`) over any backend.
//!
//! A [`Toolset`] holds a backend, the [`FileContext`] its calls run under,
//! the [`ToolSession`] (what the agent has read) and a [`ToolConfig`].
//! [`Toolset::tools`] lists each tool with a description written for a
//! model and a JSON Schema derived from its typed arguments ([`args`]);
//! [`Toolset::call`] runs one by name on JSON arguments and returns the text
//! the model reads.
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
mod render;
mod search;
mod session;
mod spill;

use std::sync::Arc;

use async_trait::async_trait;
use burrow_backend::{Backend, Error, FileContext, Result, VPath};
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::de::DeserializeOwned;
use serde_json::Value;

pub use args::{
    DEFAULT_READ_LIMIT, EditFileArgs, ExecuteArgs, GlobArgs, GrepArgs, LsArgs, MAX_TIMEOUT_SECS,
    OutputMode, ReadFileArgs, WriteFileArgs,
};
pub use session::{Fingerprint, LedgerCheck, ReadLedger, ToolSession};

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
    /// replaced by a preview and the file's path (80,000); `read_file`
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
            large_result_chars: 80_000,
            preview_chars: 4_000,
            max_entries: 500,
            max_grep_lines: 200,
            count_limit: 10_000,
            large_results_dir: VPath::parse(LARGE_RESULTS_DIR).unwrap_or_else(|_| VPath::root()),
            max_large_results: 20,
        }
    }
}

/// A tool as offered to a model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// The name the model calls it by.
    pub name: String,
    /// What it does and when to use it, written for a model.
    pub description: String,
    /// The JSON Schema (draft 2020-12) of its arguments object.
    pub input_schema: Value,
}

/// What a tool call returns to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    /// The text the model reads.
    pub text: String,
    /// True when the call was refused (the text says why and what to do).
    pub is_error: bool,
}

impl ToolOutput {
    /// A successful result.
    pub fn ok(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            is_error: false,
        }
    }

    /// A refusal, as one sentence for the model.
    pub fn refused(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            is_error: true,
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

/// The names of the tools, in the order they are offered.
pub const TOOL_NAMES: [&str; 7] = [
    "ls",
    "read_file",
    "write_file",
    "edit_file",
    "glob",
    "grep",
    "execute",
];

/// The file tools over one backend, for one agent session.
pub struct Toolset {
    backend: Arc<dyn Backend>,
    ctx: FileContext,
    session: ToolSession,
    config: ToolConfig,
    after_change: Option<Arc<dyn AfterChange>>,
    specs: Vec<ToolSpec>,
}

impl std::fmt::Debug for Toolset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Toolset")
            .field("ctx", &self.ctx)
            .field("config", &self.config)
            .field(
                "tools",
                &self.specs.iter().map(|s| &s.name).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl Toolset {
    /// The tools over `backend`, every call made as `ctx`, with the default config.
    ///
    /// `execute` is offered only when the backend is a [`burrow_backend::Sandbox`].
    pub fn new(backend: Arc<dyn Backend>, ctx: FileContext) -> Self {
        let exec = backend.as_sandbox().is_some();
        let specs = TOOL_NAMES
            .iter()
            .filter(|name| exec || **name != "execute")
            .map(|name| spec(name))
            .collect();
        Self {
            backend,
            ctx,
            session: ToolSession::new(),
            config: ToolConfig::default(),
            after_change: None,
            specs,
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

    /// The context every call runs under.
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

    /// The tools offered, in a stable order.
    pub fn tools(&self) -> Vec<ToolSpec> {
        self.specs.clone()
    }

    /// Runs the tool `name` on `args` (a JSON object; `null` counts as `{}`).
    ///
    /// Refusals, unknown tools and arguments that do not fit come back as
    /// `Ok` with `is_error: true`; only failures are `Err`.
    pub async fn call(&self, name: &str, args: Value) -> Result<ToolOutput> {
        if !self.specs.iter().any(|s| s.name == name) {
            return Ok(ToolOutput::refused(self.unknown_tool(name)));
        }
        let args = match args {
            Value::Null => Value::Object(serde_json::Map::new()),
            Value::Object(_) => args,
            other => {
                return Ok(ToolOutput::refused(format!(
                    "The arguments for {name} must be a JSON object of named arguments, not {}; check the tool's input schema and call it again.",
                    json_kind(&other)
                )));
            }
        };
        macro_rules! dispatch {
            ($($tool:literal => $method:ident),* $(,)?) => {
                match name {
                    $($tool => match parse($tool, args) {
                        Ok(a) => self.$method(a).await,
                        Err(refused) => return Ok(refused),
                    },)*
                    _ => return Ok(ToolOutput::refused(self.unknown_tool(name))),
                }
            };
        }
        let result = dispatch! {
            "ls" => ls,
            "read_file" => read_file,
            "write_file" => write_file,
            "edit_file" => edit_file,
            "glob" => glob,
            "grep" => grep,
            "execute" => execute,
        };
        let outcome = match result {
            Ok(outcome) => outcome,
            Err(e) if e.is_refusal() => return Ok(ToolOutput::refused(render::refusal_text(&e))),
            Err(e) => return Err(e),
        };
        let Outcome { text, mut changed } = outcome;
        let text = if name == "read_file" {
            // read_file pages itself within the same budget; spilling a
            // read would only copy the file.
            text
        } else {
            let (text, spilled) = self.spill(name, text).await?;
            changed |= spilled;
            text
        };
        if changed && let Some(hook) = &self.after_change {
            hook.after_change().await?;
        }
        Ok(ToolOutput::ok(text))
    }

    fn unknown_tool(&self, name: &str) -> String {
        let names: Vec<&str> = self.specs.iter().map(|s| s.name.as_str()).collect();
        let why = if name == "execute" {
            " (this workspace cannot run commands)"
        } else {
            ""
        };
        format!(
            "There is no tool named \"{}\"{why}; the tools are: {}.",
            name.chars().take(100).collect::<String>(),
            names.join(", ")
        )
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `args` as the tool's typed arguments, or the refusal the model sees.
fn parse<T: DeserializeOwned>(tool: &str, args: Value) -> std::result::Result<T, ToolOutput> {
    serde_json::from_value(args).map_err(|e| {
        ToolOutput::refused(format!(
            "The arguments for {tool} are not valid: {e}. Check the tool's input schema and call it again."
        ))
    })
}

/// The JSON Schema of `T`'s arguments (draft 2020-12, deserialize contract).
pub fn schema_of<T: JsonSchema>() -> Value {
    SchemaSettings::draft2020_12()
        .for_deserialize()
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}

fn spec(name: &str) -> ToolSpec {
    let (description, input_schema) = match name {
        "ls" => (LS, schema_of::<LsArgs>()),
        "read_file" => (READ_FILE, schema_of::<ReadFileArgs>()),
        "write_file" => (WRITE_FILE, schema_of::<WriteFileArgs>()),
        "edit_file" => (EDIT_FILE, schema_of::<EditFileArgs>()),
        "glob" => (GLOB, schema_of::<GlobArgs>()),
        "grep" => (GREP, schema_of::<GrepArgs>()),
        _ => (EXECUTE, schema_of::<ExecuteArgs>()),
    };
    ToolSpec {
        name: name.to_owned(),
        description: description.to_owned(),
        input_schema,
    }
}

const LS: &str = "List the entries directly inside a directory of the workspace. \
Directories end with \"/\"; files show their size in bytes. Paths are absolute, starting at \"/\". \
Use glob to find files by name at any depth.";

const READ_FILE: &str = "Read a text file of the workspace. Lines come numbered (`     1\\t...`): the number and \
the tab are not part of the file. Reads up to 2000 lines from offset (0-based); when more remain, the last line says \
which offset to continue from. Lines longer than 2000 characters are cut with a marker. You must read a file before \
you edit it or write over it.";

const WRITE_FILE: &str = "Create a file, or replace the whole content of one, in the workspace. Parent directories are \
created as needed. To replace an existing file you must have read it first in this session (and it must not have \
changed since); prefer edit_file for changing part of a file.";

const EDIT_FILE: &str = "Replace text in a file of the workspace: old_string must occur exactly once (give more \
surrounding lines to make it unique), or set replace_all to replace every occurrence. Copy old_string exactly from \
what read_file showed, without the line-number prefix. You must have read the file in this session, and it must not \
have changed since; after a successful edit you can edit it again without re-reading. Line endings (CRLF or LF) are \
kept as the file has them.";

const GLOB: &str = "Find files by path pattern, e.g. \"*.rs\" (any depth), \"src/**/*.py\" or \"/*.md\" (top level \
only). Returns matching file paths sorted by path. `*` stays within one directory, `**` spans directories, `{a,b}` \
alternates.";

const GREP: &str = "Search file contents with a regular expression (Rust regex syntax, as ripgrep) or a literal \
string (fixed_strings). output_mode \"files_with_matches\" (default) lists the matching files, \"content\" shows \
matching lines as path:line_number:line, \"count\" shows how many lines match per file. Narrow with path (a \
directory or a file) and glob (e.g. \"*.py\"). Binary files are skipped.";

const EXECUTE: &str = "Run a shell command (sh -c) in the workspace directory and return its output (stdout and \
stderr interleaved) and exit code. Output is capped; a command is killed at its timeout (default 120 s) with exit \
code 124. Use it for builds, tests and tools; use the file tools to read and change files.";

/// True when `e` says a file does not exist.
pub(crate) fn is_not_found(e: &Error) -> bool {
    e.kind() == burrow_backend::ErrorKind::NotFound
}
