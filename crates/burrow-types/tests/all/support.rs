//! Shared helpers: fixture locations and a Python-legacy document writer.

use std::fmt::Write as _;
use std::path::PathBuf;

/// `tests/fixtures/<rel>` of this crate.
pub fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

/// Reads a fixture as text.
pub fn read_fixture(rel: &str) -> String {
    std::fs::read_to_string(fixture(rel)).unwrap_or_else(|e| panic!("reading {rel}: {e}"))
}

/// True when the JSON text holds a `\uD800`..`\uDFFF` escape (any case).
pub fn has_surrogate_escape(json: &str) -> bool {
    let bytes = json.as_bytes();
    bytes.windows(4).enumerate().any(|(i, w)| {
        w[0] == b'\\'
            && w[1] == b'u'
            && w[2].eq_ignore_ascii_case(&b'd')
            && matches!(w[3].to_ascii_lowercase(), b'8'..=b'9' | b'a'..=b'f')
            // an escaped backslash followed by "ud8.." is not an escape
            && bytes[..i].iter().rev().take_while(|&&b| b == b'\\').count() % 2 == 0
    })
}

/// `bytes` the way a legacy Python `StateBackend` stored them, as one JSON string
/// literal per line: decoded with `errors="surrogateescape"`, split on "\n",
/// and written by `json.dumps` with its default `ensure_ascii=True`.
pub fn python_legacy_lines(bytes: &[u8]) -> Vec<String> {
    let mut lines = vec![String::new()];
    for chunk in bytes.utf8_chunks() {
        for ch in chunk.valid().chars() {
            let line = lines.last_mut().unwrap_or_else(|| unreachable!());
            match ch {
                '\n' => lines.push(String::new()),
                '"' => line.push_str("\\\""),
                '\\' => line.push_str("\\\\"),
                '\r' => line.push_str("\\r"),
                '\t' => line.push_str("\\t"),
                '\u{8}' => line.push_str("\\b"),
                '\u{c}' => line.push_str("\\f"),
                ' '..='~' => line.push(ch),
                _ => {
                    let mut units = [0u16; 2];
                    for unit in ch.encode_utf16(&mut units) {
                        let _ = write!(line, "\\u{unit:04x}");
                    }
                }
            }
        }
        let line = lines.last_mut().unwrap_or_else(|| unreachable!());
        for byte in chunk.invalid() {
            let _ = write!(line, "\\udc{byte:02x}");
        }
    }
    lines.into_iter().map(|l| format!("\"{l}\"")).collect()
}

/// A one-file legacy document holding `bytes` at `path` (an ASCII path).
pub fn python_legacy_document(path: &str, bytes: &[u8]) -> String {
    format!(
        "{{\"{path}\": {{\"content\": [{}], \"created_at\": \"2026-01-01T00:00:00+00:00\", \
         \"modified_at\": \"2026-01-01T00:00:00+00:00\"}}}}",
        python_legacy_lines(bytes).join(", ")
    )
}
