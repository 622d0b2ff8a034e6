//! Names as human output shows them: a name holding a control character is quoted and escaped (ADR 0031).
//!
//! A path may hold any character but NUL (ADR 0031), so a raw newline would
//! split one path over two lines of `ls` or `glob`, and an escape sequence
//! would reach the terminal. Human output therefore shows such a path in
//! double quotes with Rust-style escapes (`"/a\nb"`, `"/x\u{1b}[31m"`). A
//! path that needs no quoting is shown as it is; since such a path never
//! starts with `"`, a quoted one cannot be mistaken for it (a path that does
//! start with `"` is quoted too). JSON output needs none of this: JSON
//! escapes control characters itself.
//!
//! (A shared helper is planned in burrow-backend; this is the CLI's own
//! until then.)

use std::borrow::Cow;
use std::fmt::Write as _;

/// True for the characters human output must not print raw: C0 and C1
/// controls, DEL, and the bidirectional overrides and isolates that reorder
/// what a terminal shows.
fn is_unsafe(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// `path` as human output shows it: as it is, or quoted and escaped when it
/// holds a character that must not reach the terminal raw.
pub fn name(path: &str) -> Cow<'_, str> {
    if !path.starts_with('"') && !path.chars().any(is_unsafe) {
        return Cow::Borrowed(path);
    }
    let mut out = String::with_capacity(path.len() + 2);
    out.push('"');
    for c in path.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            _ => push_escaped(&mut out, c),
        }
    }
    out.push('"');
    Cow::Owned(out)
}

/// `text` (a message for stderr) with every unsafe character escaped, so a
/// path quoted inside a sentence cannot move the cursor or colour the
/// terminal. Other characters, backslashes included, are left alone.
pub fn sentence(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        push_escaped(&mut out, c);
    }
    Cow::Owned(out)
}

fn push_escaped(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if is_unsafe(c) => {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
        c => out.push(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_are_shown_as_they_are() {
        for plain in [
            "/a.txt",
            "/dir/ünï cødé",
            "/a\\b",
            "/it's",
            "/x\"y",
            "/עברית",
        ] {
            assert_eq!(name(plain), plain);
        }
    }

    #[test]
    fn names_with_controls_are_quoted_and_escaped() {
        assert_eq!(name("/a\nb"), "\"/a\\nb\"");
        assert_eq!(name("/a\rb\t"), "\"/a\\rb\\t\"");
        assert_eq!(name("/e\u{1b}[31mred"), "\"/e\\u{1b}[31mred\"");
        assert_eq!(name("/\u{7f}\u{85}"), "\"/\\u{7f}\\u{85}\"");
        assert_eq!(name("/rtl\u{202e}txt"), "\"/rtl\\u{202e}txt\"");
        // Inside quotes, quotes and backslashes are escaped too.
        assert_eq!(name("/q\"\\\n"), "\"/q\\\"\\\\\\n\"");
        // A name that starts with a quote is quoted, so it cannot pass for a quoted one.
        assert_eq!(name("\"/a\\nb\""), "\"\\\"/a\\\\nb\\\"\"");
    }

    #[test]
    fn sentences_escape_only_controls() {
        assert_eq!(sentence("/a\\b does not exist."), "/a\\b does not exist.");
        assert_eq!(
            sentence("/a\u{1b}]0;x\u{7} does not exist."),
            "/a\\u{1b}]0;x\\u{7} does not exist."
        );
    }
}
