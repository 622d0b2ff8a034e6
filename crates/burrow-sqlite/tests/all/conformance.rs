//! The shared conformance suite, run on a fresh database file per scenario.

use std::sync::Arc;

use burrow_conformance::Fixture;
use burrow_sqlite::StoreBackend;

async fn make_fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("temp dir");
    let backend = StoreBackend::open(dir.path().join("conformance.db")).expect("open the database");
    Fixture::with_guard(Arc::new(backend), dir)
}

burrow_conformance::conformance_suite!(make_fixture);
