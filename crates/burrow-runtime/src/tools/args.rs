//! The typed arguments of every tool: serde reads them, schemars derives the JSON Schema the model sees from the same type.
//!
//! Doc comments on the fields become the schema's descriptions, so they are
//! written for a model. Every struct refuses unknown fields, so a misspelt
//! argument is reported instead of silently ignored, and the schema says
//! `additionalProperties: false` to match.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Lines `read_file` returns when no `limit` is given (the default of
/// [`super::ToolConfig::read_limit`]).
pub const DEFAULT_READ_LIMIT: usize = 2000;

/// The longest `execute` timeout, in seconds (7 days): a larger one could
/// not be added to a clock.
pub const MAX_TIMEOUT_SECS: u64 = 7 * 24 * 60 * 60;

fn root() -> String {
    "/".to_owned()
}

/// Arguments of `ls`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LsArgs {
    /// The directory to list, as an absolute path such as "/src". Defaults to "/", the workspace root.
    #[serde(default = "root")]
    pub path: String,
}

/// Arguments of `read_file`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFileArgs {
    /// The file to read, as an absolute path such as "/src/main.rs".
    pub file_path: String,
    /// The 0-based line to start at. Use the offset given in the footer of a previous read to continue.
    #[serde(default)]
    pub offset: usize,
    /// At most this many lines (default 2000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1), extend("default" = DEFAULT_READ_LIMIT))]
    pub limit: Option<usize>,
}

/// Arguments of `write_file`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteFileArgs {
    /// The file to create or replace, as an absolute path. Missing parent directories are created.
    pub file_path: String,
    /// The complete new content of the file.
    pub content: String,
}

/// Arguments of `edit_file`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditFileArgs {
    /// The file to edit, as an absolute path. You must have read it with read_file first.
    pub file_path: String,
    /// The exact text to replace, copied from the file (without the line-number prefix read_file adds).
    pub old_string: String,
    /// The text to put in its place; must differ from old_string.
    pub new_string: String,
    /// Replace every occurrence instead of exactly one (default false).
    #[serde(default)]
    pub replace_all: bool,
}

/// Arguments of `delete_path`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeletePathArgs {
    /// The file or directory to delete, as an absolute path such as "/tmp/notes.md". "/" cannot be deleted.
    pub path: String,
    /// Delete a directory with everything in it (default false: only a file or an empty directory).
    #[serde(default)]
    pub recursive: bool,
}

/// Arguments of `glob`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GlobArgs {
    /// The glob pattern. `*`, `?` and `[...]` stay within one path segment, `**` spans
    /// segments, `{a,b}` alternates. A pattern without "/" (like "*.py") matches file names
    /// at any depth; a pattern with "/" is matched against the path relative to `path`.
    pub pattern: String,
    /// The directory to search beneath (default "/").
    #[serde(default = "root")]
    pub path: String,
}

/// What `grep` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutputMode {
    /// The paths of the files that contain a match (the default).
    #[default]
    FilesWithMatches,
    /// The matching lines, as `path:line_number:line`.
    Content,
    /// How many lines match in each file, as `path:count`.
    Count,
}

/// Arguments of `grep`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrepArgs {
    /// A Rust regular expression (like ripgrep's), or a literal string when fixed_strings is true.
    pub pattern: String,
    /// The directory (or single file) to search (default "/").
    #[serde(default = "root")]
    pub path: String,
    /// Only search files whose path matches this glob, e.g. "*.rs" or "src/**/*.py".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub glob: Option<String>,
    /// "files_with_matches" (default): the matching files; "content": the matching lines with
    /// their line numbers; "count": the number of matching lines per file.
    #[serde(default)]
    pub output_mode: OutputMode,
    /// Match without regard to case (default false).
    #[serde(default)]
    pub ignore_case: bool,
    /// Take the pattern as a literal string, not a regular expression (default false).
    #[serde(default)]
    pub fixed_strings: bool,
}

/// Arguments of `execute`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecuteArgs {
    /// The shell command, run with `sh -c` in the workspace directory.
    pub command: String,
    /// Kill the command after this many seconds (default 120, at most 604800). A killed command exits with code 124.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 604800))]
    pub timeout: Option<u64>,
}
