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
//! - Three threads (docs/adr/0380): lines are read and parsed on one
//!   ([`Lines`]), run and saved in order on the caller's, and a saved
//!   group's results turned into JSON and written on a third ([`Printer`]),
//!   so parsing and printing overlap running the next lines.

use std::io::{BufRead, BufReader, Read, Write};
use std::sync::mpsc;
use std::thread;

use burrow::{Error, FileContext};

use crate::op::Op;
use crate::output::{Exit, Output, error_json, error_text};
use crate::spec::Opened;

/// The size of the input buffer: what one group can hold (one `read` of
/// a file on stdin fills it; a pipe gives at most what it holds).
pub const INPUT_BUFFER: usize = 4 << 20;

/// Most lines in one group.
pub const MAX_GROUP: usize = 10_000;

/// A group ends once its answers, held until its save, pass this many bytes.
pub const MAX_HELD: usize = 4 << 20;

/// One answered line of a group, waiting for the group's save.
enum Answer {
    /// A result, written out as JSON by the printer; a mutation's is not
    /// durable until the group is saved.
    Output(Output),
    /// A line already in its JSON form (an error's), without its newline.
    Text(String),
}

/// Runs every line of `input` against `opened`, printing results to `out`
/// and notes to `err`.
pub async fn run<R: Read + Send + 'static>(
    opened: &Opened,
    ctx: &FileContext,
    input: BufReader<R>,
    out: Box<dyn Write + Send>,
    err: &mut dyn Write,
) -> std::io::Result<Exit> {
    // The longest line: room for the largest file escaped as JSON text
    // (up to 6 bytes a byte), plus the rest of the line.
    let max_file =
        usize::try_from(opened.backend.capabilities().limits.max_file_size).unwrap_or(usize::MAX);
    let max_line = max_file.saturating_mul(6).saturating_add(1 << 20);
    let mut lines = Lines::start(input, max_line)?;
    let mut printer = Printer::start(out)?;
    let ran = run_groups(opened, ctx, &mut lines, &mut printer, err).await;
    // Every group handed over is written before the batch ends. The reader
    // is not waited for: it may be waiting for input no one will send.
    let printed = printer.finish();
    let worst = ran?;
    printed?;
    Ok(worst)
}

/// [`run`]'s groups: lines from `lines`, their answers handed to `printer`
/// once saved.
async fn run_groups(
    opened: &Opened,
    ctx: &FileContext,
    lines: &mut Lines,
    printer: &mut Printer,
    err: &mut dyn Write,
) -> std::io::Result<Exit> {
    let mut worst = Exit::Success;
    let mut at_end = false;
    while !at_end {
        // The group's answers, handed to the printer once the group is
        // saved; the printer hands the list back for the next group.
        let mut group = printer.spare();
        let mut held = 0usize;
        opened.begin();
        loop {
            let (parsed, more) = match lines.next() {
                None => {
                    at_end = true;
                    break;
                }
                Some(Line::Failed(e)) => {
                    writeln!(err, "burrow: cannot read stdin: {e}")?;
                    worst = worst.max(Exit::Failed);
                    at_end = true;
                    break;
                }
                Some(Line::Read { parsed, more }) => (parsed, more),
            };
            if let Some(parsed) = parsed {
                let result = match parsed {
                    Ok(op) => op.run(opened.backend.as_ref(), ctx).await,
                    Err(e) => Err(e),
                };
                let answer = match result {
                    Ok(output) => {
                        held += output.json_len_hint();
                        Answer::Output(output)
                    }
                    Err(e) => {
                        worst = worst.max(Exit::of(&e));
                        let text = error_json(&e);
                        held += text.len();
                        Answer::Text(text)
                    }
                };
                group.push(answer);
            }
            // Go on only with a whole line that was already there: never
            // wait for input while answers are held back.
            if group.len() >= MAX_GROUP || held >= MAX_HELD || !more {
                break;
            }
        }
        if let Err(e) = opened.finish() {
            writeln!(err, "{}", error_text(&e))?;
            worst = worst.max(Exit::Failed);
            let failed = error_json(&e);
            for answer in &mut group {
                if matches!(answer, Answer::Output(output) if output.is_mutation()) {
                    *answer = Answer::Text(failed.clone());
                }
            }
        }
        // Saved (or its mutations' lines turned into failures): written out
        // while the next group runs.
        printer.print(group)?;
    }
    Ok(worst)
}

/// Writes the batch's answers, a saved group at a time, on a thread of its
/// own (docs/adr/0380): a group's results are turned into JSON lines,
/// written and flushed while the next group runs, so neither costs the
/// batch's thread any time.
///
/// Only groups already saved are handed over, so a printed result is
/// still durable; they are written in the order handed over. A write that
/// fails ends the thread; the error is returned at the next hand-over (the
/// group in hand is not printed) or at [`Printer::finish`].
struct Printer {
    /// Groups to write (at most one waits while another is written).
    full: Option<mpsc::SyncSender<Vec<Answer>>>,
    /// Lists written out, handed back (empty) to be filled again.
    empty: mpsc::Receiver<Vec<Answer>>,
    thread: Option<thread::JoinHandle<std::io::Result<()>>>,
}

