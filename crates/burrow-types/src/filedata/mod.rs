//! `FileData` and the files document: one stored file, and a JSON map of them by path.
//!
//! The document is the wire shared with the Python `StateBackend`
//! (`pydantic_ai_backends.StateBackend.files`). Text is `content` split on `"\n"`
//! with no `encoding` key; anything else is one standard, padded base64 entry with
//! `encoding: "base64"`. Two rules are burrow's own, and both only tighten what is
//! written, never what is read:
//!
//! - Text holding a NUL is stored as base64, because PostgreSQL `jsonb` refuses
//!   `\u0000` and the document must fit a `jsonb` column.
//! - Reading accepts the legacy documents older Python versions wrote (binary
//!   content as text decoded with `errors="surrogateescape"`, written by
//!   `json.dumps` as lone `\udcXX` escapes), through a small reader of its own
//!   (`serde_json` refuses lone surrogates). Every entry read is put in the
//!   canonical form [`FileData::from_bytes`] would give, so an in-memory
//!   `FileData` never holds a surrogate or a NUL line.
//!
//! ```
//! use burrow_types::{FileData, FilesDocument, files_document_to_json, parse_files_document};
//!
//! // A legacy Python document: byte 0x89 stored as the lone surrogate U+DC89.
//! let legacy = r#"{"/logo.png": {"content": ["\udc89PNG"],
//!     "created_at": "2024-01-15T10:30:00Z", "modified_at": "2024-01-15T10:30:00Z"}}"#;
//! let doc: FilesDocument = parse_files_document(legacy)?;
//! assert_eq!(doc["/logo.png"].to_bytes()?, b"\x89PNG");
//! assert_eq!(doc["/logo.png"].encoding.as_deref(), Some("base64"));
//!
//! // What burrow writes is strict JSON: base64, no surrogate escape.
//! let json = files_document_to_json(&doc);
//! assert!(json.contains(r#""content":["iVBORw=="]"#) && !json.contains("\\ud"));
//!
//! // Text is lines split on "\n", exactly as Python's str.split.
//! let text = FileData::from_bytes(b"a\n", "t0".into(), "t1".into());
//! assert_eq!(text.content, ["a", ""]);
//! # Ok::<(), burrow_types::FileDataError>(())
//! ```

mod json;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};

use self::json::Value;
use crate::shown::shown;

/// The only `encoding` value defined: `content` is one base64 entry.
pub const BASE64_ENCODING: &str = "base64";

/// One file as the Python `StateBackend` stores it.
///
/// Build it with [`FileData::from_bytes`], which picks the form the contract
/// demands; read it back with [`FileData::to_bytes`]. The serde derives give the
/// plain JSON shape; to read a whole document that may be legacy, use
/// [`parse_files_document`], which the derives cannot do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileData {
    /// Lines of text split on `"\n"` (`"a\n"` is `["a", ""]`, an empty file
    /// `[""]`), or a single base64 entry when `encoding` is `"base64"`.
    pub content: Vec<String>,
    /// When the file was first written, RFC 3339 / ISO 8601; empty when
    /// unknown (the document had no such key, which is then written back absent).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub created_at: String,
    /// When the file was last written, RFC 3339 / ISO 8601; empty when unknown.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub modified_at: String,
    /// `Some("base64")` when `content` holds base64; absent for text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoding: Option<String>,
}

impl FileData {
    /// Stores `bytes` in the form the contract demands.
    ///
    /// Text (valid UTF-8 holding no NUL) becomes `content` split on `"\n"`
    /// exactly as Python's `str.split("\n")` does: `""` is `[""]`, `"a\n"` is
    /// `["a", ""]`, `"\r"` stays on its line. Anything else (not UTF-8, or
    /// holding a NUL, which `jsonb` cannot store) is one standard padded base64
    /// entry with `encoding: "base64"`.
    pub fn from_bytes(bytes: &[u8], created_at: String, modified_at: String) -> FileData {
        match std::str::from_utf8(bytes) {
            Ok(text) if !text.contains('\0') => FileData {
                content: text.split('\n').map(str::to_owned).collect(),
                created_at,
                modified_at,
                encoding: None,
            },
            _ => FileData {
                content: vec![STANDARD.encode(bytes)],
                created_at,
                modified_at,
                encoding: Some(BASE64_ENCODING.to_owned()),
            },
        }
    }

