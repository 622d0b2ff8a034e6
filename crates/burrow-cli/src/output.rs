//! `Output`: what an operation returned, printed as burrow-types JSON or for people, plus notes and exit codes.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::process::ExitCode;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use burrow::types::{EditResult, ExecuteResponse, FileInfo, GrepMatch, WriteResult};
use burrow::{Error, GlobResult, GrepResult, LineWindow, Listing};
use serde::Serialize;

use crate::display;
use serde_json::json;

/// The result of one successful operation.
#[derive(Debug)]
pub enum Output {
    Listing { listing: Listing, limit: usize },
    Window(LineWindow),
    Bytes(Vec<u8>),
    Written { result: WriteResult, bytes: usize },
    Edited(EditResult),
    Removed(String),
    Made(String),
    Globbed { result: GlobResult, limit: usize },
    Grepped { result: GrepResult, limit: usize },
    Executed(ExecuteResponse),
}

impl Output {
    /// True when the operation changed the workspace (so a state file must be saved).
    pub fn is_mutation(&self) -> bool {
        matches!(
            self,
            Output::Written { .. } | Output::Edited(_) | Output::Removed(_) | Output::Made(_)
        )
    }

    /// The `--json` form: burrow-types JSON with fields in the types'
    /// declaration order; `ls`, `glob` and `grep` wrap their list in an
    /// object that also says whether it was truncated.
    pub fn to_json(&self) -> String {
        let text = match self {
            Output::Listing { listing, .. } => serde_json::to_string(&Entries {
                entries: &listing.entries,
                truncated: listing.truncated,
            }),
            Output::Window(window) => {
                let text: usize = window.lines.iter().map(|l| l.len() + 3).sum();
                let mut out = String::with_capacity(text + 64);
                push_window_json(&mut out, window);
                return out;
            }
            Output::Bytes(bytes) => {
                serde_json::to_string(&json!({ "content_b64": BASE64.encode(bytes) }))
            }
            Output::Written { result, .. } => serde_json::to_string(result),
            Output::Edited(result) => serde_json::to_string(result),
            Output::Removed(path) | Output::Made(path) => {
                serde_json::to_string(&json!({ "path": path }))
            }
            Output::Globbed { result, .. } => serde_json::to_string(&Paths {
                paths: result.files.iter().map(|f| f.path.as_str()).collect(),
                truncated: result.truncated,
            }),
            Output::Grepped { result, .. } => serde_json::to_string(&Matches {
                matches: &result.matches,
                truncated: result.truncated,
            }),
            Output::Executed(response) => serde_json::to_string(response),
        };
        // Plain data with string keys: serialising cannot fail.
        text.unwrap_or_else(|e| {
            json!({ "error": { "kind": "failure", "message": e.to_string() } }).to_string()
        })
    }

    /// Appends the `--json` form ([`Output::to_json`]) to `out`; a read's
    /// window, the largest answer of a batch, straight into it.
    pub fn push_json(&self, out: &mut String) {
        match self {
            Output::Window(window) => push_window_json(out, window),
            other => out.push_str(&other.to_json()),
        }
    }

    /// What stderr should say beside the result, in human mode only (the
    /// JSON forms carry `truncated` themselves): a truncated list or read,
    /// and a command's exit code.
    pub fn note(&self, json: bool) -> Option<String> {
        if json {
            return None;
        }
        match self {
            Output::Listing { listing, limit } if listing.truncated => Some(format!(
                "truncated: more entries exist than the {} shown (limit {limit}).",
                listing.entries.len()
            )),
            Output::Globbed { result, limit } if result.truncated => Some(format!(
                "truncated: more files match than the {} shown (limit {limit}).",
                result.files.len()
            )),
            Output::Grepped { result, limit } if result.truncated => Some(format!(
                "truncated: more lines match than the {} shown (limit {limit}).",
                result.matches.len()
            )),
            Output::Window(w) if w.truncated => {
                let end = w.offset + w.lines.len();
                Some(format!(
                    "truncated: lines {}-{end} of {} shown; pass --offset {end} to read on.",
                    w.offset + 1,
                    w.total_lines
                ))
            }
            Output::Executed(r) => match (r.exit_code, r.truncated) {
                (Some(code), true) if code != 0 => Some(format!(
                    "the command exited with code {code}; its output was cut at the cap."
                )),
                (_, true) => Some("the command's output was cut at the cap.".to_owned()),
                (Some(code), false) if code != 0 => {
                    Some(format!("the command exited with code {code}."))
                }
                _ => None,
            },
            _ => None,
        }
    }

