//! The `Backend` and `Sandbox` traits: the file contract every backend implements.

use std::time::Duration;

use async_trait::async_trait;
use burrow_types::{EditResult, ExecuteResponse, WriteResult};

use crate::caps::Capabilities;
use crate::context::{FileContext, LockKey};
use crate::error::{Error, Result};
use crate::path::VPath;
use crate::results::{GlobResult, GrepQuery, GrepResult, LineWindow, Listing};

/// Default output cap of [`Sandbox::execute`], in bytes.
pub const DEFAULT_EXEC_OUTPUT_CAP: usize = 100_000;
/// Default timeout of [`Sandbox::execute`].
pub const DEFAULT_EXEC_TIMEOUT: Duration = Duration::from_secs(120);
/// The exit code reported for a command killed at its timeout.
pub const TIMEOUT_EXIT_CODE: i32 = 124;

/// A place to keep files: the contract every burrow backend implements.
///
/// This trait is an API boundary. Every sentence under a method's
/// `# Behavior` heading is asserted by a scenario of `burrow-conformance`,
/// which every backend's tests run. Paths are [`VPath`]s, parsed and confined
/// before a backend sees them. All results are bounded by the caller's
/// `limit` and by [`Capabilities::limits`].
///
/// Common to every method:
/// - A refusal names only virtual paths, never a host path.
/// - A refused mutation leaves every byte as it was.
/// - On a backend whose capabilities say `tenants`, one tenant can neither
///   read, list, glob nor grep another's files; another tenant's file looks
///   exactly like a missing one.
/// - Sorting is by the full virtual path in byte order.
#[async_trait]
pub trait Backend: Send + Sync {
    /// What this backend supports and its limits.
    ///
    /// # Behavior
    ///
    /// - Is constant for the life of the backend.
    fn capabilities(&self) -> Capabilities;

    /// The lock keys a mutation of `path` holds.
    ///
    /// # Behavior
    ///
    /// - Two mutations of the same path by the same tenant share a key; the
    ///   runtime runs mutations whose keys meet in call order. Reads take none.
    /// - The default is one key for (this backend's scope, tenant, path).
    fn locks(&self, ctx: &FileContext, path: &VPath) -> Vec<LockKey> {
        vec![LockKey::for_path(self.lock_scope(), &ctx.tenant, path)]
    }

    /// A name that keeps this backend's lock keys apart from another's.
    fn lock_scope(&self) -> &str {
        "backend"
    }

    /// The entries directly beneath `dir`.
    ///
    /// # Behavior
    ///
    /// - Returns at most `limit` entries sorted by path, with `truncated` set
    ///   when more exist.
    /// - Directories have `is_dir` true and no size; files have their byte
    ///   size, and `modified_at` where the backend knows it.
    /// - "/" always exists, even in an empty backend.
    /// - `ls` of a file: NotADirectory. `ls` of a missing path: NotFound.
    async fn ls(&self, ctx: &FileContext, dir: &VPath, limit: usize) -> Result<Listing>;

    /// At most `limit` lines of the text file at `path`, from 0-based line `offset`.
    ///
    /// # Behavior
    ///
    /// - Lines split on "\n" only; a final "\n" does not make an extra line;
    ///   a "\r" before "\n" is not part of the line.
    /// - Returns the total line count and `truncated` when lines remain.
    /// - An empty file has zero lines, whatever the offset, and is no error.
    /// - An `offset` at or past the end of a non-empty file: InvalidArgument
    ///   naming the line count.
    /// - Content that is not UTF-8: NotText. A directory: IsADirectory.
    ///   Missing: NotFound. Larger than the max file size: TooLarge.
    /// - A path that is neither a regular file nor a directory is refused, never opened.
    async fn read(
        &self,
        ctx: &FileContext,
        path: &VPath,
        offset: usize,
        limit: usize,
    ) -> Result<LineWindow>;

    /// The exact bytes of the file at `path`.
    ///
    /// # Behavior
    ///
    /// - Returns every byte exactly as written.
    /// - A directory: IsADirectory. Missing: NotFound. Larger than the max
    ///   file size: TooLarge.
    async fn read_bytes(&self, ctx: &FileContext, path: &VPath) -> Result<Vec<u8>>;