    /// The exact bytes: the lines joined with `"\n"`, or the base64 decoded.
    ///
    /// Base64 `content` entries are joined before decoding, as Python does.
    ///
    /// # Errors
    /// [`FileDataError::InvalidBase64`] when base64 content does not decode, and
    /// [`FileDataError::UnknownEncoding`] for an `encoding` other than `"base64"`.
    pub fn to_bytes(&self) -> Result<Vec<u8>, FileDataError> {
        match self.encoding.as_deref() {
            None => Ok(self.content.join("\n").into_bytes()),
            Some(BASE64_ENCODING) => STANDARD.decode(self.content.concat()).map_err(|error| {
                FileDataError::InvalidBase64 {
                    reason: error.to_string(),
                }
            }),
            Some(other) => Err(FileDataError::UnknownEncoding {
                encoding: other.to_owned(),
            }),
        }
    }

    /// True when `content` holds lines of text rather than base64.
    pub fn is_text(&self) -> bool {
        self.encoding.is_none()
    }
}

/// A whole document: files by absolute path, in byte order.
pub type FilesDocument = BTreeMap<String, FileData>;

/// Parses a files document (path -> FileData) written by burrow or by any
/// version of the Python `StateBackend`.
///
/// Legacy entries (no `encoding`, lines holding lone surrogates U+DC80..U+DCFF
/// from Python's surrogateescape, as `\udcXX` escapes) load with each such
/// surrogate turned back into the byte it stood for. Every entry is returned in
/// the canonical form of [`FileData::from_bytes`] for its bytes, timestamps
/// kept: legacy binary and text holding a NUL come back as base64. Members of an
/// entry other than the four defined ones are ignored, as Python ignores them;
/// `"encoding": null` means text, as in Python.
///
/// # Errors
/// [`FileDataError::Syntax`] for text that is not JSON (or holds a lone
/// surrogate that is no surrogateescape byte), [`FileDataError::Shape`] for
/// JSON that is not a map of files, [`FileDataError::Entry`] for an entry whose
/// content does not decode.
pub fn parse_files_document(json: &str) -> Result<FilesDocument, FileDataError> {
    let Value::Object(members) = json::parse(json)? else {
        return Err(shape("the document is not a JSON object of files by path"));
    };
    let mut doc = FilesDocument::new();
    for (raw_path, entry) in members {
        let path = String::from_utf8(raw_path)
            .map_err(|_| shape("a path in the document is not valid UTF-8"))?;
        if path.contains('\0') {
            return Err(shape(format!(
                "the path {} holds a NUL, which no file name can",
                shown(&path)
            )));
        }
        let data = entry_from_value(&path, &entry)?;
        doc.insert(path, data);
    }
    Ok(doc)
}

/// Writes `doc` as compact, strict UTF-8 JSON that PostgreSQL `jsonb` accepts,
/// refusing a document that holds a NUL outside file content.
///
/// No lone surrogates can appear (Rust strings have none). A text entry whose
/// lines hold a NUL (possible only for a hand-built `FileData`) is written in
/// base64 form, so content never produces `\u0000`. A NUL in a path, a
/// timestamp or an `encoding` cannot be written losslessly in any form `jsonb`
/// takes: [`FileDataError::Nul`] names the entry. [`parse_files_document`]
/// refuses those too, so every document it returns writes back unchanged;
/// a burrow path never holds NUL (`VPath` refuses it).
pub fn try_files_document_to_json(doc: &FilesDocument) -> Result<String, FileDataError> {
    for (path, data) in doc {
        let fields = [
            ("path", path.as_str()),
            ("created_at", &data.created_at),
            ("modified_at", &data.modified_at),
            ("encoding", data.encoding.as_deref().unwrap_or("")),
        ];
        if let Some((field, _)) = fields.iter().find(|(_, value)| value.contains('\0')) {
            return Err(FileDataError::Nul {
                path: path.clone(),
                field,
            });
        }
    }
    Ok(files_document_to_json(doc))
}

/// Writes `doc` as compact, strict UTF-8 JSON that PostgreSQL `jsonb` accepts.
///
/// As [`try_files_document_to_json`], but never fails: a NUL outside file
/// content (only a hand-built document can hold one) is written as U+FFFD, so
/// the output never holds `\u0000` either. Prefer the `try_` form where a
/// hand-built document can reach it.
pub fn files_document_to_json(doc: &FilesDocument) -> String {
    let mut out = String::with_capacity(64 * doc.len() + 2);
    out.push('{');
    for (index, (path, data)) in doc.iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        write_json_string(&mut out, path);
        out.push(':');
        let needs_base64 = data.is_text() && data.content.iter().any(|line| line.contains('\0'));
        if needs_base64 {
            let bytes = data.content.join("\n").into_bytes();
            let canonical =
                FileData::from_bytes(&bytes, data.created_at.clone(), data.modified_at.clone());
            write_entry(&mut out, &canonical);
        } else {
            write_entry(&mut out, data);
        }
    }
    out.push('}');
    out
}

