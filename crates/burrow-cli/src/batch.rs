//! `burrow batch`: JSON lines in, one JSON result line out for each, in input order.
//!
//! - Each non-blank input line is one operation (see `op::Line` for the
//!   fields); its output line is exactly what `burrow --json` prints for it:
//!   the result, or `{"error": {"kind", "message"}}`.
//! - A line that is not JSON, not UTF-8, or not an operation yields one
//!   `invalid_argument` error line naming its line number; the batch goes
//!   on. So does it after a refused or failed operation.
//! - Blank lines are skipped and yield no output line.
//! - Output is flushed after every line, so a program can drive burrow as a
//!   co-process, one request and one answer at a time.
//! - When any operation changed the workspace, it is saved once at the end
//!   (e.g. the state file is written back); a failed save is reported on
//!   stderr and makes the exit code 2.
//! - Exit code: the worst outcome seen: 0 all succeeded, 1 some line was
//!   refused, 2 some line failed (or the save, or reading stdin, did).

use std::io::{BufRead, Write};

use burrow::{Error, FileContext};

use crate::op::Op;
use crate::output::{Exit, error_json, error_text};
use crate::spec::Opened;

/// Runs every line of `input` against `opened`, printing results to `out`
/// and notes to `err`.
pub async fn run(
    opened: &Opened,
    ctx: &FileContext,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> std::io::Result<Exit> {
    let mut worst = Exit::Success;
    let mut mutated = false;
    let mut raw = Vec::new();
    let mut number = 0usize;
    loop {
        raw.clear();
        match input.read_until(b'\n', &mut raw) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                writeln!(err, "burrow: cannot read stdin: {e}")?;
                worst = worst.max(Exit::Failed);
                break;
            }
        }
        number += 1;
        let line = trim_line_end(&raw);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let result = match parse(line, number) {
            Ok(op) => op.run(opened.backend.as_ref(), ctx).await,
            Err(e) => Err(e),
        };
        let value = match result {
            Ok(output) => {
                mutated |= output.is_mutation();
                if let Some(note) = output.note(true) {
                    writeln!(err, "burrow: note: line {number}: {note}")?;
                }
                output.to_json()
            }
            Err(e) => {
                worst = worst.max(Exit::of(&e));
                error_json(&e)
            }
        };
        writeln!(out, "{value}")?;
        out.flush()?;
    }
    if mutated && let Err(e) = opened.save() {
        writeln!(err, "{}", error_text(&e))?;
        worst = worst.max(Exit::Failed);
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

/// `raw` without its "\n" or "\r\n".
fn trim_line_end(raw: &[u8]) -> &[u8] {
    let raw = raw.strip_suffix(b"\n").unwrap_or(raw);
    raw.strip_suffix(b"\r").unwrap_or(raw)
}
