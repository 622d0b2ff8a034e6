//! `StateBackend`: burrow's in-memory file backend, a map of files plus a directory index.
//!
//! # Key design decision: a directory index beside the files
//!
//! The obvious in-memory store is one map path -> file, and the obvious
//! `ls("/src")` walks every key looking for those that start with "/src/";
//! so does "is a parent of this path a file?" on every write. That makes each
//! operation O(number of files): the in-memory store of the libraries burrow
//! replaces gets slower with every file written, and an agent that writes
//! thousands of files pays for all of them on each call.
//!
//! `StateBackend` keeps its files and two indexes under one lock:
//!
//! - `files`, a hash map by full path, for reads, writes and edits, and
//!   `order`, the same paths in an ordered set. Byte order of the paths is
//!   exactly the contract's sort order, and the files beneath a directory are
//!   one contiguous range, so `glob` and `grep` under a directory are a range
//!   scan: O(files beneath), not O(all files).
//! - `dirs`, one entry per directory, holding its direct children (name ->
//!   is directory) and the count of files beneath it. `ls` is O(children);
//!   "is an ancestor a file?" is O(depth · log n); directories are implicit,
//!   appearing with their first file and vanishing with their last (the count
//!   reaching zero), at O(depth · log n) per write or delete.
//!
//! So writing the 10,000th file costs what writing the 10th did. The index
//! is never persisted: [`StateBackend::files`] returns the plain FileData
//! document the Python libraries read, and [`StateBackend::from_files`]
//! rebuilds the index from one.
//!
//! # A document and its journal
//!
//! Rewriting the whole document after every change costs O(files) per
//! change. [`journal`] holds the other half of persistence: each change's
//! effect ([`StateBackend::encode_change_at`] for a write or a deletion, the
//! splice of the bytes an edit changed for [`StateBackend::edit_journaled`])
//! is appended as a framed, checksummed record, [`StateBackend::apply`]
//! replays another process's records, and
//! [`StateBackend::from_files_replayed`] loads a document with its journal.
//! The document is rewritten only when the journal is folded into it (a
//! compaction), so **a reader that opens the document alone (the Python
//! `StateBackend`, pydantic-deep) sees the state as of the last
//! compaction**. burrow's `state:FILE.json` keeps its journal in
//! `FILE.json.journal` and compacts when the journal outgrows the document,
//! when the process ends normally, and on `burrow state compact FILE.json`.

mod backend;
mod document;
pub mod journal;
mod tree;

pub use backend::StateBackend;
