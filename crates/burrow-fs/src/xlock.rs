//! Cross-process locks: an advisory `flock` on a directory serialises every read-modify-write in it across processes.
//!
//! The in-process per-path lock (`PATH_LOCKS`, a `burrow_backend::LockTable`)
//! cannot see another process. Each
//! mutation therefore also takes an exclusive advisory lock on the directory
//! that holds the entry it changes, for as long as it reads, computes and
//! renames (ADR 0064). The lock is on the directory, not on the file,
//! because a write replaces the file by a rename (a lock on the old inode
//! would guard a file that is no longer there), a create has no file to lock
//! yet, and a delete removes it; the directory's inode stays the same through
//! all three. Nothing is created: the lock lives on an open handle of a
//! directory that already exists, so the listing shows only the user's files.
//!
//! `flock` locks belong to an open file description, so two handles opened
//! separately in one process exclude each other as well; a lock is released
//! when its handle is closed, also when the process dies.

use std::io;

use cap_std::fs::Dir;

/// An exclusive lock on a directory, released on drop.
#[derive(Debug)]
pub(crate) struct DirLock {
    // Closing the handle releases the lock.
    _file: std::fs::File,
}

/// Blocks until this caller holds the exclusive lock on `dir`.
///
/// The handle is a new open of the directory (not a `dup` of `dir`), so the
/// lock is this caller's alone.
pub(crate) fn lock_dir(dir: &Dir) -> io::Result<DirLock> {
    let file = dir.open(".")?.into_std();
    loop {
        match file.lock() {
            Ok(()) => return Ok(DirLock { _file: file }),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}