    /// The human form, written to `out`.
    pub fn write_human(&self, out: &mut dyn Write) -> io::Result<()> {
        match self {
            Output::Listing { listing, .. } => write_long_listing(out, &listing.entries),
            Output::Window(w) => {
                for (i, line) in w.lines.iter().enumerate() {
                    writeln!(out, "{:>6}\t{line}", w.offset + i + 1)?;
                }
                Ok(())
            }
            Output::Bytes(bytes) => out.write_all(bytes),
            Output::Written { result, bytes } => {
                let path = display::name(result.path.as_deref().unwrap_or("?"));
                let unit = if *bytes == 1 { "byte" } else { "bytes" };
                writeln!(out, "wrote {path} ({bytes} {unit})")
            }
            Output::Edited(result) => {
                let path = display::name(result.path.as_deref().unwrap_or("?"));
                let n = result.occurrences.unwrap_or(0);
                let noun = if n == 1 { "occurrence" } else { "occurrences" };
                writeln!(out, "edited {path} ({n} {noun} replaced)")
            }
            Output::Removed(path) => writeln!(out, "removed {}", display::name(path)),
            Output::Made(path) => writeln!(out, "made {}", display::name(path)),
            Output::Globbed { result, .. } => {
                for f in &result.files {
                    writeln!(out, "{}", display::name(&f.path))?;
                }
                Ok(())
            }
            Output::Grepped { result, .. } => {
                for m in &result.matches {
                    writeln!(
                        out,
                        "{}:{}:{}",
                        display::name(&m.path),
                        m.line_number,
                        m.line
                    )?;
                }
                Ok(())
            }
            Output::Executed(r) => out.write_all(r.output.as_bytes()),
        }
    }
}

/// Appends `read --json`: exactly what `serde_json::to_string(window)`
/// writes (fields in `LineWindow`'s declaration order), with the lines
/// escaped by [`push_json_str`] instead of serde_json's byte-at-a-time scan.
fn push_window_json(out: &mut String, window: &LineWindow) {
    out.push_str("{\"lines\":[");
    for (i, line) in window.lines.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_json_str(out, line);
    }
    // Writing to a String cannot fail.
    let _ = write!(
        out,
        "],\"offset\":{},\"total_lines\":{},\"truncated\":{}}}",
        window.offset, window.total_lines, window.truncated
    );
}

/// Pushes `text` as a JSON string, byte for byte as serde_json writes it:
/// `"` and `\\` escaped, `\b \f \n \r \t` for those controls, `\u00xx`
/// (lowercase) for the other bytes below 0x20, everything else as it is.
///
/// Sixteen bytes are tested at a time for one that needs escaping (a test
/// the compiler turns into a few vector compares; most text has none), so
/// clean runs are copied whole. Every byte that needs escaping is ASCII, so
/// each one found is a char boundary.
fn push_json_str(out: &mut String, text: &str) {
    const STEP: usize = 16;
    let clean = |chunk: &[u8; STEP]| {
        chunk
            .iter()
            .fold(true, |ok, &b| ok & (b >= 0x20) & (b != b'"') & (b != b'\\'))
    };
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push('"');
    let mut start = 0;
    let mut at = 0;
    while at < bytes.len() {
        if let Some(chunk) = bytes
            .get(at..at + STEP)
            .and_then(|c| <&[u8; STEP]>::try_from(c).ok())
            && clean(chunk)
        {
            at += STEP;
            continue;
        }
        // A byte that may need escaping lies in the next sixteen, or the
        // text ends within them: escape the block's first such byte and go on in blocks after it.
        let end = (at + STEP).min(bytes.len());
        let Some(i) = bytes
            .get(at..end)
            .and_then(|block| {
                block
                    .iter()
                    .position(|&b| b < 0x20 || b == b'"' || b == b'\\')
            })
            .map(|i| at + i)
        else {
            at = end;
            continue;
        };
        let byte = bytes[i];
        {
            let escape = match byte {
                b'"' => "\\\"",
                b'\\' => "\\\\",
                b'\n' => "\\n",
                b'\r' => "\\r",
                b'\t' => "\\t",
                0x08 => "\\b",
                0x0c => "\\f",
                _ => "",
            };
            out.push_str(text.get(start..i).unwrap_or_default());
            start = i + 1;
            if escape.is_empty() {
                let _ = write!(out, "\\u{:04x}", byte);
            } else {
                out.push_str(escape);
            }
        }
        at = i + 1;
    }
    out.push_str(text.get(start..).unwrap_or_default());
    out.push('"');
}

/// `ls --json`: the entries and whether more exist.
#[derive(Serialize)]
struct Entries<'a> {
    entries: &'a [FileInfo],
    truncated: bool,
}

/// `glob --json`: the matching paths and whether more match.
#[derive(Serialize)]
struct Paths<'a> {
    paths: Vec<&'a str>,
    truncated: bool,
}

