//! Atomic writes: a temporary file in the target's directory, renamed into place.
//!
//! A reader, or a crash of this process at any instant, sees the old content
//! or the new, never a prefix: the new bytes are written in full to a
//! temporary file named `.burrow-tmp-<16 hex digits>` beside the target (28
//! bytes, so even a target whose name is already 255 bytes long gets a legal
//! temporary name), which is then renamed over the target in one `renameat`.
//! No name is reserved: the temporary name is random and created with
//! `O_EXCL` (it never replaces a user's file), and only the temporary files
//! this process is writing right now are hidden from its listings. A crash
//! can leave one behind; it is then an ordinary file the user can delete.

use std::collections::BTreeSet;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use burrow_backend::{Error, ErrorKind, VPath, text};
use cap_std::fs::{Dir, File, Metadata, OpenOptions};

use crate::errors::{self, from_io};
use crate::options::TEMP_PREFIX;
use crate::root::{Root, rel};

impl Root {
    /// Creates or replaces the file at `path` with `bytes`, atomically.
    pub(crate) fn write(&self, path: &VPath, bytes: &[u8]) -> Result<(), Error> {
        if path.is_root() {
            return Err(Error::is_a_directory(path));
        }
        text::check_size(path, bytes.len() as u64, self.options.max_file_size)?;
        self.ensure_parents(path)?;
        let target = self.write_target(path)?;
        let dir = self.lock_dir_of(path, &target, "write")?;
        self.replace(path, &dir, bytes)
    }

    /// Replaces `old` by `new` in the text file at `path`; returns the count.
    ///
    /// A read-modify-write: callers serialise edits of one path (`PATH_LOCKS` in `backend`).
    pub(crate) fn edit(
        &self,
        path: &VPath,
        old: &str,
        new: &str,
        replace_all: bool,
    ) -> Result<usize, Error> {
        text::check_edit_args(old, new)?;
        // The file the edit replaces decides which directory is locked; a
        // path that cannot be read is refused as a read would refuse it.
        let target = match self.write_target(path) {
            Ok(target) => target,
            Err(e) => return Err(self.read_all(path).err().unwrap_or(e)),
        };
        let dir = self.lock_dir_of(path, &target, "write")?;
        let bytes = self.read_all(path)?;
        let (edited, count) = text::apply_edit(path, &bytes, old, new, replace_all)?;
        text::check_size(path, edited.len() as u64, self.options.max_file_size)?;
        #[cfg(test)]
        crate::hook::after_edit_read(path);
        self.replace(path, &dir, &edited)?;
        Ok(count)
    }

