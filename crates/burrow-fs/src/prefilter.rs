//! A whole-file prefilter for grep: only the lines a whole-file regex touches are handed to the contract's `GrepCollector`.
//!
//! Lines are still matched, split and numbered by `GrepCollector`; this only
//! decides which lines are worth handing to it, so a file with no match is
//! never split into lines, and one with a few matches is not matched line by
//! line in full. It is the query's regex run over the whole file in
//! multi-line mode, which matches wherever the per-line regex matches some
//! line (at the same start): a line is a substring of the file, and
//! every assertion means the same at a line's edges as at the same positions
//! of the file (`^` after a "\n" or at the start; `\b` and `\B` see "\n" or
//! "\r" there, which are not word characters, as they see nothing at a
//! line's edge). Where that does not hold, there is no prefilter: `$` (a
//! line's end may sit before "\r\n", where multi-line `$` does not match),
//! `\A` and `\z` (start and end of the haystack), and inline flags `(?..)`
//! that could turn multi-line mode off. The check is textual and conservative.

use burrow_backend::grep::{MAX_PATTERN_BYTES, REGEX_SIZE_LIMIT};
use burrow_backend::{CompiledGrep, GrepCollector, GrepMatch, GrepQuery, VPath, text};
use regex::bytes::{Regex, RegexBuilder};

/// A regex that matches a file's bytes whenever some line of it matches the query.
#[derive(Debug, Clone)]
pub(crate) struct Prefilter(Regex);

impl Prefilter {
    /// The prefilter of `query`, or `None` when it could miss a matching line.
    pub(crate) fn new(query: &GrepQuery) -> Option<Prefilter> {
        if query.pattern.len() > MAX_PATTERN_BYTES {
            return None;
        }
        let source = if query.fixed_strings {
            regex::escape(&query.pattern)
        } else {
            query.pattern.clone()
        };
        if ["$", "\\A", "\\z", "(?"].iter().any(|s| source.contains(s)) {
            return None;
        }
        RegexBuilder::new(&source)
            .case_insensitive(query.ignore_case)
            .multi_line(true)
            .size_limit(REGEX_SIZE_LIMIT)
            .dfa_size_limit(REGEX_SIZE_LIMIT)
            .build()
            .ok()
            .map(Prefilter)
    }

    /// False only when no line of `bytes` can match.
    #[cfg(test)]
    pub(crate) fn may_match(&self, bytes: &[u8]) -> bool {
        self.0.is_match(bytes)
    }

    /// The matches of `grep` in the file at `path` holding `bytes`, at most
    /// `limit`: exactly what one `GrepCollector::search` over the whole file
    /// returns.
    ///
    /// Every line that a whole-file match touches (from the line it starts on
    /// to the line it ends on) is searched by a collector, and its line
    /// numbers shifted by the lines before it. A line that matches on its own
    /// is always touched: the whole-file regex matches at the same start, and
    /// a leftmost-first scan can only pass that start inside (or at the end
    /// of) a match that touches the line.
    pub(crate) fn search(
        &self,
        grep: &CompiledGrep,
        path: &VPath,
        bytes: &[u8],
        limit: usize,
    ) -> Vec<GrepMatch> {
        let mut out = Vec::new();
        if limit == 0 || !text::is_searchable_text(bytes) {
            return out;
        }
        let is_newline = |b: &u8| *b == b'\n';
        // Everything before `fed_to` (always a line start) is done with.
        let mut fed_to = 0;
        // How many lines start before `counted_to` (moves forward only).
        let (mut counted_to, mut lines_before) = (0, 0);
        for found in self.0.find_iter(bytes) {
            // The first and last byte the match touches (its start, when empty).
            let last = if found.end() > found.start() {
                found.end() - 1
            } else {
                found.start()
            };
            if last < fed_to {
                continue;
            }
            let first = found.start().max(fed_to);
            if first >= bytes.len() {
                break;
            }
            let line_start = bytes[fed_to..first]
                .iter()
                .rposition(is_newline)
                .map_or(fed_to, |i| fed_to + i + 1);
            let line_end = bytes[last..]
                .iter()
                .position(is_newline)
                .map_or(bytes.len(), |i| last + i + 1);
            lines_before += bytes[counted_to..line_start]
                .iter()
                .filter(|b| is_newline(b))
                .count();
            counted_to = line_start;
            let mut collector = GrepCollector::new(limit - out.len());
            collector.search(grep, path, &bytes[line_start..line_end]);
            out.extend(collector.finish().matches.into_iter().map(|mut m| {
                m.line_number += lines_before as u64;
                m
            }));
            if out.len() >= limit {
                return out;
            }
            fed_to = line_end;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use burrow_backend::{CompiledGrep, GrepCollector, VPath};
    use proptest::prelude::*;

    use super::*;

    const PATTERNS: [&str; 20] = [
        "a", "^a", "a b", r"\bab\b", r"\Bb", "a.b", r"a\sb", "[^a]b", "^$", "^", r"\d+", "a|^b",
        "b\r", "(a)(b)", "x*", r"\w+ \w+", r"a\s*b", "[^x]+", r"\s", "b|a\n",
    ];

    /// The matches one collector finds over the whole of `text`, at most `limit`.
    fn plain(query: &GrepQuery, text: &[u8], limit: usize) -> Vec<GrepMatch> {
        let grep = CompiledGrep::new(query).unwrap();
        let mut collector = GrepCollector::new(limit);
        collector.search(&grep, &VPath::root(), text);
        collector.finish().matches
    }

    fn some_line_matches(query: &GrepQuery, text: &[u8]) -> bool {
        !plain(query, text, usize::MAX - 1).is_empty()
    }

    #[test]
    fn unsafe_constructs_get_no_prefilter() {
        for pattern in ["a$", r"\Aa", r"a\z", "(?-m)^a", "(?s)a.b", "(?R)^a$"] {
            assert!(
                Prefilter::new(&GrepQuery::regex(pattern)).is_none(),
                "{pattern}"
            );
        }
        assert!(Prefilter::new(&GrepQuery::fixed("cost: $5")).is_none());
        assert!(Prefilter::new(&GrepQuery::fixed("a.b")).is_some());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn never_skips_a_file_with_a_matching_line(
            text in "[ab \r\n1x]{0,40}",
            pattern in 0..PATTERNS.len(),
            fixed: bool,
            ignore_case: bool,
        ) {
            let mut query = if fixed { GrepQuery::fixed(PATTERNS[pattern]) } else { GrepQuery::regex(PATTERNS[pattern]) };
            query.ignore_case = ignore_case;
            if let Some(prefilter) = Prefilter::new(&query)
                && some_line_matches(&query, text.as_bytes())
            {
                prop_assert!(prefilter.may_match(text.as_bytes()), "{query:?} {text:?}");
            }
        }

        #[test]
        fn finds_what_one_collector_finds(
            text in "[ab \r\n1x]{0,60}",
            pattern in 0..PATTERNS.len(),
            fixed: bool,
            ignore_case: bool,
            limit in 0usize..6,
        ) {
            let mut query = if fixed { GrepQuery::fixed(PATTERNS[pattern]) } else { GrepQuery::regex(PATTERNS[pattern]) };
            query.ignore_case = ignore_case;
            if let Some(prefilter) = Prefilter::new(&query) {
                let grep = CompiledGrep::new(&query).unwrap();
                let got = prefilter.search(&grep, &VPath::root(), text.as_bytes(), limit);
                prop_assert_eq!(got, plain(&query, text.as_bytes(), limit), "{:?} {:?}", query, text);
            }
        }
    }
}
