//! The shared conformance suite on a `LocalFileSystem` store in a temporary folder per scenario.

use std::sync::Arc;

use burrow_conformance::Fixture;
use burrow_object_store::{ObjectStoreBackend, ObjectStoreOptions};

use super::common::Objects;

async fn make_fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("temp dir");
    let options = ObjectStoreOptions::default().with_max_results(200);
    let backend = Arc::new(ObjectStoreBackend::local_with(dir.path(), options).expect("backend"));
    Fixture::with_guard(backend.clone(), dir).with_store(Objects(backend))
}

burrow_conformance::conformance_suite!(make_fixture,
    capability_skips = [empty_dirs_off, exec_off, symlinks_off],
    skips = {
        host_fifo_is_never_opened: "an object store holds no special files (the fixture lends no host access)",
        write_replace_keeps_created_at: "objects have no creation time and the backend keeps no created_at (see ObjectStoreBackend)",
    },
);
