//! The store and its directory index: files by full path, directories by full path with their direct children.
//!
//! Every method here is synchronous and runs under the backend's lock; none
//! walks all files. Paths are the normalised strings of [`VPath`]s.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Bound;
use std::sync::Arc;

use burrow_backend::{Error, Result, VPath};

/// One stored file: its exact bytes and its two timestamps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileEntry {
    pub(crate) bytes: Vec<u8>,
    pub(crate) created_at: Stamp,
    pub(crate) modified_at: Stamp,
}

/// A file's timestamp: the text a loaded document gave, kept exactly, or an
/// instant this store stamped, rendered as RFC 3339 only when asked for.
///
/// Why not a `String`: every write stamps `modified_at`, and formatting the
/// instant then (then freeing the old text, likely out of cache) cost more
/// than the rest of a small write; most stamps are never read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Stamp {
    Text(String),
    At(jiff::Timestamp),
}

impl Stamp {
    /// The current time.
    pub(crate) fn now() -> Stamp {
        Stamp::At(jiff::Timestamp::now())
    }

    /// The RFC 3339 text of this stamp; `None` when unknown (a loaded
    /// document had no such key: the empty text).
    pub(crate) fn known(&self) -> Option<String> {
        match self {
            Stamp::Text(text) if text.is_empty() => None,
            other => Some(other.render()),
        }
    }

    /// Appends [`Stamp::render`]'s text to `out`, without a `String` of its own.
    pub(crate) fn write_to(&self, out: &mut Vec<u8>) {
        match self {
            Stamp::Text(text) => out.extend_from_slice(text.as_bytes()),
            Stamp::At(at) => {
                // Writing into a Vec cannot fail.
                let _ = std::io::Write::write_fmt(out, format_args!("{at}"));
            }
        }
    }

    /// The RFC 3339 text of this stamp (empty when unknown).
    pub(crate) fn render(&self) -> String {
        match self {
            Stamp::Text(text) => text.clone(),
            Stamp::At(at) => at.to_string(),
        }
    }
}

/// One directory of the index. A directory exists while something holds it:
/// a file beneath it, or a directory made with `make_dir` at or beneath it.
/// So `files` is never 0 except for the root.
#[derive(Debug, Default)]
struct DirEntry {
    /// Direct children by name (byte order == path order), `true` for a directory.
    children: BTreeMap<String, bool>,
    /// What holds this directory: files beneath it at any depth, plus made
    /// directories at or beneath it.
    files: usize,
    /// Made with `make_dir`: it stays, empty or not, until it is deleted.
    made: bool,
}

/// What stands at a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    File,
    Dir,
    Missing,
}

/// Files by full path plus the directory index over them.
#[derive(Debug)]
pub(crate) struct Tree {
    /// Every file by full path, for the point operations (read, write, edit):
    /// a hash lookup touches one or two cache lines where an ordered map's
    /// descent compares against a dozen keys, each a likely cache miss once
    /// the store outgrows the cache (see `docs/benchmarks.md`).
    files: HashMap<Arc<str>, FileEntry>,
    /// The same paths in order (sharing the key allocations): byte order is
    /// the contract's sort order, and the files beneath a directory are one
    /// contiguous range, so scans are range scans.
    order: BTreeSet<Arc<str>>,
    /// Every directory that exists, the root always among them.
    dirs: BTreeMap<String, DirEntry>,
}

impl Default for Tree {
    fn default() -> Self {
        let mut dirs = BTreeMap::new();
        dirs.insert("/".to_owned(), DirEntry::default());
        Tree {
            files: HashMap::new(),
            order: BTreeSet::new(),
            dirs,
        }
    }
}

/// The parent and last segment of a path other than the root.
fn split(path: &str) -> (&str, &str) {
    match path.rfind('/') {
        Some(0) | None => ("/", path.get(1..).unwrap_or_default()),
        Some(i) => (&path[..i], &path[i + 1..]),
    }
}

/// The directory ending just before the "/" at byte `i` of `path`.
fn dir_at(path: &str, i: usize) -> &str {
    if i == 0 { "/" } else { &path[..i] }
}

