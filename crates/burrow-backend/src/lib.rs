//! The burrow file contract: `VPath`, errors, limits, the `Backend` and `Sandbox` traits, and shared text helpers.
//!
//! # Key design decision
//!
//! The contract is stated once, here, and implemented many times. So
//! everything that decides *what an operation means* lives in this crate and
//! nowhere else: how a path is parsed and confined ([`VPath`]), what a line is
//! ([`text::lines`]), what an edit does to a CRLF file ([`text::apply_edit`]),
//! what a glob matches ([`Glob`]), what grep treats as a line and as binary
//! ([`grep`]). A backend only stores and fetches bytes, walks its
//! directories, and calls these helpers; that is how "the same operation means
//! the same thing on every backend" is kept true by construction, and proven
//! by `burrow-conformance`.
//!
//! This crate knows nothing of tokio's runtime, SQLite, HTTP or Docker.

mod backend;
mod caps;
mod collect;
mod context;
pub mod effects;
mod error;
pub mod glob;
pub mod grep;
mod locks;
mod path;
mod results;
pub mod text;
mod tree;

pub use backend::{
    Backend, DEFAULT_EXEC_OUTPUT_CAP, DEFAULT_EXEC_TIMEOUT, Sandbox, TIMEOUT_EXIT_CODE,
};
pub use burrow_types::{
    EditResult, ExecuteResponse, FileInfo, GrepMatch, Shown, WriteResult, shown,
};
pub use caps::{Capabilities, DEFAULT_MAX_FILE_SIZE, DEFAULT_MAX_RESULTS, Limits};
pub use collect::{ResultOrder, Smallest};
pub use context::{DEFAULT_TENANT, FileContext, LockKey};
pub use effects::{EffectOutcome, EffectRecord};
pub use error::{Error, ErrorKind, Result};
pub use glob::Glob;
pub use grep::{CompiledGrep, GrepCollector, grep_file};
pub use locks::{KeyLock, LockTable};
pub use path::{MAX_PATH_BYTES, MAX_SEGMENT_BYTES, VPath};
pub use results::{GlobResult, GrepQuery, GrepResult, LineWindow, Listing};
