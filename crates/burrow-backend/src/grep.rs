//! Grep over a buffer: the one regex dialect, the include filter, and a bounded collector.

use burrow_types::GrepMatch;
use regex::{Regex, RegexBuilder};

use crate::error::{Error, Result};
use crate::glob::Glob;
use crate::path::VPath;
use crate::results::{GrepQuery, GrepResult};
use crate::text::{is_searchable_text, lines};

/// The longest grep pattern accepted, in bytes.
pub const MAX_PATTERN_BYTES: usize = 1000;
/// The compiled-size limit of a grep regex, in bytes.
pub const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// A compiled [`GrepQuery`]: the line matcher and the include filter.
#[derive(Debug, Clone)]
pub struct CompiledGrep {
    regex: Regex,
    include: Option<Glob>,
}

impl CompiledGrep {
    /// Compiles `query`, refusing bad patterns with InvalidArgument and the compiler's reason.
    pub fn new(query: &GrepQuery) -> Result<CompiledGrep> {
        if query.pattern.len() > MAX_PATTERN_BYTES {
            return Err(Error::invalid_argument(
                "the grep pattern is longer than 1000 bytes; use a shorter pattern.",
            ));
        }
        let source = if query.fixed_strings {
            regex::escape(&query.pattern)
        } else {
            query.pattern.clone()
        };
        let regex = RegexBuilder::new(&source)
            .case_insensitive(query.ignore_case)
            .size_limit(REGEX_SIZE_LIMIT)
            .dfa_size_limit(REGEX_SIZE_LIMIT)
            .build()
            .map_err(|e| {
                Error::invalid_argument(format!(
                    "the grep pattern is not a valid regex: {}",
                    one_line(&e.to_string())
                ))
            })?;
        let include = query.include.as_deref().map(Glob::new).transpose()?;
        Ok(CompiledGrep { regex, include })
    }

    /// True when a file at `relative` (to the search root) passes the include filter.
    pub fn includes(&self, relative: &str) -> bool {
        self.include.as_ref().is_none_or(|g| g.is_match(relative))
    }

    /// True when `line` matches.
    pub fn is_match(&self, line: &str) -> bool {
        self.regex.is_match(line)
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Gathers grep matches file by file, in the order files are offered, up to a limit.
///
/// Offer files in path order; stop when [`GrepCollector::is_full`] says so.
#[derive(Debug)]
pub struct GrepCollector {
    limit: usize,
    matches: Vec<GrepMatch>,
    truncated: bool,
}

impl GrepCollector {
    /// A collector that keeps at most `limit` matches.
    pub fn new(limit: usize) -> Self {
        Self {
            limit,
            matches: Vec::new(),
            truncated: false,
        }
    }

    /// True once a match past the limit was seen: no more files need searching.
    pub fn is_full(&self) -> bool {
        self.truncated
    }

    /// Searches the file at `path` holding `bytes`; skips it when it is not text.
    pub fn search(&mut self, grep: &CompiledGrep, path: &VPath, bytes: &[u8]) {
        if self.truncated || !is_searchable_text(bytes) {
            return;
        }
        let Ok(text) = std::str::from_utf8(bytes) else {
            return;
        };
        for (i, line) in lines(text).enumerate() {
            if grep.is_match(line) {
                if self.matches.len() == self.limit {
                    self.truncated = true;
                    return;
                }
                self.matches.push(GrepMatch {
                    path: path.as_str().to_owned(),
                    line_number: i as u64 + 1,
                    line: line.to_owned(),
                });
            }
        }
    }

    /// Adds matches found elsewhere (already in order), respecting the limit.
    pub fn extend(&mut self, found: impl IntoIterator<Item = GrepMatch>) {
        for m in found {
            if self.truncated {
                return;
            }
            if self.matches.len() == self.limit {
                self.truncated = true;
                return;
            }
            self.matches.push(m);
        }
    }

    /// The result.
    pub fn finish(self) -> GrepResult {
        GrepResult {
            matches: self.matches,
            truncated: self.truncated,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collects_in_order_with_limit() {
        let g = CompiledGrep::new(&GrepQuery::regex("^a")).unwrap();
        let mut c = GrepCollector::new(2);
        c.search(&g, &VPath::parse("/x").unwrap(), b"a1\r\nb\na2\na3\n");
        let r = c.finish();
        assert!(r.truncated);
        assert_eq!(r.matches.len(), 2);
        assert_eq!(r.matches[1].line_number, 3);
        assert_eq!(r.matches[0].line, "a1");
    }

    #[test]
    fn refuses_bad_patterns() {
        for q in [
            GrepQuery::regex("("),
            GrepQuery::regex("a".repeat(1001)),
            GrepQuery::regex("\\w{1000}{1000}"),
        ] {
            assert_eq!(
                CompiledGrep::new(&q).unwrap_err().kind(),
                crate::ErrorKind::InvalidArgument
            );
        }
        assert!(CompiledGrep::new(&GrepQuery::fixed("(")).is_ok());
    }

    #[test]
    fn skips_binary() {
        let g = CompiledGrep::new(&GrepQuery::fixed("a")).unwrap();
        let mut c = GrepCollector::new(10);
        c.search(&g, &VPath::root(), b"a\0");
        c.search(&g, &VPath::root(), &[b'a', 0xff]);
        assert!(c.finish().matches.is_empty());
    }
}
