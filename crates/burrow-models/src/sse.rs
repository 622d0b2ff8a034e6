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
#[derive(Debug, Default)]
pub struct SseParser {
    buf: Vec<u8>,
    /// Where the unparsed bytes of `buf` start.
    pos: usize,
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

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends the next bytes of the stream.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
        } else if self.pos > 8192 && self.pos * 2 > self.buf.len() {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete event among the bytes pushed so far, if there is one.
    pub fn next_event(&mut self) -> Option<SseEvent> {
        self.parse(false)
    }

    /// At the end of the stream: the remaining events, one per call,
    /// including a last one whose closing blank line never came (see the
    /// module docs). A partial last line is dropped.
    pub fn finish(&mut self) -> Option<SseEvent> {
        if let Some(event) = self.parse(true) {
            return Some(event);
        }
        self.dispatch()
    }

    fn parse(&mut self, at_end: bool) -> Option<SseEvent> {
        if !self.started {
            let rest = &self.buf[self.pos..];
            if rest.len() < BOM.len() && BOM.starts_with(rest) && !at_end {
                return None;
            }
            if rest.starts_with(BOM) {
                self.pos += BOM.len();
            }
            self.started = true;
        }
        loop {
            let (start, end, next) = match self.next_line(at_end) {
                Line::At { start, end, next } => (start, end, next),
                Line::Incomplete => return None,
            };
            self.pos = next;
            if start == end {
                if let Some(event) = self.dispatch() {
                    return Some(event);
                }
                continue;
            }
            self.field(start, end);
        }
    }

    fn next_line(&self, at_end: bool) -> Line {
        let rest = &self.buf[self.pos..];
        let Some(i) = rest.iter().position(|&b| b == b'\n' || b == b'\r') else {
            return Line::Incomplete;
        };
        let start = self.pos;
        let end = start + i;
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
            while let Some(e) = parser.next_event() {
                out.push(e);
            }
        }
        while let Some(e) = parser.finish() {
            out.push(e);
        }
        out
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
}
