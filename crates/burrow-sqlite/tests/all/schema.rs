//! Schema versions: a database written by schema v1 or v2 opens, migrates and keeps its data; a newer one is refused.

use burrow_backend::{Backend, ErrorKind, GrepQuery};
use burrow_sqlite::{Depth, SCHEMA_VERSION, SqliteStore, StoreBackend};
use rusqlite::Connection;
use serde_json::json;

use super::common::{ctx, p};

const V1_SCRIPT: &str = include_str!("../fixtures/schema_v1.sql");
const V2_SCRIPT: &str = include_str!("../fixtures/schema_v2.sql");

fn user_version(path: &std::path::Path) -> i64 {
    Connection::open(path)
        .unwrap()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap()
}

#[tokio::test]
async fn v1_database_opens_and_migrates_with_data_intact() {
    let dir = tempfile::TempDir::new().unwrap();
    let path = dir.path().join("v1.db");
    Connection::open(&path)
        .unwrap()
        .execute_batch(V1_SCRIPT)
        .unwrap();
    assert_eq!(user_version(&path), 1);

    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(user_version(&path), SCHEMA_VERSION);
    let files = StoreBackend::builder(&store).max_files(6).build();
    let alice = ctx("alice");

    // Files and their directories.
    let root: Vec<(String, bool)> = files
        .ls(&alice, &p("/"), 100)
        .await
        .unwrap()
        .entries
        .into_iter()
        .map(|e| (e.path, e.is_dir))
        .collect();
    assert_eq!(
        root,
        [
            ("/deep".to_owned(), true),
            ("/notes.md".to_owned(), false),
            ("/src".to_owned(), true)
        ]
    );
    let src = files.ls(&alice, &p("/src"), 100).await.unwrap();
    let names: Vec<&str> = src.entries.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["lib", "main.rs"]);
    assert_eq!(
        src.entries[1].modified_at.as_deref(),
        Some("2025-01-03T00:00:00Z")
    );
    assert_eq!(
        files
            .ls(&alice, &p("/deep/x/y"), 10)
            .await
            .unwrap()
            .entries
            .len(),
        1
    );
    assert_eq!(
        files
            .read_bytes(&alice, &p("/deep/x/y/z.txt"))
            .await
            .unwrap(),
        [0xff, 0x00]
    );
    assert_eq!(
        files
            .read(&alice, &p("/notes.md"), 0, 10)
            .await
            .unwrap()
            .lines,
        ["hello"]
    );
    let grep = files
        .grep(&alice, &GrepQuery::regex(r"pub fn \w"), &p("/"), 10)
        .await
        .unwrap();
    assert_eq!(grep.matches.len(), 2);
    let bob: Vec<String> = files
        .glob(&ctx("bob"), "**", &p("/"), 10)
        .await
        .unwrap()
        .files
        .into_iter()
        .map(|f| f.path)
        .collect();
    assert_eq!(bob, ["/src/other.rs"]);

    // Usage was counted from the old rows: alice has 5 files (41 bytes), so one more is allowed, then the quota bites.
    assert_eq!(files.usage("alice").await.unwrap(), (41, 5));
    files.write(&alice, &p("/src/lib/c.rs"), "c").await.unwrap();
    let err = files
        .write(&alice, &p("/src/lib/d.rs"), "d")
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::QuotaExceeded);

    // Directory counts were rebuilt right: emptying a directory removes it, and its emptied parents.
    for path in ["/src/lib/a.rs", "/src/lib/b.rs", "/src/lib/c.rs"] {
        files.delete(&alice, &p(path)).await.unwrap();
    }
    assert_eq!(
        files
            .ls(&alice, &p("/src/lib"), 10)
            .await
            .unwrap_err()
            .kind(),
        ErrorKind::NotFound
    );
    files.delete(&alice, &p("/deep/x/y/z.txt")).await.unwrap();
    assert_eq!(
        files.ls(&alice, &p("/deep"), 10).await.unwrap_err().kind(),
        ErrorKind::NotFound
    );

    // Recorded effects still replay.
    let replay = files
        .write(
            &alice.with_effect_key("call-1"),
            &p("/notes.md"),
            "overwritten?",
        )
        .await
        .unwrap();
    assert_eq!(replay.path.as_deref(), Some("/notes.md"));
    assert_eq!(
        files.read_bytes(&alice, &p("/notes.md")).await.unwrap(),
        b"hello\n"
    );

    // Key/value items, namespaces and all.
    let items = store
        .list("alice", &["memories"], Depth::Nested, 10)
        .await
        .unwrap();
    assert_eq!(items.items.len(), 2);
    let likes = store
        .get("alice", &["memories", "user"], "likes")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(likes.value, json!({"food": "soup"}));

    // Opening again is a no-op.
    drop(files);
    drop(store);
    SqliteStore::open(&path).unwrap();
    assert_eq!(user_version(&path), SCHEMA_VERSION);
}

