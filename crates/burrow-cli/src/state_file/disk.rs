//! The files of a state document on the host: the lock, the journal's appends and atomic replacements, and the test-only failpoints of compaction.
//!
//! Every function here is plain I/O returning `io::Result`; the caller
//! (the parent module) turns an error into a burrow failure that names the
//! document as the user gave it.

use std::fs;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use burrow::state_journal::{HEADER_LEN, header};

/// The environment variable naming a compaction step at which the process
/// aborts (see [`failpoint`]). **Test-only**: it exists so that the tests
/// can kill burrow at each step of a compaction; nothing else should set it.
const FAILPOINT_VAR: &str = "BURROW_STATE_FAILPOINT";

/// Aborts the process (as a `kill -9` would end it: no destructor, no
/// cleanup) when [`FAILPOINT_VAR`] names `step`. The steps: `after_append`
/// (a group's records are in the journal and synced, no result printed yet),
/// `after_temp_write`, `after_temp_fsync`, `after_fold_mark` (the journal's
/// mark naming the compacted document is synced, the document not renamed
/// yet), `after_rename` (the compacted document is in place, the journal
/// not cut yet) and `after_journal_cut`.
pub fn failpoint(step: &str) {
    if std::env::var_os(FAILPOINT_VAR).is_some_and(|v| v == step) {
        std::process::abort();
    }
}

/// What identifies one version of the document file without reading it:
/// its length, modification time and (on Unix) inode. A rename or a
/// rewrite by another program changes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
    inode: u64,
}

impl Stamp {
    fn of(meta: &fs::Metadata) -> Stamp {
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(meta);
        #[cfg(not(unix))]
        let inode = 0;
        Stamp {
            len: meta.len(),
            modified: meta.modified().ok(),
            inode,
        }
    }
}

