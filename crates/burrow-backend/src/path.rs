//! `VPath`: the one parsed, normalised, confined form of every path a backend sees.

use std::fmt;

use compact_str::CompactString;

use crate::error::{Error, ErrorKind, Result};

/// The longest path accepted, in bytes.
pub const MAX_PATH_BYTES: usize = 4096;
/// The longest path segment accepted, in bytes.
pub const MAX_SEGMENT_BYTES: usize = 255;

/// An absolute, normalised virtual path.
///
/// # Behavior
///
/// - Always starts with "/", segments separated by "/"; "/" is the root.
/// - "." and empty segments are removed; ".." is resolved lexically and
///   **refused (InvalidPath) if it would climb above "/"**.
/// - A ".." inside a name ("foo..bar.txt", "[...slug]") is an ordinary name.
/// - NUL is refused. A relative input is taken relative to "/". A trailing "/"
///   is ignored. Backslash, "~" and drive letters are ordinary characters.
/// - At most 4096 bytes in all and 255 per segment.
/// - Refusals name the offending input only in a cut-down, printable form.
///
/// Stored as a [`CompactString`]: paths of up to 24 bytes live inline, with
/// no allocation to create, clone or drop one. Paths are made on every call
/// (parsed from input, re-based by a composite for its mounts), and most
/// are short.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VPath(CompactString);

impl VPath {
    /// The root, "/".
    pub fn root() -> Self {
        VPath(CompactString::const_new("/"))
    }

    /// Parses and normalises `input`.
    pub fn parse(input: &str) -> Result<Self> {
        if input.contains('\0') {
            return Err(invalid(input, "contains a NUL character", "remove it"));
        }
        if input.len() > MAX_PATH_BYTES {
            return Err(invalid(
                input,
                "is longer than 4096 bytes",
                "use a shorter path",
            ));
        }
        let mut segments: Vec<&str> = Vec::new();
        for segment in input.split('/') {
            match segment {
                "" | "." => {}
                ".." => {
                    if segments.pop().is_none() {
                        return Err(invalid(
                            input,
                            "climbs above the root",
                            "use a path inside the workspace",
                        ));
                    }
                }
                name => {
                    if name.len() > MAX_SEGMENT_BYTES {
                        return Err(invalid(
                            input,
                            "has a name longer than 255 bytes",
                            "shorten that name",
                        ));
                    }
                    segments.push(name);
                }
            }
        }
        let mut out = CompactString::with_capacity(input.len() + 1);
        for segment in &segments {
            out.push('/');
            out.push_str(segment);
        }
        if out.is_empty() {
            out.push('/');
        }
        Ok(VPath(out))
    }

    /// The path as a string, e.g. "/src/main.rs".
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// True for "/".
    pub fn is_root(&self) -> bool {
        self.as_str() == "/"
    }

    /// The last segment; empty for the root.
    pub fn name(&self) -> &str {
        match self.as_str().rfind('/') {
            Some(i) => &self.as_str()[i + 1..],
            None => self.as_str(),
        }
    }

    /// The parent directory; `None` for the root.
    pub fn parent(&self) -> Option<VPath> {
        if self.is_root() {
            return None;
        }
        match self.as_str().rfind('/') {
            Some(0) | None => Some(VPath::root()),
            Some(i) => Some(VPath(CompactString::from(&self.as_str()[..i]))),
        }
    }

    /// Every ancestor from the root down to the parent (excluding `self`).
    pub fn ancestors(&self) -> Vec<VPath> {
        let mut out = Vec::new();
        let mut cur = self.parent();
        while let Some(p) = cur {
            cur = p.parent();
            out.push(p);
        }
        out.reverse();
        out
    }

    /// The segments, root first; empty for the root.
    pub fn segments(&self) -> impl Iterator<Item = &str> {
        self.0.split('/').filter(|s| !s.is_empty())
    }

    /// Appends a relative path (which is parsed, and may not climb above `self`'s root).
    pub fn join(&self, rel: &str) -> Result<VPath> {
        if self.is_root() {
            return VPath::parse(rel);
        }
        VPath::parse(&format!("{}/{}", self.0, rel))
    }

    /// True when `self` is `ancestor` or lies beneath it.
    pub fn starts_with(&self, ancestor: &VPath) -> bool {
        ancestor.is_root()
            || self.0 == ancestor.0
            || (self.as_str().starts_with(ancestor.as_str())
                && self.0.as_bytes().get(ancestor.0.len()) == Some(&b'/'))
    }

