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

    /// Connections opening one new file at the same moment all open it (the
    /// losers of the race to switch it to WAL mode try again).
    #[test]
    #[allow(clippy::expect_used)]
    fn connections_opening_a_new_file_at_once_all_open() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        for round in 0..20 {
            let path = dir.path().join(format!("race-{round}.db"));
            let start = Arc::new(std::sync::Barrier::new(6));
            let openers: Vec<_> = (0..6)
                .map(|_| {
                    let (path, start) = (path.clone(), Arc::clone(&start));
                    std::thread::spawn(move || {
                        start.wait();
                        SqliteStore::open(&path).map(|_| ())
                    })
                })
                .collect();
            for opener in openers {
                let opened = opener.join().expect("the opening thread ended");
                assert!(opened.is_ok(), "round {round}: {opened:?}");
            }
        }
    }

    /// The threads of this process named `name` (`/proc/self/task/*/comm`).
    #[allow(clippy::expect_used)]
    fn threads_named(name: &str) -> usize {
        std::fs::read_dir("/proc/self/task")
            .expect("list /proc/self/task")
            .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
            .filter(|comm| comm.trim_end() == name)
            .count()
    }

    fn command(id: usize) -> burrow_runtime::session::CommandKey {
        burrow_runtime::session::CommandKey {
            scope: burrow_runtime::session::Scope::new("t", "w"),
            sender: "alice".into(),
            command_id: format!("c{id}"),
        }
    }

    /// 400 calls from 200 tasks at once on a multi-threaded runtime, the store
    /// sending every call to its own thread (`in_place` off): each is done
    /// once, and the process gains no thread while they wait (they wait as
    /// tasks, not as blocked threads; ADR 0400). The runtime's threads carry
    /// a name of their own, so tests running beside this one do not count.
    #[test]
    #[allow(clippy::expect_used)]
    fn calls_made_at_once_wait_as_tasks_for_the_stores_thread() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("calls-at-once")
            .enable_all()
            .build()
            .expect("a runtime");
        let dir = tempfile::tempdir().expect("a temporary folder");
        let mut options = SqliteOptions::default();
        options.in_place = false;
        let store = Arc::new(
            SqliteStore::open_with(
                dir.path().join("sessions.db"),
                Arc::new(ManualClock::default()),
                options,
            )
            .expect("open"),
        );
        let before = threads_named("calls-at-once");
        let most = runtime.block_on(async {
            let tasks: Vec<_> = (0..200)
                .map(|i| {
                    let store = Arc::clone(&store);
                    tokio::spawn(async move {
                        let recorded = store
                            .record_command(&command(i), serde_json::json!({"n": i}))
                            .await
                            .expect("record");
                        let read = store.command_result(&command(i)).await.expect("read");
                        (recorded, read, threads_named("calls-at-once"))
                    })
                })
                .collect();
            let mut most = 0;
            for (i, task) in tasks.into_iter().enumerate() {
                let (recorded, read, seen) = task.await.expect("the task ended");
                assert_eq!(recorded, None, "call {i} is the first of its command");
                assert_eq!(read, Some(serde_json::json!({"n": i})));
                most = most.max(seen);
            }
            most
        });
        assert!(
            most <= before,
            "{before} runtime threads before the calls, {most} while they ran"
        );
    }

    /// The store answers a caller outside any tokio runtime (its own thread
    /// runs the call), and its thread ends with its last clone: the
    /// connection is closed then, which removes the file's WAL.
    #[test]
    #[allow(clippy::expect_used)]
    fn a_store_answers_outside_any_runtime_and_its_thread_ends_with_it() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let path = dir.path().join("sessions.db");
        let wal = dir.path().join("sessions.db-wal");
        let store = SqliteStore::open(&path).expect("open");
        let recorded = futures::executor::block_on(
            store.record_command(&command(1), serde_json::json!({"n": 1})),
        )
        .expect("record");
        assert_eq!(recorded, None);
        let read = futures::executor::block_on(store.command_result(&command(1))).expect("read");
        assert_eq!(read, Some(serde_json::json!({"n": 1})));
        let second = store.clone();
        drop(store);
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(wal.exists(), "a clone keeps the connection open");
        drop(second);
        let closed = (0..500).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(10));
            !wal.exists()
        });
        assert!(
            closed,
            "the store's thread closed the connection with its last clone"
        );
        let again = SqliteStore::open(&path).expect("reopen");
        let read = futures::executor::block_on(again.command_result(&command(1))).expect("read");
        assert_eq!(
            read,
            Some(serde_json::json!({"n": 1})),
            "the call was committed"
        );
    }

    /// A file of schema 1, whose command results carry no time, is upgraded
    /// when opened: its results are dated then (kept a whole retention window),
    /// later ones at their own time, and a prune sees both (ADR 0255).
    #[tokio::test]
    #[allow(clippy::expect_used)]
    async fn a_schema_1_file_is_upgraded_its_command_results_dated_at_the_upgrade() {
        use burrow_runtime::session::{CommandKey, Scope};
        let dir = tempfile::tempdir().expect("a temporary folder");
        let path = dir.path().join("sessions.db");
        let conn = rusqlite::Connection::open(&path).expect("create the file");
        conn.execute_batch(
            "CREATE TABLE session_commands (
                tenant TEXT NOT NULL, workspace TEXT NOT NULL, sender TEXT NOT NULL,
                command_id TEXT NOT NULL, result TEXT NOT NULL,
                PRIMARY KEY (tenant, workspace, sender, command_id)) WITHOUT ROWID;
             INSERT INTO session_commands VALUES ('t', 'w', 'alice', 'old', '{\"n\":1}');
             PRAGMA user_version = 1;",
        )
        .expect("a schema 1 file");
        drop(conn);
        let clock = Arc::new(ManualClock::new(1_000_000));
        let store = open(&path, clock.clone()).expect("open and upgrade");
        let scope = Scope::new("t", "w");
        let key = |id: &str| CommandKey {
            scope: scope.clone(),
            sender: "alice".into(),
            command_id: id.into(),
        };
        assert_eq!(
            store.command_result(&key("old")).await.expect("read"),
            Some(serde_json::json!({"n": 1}))
        );
        clock.advance(std::time::Duration::from_secs(60));
        store
            .record_command(&key("new"), serde_json::json!({"n": 2}))
            .await
            .expect("record");
        let version: i64 = rusqlite::Connection::open(&path)
            .expect("open the file")
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .expect("read the version");
        assert_eq!(version, 4);
        let kept = store.prune(&scope, 1_000_000).await.expect("prune");
        assert_eq!(kept.commands, 0, "dated at the upgrade, not before it");
        let pruned = store.prune(&scope, 1_000_001).await.expect("prune");
        assert_eq!(pruned.commands, 1);
        assert_eq!(store.command_result(&key("old")).await.expect("read"), None);
        assert!(
            store
                .command_result(&key("new"))
                .await
                .expect("read")
                .is_some()
        );
        // Reopening an upgraded file changes nothing.
        drop(store);
        let again = open(&path, clock).expect("reopen");
        assert!(
            again
                .command_result(&key("new"))
                .await
                .expect("read")
                .is_some()
        );
    }

    /// A file whose tool-call table is the earlier `WITHOUT ROWID` one (before
    /// ADR 0195) still records calls started and finished.
    #[tokio::test]
    #[allow(clippy::expect_used)]
    async fn a_file_with_the_earlier_tool_call_table_records_calls() {
        for name in [
            "a_tool_call_is_recorded_started_then_finished",
            "a_finished_call_is_never_started_again",
        ] {
            let dir = tempfile::tempdir().expect("a temporary folder");
            let path = dir.path().join("sessions.db");
            rusqlite::Connection::open(&path)
                .expect("create the file")
                .execute_batch(
                    "CREATE TABLE session_tool_calls (
                        tenant TEXT NOT NULL, workspace TEXT NOT NULL, run_id TEXT NOT NULL,
                        call_id TEXT NOT NULL, started_seq INTEGER NOT NULL, doc TEXT NOT NULL,
                        PRIMARY KEY (tenant, workspace, run_id, call_id)) WITHOUT ROWID;",
                )
                .expect("the earlier table");
            let clock = Arc::new(ManualClock::default());
            let fx = Fixture::new(open(&path, clock.clone()).expect("open"), clock);
            let scenario =
                burrow_runtime::session::conformance::find(name).expect("the scenario exists");
            let outcome = (scenario.run)(&fx).await;
            assert!(outcome.is_ok(), "{name}: {outcome:?}");
        }
    }
}

