//! `LockTable`: per-key async mutexes whose guard is an owned value, so blocking work can carry it.
//!
//! A mutation of a file is a read-modify-write; two that overlap on one path
//! would lose an update, so each holds that path's lock for its whole run.
//! The guard ([`KeyLock`]) owns everything it needs (`'static`, `Send`): a
//! backend moves it into `spawn_blocking` (or any task) with the work, so the
//! async caller being cancelled does not release the lock while the blocking
//! work goes on. An entry lives while someone holds or waits for its key and
//! is removed by the last one out (a waiter that is cancelled counts too), so
//! the table never grows with the number of keys ever locked.
//!
//! This needs no runtime: only `tokio::sync`'s mutex.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::OwnedMutexGuard;

/// One key's mutex and how many hold or wait for it.
#[derive(Debug, Default)]
struct Entry {
    mutex: Arc<tokio::sync::Mutex<()>>,
    users: usize,
}

type Map<K> = Arc<Mutex<HashMap<K, Entry>>>;

/// Per-key async locks: a table of mutexes, one per key in use.
///
/// Keys are whatever a backend serialises on: a [`VPath`](crate::VPath), a
/// (root, path) pair, a store key. Clones share the table.
#[derive(Debug)]
pub struct LockTable<K> {
    map: Map<K>,
}

impl<K> Clone for LockTable<K> {
    fn clone(&self) -> Self {
        Self {
            map: Arc::clone(&self.map),
        }
    }
}

impl<K: Hash + Eq + Clone> Default for LockTable<K> {
    fn default() -> Self {
        Self::new()
    }
}

/// Held while one mutation of a key runs; dropping it lets the next one in.
#[derive(Debug)]
pub struct KeyLock<K: Hash + Eq + Clone> {
    release: Release<K>,
    guard: Option<OwnedMutexGuard<()>>,
}

/// Counts one user of a key off the table when dropped (held or still waiting).
#[derive(Debug)]
struct Release<K: Hash + Eq + Clone> {
    map: Map<K>,
    key: K,
}

impl<K: Hash + Eq + Clone> Drop for Release<K> {
    fn drop(&mut self) {
        let mut map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(entry) = map.get_mut(&self.key) {
            entry.users = entry.users.saturating_sub(1);
            if entry.users == 0 {
                map.remove(&self.key);
            }
        }
    }
}

impl<K: Hash + Eq + Clone> Drop for KeyLock<K> {
    fn drop(&mut self) {
        // Unlock before the entry may be removed (then `release` drops).
        drop(self.guard.take());
    }
}

impl<K: Hash + Eq + Clone> KeyLock<K> {
    /// The key held.
    pub fn key(&self) -> &K {
        &self.release.key
    }
}

impl<K: Hash + Eq + Clone> LockTable<K> {
    /// An empty table.
    pub fn new() -> Self {
        Self {
            map: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// Waits until no one else holds `key`, then holds it until the returned
    /// guard is dropped. Cancelling the wait leaves the table as it was.
    pub async fn lock(&self, key: K) -> KeyLock<K> {
        let mutex = {
            let mut map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
            let entry = map.entry(key.clone()).or_default();
            entry.users += 1;
            Arc::clone(&entry.mutex)
        };
        // From here a cancelled wait still counts itself off (`release` drops).
        let release = Release {
            map: Arc::clone(&self.map),
            key,
        };
        let guard = mutex.lock_owned().await;
        KeyLock {
            release,
            guard: Some(guard),
        }
    }

    /// How many keys are held or waited for now.
    pub fn len(&self) -> usize {
        self.map
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// True when no key is held or waited for.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    use super::*;

    /// Polls `f` once, with no runtime.
    fn poll_once<F: Future>(f: std::pin::Pin<&mut F>) -> Poll<F::Output> {
        f.poll(&mut Context::from_waker(Waker::noop()))
    }

    fn now<F: Future>(f: F) -> F::Output {
        match poll_once(pin!(f)) {
            Poll::Ready(out) => out,
            Poll::Pending => panic!("not ready"),
        }
    }

    #[test]
    fn one_holder_per_key_and_entries_go_with_the_last() {
        let table: LockTable<String> = LockTable::new();
        let first = now(table.lock("a".to_owned()));
        let other = now(table.lock("b".to_owned()));
        assert_eq!(table.len(), 2);
        {
            let mut waiting = pin!(table.lock("a".to_owned()));
            assert!(poll_once(waiting.as_mut()).is_pending());
            drop(first);
            let Poll::Ready(second) = poll_once(waiting.as_mut()) else {
                panic!("the second holder did not get the lock");
            };
            assert_eq!(second.key(), "a");
        }
        drop(other);
        assert!(table.is_empty());
    }

    #[test]
    fn a_cancelled_waiter_leaves_nothing_behind() {
        let table: LockTable<u32> = LockTable::new();
        let held = now(table.lock(7));
        {
            let mut waiting = pin!(table.lock(7));
            assert!(poll_once(waiting.as_mut()).is_pending());
        }
        assert_eq!(table.len(), 1);
        drop(held);
        assert!(table.is_empty());
        assert!(now(table.lock(7)).key() == &7);
        assert!(table.is_empty());
    }

    #[test]
    fn the_guard_is_owned_and_moves_to_another_thread() {
        let table: LockTable<String> = LockTable::new();
        let guard = now(table.lock("f".to_owned()));
        let worker = std::thread::spawn(move || {
            // The blocking work holds the lock, whatever became of the caller.
            let _held = guard;
        });
        let mut waiting = pin!(table.lock("f".to_owned()));
        worker.join().unwrap();
        assert!(poll_once(waiting.as_mut()).is_ready());
    }
}