    /// Creates or replaces the file at `path` with `text`.
    ///
    /// # Behavior
    ///
    /// - Creates missing parent directories.
    /// - Replacing keeps the file's created_at.
    /// - Writing where a directory stands: IsADirectory; where a parent is a
    ///   file: NotADirectory; writing "/": IsADirectory.
    /// - Content larger than the max file size: TooLarge, nothing written.
    /// - Returns the path written.
    async fn write(&self, ctx: &FileContext, path: &VPath, text: &str) -> Result<WriteResult> {
        self.write_bytes(ctx, path, text.as_bytes()).await
    }

    /// Creates or replaces the file at `path` with exact bytes.
    ///
    /// # Behavior
    ///
    /// - As [`Backend::write`]; `read_bytes` then returns the same bytes.
    async fn write_bytes(
        &self,
        ctx: &FileContext,
        path: &VPath,
        bytes: &[u8],
    ) -> Result<WriteResult>;

    /// Replaces `old` by `new` in the text file at `path`.
    ///
    /// # Behavior
    ///
    /// - Replaces the one occurrence of `old`, or every one when
    ///   `replace_all`; returns the count.
    /// - Refused with InvalidArgument, the file left byte-identical, when
    ///   `old` is empty, absent, equal to `new`, or occurs more than once
    ///   without `replace_all` (the message gives the count).
    /// - Content that is not UTF-8: NotText. Missing: NotFound. A directory:
    ///   IsADirectory.
    /// - Line endings are preserved: in a CRLF file, "\n" in `old` and `new`
    ///   matches and writes "\r\n"; in an LF file, "\r\n" in `old` and `new`
    ///   matches and writes "\n". A file with no line ending, or with both,
    ///   takes `old` and `new` as given.
    /// - An edit whose `old` and `new` are equal once their line endings are
    ///   the file's (it would change only line endings): InvalidArgument, the
    ///   file left byte-identical and its modified_at unchanged.
    /// - Concurrent edits of one file never lose an update.
    async fn edit(
        &self,
        ctx: &FileContext,
        path: &VPath,
        old: &str,
        new: &str,
        replace_all: bool,
    ) -> Result<EditResult>;

    /// Deletes the file, or the empty directory, at `path`.
    ///
    /// # Behavior
    ///
    /// - A file is removed; a directory with entries: DirectoryNotEmpty.
    /// - Missing: NotFound. Deleting "/": InvalidPath.
    /// - Where directories are implicit (no `empty_dirs` capability) a
    ///   directory disappears with its last file.
    async fn delete(&self, ctx: &FileContext, path: &VPath) -> Result<()>;

    /// Makes the directory `path`; with `parents`, its missing parents too and
    /// no refusal when it already exists (`mkdir -p`).
    ///
    /// # Behavior
    ///
    /// - The new directory is listed by `ls` as a directory, lists empty, and
    ///   stays until it is deleted, even on a backend without `empty_dirs`;
    ///   `glob` and `grep` never report it.
    /// - A missing parent without `parents`: NotFound, nothing made.
    /// - An existing directory (or "/"): no change, and AlreadyExists without
    ///   `parents`.
    /// - A file at `path`: AlreadyExists; a file among its parents:
    ///   NotADirectory. Nothing is made.
    /// - A backend whose capabilities do not say `make_dir`: Unsupported,
    ///   nothing made (the default).
    async fn make_dir(&self, ctx: &FileContext, path: &VPath, parents: bool) -> Result<()> {
        let _ = (ctx, path, parents);
        Err(Error::unsupported("making directories"))
    }