#[test]
fn a_database_from_a_newer_burrow_is_refused_untouched() {
    let dir = tempfile::TempDir::new().unwrap();
    let path = dir.path().join("future.db");
    Connection::open(&path)
        .unwrap()
        .execute_batch("CREATE TABLE future (x); PRAGMA user_version = 99;")
        .unwrap();
    let err = SqliteStore::open(&path).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Failure);
    assert!(err.message().contains("newer"), "{err}");
    assert_eq!(user_version(&path), 99);
}

#[test]
fn a_new_database_starts_at_the_current_version() {
    let dir = tempfile::TempDir::new().unwrap();
    let path = dir.path().join("new.db");
    SqliteStore::open(&path).unwrap();
    assert_eq!(user_version(&path), SCHEMA_VERSION);
    let mode: String = Connection::open(&path)
        .unwrap()
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

#[tokio::test]
async fn v2_effect_records_gain_their_path_and_a_numeric_time() {
    let dir = tempfile::TempDir::new().unwrap();
    let path = dir.path().join("v2.db");
    Connection::open(&path)
        .unwrap()
        .execute_batch(V2_SCRIPT)
        .unwrap();
    assert_eq!(user_version(&path), 2);
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(user_version(&path), SCHEMA_VERSION);
    let rows: Vec<(String, String, i64)> = Connection::open(&path)
        .unwrap()
        .prepare("SELECT effect_key, path, created_ms FROM effects ORDER BY effect_key")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let ms = |s: &str| s.parse::<jiff::Timestamp>().unwrap().as_millisecond();
    assert_eq!(
        rows,
        [
            (
                "call-1".to_owned(),
                "/notes.md".to_owned(),
                ms("2025-01-02T03:04:05Z")
            ),
            (
                "call-2".to_owned(),
                "/src/main.rs".to_owned(),
                ms("2025-01-02T03:04:05.5Z")
            ),
            (
                "call-3".to_owned(),
                String::new(),
                ms("2025-06-01T00:00:00Z")
            ),
            (
                "call-4".to_owned(),
                String::new(),
                ms("2025-06-01T00:00:00Z")
            ),
        ]
    );
    let files = store.files();
    let alice = ctx("alice");
    // The write's key now replays only for its own path.
    let err = files
        .write(&alice.with_effect_key("call-1"), &p("/other.md"), "x")
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    files
        .write(&alice.with_effect_key("call-1"), &p("/notes.md"), "x")
        .await
        .unwrap();
    assert_eq!(
        files.read_bytes(&alice, &p("/notes.md")).await.unwrap(),
        b"hello\n"
    );
    // A record whose path is unknown still replays for its operation.
    let err = files
        .write(&alice.with_effect_key("call-4"), &p("/any.md"), "x")
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::QuotaExceeded);
    // Pruning compares the migrated times as instants.
    let cutoff: jiff::Timestamp = "2025-01-02T03:04:05.2Z".parse().unwrap();
    assert_eq!(files.prune_effects(cutoff).await.unwrap(), 1);
}
