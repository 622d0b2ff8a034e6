//! Test-only hooks inside the blocking part of an edit, a grep and a walk, and a count of who holds or waits for a path's lock.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use burrow_backend::VPath;

type Hook = Arc<dyn Fn(&VPath) + Send + Sync>;

static AFTER_EDIT_READ: Mutex<Vec<Hook>> = Mutex::new(Vec::new());
static SEARCH_FILE: Mutex<Vec<Hook>> = Mutex::new(Vec::new());
static ENTER_DIR: Mutex<Vec<Hook>> = Mutex::new(Vec::new());

/// Adds `hook`, called by grep for every file it reads to search.
pub(crate) fn on_search_file(hook: impl Fn(&VPath) + Send + Sync + 'static) {
    SEARCH_FILE
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(Arc::new(hook));
}

pub(crate) fn search_file(path: &VPath) {
    call(&SEARCH_FILE, path);
}

/// Adds `hook`, called by every walk for each directory it enters beneath its start.
pub(crate) fn on_enter_dir(hook: impl Fn(&VPath) + Send + Sync + 'static) {
    ENTER_DIR
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(Arc::new(hook));
}

pub(crate) fn enter_dir(path: &VPath) {
    call(&ENTER_DIR, path);
}

/// Adds `hook`, called (on the blocking thread) by every edit after it read
/// the file and before it writes. Tests filter by path; hooks are never removed.
pub(crate) fn on_after_edit_read(hook: impl Fn(&VPath) + Send + Sync + 'static) {
    AFTER_EDIT_READ
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(Arc::new(hook));
}

pub(crate) fn after_edit_read(path: &VPath) {
    call(&AFTER_EDIT_READ, path);
}

fn call(registry: &Mutex<Vec<Hook>>, path: &VPath) {
    // Called without the registry lock held: a hook may block.
    let hooks: Vec<Hook> = registry
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    for hook in &hooks {
        hook(path);
    }
}

type LockUser = (Arc<str>, VPath);

static LOCK_USERS: Mutex<Option<HashMap<LockUser, usize>>> = Mutex::new(None);

/// Counts one mutation holding or waiting for the lock of `path` under the
/// root `root_id`, from now until the returned value is dropped (it travels
/// with the lock guard into the blocking work).
#[derive(Debug)]
pub(crate) struct CountedLockUser(LockUser);

pub(crate) fn count_lock_user(root_id: &Arc<str>, path: &VPath) -> CountedLockUser {
    let key = (Arc::clone(root_id), path.clone());
    let mut users = LOCK_USERS.lock().unwrap_or_else(PoisonError::into_inner);
    *users
        .get_or_insert_with(HashMap::new)
        .entry(key.clone())
        .or_default() += 1;
    CountedLockUser(key)
}

impl Drop for CountedLockUser {
    fn drop(&mut self) {
        let mut users = LOCK_USERS.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(map) = users.as_mut()
            && let Some(n) = map.get_mut(&self.0)
        {
            *n = n.saturating_sub(1);
            if *n == 0 {
                map.remove(&self.0);
            }
        }
    }
}

/// How many mutations hold or wait for the lock of `path` under `root_id`.
pub(crate) fn lock_users(root_id: &str, path: &VPath) -> usize {
    let users = LOCK_USERS.lock().unwrap_or_else(PoisonError::into_inner);
    users.as_ref().map_or(0, |map| {
        map.iter()
            .filter(|((r, p), _)| &**r == root_id && p == path)
            .map(|(_, n)| *n)
            .sum()
    })
}
