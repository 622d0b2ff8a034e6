//! A small JSON reader whose strings are bytes, so Python's surrogateescape escapes survive.
//!
//! `serde_json` (rightly) refuses a lone surrogate such as `\udc89`, but documents
//! written by older Python `StateBackend`s hold exactly those: every byte that was
//! not UTF-8 became U+DC80..U+DCFF under `errors="surrogateescape"`, and
//! `json.dumps` wrote it as a `\udcXX` escape. This reader follows RFC 8259
//! otherwise (surrogate pairs combine, raw control characters are refused) and
//! turns each lone U+DC80..U+DCFF back into the byte it stood for. Any other lone
//! surrogate is refused: Python's own `encode(errors="surrogateescape")` refuses it
//! too, so no faithful decoding exists.

use super::FileDataError;

/// Nesting deeper than this is refused rather than risking the stack.
const MAX_DEPTH: usize = 128;

/// One parsed JSON value; strings are raw bytes (UTF-8 plus surrogateescape bytes).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    /// `null`
    Null,
    /// `true` or `false`
    Bool,
    /// Any number; its value is never needed here.
    Number,
    /// A string, decoded to bytes.
    Str(Vec<u8>),
    /// An array.
    Array(Vec<Value>),
    /// An object's members in document order (a repeated key: the last one wins
    /// for whoever looks it up with [`Value::get`], as in Python).
    Object(Vec<(Vec<u8>, Value)>),
}

impl Value {
    /// The last member named `key`, if this is an object holding one.
    pub(crate) fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(members) => members
                .iter()
                .rev()
                .find(|(name, _)| name.as_slice() == key.as_bytes())
                .map(|(_, value)| value),
            _ => None,
        }
    }

    /// A short name of the value's kind, for error messages.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool => "a boolean",
            Value::Number => "a number",
            Value::Str(_) => "a string",
            Value::Array(_) => "an array",
            Value::Object(_) => "an object",
        }
    }
}