/// The prefix every path strictly beneath `dir` starts with.
pub(crate) fn child_prefix(dir: &str) -> String {
    if dir == "/" {
        "/".to_owned()
    } else {
        format!("{dir}/")
    }
}

/// The path of `name` inside `dir`.
pub(crate) fn join(dir: &str, name: &str) -> String {
    let mut out = child_prefix(dir);
    out.push_str(name);
    out
}

impl Tree {
    /// How many files are stored.
    pub(crate) fn len(&self) -> usize {
        self.files.len()
    }

    /// What stands at `path`. O(log n).
    pub(crate) fn kind(&self, path: &str) -> Kind {
        if self.files.contains_key(path) {
            Kind::File
        } else if self.dirs.contains_key(path) {
            Kind::Dir
        } else {
            Kind::Missing
        }
    }

    /// The refusal for `path` when it is not a file: IsADirectory or NotFound.
    pub(crate) fn not_a_file(&self, path: &VPath) -> Error {
        if path.is_root() || self.dirs.contains_key(path.as_str()) {
            Error::is_a_directory(path)
        } else {
            Error::not_found(path)
        }
    }

    /// The file at `path`.
    pub(crate) fn file(&self, path: &str) -> Option<&FileEntry> {
        self.files.get(path)
    }

    /// The file at `path`, to change in place (its size and place in the index stay valid).
    pub(crate) fn file_mut(&mut self, path: &str) -> Option<&mut FileEntry> {
        self.files.get_mut(path)
    }

