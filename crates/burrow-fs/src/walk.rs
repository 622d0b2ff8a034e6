//! The directory walk behind glob and grep: in path order, through cap-std handles, never host paths.
//!
//! Each directory is opened beneath the root with `O_NOFOLLOW | O_DIRECTORY`
//! on its last component, so the walk never enters a symlinked directory (no
//! cycles, no escapes even if a directory is swapped for a link mid-walk), and
//! a symbolic link to a file is reported only when it resolves, beneath the
//! root, to a regular file. With `respect_ignore_files`, `.gitignore` files
//! (of `under` and every directory above it up to the root, and of each
//! directory walked) are applied with the `ignore` crate's matcher and dot
//! files are skipped.

use std::io::Read;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use burrow_backend::{Error, MAX_PATH_BYTES, VPath};
use cap_std::fs::{Dir, OpenOptions};
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use crate::errors::from_io;
use crate::root::{Root, is_hidden_temp, read_options, rel};

/// The largest `.gitignore` file read, in bytes.
const MAX_IGNORE_FILE: u64 = 1 << 20;

/// A regular file found by a walk.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    /// The absolute virtual path.
    pub(crate) path: String,
    /// Where the part relative to the walk's start begins in `path`.
    rel_start: usize,
}

impl Found {
    /// The path relative to the directory the walk started at.
    pub(crate) fn relative(&self) -> &str {
        &self.path[self.rel_start..]
    }
}

/// The `.gitignore` rules in force in one directory, innermost first.
struct Layer {
    rules: Gitignore,
    parent: Option<Rc<Layer>>,
}

fn is_ignored(layer: Option<&Rc<Layer>>, path: &str, is_dir: bool) -> bool {
    let mut current = layer;
    while let Some(l) = current {
        let found = l.rules.matched(Path::new(path), is_dir);
        if found.is_ignore() {
            return true;
        }
        if found.is_whitelist() {
            return false;
        }
        current = l.parent.as_ref();
    }
    false
}

/// `parent` plus the rules of the `.gitignore` in `dir` (the directory at `dir_path`), if any.
fn with_ignore_file(dir: &Dir, dir_path: &str, parent: Option<Rc<Layer>>) -> Option<Rc<Layer>> {
    let Some(text) = read_ignore_file(dir) else {
        return parent;
    };
    let mut builder = GitignoreBuilder::new(dir_path);
    let from = PathBuf::from(dir_path).join(".gitignore");
    for line in text.lines() {
        // A malformed line is skipped, as git does.
        let _ = builder.add_line(Some(from.clone()), line);
    }
    match builder.build() {
        Ok(rules) if !rules.is_empty() => Some(Rc::new(Layer { rules, parent })),
        _ => parent,
    }
}

fn read_ignore_file(dir: &Dir) -> Option<String> {
    let file = dir.open_with(".gitignore", &read_options()).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() > MAX_IGNORE_FILE {
        return None;
    }
    let mut text = String::new();
    file.take(MAX_IGNORE_FILE).read_to_string(&mut text).ok()?;
    Some(text)
}

/// Options that open a directory without following a link at its last component.
fn dir_nofollow_options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use cap_std::fs::OpenOptionsExt;
        options.custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_NOCTTY);
    }
    options
}

