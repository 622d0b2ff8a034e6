//! The workspace as a FileData document: `StateBackend::files` and `StateBackend::from_files`.

use std::collections::BTreeMap;

use burrow_backend::{Error, Limits, Result, VPath};
use burrow_types::{DocumentWriter, FileData, FilesDocument};

use crate::backend::StateBackend;
use crate::journal::Change;
use crate::tree::{FileEntry, Stamp, Tree};

/// [`StateBackend::write_files_json`] writes its text out once this much is
/// held: small enough to stay in cache, large enough for few writes.
pub(crate) const DRAIN_AT: usize = 256 << 10;

impl StateBackend {
    /// The workspace as a files document (path -> FileData), the form the
    /// Python `StateBackend` reads and writes. Text is stored as lines,
    /// anything else as base64 ([`FileData::from_bytes`]); timestamps are kept.
    pub fn files(&self) -> FilesDocument {
        self.read_tree()
            .iter()
            .map(|(path, file)| {
                let data = FileData::from_bytes(
                    &file.bytes,
                    file.created_at.render(),
                    file.modified_at.render(),
                );
                (path.to_owned(), data)
            })
            .collect()
    }

    /// The workspace as the text of its files document: exactly
    /// `files_document_to_json(&self.files())`, written straight from the
    /// files' bytes without building the document in between.
    pub fn files_json(&self) -> String {
        let tree = self.read_tree();
        // Room for the bytes, the escapes of a typical text (each line's
        // `","` and a few more) and each entry's keys and times.
        let capacity = tree
            .iter()
            .map(|(path, file)| path.len() + file.bytes.len() + file.bytes.len() / 8 + 96)
            .fold(0usize, usize::saturating_add);
        let mut writer = DocumentWriter::with_capacity(capacity);
        for (path, file) in tree.iter() {
            writer.entry(
                path,
                &file.bytes,
                &file.created_at.render(),
                &file.modified_at.render(),
            );
        }
        writer.finish()
    }

    /// Writes the text of [`StateBackend::files_json`] to `out` through a
    /// buffer of about 256 KiB, never holding the whole document;
    /// returns how many bytes it wrote. The workspace is read-locked while
    /// it writes.
    ///
    /// # Errors
    ///
    /// `out`'s error, after which part of the document may have been written.
    pub fn write_files_json(&self, out: &mut impl std::io::Write) -> std::io::Result<u64> {
        let tree = self.read_tree();
        let mut writer = DocumentWriter::with_capacity(DRAIN_AT + DRAIN_AT / 4);
        let mut written = 0u64;
        for (path, file) in tree.iter() {
            writer.entry(
                path,
                &file.bytes,
                &file.created_at.render(),
                &file.modified_at.render(),
            );
            if writer.held() >= DRAIN_AT {
                written += writer.held() as u64;
                writer.drain_to(out)?;
            }
        }
        written += writer.held() as u64 + 1;
        writer.finish_to(out)?;
        Ok(written)
    }

    /// A workspace holding the files of `doc`, with the default [`Limits`].
    ///
    /// # Errors
    ///
    /// A failure (the document is the storage, and it is corrupt) when a key
    /// is not an already-normalised absolute path (so "a.txt", "/a/../b" and
    /// "/" are refused), when a path is both a file and the ancestor of
    /// another, or when an entry's content does not decode. Files larger than
    /// the max file size load; reading them is then refused as TooLarge and
    /// grep skips them, as every backend does.
    pub fn from_files(doc: FilesDocument) -> Result<StateBackend> {
        Self::from_files_with_limits(doc, Limits::default())
    }

    /// As [`StateBackend::from_files`], with `limits`.
    pub fn from_files_with_limits(doc: FilesDocument, limits: Limits) -> Result<StateBackend> {
        Self::from_files_replayed(doc, Vec::new(), limits)
    }

    /// A workspace holding the files of `doc` with the journal's `changes`
    /// replayed over it, in order (see [`crate::journal`]).
    ///
    /// Changes are applied to the files by path before the tree is built.
    /// Puts and deletions replay over their own result harmlessly; a
    /// [`Change::Splice`] applies only to the bytes it was made on, so the
    /// caller starts `changes` at [`crate::journal::replay_start`] (past
    /// the records a compaction already folded into `doc`), and
    /// [`Change::Folded`] marks are skipped here.
    ///
    /// # Errors
    ///
    /// As [`StateBackend::from_files`], for the document's keys and for the
    /// changes' paths alike; a failure too when a splice does not apply
    /// (the file it edits is missing or holds other bytes).
    pub fn from_files_replayed(
        doc: FilesDocument,
        changes: Vec<Change>,
        limits: Limits,
    ) -> Result<StateBackend> {
        let mut files: BTreeMap<String, FileEntry> = BTreeMap::new();
        for (key, data) in doc {
            let path = normal_path(&key)?;
            let bytes = data.to_bytes().map_err(|e| {
                Error::failure(
                    format!(
                        "the files document cannot be loaded: the file {path} does not decode."
                    ),
                    e,
                )
            })?;
            let entry = FileEntry {
                bytes,
                created_at: Stamp::Text(data.created_at),
                modified_at: Stamp::Text(data.modified_at),
            };
            files.insert(key, entry);
        }
        for change in changes {
            if let Some(path) = change.path() {
                normal_path(path)?;
            }
            match change {
                Change::Put {
                    path,
                    bytes,
                    created_at,
                    modified_at,
                } => {
                    let entry = FileEntry {
                        bytes,
                        created_at: Stamp::Text(created_at),
                        modified_at: Stamp::Text(modified_at),
                    };
                    files.insert(path, entry);
                }
                Change::Delete { path } => {
                    files.remove(&path);
                }
                Change::Splice { ref path, .. } => {
                    let entry = files.get_mut(path);
                    splice(entry, &change)?;
                }
                Change::Folded { .. } => {}
            }
        }
        let mut tree = Tree::default();
        for (key, entry) in files {
            let path = normal_path(&key)?;
            tree.restore(&path, entry).map_err(|e| {
                Error::failure(
                    format!("the files document cannot be loaded: {}", e.message()),
                    e,
                )
            })?;
        }
        Ok(StateBackend::from_tree(tree, limits))
    }