    /// Deletes the file or the directory at `path` with everything beneath it (`rm -r`).
    ///
    /// # Behavior
    ///
    /// - Every file and directory at or beneath `path` is removed; prefix
    ///   siblings ("a.b", "ab" next to "a") are untouched.
    /// - A file is removed as [`Backend::delete`] removes it.
    /// - Missing: NotFound. Deleting "/": InvalidPath. Nothing is removed.
    /// - Where directories are implicit, emptied parents disappear as with
    ///   `delete`; a directory made with `make_dir` stays.
    /// - The default walks the tree a page at a time (memory bounded by the
    ///   page and the depth), deleting files then emptied directories with
    ///   [`Backend::delete`]: a failure mid-way leaves part of the tree, and
    ///   running it again finishes it. Its inner deletes carry no effect key.
    /// - Concurrent changes beneath `path` are never half-applied: each write,
    ///   edit, delete or `make_dir` there lands wholly before the removal (and
    ///   goes with the tree) or wholly after it (and stays), or is refused as
    ///   Conflict; no file the tree held when the call began remains. Backends
    ///   that remove a tree in steps hold a lock that makes changes of the
    ///   same process wait (the folder), or remove it in one
    ///   transaction (SQLite, the `StateBackend`), or list afresh until nothing
    ///   is left (the object store, the default walk); see ADR 0223.
    async fn delete_tree(&self, ctx: &FileContext, path: &VPath) -> Result<()> {
        crate::tree::delete_tree_by_walk(self, ctx, path).await
    }

    /// Files beneath `under` whose path relative to `under` matches `pattern`.
    ///
    /// # Behavior
    ///
    /// - Files only, never directories, sorted by path.
    /// - `*`, `?` and `[..]` stay within one segment, `**` spans segments,
    ///   `{a,b}` alternates.
    /// - A pattern starting with "/" is anchored at `under`; a pattern with no
    ///   "/" matches the file name at any depth.
    /// - Dot-files match like any other file.
    /// - Filters before the limit: at most `limit` files, `truncated` when more match.
    /// - A pattern that climbs ("../*"): InvalidPath. A malformed pattern:
    ///   InvalidArgument. A missing `under`: no files. `under` a file: NotADirectory.
    async fn glob(
        &self,
        ctx: &FileContext,
        pattern: &str,
        under: &VPath,
        limit: usize,
    ) -> Result<GlobResult>;

    /// Lines matching `query` in files beneath `under` (or the file `under` itself).
    ///
    /// # Behavior
    ///
    /// - The pattern is a Rust regex (linear time), or a literal with
    ///   `fixed_strings`; `ignore_case` folds case.
    /// - A line matches as `rg --crlf` matches it: the pattern sees the line
    ///   up to its "\n"; nothing in it matches "\r" or "\n"; `^` and `$` are
    ///   line anchors, and `$` also matches before a "\r" that ends the line.
    ///   A pattern that matches the empty string ("", `^`, `x*`) matches
    ///   every line.
    /// - A pattern over 1000 bytes, malformed, or over the compiled-size
    ///   limit: InvalidArgument with the compiler's reason.
    /// - `include` filters file paths as `glob` does.
    /// - Files that are not UTF-8 text (or hold a NUL) are skipped.
    /// - Results in path order, then line order; at most `limit`, `truncated`
    ///   when more exist. Line numbers are 1-based with `read`'s line split.
    /// - A missing `under`: no matches.
    async fn grep(
        &self,
        ctx: &FileContext,
        query: &GrepQuery,
        under: &VPath,
        limit: usize,
    ) -> Result<GrepResult>;

    /// This backend as a [`Sandbox`], when it runs commands.
    fn as_sandbox(&self) -> Option<&dyn Sandbox> {
        None
    }
}

/// A backend that also runs shell commands in its workspace.
#[async_trait]
pub trait Sandbox: Backend {
    /// Runs `sh -c command` in the workspace directory.
    ///
    /// # Behavior
    ///
    /// - stdout and stderr are interleaved as produced.
    /// - Output is capped (default 100,000 bytes) with `truncated`; a command
    ///   that floods output never grows memory past the cap.
    /// - At `timeout` (default 120 s) the whole process group is killed and
    ///   exit code 124 is returned with a note in the output.
    async fn execute(
        &self,
        ctx: &FileContext,
        command: &str,
        timeout: Option<Duration>,
    ) -> Result<ExecuteResponse>;
}
