//! A small incremental Server-Sent Events parser: bytes in (split anywhere), events out (`event`, multi-line `data`, `id`; CRLF, CR or LF; comments).
//!
//! It follows the WHATWG "event stream interpretation" rules that the
//! providers' streams rely on: a line is ended by CRLF, LF or a lone CR; a
//! line starting with `:` is a comment (keep-alives); `field: value` drops
//! one space after the colon; several `data` lines of one event are joined
//! with `\n`; a blank line dispatches the event; an event with no `data`
//! line is not dispatched; the last `id` seen persists; a leading UTF-8 BOM
//! is skipped. One leniency: at the end of the stream an event whose lines
//! were all complete but whose blank line never came is still dispatched
//! ([`SseParser::finish`]), since a server that closes right after its last
//! `data:` line meant it.
//!
//! Bytes are kept until a whole line is there, so a chunk boundary inside a
//! multi-byte UTF-8 character or between a CR and its LF changes nothing.
//!
//! Work is linear in the input: the search for a line's end resumes where
//! the last search stopped, so a line that arrives in many chunks is
//! scanned once ([`SseParser::scanned_bytes`] counts it). A line longer
//! than the limit ([`MAX_LINE_BYTES`], 16 MiB, by default) or an event whose
//! data grows past it is an `invalid_stream` error, and the parser holds no
//! more than about the limit of one line.

use burrow_runtime::model::{ModelError, ModelErrorKind};

/// The longest line (and the largest event data) a parser takes by default: 16 MiB.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// One dispatched event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, `None` when the event named none (SSE calls that `message`).
    pub event: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
    /// The last `id:` seen in the stream so far.
    pub id: Option<String>,
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// An incremental parser: [`push`](SseParser::push) bytes as they arrive,
/// take events with [`next_event`](SseParser::next_event).
#[derive(Debug)]
pub struct SseParser {
    buf: Vec<u8>,
    /// Where the unparsed bytes of `buf` start.
    pos: usize,
    /// Where the search for the current line's end resumes (`buf[pos..scan]`
    /// holds no line break).
    scan: usize,
    /// Bytes looked at by line-end searches so far.
    scanned: u64,
    /// Bytes copied so far: into the buffer, moved within it, into fields.
    copied: u64,
    /// The longest line, and the largest event data, taken.
    max_line: usize,
    /// Whether the start of the stream was checked for a BOM.
    started: bool,
    event: Option<String>,
    data: String,
    has_data: bool,
    last_id: Option<String>,
}

enum Line {
    /// A complete line at `buf[start..end]`; the next one starts at `next`.
    At {
        start: usize,
        end: usize,
        next: usize,
    },
    /// No complete line yet.
    Incomplete,
}

impl Default for SseParser {
    fn default() -> Self {
        Self::new()
    }
}

impl SseParser {
    /// A parser at the start of a stream, with the default line limit ([`MAX_LINE_BYTES`]).
    pub fn new() -> Self {
        Self::with_max_line(MAX_LINE_BYTES)
    }

    /// A parser whose lines, and events' data, may be at most `max_line` bytes.
    pub fn with_max_line(max_line: usize) -> Self {
        Self {
            buf: Vec::new(),
            pos: 0,
            scan: 0,
            scanned: 0,
            copied: 0,
            max_line,
            started: false,
            event: None,
            data: String::new(),
            has_data: false,
            last_id: None,
        }
    }

    /// How many bytes the line-end searches have looked at so far: about the
    /// number of bytes pushed, however they were split (the parser's work is
    /// linear in its input).
    pub fn scanned_bytes(&self) -> u64 {
        self.scanned
    }

    /// How many bytes the parser has copied so far: pushed into its buffer,
    /// moved to the buffer's front, and copied into events' fields. With
    /// [`scanned_bytes`](Self::scanned_bytes) it is the parser's work, and
    /// it stays within a small multiple of the input however the input was
    /// split (growing the buffer's allocation, amortised, is not counted).
    pub fn copied_bytes(&self) -> u64 {
        self.copied
    }

    /// The bytes the parser's buffers have allocated now: the pending input
    /// and the event being gathered.
    pub fn allocated_bytes(&self) -> usize {
        self.buf.capacity() + self.data.capacity()
    }