    /// The nearest-the-root ancestor of `path` that is a file. O(depth · log n).
    fn file_ancestor<'p>(&self, path: &'p str) -> Option<&'p str> {
        path.match_indices('/')
            .skip(1)
            .map(|(i, _)| &path[..i])
            .find(|a| self.files.contains_key(*a))
    }

    /// Refuses a path where no file may stand: the root or a directory
    /// (IsADirectory), or beneath a file (NotADirectory).
    pub(crate) fn check_file_slot(&self, path: &VPath) -> Result<()> {
        let p = path.as_str();
        if path.is_root() || self.dirs.contains_key(p) {
            return Err(Error::is_a_directory(path));
        }
        if self.files.contains_key(p) {
            return Ok(());
        }
        match self.file_ancestor(p) {
            Some(file) => Err(Error::not_a_directory(file)),
            None => Ok(()),
        }
    }

    /// Creates or replaces the file at `path` with `bytes`, stamped `now`;
    /// a replaced file keeps its created_at.
    pub(crate) fn write(&mut self, path: &VPath, bytes: &[u8], now: Stamp) -> Result<()> {
        // Replacing is the common case: one lookup, and a file's slot is valid.
        if let Some(file) = self.files.get_mut(path.as_str()) {
            overwrite(&mut file.bytes, bytes);
            file.modified_at = now;
            return Ok(());
        }
        self.check_file_slot(path)?;
        self.insert_new(
            path.as_str(),
            FileEntry {
                bytes: bytes.to_vec(),
                created_at: now.clone(),
                modified_at: now,
            },
        );
        Ok(())
    }

    /// Stores `entry` at `path` as it is (timestamps included), for restoring a document.
    pub(crate) fn restore(&mut self, path: &VPath, entry: FileEntry) -> Result<()> {
        self.check_file_slot(path)?;
        match self.files.get_mut(path.as_str()) {
            Some(file) => *file = entry,
            None => self.insert_new(path.as_str(), entry),
        }
        Ok(())
    }

    /// Adds a file at a free slot (see [`Tree::check_file_slot`]), creating
    /// its implicit directories root first. O(depth · log n).
    fn insert_new(&mut self, path: &str, entry: FileEntry) {
        for (i, _) in path.match_indices('/') {
            let dir = dir_at(path, i);
            if let Some(d) = self.dirs.get_mut(dir) {
                d.files += 1;
                continue;
            }
            // A new directory: its parent exists, since the walk goes root first.
            let (parent, name) = split(dir);
            if let Some(p) = self.dirs.get_mut(parent) {
                p.children.insert(name.to_owned(), true);
            }
            self.dirs.insert(
                dir.to_owned(),
                DirEntry {
                    children: BTreeMap::new(),
                    files: 1,
                    made: false,
                },
            );
        }
        let (parent, name) = split(path);
        if let Some(p) = self.dirs.get_mut(parent) {
            p.children.insert(name.to_owned(), false);
        }
        let key: Arc<str> = Arc::from(path);
        self.order.insert(Arc::clone(&key));
        self.files.insert(key, entry);
    }

    /// Removes the file at `path`; directories left with no file beneath them
    /// disappear, deepest first. O(depth · log n).
    pub(crate) fn remove_file(&mut self, path: &str) -> Option<FileEntry> {
        let entry = self.files.remove(path)?;
        self.order.remove(path);
        let (parent, name) = split(path);
        if let Some(p) = self.dirs.get_mut(parent) {
            p.children.remove(name);
        }
        self.release_above(path);
        Some(entry)
    }

    /// Counts one holder off every directory above `path` (deepest first),
    /// removing those left with none. O(depth · log n).
    fn release_above(&mut self, path: &str) {
        for (i, _) in path.rmatch_indices('/') {
            let dir = dir_at(path, i);
            let Some(d) = self.dirs.get_mut(dir) else {
                continue;
            };
            d.files = d.files.saturating_sub(1);
            if d.files == 0 && i != 0 {
                self.dirs.remove(dir);
                let (up, dir_name) = split(dir);
                if let Some(p) = self.dirs.get_mut(up) {
                    p.children.remove(dir_name);
                }
            }
        }
    }

    /// Makes the directory `path` (and with `parents` its missing parents),
    /// marking it made so that it stays until deleted; see `Backend::make_dir`.
    /// Changes nothing when it refuses. O(depth · log n).
    pub(crate) fn make_dir(&mut self, path: &VPath, parents: bool) -> Result<()> {
        let p = path.as_str();
        if path.is_root() || self.dirs.get(p).is_some_and(|d| d.made) {
            return if parents {
                Ok(())
            } else {
                Err(Error::already_exists(path))
            };
        }
        if self.files.contains_key(p) {
            return Err(Error::already_exists(path));
        }
        if let Some(file) = self.file_ancestor(p) {
            return Err(Error::not_a_directory(file));
        }
        let exists = self.dirs.contains_key(p);
        if exists && !parents {
            return Err(Error::already_exists(path));
        }
        if !parents
            && let Some(parent) = path.parent()
            && !self.dirs.contains_key(parent.as_str())
        {
            return Err(Error::not_found(&parent));
        }
        // Count the new holder on every directory above, creating missing ones root first.
        for (i, _) in p.match_indices('/') {
            self.hold(dir_at(p, i));
        }
        self.hold(p);
        if let Some(d) = self.dirs.get_mut(p) {
            d.made = true;
        }
        Ok(())
    }

    /// Counts one more holder on the directory `dir`, creating it (its parent
    /// exists: callers go root first) when missing.
    fn hold(&mut self, dir: &str) {
        if let Some(d) = self.dirs.get_mut(dir) {
            d.files += 1;
            return;
        }
        let (parent, name) = split(dir);
        if let Some(p) = self.dirs.get_mut(parent) {
            p.children.insert(name.to_owned(), true);
        }
        self.dirs.insert(
            dir.to_owned(),
            DirEntry {
                children: BTreeMap::new(),
                files: 1,
                made: false,
            },
        );
    }

    /// Deletes the made, empty directory `dir`: true when it was one.
    pub(crate) fn remove_empty_dir(&mut self, dir: &str) -> bool {
        match self.dirs.get_mut(dir) {
            Some(d) if d.made && d.children.is_empty() => d.made = false,
            _ => return false,
        }
        self.unmake(dir);
        true
    }

    /// Counts the made mark of `dir` (already cleared) off it and its parents.
    fn unmake(&mut self, dir: &str) {
        let gone = match self.dirs.get_mut(dir) {
            Some(d) => {
                d.files = d.files.saturating_sub(1);
                d.files == 0
            }
            None => false,
        };
        if gone {
            self.dirs.remove(dir);
            let (up, name) = split(dir);
            if let Some(p) = self.dirs.get_mut(up) {
                p.children.remove(name);
            }
        }
        self.release_above(dir);
    }

    /// Deletes the directory `dir` (not the root) and everything beneath it:
    /// its files, then its made directories deepest first. O(subtree · depth · log n).
    pub(crate) fn remove_tree(&mut self, dir: &str) {
        let prefix = child_prefix(dir);
        let files: Vec<Arc<str>> = self
            .order
            .range::<str, _>((Bound::Included(prefix.as_str()), Bound::Unbounded))
            .take_while(|path| path.starts_with(&prefix))
            .cloned()
            .collect();
        for path in files {
            self.remove_file(&path);
        }
        let mut made: Vec<String> = self
            .dirs
            .range::<str, _>((Bound::Included(prefix.as_str()), Bound::Unbounded))
            .take_while(|(path, _)| path.starts_with(&prefix))
            .filter(|(_, d)| d.made)
            .map(|(path, _)| path.clone())
            .collect();
        if self.dirs.get(dir).is_some_and(|d| d.made) {
            made.insert(0, dir.to_owned());
        }
        // Deepest first within a branch: a path sorts after its parent.
        for path in made.iter().rev() {
            if let Some(d) = self.dirs.get_mut(path.as_str()) {
                d.made = false;
            }
            self.unmake(path);
        }
    }

    /// The direct children of the directory `dir` in name order, `true` for a
    /// directory; `None` when `dir` is not a directory. O(log n) to start.
    pub(crate) fn children(&self, dir: &str) -> Option<impl Iterator<Item = (&str, bool)>> {
        self.dirs.get(dir).map(|d| {
            d.children
                .iter()
                .map(|(name, is_dir)| (name.as_str(), *is_dir))
        })
    }

    /// The paths of the files strictly beneath the directory whose
    /// [`child_prefix`] is `prefix`, in path order, each with its path
    /// relative to the directory: one range scan of the ordered paths,
    /// O(log n + result). Callers filter on the path before fetching a file
    /// ([`Tree::file`]), so a glob that matches few files touches few.
    pub(crate) fn paths_beneath<'a>(
        &'a self,
        prefix: &'a str,
    ) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        self.order
            .range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(move |path| path.starts_with(prefix))
            .map(move |path| (&**path, &path[prefix.len()..]))
    }

    /// Every file in path order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &FileEntry)> {
        self.order
            .iter()
            .filter_map(|path| Some((&**path, self.files.get(path)?)))
    }
}

