//! The workspace as a FileData document: `StateBackend::files` and `StateBackend::from_files`.

use burrow_backend::{Error, Limits, Result, VPath};
use burrow_types::{FileData, FilesDocument};

use crate::backend::StateBackend;
use crate::tree::{FileEntry, Stamp, Tree};

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
        let mut tree = Tree::default();
        for (key, data) in doc {
            let path = VPath::parse(&key).map_err(|e| {
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
            tree.restore(&path, entry).map_err(|e| {
                Error::failure(
                    format!("the files document cannot be loaded: {}", e.message()),
                    e,
                )
            })?;
        }
        Ok(StateBackend::from_tree(tree, limits))
    }
}
