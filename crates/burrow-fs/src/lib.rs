//! `FsBackend`: a local folder as a burrow backend, confined beneath its root with cap-std.
//!
//! # Key design decision: every access goes through one `cap_std::fs::Dir`
//!
//! A folder handed to an agent must behave like a sandbox: whatever names the
//! model invents, it can only ever touch what lies beneath the root. Checking
//! paths as strings is not enough on a real file system, because the danger is
//! not in the name but in what the kernel finds while walking it: a symbolic
//! link (`notes -> /etc`), a link that climbs (`x -> ../../secrets`), a
//! symlinked parent directory, or a link swapped in by another process between
//! the moment a path was checked and the moment it was opened.
//!
//! So the backend never opens a host path. It opens the root once with
//! [`cap_std::fs::Dir::open_ambient_dir`] and performs every open, stat,
//! listing, rename and removal *relative to that handle*. cap-std resolves each
//! path beneath the handle: on Linux 5.6+ with one `openat2` call and
//! `RESOLVE_BENEATH` (the kernel itself refuses to leave the directory), and
//! elsewhere by walking the path one component at a time with `O_NOFOLLOW`,
//! following symbolic links itself and refusing any that leads out. The check
//! *is* the open, so there is no window between them for a swapped link to
//! slip through.
//!
//! What that gives:
//! - `..`, absolute symlinks, symlinks that climb, and symlinked parents that
//!   lead outside are refused with PermissionDenied, never followed, and the
//!   message names only the virtual path.
//! - Symlinks that stay inside the root are followed (for reads, and for
//!   writes, which replace the link's target).
//! - Directory walks (glob, grep) descend through directory handles opened
//!   from their parents' handles, never through host paths, and never into a
//!   symlinked directory.
//!
//! What it does not prevent:
//! - Hard links. A hard link inside the root to a file outside it is the same
//!   file; nothing at path-resolution time can tell. Whoever prepares the
//!   folder must not plant hard links.
//! - Mount points. A file system mounted beneath the root is beneath the root.
//! - Another process with access to the host moving a directory out of the
//!   root while a handle to it is held, or changing files under the backend
//!   without burrow (burrow processes serialise their edits with an advisory
//!   lock on the directory; other programs do not take it).
//! - Resource use: glob and grep walk in path order and stop once `limit`
//!   results and one more are certain, but a search with fewer matches than
//!   that walks the whole tree (in time, not memory).
//!
//! Everything else that decides what an operation *means* (lines, CRLF edits,
//! glob dialect, grep over a buffer) comes from `burrow-backend`, so a folder
//! behaves exactly like every other backend; `burrow-conformance` proves it.
//!
//! See [`FsBackend`] for the semantics (atomic writes, temporary names,
//! symlinks, special files, limits) under headings.

mod backend;
#[cfg(test)]
mod cancel_tests;
mod errors;
#[cfg(test)]
mod hook;
mod options;
mod pool;
mod root;
mod search;
mod walk;
mod write;
mod xlock;

pub use backend::FsBackend;
pub use options::{FsOptions, TEMP_PREFIX};
