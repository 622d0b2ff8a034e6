//! The mount table: which backend owns a path (longest prefix wins) and which directories the mount points imply.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use burrow_backend::{Backend, Error, ErrorKind, FileInfo, Result, VPath};

use crate::rewrite;

/// One backend of a composite: the default (prefix "/") or a mount.
pub(crate) struct Part {
    /// Where the backend's root appears in the composite tree.
    pub(crate) prefix: VPath,
    pub(crate) backend: Arc<dyn Backend>,
    /// Prepended to the backend's lock keys (empty for the default).
    pub(crate) lock_prefix: String,
    /// The mount points strictly beneath this part's prefix: its files there are shadowed.
    nested: Vec<VPath>,
}

impl Part {
    /// True for the default backend.
    pub(crate) fn is_default(&self) -> bool {
        self.prefix.is_root()
    }

    /// A path of the backend (`inner`) as the composite shows it.
    pub(crate) fn outer(&self, inner: &str) -> String {
        rewrite::reprefix(&self.prefix, inner)
    }

    /// A backend's entry as the composite shows it.
    pub(crate) fn outer_info(&self, mut info: FileInfo) -> FileInfo {
        if !self.is_default() {
            info.path = self.outer(&info.path);
        }
        info
    }

    /// A backend's error as the composite shows it: refusals name composite paths.
    pub(crate) fn outer_error(&self, err: Error, inner: &VPath) -> Error {
        if self.is_default() {
            err
        } else {
            rewrite::error(err, &self.prefix, inner)
        }
    }
}

/// The parts of a composite and the index that routes a path to one of them.
pub(crate) struct MountTable {
    /// `parts[0]` is the default; the rest are mounts in prefix order.
    pub(crate) parts: Vec<Part>,
    /// The mount prefixes grouped by length, longest first: the first group
    /// holding an ancestor-or-self of a path names the part that owns it.
    by_length: Vec<PrefixGroup>,
    /// Every strict ancestor of a mount point (the root included): directories
    /// that exist because a mount lies beneath them.
    implied: HashSet<String>,
    /// The length of the longest path in `implied`: a longer path is not in it.
    implied_max_len: usize,
}

impl MountTable {
    /// Builds the table, refusing a mount at "/" and two mounts at one prefix.
    pub(crate) fn new(
        default: Arc<dyn Backend>,
        mounts: Vec<(String, Arc<dyn Backend>)>,
    ) -> Result<Self> {
        let mut parsed: Vec<(VPath, Arc<dyn Backend>)> = Vec::with_capacity(mounts.len());
        for (raw, backend) in mounts {
            let prefix = VPath::parse(&raw)?;
            if prefix.is_root() {
                return Err(Error::refusal(
                    ErrorKind::InvalidArgument,
                    "a mount prefix cannot be \"/\"; make that backend the default instead.",
                ));
            }
            if parsed.iter().any(|(p, _)| *p == prefix) {
                return Err(Error::refusal(
                    ErrorKind::AlreadyExists,
                    format!(
                        "two backends are mounted at {prefix}; give each mount its own prefix."
                    ),
                ));
            }
            parsed.push((prefix, backend));
        }
        parsed.sort_by(|a, b| a.0.cmp(&b.0));
        let nested_in = |outer: &VPath| -> Vec<VPath> {
            parsed
                .iter()
                .map(|(p, _)| p.clone())
                .filter(|p| p != outer && p.starts_with(outer))
                .collect()
        };
        let mut parts = vec![Part {
            nested: nested_in(&VPath::root()),
            prefix: VPath::root(),
            backend: default,
            lock_prefix: String::new(),
        }];
        let mut implied = HashSet::new();
        for (prefix, backend) in &parsed {
            implied.extend(
                prefix
                    .ancestors()
                    .into_iter()
                    .map(|a| a.as_str().to_owned()),
            );
            parts.push(Part {
                lock_prefix: format!("mount:{prefix}\u{1f}"),
                nested: nested_in(prefix),
                prefix: prefix.clone(),
                backend: backend.clone(),
            });
        }
        let implied_max_len = implied.iter().map(String::len).max().unwrap_or(0);
        let by_length = PrefixGroup::index(&parts);
        Ok(MountTable {
            parts,
            by_length,
            implied,
            implied_max_len,
        })
    }