impl Printer {
    fn start(mut out: Box<dyn Write + Send>) -> std::io::Result<Printer> {
        let (full, groups) = mpsc::sync_channel::<Vec<Answer>>(1);
        let (back, empty) = mpsc::channel();
        let thread = thread::Builder::new()
            .name("burrow-batch-out".to_owned())
            .spawn(move || {
                // Kept (cleared) from group to group, so its pages are touched once.
                let mut text = String::new();
                for mut group in groups {
                    text.clear();
                    for answer in group.drain(..) {
                        match answer {
                            Answer::Output(output) => output.push_json(&mut text),
                            Answer::Text(line) => text.push_str(&line),
                        }
                        text.push('\n');
                    }
                    out.write_all(text.as_bytes())?;
                    out.flush()?;
                    // The batch may be done with lists: then this one is dropped.
                    let _ = back.send(group);
                }
                Ok(())
            })?;
        Ok(Printer {
            full: Some(full),
            empty,
            thread: Some(thread),
        })
    }

    /// An empty list for the next group: one the printer is done with, or
    /// a new one when none is back yet.
    fn spare(&self) -> Vec<Answer> {
        self.empty.try_recv().unwrap_or_default()
    }

    /// Hands `group` over to be written.
    fn print(&mut self, group: Vec<Answer>) -> std::io::Result<()> {
        let sent = self.full.as_ref().map(|full| full.send(group));
        match sent {
            Some(Ok(())) => Ok(()),
            // The thread stopped: its write failed.
            _ => {
                self.finish()?;
                Err(std::io::Error::other("the batch's output stopped"))
            }
        }
    }

    /// Waits for every group handed over to be written; the first write
    /// error, if any.
    fn finish(&mut self) -> std::io::Result<()> {
        self.full = None;
        match self.thread.take().map(thread::JoinHandle::join) {
            None | Some(Ok(Ok(()))) => Ok(()),
            Some(Ok(Err(e))) => Err(e),
            Some(Err(_)) => Err(std::io::Error::other("the batch's output thread panicked")),
        }
    }
}

/// One input line, as the reader thread read and parsed it.
enum Line {
    /// A line: its operation or the refusal of it (`None`: a blank line,
    /// which is skipped), and whether a whole line already waited in the
    /// input buffer behind it.
    Read {
        parsed: Option<Result<Op, Error>>,
        more: bool,
    },
    /// Reading stdin failed; nothing follows.
    Failed(std::io::Error),
}

/// Lines read from the input and parsed on a thread of their own
/// (docs/adr/0380), in order, a few dozen at a time, so parsing the next
/// lines overlaps running the ones before.
struct Lines {
    chunks: mpsc::Receiver<Vec<Line>>,
    chunk: std::vec::IntoIter<Line>,
}

/// Most lines the reader hands over at once.
const CHUNK: usize = 64;

impl Lines {
    fn start<R: Read + Send + 'static>(
        mut input: BufReader<R>,
        max_line: usize,
    ) -> std::io::Result<Lines> {
        // A few chunks read ahead, no more: lines held bound the memory.
        let (send, chunks) = mpsc::sync_channel::<Vec<Line>>(8);
        thread::Builder::new()
            .name("burrow-batch-in".to_owned())
            .spawn(move || {
                let mut raw = Vec::new();
                let mut number = 0usize;
                let mut chunk = Vec::with_capacity(CHUNK);
                loop {
                    let line = match read_line(&mut input, &mut raw, max_line) {
                        Ok(None) => break,
                        Ok(Some(whole)) => {
                            number += 1;
                            let line = trim_line_end(&raw);
                            let parsed = if !whole {
                                Some(Err(Error::invalid_argument(format!(
                                    "line {number}: longer than {max_line} bytes (it was skipped, never read whole)."
                                ))))
                            } else if line.iter().all(u8::is_ascii_whitespace) {
                                None
                            } else {
                                Some(parse(line, number))
                            };
                            let more = memchr::memchr(b'\n', input.buffer()).is_some();
                            Line::Read { parsed, more }
                        }
                        Err(e) => Line::Failed(e),
                    };
                    let last = !matches!(line, Line::Read { more: true, .. });
                    let failed = matches!(line, Line::Failed(_));
                    chunk.push(line);
                    if (last || chunk.len() >= CHUNK)
                        && send
                            .send(std::mem::replace(&mut chunk, Vec::with_capacity(CHUNK)))
                            .is_err()
                    {
                        // The batch is over: nothing more is wanted.
                        return;
                    }
                    if failed {
                        return;
                    }
                }
                if !chunk.is_empty() {
                    let _ = send.send(chunk);
                }
            })?;
        Ok(Lines {
            chunks,
            chunk: Vec::new().into_iter(),
        })
    }

    /// The next line; `None` at the end of the input.
    fn next(&mut self) -> Option<Line> {
        loop {
            if let Some(line) = self.chunk.next() {
                return Some(line);
            }
            self.chunk = self.chunks.recv().ok()?.into_iter();
        }
    }
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
