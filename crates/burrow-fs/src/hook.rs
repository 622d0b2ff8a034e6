//! A test-only hook inside the blocking part of an edit, so tests can pause an edit between its read and its write.

use std::sync::{Arc, Mutex, PoisonError};

use burrow_backend::VPath;

type Hook = Arc<dyn Fn(&VPath) + Send + Sync>;

static AFTER_EDIT_READ: Mutex<Vec<Hook>> = Mutex::new(Vec::new());

/// Adds `hook`, called (on the blocking thread) by every edit after it read
/// the file and before it writes. Tests filter by path; hooks are never removed.
pub(crate) fn on_after_edit_read(hook: impl Fn(&VPath) + Send + Sync + 'static) {
    AFTER_EDIT_READ
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(Arc::new(hook));
}

pub(crate) fn after_edit_read(path: &VPath) {
    // Called without the registry lock held: a hook may block.
    let hooks: Vec<Hook> = AFTER_EDIT_READ
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    for hook in &hooks {
        hook(path);
    }
}
