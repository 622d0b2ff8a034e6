//! Translating between a mounted backend's paths and the composite's: result paths, refusal messages, glob patterns.

use burrow_backend::{Error, VPath};

/// The path `inner` of a backend mounted at `prefix`, as the composite shows it.
pub(crate) fn reprefix(prefix: &VPath, inner: &str) -> String {
    if prefix.is_root() {
        inner.to_owned()
    } else if inner == "/" || inner.is_empty() {
        prefix.as_str().to_owned()
    } else {
        let mut out = String::with_capacity(prefix.as_str().len() + inner.len());
        out.push_str(prefix.as_str());
        out.push_str(inner);
        out
    }
}

/// A mounted backend's error with the paths its message names re-prefixed.
///
/// An error built with a path field ([`Error::path`]) has that field
/// re-prefixed and its message rendered from it, refusal or failure, source
/// kept. Only for an error without one is the text rewritten, as a fallback,
/// and only for refusals (they carry no source, so nothing is lost by
/// rebuilding them); a failure without a path field passes through unchanged.
/// The paths the fallback rewrites are the one the call was about (`inner`)
/// and its ancestors, wherever they stand as whole words: "/notes.md does not
/// exist" from a mount at "/memories" becomes "/memories/notes.md does not exist".
pub(crate) fn error(err: Error, prefix: &VPath, inner: &VPath) -> Error {
    if prefix.is_root() {
        return err;
    }
    if err.path().is_some() {
        return err.map_path(|path| path.under_prefix(prefix));
    }
    if !err.is_refusal() {
        return err;
    }
    let ancestors = inner.ancestors();
    let mut candidates: Vec<&str> = Vec::with_capacity(ancestors.len() + 1);
    candidates.push(inner.as_str());
    candidates.extend(ancestors.iter().rev().map(VPath::as_str));
    let message = reprefix_words(err.message(), prefix, &candidates);
    Error::refusal(err.kind(), message)
}

/// `message` with each whole-word occurrence of a candidate path prefixed.
/// Candidates are tried longest first.
fn reprefix_words(message: &str, prefix: &VPath, candidates: &[&str]) -> String {
    let mut out = String::with_capacity(message.len() + 2 * prefix.as_str().len());
    let mut i = 0;
    let bytes = message.as_bytes();
    while i < message.len() {
        let starts_word = i == 0 || matches!(bytes[i - 1], b' ' | b'"' | b'\'' | b'(' | b'`');
        if bytes[i] == b'/' && starts_word {
            let rest = &message[i..];
            if let Some(hit) = candidates
                .iter()
                .find(|c| rest.starts_with(**c) && ends_word(&rest[c.len()..]))
            {
                out.push_str(&reprefix(prefix, hit));
                i += hit.len();
                continue;
            }
        }
        // Copy one character (not one byte): messages may hold any UTF-8.
        let ch_len = message[i..].chars().next().map_or(1, char::len_utf8);
        out.push_str(&message[i..i + ch_len]);
        i += ch_len;
    }
    out
}

/// True when `after` (what follows a candidate path) ends that path as a word.
fn ends_word(after: &str) -> bool {
    let mut chars = after.chars();
    match chars.next() {
        None => true,
        Some(' ' | '"' | '\'' | ')' | ',' | ';' | ':' | '`' | '\n') => true,
        Some('.') => matches!(chars.next(), None | Some(' ' | '\n')),
        Some(_) => false,
    }
}

/// How a glob pattern (or a grep `include`) relative to a search root must be
/// given to a backend mounted at `rel_prefix` beneath that root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ChildPattern {
    /// Give the pattern unchanged: it has no "/" and so matches the file name at any depth.
    Same,
    /// Give this pattern instead (an equivalent one, relative to the mount's root).
    Rewritten(String),
    /// No file of the mount can match: skip it.
    Skip,
    /// Ask the mount for every file and match the composite-relative path here.
    Everything,
}

/// True when a pattern segment holds no glob syntax.
fn is_literal(segment: &str) -> bool {
    !segment.contains(['*', '?', '[', ']', '{', '}', '\\'])
}