    /// The part that owns `path` (longest prefix wins) and the path as that part sees it.
    pub(crate) fn route<'p>(&self, path: &'p VPath) -> (usize, Cow<'p, VPath>) {
        let raw = path.as_str();
        for group in &self.by_length {
            if let Some(i) = group.owner_of(raw) {
                let prefix = &self.parts[i].prefix;
                let inner = path.strip_prefix(prefix).unwrap_or_else(VPath::root);
                return (i, Cow::Owned(inner));
            }
        }
        (0, Cow::Borrowed(path))
    }

    /// True when a mount lies strictly beneath `path`, which makes it a directory.
    #[inline]
    pub(crate) fn has_mount_below(&self, path: &VPath) -> bool {
        self.has_mount_below_str(path.as_str())
    }

    #[inline]
    fn has_mount_below_str(&self, path: &str) -> bool {
        // Most paths are longer than every implied directory: no hashing for them.
        path.len() <= self.implied_max_len && self.implied.contains(path)
    }

    /// True when `path` is a mount point.
    pub(crate) fn is_mount_point(&self, path: &VPath) -> bool {
        self.parts[1..].iter().any(|p| p.prefix == *path)
    }

    /// True when the mounts alone make `path` a directory: a mount point or an ancestor of one.
    pub(crate) fn is_dir_by_mounts(&self, path: &VPath) -> bool {
        self.has_mount_below(path) || self.is_mount_point(path)
    }

    /// True when the file at `path` (a composite path) reported by part `part` is visible:
    /// no deeper mount shadows it and no mount makes it a directory.
    ///
    /// `path` lies within the part's prefix (it came from that part), so it is
    /// shadowed exactly when it lies under a mount nested in the part.
    pub(crate) fn file_visible(&self, part: usize, path: &str) -> bool {
        let nested = &self.parts[part].nested;
        nested.is_empty()
            || (!nested.iter().any(|m| within(path, m.as_str())) && !self.has_mount_below_str(path))
    }

    /// The indexes of the mounts strictly beneath `dir`.
    pub(crate) fn mounts_below<'a>(&'a self, dir: &'a VPath) -> impl Iterator<Item = usize> + 'a {
        (1..self.parts.len()).filter(move |&i| {
            let prefix = &self.parts[i].prefix;
            prefix != dir && prefix.starts_with(dir)
        })
    }

    /// The children of `dir` that exist because a mount lies at or beneath them.
    pub(crate) fn mount_children(&self, dir: &VPath) -> BTreeSet<VPath> {
        self.mounts_below(dir)
            .filter_map(|i| {
                let rel = self.parts[i].prefix.relative_to(dir)?;
                let first = rel.split('/').next()?;
                dir.join(first).ok()
            })
            .collect()
    }
}

/// The mount prefixes of one length, sorted by fingerprint, each with its part's index.
///
/// Why grouped: a path has at most one ancestor-or-self of a given length,
/// so routing is one boundary check and one search per distinct prefix
/// length (usually one or two), not a string comparison with every mount.
/// Why the fingerprint (the prefix's last 8 bytes as an integer): mounts of
/// one length usually differ there ("/m0" .. "/m7", "/memories" vs
/// "/uploads"), so the search compares integers, and strings only on a hit.
struct PrefixGroup {
    len: usize,
    /// `fingerprints[k]` is the fingerprint of `prefixes[k].0`, ascending.
    fingerprints: Vec<u64>,
    prefixes: Vec<(String, usize)>,
}

