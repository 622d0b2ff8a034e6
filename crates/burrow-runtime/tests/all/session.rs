//! The session stores against the one conformance suite: memory (a second handle as the second connection), SQLite (reopen, a second connection, a real second process) and PostgreSQL.

use std::sync::Arc;

use burrow_runtime::session::conformance::{Fixture, OpenFn};
use burrow_runtime::session::{ManualClock, SessionStore, SqliteOptions, SqliteStore, StoreResult};

fn opener(open: impl Fn() -> StoreResult<Arc<dyn SessionStore>> + Send + Sync + 'static) -> OpenFn {
    let open = Arc::new(open);
    Arc::new(move || {
        let open = Arc::clone(&open);
        Box::pin(async move { open() })
    })
}

mod memory {
    use super::*;
    use burrow_runtime::session::MemoryStore;

    async fn make() -> Fixture {
        let clock = Arc::new(ManualClock::default());
        let store = MemoryStore::with_clock(clock.clone());
        let second = store.clone();
        Fixture::new(Arc::new(store), clock).with_sibling(opener(move || {
            Ok(Arc::new(second.clone()) as Arc<dyn SessionStore>)
        }))
    }

    burrow_runtime::session_conformance_suite!(make, skips = {
        reopen_keeps_everything: "MemoryStore keeps nothing past its last handle",
        second_process_claims_and_commits: "MemoryStore lives in one process",
        second_process_command_once: "MemoryStore lives in one process",
    });
}

mod sqlite {
    use super::*;

    fn open(path: &std::path::Path, clock: Arc<ManualClock>) -> StoreResult<Arc<dyn SessionStore>> {
        Ok(Arc::new(SqliteStore::open_with(
            path,
            clock,
            SqliteOptions::default(),
        )?))
    }

    #[allow(clippy::expect_used)] // a fixture that cannot be built fails its test
    async fn make() -> Fixture {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let path = dir.path().join("sessions.db");
        let clock = Arc::new(ManualClock::default());
        let store = open(&path, clock.clone()).expect("open the SQLite store");
        let (p1, c1) = (path.clone(), clock.clone());
        let (p2, c2) = (path.clone(), clock.clone());
        Fixture::new(store, clock)
            .with_reopen(opener(move || open(&p1, c1.clone())))
            .with_sibling(opener(move || open(&p2, c2.clone())))
            .with_child(path.to_string_lossy().into_owned())
            .with_guard(dir)
    }

    async fn open_child(
        locator: String,
        clock: Arc<ManualClock>,
    ) -> StoreResult<Arc<dyn SessionStore>> {
        open(std::path::Path::new(&locator), clock)
    }

    burrow_runtime::session_conformance_suite!(make, child = open_child);
}
