//! burrow's durable embedded store: `SqliteStore` (namespaced key/value long-term memory) and `StoreBackend` (files), in one SQLite file.
//!
//! # Key design decision: one file, WAL, one transaction per mutation, effect keys in that transaction
//!
//! Everything an agent must keep past the end of its process (its files,
//! its long-term memory, and the record of which changes it already made)
//! lives in **one SQLite database file**. One file is easy to back up, copy
//! and inspect, and it lets one transaction span all of them.
//!
//! - **WAL mode** lets readers keep reading a consistent snapshot while a
//!   writer commits, and survives a killed process with every committed
//!   transaction intact. `synchronous=NORMAL` is the default: no commit is
//!   lost when a process dies; only an OS crash or power cut can roll back the
//!   last few (choose [`Synchronous::Full`] to rule that out too).
//! - **One transaction per mutation.** A write, edit or delete is one
//!   `BEGIN IMMEDIATE` transaction holding its checks (is a parent a file?
//!   is the tenant over quota?), the change, the directory rows, the tenant's
//!   usage and the effect record. Either all of it commits or none of it does,
//!   so the store is never half-changed, an edit's read-modify-write can
//!   never lose a concurrent update, and a refused mutation changes nothing.
//!   `IMMEDIATE` takes the write lock up front: concurrent writers, in this
//!   process or another, queue on SQLite's busy handler for up to the busy
//!   timeout, instead of deadlocking on a read-to-write upgrade.
//! - **Effect keys in the same transaction.** A mutation that carries
//!   `FileContext::effect_key` records (tenant, key) -> outcome in the very
//!   transaction that makes the change. There is no window in which the change
//!   is durable but its record is not (or the reverse), so a retried tool call
//!   after a crash either finds the record and replays the outcome, or finds
//!   neither the record nor the change and runs for the first time.
//!
//! The file backend keeps directories implicit but indexed (rows with a count
//! of entries, maintained in the mutation's transaction), so `ls` of a small
//! directory costs the same in a store of ten files or ten million; `glob` and
//! `grep` scan one index range of paths. The schema is versioned with
//! `PRAGMA user_version` and migrated on open. Decisions are recorded in
//! ADRs 0070 to 0074 under `docs/adr/`.
//!
//! # Example
//!
//! ```
//! use burrow_backend::{Backend, FileContext, VPath};
//! use burrow_sqlite::{Depth, SqliteStore, StoreBackend};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! let store = SqliteStore::open(dir.path().join("agent.db"))?;
//!
//! // Long-term memory: (tenant, namespace, key) -> JSON.
//! store.put("alice", &["memories", "user"], "likes", json!({"food": "soup"})).await?;
//! let page = store.list("alice", &["memories"], Depth::Nested, 10).await?;
//! assert_eq!(page.items[0].key, "likes");
//!
//! // Files, in the same database file, with a quota per tenant.
//! let files = StoreBackend::builder(&store).max_bytes(100 << 20).build();
//! let ctx = FileContext::for_tenant("alice").with_effect_key("tool-call-42");
//! let path = VPath::parse("/notes/today.md")?;
//! files.write(&ctx, &path, "# Today\n").await?;
//! // A retried tool call with the same effect key changes nothing.
//! files.write(&ctx, &path, "# Today\n").await?;
//! assert_eq!(files.usage("alice").await?, (8, 1));
//! # Ok(())
//! # }
//! ```

mod backend;
mod db;
mod namespace;
mod options;
#[doc(hidden)]
pub mod queries;
mod query;
mod quota;
mod replay;
mod schema;
mod store;
mod tree;

pub use backend::{StoreBackend, StoreBackendBuilder};
pub use namespace::{
    MAX_DEPTH as MAX_NAMESPACE_DEPTH, MAX_SEGMENT_BYTES as MAX_NAMESPACE_SEGMENT_BYTES,
};
pub use options::{
    DEFAULT_BUSY_TIMEOUT, DEFAULT_MMAP_SIZE, DEFAULT_READ_CONNECTIONS, MAX_BUSY_TIMEOUT,
    SqliteOptions, Synchronous,
};
pub use quota::Quota;
pub use schema::SCHEMA_VERSION;
pub use store::{Depth, Item, MAX_VALUE_BYTES, Page, SqliteStore, SqliteStoreBuilder};
