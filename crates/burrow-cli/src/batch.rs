//! `burrow batch`: JSON lines in, one JSON result line out for each, in input order.
//!
//! - Each non-blank input line is one operation (see `op::Line` for the
//!   fields); its output line is exactly what `burrow --json` prints for it:
//!   the result, or `{"error": {"kind", "message"}}`.
//! - A line that is not JSON, not UTF-8, or not an operation yields one
//!   `invalid_argument` error line naming its line number; the batch goes
//!   on. So does it after a refused or failed operation.
//! - Blank lines are skipped and yield no output line.
//! - Output is flushed after every group, so a program can drive burrow as
//!   a co-process, one request and one answer at a time.
//! - Lines are run in groups: a group is a line and every complete line
//!   already waiting behind it in the input buffer ([`INPUT_BUFFER`], at
//!   most [`MAX_GROUP`] lines and about [`MAX_HELD`] bytes of answers), so a
//!   file or a pipe full of lines is saved in few synced appends while a
//!   co-process that waits for each answer gets each one at once. The
//!   group's changes are saved (a `state:` file's journal appended and
//!   synced, under its lock) **before** any of its result lines is printed: a printed success
//!   is durable, and a killed batch loses only lines it never answered. A
//!   failed save turns the group's success lines of mutations into failure
//!   lines and makes the exit code 2.
//! - Exit code: the worst outcome seen: 0 all succeeded, 1 some line was
//!   refused, 2 some line failed (or a save, or reading stdin, did).

use std::io::{BufRead, BufReader, Read, Write};

use burrow::{Error, FileContext};

use crate::op::Op;
use crate::output::{Exit, error_json, error_text};
use crate::spec::Opened;

/// The size of the input buffer: what one group can hold (one `read` of
/// a file on stdin fills it; a pipe gives at most what it holds).
pub const INPUT_BUFFER: usize = 4 << 20;

/// Most lines in one group.
pub const MAX_GROUP: usize = 10_000;

/// A group ends once its answers, held until its save, pass this many bytes.
pub const MAX_HELD: usize = 4 << 20;

/// One answered line of a group, waiting for the group's save: its text
/// (with its newline) ends at `end` in the group's text.
struct Answer {
    end: usize,
    /// A successful mutation: not durable until the group is saved.
    mutation: bool,
}

/// Runs every line of `input` against `opened`, printing results to `out`
/// and notes to `err`.
pub async fn run<R: Read>(
    opened: &Opened,
    ctx: &FileContext,
    input: &mut BufReader<R>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> std::io::Result<Exit> {
    let mut worst = Exit::Success;
    // The group's answers, one line each, written out once a group; kept
    // (cleared) from group to group, so its pages are touched once.
    let mut text = String::new();
    let mut group: Vec<Answer> = Vec::new();
    let mut raw = Vec::new();
    let mut number = 0usize;
    let mut at_end = false;
    // The longest line: room for the largest file escaped as JSON text
    // (up to 6 bytes a byte), plus the rest of the line.
    let max_file =
        usize::try_from(opened.backend.capabilities().limits.max_file_size).unwrap_or(usize::MAX);
    let max_line = max_file.saturating_mul(6).saturating_add(1 << 20);
    while !at_end {
        text.clear();
        group.clear();
        opened.begin();
        loop {
            let too_long = match read_line(input, &mut raw, max_line) {
                Ok(None) => {
                    at_end = true;
                    break;
                }
                Ok(Some(whole)) => !whole,
                Err(e) => {
                    writeln!(err, "burrow: cannot read stdin: {e}")?;
                    worst = worst.max(Exit::Failed);
                    at_end = true;
                    break;
                }
            };
            number += 1;
            let line = trim_line_end(&raw);
            if too_long || !line.iter().all(u8::is_ascii_whitespace) {
                let parsed = if too_long {
                    Err(Error::invalid_argument(format!(
                        "line {number}: longer than {max_line} bytes (it was skipped, never read whole)."
                    )))
                } else {
                    parse(line, number)
                };
                let result = match parsed {
                    Ok(op) => op.run(opened.backend.as_ref(), ctx).await,
                    Err(e) => Err(e),
                };
                let mutation = match result {
                    Ok(output) => {
                        output.push_json(&mut text);
                        output.is_mutation()
                    }
                    Err(e) => {
                        worst = worst.max(Exit::of(&e));
                        text.push_str(&error_json(&e));
                        false
                    }
                };
                text.push('\n');
                group.push(Answer {
                    end: text.len(),
                    mutation,
                });
            }
            // Go on only with a whole line that is already here: never wait
            // for input while answers are held back.
            if group.len() >= MAX_GROUP
                || text.len() >= MAX_HELD
                || memchr::memchr(b'\n', input.buffer()).is_none()
            {
                break;
            }
        }
        if let Err(e) = opened.finish() {
            writeln!(err, "{}", error_text(&e))?;
            worst = worst.max(Exit::Failed);
            let failed = error_json(&e);
            let mut start = 0;
            for answer in &group {
                if answer.mutation {
                    writeln!(out, "{failed}")?;
                } else {
                    out.write_all(text.as_bytes().get(start..answer.end).unwrap_or_default())?;
                }
                start = answer.end;
            }
        } else {
            out.write_all(text.as_bytes())?;
        }
        out.flush()?;
    }
    Ok(worst)
}

/// The operation on one input line, or an InvalidArgument naming the line.
fn parse(line: &[u8], number: usize) -> Result<Op, Error> {
    let text = std::str::from_utf8(line)
        .map_err(|_| Error::invalid_argument(format!("line {number}: not UTF-8 text.")))?;
    Op::from_json_line(text)
        .map_err(|e| Error::invalid_argument(format!("line {number}: {}", e.message())))
}

/// Reads one line into `raw` (cleared first) without holding more than
/// `max` bytes of it: `Some(true)` a line, `Some(false)` a longer one,
/// skipped to its end, `None` the end of input.
fn read_line<R: Read>(
    input: &mut BufReader<R>,
    raw: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Option<bool>> {
    raw.clear();
    let mut skipping = false;
    let mut seen = false;
    loop {
        let available = match input.fill_buf() {
            Ok(available) => available,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(seen.then_some(!skipping));
        }
        seen = true;
        let newline = memchr::memchr(b'\n', available);
        let take = newline.map_or(available.len(), |i| i + 1);
        if !skipping && raw.len().saturating_add(take) > max.saturating_add(2) {
            skipping = true;
            raw.clear();
        }
        if !skipping {
            raw.extend_from_slice(&available[..take]);
        }
        input.consume(take);
        if newline.is_some() {
            return Ok(Some(!skipping));
        }
    }
}

/// `raw` without its "\n" or "\r\n".
fn trim_line_end(raw: &[u8]) -> &[u8] {
    let raw = raw.strip_suffix(b"\n").unwrap_or(raw);
    raw.strip_suffix(b"\r").unwrap_or(raw)
}
