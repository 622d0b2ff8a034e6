//! The mutations (write, edit, delete): implicit-directory checks, conditional puts, and bounded retries after a lost race.
//!
//! # No lost update
//!
//! An edit reads the object with its ETag (and version, on a versioned
//! bucket), applies the edit, and puts the result with
//! `PutMode::Update(that version)`: the store refuses the put if anything
//! changed the object since the read (`If-Match` on S3). A write over an
//! existing file does the same with the version its HEAD saw; a write of a
//! new file uses `PutMode::Create` (`If-None-Match: *`), so two processes
//! creating one file cannot both believe they made it. A put that loses its
//! race is retried from the read, after a jittered exponential pause, up to
//! [`crate::ObjectStoreOptions::max_attempts`] times in all; then the change
//! is refused with Conflict and nothing was written.
//!
//! Within one process, mutations of one key also take that key's lock (a
//! `burrow_backend::LockTable` keyed by the object key), so a process never
//! races itself and the store only arbitrates between processes.
//!
//! # Implicit directories, and what the checks cost
//!
//! A directory is a key prefix with objects beneath it. Before putting a
//! file, the backend checks, concurrently: a one-page listing beneath
//! `key/` (a directory stands there: IsADirectory) and a HEAD of every
//! ancestor's key (an ancestor is a file: NotADirectory), at most
//! `concurrency` at a time. Then it puts with `PutMode::Create`; only if an
//! object is already there does it HEAD it for its version and put again
//! with `PutMode::Update`. A new `/a/b/c.txt` thus costs 1 LIST + 2 HEADs +
//! 1 PUT in two round trips; replacing a file this handle does not know
//! costs a HEAD and a PUT more. A write over a file this handle wrote or
//! read before first tries a single conditional PUT with the version it
//! remembers: if that succeeds, the object was still exactly the file this
//! handle knew, so no directory can stand there and no ancestor can be a
//! file, and no check is needed.
//!
//! The checks and the put are separate requests, so another **process**
//! may create `/a` as a file between this write's HEAD of `/a` and its put
//! of `/a/b`: the store then holds a file and a directory of one name. No
//! object store offers a transaction that could prevent it. Readers stay
//! well defined (the file reads as a file, the directory lists as a
//! directory); deleting one of the two repairs it.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use burrow_backend::text::{apply_edit, check_size, edit_result};
use burrow_backend::{EditResult, Error, ErrorKind, FileContext, Result, VPath, WriteResult};
use bytes::Bytes;
use futures::future::join_all;
use object_store::path::Path;
use object_store::{ObjectMeta, ObjectStoreExt, PutMode, PutResult, UpdateVersion};

use crate::backend::ObjectStoreBackend;
use crate::replay::{Fence, landed_outcome};
use crate::store::{conflict, fail, lost_race};

/// How many remembered object versions one backend keeps.
const MAX_VERSIONS: usize = 4096;

/// The last version this handle wrote or read of each key (bounded).
///
/// Keyed by a hash of the object key: a collision only offers a wrong
/// version, which the store then refuses (the conditional put fails and the
/// write takes the checked path), so it costs a request, never correctness.
#[derive(Debug, Default)]
pub(crate) struct Versions(Mutex<HashMap<u64, UpdateVersion>>);

fn key_hash(key: &Path) -> u64 {
    let mut hasher = DefaultHasher::new();
    key.as_ref().hash(&mut hasher);
    hasher.finish()
}

impl Versions {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<u64, UpdateVersion>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn get(&self, key: &Path) -> Option<UpdateVersion> {
        self.map().get(&key_hash(key)).cloned()
    }

    pub fn remember(&self, key: &Path, e_tag: Option<String>, version: Option<String>) {
        if e_tag.is_none() && version.is_none() {
            self.forget(key);
            return;
        }
        let hash = key_hash(key);
        let mut map = self.map();
        if map.len() >= MAX_VERSIONS && !map.contains_key(&hash) {
            map.clear();
        }
        map.insert(hash, UpdateVersion { e_tag, version });
    }

    pub fn forget(&self, key: &Path) {
        self.map().remove(&key_hash(key));
    }
}

/// A pause before retry `attempt` (0-based): exponential, capped, with jitter in [half, full].
fn backoff(initial: Duration, max: Duration, attempt: u32) -> Duration {
    static STATE: AtomicU64 = AtomicU64::new(0x853c_49e6_748f_ea9b);
    let full = initial.saturating_mul(1u32 << attempt.min(16)).min(max);
    let nanos = u64::try_from(full.as_nanos()).unwrap_or(u64::MAX);
    // splitmix64 over a shared counter: cheap, and different for every caller.
    let mut z = STATE.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    let half = nanos / 2;
    Duration::from_nanos(half + z % (nanos - half + 1))
}

fn version_of(meta: &ObjectMeta) -> UpdateVersion {
    UpdateVersion {
        e_tag: meta.e_tag.clone(),
        version: meta.version.clone(),
    }
}

impl ObjectStoreBackend {
    /// The pause before retry `attempt`.
    pub(crate) async fn pause(&self, attempt: u32) {
        tokio::time::sleep(backoff(
            self.options.initial_backoff,
            self.options.max_backoff,
            attempt,
        ))
        .await;
    }