/// `grep --json`: the matching lines and whether more match.
#[derive(Serialize)]
struct Matches<'a> {
    matches: &'a [GrepMatch],
    truncated: bool,
}

/// `ls -l`-ish lines: `KIND SIZE MODIFIED PATH`, kind `d` or `-`, a
/// directory's size and an unknown time shown as `-`, a directory's path
/// ending in "/".
fn write_long_listing(out: &mut dyn Write, entries: &[FileInfo]) -> io::Result<()> {
    let size = |e: &FileInfo| match (e.is_dir, e.size) {
        (false, Some(n)) => n.to_string(),
        _ => "-".to_owned(),
    };
    let size_width = entries.iter().map(|e| size(e).len()).max().unwrap_or(1);
    let time_width = entries
        .iter()
        .map(|e| e.modified_at.as_deref().map_or(1, str::len))
        .max()
        .unwrap_or(1);
    for e in entries {
        let kind = if e.is_dir { 'd' } else { '-' };
        let time = e.modified_at.as_deref().unwrap_or("-");
        let slash = if e.is_dir && e.path != "/" { "/" } else { "" };
        writeln!(
            out,
            "{kind} {:>size_width$} {time:<time_width$} {}{slash}",
            size(e),
            display::name(&e.path)
        )?;
    }
    Ok(())
}

/// The `--json` form of a refusal or failure: `{"error": {"kind", "message"}}`.
pub fn error_json(error: &Error) -> String {
    json!({ "error": { "kind": error.kind().as_str(), "message": error.message() } }).to_string()
}

/// The human form of a refusal or failure, for stderr. A failure also shows
/// its cause: on the command line the person reading it owns the storage.
/// Control characters (of a path named in the message) are escaped.
pub fn error_text(error: &Error) -> String {
    display::sentence(&raw_error_text(error)).into_owned()
}

fn raw_error_text(error: &Error) -> String {
    let mut text = format!("burrow: {}", error.message());
    if !error.is_refusal() {
        let mut source = std::error::Error::source(error);
        while let Some(cause) = source {
            let cause_text = cause.to_string();
            if !text.contains(&cause_text) {
                text.push_str(": ");
                text.push_str(&cause_text);
            }
            source = cause.source();
        }
    }
    text
}

/// How a run of burrow ends. The code is the worst outcome seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Exit {
    /// Everything succeeded: 0.
    Success,
    /// An operation was refused: 1.
    Refused,
    /// `burrow run`: the run paused, waiting for approval: 3.
    #[cfg_attr(not(feature = "run"), allow(dead_code))]
    Paused,
    /// The storage or an input broke, or the command line was wrong: 2.
    Failed,
}

impl Exit {
    /// The exit status for an error.
    pub fn of(error: &Error) -> Exit {
        if error.is_refusal() {
            Exit::Refused
        } else {
            Exit::Failed
        }
    }

    /// The process exit code.
    pub fn code(self) -> ExitCode {
        match self {
            Exit::Success => ExitCode::SUCCESS,
            Exit::Refused => ExitCode::from(1),
            Exit::Paused => ExitCode::from(3),
            Exit::Failed => ExitCode::from(2),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_strings_are_serde_jsons_byte_for_byte() {
        let mut cases: Vec<String> = vec![
            String::new(),
            "plain text of more than eight bytes".to_owned(),
            "\"quoted\" and \\ back\\slashed".to_owned(),
            "tab\there, cr\r, nl\n, bell\u{7}, del\u{7f}, nul\u{0}".to_owned(),
            "é, 漢字, 🦀 and \u{2028} stay as they are".to_owned(),
        ];
        // Every byte below 0x80 at every offset of a 17-byte string.
        for byte in 0u8..0x80 {
            for at in 0..17 {
                let mut text = "abcdefghijklmnopq".to_owned().into_bytes();
                text[at] = byte;
                cases.push(String::from_utf8(text).unwrap());
            }
        }
        for text in &cases {
            let mut ours = String::new();
            push_json_str(&mut ours, text);
            assert_eq!(ours, serde_json::to_string(text).unwrap(), "{text:?}");
        }
    }

    #[test]
    fn a_window_is_what_serde_json_writes() {
        for window in [
            LineWindow::default(),
            LineWindow {
                lines: vec![
                    "one".into(),
                    "\"two\"".into(),
                    String::new(),
                    "\u{1}".into(),
                ],
                offset: 3,
                total_lines: 12,
                truncated: true,
            },
        ] {
            let expected = serde_json::to_string(&window).unwrap();
            let output = Output::Window(window);
            assert_eq!(output.to_json(), expected);
            let mut pushed = "before ".to_owned();
            output.push_json(&mut pushed);
            assert_eq!(pushed, format!("before {expected}"));
        }
    }
}