/// `parent` + "/" + `name` for a virtual path (no doubled "/" at the root).
fn child(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

/// One entry of a directory the walk will visit: a regular file, or a
/// directory to descend into.
struct Child {
    /// The virtual path, with "/" appended for a directory, so that sorting
    /// the keys of one directory sorts every path beneath it (see [`Level`]).
    key: String,
    is_dir: bool,
}

impl Child {
    /// The virtual path (the key without a directory's trailing "/").
    fn path(&self) -> &str {
        if self.is_dir {
            &self.key[..self.key.len() - 1]
        } else {
            &self.key
        }
    }
}

/// The children of one directory not yet visited, in path order, and the
/// `.gitignore` rules in force beneath it.
///
/// A file name has no "/", so comparing a file's name with a directory's name
/// plus "/" decides the same way as comparing it with any path beneath that
/// directory: visiting each directory's children sorted so, depth first,
/// yields every file's full path in byte order, the order of results.
struct Level {
    children: std::vec::IntoIter<Child>,
    layer: Option<Rc<Layer>>,
}

impl Root {
    /// Hands every regular file beneath the directory `under` to `visit`, in
    /// path order (byte order of the full path), until `visit` breaks.
    ///
    /// `start` is the handle of `under`. Memory is one directory's names per
    /// level being walked, not the tree. Directories that vanish or cannot be
    /// opened mid-walk are skipped; an error listing `under` itself is returned.
    pub(crate) fn walk(
        &self,
        under: &VPath,
        start: Dir,
        mut visit: impl FnMut(Found) -> ControlFlow<()>,
    ) -> Result<(), Error> {
        let base = under.as_str();
        let rel_start = if under.is_root() { 1 } else { base.len() + 1 };
        let top_layer = if self.options.respect_ignore_files {
            self.ancestor_rules(under, &start)
        } else {
            None
        };
        let first = self
            .read_level(&start, base, top_layer)
            .map_err(|e| from_io(e, under, "list"))?;
        let mut stack = vec![first];
        while let Some(level) = stack.last_mut() {
            let Some(child) = level.children.next() else {
                stack.pop();
                continue;
            };
            if !child.is_dir {
                let found = Found {
                    path: child.key,
                    rel_start,
                };
                if visit(found).is_break() {
                    return Ok(());
                }
                continue;
            }
            let parent_layer = level.layer.clone();
            if let Some(next) = self.enter(child.path(), parent_layer) {
                stack.push(next);
            }
        }
        Ok(())
    }

    /// The level of the directory at the virtual `path`, opened without
    /// following a link; `None` when it vanished or cannot be read.
    fn enter(&self, path: &str, parent_layer: Option<Rc<Layer>>) -> Option<Level> {
        #[cfg(test)]
        if let Ok(path) = VPath::parse(path) {
            crate::hook::enter_dir(&path);
        }
        let file = self
            .dir
            .open_with(&path[1..], &dir_nofollow_options())
            .ok()?;
        let dir = Dir::from_std_file(file.into_std());
        let layer = if self.options.respect_ignore_files {
            with_ignore_file(&dir, path, parent_layer)
        } else {
            parent_layer
        };
        self.read_level(&dir, path, layer).ok()
    }

    /// The regular files and directories in `dir` (at the virtual `dir_path`)
    /// that a walk visits, sorted (see [`Level`]); `layer` holds the rules in
    /// force in `dir`.
    fn read_level(
        &self,
        dir: &Dir,
        dir_path: &str,
        layer: Option<Rc<Layer>>,
    ) -> std::io::Result<Level> {
        let respect = self.options.respect_ignore_files;
        let mut children = Vec::new();
        for entry in dir.entries()? {
            let Ok(entry) = entry else { continue };
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            if name == "." || name == ".." || is_hidden_temp(&name) {
                continue;
            }
            if respect && name.starts_with('.') {
                continue;
            }
            let path = child(dir_path, &name);
            if path.len() > MAX_PATH_BYTES {
                continue;
            }
            let Ok(mut file_type) = entry.file_type() else {
                continue;
            };
            if !file_type.is_dir() && !file_type.is_file() && !file_type.is_symlink() {
                // Unknown from readdir: ask the entry itself (without following it).
                match entry.metadata() {
                    Ok(meta) => file_type = meta.file_type(),
                    Err(_) => continue,
                }
            }
            let is_dir = file_type.is_dir();
            let is_file =
                file_type.is_file() || (file_type.is_symlink() && self.is_file_beneath_root(&path));
            if !(is_dir || is_file) || (respect && is_ignored(layer.as_ref(), &path, is_dir)) {
                continue;
            }
            let key = if is_dir { path + "/" } else { path };
            children.push(Child { key, is_dir });
        }
        children.sort_unstable_by(|a, b| a.key.cmp(&b.key));
        Ok(Level {
            children: children.into_iter(),
            layer,
        })
    }

    /// True when the link at the virtual `path` resolves, beneath the root, to a regular file.
    fn is_file_beneath_root(&self, path: &str) -> bool {
        self.dir.metadata(&path[1..]).is_ok_and(|m| m.is_file())
    }

    /// The `.gitignore` rules of every directory from the root down to `under` (whose handle is `start`).
    fn ancestor_rules(&self, under: &VPath, start: &Dir) -> Option<Rc<Layer>> {
        let mut layer = None;
        for dir in under.ancestors() {
            if let Ok(handle) = self.dir.open_dir(rel(&dir)) {
                layer = with_ignore_file(&handle, dir.as_str(), layer);
            }
        }
        with_ignore_file(start, under.as_str(), layer)
    }
}

#[cfg(test)]
mod tests {
    use std::ops::ControlFlow;

    use burrow_backend::VPath;
    use cap_std::ambient_authority;
    use cap_std::fs::Dir;

    use crate::FsOptions;
    use crate::root::Root;

    /// Names where a directory walk in readdir or plain name order would
    /// not give byte order of full paths ("a-b" < "a/x" < "a0", "B" < "a").
    const TREE: &[&str] = &[
        "a/x.txt",
        "a-b",
        "a.txt",
        "a0/y",
        "a/b/c",
        "a/b-c",
        "a/b0",
        "B/z",
        "ab",
        "a/b/d/e",
        "\u{e9}t\u{e9}",
        "z",
        "a/~",
        "a/ b",
    ];

    #[test]
    fn the_walk_yields_full_paths_in_byte_order_and_stops_when_told() {
        let dir = tempfile::tempdir().unwrap();
        for name in TREE {
            let host = dir.path().join(name);
            std::fs::create_dir_all(host.parent().unwrap()).unwrap();
            std::fs::write(host, "x").unwrap();
        }
        let root = Root {
            dir: Dir::open_ambient_dir(dir.path(), ambient_authority()).unwrap(),
            options: FsOptions::default(),
        };
        let mut want: Vec<String> = TREE.iter().map(|n| format!("/{n}")).collect();
        want.sort();
        let mut seen = Vec::new();
        let start = root.dir.try_clone().unwrap();
        root.walk(&VPath::root(), start, |f| {
            seen.push(f.path);
            ControlFlow::Continue(())
        })
        .unwrap();
        assert_eq!(seen, want);

        let mut first = Vec::new();
        let start = root.dir.try_clone().unwrap();
        root.walk(&VPath::root(), start, |f| {
            first.push(f.path);
            if first.len() == 3 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .unwrap();
        assert_eq!(first, want[..3]);
    }
}