/// Why a files document or a `FileData` could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FileDataError {
    /// The text is not JSON, or holds a lone surrogate that stands for no byte.
    #[error("the files document is not valid JSON at byte {offset}: {reason}")]
    Syntax {
        /// Byte offset into the document where reading stopped.
        offset: usize,
        /// What was wrong there.
        reason: String,
    },
    /// The JSON is not a map of path -> file.
    #[error("the files document has the wrong shape: {reason}")]
    Shape {
        /// What was wrong, naming the path where there is one.
        reason: String,
    },
    /// Content marked base64 does not decode.
    #[error("content marked base64 does not decode: {reason}")]
    InvalidBase64 {
        /// The decoder's reason.
        reason: String,
    },
    /// `encoding` holds a value other than `"base64"`.
    #[error("unknown content encoding {encoding:?}; only \"base64\" is defined")]
    UnknownEncoding {
        /// The value found.
        encoding: String,
    },
    /// A document to write holds a NUL outside file content (a path, a
    /// timestamp or an `encoding`), which no JSON that `jsonb` takes can hold.
    #[error("the file {} cannot be written to a files document: its {field} holds a NUL, which PostgreSQL jsonb refuses", shown(.path))]
    Nul {
        /// The entry's path.
        path: String,
        /// Which member holds the NUL: "path", "created_at", "modified_at" or "encoding".
        field: &'static str,
    },
    /// One entry of a document could not be decoded.
    #[error("the file {} in the files document cannot be decoded: {error}", shown(.path))]
    Entry {
        /// The entry's path.
        path: String,
        /// Why (part of this message, so not also reported as its source).
        error: Box<FileDataError>,
    },
}

fn shape(reason: impl Into<String>) -> FileDataError {
    FileDataError::Shape {
        reason: reason.into(),
    }
}

/// One document entry, decoded and put in canonical form.
fn entry_from_value(path: &str, entry: &Value) -> Result<FileData, FileDataError> {
    let shown_path = shown(path);
    if !matches!(entry, Value::Object(_)) {
        return Err(shape(format!(
            "the entry {shown_path} is {} rather than an object",
            entry.kind()
        )));
    }
    let Some(Value::Array(items)) = entry.get("content") else {
        return Err(shape(format!(
            "the entry {shown_path} has no \"content\" list"
        )));
    };
    let mut lines = Vec::with_capacity(items.len());
    for item in items {
        let Value::Str(line) = item else {
            return Err(shape(format!(
                "the entry {shown_path} has {} in its \"content\" list",
                item.kind()
            )));
        };
        lines.push(line.as_slice());
    }
    let created_at = timestamp(path, entry, "created_at")?;
    let modified_at = timestamp(path, entry, "modified_at")?;
    let bytes = match entry.get("encoding") {
        None | Some(Value::Null) => lines.join(&b'\n'),
        Some(Value::Str(encoding)) if encoding.as_slice() == BASE64_ENCODING.as_bytes() => STANDARD
            .decode(lines.concat())
            .map_err(|error| FileDataError::Entry {
                path: path.to_owned(),
                error: Box::new(FileDataError::InvalidBase64 {
                    reason: error.to_string(),
                }),
            })?,
        Some(Value::Str(other)) => {
            return Err(FileDataError::Entry {
                path: path.to_owned(),
                error: Box::new(FileDataError::UnknownEncoding {
                    encoding: String::from_utf8_lossy(other).into_owned(),
                }),
            });
        }
        Some(other) => {
            return Err(shape(format!(
                "the entry {shown_path} has {} as its \"encoding\"",
                other.kind()
            )));
        }
    };
    Ok(FileData::from_bytes(&bytes, created_at, modified_at))
}

/// The timestamp `key` of an entry; an absent (or `null`) one is unknown, the
/// empty string, as Python reads such entries (ADR 0200).
fn timestamp(path: &str, entry: &Value, key: &str) -> Result<String, FileDataError> {
    let path = shown(path);
    match entry.get(key) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::Str(raw)) if raw.contains(&0) => {
            Err(shape(format!("the entry {path} has a {key} holding a NUL")))
        }
        Some(Value::Str(raw)) => String::from_utf8(raw.clone())
            .map_err(|_| shape(format!("the entry {path} has a {key} that is not UTF-8"))),
        Some(other) => Err(shape(format!(
            "the entry {path} has {} as its {key}, not a string",
            other.kind()
        ))),
    }
}