    /// Makes the directory `path`, and with `parents` its missing parents;
    /// see `Backend::make_dir`. Parents are checked root first before any is
    /// made, so a file among them refuses the call with nothing made.
    pub(crate) fn make_dir(&self, path: &VPath, parents: bool) -> Result<(), Error> {
        let exists = || {
            if parents {
                Ok(())
            } else {
                Err(Error::already_exists(path))
            }
        };
        if path.is_root() {
            return exists();
        }
        match self.stat(path) {
            Ok(meta) if meta.is_dir() => return exists(),
            Ok(_) => return Err(Error::already_exists(path)),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                ) => {}
            Err(e) => return Err(from_io(e, path, "create")),
        }
        if let Some(file) = self.file_above(path) {
            return Err(Error::not_a_directory(&file));
        }
        if parents {
            for dir in path.ancestors().iter().filter(|d| !d.is_root()) {
                self.ensure_dir(dir)?;
            }
        } else if let Some(parent) = path.parent()
            && !parent.is_root()
            && !self.stat(&parent).is_ok_and(|m| m.is_dir())
        {
            return Err(Error::not_found(&parent));
        }
        match self.dir.create_dir(rel(path)) {
            Ok(()) => Ok(()),
            // Made meanwhile by someone else, or a dangling link stands there.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                if self.stat(path).is_ok_and(|m| m.is_dir()) {
                    exists()
                } else {
                    Err(Error::already_exists(path))
                }
            }
            Err(e) => Err(from_io(e, path, "create")),
        }
    }

    /// The nearest-the-root parent of `path` that exists and is no directory.
    fn file_above(&self, path: &VPath) -> Option<VPath> {
        for dir in path.ancestors().into_iter().filter(|d| !d.is_root()) {
            match self.stat(&dir) {
                Ok(meta) if meta.is_dir() => {}
                Ok(_) => return Some(dir),
                Err(_) => return None,
            }
        }
        None
    }

    /// Deletes the file, link or directory at `path` with everything beneath
    /// it, in its locked parent directory. Links are removed, never followed.
    pub(crate) fn delete_tree(&self, path: &VPath) -> Result<(), Error> {
        if path.is_root() {
            return Err(Error::root_cannot_be_deleted());
        }
        let locked = self.lock_dir_of(path, rel(path), "delete")?;
        let (dir, name) = (&locked.dir, locked.name.as_os_str());
        let meta = dir
            .symlink_metadata(name)
            .map_err(|e| from_io(e, path, "delete"))?;
        let removed = if meta.is_dir() {
            dir.remove_dir_all(name)
        } else {
            dir.remove_file(name)
        };
        removed.map_err(|e| from_io(e, path, "delete"))
    }

    /// Creates the missing directories above `path`.
    fn ensure_parents(&self, path: &VPath) -> Result<(), Error> {
        match path.parent() {
            None => return Ok(()),
            Some(parent) if parent.is_root() => return Ok(()),
            Some(parent) => {
                if self.stat(&parent).is_ok_and(|m| m.is_dir()) {
                    return Ok(());
                }
            }
        }
        for dir in path.ancestors().iter().filter(|d| !d.is_root()) {
            self.ensure_dir(dir)?;
        }
        Ok(())
    }

    fn ensure_dir(&self, dir: &VPath) -> Result<(), Error> {
        let exists = |meta: &cap_std::fs::Metadata| {
            if meta.is_dir() {
                Ok(())
            } else {
                Err(Error::not_a_directory(dir))
            }
        };
        match self.stat(dir) {
            Ok(meta) => exists(&meta),
            Err(e) if e.kind() == io::ErrorKind::NotFound => match self.dir.create_dir(rel(dir)) {
                Ok(()) => Ok(()),
                // Another writer created it first, or a dangling link stands there.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => match self.stat(dir) {
                    Ok(meta) => exists(&meta),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => Err(errors::dangling(dir)),
                    Err(e) => Err(from_io(e, dir, "create")),
                },
                Err(e) => Err(from_io(e, dir, "create")),
            },
            Err(e) => Err(from_io(e, dir, "create")),
        }
    }

    /// The root-relative file a write of `path` replaces: `path` itself, or
    /// the target of the symbolic link at `path` when it stays inside the root.
    fn write_target(&self, path: &VPath) -> Result<PathBuf, Error> {
        let meta = match self.dir.symlink_metadata(rel(path)) {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(rel(path).to_path_buf()),
            Err(e) => return Err(from_io(e, path, "write")),
        };
        if meta.is_dir() {
            return Err(Error::is_a_directory(path));
        }
        if meta.is_file() {
            return Ok(rel(path).to_path_buf());
        }
        if !meta.is_symlink() {
            return Err(errors::special(path));
        }
        // The link's target, named by `Dir::canonicalize`. That name comes
        // from the kernel's view of an opened handle, which a concurrent
        // rename can make stale ("name (deleted)"), so it is accepted only
        // when it names the very file the link leads to.
        for _ in 0..3 {
            let followed = match self.stat(path) {
                Ok(meta) => meta,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Err(errors::dangling(path));
                }
                Err(e) => return Err(from_io(e, path, "write")),
            };
            if followed.is_dir() {
                return Err(Error::is_a_directory(path));
            }
            if !followed.is_file() {
                return Err(errors::special(path));
            }
            let target = self.canonical(path)?;
            let named = self.dir.symlink_metadata(&target);
            if named.is_ok_and(|m| m.is_file() && same_file(&m, &followed)) {
                if Root::vpath_of(&target).is_none() {
                    return Err(Error::refusal_at(
                        ErrorKind::InvalidPath,
                        path,
                        "",
                        " is a symbolic link to a name that is not a valid path; write somewhere else.",
                    ));
                }
                return Ok(target);
            }
        }
        Err(Error::refusal_at(
            ErrorKind::Conflict,
            path,
            "",
            " is a symbolic link that kept changing while it was written; try again.",
        ))
    }

    /// Opens the directory holding the root-relative `target` and locks it
    /// across processes (see [`LockedDir`]) for the caller's read-modify-write.
    pub(crate) fn lock_dir_of(
        &self,
        path: &VPath,
        target: &Path,
        what: &str,
    ) -> Result<LockedDir, Error> {
        let fail = |e: io::Error| from_io(e, path, what);
        let parent_rel = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let Some(name) = target.file_name() else {
            return Err(Error::is_a_directory(path));
        };
        let dir = self.dir.open_dir(parent_rel).map_err(fail)?;
        let lock = crate::xlock::lock_dir(&dir).map_err(fail)?;
        Ok(LockedDir {
            dir,
            name: name.to_owned(),
            _lock: lock,
        })
    }

    /// Writes `bytes` to a temporary file in the locked directory and renames
    /// it over the target there.
    fn replace(&self, path: &VPath, locked: &LockedDir, bytes: &[u8]) -> Result<(), Error> {
        let fail = |e: io::Error| from_io(e, path, "write");
        let (parent, name) = (&locked.dir, locked.name.as_os_str());
        let permissions = parent
            .symlink_metadata(name)
            .ok()
            .filter(|m| m.is_file())
            .map(|m| m.permissions());
        let (temp, file) = create_temp(parent).map_err(fail)?;
        let staged = fill(file, bytes, permissions, self.options.fsync)
            .and_then(|()| parent.rename(&temp.0, parent, name));
        if let Err(e) = staged {
            let _ = parent.remove_file(&temp.0);
            return Err(fail(e));
        }
        drop(temp);
        if self.options.fsync {
            sync_dir(parent).map_err(fail)?;
        }
        Ok(())
    }
}

