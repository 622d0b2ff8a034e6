//! The artifact stores against the one conformance suite: memory (a clone as the second handle) and SQLite (a real file, a second connection as the second handle), and SQLite's kept heads read again after another connection's commit.

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

    /// A connection keeps the heads it wrote decoded; another connection's
    /// commit makes it read them again, so it never works on a stale head.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_head_kept_by_one_connection_is_read_again_after_anothers_commit() {
        use burrow_artifacts::{Actor, ArtifactStore, Change};
        use serde_json::json;

        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("artifacts.db");
        let kinds = Arc::new(kinds());
        let a = SqliteArtifactStore::open(&path, Arc::clone(&kinds)).expect("the store opens");
        let b = SqliteArtifactStore::open(&path, kinds).expect("a second connection opens");
        let scope = burrow_runtime::session::Scope::new("t", "w");
        let ana = Actor::person("ana");
        let patch = |value: &str| {
            serde_json::from_value(json!([{"op": "replace", "path": "/text", "value": value}]))
                .expect("a patch")
        };
        let edit = |base: u64, value: &str| Change::Patch {
            id: "note-1".into(),
            base_version: base,
            patch: patch(value),
            summary: None,
        };
        let created = a
            .submit(
                &scope,
                &ana,
                Change::Create {
                    kind: "note".into(),
                    snapshot: json!({"title": "T", "text": "one"}),
                },
            )
            .await
            .expect("created");
        assert_eq!(created.artifact.id, "note-1");
        // a writes v2 (and keeps it), b writes v3, a's next edit is against v3.
        a.submit(&scope, &ana, edit(1, "two")).await.expect("v2");
        b.submit(&scope, &ana, edit(2, "three")).await.expect("v3");
        let stale = a.submit(&scope, &ana, edit(2, "stale")).await;
        assert!(
            matches!(
                stale.as_ref().map_err(|e| e.kind().clone()),
                Err(burrow_artifacts::ArtifactErrorKind::Conflict { head: 3, .. })
            ),
            "{stale:?}"
        );
        let four = a.submit(&scope, &ana, edit(3, "four")).await.expect("v4");
        assert_eq!(four.artifact.version, 4);
        assert_eq!(four.artifact.snapshot["text"], "four");
        // A refused change leaves the kept head right.
        let bad = a
            .submit(
                &scope,
                &ana,
                Change::Patch {
                    id: "note-1".into(),
                    base_version: 4,
                    patch: serde_json::from_value(json!([{"op": "remove", "path": "/nope"}]))
                        .expect("a patch"),
                    summary: None,
                },
            )
            .await;
        assert!(bad.is_err(), "{bad:?}");
        let five = a.submit(&scope, &ana, edit(4, "five")).await.expect("v5");
        assert_eq!(five.artifact.version, 5);
        let head = b.get(&scope, "note-1").await.expect("the head");
        assert_eq!(
            (head.version, head.snapshot["text"].clone()),
            (5, json!("five"))
        );
        let history = b.history(&scope, "note-1").await.expect("the history");
        let texts: Vec<&str> = history
            .iter()
            .map(|r| r.snapshot["text"].as_str().unwrap_or_default())
            .collect();
        assert_eq!(texts, ["one", "two", "three", "four", "five"]);
    }
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
    pub(super) struct DropSchema {
        pub(super) url: String,
        pub(super) schema: String,
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

mod two_processes {
    //! Two real processes (this test binary run again as children) edit the same
    //! artifacts of one store (a SQLite file, a PostgreSQL schema) from one base
    //! version: each artifact gets exactly one edit, the other is a conflict.
    use std::path::Path;
    use std::process::{Command, Stdio};
    use std::sync::Arc;

    use burrow_artifacts::conformance::kinds;
    use burrow_artifacts::{Actor, ArtifactErrorKind, ArtifactStore, Change, SqliteArtifactStore};
    use burrow_runtime::session::Scope;
    use serde_json::json;

    /// The store the child opens: `sqlite:PATH` or `postgres:SCHEMA`.
    const CHILD: &str = "BURROW_ARTIFACTS_CHILD_STORE";
    const CHILD_DIR: &str = "BURROW_ARTIFACTS_CHILD_DIR";
    const CHILD_NAME: &str = "BURROW_ARTIFACTS_CHILD_NAME";
    const ARTIFACTS: u64 = 30;
    const SQLITE_TEST: &str =
        "all::stores::two_processes::two_processes_editing_from_one_base_apply_once";
    #[cfg(feature = "postgres")]
    const POSTGRES_TEST: &str =
        "all::stores::two_processes::postgres::two_processes_editing_from_one_base_apply_once";

    fn edit(id: &str, who: &str) -> Change {
        Change::EditText {
            id: id.to_owned(),
            base_version: 1,
            field: "/text".into(),
            old: "start".into(),
            new: format!("by {who}"),
            summary: None,
        }
    }

    async fn open(spec: &str) -> Arc<dyn ArtifactStore> {
        if let Some(path) = spec.strip_prefix("sqlite:") {
            return Arc::new(SqliteArtifactStore::open(path, kinds()).unwrap());
        }
        #[cfg(feature = "postgres")]
        if let Some(schema) = spec.strip_prefix("postgres:") {
            let url = burrow_testkit::require(burrow_testkit::Part::Postgres);
            return Arc::new(
                burrow_artifacts::store::PostgresArtifactStore::connect(
                    &url,
                    schema,
                    Arc::new(kinds()),
                )
                .await
                .unwrap(),
            );
        }
        panic!("an unknown store {spec}")
    }

    /// The child's part: edit every artifact from v1, printing each outcome.
    fn child(spec: &str, dir: &Path, who: &str) {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let store = open(spec).await;
            let scope = Scope::new("t", "w");
            // Say ready, then wait for the parent's go, so both children edit at once.
            std::fs::write(dir.join(format!("ready-{who}")), b"").unwrap();
            while !dir.join("go").exists() {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            for n in 1..=ARTIFACTS {
                let id = format!("note-{n}");
                let outcome = match store
                    .submit(&scope, &Actor::person(who), edit(&id, who))
                    .await
                {
                    Ok(_) => "applied".to_owned(),
                    Err(e) if matches!(e.kind(), ArtifactErrorKind::Conflict { head: 2, .. }) => {
                        "conflict".to_owned()
                    }
                    Err(e) => format!("error {e}"),
                };
                println!("RESULT {id} {outcome}");
            }
        });
    }

    /// In a child, plays the child's part and returns true.
    fn as_child() -> bool {
        let Ok(spec) = std::env::var(CHILD) else {
            return false;
        };
        let dir = std::env::var(CHILD_DIR).unwrap();
        let who = std::env::var(CHILD_NAME).unwrap();
        tokio::task::block_in_place(|| child(&spec, Path::new(&dir), &who));
        true
    }

    /// Creates the artifacts in `store`, runs two children of `test` on
    /// `spec`, and checks each artifact took exactly one of their edits.
    async fn two_children(store: Arc<dyn ArtifactStore>, spec: &str, test: &str) {
        let dir = tempfile::tempdir().unwrap();
        let scope = Scope::new("t", "w");
        for _ in 1..=ARTIFACTS {
            store
                .submit(
                    &scope,
                    &Actor::person("setup"),
                    Change::Create {
                        kind: "note".into(),
                        snapshot: json!({"title": "t", "text": "start"}),
                    },
                )
                .await
                .unwrap();
        }
        let exe = std::env::current_exe().unwrap();
        let children: Vec<_> = ["p1", "p2"]
            .iter()
            .map(|who| {
                Command::new(&exe)
                    .args([test, "--exact", "--nocapture", "--test-threads", "1"])
                    .env(CHILD, spec)
                    .env(CHILD_DIR, dir.path())
                    .env(CHILD_NAME, who)
                    .stdout(Stdio::piped())
                    .stderr(Stdio::inherit())
                    .spawn()
                    .unwrap()
            })
            .collect();
        while !["p1", "p2"]
            .iter()
            .all(|who| dir.path().join(format!("ready-{who}")).exists())
        {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        std::fs::write(dir.path().join("go"), b"").unwrap();
        let mut results: Vec<String> = Vec::new();
        for c in children {
            let out = c.wait_with_output().unwrap();
            assert!(out.status.success(), "a child failed");
            let text = String::from_utf8(out.stdout).unwrap();
            let lines: Vec<String> = text
                .lines()
                // libtest may print its "test ... " prefix on the first line.
                .filter_map(|l| l.find("RESULT ").map(|i| l[i + 7..].to_owned()))
                .collect();
            assert_eq!(lines.len() as u64, ARTIFACTS, "a child's output: {text}");
            results.extend(lines);
        }
        for n in 1..=ARTIFACTS {
            let id = format!("note-{n}");
            let mine: Vec<&str> = results
                .iter()
                .filter_map(|r| r.strip_prefix(&format!("{id} ")))
                .collect();
            let mut sorted = mine.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, ["applied", "conflict"], "{id}: {mine:?}");
            let head = store.get(&scope, &id).await.unwrap();
            assert_eq!(head.version, 2);
            assert_eq!(store.history(&scope, &id).await.unwrap().len(), 2);
        }
        let log = store.events(&scope, 0, 1000).await.unwrap();
        let seqs: Vec<u64> = log.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (1..=2 * ARTIFACTS).collect::<Vec<_>>());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn two_processes_editing_from_one_base_apply_once() {
        if as_child() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("two.db");
        let spec = format!("sqlite:{}", db.display());
        let store = open(&spec).await;
        two_children(store, &spec, SQLITE_TEST).await;
    }

    #[cfg(feature = "postgres")]
    mod postgres {
        //! The same on one PostgreSQL schema, dropped when the test ends.
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn two_processes_editing_from_one_base_apply_once() {
            if super::as_child() {
                return;
            }
            let url = burrow_testkit::require(burrow_testkit::Part::Postgres);
            let schema = format!("a_{}", uuid::Uuid::now_v7().simple());
            let _drop = super::super::postgres::DropSchema {
                url,
                schema: schema.clone(),
            };
            let spec = format!("postgres:{schema}");
            let store = super::open(&spec).await;
            super::two_children(store, &spec, super::POSTGRES_TEST).await;
        }
    }
}
