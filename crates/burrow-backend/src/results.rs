//! The bounded results of the contract's operations, and the grep query.

use burrow_types::{FileInfo, GrepMatch};
use serde::{Deserialize, Serialize};

/// The entries directly beneath a directory.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Listing {
    /// Entries sorted by path (byte order).
    pub entries: Vec<FileInfo>,
    /// True when more entries exist than were returned.
    pub truncated: bool,
}

/// A window of lines of a text file.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct LineWindow {
    /// The lines, without line endings.
    pub lines: Vec<String>,
    /// The 0-based line the window starts at.
    pub offset: usize,
    /// How many lines the whole file has.
    pub total_lines: usize,
    /// True when lines remain after the window.
    pub truncated: bool,
}

/// Files matching a glob.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct GlobResult {
    /// Matching files (never directories), sorted by path.
    pub files: Vec<FileInfo>,
    /// True when more matching files exist than were returned.
    pub truncated: bool,
}

/// Lines matching a grep.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct GrepResult {
    /// Matches in path order, then line order.
    pub matches: Vec<GrepMatch>,
    /// True when more matches exist than were returned.
    pub truncated: bool,
}

/// What to search for.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct GrepQuery {
    /// A Rust `regex` pattern, or a literal when `fixed_strings`.
    pub pattern: String,
    /// Take `pattern` literally.
    #[serde(default)]
    pub fixed_strings: bool,
    /// Match without regard to case.
    #[serde(default)]
    pub ignore_case: bool,
    /// Only files whose path matches this glob (as in `glob`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include: Option<String>,
}

impl GrepQuery {
    /// A regex query with no include filter.
    pub fn regex(pattern: impl Into<String>) -> Self {
        Self {
            pattern: pattern.into(),
            ..Self::default()
        }
    }

    /// A fixed-string query with no include filter.
    pub fn fixed(pattern: impl Into<String>) -> Self {
        Self {
            pattern: pattern.into(),
            fixed_strings: true,
            ..Self::default()
        }
    }

    /// The same query, only over files matching `include`.
    pub fn with_include(mut self, include: impl Into<String>) -> Self {
        self.include = Some(include.into());
        self
    }

    /// The same query, case-insensitive.
    pub fn case_insensitive(mut self) -> Self {
        self.ignore_case = true;
        self
    }
}
