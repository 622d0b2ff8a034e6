//! Grep over a buffer: the one regex dialect, the include filter, and a bounded collector.
//!
//! # What a pattern matches
//!
//! A pattern is matched against each line the way `rg --crlf` matches it
//! (ripgrep is the reference, checked by `tests/all/ripgrep.rs`). It sees the
//! line up to its "\n" with one "\r" before that dropped (as at the end of a
//! file with no "\n"), so `$` matches where that "\r" stood and any look
//! after it sees that position; nothing in the pattern can match a "\r" or a
//! "\n" (they are removed from every class, `.` and `\s` included, and a
//! literal holding one matches nothing); `^` and `$` are always line anchors,
//! whatever the flags; `\A` and `\z` are the line's start and end.
//!
//! # The whole-file pass
//!
//! The collector does not split a whole file into lines to match each one.
//! The line regex is compiled in multi-line mode, which on a single line
//! means exactly what it means without it, and again in CRLF multi-line
//! mode (`$` also before a "\r\n", `^` also after a lone "\r") to run over
//! the whole file: that matches wherever the line regex matches some line,
//! at the same start, and perhaps elsewhere (the touched lines are then
//! matched one by one). A
//! line (up to its "\n") is a substring of the file, and every line anchor
//! and word boundary means the same at a line's edges as at the same
//! positions of the file (`^` after a "\n" or at the start, `$` before one or
//! at the end; `\b` and `\B` see "\n", not a word character, as they see
//! nothing at a line's edge). So only the lines a whole-file match touches
//! are split and matched, and a file with no match is never split.
//!
//! Whether that holds is decided from the compiled pattern's properties, never
//! from its text. Every line is matched when the pattern can match the empty
//! string (a whole-file scan skips an empty match where the previous match
//! ended, which can be a line's start), or uses `\A` or `\z` (the file's
//! start and end, not a line's).

use burrow_types::GrepMatch;
use regex::{Regex, RegexBuilder};
use regex_syntax::hir::{
    Class, ClassBytes, ClassBytesRange, ClassUnicode, ClassUnicodeRange, Hir, HirKind, Look,
};

use crate::error::{Error, Result};
use crate::glob::Glob;
use crate::path::VPath;
use crate::results::{GrepQuery, GrepResult};
#[cfg(doc)]
use crate::text::lines;
use crate::text::searchable_text;

/// The longest grep pattern accepted, in bytes.
pub const MAX_PATTERN_BYTES: usize = 1000;
/// The compiled-size limit of a grep regex, in bytes.
pub const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// A compiled [`GrepQuery`]: the line matcher and the include filter.
#[derive(Debug, Clone)]
pub struct CompiledGrep {
    /// The line matcher, run over a line without its ending (see the module docs).
    regex: Regex,
    /// The same pattern in CRLF multi-line mode, run over a whole file: `$`
    /// also matches before a "\r\n" without consuming the "\r", so it matches
    /// wherever `regex` matches a line, at the same start.
    file_regex: Regex,
    /// True when `regex` run over a whole file finds every line that matches.
    whole_file: bool,
    include: Option<Glob>,
    /// Strings one of which every matching line holds, when there is such a
    /// small set (see [`CompiledGrep::required_literals`]).
    literals: Option<Vec<String>>,
}

