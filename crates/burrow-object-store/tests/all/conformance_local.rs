//! The shared conformance suite on a `LocalFileSystem` store in a temporary folder per scenario.

use std::sync::Arc;

use burrow_conformance::Fixture;
use burrow_object_store::{ObjectStoreBackend, ObjectStoreOptions};

async fn make_fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("temp dir");
    let options = ObjectStoreOptions::default().with_max_results(200);
    let backend = ObjectStoreBackend::local_with(dir.path(), options).expect("backend");
    Fixture::with_guard(Arc::new(backend), dir)
}

burrow_conformance::conformance_suite!(make_fixture);