    /// Remembers the version a put produced.
    fn remember_put(&self, key: &Path, put: PutResult) {
        if self.options.conditional_puts {
            self.versions.remember(key, put.e_tag, put.version);
        }
    }

    /// The first ancestor of `path` (root side first) that is a file, if any.
    pub(crate) async fn file_ancestor(
        &self,
        ctx: &FileContext,
        path: &VPath,
    ) -> Result<Option<VPath>> {
        let ancestors: Vec<VPath> = path
            .ancestors()
            .into_iter()
            .filter(|a| !a.is_root())
            .collect();
        if ancestors.is_empty() {
            return Ok(None);
        }
        let keys = ancestors
            .iter()
            .map(|a| self.keys.key(&ctx.tenant, a))
            .collect::<Result<Vec<_>>>()?;
        let mut found = Vec::with_capacity(keys.len());
        for chunk in keys
            .iter()
            .zip(&ancestors)
            .collect::<Vec<_>>()
            .chunks(self.options.concurrency.max(1))
        {
            let heads = join_all(
                chunk
                    .iter()
                    .map(|(key, ancestor)| self.store.head(key, ancestor)),
            )
            .await;
            for head in heads {
                found.push(head?.is_some());
            }
        }
        Ok(ancestors
            .into_iter()
            .zip(found)
            .find(|(_, is_file)| *is_file)
            .map(|(a, _)| a))
    }

    /// True when `fence` is given and the object at `key` carries its tag:
    /// a change with the same effect key (a claimant this call took over
    /// from) landed. Asked only after a lost race.
    async fn landed(&self, fence: Option<&Fence>, key: &Path, path: &VPath) -> Result<bool> {
        let Some(fence) = fence else {
            return Ok(false);
        };
        Ok(self
            .store
            .head_attributes(key, path)
            .await?
            .is_some_and(|(_, attributes)| fence.tagged(&attributes)))
    }

    /// Creates or replaces the file at `path`; with a `fence`, each put is
    /// announced in the effect record and tagged ([`crate::replay`]).
    pub(crate) async fn put_file(
        &self,
        ctx: &FileContext,
        path: &VPath,
        bytes: Bytes,
        fence: Option<&Fence>,
    ) -> Result<WriteResult> {
        if path.is_root() {
            return Err(Error::is_a_directory(path));
        }
        check_size(path, bytes.len() as u64, self.options.max_file_size)?;
        let key = self.keys.key(&ctx.tenant, path)?;
        let _serialised = self.locks.lock(key.clone()).await;
        let done = WriteResult::written(path.as_str());
        let attributes = fence.map(Fence::attributes).unwrap_or_default();
        if self.options.conditional_puts
            && let Some(known) = self.versions.get(&key)
        {
            if let Some(f) = fence {
                f.intend(Some(&known), &done).await?;
            }
            match self
                .store
                .put_with(
                    &key,
                    bytes.clone(),
                    PutMode::Update(known),
                    attributes.clone(),
                )
                .await
            {
                Ok(put) => {
                    self.remember_put(&key, put);
                    return Ok(done);
                }
                Err(e) if lost_race(&e) || matches!(e, object_store::Error::NotFound { .. }) => {
                    self.versions.forget(&key);
                    if self.landed(fence, &key, path).await? {
                        return landed_outcome(fence, path);
                    }
                }
                Err(e) => return Err(fail("write", path, e)),
            }
        }
        let attempts = self.options.max_attempts.max(1);
        for attempt in 0..attempts {
            let (dir, ancestor) = tokio::join!(
                self.store.any_under(&key, path),
                self.file_ancestor(ctx, path)
            );
            // An ancestor that is a file first: on a local folder the listing
            // beneath it fails (not a directory) rather than coming back empty.
            if let Some(file) = ancestor? {
                return Err(Error::not_a_directory(file));
            }
            if dir? {
                return Err(Error::is_a_directory(path));
            }
            let (mode, before) = if !self.options.conditional_creates {
                (PutMode::Overwrite, None)
            } else {
                // Most writes create: try that first, and look the object up only when it exists.
                if let Some(f) = fence {
                    f.intend(None, &done).await?;
                }
                match self
                    .store
                    .put_with(&key, bytes.clone(), PutMode::Create, attributes.clone())
                    .await
                {
                    Ok(put) => {
                        self.remember_put(&key, put);
                        return Ok(done);
                    }
                    Err(e) if lost_race(&e) => {}
                    Err(e) => return Err(fail("write", path, e)),
                }
                match self.store.head_attributes(&key, path).await? {
                    Some((_, found)) if fence.is_some_and(|f| f.tagged(&found)) => {
                        return landed_outcome(fence, path);
                    }
                    Some((meta, _)) if self.options.conditional_puts => {
                        (PutMode::Update(version_of(&meta)), Some(version_of(&meta)))
                    }
                    Some((meta, _)) => (PutMode::Overwrite, Some(version_of(&meta))),
                    // Deleted in between: start over.
                    None => continue,
                }
            };
            if let Some(f) = fence {
                f.intend(before.as_ref(), &done).await?;
            }
            match self
                .store
                .put_with(&key, bytes.clone(), mode, attributes.clone())
                .await
            {
                Ok(put) => {
                    self.remember_put(&key, put);
                    return Ok(done);
                }
                Err(e) if lost_race(&e) || matches!(e, object_store::Error::NotFound { .. }) => {
                    if self.landed(fence, &key, path).await? {
                        return landed_outcome(fence, path);
                    }
                    self.pause(attempt).await;
                }
                Err(e) => return Err(fail("write", path, e)),
            }
        }
        Err(conflict(path, attempts))
    }

