//! Made directories and whole trees: made rows stay at zero entries, `delete_tree` is one transaction that keeps counts and usage exact, and effect keys replay both.

use std::path::Path;

use burrow_backend::{Backend, ErrorKind};
use burrow_sqlite::SqliteStore;
use rusqlite::Connection;

use super::common::{TempStore, ctx, p};

const V2_SCRIPT: &str = include_str!("../fixtures/schema_v2.sql");

/// Every directory row of `tenant`: (path, entries, made), by path.
fn dir_rows(db: &Path, tenant: &str) -> Vec<(String, i64, bool)> {
    Connection::open(db)
        .unwrap()
        .prepare("SELECT path, entries, made FROM dirs WHERE tenant = ?1 ORDER BY path")
        .unwrap()
        .query_map([tenant], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// Panics unless the derived data of `db` agrees with its files: each
/// directory's count is its direct files and subdirectories, every file's and
/// directory's parent has a row (or is "/"), no implicit row is empty, and
/// each tenant's usage is the sum of its files.
pub fn assert_consistent(db: &Path) {
    let conn = Connection::open(db).unwrap();
    let wrong_counts: Vec<(String, String, i64, i64)> = conn
        .prepare(
            "SELECT d.tenant, d.path, d.entries,
                 (SELECT COUNT(*) FROM files f WHERE f.tenant = d.tenant AND f.parent = d.path)
               + (SELECT COUNT(*) FROM dirs c WHERE c.tenant = d.tenant AND c.parent = d.path)
             FROM dirs d",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .filter(|(_, _, kept, real)| kept != real)
        .collect();
    assert_eq!(
        wrong_counts,
        [],
        "directory counts that disagree with their entries"
    );
    let orphans: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM (
                 SELECT tenant, parent FROM files UNION ALL SELECT tenant, parent FROM dirs
             ) x WHERE x.parent <> '/' AND NOT EXISTS
                 (SELECT 1 FROM dirs d WHERE d.tenant = x.tenant AND d.path = x.parent)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(orphans, 0, "entries whose parent directory has no row");
    let empty_implicit: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM dirs WHERE entries = 0 AND made = 0",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        empty_implicit, 0,
        "implicit directories left with no entries"
    );
    let wrong_usage: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM usage u WHERE u.bytes <> (SELECT COALESCE(SUM(size), 0) FROM files f WHERE f.tenant = u.tenant)
                 OR u.files <> (SELECT COUNT(*) FROM files f WHERE f.tenant = u.tenant)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(wrong_usage, 0, "usage rows that disagree with the files");
}

#[tokio::test]
async fn a_made_directory_is_a_row_that_stays_at_zero_entries() {
    let t = TempStore::new();
    let c = ctx("t");
    t.files.make_dir(&c, &p("/a/b"), true).await.unwrap();
    assert_eq!(
        dir_rows(&t.db_path(), "t"),
        [("/a".to_owned(), 1, false), ("/a/b".to_owned(), 0, true)],
        "mkdir -p makes the leaf, its parents are implicit"
    );
    t.files.write(&c, &p("/a/b/f.txt"), "f").await.unwrap();
    t.files.delete(&c, &p("/a/b/f.txt")).await.unwrap();
    assert_eq!(
        dir_rows(&t.db_path(), "t"),
        [("/a".to_owned(), 1, false), ("/a/b".to_owned(), 0, true)],
        "the made directory outlives its last file"
    );
    assert_consistent(&t.db_path());
    // Deleting the made directory takes its implicit parent with it.
    t.files.delete(&c, &p("/a/b")).await.unwrap();
    assert_eq!(dir_rows(&t.db_path(), "t"), []);
    // mkdir -p of an implicit directory makes it stay.
    t.files.write(&c, &p("/x/y.txt"), "y").await.unwrap();
    let e = t.files.make_dir(&c, &p("/x"), false).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AlreadyExists);
    t.files.make_dir(&c, &p("/x"), true).await.unwrap();
    t.files.delete(&c, &p("/x/y.txt")).await.unwrap();
    assert_eq!(dir_rows(&t.db_path(), "t"), [("/x".to_owned(), 0, true)]);
    assert_eq!(t.files.usage("t").await.unwrap(), (0, 0));
    assert_consistent(&t.db_path());
}

#[tokio::test]
async fn delete_tree_removes_rows_and_usage_of_its_tenant_only() {
    let t = TempStore::new();
    let (c, other) = (ctx("t"), ctx("u"));
    for (path, text) in [
        ("/d/a.txt", "aaaa"),
        ("/d/sub/b.txt", "bb"),
        ("/d/sub/deep/c.txt", "c"),
        ("/d0", "sibling"),
        ("/d.txt", "dot"),
        ("/keep/k.txt", "kk"),
    ] {
        t.files.write(&c, &p(path), text).await.unwrap();
        t.files.write(&other, &p(path), text).await.unwrap();
    }
    t.files
        .make_dir(&c, &p("/d/made/empty"), true)
        .await
        .unwrap();
    let before_other = t.files.usage("u").await.unwrap();
    t.files.delete_tree(&c, &p("/d")).await.unwrap();
    assert_eq!(
        t.files.usage("t").await.unwrap(),
        (12, 3),
        "usage is down by the tree's 7 bytes and 3 files"
    );
    assert_eq!(t.files.usage("u").await.unwrap(), before_other);
    assert_eq!(
        dir_rows(&t.db_path(), "t"),
        [("/keep".to_owned(), 1, false)]
    );
    let theirs = t.files.ls(&other, &p("/d/sub"), 10).await.unwrap();
    assert_eq!(
        theirs.entries.len(),
        2,
        "another tenant's tree is untouched"
    );
    assert_consistent(&t.db_path());
}

#[tokio::test]
async fn delete_tree_under_an_effect_key_is_done_once_and_replayed() {
    let t = TempStore::new();
    let c = ctx("t");
    let key = c.with_effect_key("rm-1");
    t.files.write(&c, &p("/tree/a.txt"), "a").await.unwrap();
    t.files.delete_tree(&key, &p("/tree")).await.unwrap();
    // The tree is made again; a retry of the first call must not remove it.
    t.files.write(&c, &p("/tree/b.txt"), "b").await.unwrap();
    t.files.delete_tree(&key, &p("/tree")).await.unwrap();
    assert_eq!(
        t.files.read_bytes(&c, &p("/tree/b.txt")).await.unwrap(),
        b"b"
    );
    // A refusal is recorded and replayed even once it would succeed.
    let missing = c.with_effect_key("rm-2");
    let e = t
        .files
        .delete_tree(&missing, &p("/gone"))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    t.files.write(&c, &p("/gone/x.txt"), "x").await.unwrap();
    let e = t
        .files
        .delete_tree(&missing, &p("/gone"))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert_eq!(
        t.files.read_bytes(&c, &p("/gone/x.txt")).await.unwrap(),
        b"x"
    );
    // The key is the tree's: another path, or a plain delete, is refused.
    let e = t.files.delete_tree(&key, &p("/gone")).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    let e = t.files.delete(&key, &p("/tree")).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(t.files.ls(&c, &p("/gone"), 10).await.is_ok());
    assert_consistent(&t.db_path());
}

#[tokio::test]
async fn make_dir_under_an_effect_key_is_done_once_and_replayed() {
    let t = TempStore::new();
    let c = ctx("t");
    let key = c.with_effect_key("mkdir-1");
    t.files.make_dir(&key, &p("/m"), false).await.unwrap();
    t.files.delete(&c, &p("/m")).await.unwrap();
    // The retry replays the success: it neither makes /m again nor says AlreadyExists.
    t.files.make_dir(&key, &p("/m"), false).await.unwrap();
    assert_eq!(
        t.files.ls(&c, &p("/m"), 10).await.unwrap_err().kind(),
        ErrorKind::NotFound
    );
    // A refusal replays too.
    let refused = c.with_effect_key("mkdir-2");
    let e = t
        .files
        .make_dir(&refused, &p("/p/q"), false)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    t.files.make_dir(&c, &p("/p"), false).await.unwrap();
    let e = t
        .files
        .make_dir(&refused, &p("/p/q"), false)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(
        t.files
            .ls(&c, &p("/p"), 10)
            .await
            .unwrap()
            .entries
            .is_empty()
    );
}

#[tokio::test]
async fn directories_of_an_older_schema_stay_implicit_and_can_be_made() {
    let dir = tempfile::TempDir::new().unwrap();
    let path = dir.path().join("v2.db");
    Connection::open(&path)
        .unwrap()
        .execute_batch(V2_SCRIPT)
        .unwrap();
    let store = SqliteStore::open(&path).unwrap();
    let files = store.files();
    let alice = ctx("alice");
    assert!(
        dir_rows(&path, "alice").iter().all(|(_, _, made)| !made),
        "migrated rows are implicit"
    );
    // An old directory still goes with its last file...
    files.delete(&alice, &p("/deep/x/y/z.txt")).await.unwrap();
    assert_eq!(
        files.ls(&alice, &p("/deep"), 10).await.unwrap_err().kind(),
        ErrorKind::NotFound
    );
    // ...unless it is made.
    files.make_dir(&alice, &p("/src/lib"), true).await.unwrap();
    files
        .delete_tree(&alice, &p("/src/lib/a.rs"))
        .await
        .unwrap();
    files.delete(&alice, &p("/src/lib/b.rs")).await.unwrap();
    assert!(
        files
            .ls(&alice, &p("/src/lib"), 10)
            .await
            .unwrap()
            .entries
            .is_empty()
    );
    assert_consistent(&path);
}