/// The most strings [`CompiledGrep::required_literals`] gives.
const MAX_REQUIRED_LITERALS: usize = 64;

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
        let hir = regex_syntax::ParserBuilder::new()
            .case_insensitive(query.ignore_case)
            .multi_line(true)
            .build()
            .parse(&source)
            .map_err(|e| not_a_regex(&e.to_string()))?;
        let hir = within_a_line(hir);
        let properties = hir.properties();
        let looks = properties.look_set();
        let whole_file = properties.minimum_len().is_none_or(|n| n > 0)
            && !looks.contains(Look::Start)
            && !looks.contains(Look::End);
        let line_regex = hir.to_string();
        let regex = build_regex(&line_regex, false)?;
        let file_regex = build_regex(&line_regex, true)?;
        let include = query.include.as_deref().map(Glob::new).transpose()?;
        let literals = required_literals(&hir);
        Ok(CompiledGrep {
            regex,
            file_regex,
            whole_file,
            include,
            literals,
        })
    }

    /// Non-empty strings, at most 64, none holding a "\n" or a NUL, such that
    /// every line this grep matches contains at least one of them as bytes;
    /// `None` when the pattern has no such set (it can match the empty
    /// string, or its prefixes are too many or unbounded).
    ///
    /// A store that can search where the files are, with a plain fixed-string
    /// search (`grep -F`), can use them to pick the files worth reading: a
    /// file holding none of them has no match. They are the pattern's prefix
    /// literals (every match begins with one), case variants included when
    /// the grep ignores case, so the choice is never narrower than the
    /// matches; the exact matching is still this grep's.
    pub fn required_literals(&self) -> Option<&[String]> {
        self.literals.as_deref()
    }

    /// True when the file `under` itself, grepped as the search root, passes
    /// the include filter: the filter sees its name, as a search of its
    /// directory would see it relative to that directory.
    pub fn includes_itself(&self, under: &VPath) -> bool {
        self.includes(under.name())
    }

    /// True when a file at `relative` (to the search root) passes the include filter.
    pub fn includes(&self, relative: &str) -> bool {
        self.include.as_ref().is_none_or(|g| g.is_match(relative))
    }

    /// True when `line` matches: a line up to its "\n", a "\r" before that
    /// kept (one final "\r" is dropped: `$` matches where it stood).
    pub fn is_match(&self, line: &str) -> bool {
        self.regex.is_match(line.strip_suffix('\r').unwrap_or(line))
    }
}

/// Compiles a pattern printed from a line HIR; `crlf` for the whole-file pass.
fn build_regex(pattern: &str, crlf: bool) -> Result<Regex> {
    RegexBuilder::new(pattern)
        .crlf(crlf)
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|e| not_a_regex(&e.to_string()))
}

/// The prefix literals of `hir` (see [`CompiledGrep::required_literals`]).
fn required_literals(hir: &Hir) -> Option<Vec<String>> {
    use regex_syntax::hir::literal::{ExtractKind, Extractor};
    let seq = Extractor::new().kind(ExtractKind::Prefix).extract(hir);
    let literals = seq.literals()?;
    if literals.is_empty() || literals.len() > MAX_REQUIRED_LITERALS {
        return None;
    }
    literals
        .iter()
        .map(|l| {
            let bytes = l.as_bytes();
            if bytes.is_empty() || bytes.iter().any(|b| matches!(b, b'\n' | 0)) {
                return None;
            }
            String::from_utf8(bytes.to_vec()).ok()
        })
        .collect()
}

/// The compiler's reason on one line: it quotes the pattern, so whitespace
/// runs become one space and any other control character an escape.
fn not_a_regex(reason: &str) -> Error {
    let reason = reason.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut shown = String::with_capacity(reason.len());
    for c in reason.chars() {
        if c.is_control() {
            shown.extend(c.escape_default());
        } else {
            shown.push(c);
        }
    }
    let reason = shown;
    Error::invalid_argument(format!("the grep pattern is not a valid regex: {reason}"))
}

/// `hir` as it matches within one line without its ending (see the module
/// docs): no "\r" or "\n" in any class or literal, and the CRLF flavours of
/// `^` and `$` the same as the plain ones. (`$` before a final "\r" is had by
/// dropping that "\r" before matching, never by consuming it: a look after
/// `$` must see the position before it, as `$^` on an empty CRLF line does.)
fn within_a_line(hir: Hir) -> Hir {
    match hir.into_kind() {
        HirKind::Empty => Hir::empty(),
        HirKind::Literal(literal) => {
            if literal.0.iter().any(|b| matches!(b, b'\r' | b'\n')) {
                Hir::fail()
            } else {
                Hir::literal(literal.0)
            }
        }
        HirKind::Class(Class::Unicode(mut class)) => {
            class.difference(&ClassUnicode::new([
                ClassUnicodeRange::new('\n', '\n'),
                ClassUnicodeRange::new('\r', '\r'),
            ]));
            Hir::class(Class::Unicode(class))
        }
        HirKind::Class(Class::Bytes(mut class)) => {
            class.difference(&ClassBytes::new([
                ClassBytesRange::new(b'\n', b'\n'),
                ClassBytesRange::new(b'\r', b'\r'),
            ]));
            Hir::class(Class::Bytes(class))
        }
        HirKind::Look(Look::EndCRLF) => Hir::look(Look::EndLF),
        HirKind::Look(Look::StartCRLF) => Hir::look(Look::StartLF),
        HirKind::Look(look) => Hir::look(look),
        HirKind::Repetition(mut repetition) => {
            repetition.sub = Box::new(within_a_line(*repetition.sub));
            Hir::repetition(repetition)
        }
        HirKind::Capture(mut capture) => {
            capture.sub = Box::new(within_a_line(*capture.sub));
            Hir::capture(capture)
        }
        HirKind::Concat(subs) => Hir::concat(subs.into_iter().map(within_a_line).collect()),
        HirKind::Alternation(subs) => {
            Hir::alternation(subs.into_iter().map(within_a_line).collect())
        }
    }
}

