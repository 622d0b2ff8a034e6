//! The SSE parser on one long `data:` line (4 MB and 40 MB) pushed in 16 KiB chunks, asking for an event after each chunk as the HTTP driver does: linear means the 40 MB line costs about ten times the 4 MB one (the same time per MB).
//!
//! The parser's limit is raised to 64 MiB here so the 40 MB line is read
//! (the default, 16 MiB, refuses it; `sse::tests` checks that). Run:
//! `cargo xtask bench burrow-models -- sse_line` (or
//! `cargo bench -p burrow-models --bench sse_line`).

use burrow_models::sse::SseParser;

fn main() {
    divan::main();
}

const CHUNK: usize = 16 * 1024;

/// Parses one line of `len` bytes; returns the event's data length.
fn parse_line(len: usize, piece: &[u8]) -> usize {
    let mut parser = SseParser::with_max_line(64 << 20);
    parser.push(b"data: ");
    let mut sent = 0;
    while sent < len {
        let n = CHUNK.min(len - sent);
        parser.push(&piece[..n]);
        sent += n;
        if let Ok(Some(event)) = parser.next_event() {
            return event.data.len();
        }
    }
    parser.push(b"\n\n");
    match parser.next_event() {
        Ok(Some(event)) => event.data.len(),
        _ => 0,
    }
}

#[divan::bench(args = [4_000_000, 40_000_000], sample_count = 10, sample_size = 1)]
fn one_long_line(bencher: divan::Bencher, len: usize) {
    let piece = vec![b'x'; CHUNK];
    bencher
        .counter(divan::counter::BytesCount::new(len))
        .bench(|| parse_line(divan::black_box(len), &piece));
}