    /// Replaces `old` by `new` in the file at `path`; with a `fence`, as [`Self::put_file`].
    pub(crate) async fn edit_file(
        &self,
        ctx: &FileContext,
        path: &VPath,
        old: &str,
        new: &str,
        replace_all: bool,
        fence: Option<&Fence>,
    ) -> Result<EditResult> {
        burrow_backend::text::check_edit_args(old, new)?;
        if path.is_root() {
            return Err(Error::is_a_directory(path));
        }
        let key = self.keys.key(&ctx.tenant, path)?;
        let _serialised = self.locks.lock(key.clone()).await;
        let attributes = fence.map(Fence::attributes).unwrap_or_default();
        let attempts = self.options.max_attempts.max(1);
        for attempt in 0..attempts {
            let Some(fetched) = self
                .store
                .get(&key, path, self.options.max_file_size)
                .await?
            else {
                return Err(self.missing_file(ctx, path).await);
            };
            if fence.is_some_and(|f| f.tagged(&fetched.attributes)) {
                return landed_outcome(fence, path);
            }
            let (edited, count) = apply_edit(path, &fetched.bytes, old, new, replace_all)?;
            check_size(path, edited.len() as u64, self.options.max_file_size)?;
            let result = edit_result(path, count);
            if let Some(f) = fence {
                f.intend(Some(&version_of(&fetched.meta)), &result).await?;
            }
            let mode = if self.options.conditional_puts {
                PutMode::Update(version_of(&fetched.meta))
            } else {
                PutMode::Overwrite
            };
            match self
                .store
                .put_with(&key, Bytes::from(edited), mode, attributes.clone())
                .await
            {
                Ok(put) => {
                    self.remember_put(&key, put);
                    return Ok(result);
                }
                // S3 answers a conditional put on a vanished object with NotFound or 412.
                Err(e) if lost_race(&e) || matches!(e, object_store::Error::NotFound { .. }) => {
                    self.versions.forget(&key);
                    self.pause(attempt).await;
                }
                Err(e) => return Err(fail("edit", path, e)),
            }
        }
        Err(conflict(path, attempts))
    }

    /// Deletes the file at `path`, or the made, empty directory there; with a
    /// `fence`, the delete is announced in the effect record first.
    ///
    /// object_store has no conditional delete: a file another process
    /// rewrote between this HEAD and this DELETE is deleted all the same.
    pub(crate) async fn delete_file(
        &self,
        ctx: &FileContext,
        path: &VPath,
        fence: Option<&Fence>,
    ) -> Result<()> {
        if path.is_root() {
            return Err(Error::refusal(
                ErrorKind::InvalidPath,
                "the root directory / cannot be deleted; delete the files inside it instead.",
            ));
        }
        let key = self.keys.key(&ctx.tenant, path)?;
        let _serialised = self.locks.lock(key.clone()).await;
        let Some(meta) = self.store.head(&key, path).await? else {
            // A directory: deleted only when it is a made one with nothing in it.
            return self.delete_empty_dir(ctx, path, &key, fence).await;
        };
        if let Some(f) = fence {
            f.intend(Some(&version_of(&meta)), &()).await?;
        }
        self.versions.forget(&key);
        match self.store.inner.delete(&key).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(fail("delete", path, e)),
        }
    }

    /// The refusal for a file operation on `path`, which holds no object:
    /// IsADirectory when objects lie beneath it, else NotFound.
    pub(crate) async fn missing_file(&self, ctx: &FileContext, path: &VPath) -> Error {
        if path.is_root() {
            return Error::is_a_directory(path);
        }
        let dir = match self.keys.key(&ctx.tenant, path) {
            Ok(key) => self.store.any_under(&key, path).await,
            Err(e) => return e,
        };
        match dir {
            Ok(true) => Error::is_a_directory(path),
            Ok(false) => Error::not_found(path),
            Err(e) => e,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_is_bounded_and_jittered() {
        let (initial, max) = (Duration::from_millis(5), Duration::from_millis(250));
        for attempt in 0..40 {
            let d = backoff(initial, max, attempt);
            assert!(d <= max, "{d:?}");
            let full = initial.saturating_mul(1 << attempt.min(16)).min(max);
            assert!(d >= full / 2, "{d:?} < half of {full:?}");
        }
        let samples: std::collections::HashSet<Duration> =
            (0..20).map(|_| backoff(initial, max, 3)).collect();
        assert!(samples.len() > 1, "jitter varies the pause");
    }
}