fn write_entry(out: &mut String, data: &FileData) {
    out.push_str("{\"content\":[");
    for (index, line) in data.content.iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        write_json_string(out, line);
    }
    out.push(']');
    write_entry_end(
        out,
        &data.created_at,
        &data.modified_at,
        data.encoding.as_deref(),
    );
}

/// An entry's keys after `content`, and its closing brace. An unknown time
/// (the empty string) is written as no key, as it was read.
fn write_entry_end(out: &mut String, created_at: &str, modified_at: &str, encoding: Option<&str>) {
    if !created_at.is_empty() {
        out.push_str(",\"created_at\":");
        write_json_string(out, created_at);
    }
    if !modified_at.is_empty() {
        out.push_str(",\"modified_at\":");
        write_json_string(out, modified_at);
    }
    if let Some(encoding) = encoding {
        out.push_str(",\"encoding\":");
        write_json_string(out, encoding);
    }
    out.push('}');
}

/// A JSON string literal: UTF-8 kept as is, quotes, backslashes and control
/// characters escaped, and a NUL (which `jsonb` refuses even escaped) written
/// as U+FFFD. Content never holds one here: such content is written as base64.
fn write_json_string(out: &mut String, text: &str) {
    out.push('"');
    write_escaped(out, text, false);
    out.push('"');
}

/// The text of a file as the JSON strings of its lines split on `"\n"`,
/// comma-separated (what [`write_entry`] writes for the `content` of
/// [`FileData::from_bytes`], without the lines ever being split apart).
fn write_json_lines(out: &mut String, text: &str) {
    out.push('"');
    write_escaped(out, text, true);
    out.push('"');
}

/// `text` escaped as the inside of a JSON string (see [`write_json_string`]);
/// with `lines`, each `"\n"` ends one string and starts the next.
///
/// Sixteen bytes are tested at a time for one that needs escaping (a fold
/// the compiler turns into a few vector compares), and only a block that
/// holds one is searched for its first such byte, after which the blocks
/// start again from the next byte: every byte that needs escaping
/// is ASCII, so each one found is a char boundary and the runs between are
/// copied whole.
fn write_escaped(out: &mut String, text: &str, lines: bool) {
    const STEP: usize = 16;
    let clean = |block: &[u8; STEP]| {
        block
            .iter()
            .fold(true, |ok, &b| ok & (b >= b' ') & (b != b'"') & (b != b'\\'))
    };
    let bytes = text.as_bytes();
    let mut start = 0;
    let mut at = 0;
    while at < bytes.len() {
        if let Some(block) = bytes
            .get(at..at + STEP)
            .and_then(|b| <&[u8; STEP]>::try_from(b).ok())
            && clean(block)
        {
            at += STEP;
            continue;
        }
        // The block holds a byte to escape (or the text ends within it):
        // find the first, escape it, and go on in blocks from the byte after.
        let end = (at + STEP).min(bytes.len());
        let Some(index) = bytes
            .get(at..end)
            .and_then(|block| {
                block
                    .iter()
                    .position(|&b| b < b' ' || b == b'"' || b == b'\\')
            })
            .map(|i| at + i)
        else {
            at = end;
            continue;
        };
        let byte = bytes[index];
        {
            out.push_str(text.get(start..index).unwrap_or_default());
            start = index + 1;
            match byte {
                b'"' => out.push_str("\\\""),
                b'\\' => out.push_str("\\\\"),
                b'\n' if lines => out.push_str("\",\""),
                b'\n' => out.push_str("\\n"),
                b'\r' => out.push_str("\\r"),
                b'\t' => out.push_str("\\t"),
                0x08 => out.push_str("\\b"),
                0x0c => out.push_str("\\f"),
                0 => out.push('\u{fffd}'),
                other => {
                    let _ = write!(out, "\\u{:04x}", u32::from(other));
                }
            }
        }
        at = index + 1;
    }
    out.push_str(text.get(start..).unwrap_or_default());
}

