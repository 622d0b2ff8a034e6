//! The artifact stores against the one conformance suite: memory (a clone as the second handle) and SQLite (a real file, a second connection as the second handle).

mod memory {
    use std::sync::Arc;

    use burrow_artifacts::MemoryArtifactStore;
    use burrow_artifacts::conformance::{Fixture, kinds};

    fn make() -> Fixture {
        let store = MemoryArtifactStore::new(kinds());
        Fixture::new(Arc::new(store.clone())).with_sibling(Arc::new(store))
    }

    burrow_artifacts::artifact_conformance_suite!(make);
}

mod sqlite {
    use std::sync::Arc;

    use burrow_artifacts::SqliteArtifactStore;
    use burrow_artifacts::conformance::{Fixture, kinds};

    fn make() -> Fixture {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("artifacts.db");
        let kinds = Arc::new(kinds());
        let store = SqliteArtifactStore::open(&path, Arc::clone(&kinds)).expect("the store opens");
        let second = SqliteArtifactStore::open(&path, kinds).expect("a second connection opens");
        Fixture::new(Arc::new(store))
            .with_sibling(Arc::new(second))
            .with_guard(dir)
    }

    burrow_artifacts::artifact_conformance_suite!(make);
}