/// A directory handle, the name of the entry a mutation changes in it, and
/// the cross-process lock on the directory, held until this is dropped.
#[derive(Debug)]
pub(crate) struct LockedDir {
    pub(crate) dir: Dir,
    pub(crate) name: std::ffi::OsString,
    _lock: crate::xlock::DirLock,
}

/// True when `a` and `b` describe the same file.
#[cfg(unix)]
fn same_file(a: &Metadata, b: &Metadata) -> bool {
    use cap_std::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

/// True when `a` and `b` describe the same file (as far as can be told here).
#[cfg(not(unix))]
fn same_file(a: &Metadata, b: &Metadata) -> bool {
    a.len() == b.len() && a.modified().ok() == b.modified().ok()
}

/// Writes the content, sets the permissions, and flushes when asked.
fn fill(
    mut file: File,
    bytes: &[u8],
    permissions: Option<cap_std::fs::Permissions>,
    fsync: bool,
) -> io::Result<()> {
    file.write_all(bytes)?;
    if let Some(permissions) = permissions {
        file.set_permissions(permissions)?;
    }
    if fsync {
        file.sync_all()?;
    }
    Ok(())
}

/// Flushes a directory's entries (the rename) to the disk.
fn sync_dir(dir: &Dir) -> io::Result<()> {
    dir.open(".")?.sync_all()
}

/// The temporary names this process is writing now (hidden from its own listings).
static LIVE_TEMPS: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// True when `name` is a temporary file this process is writing now.
pub(crate) fn is_live_temp(name: &str) -> bool {
    LIVE_TEMPS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .contains(name)
}

/// A temporary name in use; dropping it forgets the name.
struct LiveTemp(String);

impl LiveTemp {
    fn new(name: String) -> LiveTemp {
        LIVE_TEMPS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name.clone());
        LiveTemp(name)
    }
}

impl Drop for LiveTemp {
    fn drop(&mut self) {
        LIVE_TEMPS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.0);
    }
}

/// Creates a new, empty temporary file in `dir`, returning its name.
///
/// The name is random and created with `O_EXCL`, so it never replaces a
/// user's file of the same name (it tries another); it is registered as live
/// before the file exists, so this process's listings never show it.
fn create_temp(dir: &Dir) -> io::Result<(LiveTemp, File)> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    for _ in 0..16 {
        let name = LiveTemp::new(temp_name());
        match dir.open_with(&name.0, &options) {
            Ok(file) => return Ok((name, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        "no free temporary file name after 16 tries",
    ))
}

/// A fresh temporary name: the prefix and 64 random bits in hex.
fn temp_name() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.write_u32(std::process::id());
    format!("{TEMP_PREFIX}{:016x}", hasher.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_names_are_short_and_distinct() {
        let a = temp_name();
        let b = temp_name();
        assert_ne!(a, b);
        assert_eq!(a.len(), TEMP_PREFIX.len() + 16);
        assert!(a.len() < 32);
    }
}
