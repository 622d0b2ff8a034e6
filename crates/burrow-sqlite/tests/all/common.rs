//! Helpers shared by the test modules: a store in a temporary folder, contexts, paths.

use std::path::PathBuf;

use burrow_backend::{FileContext, VPath};
use burrow_sqlite::{SqliteStore, StoreBackend};
use tempfile::TempDir;

/// A store in its own temporary folder, kept alive with it.
pub struct TempStore {
    pub dir: TempDir,
    pub store: SqliteStore,
    pub files: StoreBackend,
}

impl TempStore {
    pub fn new() -> TempStore {
        let dir = TempDir::new().unwrap();
        let store = SqliteStore::open(dir.path().join("burrow.db")).unwrap();
        let files = store.files();
        TempStore { dir, store, files }
    }

    pub fn db_path(&self) -> PathBuf {
        self.dir.path().join("burrow.db")
    }
}

pub fn ctx(tenant: &str) -> FileContext {
    FileContext::for_tenant(tenant)
}

pub fn p(path: &str) -> VPath {
    VPath::parse(path).unwrap()
}
