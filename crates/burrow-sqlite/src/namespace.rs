//! How a namespace (a path of segments) is stored as one TEXT column so that prefixes are index ranges.
//!
//! Each segment is escaped ("%" -> "%25", "/" -> "%2F") and followed by "/":
//! `["memories", "user"]` is `"memories/user/"`, the empty namespace is `""`.
//! Because every encoded namespace ends with "/", the items of exactly one
//! namespace are `namespace = ?`, and a namespace with all its descendants is
//! the range `[enc, enc without its last "/" + "0")`: `"memories/user/"`
//! covers `"memories/user/x/"` but never `"memories/users/"`. See ADR 0073.

use burrow_backend::{Error, Result};

/// The longest namespace segment accepted, in bytes.
pub const MAX_SEGMENT_BYTES: usize = 255;
/// The most segments a namespace may have.
pub const MAX_DEPTH: usize = 32;

/// Encodes `segments`, refusing empty or oversized ones.
pub(crate) fn encode<S: AsRef<str>>(segments: &[S]) -> Result<String> {
    if segments.len() > MAX_DEPTH {
        return Err(Error::invalid_argument(format!(
            "a namespace may have at most {MAX_DEPTH} segments; use a shorter namespace."
        )));
    }
    let mut out = String::new();
    for segment in segments {
        let segment = segment.as_ref();
        if segment.is_empty() {
            return Err(Error::invalid_argument(
                "a namespace segment is empty; give every segment a name.",
            ));
        }
        if segment.len() > MAX_SEGMENT_BYTES {
            return Err(Error::invalid_argument(format!(
                "a namespace segment is longer than {MAX_SEGMENT_BYTES} bytes; use a shorter name."
            )));
        }
        for c in segment.chars() {
            match c {
                '%' => out.push_str("%25"),
                '/' => out.push_str("%2F"),
                c => out.push(c),
            }
        }
        out.push('/');
    }
    Ok(out)
}

/// Decodes a stored namespace back into its segments.
pub(crate) fn decode(encoded: &str) -> Result<Vec<String>> {
    let malformed = || Error::failure_msg("the SQLite store holds a malformed namespace.");
    let Some(body) = encoded.strip_suffix('/') else {
        return if encoded.is_empty() {
            Ok(Vec::new())
        } else {
            Err(malformed())
        };
    };
    body.split('/')
        .map(|segment| {
            let mut out = String::with_capacity(segment.len());
            let mut rest = segment;
            while let Some(i) = rest.find('%') {
                out.push_str(&rest[..i]);
                match rest.get(i..i + 3) {
                    Some("%25") => out.push('%'),
                    Some("%2F") => out.push('/'),
                    _ => return Err(malformed()),
                }
                rest = &rest[i + 3..];
            }
            out.push_str(rest);
            Ok(out)
        })
        .collect()
}

/// The exclusive upper bound of the range of strings that start with `prefix`,
/// or `None` when no string bounds them (the prefix is empty or all U+10FFFF).
///
/// UTF-8 byte order is code point order, so bumping the last code point that
/// can be bumped gives the least string greater than every extension.
pub(crate) fn upper_bound(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let next = match last {
            '\u{D7FF}' => Some('\u{E000}'),
            c => char::from_u32(c as u32 + 1),
        };
        if let Some(next) = next {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for ns in [
            vec![],
            vec!["a"],
            vec!["memories", "user"],
            vec!["a/b", "50%", "%2F"],
        ] {
            let enc = encode(&ns).unwrap();
            assert_eq!(decode(&enc).unwrap(), ns, "{enc}");
        }
        assert_eq!(encode(&["a/b", "c"]).unwrap(), "a%2Fb/c/");
        assert!(encode(&["a", ""]).is_err());
    }

    #[test]
    fn bounds() {
        assert_eq!(upper_bound("ab").as_deref(), Some("ac"));
        assert_eq!(upper_bound("a/").as_deref(), Some("a0"));
        assert_eq!(upper_bound("a\u{10FFFF}").as_deref(), Some("b"));
        assert_eq!(upper_bound("\u{D7FF}").as_deref(), Some("\u{E000}"));
        assert_eq!(upper_bound(""), None);
    }
}