/// Replaces the contents of `dst` with `src`, in `dst`'s own buffer when it
/// fits without wasting more than half of it: a fresh buffer would mean
/// freeing the old one, which for a file not touched lately is a cache miss
/// or two in the allocator on top of the copy.
pub(crate) fn overwrite(dst: &mut Vec<u8>, src: &[u8]) {
    if dst.capacity() >= src.len() && dst.capacity() / 2 <= src.len() {
        dst.clear();
        dst.extend_from_slice(src);
    } else {
        *dst = src.to_vec();
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::*;

    /// The index rebuilt from the files alone: (directory, its children, files beneath).
    fn expected_dirs(tree: &Tree) -> BTreeMap<String, (BTreeMap<String, bool>, usize)> {
        let mut dirs: BTreeMap<String, (BTreeMap<String, bool>, usize)> = BTreeMap::new();
        dirs.insert("/".to_owned(), (BTreeMap::new(), 0));
        let made: Vec<&str> = tree
            .dirs
            .iter()
            .filter(|(_, d)| d.made)
            .map(|(p, _)| p.as_str())
            .collect();
        for path in made {
            dirs.entry(path.to_owned()).or_default().1 += 1;
            let mut cur = path;
            while cur != "/" {
                let (parent, name) = split(cur);
                let d = dirs.entry(parent.to_owned()).or_default();
                d.0.insert(name.to_owned(), true);
                d.1 += 1;
                cur = parent;
            }
        }
        for (path, _) in tree.iter() {
            let mut child_is_dir = false;
            let mut cur = path;
            while cur != "/" {
                let (parent, name) = split(cur);
                let d = dirs.entry(parent.to_owned()).or_default();
                d.0.insert(name.to_owned(), child_is_dir);
                d.1 += 1;
                child_is_dir = true;
                cur = parent;
            }
        }
        dirs
    }

    fn assert_consistent(tree: &Tree) {
        let actual: BTreeMap<String, (BTreeMap<String, bool>, usize)> = tree
            .dirs
            .iter()
            .map(|(k, d)| (k.clone(), (d.children.clone(), d.files)))
            .collect();
        assert_eq!(actual, expected_dirs(tree));
        let ordered: Vec<&str> = tree.order.iter().map(|p| &**p).collect();
        let mut hashed: Vec<&str> = tree.files.keys().map(|p| &**p).collect();
        hashed.sort_unstable();
        assert_eq!(ordered, hashed, "the ordered paths are the hashed ones");
        let files: BTreeSet<&str> = tree.iter().map(|(p, _)| p).collect();
        assert!(tree.dirs.keys().all(|d| !files.contains(d.as_str())));
    }

    fn vp(s: &str) -> VPath {
        VPath::parse(s).unwrap()
    }

    #[derive(Debug, Clone)]
    enum Op {
        Write(String),
        Delete(String),
        MakeDir(String, bool),
        DeleteTree(String),
    }

    fn small_path() -> impl Strategy<Value = String> {
        // Names chosen so that "a-b" and "a.b" sort between "a" and "a/...".
        let name = proptest::sample::select(vec!["a", "b", "a.b", "a-b"]);
        proptest::collection::vec(name, 1..4).prop_map(|segs| format!("/{}", segs.join("/")))
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            small_path().prop_map(Op::Write),
            small_path().prop_map(Op::Delete),
            (small_path(), any::<bool>()).prop_map(|(p, parents)| Op::MakeDir(p, parents)),
            small_path().prop_map(Op::DeleteTree),
        ]
    }

    proptest! {
        #[test]
        fn index_matches_files_after_any_sequence(ops in proptest::collection::vec(op(), 1..60)) {
            let mut tree = Tree::default();
            for op in ops {
                match op {
                    Op::Write(p) => {
                        let path = vp(&p);
                        let refused = tree.check_file_slot(&path).is_err();
                        let before = tree.len();
                        let result = tree.write(&path, p.as_bytes(), Stamp::now());
                        prop_assert_eq!(result.is_err(), refused);
                        if refused {
                            prop_assert_eq!(tree.len(), before);
                        } else {
                            prop_assert_eq!(tree.file(&p).map(|f| f.bytes.clone()), Some(p.into_bytes()));
                        }
                    }
                    Op::Delete(p) => {
                        let was_file = tree.kind(&p) == Kind::File;
                        prop_assert_eq!(tree.remove_file(&p).is_some(), was_file);
                        prop_assert_eq!(tree.kind(&p) == Kind::File, false);
                    }
                    Op::MakeDir(p, parents) => {
                        let before = tree.len();
                        if tree.make_dir(&vp(&p), parents).is_ok() {
                            prop_assert_eq!(tree.kind(&p), Kind::Dir);
                        }
                        prop_assert_eq!(tree.len(), before);
                    }
                    Op::DeleteTree(p) => {
                        if tree.kind(&p) == Kind::Dir {
                            tree.remove_tree(&p);
                        }
                        prop_assert_eq!(tree.kind(&p) == Kind::Dir, false);
                        prop_assert_eq!(tree.paths_beneath(&child_prefix(&p)).count(), 0);
                    }
                }
                assert_consistent(&tree);
            }
        }
    }

    #[test]
    fn paths_beneath_is_one_contiguous_range() {
        let mut tree = Tree::default();
        for p in ["/ab", "/a/y/z", "/a.b", "/a-b/x", "/a/x"] {
            tree.write(&vp(p), &[], Stamp::now()).unwrap();
        }
        let beneath: Vec<(&str, &str)> = tree.paths_beneath("/a/").collect();
        assert_eq!(beneath, [("/a/x", "x"), ("/a/y/z", "y/z")]);
        let all: Vec<&str> = tree.paths_beneath("/").map(|(_, r)| r).collect();
        assert_eq!(all, ["a-b/x", "a.b", "a/x", "a/y/z", "ab"]);
        assert_consistent(&tree);
    }
}