/// Writes a files document entry by entry straight from each file's bytes,
/// for a store that keeps bytes rather than [`FileData`]: the text is
/// byte for byte what [`files_document_to_json`] writes for a document of
/// [`FileData::from_bytes`] entries, without building that document (its
/// lines, one `String` each, cost more than the writing).
///
/// Entries must come in the document's order (paths in byte order), each
/// path once.
///
/// ```
/// use burrow_types::{DocumentWriter, FileData, FilesDocument, files_document_to_json};
///
/// let mut writer = DocumentWriter::with_capacity(64);
/// writer.entry("/a.txt", b"one\ntwo \"q\"\n", "t0", "t1");
/// writer.entry("/b.bin", b"\x89PNG", "", "t2");
/// let mut doc = FilesDocument::new();
/// doc.insert("/a.txt".into(), FileData::from_bytes(b"one\ntwo \"q\"\n", "t0".into(), "t1".into()));
/// doc.insert("/b.bin".into(), FileData::from_bytes(b"\x89PNG", String::new(), "t2".into()));
/// assert_eq!(writer.finish(), files_document_to_json(&doc));
/// ```
#[derive(Debug)]
pub struct DocumentWriter {
    out: String,
    entries: usize,
}

impl DocumentWriter {
    /// A writer whose text starts with room for `capacity` bytes.
    pub fn with_capacity(capacity: usize) -> DocumentWriter {
        let mut out = String::with_capacity(capacity.saturating_add(2));
        out.push('{');
        DocumentWriter { out, entries: 0 }
    }

    /// Adds the file at `path` holding `bytes`, stored as
    /// [`FileData::from_bytes`] stores it (text as lines, anything else or
    /// text holding a NUL as base64); an empty time is written as no key.
    pub fn entry(&mut self, path: &str, bytes: &[u8], created_at: &str, modified_at: &str) {
        let out = &mut self.out;
        if self.entries > 0 {
            out.push(',');
        }
        self.entries += 1;
        write_json_string(out, path);
        out.push(':');
        match std::str::from_utf8(bytes) {
            Ok(text) if !bytes.contains(&0) => {
                out.push_str("{\"content\":[");
                write_json_lines(out, text);
                out.push(']');
                write_entry_end(out, created_at, modified_at, None);
            }
            _ => {
                out.push_str("{\"content\":[");
                write_json_string(out, &STANDARD.encode(bytes));
                out.push(']');
                write_entry_end(out, created_at, modified_at, Some(BASE64_ENCODING));
            }
        }
    }

    /// The whole document's text.
    pub fn finish(mut self) -> String {
        self.out.push('}');
        self.out
    }

    /// How many bytes of text are held, written by [`DocumentWriter::drain_to`] or
    /// [`DocumentWriter::finish_to`].
    pub fn held(&self) -> usize {
        self.out.len()
    }

    /// Writes the text held so far to `out` and forgets it, keeping the
    /// buffer: a writer drained every few hundred KiB writes a document of
    /// any size through one small buffer instead of holding it whole.
    ///
    /// # Errors
    ///
    /// `out`'s error; the text held is kept then.
    pub fn drain_to(&mut self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        out.write_all(self.out.as_bytes())?;
        self.out.clear();
        Ok(())
    }