    /// Appends the next bytes of the stream.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
            self.scan = 0;
        } else if self.pos > 8192 && self.pos * 2 > self.buf.len() {
            self.copied += (self.buf.len() - self.pos) as u64;
            self.buf.drain(..self.pos);
            self.scan = self.scan.saturating_sub(self.pos);
            self.pos = 0;
        }
        self.copied += bytes.len() as u64;
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete event among the bytes pushed so far, if there is one.
    ///
    /// # Errors
    /// An `invalid_stream` error when a line, or an event's data, is longer
    /// than the limit; the stream cannot be read on after it.
    pub fn next_event(&mut self) -> Result<Option<SseEvent>, ModelError> {
        self.parse(false)
    }

    /// At the end of the stream: the remaining events, one per call,
    /// including a last one whose closing blank line never came (see the
    /// module docs). A partial last line is dropped.
    ///
    /// # Errors
    /// As [`next_event`](Self::next_event).
    pub fn finish(&mut self) -> Result<Option<SseEvent>, ModelError> {
        if let Some(event) = self.parse(true)? {
            return Ok(Some(event));
        }
        Ok(self.dispatch())
    }

    fn parse(&mut self, at_end: bool) -> Result<Option<SseEvent>, ModelError> {
        if !self.started {
            let rest = &self.buf[self.pos..];
            if rest.len() < BOM.len() && BOM.starts_with(rest) && !at_end {
                return Ok(None);
            }
            if rest.starts_with(BOM) {
                self.pos += BOM.len();
                self.scan = self.scan.max(self.pos);
            }
            self.started = true;
        }
        loop {
            let (start, end, next) = match self.next_line(at_end) {
                Line::At { start, end, next } => (start, end, next),
                Line::Incomplete => {
                    if self.buf.len() - self.pos > self.max_line {
                        return Err(self.too_long());
                    }
                    return Ok(None);
                }
            };
            if end - start > self.max_line {
                return Err(self.too_long());
            }
            self.pos = next;
            self.scan = next;
            if start == end {
                if let Some(event) = self.dispatch() {
                    return Ok(Some(event));
                }
                continue;
            }
            self.field(start, end);
            if self.data.len() > self.max_line {
                return Err(ModelError::new(
                    ModelErrorKind::InvalidStream,
                    format!(
                        "the model's stream sent an event whose data is longer than {} bytes, the most burrow reads",
                        self.max_line
                    ),
                ));
            }
        }
    }

    fn too_long(&self) -> ModelError {
        ModelError::new(
            ModelErrorKind::InvalidStream,
            format!(
                "the model's stream sent a line longer than {} bytes, the most burrow reads",
                self.max_line
            ),
        )
    }

    fn next_line(&mut self, at_end: bool) -> Line {
        let from = self.scan.max(self.pos);
        let unseen = &self.buf[from..];
        let found = unseen.iter().position(|&b| b == b'\n' || b == b'\r');
        let Some(i) = found else {
            self.scanned += unseen.len() as u64;
            self.scan = self.buf.len();
            return Line::Incomplete;
        };
        self.scanned += i as u64 + 1;
        let start = self.pos;
        let end = from + i;
        // Resume at the break itself: a CR may still wait for its LF.
        self.scan = end;
        let rest = &self.buf[self.pos..];
        let i = end - start;
        if rest[i] == b'\n' {
            return Line::At {
                start,
                end,
                next: end + 1,
            };
        }
        // A CR: one line break with the LF after it, if one follows.
        match rest.get(i + 1) {
            Some(b'\n') => Line::At {
                start,
                end,
                next: end + 2,
            },
            Some(_) => Line::At {
                start,
                end,
                next: end + 1,
            },
            None if at_end => Line::At {
                start,
                end,
                next: end + 1,
            },
            // The LF may be in the next chunk.
            None => Line::Incomplete,
        }
    }

    fn field(&mut self, start: usize, end: usize) {
        let line = &self.buf[start..end];
        if line[0] == b':' {
            return;
        }
        self.copied += line.len() as u64;
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        match name {
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.has_data = true;
                push_text(&mut self.data, value);
            }
            b"event" => {
                let mut name = String::new();
                push_text(&mut name, value);
                self.event = Some(name);
            }
            b"id" if !value.contains(&0) => {
                let mut id = String::new();
                push_text(&mut id, value);
                self.last_id = Some(id);
            }
            // `retry` concerns reconnecting browsers; other fields are ignored by the standard.
            _ => {}
        }
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = self.event.take();
        if !self.has_data {
            return None;
        }
        self.has_data = false;
        Some(SseEvent {
            event,
            data: std::mem::take(&mut self.data),
            id: self.last_id.clone(),
        })
    }
}

