//! Shared text helpers: the one line split, the read window, and the CRLF-preserving edit.
//!
//! Every backend reads and edits through these functions, so "what is a
//! line" and "what does an edit do to a CRLF file" have one answer.

use burrow_types::EditResult;

use crate::error::{Error, ErrorKind, Result};
use crate::path::VPath;
use crate::results::LineWindow;

/// The lines of `text`: split on "\n" only, no extra line for a final "\n",
/// and a "\r" just before a "\n" is not part of its line.
pub fn lines(text: &str) -> Lines<'_> {
    Lines { rest: text }
}

/// Iterator returned by [`lines`].
#[derive(Debug, Clone)]
pub struct Lines<'a> {
    rest: &'a str,
}

impl<'a> Iterator for Lines<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        if self.rest.is_empty() {
            return None;
        }
        match memchr::memchr(b'\n', self.rest.as_bytes()) {
            Some(i) => {
                let line = &self.rest[..i];
                self.rest = &self.rest[i + 1..];
                Some(line.strip_suffix('\r').unwrap_or(line))
            }
            None => {
                let line = self.rest;
                self.rest = "";
                Some(line)
            }
        }
    }
}

/// How many lines [`lines`] yields for `bytes`, without decoding them.
pub fn line_count(bytes: &[u8]) -> usize {
    let newlines = memchr::memchr_iter(b'\n', bytes).count();
    match bytes.last() {
        None => 0,
        Some(b'\n') => newlines,
        Some(_) => newlines + 1,
    }
}

/// `bytes` as UTF-8 text, or NotText naming `path`.
pub fn decode_text<'a>(path: &VPath, bytes: &'a [u8]) -> Result<&'a str> {
    std::str::from_utf8(bytes).map_err(|_| Error::not_text(path))
}

/// True when `bytes` is text for grep's purposes: valid UTF-8 with no NUL.
pub fn is_searchable_text(bytes: &[u8]) -> bool {
    searchable_text(bytes).is_some()
}

/// `bytes` as text when it is text for grep's purposes ([`is_searchable_text`]).
pub fn searchable_text(bytes: &[u8]) -> Option<&str> {
    if bytes.contains(&0) {
        return None;
    }
    std::str::from_utf8(bytes).ok()
}

/// The window of `limit` lines from `offset` of the file at `path` holding `bytes`.
///
/// Applies `read`'s contract: NotText for non-UTF-8 content, zero lines for an
/// empty file, InvalidArgument for an offset at or past the end of a non-empty file.
pub fn read_window(path: &VPath, bytes: &[u8], offset: usize, limit: usize) -> Result<LineWindow> {
    let text = decode_text(path, bytes)?;
    let total_lines = line_count(bytes);
    if total_lines == 0 {
        return Ok(LineWindow::default());
    }
    if offset >= total_lines {
        return Err(Error::refusal_at(
            ErrorKind::InvalidArgument,
            path,
            format!("offset {offset} is past the end of "),
            format!(
                ", which has {total_lines} {}; use an offset below {total_lines}.",
                if total_lines == 1 { "line" } else { "lines" }
            ),
        ));
    }
    let lines: Vec<String> = lines(text)
        .skip(offset)
        .take(limit)
        .map(str::to_owned)
        .collect();
    let truncated = offset + lines.len() < total_lines;
    Ok(LineWindow {
        lines,
        offset,
        total_lines,
        truncated,
    })
}

/// Checks an edit's arguments before any file is touched.
pub fn check_edit_args(old: &str, new: &str) -> Result<()> {
    if old.is_empty() {
        return Err(Error::invalid_argument(
            "the text to replace is empty; give the exact text to replace.",
        ));
    }
    if old == new {
        return Err(Error::invalid_argument(
            "the old and new text are the same; there is nothing to change.",
        ));
    }
    Ok(())
}

/// True when `text` uses CRLF line endings: it holds "\r\n" and no bare "\n".
pub fn is_crlf(text: &str) -> bool {
    line_ending(text) == Some(LineEnding::Crlf)
}