    /// Ends the document and writes what is left of it to `out`: the
    /// pieces written by [`DocumentWriter::drain_to`] and this one are
    /// together exactly what [`DocumentWriter::finish`] returns.
    ///
    /// # Errors
    ///
    /// `out`'s error.
    pub fn finish_to(mut self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        self.out.push('}');
        out.write_all(self.out.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::{
        DocumentWriter, FileData, FilesDocument, files_document_to_json, parse_files_document,
        write_json_lines, write_json_string,
    };

    #[test]
    fn escaping_matches_serde_json_at_every_offset_of_a_block() {
        // Every byte below 0x80 but NUL (written as U+FFFD, see
        // `write_json_string`) at every offset across two 16-byte blocks.
        let mut cases = vec![String::new(), "é 漢字 🦀 \u{7f} \u{2028}".to_owned()];
        for byte in 1u8..0x80 {
            for at in 0..33 {
                let mut text = b"abcdefghijklmnopqrstuvwxyz0123456".to_vec();
                text[at] = byte;
                cases.push(String::from_utf8(text).unwrap());
            }
        }
        for text in &cases {
            let mut ours = String::new();
            write_json_string(&mut ours, text);
            assert_eq!(ours, serde_json::to_string(text).unwrap(), "{text:?}");
            let mut lines = String::new();
            write_json_lines(&mut lines, text);
            let expected: Vec<String> = text
                .split('\n')
                .map(|l| serde_json::to_string(l).unwrap())
                .collect();
            assert_eq!(lines, expected.join(","), "{text:?}");
        }
        let mut nul = String::new();
        write_json_string(&mut nul, "a\u{0}b");
        assert_eq!(nul, "\"a\u{fffd}b\"");
    }

    #[test]
    fn document_writer_writes_what_the_document_would() {
        let files: [(&str, &[u8], &str, &str); 10] = [
            ("/a.txt", b"plain\nlines\n", "c", "m"),
            (
                "/b \"q\" \\.txt",
                b"quote \" back \\ tab \t cr \r\n",
                "c",
                "",
            ),
            ("/c.txt", b"", "", ""),
            ("/d.txt", b"\n\n", "c", "m"),
            ("/e.txt", b"ctl \x01 \x08 \x0c \x1f del \x7f", "c", "m"),
            (
                "/f.txt",
                "unicode \u{e9} \u{1f600} \u{2028}".as_bytes(),
                "c",
                "m",
            ),
            ("/g.bin", b"\x89PNG\r\n\x1a\n", "c", "m"),
            ("/h.txt", b"text with a \0 NUL", "c", "m"),
            (
                "/i/j.txt",
                b"no newline at the end",
                "2024-01-15T10:30:00Z",
                "m",
            ),
            ("/\u{e9}.txt", b"\r", "c", "m"),
        ];
        let mut writer = DocumentWriter::with_capacity(0);
        let mut doc = FilesDocument::new();
        for (path, bytes, created, modified) in files {
            writer.entry(path, bytes, created, modified);
            doc.insert(
                path.to_owned(),
                FileData::from_bytes(bytes, created.to_owned(), modified.to_owned()),
            );
        }
        // Drained after every entry into a sink, the same text.
        let mut drained = DocumentWriter::with_capacity(0);
        let mut sink = Vec::new();
        for (path, bytes, created, modified) in files {
            drained.entry(path, bytes, created, modified);
            assert!(drained.held() > 0);
            drained.drain_to(&mut sink).unwrap();
            assert_eq!(drained.held(), 0);
        }
        drained.finish_to(&mut sink).unwrap();
        let json = writer.finish();
        assert_eq!(String::from_utf8(sink).unwrap(), json);
        assert_eq!(json, files_document_to_json(&doc));
        assert_eq!(parse_files_document(&json).unwrap(), doc);
        assert_eq!(DocumentWriter::with_capacity(8).finish(), "{}");
    }

    fn data(bytes: &[u8]) -> FileData {
        FileData::from_bytes(bytes, "c".to_owned(), "m".to_owned())
    }

    #[test]
    fn text_splits_like_python_str_split() {
        assert_eq!(data(b"").content, [""]);
        assert_eq!(data(b"a\n").content, ["a", ""]);
        assert_eq!(data(b"a\r\nb").content, ["a\r", "b"]);
        assert_eq!(data(b"\n\n").content, ["", "", ""]);
        assert!(data(b"x").is_text());
    }

    #[test]
    fn binary_and_nul_become_base64() {
        let png = data(b"\x89PNG\r\n");
        assert_eq!(png.content, ["iVBORw0K"]);
        assert_eq!(png.encoding.as_deref(), Some("base64"));
        let nul = data(b"a\0b");
        assert_eq!(nul.content, ["YQBi"]);
        assert_eq!(nul.to_bytes().ok(), Some(b"a\0b".to_vec()));
    }

    #[test]
    fn hand_built_nul_text_is_written_as_base64() {
        let mut doc = FilesDocument::new();
        let entry = FileData {
            content: vec!["a\0".to_owned(), "b".to_owned()],
            created_at: "c".to_owned(),
            modified_at: "m".to_owned(),
            encoding: None,
        };
        doc.insert("/n".to_owned(), entry);
        let json = files_document_to_json(&doc);
        assert!(!json.contains("\\u0000"), "{json}");
        let back = parse_files_document(&json).ok();
        let bytes = back.and_then(|d| d.get("/n").and_then(|f| f.to_bytes().ok()));
        assert_eq!(bytes, Some(b"a\0\nb".to_vec()));
    }

    #[test]
    fn strings_are_escaped_as_json() {
        let mut doc = FilesDocument::new();
        doc.insert("/q\"\\".to_owned(), data("\"\\\t\u{1}é".as_bytes()));
        let json = files_document_to_json(&doc);
        let value: serde_json::Value = serde_json::from_str(&json).unwrap_or_default();
        assert_eq!(value["/q\"\\"]["content"][0], "\"\\\t\u{1}é");
    }
}