fn push_text(out: &mut String, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(text) => out.push_str(text),
        Err(_) => out.push_str(&String::from_utf8_lossy(bytes)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        for chunk in chunks {
            parser.push(chunk);
            while let Some(e) = parser.next_event().unwrap() {
                out.push(e);
            }
        }
        while let Some(e) = parser.finish().unwrap() {
            out.push(e);
        }
        out
    }

    /// One `data:` line of `len` bytes pushed in `chunk`-byte pieces, asking
    /// for an event after each piece as the HTTP driver does: the parser's
    /// scanned-byte count and the event.
    fn long_line(len: usize, chunk: usize) -> (u64, SseEvent) {
        let mut parser = SseParser::new();
        parser.push(b"data: ");
        let piece = vec![b'x'; chunk];
        let mut sent = 0;
        while sent < len {
            let n = chunk.min(len - sent);
            parser.push(&piece[..n]);
            sent += n;
            assert_eq!(parser.next_event().unwrap(), None);
        }
        parser.push(b"\n\n");
        let event = parser.next_event().unwrap().unwrap();
        (parser.scanned_bytes(), event)
    }

    fn data(events: &[SseEvent]) -> Vec<&str> {
        events.iter().map(|e| e.data.as_str()).collect()
    }

    #[test]
    fn events_data_lines_and_names() {
        let events = all(&[b"event: a\ndata: 1\ndata:2\n\ndata: x\n\n"]);
        assert_eq!(data(&events), ["1\n2", "x"]);
        assert_eq!(events[0].event.as_deref(), Some("a"));
        assert_eq!(events[1].event, None);
    }

    #[test]
    fn line_endings_crlf_cr_and_lf_even_split_between_chunks() {
        let events = all(&[b"data: a\r", b"\n\r", b"\ndata: b\r\rdata: c\n\n"]);
        assert_eq!(data(&events), ["a", "b", "c"]);
    }

    #[test]
    fn comments_empty_events_and_fields_without_colon() {
        let events = all(&[b": ping\n\nevent: x\n\ndata\n\nid: 7\ndata: y\n\n"]);
        assert_eq!(data(&events), ["", "y"]);
        assert_eq!(
            events[0].event, None,
            "an event with no data resets its name"
        );
        assert_eq!(events[1].id.as_deref(), Some("7"));
    }

    #[test]
    fn utf8_split_inside_a_character() {
        let text = "data: héllo ✓\n\n".as_bytes();
        let chunks: Vec<&[u8]> = text.chunks(1).collect();
        assert_eq!(data(&all(&chunks)), ["héllo ✓"]);
    }

    #[test]
    fn a_bom_is_skipped_and_a_last_event_without_blank_line_is_kept() {
        assert_eq!(data(&all(&[b"\xEF\xBB", b"\xBFdata: a\n"])), ["a"]);
        assert_eq!(data(&all(&[b"data: a\n\ndata: partial"])), ["a"]);
    }

    #[test]
    fn only_one_space_after_the_colon_is_dropped() {
        assert_eq!(data(&all(&[b"data:  two\n\n"])), [" two"]);
    }

    #[test]
    fn a_long_line_in_small_chunks_is_scanned_once() {
        // 40 MB would be over the limit; the work per byte is what is checked.
        for len in [4 << 20, 12 << 20] {
            let (scanned, event) = long_line(len, 16 * 1024);
            assert_eq!(event.data.len(), len);
            let input = (len + 8) as u64;
            assert!(
                scanned <= input + 2,
                "{scanned} bytes scanned for {input} bytes of input"
            );
        }
    }

    /// The parser's work on one `data:` line of `len` bytes pushed in
    /// `chunk`-byte pieces, asking for an event after each piece: bytes
    /// scanned, bytes copied, and the most its buffers held at once.
    fn work_on_line(len: usize, chunk: usize) -> (u64, u64, usize) {
        let mut parser = SseParser::with_max_line(64 << 20);
        parser.push(b"data: ");
        let piece = vec![b'x'; chunk];
        let (mut sent, mut most) = (0, 0);
        while sent < len {
            let n = chunk.min(len - sent);
            parser.push(&piece[..n]);
            sent += n;
            assert_eq!(parser.next_event().unwrap(), None);
            most = most.max(parser.allocated_bytes());
        }
        parser.push(b"\n\n");
        let event = parser.next_event().unwrap().unwrap();
        assert_eq!(event.data.len(), len);
        most = most.max(parser.allocated_bytes() + event.data.capacity());
        (parser.scanned_bytes(), parser.copied_bytes(), most)
    }

    #[test]
    fn a_40_mb_line_costs_ten_times_the_work_of_a_4_mb_line() {
        // The issue's case (a 40 MB line took 74 s when every chunk restarted
        // the scan): the limit is raised so the line is read. Work is counted,
        // not timed: linear means ten times the bytes cost ten times the
        // work, however the line was split.
        for chunk in [16 * 1024, 997] {
            let mut work = Vec::new();
            for len in [4_000_000, 40_000_000] {
                let (scanned, copied, most) = work_on_line(len, chunk);
                let input = (len + 8) as u64;
                assert!(scanned <= input + 2, "{scanned} bytes scanned for {input}");
                // Each byte is copied into the buffer and once into the data.
                assert!(copied <= 2 * input, "{copied} bytes copied for {input}");
                // The buffer (grown by doubling) and the event's data.
                assert!(
                    most <= 3 * len + 3 * chunk,
                    "{most} bytes held at once for a {len}-byte line"
                );
                work.push(scanned + copied);
            }
            let ratio = work[1] as f64 / work[0] as f64;
            assert!(
                (9.9..=10.1).contains(&ratio),
                "40 MB cost {ratio:.2} times the work of 4 MB in {chunk}-byte chunks"
            );
        }
    }

    #[test]
    fn a_line_past_the_limit_is_an_error_even_before_it_ends() {
        let mut parser = SseParser::with_max_line(1024);
        parser.push(b"data: ");
        parser.push(&[b'x'; 1000]);
        assert_eq!(parser.next_event().unwrap(), None);
        parser.push(&[b'x'; 100]);
        let error = parser.next_event().unwrap_err();
        assert_eq!(error.kind, ModelErrorKind::InvalidStream);
        assert_eq!(
            error.message,
            "the model's stream sent a line longer than 1024 bytes, the most burrow reads"
        );
        // A whole line past the limit in one chunk is refused the same way.
        let mut parser = SseParser::with_max_line(1024);
        parser.push(&[b'x'; 2000]);
        parser.push(b"\n\n");
        assert!(parser.next_event().is_err());
    }

    #[test]
    fn the_default_limit_is_16_mib() {
        let mut parser = SseParser::new();
        parser.push(b"data: ");
        parser.push(&vec![b'x'; MAX_LINE_BYTES - 6]);
        parser.push(b"\n\n");
        assert_eq!(
            parser.next_event().unwrap().map(|e| e.data.len()),
            Some(MAX_LINE_BYTES - 6)
        );
        let mut parser = SseParser::new();
        parser.push(b"data: ");
        parser.push(&vec![b'x'; MAX_LINE_BYTES]);
        assert!(parser.next_event().is_err());
    }

    #[test]
    fn an_event_whose_data_lines_add_up_past_the_limit_is_an_error() {
        let mut parser = SseParser::with_max_line(100);
        for _ in 0..3 {
            parser.push(b"data: ");
            parser.push(&[b'y'; 40]);
            parser.push(b"\n");
        }
        let error = parser.next_event().unwrap_err();
        assert!(error.message.contains("data is longer than 100 bytes"));
    }
}
