//! Plain data types shared by every burrow crate, with JSON forms identical to the Python ones.
//!
//! # Key design decision
//!
//! These types are the wire: a `FileInfo` or a `FileData` document written by the
//! Python libraries burrow interoperates with must load here unchanged, and what
//! burrow writes must load there. So field names, optional-field handling (absent,
//! not `null`, where the Python `TypedDict` is `total=False`) and defaults follow
//! the Python definitions exactly, and this crate knows nothing of tokio, I/O or
//! HTTP: it is data and serde, nothing else.

mod file;

pub use file::{EditResult, ExecuteResponse, FileInfo, GrepMatch, WriteResult};
