//! The shared conformance suite on an `InMemory` store, a fresh one per scenario.

use std::sync::Arc;

use burrow_conformance::Fixture;
use burrow_object_store::object_store::memory::InMemory;
use burrow_object_store::{ObjectStoreBackend, ObjectStoreOptions};

use super::common::Objects;

/// A fresh store; max_results is low enough that the suite can exceed it.
async fn make_fixture() -> Fixture {
    let options = ObjectStoreOptions::default()
        .with_root("conformance")
        .with_max_results(200);
    let backend = Arc::new(
        ObjectStoreBackend::with_options(Arc::new(InMemory::new()), options).expect("backend"),
    );
    Fixture::new(backend.clone()).with_store(Objects(backend))
}

burrow_conformance::conformance_suite!(make_fixture,
    capability_skips = [empty_dirs_off, exec_off, symlinks_off],
    skips = {
        host_fifo_is_never_opened: "an object store holds no special files (the fixture lends no host access)",
        write_replace_keeps_created_at: "objects have no creation time and the backend keeps no created_at (see ObjectStoreBackend)",
    },
);