/// The one line ending a text uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineEnding {
    /// Every line ends with "\n" alone.
    Lf,
    /// Every line ends with "\r\n".
    Crlf,
}

/// The line ending `text` uses: `None` when it has none, or both.
pub fn line_ending(text: &str) -> Option<LineEnding> {
    let bytes = text.as_bytes();
    let (mut crlf, mut lf) = (false, false);
    for i in memchr::memchr_iter(b'\n', bytes) {
        if i > 0 && bytes[i - 1] == b'\r' {
            crlf = true;
        } else {
            lf = true;
        }
        if crlf && lf {
            break;
        }
    }
    match (crlf, lf) {
        (true, false) => Some(LineEnding::Crlf),
        (false, true) => Some(LineEnding::Lf),
        _ => None,
    }
}

/// `s` with every line ending ("\r\n" or "\n") written as `ending`.
pub fn with_line_ending(s: &str, ending: LineEnding) -> String {
    if memchr::memchr(b'\n', s.as_bytes()).is_none() {
        // No line ending to rewrite (the common edit of part of one line).
        return s.to_owned();
    }
    let lf = s.replace("\r\n", "\n");
    match ending {
        LineEnding::Lf => lf,
        LineEnding::Crlf => lf.replace('\n', "\r\n"),
    }
}

/// Applies `edit`'s contract to `bytes`, returning the new content and the count.
///
/// An edit never mixes line endings: in a file that uses one (see
/// [`line_ending`]), every line ending of `old` and `new` is written as the
/// file's before matching, so "\n" in `old` matches "\r\n" in a CRLF file
/// and "\r\n" in `new` writes "\n" in an LF file. A file with no line
/// ending, or with both, takes `old` and `new` as given. An edit whose `old`
/// and `new` are equal once so written changes nothing and is refused with
/// InvalidArgument.
pub fn apply_edit(
    path: &VPath,
    bytes: &[u8],
    old: &str,
    new: &str,
    replace_all: bool,
) -> Result<(Vec<u8>, usize)> {
    check_edit_args(old, new)?;
    let text = decode_text(path, bytes)?;
    let (old, new) = match line_ending(text) {
        Some(ending) => (with_line_ending(old, ending), with_line_ending(new, ending)),
        None => (old.to_owned(), new.to_owned()),
    };
    if old == new {
        return Err(Error::refusal_at(
            ErrorKind::InvalidArgument,
            path,
            "the old and new text differ only in line endings, and an edit writes the line endings of ",
            "; there is nothing to change.",
        ));
    }
    // Every occurrence found once (non-overlapping, left to right, as
    // `str::matches` finds them), then the new text built from them.
    let finder = memchr::memmem::Finder::new(old.as_bytes());
    let mut found: Vec<usize> = Vec::new();
    let mut from = 0;
    while let Some(at) = text
        .as_bytes()
        .get(from..)
        .and_then(|rest| finder.find(rest))
    {
        found.push(from + at);
        from += at + old.len();
    }
    let count = found.len();
    if count == 0 {
        return Err(Error::refusal_at(
            ErrorKind::InvalidArgument,
            path,
            "the text to replace was not found in ",
            "; read the file and copy the exact text.",
        ));
    }
    if count > 1 && !replace_all {
        return Err(Error::refusal_at(
            ErrorKind::InvalidArgument,
            path,
            format!("the text to replace occurs {count} times in "),
            "; include more surrounding text to make it unique, or replace all.",
        ));
    }
    let bytes = text.as_bytes();
    let mut replaced =
        Vec::with_capacity(bytes.len().saturating_sub(old.len() * count) + new.len() * count);
    let mut start = 0;
    for at in found {
        replaced.extend_from_slice(bytes.get(start..at).unwrap_or_default());
        replaced.extend_from_slice(new.as_bytes());
        start = at + old.len();
    }
    replaced.extend_from_slice(bytes.get(start..).unwrap_or_default());
    Ok((replaced, count))
}

/// The `EditResult` for a successful edit of `path`.
pub fn edit_result(path: &VPath, count: usize) -> EditResult {
    EditResult::edited(path.as_str(), count as u64)
}