/// The stamp of the file at `path`; `None` when there is none.
pub fn stamp(path: &Path) -> io::Result<Option<Stamp>> {
    match fs::metadata(path) {
        Ok(meta) => Ok(Some(Stamp::of(&meta))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The bytes of the file at `path` and the stamp of the version read;
/// `None` when there is no file.
pub fn read_stamped(path: &Path) -> io::Result<Option<(Vec<u8>, Stamp)>> {
    let mut file = match fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    if meta.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            "it is a directory",
        ));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.read_to_end(&mut bytes)?;
    Ok(Some((bytes, Stamp::of(&meta))))
}

/// The journal at `path`, open for reading; `None` when there is none.
pub fn open_journal(path: &Path) -> io::Result<Option<fs::File>> {
    match fs::File::open(path) {
        Ok(file) => Ok(Some(file)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The first [`HEADER_LEN`] bytes of `file` (fewer when it is shorter),
/// then the bytes from `from` to its end.
pub fn read_head_and_tail(file: &mut fs::File, from: u64) -> io::Result<(Vec<u8>, Vec<u8>)> {
    let mut head = Vec::with_capacity(HEADER_LEN);
    file.seek(SeekFrom::Start(0))?;
    Read::by_ref(file)
        .take(HEADER_LEN as u64)
        .read_to_end(&mut head)?;
    let mut tail = Vec::new();
    if file.metadata()?.len() > from {
        file.seek(SeekFrom::Start(from))?;
        file.read_to_end(&mut tail)?;
    }
    Ok((head, tail))
}

/// The file `NAME{suffix}` beside the document `path`, or, when that name
/// would pass the usual 255-byte limit, `.burrow-HASH{suffix}` (a hash of
/// the name that every burrow computes alike).
pub fn beside(path: &Path, suffix: &str) -> PathBuf {
    let name = path.file_name().unwrap_or_default();
    if name.len() + suffix.len() <= 255 {
        let mut beside_name = name.to_owned();
        beside_name.push(suffix);
        return path.with_file_name(beside_name);
    }
    // FNV-1a over the name's bytes: the same in every process and version.
    let hash = name
        .as_encoded_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
        });
    path.with_file_name(format!(".burrow-{hash:016x}{suffix}"))
}

/// Opens (creating it and its folder if need be) the lock file and takes
/// the exclusive lock, waiting for another process to let go of it.
pub fn lock_exclusive(lock_path: &Path) -> io::Result<fs::File> {
    if let Some(dir) = lock_path.parent()
        && !dir.as_os_str().is_empty()
    {
        fs::create_dir_all(dir)?;
    }
    let file = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(lock_path)?;
    file.lock()?;
    Ok(file)
}

/// Takes the shared lock of an existing lock file; `None` when there is
/// no lock file to open (nothing was ever changed through a lock, or the
/// folder is read-only to us), and then the caller reads without it.
pub fn lock_shared(lock_path: &Path) -> io::Result<Option<fs::File>> {
    let Ok(file) = fs::File::open(lock_path) else {
        return Ok(None);
    };
    file.lock_shared()?;
    Ok(Some(file))
}

/// Writes `records` at byte `at` of the journal `path` (cutting whatever
/// followed: a torn record a killed process left), then syncs it: once this
/// returns, the records survive a crash.
pub fn append(path: &Path, at: u64, records: &[u8]) -> io::Result<()> {
    let mut file = fs::OpenOptions::new().write(true).open(path)?;
    let written = (|| {
        if file.metadata()?.len() != at {
            file.set_len(at)?;
        }
        file.seek(SeekFrom::Start(at))?;
        file.write_all(records)?;
        file.sync_data()
    })();
    if written.is_err() {
        // Best effort: leave no part of records whose save is reported failed.
        let _ = file.set_len(at);
    }
    written
}

/// Creates or replaces the journal `path` with one of `generation` holding
/// `records`, whole, through a synced temporary file and a rename (a kill
/// leaves the old journal or the new one), with the permissions of the
/// document `doc` when it exists. Returns the journal's length.
pub fn replace_journal(
    path: &Path,
    doc: &Path,
    generation: u64,
    records: &[u8],
) -> io::Result<u64> {
    replace(
        path,
        doc,
        false,
        |file| {
            file.write_all(&header(generation))?;
            file.write_all(records)?;
            Ok(HEADER_LEN as u64 + records.len() as u64)
        },
        |_| Ok(()),
    )
}

/// Replaces the document `path` with what `write` writes (returning how
/// many bytes it wrote) through a temporary file in the same folder,
/// synced, and a rename, keeping the old file's permissions; `before_rename`
/// runs with `write`'s result once the temporary file is synced, just
/// before the rename. The failpoints of compaction sit between the steps.
/// Returns `write`'s result.
pub fn replace_document<T>(
    path: &Path,
    write: impl FnOnce(&mut fs::File) -> io::Result<T>,
    before_rename: impl FnOnce(&T) -> io::Result<()>,
) -> io::Result<T> {
    replace(path, path, true, write, before_rename)
}

fn replace<T>(
    path: &Path,
    like: &Path,
    failpoints: bool,
    write: impl FnOnce(&mut fs::File) -> io::Result<T>,
    before_rename: impl FnOnce(&T) -> io::Result<()>,
) -> io::Result<T> {
    let step = |name: &str| {
        if failpoints {
            failpoint(name);
        }
    };
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    fs::create_dir_all(dir)?;
    // A short fixed prefix: the temporary name never outgrows the 255-byte
    // name limit, however long the state file's own name is.
    let mut builder = tempfile::Builder::new();
    builder.prefix(".burrow-").suffix(".tmp");
    // A new state file gets the usual 0666 less umask, not tempfile's 0600.
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let mut tmp = builder.tempfile_in(dir)?;
    let written = write(tmp.as_file_mut())?;
    if let Ok(meta) = fs::metadata(like) {
        tmp.as_file().set_permissions(meta.permissions())?;
    }
    step("after_temp_write");
    tmp.as_file().sync_all()?;
    step("after_temp_fsync");
    before_rename(&written)?;
    tmp.persist(path).map_err(|e| e.error)?;
    // Make the rename itself durable where the platform allows it.
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
    step("after_rename");
    Ok(written)
}