impl PrefixGroup {
    /// The groups of `parts[1..]`, longest prefixes first.
    fn index(parts: &[Part]) -> Vec<PrefixGroup> {
        let mut mounts: Vec<(usize, u64, &str, usize)> = parts
            .iter()
            .enumerate()
            .skip(1)
            .map(|(i, part)| {
                let prefix = part.prefix.as_str();
                (prefix.len(), fingerprint(prefix), prefix, i)
            })
            .collect();
        mounts.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(b.2)));
        let mut groups: Vec<PrefixGroup> = Vec::new();
        for (len, print, prefix, i) in mounts {
            if groups.last().is_none_or(|g| g.len != len) {
                groups.push(PrefixGroup {
                    len,
                    fingerprints: Vec::new(),
                    prefixes: Vec::new(),
                });
            }
            if let Some(group) = groups.last_mut() {
                group.fingerprints.push(print);
                group.prefixes.push((prefix.to_owned(), i));
            }
        }
        groups
    }

    /// The part whose prefix is `path` or an ancestor of it, if one of this length is.
    #[inline]
    fn owner_of(&self, path: &str) -> Option<usize> {
        let head = match path.as_bytes().get(self.len) {
            None if path.len() == self.len => path,
            Some(b'/') => path.get(..self.len)?,
            _ => return None,
        };
        let print = fingerprint(head);
        let first = self.fingerprints.partition_point(|f| *f < print);
        self.fingerprints
            .get(first..)?
            .iter()
            .take_while(|f| **f == print)
            .zip(self.prefixes.get(first..)?)
            // Up to 8 bytes the fingerprint is the whole prefix (paths hold no NUL).
            .find(|(_, (prefix, _))| self.len <= 8 || prefix == head)
            .map(|(_, (_, i))| *i)
    }
}

/// The last (up to) 8 bytes of `s` as an integer.
#[inline]
fn fingerprint(s: &str) -> u64 {
    let bytes = s.as_bytes();
    if let Some(last8) = bytes.last_chunk::<8>() {
        return u64::from_le_bytes(*last8);
    }
    let mut buf = [0u8; 8];
    for (slot, byte) in buf.iter_mut().zip(bytes) {
        *slot = *byte;
    }
    u64::from_le_bytes(buf)
}

