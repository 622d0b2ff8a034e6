//! Query plans: ls, glob, grep and delete_tree use indexes (range scans), never a scan of the whole files table.

use burrow_backend::{Backend, VPath};
use burrow_sqlite::queries;
use rusqlite::Connection;

use super::common::{TempStore, ctx, p};

/// The `detail` lines of `EXPLAIN QUERY PLAN sql`.
fn plan(conn: &Connection, sql: &str, params: impl rusqlite::Params) -> Vec<String> {
    let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
    stmt.query_map(params, |r| r.get::<_, String>(3))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

fn assert_indexed(lines: &[String], index: &str) {
    assert!(
        lines.iter().any(|l| l.contains(index)),
        "{lines:?} should use {index}"
    );
    for line in lines {
        assert!(
            !line.starts_with("SCAN") && !line.contains("TEMP B-TREE"),
            "{lines:?} scans or sorts"
        );
    }
}

#[tokio::test]
async fn listings_and_range_scans_use_indexes() {
    let t = TempStore::new();
    let c = ctx("t");
    // A large store around a small directory, so the planner has real statistics to weigh.
    let batch: Vec<(VPath, Vec<u8>)> = (0..2000)
        .map(|i| (p(&format!("/big/d{}/f{i}.txt", i % 50)), b"x".to_vec()))
        .chain([
            (p("/small/a.txt"), b"a".to_vec()),
            (p("/small/sub/b.txt"), b"b".to_vec()),
        ])
        .collect();
    t.files.write_many(&c, batch).await.unwrap();
    let conn = Connection::open(t.db_path()).unwrap();
    conn.execute_batch("ANALYZE").unwrap();

    assert_indexed(
        &plan(&conn, queries::LS_FILES, ("t", "/small", 101)),
        "INDEX files_by_parent",
    );
    assert_indexed(
        &plan(&conn, queries::LS_DIRS, ("t", "/small", 101)),
        "INDEX dirs_by_parent",
    );
    assert_indexed(
        &plan(&conn, queries::RANGE_META, ("t", "/small/", "/small0")),
        "INDEX sqlite_autoindex_files",
    );
    assert_indexed(
        &plan(
            &conn,
            queries::RANGE_CONTENT,
            ("t", "/small/", "/small0", 1000),
        ),
        "INDEX sqlite_autoindex_files",
    );
    // delete_tree's statements: one index range each.
    for (sql, index) in [
        (queries::RANGE_USAGE, "INDEX sqlite_autoindex_files"),
        (queries::RANGE_DELETE_FILES, "INDEX sqlite_autoindex_files"),
        (queries::RANGE_DELETE_DIRS, "PRIMARY KEY"),
    ] {
        assert_indexed(&plan(&conn, sql, ("t", "/small/", "/small0")), index);
    }
    for (sql, index) in [
        (queries::FILE_META, "sqlite_autoindex_files"),
        (queries::DIR_EXISTS, "PRIMARY KEY"),
        (queries::DIR_STATE, "PRIMARY KEY"),
    ] {
        assert_indexed(&plan(&conn, sql, ("t", "/small/a.txt")), index);
    }
    assert_indexed(
        &plan(&conn, queries::FILE_CONTENT, ("t", "/small/a.txt", 1000)),
        "sqlite_autoindex_files",
    );
    let range = plan(&conn, queries::RANGE_META, ("t", "/small/", "/small0"));
    assert!(
        range.iter().any(|l| l.contains("path>? AND path<?")),
        "{range:?}"
    );

    // And the answers over that store are the small directory's.
    let listing = t.files.ls(&c, &p("/small"), 100).await.unwrap();
    assert_eq!(listing.entries.len(), 2);
}
