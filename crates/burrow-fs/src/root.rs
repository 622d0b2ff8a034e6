//! `Root`: the cap-std handle of the workspace folder and the blocking operations on it.
//!
//! Every method here runs on a blocking thread and reaches the disk only
//! through `self.dir` (or handles opened from it), with paths relative to it.

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use burrow_backend::{Error, FileInfo, Listing, ResultOrder, Smallest, VPath, text};
use cap_std::fs::{Dir, File, Metadata, OpenOptions};

use crate::errors::{self, from_io};
use crate::options::{FsOptions, TEMP_PREFIX};

/// The workspace folder: a directory handle plus the options it was opened with.
#[derive(Debug)]
pub(crate) struct Root {
    pub(crate) dir: Dir,
    pub(crate) options: FsOptions,
}

/// `path` relative to the root, as cap-std takes it ("." for the root).
pub(crate) fn rel(path: &VPath) -> &Path {
    if path.is_root() {
        Path::new(".")
    } else {
        Path::new(&path.as_str()[1..])
    }
}

/// Options that open an existing file for reading without blocking on a FIFO
/// and without acquiring a controlling terminal.
pub(crate) fn read_options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use cap_std::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    options
}

/// The RFC 3339 modification time of `meta`, where the host reports one.
pub(crate) fn modified_at(meta: &Metadata) -> Option<String> {
    let time = meta.modified().ok()?.into_std();
    jiff::Timestamp::try_from(time).ok().map(|t| t.to_string())
}

/// The `FileInfo` of the regular file at `path` described by `meta`.
pub(crate) fn file_info(path: &VPath, meta: &Metadata) -> FileInfo {
    FileInfo {
        name: path.name().to_owned(),
        path: path.as_str().to_owned(),
        is_dir: false,
        size: Some(meta.len()),
        modified_at: modified_at(meta),
    }
}

/// The `FileInfo` of the directory at `path`.
fn dir_info(path: &VPath) -> FileInfo {
    FileInfo {
        name: path.name().to_owned(),
        path: path.as_str().to_owned(),
        is_dir: true,
        size: None,
        modified_at: None,
    }
}

/// A directory entry, ordered by its name's bytes.
struct Named {
    name: String,
    file_type: cap_std::fs::FileType,
}

impl ResultOrder for Named {
    fn order_path(&self) -> &str {
        &self.name
    }
}

/// True for a name the listing hides: the temporary file of an atomic write
/// that this process is making right now. No name is reserved: a user's
/// `.burrow-tmp-x` is an ordinary file, and so is a temporary file left by a
/// crash.
pub(crate) fn is_hidden_temp(name: &str) -> bool {
    name.starts_with(TEMP_PREFIX) && crate::write::is_live_temp(name)
}

impl Root {
    /// Metadata of `path`, following symbolic links that stay inside the root.
    pub(crate) fn stat(&self, path: &VPath) -> io::Result<Metadata> {
        self.dir.metadata(rel(path))
    }

    /// Opens the regular file at `path` for reading, refusing directories,
    /// special files, escapes and files past the max size.
    ///
    /// The type is checked before the open, so a FIFO or device is never
    /// opened; the open itself is non-blocking and the opened handle is
    /// checked again, so a FIFO swapped in between is refused too.
    pub(crate) fn open_file(&self, path: &VPath) -> Result<(File, Metadata), Error> {
        if path.is_root() {
            return Err(Error::is_a_directory(path));
        }
        let meta = self.stat(path).map_err(|e| from_io(e, path, "read"))?;
        self.check_regular(path, &meta)?;
        let file = self
            .dir
            .open_with(rel(path), &read_options())
            .map_err(|e| from_io(e, path, "read"))?;
        let meta = file.metadata().map_err(|e| from_io(e, path, "read"))?;
        self.check_regular(path, &meta)?;
        Ok((file, meta))
    }

    fn check_regular(&self, path: &VPath, meta: &Metadata) -> Result<(), Error> {
        if meta.is_dir() {
            return Err(Error::is_a_directory(path));
        }
        if !meta.is_file() {
            return Err(errors::special(path));
        }
        text::check_size(path, meta.len(), self.options.max_file_size)
    }

    /// Every byte of the regular file at `path`, never more than the max file
    /// size plus one byte read (a file that grew past the limit since its
    /// size was checked is refused).
    pub(crate) fn read_all(&self, path: &VPath) -> Result<Vec<u8>, Error> {
        let (file, meta) = self.open_file(path)?;
        read_capped(path, file, &meta, self.options.max_file_size)
    }

    /// Every byte of the file at `path`, which a walk has just seen as a
    /// regular file (or a link to one): opened directly, without a type
    /// check before the open (the walk's was one), but still non-blocking,
    /// and refused unless the opened handle is a regular file within the limit.
    pub(crate) fn read_found(&self, path: &VPath) -> Result<Vec<u8>, Error> {
        let file = self
            .dir
            .open_with(rel(path), &read_options())
            .map_err(|e| from_io(e, path, "read"))?;
        let meta = file.metadata().map_err(|e| from_io(e, path, "read"))?;
        self.check_regular(path, &meta)?;
        read_capped(path, file, &meta, self.options.max_file_size)
    }