/// How to run `pattern` (relative to the search root) on a mount whose
/// prefix is `rel_prefix` relative to that root (no leading "/", not empty).
///
/// - No "/" in the pattern: it matches names at any depth, the same in the mount.
/// - "**/NAME" where NAME has no "/": the same as "NAME".
/// - Leading literal segments that spell `rel_prefix`: strip them and anchor
///   the rest at the mount's root ("m/src/*.rs" for a mount at "m" becomes
///   "/src/*.rs"); a literal segment that differs means no file can match.
/// - Anything else: ask for every file and filter here.
///
/// Every answer but `Everything` is exact: the mount's matches are the
/// composite's, so no filtering is needed afterwards.
pub(crate) fn child_pattern(pattern: &str, rel_prefix: &str) -> ChildPattern {
    if !pattern.contains('/') {
        return ChildPattern::Same;
    }
    if let Some(name) = pattern.strip_prefix("**/")
        && !name.contains('/')
        && !name.is_empty()
    {
        return ChildPattern::Rewritten(name.to_owned());
    }
    let body = pattern.trim_start_matches('/');
    if body.split('/').any(str::is_empty) {
        // "a//b" or "a/": leave such shapes to the composite's own matcher.
        return ChildPattern::Everything;
    }
    let segments: Vec<&str> = body.split('/').filter(|s| *s != ".").collect();
    let prefix: Vec<&str> = rel_prefix.split('/').filter(|s| !s.is_empty()).collect();
    for (i, want) in prefix.iter().enumerate() {
        match segments.get(i) {
            // A literal pattern shorter than the mount's depth names no file inside it.
            None => return ChildPattern::Skip,
            Some(seg) if !is_literal(seg) => return ChildPattern::Everything,
            Some(seg) if seg != want => return ChildPattern::Skip,
            Some(_) => {}
        }
    }
    if segments.len() == prefix.len() {
        // The pattern names the mount point itself, a directory: no file matches.
        return ChildPattern::Skip;
    }
    ChildPattern::Rewritten(format!("/{}", segments[prefix.len()..].join("/")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use burrow_backend::ErrorKind;

    fn p(s: &str) -> VPath {
        VPath::parse(s).unwrap()
    }

    #[test]
    fn reprefixes_paths() {
        assert_eq!(reprefix(&p("/m"), "/a"), "/m/a");
        assert_eq!(reprefix(&p("/m"), "/"), "/m");
        assert_eq!(reprefix(&VPath::root(), "/a"), "/a");
    }

    #[test]
    fn rewrites_refusal_messages() {
        let e = error(
            Error::not_found(p("/notes.md")),
            &p("/memories"),
            &p("/notes.md"),
        );
        assert_eq!(e.kind(), ErrorKind::NotFound);
        assert!(
            e.message().starts_with("/memories/notes.md does not exist"),
            "{}",
            e.message()
        );
        let e = error(Error::not_a_directory(p("/a")), &p("/m"), &p("/a/b"));
        assert_eq!(e.message(), "/m/a is a file, not a directory.");
        let e = error(
            Error::is_a_directory(VPath::root()),
            &p("/m"),
            &VPath::root(),
        );
        assert!(
            e.message().starts_with("/m is a directory"),
            "{}",
            e.message()
        );
        // A path that only begins like the candidate is left alone.
        let e = error(
            Error::invalid_argument("\"/ab\" and /a.txt differ from /a"),
            &p("/m"),
            &p("/a"),
        );
        assert_eq!(e.message(), "\"/ab\" and /a.txt differ from /m/a");
        let f = error(Error::failure_msg("/a broke"), &p("/m"), &p("/a"));
        assert_eq!(f.message(), "/a broke");
    }

    #[test]
    fn a_path_field_is_reprefixed_whatever_the_words() {
        // A path the text rewrite cannot find (not the call's path nor an
        // ancestor, and quoted because of its newline) is still re-prefixed.
        let odd = p("/x\ny");
        let e = error(
            Error::refusal_at(ErrorKind::Conflict, &odd, "someone else changed ", "."),
            &p("/m"),
            &p("/a"),
        );
        assert_eq!(e.path(), Some(&p("/m/x\ny")));
        assert_eq!(e.message(), "someone else changed \"/m/x\\ny\".");
        let source = std::io::Error::other("disk");
        let f = error(
            Error::failure("could not read /a", source).map_path(|q| q.clone()),
            &p("/m"),
            &p("/a"),
        );
        assert_eq!(f.message(), "could not read /a");
        let e = error(Error::not_found(p("/a")), &p("/m"), &p("/a"));
        assert!(e.message().starts_with("/m/a does not exist"));
    }

    #[test]
    fn child_patterns() {
        use ChildPattern::*;
        let cases = [
            ("*.rs", "m", Same),
            ("**/*.rs", "m", Rewritten("*.rs".into())),
            ("m/*.rs", "m", Rewritten("/*.rs".into())),
            ("/m/src/**", "m", Rewritten("/src/**".into())),
            ("./m/a", "m", Rewritten("/a".into())),
            ("x/*.rs", "m", Skip),
            ("m", "m/n", Same),
            ("m/n", "m/n", Skip),
            ("m/*", "m/n", Everything),
            ("*/n/*.rs", "m/n", Everything),
            ("**/src/*.rs", "m", Everything),
            ("m/x", "m/n", Skip),
            ("{m,n}/a", "m", Everything),
            ("m//a", "m", Everything),
            ("m/src/", "m", Everything),
        ];
        for (pattern, rel, want) in cases {
            assert_eq!(child_pattern(pattern, rel), want, "{pattern} at {rel}");
        }
    }
}
