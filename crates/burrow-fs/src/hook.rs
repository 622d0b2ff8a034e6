//! A test-only hook inside the blocking part of an edit, so tests can pause an edit between its read and its write.

use std::sync::{Arc, Mutex, PoisonError};

use burrow_backend::VPath;

type Hook = Arc<dyn Fn(&VPath) + Send + Sync>;

static AFTER_EDIT_READ: Mutex<Vec<Hook>> = Mutex::new(Vec::new());
static SEARCH_FILE: Mutex<Vec<Hook>> = Mutex::new(Vec::new());

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
