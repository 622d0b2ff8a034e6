//! The shared conformance suite on a `PermissionBackend` over a StateBackend, with deny rules that cover nothing the suite touches.
//!
//! The rules are real and of every kind the layer enforces (an anchored
//! `Read`, an anchored `Edit`, and an unanchored `Read` that makes every
//! `delete_tree` walk its tree first), so the suite runs through the
//! filtering and checking paths, not around them.

use std::sync::Arc;

use burrow_backend::{Backend, Limits, VPath};
use burrow_conformance::{Fixture, StoreAccess};
use burrow_permissions::{PathRules, PermissionBackend};
use burrow_state::StateBackend;
use burrow_types::{FileData, FilesDocument};

/// Deny rules no scenario's path meets.
pub const UNTOUCHED_RULES: &[&str] = &[
    "Read(/zz-permission-denied/**)",
    "Edit(//zz-permission-locked/)",
    "Read(*.permission-denied)",
];

fn limits() -> Limits {
    Limits {
        max_results: 200,
        ..Limits::default()
    }
}

fn wrap(inner: StateBackend) -> Arc<dyn Backend> {
    let rules = PathRules::from_strings(UNTOUCHED_RULES).unwrap();
    Arc::new(PermissionBackend::new(Arc::new(inner), rules))
}

async fn make_fixture() -> Fixture {
    let state = StateBackend::with_limits(limits());
    Fixture::new(wrap(state.clone())).with_store(Store { state })
}

/// The store access of the wrapped StateBackend: its files document.
struct Store {
    state: StateBackend,
}

impl StoreAccess for Store {
    fn plant(&self, path: &VPath, bytes: &[u8]) -> std::io::Result<Arc<dyn Backend>> {
        let stamp = "2026-01-01T00:00:00Z".to_owned();
        let doc: FilesDocument = [(
            path.as_str().to_owned(),
            FileData::from_bytes(bytes, stamp.clone(), stamp),
        )]
        .into_iter()
        .collect();
        let planted = StateBackend::from_files_with_limits(doc, limits())
            .map_err(|e| std::io::Error::other(e.message().to_owned()))?;
        Ok(wrap(planted))
    }

    fn created_at(&self, path: &VPath) -> Option<String> {
        self.state
            .files()
            .get(path.as_str())
            .map(|data| data.created_at.clone())
    }
}

burrow_conformance::conformance_suite!(make_fixture,
    capability_skips = [effect_keys_off, empty_dirs_off, exec_off, symlinks_off, tenants_off],
    skips = {
        host_fifo_is_never_opened: "the inner StateBackend holds no special files (the fixture lends no host access)",
    },
);