/// True when the path `path` is `prefix` or lies beneath it.
///
/// Checks the byte after the prefix first: it rules out most mounts without
/// comparing the prefix at all.
#[inline]
fn within(path: &str, prefix: &str) -> bool {
    let (path, prefix) = (path.as_bytes(), prefix.as_bytes());
    if prefix == b"/" {
        return true;
    }
    match path.get(prefix.len()) {
        None if path.len() == prefix.len() => path == prefix,
        Some(b'/') => &path[..prefix.len()] == prefix,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Nothing;

    #[async_trait::async_trait]
    impl Backend for Nothing {
        fn capabilities(&self) -> burrow_backend::Capabilities {
            burrow_backend::Capabilities::minimal()
        }
        async fn ls(
            &self,
            _: &burrow_backend::FileContext,
            _: &VPath,
            _: usize,
        ) -> Result<burrow_backend::Listing> {
            Err(Error::unsupported("ls"))
        }
        async fn read(
            &self,
            _: &burrow_backend::FileContext,
            _: &VPath,
            _: usize,
            _: usize,
        ) -> Result<burrow_backend::LineWindow> {
            Err(Error::unsupported("read"))
        }
        async fn read_bytes(&self, _: &burrow_backend::FileContext, _: &VPath) -> Result<Vec<u8>> {
            Err(Error::unsupported("read"))
        }
        async fn write_bytes(
            &self,
            _: &burrow_backend::FileContext,
            _: &VPath,
            _: &[u8],
        ) -> Result<burrow_backend::WriteResult> {
            Err(Error::unsupported("write"))
        }
        async fn edit(
            &self,
            _: &burrow_backend::FileContext,
            _: &VPath,
            _: &str,
            _: &str,
            _: bool,
        ) -> Result<burrow_backend::EditResult> {
            Err(Error::unsupported("edit"))
        }
        async fn delete(&self, _: &burrow_backend::FileContext, _: &VPath) -> Result<()> {
            Err(Error::unsupported("delete"))
        }
        async fn glob(
            &self,
            _: &burrow_backend::FileContext,
            _: &str,
            _: &VPath,
            _: usize,
        ) -> Result<burrow_backend::GlobResult> {
            Err(Error::unsupported("glob"))
        }
        async fn grep(
            &self,
            _: &burrow_backend::FileContext,
            _: &burrow_backend::GrepQuery,
            _: &VPath,
            _: usize,
        ) -> Result<burrow_backend::GrepResult> {
            Err(Error::unsupported("grep"))
        }
    }

    fn table(prefixes: &[&str]) -> Result<MountTable> {
        let b: Arc<dyn Backend> = Arc::new(Nothing);
        MountTable::new(
            b.clone(),
            prefixes
                .iter()
                .map(|p| (p.to_string(), b.clone()))
                .collect(),
        )
    }

    fn p(s: &str) -> VPath {
        VPath::parse(s).unwrap()
    }

    #[test]
    fn longest_prefix_wins() {
        let t = table(&["/m", "/m/n", "/x/y"]).unwrap();
        let name = |path: &str| {
            let path = p(path);
            let (i, inner) = t.route(&path);
            (t.parts[i].prefix.to_string(), inner.to_string())
        };
        assert_eq!(name("/a"), ("/".into(), "/a".into()));
        assert_eq!(name("/m"), ("/m".into(), "/".into()));
        assert_eq!(name("/m/a"), ("/m".into(), "/a".into()));
        assert_eq!(name("/m/n/a"), ("/m/n".into(), "/a".into()));
        assert_eq!(name("/mn/a"), ("/".into(), "/mn/a".into()));
        assert_eq!(name("/x"), ("/".into(), "/x".into()));
        assert!(t.has_mount_below(&p("/x")));
        assert!(t.has_mount_below(&p("/")));
        assert!(t.has_mount_below(&p("/m")));
        assert!(!t.has_mount_below(&p("/m/n")));
        assert!(t.is_dir_by_mounts(&p("/m/n")));
        assert_eq!(
            t.mount_children(&p("/"))
                .iter()
                .map(VPath::as_str)
                .collect::<Vec<_>>(),
            ["/m", "/x"]
        );
        assert!(!t.file_visible(0, "/m/a"));
        assert!(t.file_visible(1, "/m/a"));
        assert!(!t.file_visible(1, "/m/n/a"));
        assert!(!t.file_visible(0, "/x"));
    }

    /// Prefixes of one length that share their last 8 bytes (one fingerprint),
    /// short ones told apart by the fingerprint alone, and nested ones.
    #[test]
    fn routes_by_length_then_fingerprint_then_prefix() {
        let mounts = [
            "/a/memories",
            "/b/memories",
            "/c/memories",
            "/m0",
            "/m7",
            "/mx",
            "/a",
            "/a/b/memories",
        ];
        let t = table(&mounts).unwrap();
        let owner = |path: &str| {
            let path = p(path);
            let (i, inner) = t.route(&path);
            (t.parts[i].prefix.to_string(), inner.to_string())
        };
        for mount in mounts {
            assert_eq!(owner(mount), (mount.to_owned(), "/".to_owned()));
            assert_eq!(
                owner(&format!("{mount}/f.txt")),
                (mount.to_owned(), "/f.txt".to_owned())
            );
        }
        assert_eq!(owner("/d/memories/f"), ("/".into(), "/d/memories/f".into()));
        assert_eq!(
            owner("/a/memoriesX/f"),
            ("/a".into(), "/memoriesX/f".into())
        );
        assert_eq!(owner("/a/b/f"), ("/a".into(), "/b/f".into()));
        assert_eq!(owner("/m1/f"), ("/".into(), "/m1/f".into()));
        assert_eq!(owner("/m"), ("/".into(), "/m".into()));
    }

    #[test]
    fn refuses_bad_mounts() {
        assert_eq!(
            table(&["/"]).err().map(|e| e.kind()),
            Some(ErrorKind::InvalidArgument)
        );
        assert_eq!(
            table(&["/a", "a/"]).err().map(|e| e.kind()),
            Some(ErrorKind::AlreadyExists)
        );
        assert_eq!(
            table(&["/../a"]).err().map(|e| e.kind()),
            Some(ErrorKind::InvalidPath)
        );
    }
}
