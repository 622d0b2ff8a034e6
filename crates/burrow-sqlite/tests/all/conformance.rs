//! The shared conformance suite, run on a fresh database file per scenario.

use std::path::PathBuf;
use std::sync::Arc;

use burrow_backend::{Backend, FileContext, VPath};
use burrow_conformance::{Fixture, StoreAccess, TENANT};
use burrow_sqlite::{SqliteStore, StoreBackend};
use rusqlite::{Connection, OptionalExtension};

/// Low enough that the limits scenario can create more files than one answer may hold.
const MAX_RESULTS: usize = 100;

async fn make_fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("conformance.db");
    let store = SqliteStore::open(&file).expect("open the database");
    let backend = Arc::new(
        StoreBackend::builder(&store)
            .max_results(MAX_RESULTS)
            .build(),
    );
    let access = Database {
        store,
        file,
        backend: backend.clone(),
    };
    Fixture::with_guard(backend, dir).with_store(access)
}

/// The database beneath the fixture's backend.
struct Database {
    store: SqliteStore,
    file: PathBuf,
    backend: Arc<StoreBackend>,
}

impl StoreAccess for Database {
    /// Writes the file through a second handle on the same database whose max
    /// file size is above it, and returns the fixture's own backend.
    fn plant(&self, path: &VPath, bytes: &[u8]) -> std::io::Result<Arc<dyn Backend>> {
        let size = u64::try_from(bytes.len()).map_err(std::io::Error::other)?;
        let unlimited = StoreBackend::builder(&self.store)
            .max_file_size(size)
            .build();
        tokio::task::block_in_place(|| {
            tokio::runtime::Handle::current().block_on(unlimited.write_bytes(
                &FileContext::for_tenant(TENANT),
                path,
                bytes,
            ))
        })
        .map_err(|e| std::io::Error::other(e.message().to_owned()))?;
        Ok(self.backend.clone())
    }

    /// The `created_at` column of the file's row.
    fn created_at(&self, path: &VPath) -> Option<String> {
        let conn = Connection::open(&self.file).ok()?;
        conn.query_row(
            "SELECT created_at FROM files WHERE tenant = ?1 AND path = ?2",
            rusqlite::params![TENANT, path.as_str()],
            |row| row.get(0),
        )
        .optional()
        .ok()
        .flatten()
    }
}

burrow_conformance::conformance_suite!(make_fixture,
    capability_skips = [empty_dirs_off, exec_off, symlinks_off],
    skips = {
        host_fifo_is_never_opened: "a database holds no special files (the fixture lends no host access)",
    },
);
