//! `state:FILE.json`: a StateBackend loaded from a FileData document on the host and written back atomically.
//!
//! - A missing file is an empty workspace; the file is created by the first
//!   change (with its parent directories).
//! - A file that is not a FileData document (not UTF-8, not JSON, the wrong
//!   shape, a bad path) is a failure, and the file is never overwritten.
//! - Saving writes the whole document to a temporary file in the same
//!   directory, syncs it, and renames it over the old one: a crash leaves
//!   the old document or the new one, never half of either, and no
//!   temporary file is left behind on success.
//! - Two processes changing one state file at once: the last to save wins
//!   (there is no lock; see docs/adr/0041).
//! - A save that finds the document unchanged since it was loaded or last
//!   saved writes nothing: a mutation that went to another mount of a
//!   composite leaves this file alone (docs/adr/0120).

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use burrow::types::{FilesDocument, files_document_to_json, parse_files_document};
use burrow::{Error, Result, StateBackend};

use crate::spec::{Opened, Saver};

/// Opens `path` as a state document.
pub fn open(path: &Path) -> Result<Opened> {
    let backend = load(path)?;
    let saver = StateFile {
        path: path.to_owned(),
        saved: Mutex::new(backend.files()),
        backend: backend.clone(),
    };
    Ok(Opened::with_saver(Arc::new(backend), Box::new(saver)))
}

/// The workspace in `path`: empty when the file does not exist.
fn load(path: &Path) -> Result<StateBackend> {
    let shown = path.display();
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(StateBackend::new()),
        Err(e) => {
            return Err(Error::failure(
                format!("cannot read state file {shown}: {e}"),
                e,
            ));
        }
    };
    let text = std::str::from_utf8(&bytes).map_err(|e| {
        Error::failure(
            format!("state file {shown} is not a FileData JSON document (not UTF-8); it was left untouched"),
            e,
        )
    })?;
    let doc = parse_files_document(text).map_err(|e| {
        Error::failure(
            format!(
                "state file {shown} is not a FileData JSON document ({e}); it was left untouched"
            ),
            e,
        )
    })?;
    StateBackend::from_files(doc).map_err(|e| {
        Error::failure(
            format!(
                "state file {shown} cannot be loaded ({}); it was left untouched",
                e.message()
            ),
            e,
        )
    })
}

/// Writes a StateBackend back to its file.
struct StateFile {
    path: PathBuf,
    backend: StateBackend,
    /// The document as loaded or last saved: saving it again would change nothing.
    saved: Mutex<FilesDocument>,
}

impl Saver for StateFile {
    fn save(&self) -> Result<()> {
        let doc = self.backend.files();
        // A poisoned lock only means an earlier save panicked; the snapshot is still a document.
        let mut saved = self.saved.lock().unwrap_or_else(|e| e.into_inner());
        if *saved == doc {
            return Ok(());
        }
        let json = files_document_to_json(&doc);
        write_atomically(&self.path, json.as_bytes()).map_err(|e| {
            Error::failure(
                format!("cannot save state file {}: {e}", self.path.display()),
                e,
            )
        })?;
        *saved = doc;
        Ok(())
    }
}

/// Replaces `path` with `bytes` through a temporary file in the same
/// directory and a rename, keeping the old file's permissions.
fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
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
    tmp.write_all(bytes)?;
    if let Ok(meta) = fs::metadata(path) {
        tmp.as_file().set_permissions(meta.permissions())?;
    }
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    // Make the rename itself durable where the platform allows it.
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}