    /// The path relative to `ancestor`, without a leading "/" ("" when equal);
    /// `None` when `self` is not beneath `ancestor`.
    pub fn relative_to(&self, ancestor: &VPath) -> Option<&str> {
        if !self.starts_with(ancestor) {
            return None;
        }
        if ancestor.is_root() {
            return Some(&self.as_str()[1..]);
        }
        Some(self.as_str()[ancestor.0.len()..].trim_start_matches('/'))
    }

    /// The same path seen from a mount at `prefix`: "/m/a" under "/m" becomes "/a".
    pub fn strip_prefix(&self, prefix: &VPath) -> Option<VPath> {
        if prefix.is_root() {
            return Some(self.clone());
        }
        // One comparison and one copy: this runs on every call a composite routes to a mount.
        let rest = self.as_str().strip_prefix(prefix.as_str())?;
        if rest.is_empty() {
            Some(VPath::root())
        } else if rest.starts_with('/') {
            Some(VPath(CompactString::from(rest)))
        } else {
            None
        }
    }

    /// The path `self` would have if its root were mounted at `prefix`.
    pub fn under_prefix(&self, prefix: &VPath) -> VPath {
        if prefix.is_root() {
            return self.clone();
        }
        if self.is_root() {
            return prefix.clone();
        }
        let mut out = CompactString::with_capacity(prefix.0.len() + self.0.len());
        out.push_str(&prefix.0);
        out.push_str(&self.0);
        VPath(out)
    }
}

/// A refusal for `input`, showing at most 100 characters of it, control characters escaped.
fn invalid(input: &str, why: &str, fix: &str) -> Error {
    let cut: String = input.chars().take(100).collect();
    let ellipsis = if input.chars().count() > 100 {
        "..."
    } else {
        ""
    };
    Error::refusal(
        ErrorKind::InvalidPath,
        format!("the path {:#}{ellipsis} {why}; {fix}.", crate::shown(&cut)),
    )
}

impl fmt::Display for VPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for VPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "VPath({:?})", self.0)
    }
}

impl AsRef<str> for VPath {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl std::str::FromStr for VPath {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        VPath::parse(s)
    }
}

impl serde::Serialize for VPath {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for VPath {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        VPath::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises() {
        for (input, want) in [
            ("", "/"),
            ("/", "/"),
            ("a", "/a"),
            ("/a/./b/", "/a/b"),
            ("//a//b", "/a/b"),
            ("/a/../b", "/b"),
            ("foo..bar.txt", "/foo..bar.txt"),
            ("/[...slug]/x", "/[...slug]/x"),
            ("C:\\x\\y", "/C:\\x\\y"),
            ("~/notes", "/~/notes"),
        ] {
            assert_eq!(VPath::parse(input).unwrap().as_str(), want, "{input}");
        }
    }

    #[test]
    fn refuses() {
        for input in ["..", "/../etc/passwd", "a/../../b", "a\0b"] {
            let err = VPath::parse(input).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidPath, "{input}");
        }
        let long = "a".repeat(256);
        assert_eq!(
            VPath::parse(&long).unwrap_err().kind(),
            ErrorKind::InvalidPath
        );
        let message = VPath::parse("a\n\0").unwrap_err().message().to_owned();
        assert!(message.contains(r#""a\n\u{0}""#), "{message}");
        let deep = "ab/".repeat(1400);
        assert_eq!(
            VPath::parse(&deep).unwrap_err().kind(),
            ErrorKind::InvalidPath
        );
    }

    #[test]
    fn relations() {
        let p = VPath::parse("/m/a/b").unwrap();
        let m = VPath::parse("/m").unwrap();
        assert!(p.starts_with(&m));
        assert!(!VPath::parse("/mm/a").unwrap().starts_with(&m));
        assert_eq!(p.relative_to(&m), Some("a/b"));
        assert_eq!(p.strip_prefix(&m).unwrap().as_str(), "/a/b");
        assert_eq!(
            VPath::parse("/a/b").unwrap().under_prefix(&m).as_str(),
            "/m/a/b"
        );
        assert_eq!(p.parent().unwrap().as_str(), "/m/a");
        assert_eq!(p.name(), "b");
        assert_eq!(
            p.ancestors().iter().map(VPath::as_str).collect::<Vec<_>>(),
            ["/", "/m", "/m/a"]
        );
    }
}
