//! Per-path async locks, so mutations of one file in this process run one at a time (no lost edit); keyed by the *resolved* container path, so a link and its target share one lock.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use tokio::sync::{Mutex, MutexGuard};

/// How many locks paths are spread over; two paths sharing one only wait for each other.
const STRIPES: usize = 64;

/// A fixed set of async mutexes, one chosen per path by its hash.
#[derive(Debug)]
pub(crate) struct PathLocks {
    stripes: Vec<Mutex<()>>,
}

impl PathLocks {
    pub fn new() -> Self {
        Self {
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
        }
    }

    /// Waits for, and holds, the lock of the real container path `real`.
    pub async fn lock(&self, real: &str) -> MutexGuard<'_, ()> {
        let mut hasher = DefaultHasher::new();
        real.hash(&mut hasher);
        let index = usize::try_from(hasher.finish() % STRIPES as u64).unwrap_or(0);
        self.stripes[index].lock().await
    }
}