/// Parses one JSON text (surrounding whitespace allowed, nothing else after it).
pub(crate) fn parse(text: &str) -> Result<Value, FileDataError> {
    let mut reader = Reader {
        bytes: text.as_bytes(),
        pos: 0,
    };
    reader.skip_whitespace();
    let value = reader.value(0)?;
    reader.skip_whitespace();
    if reader.pos != reader.bytes.len() {
        return Err(reader.error("unexpected text after the document"));
    }
    Ok(value)
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn error(&self, reason: &str) -> FileDataError {
        FileDataError::Syntax {
            offset: self.pos,
            reason: reason.to_owned(),
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    fn expect_literal(&mut self, literal: &str) -> Result<(), FileDataError> {
        if self.bytes[self.pos..].starts_with(literal.as_bytes()) {
            self.pos += literal.len();
            Ok(())
        } else {
            Err(self.error("expected a JSON value"))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, FileDataError> {
        if depth > MAX_DEPTH {
            return Err(self.error("nesting is too deep"));
        }
        match self.peek() {
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => self.string().map(Value::Str),
            Some(b't') => self.expect_literal("true").map(|()| Value::Bool),
            Some(b'f') => self.expect_literal("false").map(|()| Value::Bool),
            Some(b'n') => self.expect_literal("null").map(|()| Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.error("expected a JSON value")),
            None => Err(self.error("unexpected end of the document")),
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, FileDataError> {
        self.pos += 1; // '{'
        let mut members = Vec::new();
        self.skip_whitespace();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(Value::Object(members));
        }
        loop {
            self.skip_whitespace();
            if self.peek() != Some(b'"') {
                return Err(self.error("expected a string key"));
            }
            let key = self.string()?;
            self.skip_whitespace();
            if self.peek() != Some(b':') {
                return Err(self.error("expected ':' after a key"));
            }
            self.pos += 1;
            self.skip_whitespace();
            let value = self.value(depth + 1)?;
            members.push((key, value));
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Value::Object(members));
                }
                _ => return Err(self.error("expected ',' or '}' in an object")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, FileDataError> {
        self.pos += 1; // '['
        let mut items = Vec::new();
        self.skip_whitespace();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.skip_whitespace();
            items.push(self.value(depth + 1)?);
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Value::Array(items));
                }
                _ => return Err(self.error("expected ',' or ']' in an array")),
            }
        }
    }

    fn number(&mut self) -> Result<Value, FileDataError> {
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(self.error("expected a digit")),
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            self.required_digits()?;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            self.required_digits()?;
        }
        Ok(Value::Number)
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
    }

    fn required_digits(&mut self) -> Result<(), FileDataError> {
        let start = self.pos;
        self.digits();
        if self.pos == start {
            Err(self.error("expected a digit"))
        } else {
            Ok(())
        }
    }

    /// A string starting at the opening quote, decoded to bytes.
    fn string(&mut self) -> Result<Vec<u8>, FileDataError> {
        self.pos += 1; // '"'
        let mut out = Vec::new();
        loop {
            let start = self.pos;
            while let Some(byte) = self.peek() {
                if byte == b'"' || byte == b'\\' || byte < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            out.extend_from_slice(&self.bytes[start..self.pos]);
            match self.peek() {
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => self.escape(&mut out)?,
                Some(_) => return Err(self.error("a control character must be escaped")),
                None => return Err(self.error("unterminated string")),
            }
        }
    }

    /// One escape sequence starting at the backslash, appended to `out`.
    fn escape(&mut self, out: &mut Vec<u8>) -> Result<(), FileDataError> {
        self.pos += 1; // '\\'
        let Some(kind) = self.peek() else {
            return Err(self.error("unterminated string"));
        };
        self.pos += 1;
        let simple = match kind {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => return self.unicode_escape(out),
            _ => {
                self.pos -= 1;
                return Err(self.error("unknown escape sequence"));
            }
        };
        out.push(simple);
        Ok(())
    }

    /// The four hex digits after `\u` (and a low surrogate's escape after a high one).
    fn unicode_escape(&mut self, out: &mut Vec<u8>) -> Result<(), FileDataError> {
        let unit = self.hex4()?;
        let code = match unit {
            0xD800..=0xDBFF => {
                let after_high = self.pos;
                let low = if self.bytes[self.pos..].starts_with(b"\\u") {
                    self.pos += 2;
                    Some(self.hex4()?)
                } else {
                    None
                };
                match low {
                    Some(low @ 0xDC00..=0xDFFF) => {
                        0x10000 + ((u32::from(unit) - 0xD800) << 10) + (u32::from(low) - 0xDC00)
                    }
                    _ => {
                        self.pos = after_high;
                        return Err(self.error(
                            "a lone high surrogate escape cannot stand for any byte or character",
                        ));
                    }
                }
            }
            0xDC80..=0xDCFF => {
                // Python's surrogateescape: U+DC80..U+DCFF stands for byte 0x80..0xFF.
                out.push((unit & 0xFF) as u8);
                return Ok(());
            }
            0xDC00..=0xDFFF => {
                return Err(self.error(
                    "a lone low surrogate escape outside U+DC80..U+DCFF cannot stand for a byte",
                ));
            }
            other => u32::from(other),
        };
        match char::from_u32(code) {
            Some(ch) => {
                let mut buf = [0u8; 4];
                out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                Ok(())
            }
            None => Err(self.error("an escape that is not a Unicode scalar value")),
        }
    }

    fn hex4(&mut self) -> Result<u16, FileDataError> {
        let Some(digits) = self.bytes.get(self.pos..self.pos + 4) else {
            return Err(self.error("expected four hex digits after \\u"));
        };
        let mut unit: u16 = 0;
        for &digit in digits {
            let value = match digit {
                b'0'..=b'9' => digit - b'0',
                b'a'..=b'f' => digit - b'a' + 10,
                b'A'..=b'F' => digit - b'A' + 10,
                _ => return Err(self.error("expected four hex digits after \\u")),
            };
            unit = (unit << 4) | u16::from(value);
        }
        self.pos += 4;
        Ok(unit)
    }
}

#[cfg(test)]
mod tests {
    use super::{Value, parse};

    fn string(json: &str) -> Vec<u8> {
        match parse(json) {
            Ok(Value::Str(bytes)) => bytes,
            other => panic!("not a string: {other:?}"),
        }
    }

    #[test]
    fn escapes_decode_as_json_says() {
        assert_eq!(string(r#""a\"\\\/\b\f\n\r\t""#), b"a\"\\/\x08\x0c\n\r\t");
        assert_eq!(string(r#""\u00e9\u0000""#), "é\0".as_bytes());
        assert_eq!(string(r#""\ud83d\ude00""#), "😀".as_bytes());
        assert_eq!(string("\"raw é 😀\""), "raw é 😀".as_bytes());
    }

    #[test]
    fn lone_surrogateescape_escapes_become_bytes() {
        assert_eq!(string(r#""\udc89PNG\udcff""#), b"\x89PNG\xff");
        // A pair whose low half is in the surrogateescape range is still a pair.
        assert_eq!(string(r#""\ud83d\udc80""#), "💀".as_bytes());
        // A real character followed by an escaped byte.
        assert_eq!(string(r#""\ud83d\udc80\udc80""#), b"\xf0\x9f\x92\x80\x80");
    }

    #[test]
    fn other_lone_surrogates_and_bad_syntax_are_refused() {
        for bad in [
            r#""\ud83d""#,
            r#""\ud83dx""#,
            r#""\udc10""#,
            r#""\ude00""#,
            "\"a\nb\"",
            r#""\x""#,
            r#""\u12""#,
            r#"{"a" 1}"#,
            "[1,]",
            "[01]",
            "1.",
            "tru",
            "[1] x",
            "",
            "\"open",
        ] {
            assert!(parse(bad).is_err(), "accepted {bad:?}");
        }
    }

    #[test]
    fn deep_nesting_is_refused_not_overflowed() {
        let deep = "[".repeat(100_000);
        assert!(parse(&deep).is_err());
        let fine = format!("{}{}", "[".repeat(100), "]".repeat(100));
        assert!(parse(&fine).is_ok());
    }

    #[test]
    fn objects_keep_the_last_duplicate() {
        let value = parse(r#" {"a": 1, "b": [true, null, -1.5e3], "a": "x"} "#).ok();
        let last = value.as_ref().and_then(|v| v.get("a"));
        assert_eq!(last, Some(&Value::Str(b"x".to_vec())));
    }
}
