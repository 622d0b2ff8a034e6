//! Object keys: how a (tenant, virtual path) becomes `{root}/{tenant}/{path}`, and back, with every name escaped so no name can reach another tenant's key.
//!
//! # The escaping
//!
//! Each name (a tenant, a path segment, an effect key) becomes exactly one
//! key segment. The bytes `object_store` reserves or advises against (ASCII
//! control characters, `/`, `%`, `\`, `{`, `}`, `[`, `]`, `^`, `` ` ``, `"`,
//! `<`, `>`, `~`, `#`, `|`, `*`, `?`), and `:` (a segment such as "C:" is a
//! drive letter to the file URLs `LocalFileSystem` maps keys through), are
//! written as `%XX` (upper-case hex); every other byte, non-ASCII UTF-8 included, is kept as it is, so a
//! 255-byte Unicode name stays 255 bytes (a host file system's name limit)
//! instead of tripling. Because `%` itself is escaped, decoding is exact
//! and two names never share a segment; because `/` is escaped, one name
//! never spans two segments.
//!
//! A tenant segment also escapes a leading `.` (`%2E`), and the empty
//! tenant is the segment `%` (which escaping never produces). So no tenant
//! is ever "." or "..", and none can be [`EFFECTS_DIR`], the sibling of the
//! tenants where effect records live: outside every tenant's file space, so
//! they never show in a listing.
//!
//! Path segments need no such rule: `VPath` has already removed "." and
//! "..", and a leading "." in a file name (".env") is an ordinary name.

use burrow_backend::{Error, ErrorKind, Result, VPath};
use object_store::path::Path;
use sha2::{Digest, Sha256};

/// The key segment, beside the tenants, beneath which effect records live.
pub const EFFECTS_DIR: &str = ".burrow-effects";

/// The last segment of a made directory's marker object, `{dir}/%dir` (ADR
/// 0221): escaping never produces it ("%di" is no escape), so it can never be
/// a file's key, and listings, which decode every segment, never show it.
pub const DIR_MARKER: &str = "%dir";

/// The longest escaped effect key kept as it is; longer keys are hashed.
const MAX_EFFECT_SEGMENT: usize = 200;

/// True for the ASCII bytes a segment writes as `%XX`.
fn reserved(b: u8) -> bool {
    b.is_ascii_control()
        || matches!(
            b,
            b'/' | b'%'
                | b':'
                | b'\\'
                | b'{'
                | b'}'
                | b'['
                | b']'
                | b'^'
                | b'`'
                | b'"'
                | b'<'
                | b'>'
                | b'~'
                | b'#'
                | b'|'
                | b'*'
                | b'?'
        )
}

fn push_escaped(out: &mut String, b: u8) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    out.push('%');
    out.push(char::from(HEX[usize::from(b >> 4)]));
    out.push(char::from(HEX[usize::from(b & 0xf)]));
}

/// `name` as one key segment (see the module docs).
pub fn escape(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    escape_into(&mut out, name);
    out
}

/// Appends `name`, escaped, to `out`.
fn escape_into(out: &mut String, name: &str) {
    if !name.bytes().any(reserved) {
        out.push_str(name);
        return;
    }
    for ch in name.chars() {
        if ch.is_ascii() && reserved(ch as u8) {
            push_escaped(out, ch as u8);
        } else {
            out.push(ch);
        }
    }
}

/// The segment of `tenant`: escaped, a leading "." escaped too, "" as "%".
pub fn escape_tenant(tenant: &str) -> String {
    if tenant.is_empty() {
        return "%".to_owned();
    }
    match tenant.strip_prefix('.') {
        Some(rest) => format!("%2E{}", escape(rest)),
        None => escape(tenant),
    }
}

