//! The results of the file contract: listings, write/edit outcomes, grep matches, execution.

use serde::{Deserialize, Serialize};

/// One entry of a listing or a glob: a file or a directory.
///
/// Directories carry `size: null`; `modified_at` (RFC 3339) is absent where the
/// backend cannot report one, which means "unknown", never "just now".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileInfo {
    /// The last path segment.
    pub name: String,
    /// The absolute virtual path.
    pub path: String,
    /// True for a directory.
    pub is_dir: bool,
    /// Size in bytes, for files; `None` (JSON `null`) for directories.
    ///
    /// Always present in the JSON, as in Python's `FileInfo`, so Python code
    /// that indexes `entry["size"]` works on burrow's output (ADR 0011).
    #[serde(default)]
    pub size: Option<u64>,
    /// Last modification time, RFC 3339, where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modified_at: Option<String>,
}

/// The outcome of a write, as the Python `WriteResult` dataclass serialises it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct WriteResult {
    /// The path written, on success.
    #[serde(default)]
    pub path: Option<String>,
    /// A refusal message, on failure.
    #[serde(default)]
    pub error: Option<String>,
}

impl WriteResult {
    /// A successful write of `path`.
    pub fn written(path: impl Into<String>) -> Self {
        Self {
            path: Some(path.into()),
            error: None,
        }
    }
}

/// The outcome of an edit, as the Python `EditResult` dataclass serialises it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct EditResult {
    /// The path edited, on success.
    #[serde(default)]
    pub path: Option<String>,
    /// A refusal message, on failure.
    #[serde(default)]
    pub error: Option<String>,
    /// How many occurrences were replaced.
    #[serde(default)]
    pub occurrences: Option<u64>,
}

impl EditResult {
    /// A successful edit of `path` that replaced `occurrences` occurrences.
    pub fn edited(path: impl Into<String>, occurrences: u64) -> Self {
        Self {
            path: Some(path.into()),
            error: None,
            occurrences: Some(occurrences),
        }
    }
}

/// What a command run in a sandbox printed and how it ended.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ExecuteResponse {
    /// stdout and stderr, interleaved as produced, capped.
    pub output: String,
    /// The exit code; 124 after a timeout.
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// True when `output` was cut at the cap.
    #[serde(default)]
    pub truncated: bool,
}

/// One matching line of a grep.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrepMatch {
    /// The absolute virtual path of the file.
    pub path: String,
    /// 1-based line number, using the same line split as `read`.
    pub line_number: u64,
    /// The line, without its line ending.
    pub line: String,
}
