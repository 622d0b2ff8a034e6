//! Small text-rendering helpers shared by the tools: numbered lines, cut long lines, "N more not shown" sentences.

use std::borrow::Cow;

use burrow_backend::Error;

/// `line` cut to `max_chars` characters, with a marker saying how many were cut.
pub fn cut_line(line: &str, max_chars: usize) -> Cow<'_, str> {
    match line.char_indices().nth(max_chars) {
        None => Cow::Borrowed(line),
        Some((at, _)) => {
            let cut = line[at..].chars().count();
            Cow::Owned(format!(
                "{} [... {} cut]",
                &line[..at],
                plural(cut, "more character", "more characters")
            ))
        }
    }
}

/// One line as `read_file` shows it: the 1-based number right-aligned in six columns, a tab, the line.
pub fn numbered(number: usize, line: &str) -> String {
    format!("{number:>6}\t{line}")
}

/// The sentence that follows a capped list, or `None` when nothing was left out.
///
/// `hidden` items were found but not shown; `more_exist` says the backend
/// stopped counting with more left, so at least `hidden + 1` are not shown.
/// `noun` is (singular, plural).
pub fn more_sentence(
    hidden: usize,
    more_exist: bool,
    noun: (&str, &str),
    hint: &str,
) -> Option<String> {
    let (one, many) = noun;
    match (hidden, more_exist) {
        (0, false) => None,
        (0, true) => Some(format!("(More {many} exist but are not shown; {hint}.)")),
        (1, false) => Some(format!("(1 more {one} is not shown; {hint}.)")),
        (n, false) => Some(format!("({n} more {many} are not shown; {hint}.)")),
        (n, true) => Some(format!(
            "(At least {} more {many} are not shown; {hint}.)",
            n.saturating_add(1)
        )),
    }
}

/// "1 line" / "3 lines".
pub fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("{n} {one}")
    } else {
        format!("{n} {many}")
    }
}

/// A refusal as the model sees it: its one sentence, starting with a capital letter.
pub fn refusal_text(error: &Error) -> String {
    let message = error.message();
    let mut chars = message.chars();
    match chars.next() {
        Some(first) if first.is_lowercase() => first.to_uppercase().chain(chars).collect(),
        _ => message.to_owned(),
    }
}

/// Joins `lines` and an optional closing sentence (after a blank line).
pub fn with_footer(lines: Vec<String>, footer: Option<String>) -> String {
    let mut text = lines.join("\n");
    if let Some(footer) = footer {
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(&footer);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_by_characters_not_bytes() {
        assert_eq!(cut_line("héllo", 5), "héllo");
        assert_eq!(cut_line("héllo", 2), "hé [... 3 more characters cut]");
        assert_eq!(cut_line("ab", 1), "a [... 1 more character cut]");
        assert_eq!(cut_line("", 0), "");
    }

    #[test]
    fn sentences() {
        let files = ("file", "files");
        assert_eq!(more_sentence(0, false, files, "x"), None);
        assert_eq!(
            more_sentence(3, false, files, "narrow it").as_deref(),
            Some("(3 more files are not shown; narrow it.)")
        );
        assert_eq!(
            more_sentence(1, false, files, "narrow it").as_deref(),
            Some("(1 more file is not shown; narrow it.)")
        );
        assert_eq!(numbered(12, "x"), "    12\tx");
        assert_eq!(refusal_text(&Error::invalid_argument("the x.")), "The x.");
    }
}