#[cfg(feature = "postgres")]
pub(crate) mod postgres {
    //! Each test works in a fresh schema of the test database, dropped when its fixture is.
    use super::*;
    use burrow_runtime::session::{PostgresOptions, PostgresStore};
    use burrow_testkit::{Part, require};

    async fn open(locator: &str, clock: Arc<ManualClock>) -> StoreResult<Arc<dyn SessionStore>> {
        let (url, schema) = locator.split_once(' ').unwrap_or((locator, "public"));
        let options = PostgresOptions::default().with_schema(schema);
        Ok(Arc::new(
            PostgresStore::connect_with(url, clock, options).await?,
        ))
    }

    /// Drops the test's schema (on a thread of its own: the test's runtime may be gone).
    pub(crate) struct DropSchema {
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
                        // The test's own connections are tagged with the schema's
                        // name; end them first (their runtime may be blocked here).
                        let _ = client
                            .execute(
                                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                                 WHERE application_name = $1 AND pid <> pg_backend_pid()",
                                &[&schema],
                            )
                            .await;
                        let _ = client
                            .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
                            .await;
                    }
                });
            })
            .join();
        }
    }

    /// A fresh schema of the test database: the locator `open` takes (the URL
    /// tagged with the schema's name, then the schema) and what drops it.
    pub(crate) fn fresh_schema() -> (String, DropSchema) {
        let url = require(Part::Postgres);
        let schema = format!("t_{}", uuid::Uuid::now_v7().simple());
        let sep = if url.contains('?') { '&' } else { '?' };
        let locator = format!("{url}{sep}application_name={schema} {schema}");
        (locator, DropSchema { url, schema })
    }

    /// A store in a fresh schema on `clock`, and what drops the schema.
    #[allow(clippy::expect_used)] // a fixture that cannot be built fails its test
    pub(crate) async fn fresh_store(
        clock: Arc<ManualClock>,
    ) -> (Arc<dyn SessionStore>, DropSchema) {
        let (locator, guard) = fresh_schema();
        let store = open(&locator, clock)
            .await
            .expect("connect to the test PostgreSQL server");
        (store, guard)
    }

    #[allow(clippy::expect_used)] // a fixture that cannot be built fails its test
    async fn make() -> Fixture {
        let (locator, guard) = fresh_schema();
        let clock = Arc::new(ManualClock::default());
        let store = open(&locator, clock.clone())
            .await
            .expect("connect to the test PostgreSQL server");
        let second = locator.clone();
        let c2 = clock.clone();
        let sibling: OpenFn = Arc::new(move || {
            let (locator, clock) = (second.clone(), c2.clone());
            Box::pin(async move { open(&locator, clock).await })
        });
        let third = locator.clone();
        let c3 = clock.clone();
        let reopen: OpenFn = Arc::new(move || {
            let (locator, clock) = (third.clone(), c3.clone());
            Box::pin(async move { open(&locator, clock).await })
        });
        Fixture::new(store, clock)
            .with_reopen(reopen)
            .with_sibling(sibling)
            .with_child(locator)
            .with_guard(guard)
    }

    async fn open_child(
        locator: String,
        clock: Arc<ManualClock>,
    ) -> StoreResult<Arc<dyn SessionStore>> {
        open(&locator, clock).await
    }

    burrow_runtime::session_conformance_suite!(make, child = open_child);

    /// Tables made before command results carried their time gain the column
    /// when a store connects: the results recorded until then are dated then
    /// (ADR 0255); a second connect changes nothing.
    #[tokio::test]
    #[allow(clippy::expect_used)]
    async fn command_results_of_earlier_tables_are_dated_when_the_store_connects() {
        use burrow_runtime::session::{CommandKey, Scope};
        let (locator, _guard) = fresh_schema();
        let (url, schema) = locator.split_once(' ').expect("a locator");
        let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .expect("connect");
        tokio::spawn(conn);
        client
            .batch_execute(&format!(
                "CREATE SCHEMA \"{schema}\";
                 CREATE TABLE \"{schema}\".session_commands (
                    tenant TEXT NOT NULL, workspace TEXT NOT NULL, sender TEXT NOT NULL,
                    command_id TEXT NOT NULL, result TEXT NOT NULL,
                    CONSTRAINT session_commands_pkey PRIMARY KEY (tenant, workspace, sender, command_id));
                 INSERT INTO \"{schema}\".session_commands VALUES ('t', 'w', 'alice', 'old', '{{\"n\":1}}');"
            ))
            .await
            .expect("the earlier table");
        drop(client);
        let clock = Arc::new(ManualClock::new(1_000_000));
        let store = open(&locator, clock.clone())
            .await
            .expect("connect and upgrade");
        let scope = Scope::new("t", "w");
        let key = CommandKey {
            scope: scope.clone(),
            sender: "alice".into(),
            command_id: "old".into(),
        };
        assert!(store.command_result(&key).await.expect("read").is_some());
        let again = open(&locator, clock).await.expect("connect again");
        assert_eq!(
            again
                .prune(&scope, 1_000_000)
                .await
                .expect("prune")
                .commands,
            0
        );
        assert_eq!(
            again
                .prune(&scope, 1_000_001)
                .await
                .expect("prune")
                .commands,
            1
        );
        assert_eq!(store.command_result(&key).await.expect("read"), None);
    }
}

