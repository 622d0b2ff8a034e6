//! The shared conformance suite on an `InMemory` store, a fresh one per scenario.

use std::sync::Arc;

use burrow_conformance::Fixture;
use burrow_object_store::object_store::memory::InMemory;
use burrow_object_store::{ObjectStoreBackend, ObjectStoreOptions};

/// A fresh store; max_results is low enough that the suite can exceed it.
async fn make_fixture() -> Fixture {
    let options = ObjectStoreOptions::default()
        .with_root("conformance")
        .with_max_results(200);
    let backend =
        ObjectStoreBackend::with_options(Arc::new(InMemory::new()), options).expect("backend");
    Fixture::new(Arc::new(backend))
}

burrow_conformance::conformance_suite!(make_fixture);
