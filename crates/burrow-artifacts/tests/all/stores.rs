//! The artifact stores against the one conformance suite: memory (a clone as the second handle) and SQLite (a real file, a second connection as the second handle).

mod memory {
    use std::sync::Arc;

    use burrow_artifacts::MemoryArtifactStore;
    use burrow_artifacts::conformance::{Fixture, kinds};

    async fn make() -> Fixture {
        let store = MemoryArtifactStore::new(kinds());
        Fixture::new(Arc::new(store.clone())).with_sibling(Arc::new(store))
    }

    burrow_artifacts::artifact_conformance_suite!(make);
}

mod sqlite {
    use std::sync::Arc;

    use burrow_artifacts::SqliteArtifactStore;
    use burrow_artifacts::conformance::{Fixture, kinds};

    async fn make() -> Fixture {
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

#[cfg(feature = "postgres")]
mod postgres {
    //! Each test works in a fresh schema of the test database, dropped when its fixture is;
    //! a second connection is the second handle.
    use std::sync::Arc;

    use burrow_artifacts::conformance::{Fixture, kinds};
    use burrow_artifacts::store::PostgresArtifactStore;
    use burrow_testkit::{Part, require};

    /// Drops the test's schema (on a thread of its own: the test's runtime may be gone).
    struct DropSchema {
        url: String,
        schema: String,
    }

    impl Drop for DropSchema {
        fn drop(&mut self) {
            let (url, schema) = (self.url.clone(), self.schema.clone());
            let _ = std::thread::spawn(move || {
                let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                else {
                    return;
                };
                rt.block_on(async move {
                    if let Ok((client, conn)) =
                        tokio_postgres::connect(&url, tokio_postgres::NoTls).await
                    {
                        tokio::spawn(conn);
                        let _ = client
                            .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
                            .await;
                    }
                });
            })
            .join();
        }
    }

    async fn make() -> Fixture {
        let url = require(Part::Postgres);
        let schema = format!("a_{}", uuid::Uuid::now_v7().simple());
        let kinds = Arc::new(kinds());
        let store = PostgresArtifactStore::connect(&url, &schema, Arc::clone(&kinds))
            .await
            .expect("the store connects");
        let second = PostgresArtifactStore::connect(&url, &schema, kinds)
            .await
            .expect("a second connection");
        Fixture::new(Arc::new(store))
            .with_sibling(Arc::new(second))
            .with_guard(DropSchema { url, schema })
    }

    burrow_artifacts::artifact_conformance_suite!(make);
}
