//! Per-path async mutexes that serialise the mutations of one file within this process.
//!
//! An edit is a read-modify-write of a plain file: two edits of one path that
//! overlap would each write their own result and one would be lost. Every
//! mutation of a path therefore holds that path's mutex for its whole
//! duration. The registry is shared by every `FsBackend` of the process and
//! keyed by the root folder, so two backends opened on one folder serialise
//! too. An entry lives while someone holds or waits for it and is removed by
//! the last one out, so the registry never grows with the number of paths
//! ever written.
//!
//! Other processes are covered by a second lock taken inside the blocking
//! work: an advisory lock on the file's directory (`xlock`, ADR 0064).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use burrow_backend::VPath;
use tokio::sync::OwnedMutexGuard;

type Key = (Arc<str>, VPath);
type Registry = Mutex<HashMap<Key, Arc<tokio::sync::Mutex<()>>>>;

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(Registry::default)
}

/// Held while one mutation of a path runs; releasing it lets the next one in.
#[derive(Debug)]
pub(crate) struct PathGuard {
    key: Key,
    guard: Option<OwnedMutexGuard<()>>,
}

/// Waits until no other mutation of `path` under the root `root_id` runs, and
/// holds the path until the returned guard is dropped.
pub(crate) async fn lock_path(root_id: &Arc<str>, path: &VPath) -> PathGuard {
    let key: Key = (Arc::clone(root_id), path.clone());
    let mutex = {
        let mut map = registry().lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(map.entry(key.clone()).or_default())
    };
    let guard = mutex.lock_owned().await;
    PathGuard {
        key,
        guard: Some(guard),
    }
}

impl Drop for PathGuard {
    fn drop(&mut self) {
        // Release first, then remove the entry if nobody else holds or waits
        // for it (the map's own reference is then the only one). Both happen
        // under the registry lock, so no one can pick the entry up in between.
        let mut map = registry().lock().unwrap_or_else(PoisonError::into_inner);
        drop(self.guard.take());
        if map
            .get(&self.key)
            .is_some_and(|m| Arc::strong_count(m) == 1)
        {
            map.remove(&self.key);
        }
    }
}

/// How many paths currently have a mutex (for tests).
#[cfg(test)]
pub(crate) fn live_entries(root_id: &str) -> usize {
    let map = registry().lock().unwrap_or_else(PoisonError::into_inner);
    map.keys().filter(|(r, _)| &**r == root_id).count()
}

/// How many callers hold or wait for the mutex of `path` under `root_id` (for tests).
#[cfg(test)]
pub(crate) fn holders_and_waiters(root_id: &str, path: &VPath) -> usize {
    let map = registry().lock().unwrap_or_else(PoisonError::into_inner);
    map.iter()
        .find(|((r, p), _)| &**r == root_id && p == path)
        .map_or(0, |(_, m)| Arc::strong_count(m) - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn entries_are_removed_by_the_last_holder() {
        let root: Arc<str> = Arc::from("test-root-locks");
        let path = VPath::parse("/a.txt").unwrap();
        let first = lock_path(&root, &path).await;
        let waiter = {
            let root = Arc::clone(&root);
            let path = path.clone();
            tokio::spawn(async move { lock_path(&root, &path).await })
        };
        tokio::task::yield_now().await;
        assert_eq!(live_entries("test-root-locks"), 1);
        drop(first);
        let second = waiter.await.unwrap();
        assert_eq!(live_entries("test-root-locks"), 1);
        drop(second);
        assert_eq!(live_entries("test-root-locks"), 0);
    }
}
