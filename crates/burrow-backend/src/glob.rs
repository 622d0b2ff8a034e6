//! `Glob`: the contract's glob dialect, compiled once with globset and matched on relative paths.

use globset::{GlobBuilder, GlobMatcher};

use crate::error::{Error, ErrorKind, Result};
use crate::shown;

/// The longest glob pattern accepted, in bytes.
pub const MAX_GLOB_BYTES: usize = 1000;

/// A compiled glob, matched against paths relative to the search root.
///
/// # Behavior
///
/// - `*`, `?` and `[..]` stay within one segment; `**` spans segments; `{a,b}` alternates.
/// - A pattern starting with "/" is anchored at the search root; a pattern
///   with no "/" matches the file name at any depth (as ripgrep's `--glob`);
///   any other pattern is anchored at the search root.
/// - Dot-files match like any other file.
/// - A ".." segment (a pattern that climbs): InvalidPath. Empty, NUL, over
///   1000 bytes, or malformed: InvalidArgument.
#[derive(Debug, Clone)]
pub struct Glob {
    source: String,
    matcher: GlobMatcher,
}

impl Glob {
    /// Compiles `pattern`.
    pub fn new(pattern: &str) -> Result<Glob> {
        if pattern.is_empty() {
            return Err(Error::invalid_argument(
                "the glob pattern is empty; use \"**\" to match every file.",
            ));
        }
        if pattern.len() > MAX_GLOB_BYTES {
            return Err(Error::invalid_argument(
                "the glob pattern is longer than 1000 bytes; use a shorter pattern.",
            ));
        }
        if pattern.contains('\0') {
            return Err(Error::invalid_argument(
                "the glob pattern contains a NUL character.",
            ));
        }
        if pattern.split('/').any(|s| s == "..") {
            return Err(Error::refusal(
                ErrorKind::InvalidPath,
                format!(
                    "the glob pattern {:#} climbs out of the search directory; use a pattern inside it.",
                    shown(pattern)
                ),
            ));
        }
        let anchored = pattern.starts_with('/') || pattern.contains('/');
        let trimmed: Vec<&str> = pattern
            .trim_start_matches('/')
            .split('/')
            .filter(|s| *s != ".")
            .collect();
        let body = trimmed.join("/");
        let full = if anchored { body } else { format!("**/{body}") };
        let glob = GlobBuilder::new(&full)
            .literal_separator(true)
            .backslash_escape(true)
            .empty_alternates(true)
            .build()
            .map_err(|e| {
                Error::invalid_argument(format!(
                    "the glob pattern {:#} is malformed: {}.",
                    shown(pattern),
                    e.kind()
                ))
            })?;
        Ok(Glob {
            source: pattern.to_owned(),
            matcher: glob.compile_matcher(),
        })
    }

    /// The pattern as given.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// True when `relative` (a path relative to the search root, no leading "/") matches.
    pub fn is_match(&self, relative: &str) -> bool {
        self.matcher.is_match(relative)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dialect() {
        let cases = [
            ("*.py", "a.py", true),
            ("*.py", "x/y/a.py", true),
            ("/*.py", "x/a.py", false),
            ("/*.py", "a.py", true),
            ("src/*.rs", "src/a.rs", true),
            ("src/*.rs", "src/x/a.rs", false),
            ("src/**/*.rs", "src/x/y/a.rs", true),
            ("**/*.rs", "a.rs", true),
            ("*.{rs,toml}", "d/Cargo.toml", true),
            ("*", ".env", true),
            ("?.txt", "ab.txt", false),
            ("[ab].txt", "b.txt", true),
        ];
        for (pat, path, want) in cases {
            assert_eq!(Glob::new(pat).unwrap().is_match(path), want, "{pat} {path}");
        }
    }

    #[test]
    fn refusals() {
        assert_eq!(
            Glob::new("../*").unwrap_err().kind(),
            ErrorKind::InvalidPath
        );
        assert_eq!(
            Glob::new("a/../../b").unwrap_err().kind(),
            ErrorKind::InvalidPath
        );
        assert_eq!(
            Glob::new("[").unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
        assert_eq!(
            Glob::new("").unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
    }

    #[test]
    fn refusals_quote_control_characters() {
        for pattern in ["../\n*", "[\nx", "a\r\n{b"] {
            let message = Glob::new(pattern).unwrap_err().message().to_owned();
            assert!(!message.chars().any(char::is_control), "{message:?}");
            assert!(message.contains("\\n"), "{message}");
        }
        let message = Glob::new("../*").unwrap_err().message().to_owned();
        assert!(message.contains("\"../*\""), "{message}");
    }
}