    /// The state of `path` as a journal change: its file as it is now, or
    /// its deletion when no file stands there. O(size of the file).
    pub fn change_at(&self, path: &VPath) -> Change {
        let tree = self.read_tree();
        match tree.file(path.as_str()) {
            Some(file) => Change::Put {
                path: path.as_str().to_owned(),
                bytes: file.bytes.clone(),
                created_at: file.created_at.render(),
                modified_at: file.modified_at.render(),
            },
            None => Change::Delete {
                path: path.as_str().to_owned(),
            },
        }
    }

    /// Appends the journal record of the state of `path` to `out`: the
    /// record of [`StateBackend::change_at`], encoded straight from the
    /// stored file (no copy of its bytes, no `String` per timestamp).
    /// O(size of the file).
    ///
    /// # Errors
    ///
    /// As [`journal::encode`](crate::journal::encode): the record would pass 4 GiB.
    pub fn encode_change_at(&self, path: &VPath, out: &mut Vec<u8>) -> Result<()> {
        let tree = self.read_tree();
        match tree.file(path.as_str()) {
            Some(file) => crate::journal::encode_put(
                path.as_str(),
                &file.bytes,
                |out| file.created_at.write_to(out),
                |out| file.modified_at.write_to(out),
                out,
            ),
            None => crate::journal::encode(
                &Change::Delete {
                    path: path.as_str().to_owned(),
                },
                out,
            ),
        }
    }

    /// The paths of the files at or beneath `path` (the file itself, or
    /// every file in the directory's subtree), in path order: what a
    /// `delete_tree` of `path` would remove. O(log n + result).
    pub fn file_paths_at_or_beneath(&self, path: &VPath) -> Vec<String> {
        let tree = self.read_tree();
        let mut paths = Vec::new();
        if tree.file(path.as_str()).is_some() {
            paths.push(path.as_str().to_owned());
        }
        let prefix = crate::tree::child_prefix(path.as_str());
        paths.extend(tree.paths_beneath(&prefix).map(|(p, _)| p.to_owned()));
        paths
    }

    /// Applies a journal change (one another process made) to this
    /// workspace; a [`Change::Folded`] mark changes nothing. O(depth · log n
    /// + size of the file).
    ///
    /// # Errors
    ///
    /// A failure, changing nothing, when the change's path is not in normal
    /// form, a put does not fit the tree (a directory stands there, or a
    /// file above it) or a splice does not apply (the file it edits is
    /// missing or holds other bytes).
    pub fn apply(&self, change: Change) -> Result<()> {
        let Some(path) = change.path() else {
            return Ok(());
        };
        let path = normal_path(path)?;
        let mut tree = self.write_tree();
        match change {
            Change::Splice { .. } => splice(tree.file_mut(path.as_str()), &change),
            Change::Folded { .. } => Ok(()),
            Change::Put {
                bytes,
                created_at,
                modified_at,
                ..
            } => {
                let entry = FileEntry {
                    bytes,
                    created_at: Stamp::Text(created_at),
                    modified_at: Stamp::Text(modified_at),
                };
                tree.restore(&path, entry).map_err(|e| {
                    Error::failure(format!("the journal does not apply: {}", e.message()), e)
                })
            }
            Change::Delete { .. } => {
                tree.remove_file(path.as_str());
                Ok(())
            }
        }
    }
}

/// Applies the [`Change::Splice`] `change` to `entry`, the file at its path
/// (`None`: no file there), or refuses it, changing nothing, when the file
/// is not the one the splice was made on.
fn splice(entry: Option<&mut FileEntry>, change: &Change) -> Result<()> {
    let Change::Splice {
        path, modified_at, ..
    } = change
    else {
        return Ok(());
    };
    let refused = || {
        Error::failure_msg(format!(
            "the journal does not apply: it edits {path}, which does not hold the bytes that edit was made on (was the document changed by another program after burrow was stopped?)"
        ))
    };
    let entry = entry.ok_or_else(refused)?;
    let bytes = change.spliced(&entry.bytes).ok_or_else(refused)?;
    entry.bytes = bytes;
    entry.modified_at = Stamp::Text(modified_at.clone());
    Ok(())
}

/// `key` as a path, refused unless already in normal form.
fn normal_path(key: &str) -> Result<VPath> {
    let path = VPath::parse(key).map_err(|e| {
        Error::failure(
            format!("the files document cannot be loaded: {}", e.message()),
            e,
        )
    })?;
    if path.as_str() != key {
        return Err(Error::failure_msg(format!(
            "the files document cannot be loaded: the path {key:?} is not in normal form (it would be {:?}).",
            path.as_str()
        )));
    }
    Ok(path)
}