    /// The entries directly beneath `dir`.
    pub(crate) fn ls(&self, dir: &VPath, limit: usize) -> Result<Listing, Error> {
        let handle = if dir.is_root() {
            self.dir.try_clone().map_err(|e| from_io(e, dir, "list"))?
        } else {
            self.dir
                .open_dir(rel(dir))
                .map_err(|e| self.ls_error(e, dir))?
        };
        // The `keep` first names (and whether there are more), held while the
        // directory is read, so a listing costs memory in proportion to its
        // limit. Entries that turn out not to be shown (special files, links
        // leading out) can leave the page short: then the directory is read
        // again, holding more.
        let mut keep = limit.saturating_add(1);
        loop {
            let mut top = Smallest::new(keep);
            for entry in handle.entries().map_err(|e| from_io(e, dir, "list"))? {
                let entry = entry.map_err(|e| from_io(e, dir, "list"))?;
                let Ok(name) = entry.file_name().into_string() else {
                    continue;
                };
                if is_hidden_temp(&name) {
                    continue;
                }
                let file_type = entry.file_type().map_err(|e| from_io(e, dir, "list"))?;
                top.push(Named { name, file_type });
            }
            let (held, more) = top.finish();
            let mut listing = Listing::default();
            for Named { name, file_type } in held {
                let Ok(path) = dir.join(&name) else {
                    continue;
                };
                // Directory entries are lstat'ed through their parent's handle;
                // links are resolved beneath the root. Anything that is not (or
                // does not lead to) a regular file or a directory is not shown.
                let meta = if file_type.is_symlink() {
                    self.stat(&path)
                } else {
                    handle.symlink_metadata(&name)
                };
                let info = match meta {
                    Ok(m) if m.is_dir() => dir_info(&path),
                    Ok(m) if m.is_file() => file_info(&path, &m),
                    Ok(_) => continue,
                    Err(e) if errors::is_missing(&e) || is_refused(&e) => continue,
                    Err(e) => return Err(from_io(e, &path, "list")),
                };
                if listing.entries.len() == limit {
                    listing.truncated = true;
                    break;
                }
                listing.entries.push(info);
            }
            if more && !listing.truncated {
                if listing.entries.len() < limit {
                    keep = keep.saturating_mul(2);
                    continue;
                }
                listing.truncated = true;
            }
            return Ok(listing);
        }
    }

    fn ls_error(&self, e: io::Error, dir: &VPath) -> Error {
        if e.kind() == io::ErrorKind::NotADirectory {
            // Either `dir` itself is a file (NotADirectory) or a parent of it
            // is (then `dir` does not exist).
            return match self.stat(dir) {
                Ok(_) => Error::not_a_directory(dir),
                Err(_) => Error::not_found(dir),
            };
        }
        from_io(e, dir, "list")
    }

    /// Deletes the file, link or empty directory at `path`.
    ///
    /// A symbolic link is removed itself, never its target; a FIFO or other
    /// special file is unlinked without being opened.
    pub(crate) fn delete(&self, path: &VPath) -> Result<(), Error> {
        if path.is_root() {
            return Err(Error::root_cannot_be_deleted());
        }
        let locked = self.lock_dir_of(path, rel(path), "delete")?;
        let (dir, name) = (&locked.dir, locked.name.as_os_str());
        let meta = dir
            .symlink_metadata(name)
            .map_err(|e| from_io(e, path, "delete"))?;
        let removed = if meta.is_dir() {
            dir.remove_dir(name)
        } else {
            dir.remove_file(name)
        };
        removed.map_err(|e| from_io(e, path, "delete"))
    }

    /// The path of the root-relative `target` as a `VPath`, for messages.
    pub(crate) fn vpath_of(target: &Path) -> Option<VPath> {
        VPath::parse(target.to_str()?).ok()
    }

    /// The canonical root-relative path `path` leads to through symbolic links.
    pub(crate) fn canonical(&self, path: &VPath) -> Result<PathBuf, Error> {
        self.dir.canonicalize(rel(path)).map_err(|e| {
            if errors::is_missing(&e) {
                errors::dangling(path)
            } else {
                from_io(e, path, "resolve")
            }
        })
    }
}

/// True when cap-std or the host refused the access (an escape, a permission
/// problem, a loop of links): such entries are left out of listings and walks.
pub(crate) fn is_refused(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::PermissionDenied || errors::is_loop(e)
}

/// Reads `file` (whose metadata is `meta`), at most `max` bytes; TooLarge past it.
pub(crate) fn read_capped(
    path: &VPath,
    file: File,
    meta: &Metadata,
    max: u64,
) -> Result<Vec<u8>, Error> {
    let expected = meta.len().min(max);
    let mut buf = Vec::with_capacity(usize::try_from(expected).unwrap_or(0).saturating_add(1));
    file.take(max.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(|e| from_io(e, path, "read"))?;
    if buf.len() as u64 > max {
        return Err(Error::too_large(path, buf.len() as u64, max));
    }
    Ok(buf)
}