/// The name a segment escapes; `None` for a segment escaping never produces
/// (an object some other program put beneath the prefix).
pub fn unescape(segment: &str) -> Option<String> {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let hi = char::from(hex[0]).to_digit(16)?;
            let lo = char::from(hex[1]).to_digit(16)?;
            let b = u8::try_from(hi * 16 + lo).ok()?;
            if !reserved(b) || hex.iter().any(u8::is_ascii_lowercase) {
                return None;
            }
            out.push(b);
            i += 3;
        } else {
            if bytes[i].is_ascii() && reserved(bytes[i]) {
                return None;
            }
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The keys of one backend: a root prefix, then a segment per tenant.
#[derive(Debug, Clone)]
pub struct Keys {
    /// The root prefix, without a trailing "/" ("" for the bucket's root).
    root: String,
    /// The longest key the store accepts, in bytes.
    max_key_bytes: Option<usize>,
    /// The longest key segment the store accepts, in bytes.
    max_segment_bytes: Option<usize>,
}

impl Keys {
    /// Keys beneath `root` (an object_store path such as "agents/prod"; "" for none).
    pub fn new(
        root: &str,
        max_key_bytes: Option<usize>,
        max_segment_bytes: Option<usize>,
    ) -> Result<Keys> {
        let parsed = Path::parse(root).map_err(|_| {
            Error::invalid_argument(
                "the root prefix is not a valid object key prefix; use \"/\"-separated names without empty, \".\" or \"..\" segments.",
            )
        })?;
        Ok(Keys {
            root: parsed.as_ref().to_owned(),
            max_key_bytes,
            max_segment_bytes,
        })
    }

    /// Keys at the bucket's root, with no limits.
    pub fn unprefixed() -> Keys {
        Keys {
            root: String::new(),
            max_key_bytes: None,
            max_segment_bytes: None,
        }
    }

    /// The root prefix ("" for none).
    pub fn root(&self) -> &str {
        &self.root
    }

    /// The key prefix of `tenant`'s file space, without a trailing "/".
    pub fn tenant_prefix(&self, tenant: &str) -> String {
        self.join(&escape_tenant(tenant))
    }

    fn join(&self, rest: &str) -> String {
        if self.root.is_empty() {
            rest.to_owned()
        } else {
            format!("{}/{rest}", self.root)
        }
    }

    /// The key of `path` (the tenant's prefix itself for "/").
    pub fn key(&self, tenant: &str, path: &VPath) -> Result<Path> {
        let mut key = self.tenant_prefix(tenant);
        key.reserve(path.as_str().len());
        for segment in path.segments() {
            key.push('/');
            let start = key.len();
            escape_into(&mut key, segment);
            let escaped = key.len() - start;
            if let Some(max) = self.max_segment_bytes
                && escaped > max
            {
                return Err(Error::refusal(
                    ErrorKind::InvalidPath,
                    format!(
                        "a name in {path} is {escaped} bytes once escaped for this object store, which allows {max}; use a shorter name."
                    ),
                ));
            }
        }
        if let Some(max) = self.max_key_bytes
            && key.len() > max
        {
            return Err(Error::refusal(
                ErrorKind::InvalidPath,
                format!(
                    "{path} is too long for this object store: its key would be {} bytes, and the store allows {max}; use a shorter path.",
                    key.len()
                ),
            ));
        }
        parse(&key)
    }

    /// The key of the marker object of the made directory `dir` of `tenant`:
    /// `{dir's key}/%dir`. InvalidPath when it passes the store's key limit.
    pub fn marker(&self, tenant: &str, dir: &VPath) -> Result<Path> {
        let key = self.key(tenant, dir)?;
        let marker = format!("{}/{DIR_MARKER}", key.as_ref());
        if let Some(max) = self.max_key_bytes
            && marker.len() > max
        {
            return Err(Error::refusal(
                ErrorKind::InvalidPath,
                format!(
                    "{dir} is too long for a directory on this object store: its marker's key would be {} bytes, and the store allows {max}; use a shorter path.",
                    marker.len()
                ),
            ));
        }
        parse(&marker)
    }

    /// True when `key` is a made directory's marker object.
    pub fn is_marker(key: &Path) -> bool {
        key.as_ref()
            .rsplit('/')
            .next()
            .is_some_and(|last| last == DIR_MARKER)
    }

    /// The virtual path of an object key beneath `tenant`'s prefix; `None`
    /// for a key that is not beneath it or that escaping never produces.
    pub fn path_of(&self, tenant_prefix: &str, key: &Path) -> Option<VPath> {
        let rest = key
            .as_ref()
            .strip_prefix(tenant_prefix)?
            .strip_prefix('/')?;
        let mut out = String::with_capacity(rest.len() + 1);
        for segment in rest.split('/') {
            let name = unescape(segment)?;
            if name.is_empty()
                || name == "."
                || name == ".."
                || name.contains('/')
                || name.contains('\0')
            {
                return None;
            }
            out.push('/');
            out.push_str(&name);
        }
        VPath::parse(&out).ok()
    }

    /// The key of the record of `effect_key` for `tenant`.
    pub fn effect(&self, tenant: &str, effect_key: &str) -> Result<Path> {
        let mut segment = escape_tenant(effect_key);
        if segment.len() > MAX_EFFECT_SEGMENT {
            // "%h" never comes out of escaping, so a hashed name cannot meet a literal one.
            let digest = Sha256::digest(effect_key.as_bytes());
            segment = format!("%h{}", hex(&digest));
        }
        parse(&self.join(&format!(
            "{EFFECTS_DIR}/{}/{segment}",
            escape_tenant(tenant)
        )))
    }
}

impl Keys {
    /// The key of a short-lived probe object beside the effect records
    /// (`{root}/.burrow-effects/.clock/{name}`), put to read the store's clock;
    /// no tenant's records can live there (a tenant's leading "." is escaped).
    pub fn clock_probe(&self, name: &str) -> Result<Path> {
        parse(&self.join(&format!("{EFFECTS_DIR}/.clock/{}", escape_tenant(name))))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Parses a key this module built; a refusal from object_store here is a bug, reported as a failure.
fn parse(key: &str) -> Result<Path> {
    Path::parse(key).map_err(|e| Error::failure("an object key could not be formed", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_round_trips() {
        for name in [
            "plain.txt",
            "50% off",
            "%20",
            "a/b",
            "[x]",
            "new\nline",
            "é🦀",
            "~",
            "#1",
            "",
            "\u{7f}",
        ] {
            let e = escape(name);
            assert!(!e.contains('/'), "{e}");
            assert_eq!(unescape(&e).as_deref(), Some(name), "{name:?} -> {e:?}");
        }
        assert_eq!(escape("€".repeat(85).as_str()).len(), 255);
    }

    #[test]
    fn foreign_segments_do_not_decode() {
        for segment in ["%zz", "%2", "%41", "a%2fb", "a*b"] {
            assert_eq!(unescape(segment), None, "{segment}");
        }
    }

    #[test]
    fn tenants_never_collide_with_effects_or_dots() {
        let keys = Keys::new("root", None, None).unwrap();
        assert_eq!(
            keys.tenant_prefix(".burrow-effects"),
            "root/%2Eburrow-effects"
        );
        assert_eq!(keys.tenant_prefix(".."), "root/%2E.");
        assert_eq!(keys.tenant_prefix(""), "root/%");
        assert_eq!(keys.tenant_prefix("a/b"), "root/a%2Fb");
        assert!(Path::parse(keys.tenant_prefix("..")).is_ok());
    }

    #[test]
    fn keys_round_trip_to_paths() {
        let keys = Keys::new("", None, None).unwrap();
        let path = VPath::parse("/a b/50% off/[x]/é").unwrap();
        let key = keys.key("t", &path).unwrap();
        assert_eq!(key.as_ref(), "t/a b/50%25 off/%5Bx%5D/é");
        assert_eq!(keys.path_of("t", &key), Some(path));
        assert_eq!(keys.path_of("t", &Path::parse("u/x").unwrap()), None);
    }

    #[test]
    fn limits_refuse_long_keys() {
        let keys = Keys::new("r", Some(20), Some(5)).unwrap();
        let err = keys
            .key("t", &VPath::parse("/abcdef").unwrap())
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidPath);
        let err = keys
            .key("t", &VPath::parse("/abc/abc/abc/abc/abc").unwrap())
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidPath);
        assert!(keys.key("t", &VPath::parse("/abc").unwrap()).is_ok());
    }

    #[test]
    fn markers_never_decode_to_a_file() {
        let keys = Keys::new("r", None, None).unwrap();
        let dir = VPath::parse("/a/%dir").unwrap();
        let marker = keys.marker("t", &dir).unwrap();
        assert_eq!(marker.as_ref(), "r/t/a/%25dir/%dir");
        assert!(Keys::is_marker(&marker));
        assert!(!Keys::is_marker(&keys.key("t", &dir).unwrap()));
        assert_eq!(keys.path_of("r/t", &marker), None);
        assert_eq!(unescape(DIR_MARKER), None);
        let tight = Keys::new("r", Some(10), None).unwrap();
        let err = tight
            .marker("t", &VPath::parse("/abcd").unwrap())
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidPath);
    }

    #[test]
    fn long_effect_keys_are_hashed() {
        let keys = Keys::new("", None, None).unwrap();
        let short = keys.effect("t", "k1").unwrap();
        assert_eq!(short.as_ref(), ".burrow-effects/t/k1");
        let long = keys.effect("t", &"k".repeat(300)).unwrap();
        assert!(long.as_ref().starts_with(".burrow-effects/t/%h"));
        assert!(long.as_ref().len() < 100);
    }
}
