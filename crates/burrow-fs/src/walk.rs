//! The directory walk behind glob and grep: through cap-std handles, never host paths.
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

impl Root {
    /// Hands every regular file beneath the directory `under` to `visit`
    /// (unsorted), keeping none of them.
    ///
    /// `start` is the handle of `under`. Directories that vanish or cannot be
    /// opened mid-walk are skipped; an error listing `under` itself is returned.
    pub(crate) fn walk(
        &self,
        under: &VPath,
        start: Dir,
        mut visit: impl FnMut(Found),
    ) -> Result<(), Error> {
        let respect = self.options.respect_ignore_files;
        let base = under.as_str();
        let rel_start = if under.is_root() { 1 } else { base.len() + 1 };
        let top_layer = if respect {
            self.ancestor_rules(under, &start)
        } else {
            None
        };
        let mut pending: Vec<(Option<Dir>, String, Option<Rc<Layer>>)> =
            vec![(Some(start), base.to_owned(), top_layer)];
        while let Some((handle, dir_path, layer)) = pending.pop() {
            let is_start = handle.is_some();
            let dir = match handle {
                Some(dir) => dir,
                None => match self.dir.open_with(&dir_path[1..], &dir_nofollow_options()) {
                    Ok(file) => Dir::from_std_file(file.into_std()),
                    Err(_) => continue,
                },
            };
            let layer = if respect && !is_start {
                with_ignore_file(&dir, &dir_path, layer)
            } else {
                layer
            };
            let entries = match dir.entries() {
                Ok(entries) => entries,
                Err(e) if is_start => return Err(from_io(e, under, "list")),
                Err(_) => continue,
            };
            for entry in entries {
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
                let path = child(&dir_path, &name);
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
                let is_file = file_type.is_file()
                    || (file_type.is_symlink() && self.is_file_beneath_root(&path));
                if !(is_dir || is_file) || (respect && is_ignored(layer.as_ref(), &path, is_dir)) {
                    continue;
                }
                if is_dir {
                    pending.push((None, path, layer.clone()));
                } else {
                    visit(Found { path, rel_start });
                }
            }
        }
        Ok(())
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
