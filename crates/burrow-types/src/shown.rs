//! `shown`: how a name, path or pattern from the user is put into a message, control characters escaped.
//!
//! ADR 0031 makes every character but "/" and NUL legal in a name, a newline
//! included, and promises that such names are quoted wherever they are
//! printed. A message is one sentence on one line, so a name inside one must
//! never carry a raw control character: it could end the line, forge another
//! line, or (a bidirectional override) reorder what a reader sees.

use std::fmt;

/// `text` ready to be put into a message; see [`Shown`].
pub fn shown(text: &str) -> Shown<'_> {
    Shown(text)
}

/// A name, path or pattern as a message shows it.
///
/// - `{}`: as is when it holds no control character; otherwise in double
///   quotes, with `"` and `\` escaped, "\n", "\r" and "\t" as `\n`, `\r`,
///   `\t`, and any other control or bidirectional formatting character as
///   `\u{..}`.
/// - `{:#}`: always in double quotes, escaped the same way (for a pattern,
///   whose spaces or punctuation would otherwise run into the sentence).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shown<'a>(pub &'a str);

/// A character that must never appear raw in a one-line message.
fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !f.alternate() && !self.0.chars().any(is_hidden) {
            return f.write_str(self.0);
        }
        f.write_str("\"")?;
        for c in self.0.chars() {
            match c {
                '"' => f.write_str("\\\"")?,
                '\\' => f.write_str("\\\\")?,
                '\n' => f.write_str("\\n")?,
                '\r' => f.write_str("\\r")?,
                '\t' => f.write_str("\\t")?,
                c if is_hidden(c) => write!(f, "\\u{{{:x}}}", u32::from(c))?,
                c => write!(f, "{c}")?,
            }
        }
        f.write_str("\"")
    }
}

#[cfg(test)]
mod tests {
    use super::shown;

    #[test]
    fn plain_names_are_as_given() {
        assert_eq!(shown("/src/main.rs").to_string(), "/src/main.rs");
        assert_eq!(shown("/a \"b\"/é").to_string(), "/a \"b\"/é");
        assert_eq!(format!("{:#}", shown("*.rs")), "\"*.rs\"");
        assert_eq!(format!("{:#}", shown("a\"\\")), "\"a\\\"\\\\\"");
    }

    #[test]
    fn control_characters_are_quoted_and_escaped() {
        assert_eq!(shown("/a\nb").to_string(), "\"/a\\nb\"");
        assert_eq!(shown("x\r\ty").to_string(), "\"x\\r\\ty\"");
        assert_eq!(shown("\u{1b}[31m").to_string(), "\"\\u{1b}[31m\"");
        assert_eq!(shown("a\u{202e}b").to_string(), "\"a\\u{202e}b\"");
        assert_eq!(shown("\"\n").to_string(), "\"\\\"\\n\"");
        for text in ["a\nb", "\r", "\u{7f}", "x\u{2066}", "\0"] {
            let out = format!("{}{:#}", shown(text), shown(text));
            assert!(!out.chars().any(|c| c.is_control()), "{out:?}");
        }
    }
}