#[test]
fn a_failed_runs_reason_reads_and_writes_the_strings_session_files_held() {
    use burrow_runtime::agent::FailureReason;
    use burrow_runtime::session::RunEnd;
    // The reasons stored before `FailureReason` held them, as strings.
    for (stored, reason) in [
        ("abandoned", FailureReason::Abandoned),
        ("max_turns", FailureReason::MaxTurns),
        ("max_tool_calls", FailureReason::MaxToolCalls),
        ("model_error", FailureReason::ModelError),
        ("tool_failure", FailureReason::ToolFailure),
        ("hook_failed", FailureReason::HookFailed),
        ("instructions_failed", FailureReason::InstructionsFailed),
        ("panicked", FailureReason::Panicked),
        (
            "paused_without_request",
            FailureReason::PausedWithoutRequest,
        ),
        ("runner_failed", FailureReason::RunnerFailed),
        ("store_failed", FailureReason::StoreFailed),
        (
            "my_app_gave_up",
            FailureReason::Other("my_app_gave_up".into()),
        ),
    ] {
        let old = format!(r#"{{"outcome":"failed","reason":"{stored}","message":"it failed"}}"#);
        let end: RunEnd = serde_json::from_str(&old).unwrap();
        assert_eq!(
            end,
            RunEnd::Failed {
                reason: reason.clone(),
                message: "it failed".into()
            }
        );
        assert_eq!(end.reason(), Some(stored));
        assert_eq!(serde_json::to_string(&end).unwrap(), old);
        assert_eq!(reason.as_str(), stored);
    }
}
