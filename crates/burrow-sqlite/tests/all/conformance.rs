//! The shared conformance suite, run on a fresh database file per scenario.

use std::sync::Arc;

use burrow_conformance::Fixture;
use burrow_sqlite::{SqliteStore, StoreBackend};

/// Low enough that the limits scenario can create more files than one answer may hold.
const MAX_RESULTS: usize = 100;

async fn make_fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(dir.path().join("conformance.db")).expect("open the database");
    let backend = StoreBackend::builder(&store)
        .max_results(MAX_RESULTS)
        .build();
    Fixture::with_guard(Arc::new(backend), dir)
}

burrow_conformance::conformance_suite!(make_fixture);
