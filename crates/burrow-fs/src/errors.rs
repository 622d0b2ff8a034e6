//! Turning host I/O errors into contract errors that name only virtual paths.

use std::io;

use burrow_backend::{Error, ErrorKind, VPath};

/// True for cap-std's refusal of a path that would lead outside the root.
///
/// cap-std reports an escape as PermissionDenied without an OS error code
/// (the kernel's `EXDEV` from `RESOLVE_BENEATH` is translated into it); a real
/// `EACCES`/`EPERM` from the host carries its code.
pub(crate) fn is_escape(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::PermissionDenied && e.raw_os_error().is_none()
}

/// True when the path (or a parent of it) does not exist as a directory chain.
pub(crate) fn is_missing(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

/// A refusal for a path that leads outside the workspace.
pub(crate) fn escape(path: &VPath) -> Error {
    Error::refusal_at(
        ErrorKind::PermissionDenied,
        path,
        "",
        " leads outside the workspace through a symbolic link; it is refused, not followed.",
    )
}

/// A refusal for a FIFO, socket, device or other non-regular file.
pub(crate) fn special(path: &VPath) -> Error {
    Error::refusal_at(
        ErrorKind::PermissionDenied,
        path,
        "",
        " is neither a regular file nor a directory (a pipe, socket or device); it is not opened.",
    )
}

/// A refusal for a symbolic link whose target does not exist.
pub(crate) fn dangling(path: &VPath) -> Error {
    Error::refusal_at(
        ErrorKind::PermissionDenied,
        path,
        "",
        " is a symbolic link to nothing; delete it or write somewhere else.",
    )
}

/// The contract error for an I/O error `e` met while doing `what` to `path`.
///
/// Missing paths, escapes, permission problems, symlink loops and the
/// directory kinds become refusals; anything else is a failure whose message
/// names only the virtual path (the I/O error is kept as its source).
pub(crate) fn from_io(e: io::Error, path: &VPath, what: &str) -> Error {
    if is_escape(&e) {
        return escape(path);
    }
    match e.kind() {
        io::ErrorKind::NotFound => Error::not_found(path),
        io::ErrorKind::NotADirectory => Error::not_found(path),
        io::ErrorKind::IsADirectory => Error::is_a_directory(path),
        io::ErrorKind::DirectoryNotEmpty => Error::directory_not_empty(path),
        io::ErrorKind::PermissionDenied => Error::refusal_at(
            ErrorKind::PermissionDenied,
            path,
            "",
            " is not accessible: the host denies permission.",
        ),
        io::ErrorKind::InvalidFilename => Error::refusal_at(
            ErrorKind::InvalidPath,
            path,
            "",
            " is not a name this file system accepts; choose another name.",
        ),
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded => Error::refusal_at(
            ErrorKind::QuotaExceeded,
            path,
            format!("there is no space left to {what} "),
            "; delete files first.",
        ),
        _ if is_loop(&e) => Error::refusal_at(
            ErrorKind::PermissionDenied,
            path,
            "",
            " goes through a loop of symbolic links; it is refused.",
        ),
        _ => Error::failure(format!("could not {what} {path}"), e),
    }
}

/// True for "too many levels of symbolic links".
#[cfg(unix)]
pub(crate) fn is_loop(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
}

/// True for "too many levels of symbolic links".
#[cfg(not(unix))]
pub(crate) fn is_loop(_e: &io::Error) -> bool {
    false
}