/// TooLarge when `len` exceeds `max`.
pub fn check_size(path: &VPath, len: u64, max: u64) -> Result<()> {
    if len > max {
        return Err(Error::too_large(path, len, max));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> VPath {
        VPath::parse("/f.txt").unwrap()
    }

    #[test]
    fn the_past_the_end_refusal_counts_one_line_in_the_singular() {
        let one = read_window(&p(), b"only\n", 1, 10).unwrap_err();
        assert!(
            one.message().contains("which has 1 line;"),
            "{}",
            one.message()
        );
        let two = read_window(&p(), b"a\nb\n", 2, 10).unwrap_err();
        assert!(
            two.message().contains("which has 2 lines;"),
            "{}",
            two.message()
        );
    }

    #[test]
    fn splits_lines() {
        let cases: [(&str, &[&str]); 7] = [
            ("", &[]),
            ("\n", &[""]),
            ("a", &["a"]),
            ("a\n", &["a"]),
            ("a\r\nb\r\n", &["a", "b"]),
            ("a\rb\n\nc", &["a\rb", "", "c"]),
            ("x\r", &["x\r"]),
        ];
        for (text, want) in cases {
            assert_eq!(lines(text).collect::<Vec<_>>(), want, "{text:?}");
            assert_eq!(line_count(text.as_bytes()), want.len(), "{text:?}");
        }
    }

    #[test]
    fn crlf_edit_keeps_endings() {
        let (out, n) = apply_edit(&p(), b"a\r\nb\r\nc\r\n", "a\nb", "x\ny\nz", false).unwrap();
        assert_eq!(n, 1);
        assert_eq!(out, b"x\r\ny\r\nz\r\nc\r\n");
    }

    #[test]
    fn lf_edit_writes_lf() {
        let (out, _) = apply_edit(&p(), b"hello\nworld\n", "hello", "goodbye\r\n", false).unwrap();
        assert_eq!(out, b"goodbye\n\nworld\n");
        let (out, _) = apply_edit(&p(), b"a\nb\n", "a\r\nb", "x\r\ny", false).unwrap();
        assert_eq!(out, b"x\ny\n");
    }

    #[test]
    fn edits_that_only_change_line_endings_are_refused() {
        for (content, old, new) in [
            (&b"a\r\nb\r\n"[..], "a\r\nb", "a\nb"),
            (b"a\r\nb\r\n", "a\nb", "a\r\nb"),
            (b"a\nb\n", "a\nb", "a\r\nb"),
        ] {
            let err = apply_edit(&p(), content, old, new, false).unwrap_err();
            assert_eq!(err.kind(), crate::ErrorKind::InvalidArgument, "{old:?}");
            assert!(err.message().contains("line endings"), "{}", err.message());
        }
    }

    #[test]
    fn files_without_one_line_ending_take_the_edit_as_given() {
        assert_eq!(line_ending("abc"), None);
        assert_eq!(line_ending("a\r\nb\n"), None);
        assert_eq!(line_ending("a\rb"), None);
        let (out, _) = apply_edit(&p(), b"hello", "hello", "a\r\nb", false).unwrap();
        assert_eq!(out, b"a\r\nb");
        let (out, _) = apply_edit(&p(), b"x\r\ny\nz", "x\r\ny", "q\nr", false).unwrap();
        assert_eq!(out, b"q\nr\nz");
    }

    #[test]
    fn refusals() {
        let content = b"a a";
        for (old, new, all) in [
            ("", "x", false),
            ("a", "a", false),
            ("zz", "y", false),
            ("a", "b", false),
        ] {
            let err = apply_edit(&p(), content, old, new, all).unwrap_err();
            assert_eq!(err.kind(), crate::ErrorKind::InvalidArgument);
        }
        let err = apply_edit(&p(), &[0xff, 0xfe], "a", "b", false).unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::NotText);
        assert!(
            apply_edit(&p(), content, "a", "b", false)
                .unwrap_err()
                .message()
                .contains('2')
        );
    }
}