/// The lines of `text` as [`lines`] splits them, each twice: as matched (up
/// to its "\n", one "\r" before that dropped) and as shown (as `read`
/// returns it: a "\r" dropped only before a "\n").
fn read_lines(text: &str) -> impl Iterator<Item = (&str, &str)> {
    text.split_inclusive('\n')
        .map(|piece| match piece.strip_suffix('\n') {
            Some(raw) => {
                let line = raw.strip_suffix('\r').unwrap_or(raw);
                (line, line)
            }
            None => (piece.strip_suffix('\r').unwrap_or(piece), piece),
        })
}

/// Grep where `under` is a file: its lines matching `grep`, at most `limit`,
/// when it passes the include filter ([`CompiledGrep::includes_itself`]) and
/// is text; otherwise no matches. A backend reads the file only when
/// `includes_itself` says so.
pub fn grep_file(grep: &CompiledGrep, under: &VPath, bytes: &[u8], limit: usize) -> GrepResult {
    let mut collector = GrepCollector::new(limit);
    if grep.includes_itself(under) {
        collector.search(grep, under, bytes);
    }
    collector.finish()
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
    ///
    /// `path` is the file's path as the matches name it: a [`VPath`], or the
    /// string of one that a store keeps (so a scan need not re-parse each).
    pub fn search(&mut self, grep: &CompiledGrep, path: &(impl AsRef<str> + ?Sized), bytes: &[u8]) {
        let path = path.as_ref();
        if self.truncated {
            return;
        }
        let Some(text) = searchable_text(bytes) else {
            return;
        };
        if grep.whole_file {
            self.search_touched_lines(grep, path, text);
        } else {
            self.search_lines(grep, path, text, 0);
        }
    }

    /// Matches every line of `text` (whole lines of a file, `lines_before`
    /// lines into it); false once a match past the limit was seen.
    fn search_lines(
        &mut self,
        grep: &CompiledGrep,
        path: &str,
        text: &str,
        lines_before: usize,
    ) -> bool {
        for (i, (matched, line)) in read_lines(text).enumerate() {
            if grep.regex.is_match(matched) {
                if self.matches.len() == self.limit {
                    self.truncated = true;
                    return false;
                }
                self.matches.push(GrepMatch {
                    path: path.to_owned(),
                    line_number: (lines_before + i) as u64 + 1,
                    line: line.to_owned(),
                });
            }
        }
        true
    }

    /// Matches only the lines that a whole-file match touches (from the line
    /// it starts on to the line it ends on): the same matches as
    /// [`GrepCollector::search_lines`] over all of `text`. A line that
    /// matches on its own is always touched: the whole-file regex matches at
    /// the same start, and a leftmost-first scan can only pass that start
    /// inside (or at the end of) a match that touches the line.
    fn search_touched_lines(&mut self, grep: &CompiledGrep, path: &str, text: &str) {
        let bytes = text.as_bytes();
        let is_newline = |b: &u8| *b == b'\n';
        // Everything before `fed_to` (always a line start) is done with.
        let mut fed_to = 0;
        // How many lines start before `counted_to` (moves forward only).
        let (mut counted_to, mut lines_before) = (0, 0);
        for found in grep.file_regex.find_iter(text) {
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
            let (Some(before), Some(after)) = (bytes.get(fed_to..first), bytes.get(last..)) else {
                return;
            };
            if first >= bytes.len() {
                return;
            }
            let line_start = before
                .iter()
                .rposition(is_newline)
                .map_or(fed_to, |i| fed_to + i + 1);
            let line_end = after
                .iter()
                .position(is_newline)
                .map_or(bytes.len(), |i| last + i + 1);
            lines_before += bytes
                .get(counted_to..line_start)
                .map_or(0, |run| run.iter().filter(|b| is_newline(b)).count());
            counted_to = line_start;
            let Some(touched) = text.get(line_start..line_end) else {
                return;
            };
            if !self.search_lines(grep, path, touched, lines_before) {
                return;
            }
            fed_to = line_end;
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
        let message = CompiledGrep::new(&GrepQuery::regex("\u{1b}[31m(\n"))
            .unwrap_err()
            .message()
            .to_owned();
        assert!(!message.chars().any(char::is_control), "{message:?}");
    }

    const PATTERNS: [&str; 30] = [
        "a", "^a", "a b", r"\bab\b", r"\Bb", "a.b", r"a\sb", "[^a]b", "^$", "^", r"\d+", "a|^b",
        "b\r", "(a)(b)", "x*", r"\w+ \w+", r"a\s*b", "[^x]+", r"\s", "b|a\n", "^[^#]*", r"\s*",
        "a|", "(?m)^$", "[^a]*", "b$", r"a$\b", r"\s+$", "(?R)^b", r"\b",
    ];

    fn query(pattern: usize, fixed: bool, ignore_case: bool) -> GrepQuery {
        let mut query = if fixed {
            GrepQuery::fixed(PATTERNS[pattern])
        } else {
            GrepQuery::regex(PATTERNS[pattern])
        };
        query.ignore_case = ignore_case;
        query
    }

    /// Every line of `text` matched one by one, at most `limit` matches.
    fn every_line(grep: &CompiledGrep, text: &str, limit: usize) -> GrepResult {
        let mut collector = GrepCollector::new(limit);
        collector.search_lines(grep, "/", text, 0);
        collector.finish()
    }

    #[test]
    fn the_whole_file_pass_is_decided_from_the_compiled_pattern() {
        let line_by_line = [
            r"\Aa", r"a\z", "(?-m)^a", "x*", "^", "", "a|", r"\s*", "^[^#]*", r"\b", "(?m)^$",
        ];
        for pattern in line_by_line {
            let grep = CompiledGrep::new(&GrepQuery::regex(pattern)).unwrap();
            assert!(!grep.whole_file, "{pattern}");
        }
        for pattern in ["a$", "(?R)^a$", "(?s)a.b", "a.b", r"\bx", "a|b"] {
            let grep = CompiledGrep::new(&GrepQuery::regex(pattern)).unwrap();
            assert!(grep.whole_file, "{pattern}");
        }
        for fixed in ["cost: $5", "a.b", "(?", "^"] {
            assert!(
                CompiledGrep::new(&GrepQuery::fixed(fixed))
                    .unwrap()
                    .whole_file,
                "{fixed}"
            );
        }
    }

    /// The observed bug: an empty match right where a match ended was skipped.
    #[test]
    fn empty_matching_patterns_find_every_line() {
        for pattern in ["^[^#]*", r"\s*", "x*", "a|", "^"] {
            let grep = CompiledGrep::new(&GrepQuery::regex(pattern)).unwrap();
            let mut collector = GrepCollector::new(10);
            collector.search(&grep, &VPath::root(), b"a\n#b\nc\n \n\nd");
            let lines: Vec<u64> = collector
                .finish()
                .matches
                .iter()
                .map(|m| m.line_number)
                .collect();
            assert_eq!(lines, [1, 2, 3, 4, 5, 6], "{pattern}");
        }
    }

    #[test]
    fn a_carriage_return_is_never_matched_and_dollar_sees_past_it() {
        let found = |pattern: &str, text: &[u8]| -> Vec<(u64, String)> {
            let grep = CompiledGrep::new(&GrepQuery::regex(pattern)).unwrap();
            let mut collector = GrepCollector::new(10);
            collector.search(&grep, &VPath::root(), text);
            let result = collector.finish();
            result
                .matches
                .into_iter()
                .map(|m| (m.line_number, m.line))
                .collect()
        };
        let text = b"a\rb\nx\r\n\r\ny\r";
        assert_eq!(found("a.b", text), []);
        assert_eq!(found(r"a\sb", text), []);
        assert_eq!(found("^b", text), []);
        assert_eq!(found("b$", text), [(1, "a\rb".to_owned())]);
        assert_eq!(found("x$", text), [(2, "x".to_owned())]);
        assert_eq!(found("^$", text), [(3, String::new())]);
        assert_eq!(found("y$", text), [(4, "y\r".to_owned())]);
        assert_eq!(found("y\r", text), []);
        assert_eq!(found(r"\w$", b"x\r\r\n"), []);
        assert_eq!(found("x$", b"x\r\r"), []);
        // A look after `$` sees the position before the dropped "\r".
        assert_eq!(found("$^+", b"\r\n"), [(1, String::new())]);
        assert_eq!(found("$^", b"a\r\n\r\n"), [(2, String::new())]);
        assert_eq!(found(r"a$\b", b"a\r\n"), [(1, "a".to_owned())]);
        assert_eq!(found(r"a$\B", b"a\r\n"), []);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]

        /// Matching only the lines a whole-file match touches finds exactly
        /// what matching every line finds, truncation included.
        #[test]
        fn touched_lines_find_what_every_line_finds(
            text in "[ab \r\n1x#]{0,60}",
            pattern in 0..PATTERNS.len(),
            fixed: bool,
            ignore_case: bool,
            limit in 0usize..6,
        ) {
            let query = query(pattern, fixed, ignore_case);
            let grep = CompiledGrep::new(&query).unwrap();
            let mut collector = GrepCollector::new(limit);
            collector.search(&grep, &VPath::root(), text.as_bytes());
            // The reference: every line matched one by one.
            proptest::prop_assert_eq!(collector.finish(), every_line(&grep, &text, limit));
        }
    }

    #[test]
    fn required_literals_are_the_prefixes_or_none() {
        let literals = |q: GrepQuery| {
            CompiledGrep::new(&q)
                .unwrap()
                .required_literals()
                .map(<[String]>::to_vec)
        };
        assert_eq!(
            literals(GrepQuery::fixed("a.b")),
            Some(vec!["a.b".to_owned()])
        );
        assert_eq!(
            literals(GrepQuery::regex("fn (handle|run)_")),
            Some(vec!["fn handle_".to_owned(), "fn run_".to_owned()])
        );
        // Can match the empty string, unbounded, or a literal that can never match.
        for pattern in ["a*", ".", "\\w+x", "a\nb"] {
            assert_eq!(literals(GrepQuery::regex(pattern)), None, "{pattern}");
        }
        let mut folded = GrepQuery::fixed("ab");
        folded.ignore_case = true;
        let mut found = literals(folded).unwrap();
        found.sort();
        assert_eq!(found, ["AB", "Ab", "aB", "ab"]);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]

        /// Every line a grep matches holds one of its required literals.
        #[test]
        fn every_matching_line_holds_a_required_literal(
            line in "[abAB \r1x#]{0,30}",
            pattern in 0..PATTERNS.len(),
            fixed: bool,
            ignore_case: bool,
        ) {
            let grep = CompiledGrep::new(&query(pattern, fixed, ignore_case)).unwrap();
            if let Some(literals) = grep.required_literals()
                && grep.is_match(&line)
            {
                proptest::prop_assert!(literals.iter().any(|l| line.contains(l.as_str())));
            }
        }
    }

    #[test]
    fn grep_where_under_is_a_file() {
        let under = VPath::parse("/d/notes.md").unwrap();
        let grep = CompiledGrep::new(&GrepQuery::regex("a").with_include("*.md")).unwrap();
        let found = grep_file(&grep, &under, b"a\nb\na\n", 1);
        assert_eq!(found.matches.len(), 1);
        assert!(found.truncated);
        assert_eq!(found.matches[0].path, "/d/notes.md");
        let grep = CompiledGrep::new(&GrepQuery::regex("a").with_include("*.rs")).unwrap();
        assert!(!grep.includes_itself(&under));
        assert_eq!(grep_file(&grep, &under, b"a\n", 5), GrepResult::default());
        let grep = CompiledGrep::new(&GrepQuery::regex("a").with_include("/notes.md")).unwrap();
        assert!(grep.includes_itself(&under));
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
