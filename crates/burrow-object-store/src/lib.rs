//! `ObjectStoreBackend`: burrow files on any `object_store` store (memory, a local folder, S3, GCS, Azure), for deployments that outgrow one machine.
//!
//! # Key design decision: the store arbitrates every change
//!
//! Many processes on many machines may share one bucket, and an object
//! store offers no locks and no transactions. What it does offer is the
//! **conditional put**: "write this only if the object is still the version
//! I read" (`PutMode::Update`, `If-Match` on S3) and "only if there is no
//! object yet" (`PutMode::Create`, `If-None-Match: *`). burrow builds every
//! guarantee it needs from those two:
//!
//! - **No lost update.** An edit reads the object and its ETag, applies the
//!   edit with the shared helpers of `burrow-backend`, and puts the result
//!   conditionally. If another writer got there first, the store refuses,
//!   and the edit re-reads and tries again (bounded, with jittered
//!   backoff), then refuses with Conflict. Overwrites and creations do the
//!   same. A store that cannot do conditional updates
//!   (`LocalFileSystem`) says so: `conditional_writes: false`.
//! - **Replay.** A mutation with an effect key first *creates* a small
//!   record object, so of two retries exactly one applies; the outcome is
//!   then stored in it and returned to every later retry ([`replay`]).
//!
//! # Keys
//!
//! A file is the object `{root}/{tenant}/{path}`; a directory is a key
//! prefix, so directories are implicit and vanish with their last file,
//! except one made with `make_dir`, which a marker object `{dir}/%dir`
//! holds until it is deleted ([`dirs`]).
//! Tenants and names are escaped one key segment each ([`keys`]): `/`, `%`
//! and the characters object stores reserve become `%XX`, a tenant's
//! leading `.` too, so no tenant or path can spell another tenant's key,
//! names with "%", spaces, "..", Unicode or control characters round-trip
//! exactly, and Unicode names keep their length. Effect records live at
//! `{root}/.burrow-effects/{tenant}/{key}`, beside the data but outside
//! every tenant's file space, so no listing ever shows them. They are kept
//! until removed; the store's own expiry does that best (an S3 lifecycle
//! rule expiring the prefix `{root}/.burrow-effects/` after a few days, longer
//! than any caller retries), so this crate has no pruning call.
//!
//! # What it costs
//!
//! A read is one GET (the size is checked from its headers before the body
//! is downloaded). A write checks that no directory stands at the path and
//! no ancestor is a file (HEADs and a one-page listing, concurrently), then
//! puts: two round trips; an overwrite of a file this handle already knows
//! is a single conditional PUT. `ls` lists one level, paging through the
//! store's 1,000-key pages; `glob` and `grep` list beneath `under` only.
//! See [`mutate`] for the race the implicit-directory checks leave across
//! processes, and [`ObjectStoreBackend`] for the rest.
//!
//! # Features
//!
//! `InMemory` and `LocalFileSystem` are always available. `s3` adds
//! [`ObjectStoreBackend::from_s3_url`] (object_store's `aws`); `gcs` and
//! `azure` turn on object_store's `gcp` and `azure` stores, which you build
//! with [`object_store`] and hand to [`ObjectStoreBackend::new`].

mod backend;
pub mod dirs;
pub mod keys;
pub mod local;
pub mod mutate;
mod options;
pub mod replay;
#[cfg(feature = "s3")]
mod s3;
mod search;
mod store;

pub use backend::ObjectStoreBackend;
/// The `object_store` crate this backend is built on, to build stores with.
pub use object_store;
pub use options::{HOST_MAX_NAME_BYTES, ObjectStoreOptions, S3_MAX_KEY_BYTES};
#[cfg(feature = "s3")]
pub use s3::{S3_CONNECT_TIMEOUT, S3_REQUEST_TIMEOUT, parse_s3_url, s3_retry_config};
