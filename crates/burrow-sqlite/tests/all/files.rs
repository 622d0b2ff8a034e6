//! StoreBackend's own behaviours beyond the shared suite: implicit directories, batches, lock waits, corrupt files.

use std::time::Duration;

use burrow_backend::{Backend, ErrorKind, GrepQuery};
use burrow_sqlite::{SqliteStore, Synchronous};
use rusqlite::Connection;

use super::common::{TempStore, ctx, p};

fn names(listing: &burrow_backend::Listing) -> Vec<(String, bool)> {
    listing
        .entries
        .iter()
        .map(|e| (e.path.clone(), e.is_dir))
        .collect()
}

#[tokio::test]
async fn implicit_directories_come_and_go_with_their_files() {
    let t = TempStore::new();
    let c = ctx("t");
    t.files.write(&c, &p("/a/b/c.txt"), "c").await.unwrap();
    t.files.write(&c, &p("/a/d.txt"), "dd").await.unwrap();
    let root = t.files.ls(&c, &p("/"), 100).await.unwrap();
    assert_eq!(names(&root), [("/a".to_owned(), true)]);
    let a = t.files.ls(&c, &p("/a"), 100).await.unwrap();
    assert_eq!(
        names(&a),
        [("/a/b".to_owned(), true), ("/a/d.txt".to_owned(), false)]
    );
    assert_eq!(a.entries[1].size, Some(2));
    assert!(a.entries[1].modified_at.is_some());
    assert_eq!(a.entries[0].size, None);

    let err = t.files.delete(&c, &p("/a")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DirectoryNotEmpty);
    t.files.delete(&c, &p("/a/b/c.txt")).await.unwrap();
    assert_eq!(
        t.files.ls(&c, &p("/a/b"), 10).await.unwrap_err().kind(),
        ErrorKind::NotFound
    );
    assert_eq!(
        names(&t.files.ls(&c, &p("/a"), 10).await.unwrap()),
        [("/a/d.txt".to_owned(), false)]
    );
    t.files.delete(&c, &p("/a/d.txt")).await.unwrap();
    assert!(
        t.files
            .ls(&c, &p("/"), 10)
            .await
            .unwrap()
            .entries
            .is_empty()
    );

    // No directory row is left behind once the last file is gone.
    let conn = Connection::open(t.db_path()).unwrap();
    let dirs: i64 = conn
        .query_row("SELECT COUNT(*) FROM dirs", [], |r| r.get(0))
        .unwrap();
    assert_eq!(dirs, 0);
}

#[tokio::test]
async fn files_and_directories_never_share_a_path() {
    let t = TempStore::new();
    let c = ctx("t");
    t.files.write(&c, &p("/f.txt"), "x").await.unwrap();
    t.files.write(&c, &p("/d/g.txt"), "y").await.unwrap();
    let cases = [
        (
            t.files.write(&c, &p("/f.txt/x"), "z").await.unwrap_err(),
            ErrorKind::NotADirectory,
        ),
        (
            t.files
                .write(&c, &p("/f.txt/x/y/z"), "z")
                .await
                .unwrap_err(),
            ErrorKind::NotADirectory,
        ),
        (
            t.files.write(&c, &p("/d"), "z").await.unwrap_err(),
            ErrorKind::IsADirectory,
        ),
        (
            t.files.write(&c, &p("/"), "z").await.unwrap_err(),
            ErrorKind::IsADirectory,
        ),
        (
            t.files.read(&c, &p("/d"), 0, 10).await.unwrap_err(),
            ErrorKind::IsADirectory,
        ),
        (
            t.files.read_bytes(&c, &p("/")).await.unwrap_err(),
            ErrorKind::IsADirectory,
        ),
        (
            t.files
                .edit(&c, &p("/d"), "a", "b", false)
                .await
                .unwrap_err(),
            ErrorKind::IsADirectory,
        ),
        (
            t.files.ls(&c, &p("/f.txt"), 10).await.unwrap_err(),
            ErrorKind::NotADirectory,
        ),
        (
            t.files.glob(&c, "*", &p("/f.txt"), 10).await.unwrap_err(),
            ErrorKind::NotADirectory,
        ),
        (
            t.files.delete(&c, &p("/")).await.unwrap_err(),
            ErrorKind::InvalidPath,
        ),
    ];
    for (err, kind) in cases {
        assert_eq!(err.kind(), kind, "{err}");
    }
    assert_eq!(t.files.read_bytes(&c, &p("/f.txt")).await.unwrap(), b"x");
}

#[tokio::test]
async fn replacing_keeps_created_at_and_moves_modified_at() {
    let t = TempStore::new();
    let c = ctx("t");
    t.files.write(&c, &p("/a.txt"), "one").await.unwrap();
    let conn = Connection::open(t.db_path()).unwrap();
    let stamps = || -> (String, String) {
        conn.query_row(
            "SELECT created_at, modified_at FROM files WHERE path = '/a.txt'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap()
    };
    let (created, modified) = stamps();
    assert_eq!(created, modified);
    t.files.write(&c, &p("/a.txt"), "two").await.unwrap();
    let (created2, modified2) = stamps();
    assert_eq!(created2, created);
    assert!(modified2 >= modified);
    assert_eq!(
        t.files.read(&c, &p("/a.txt"), 0, 10).await.unwrap().lines,
        ["two"]
    );
}

#[tokio::test]
async fn listings_merge_directories_and_files_in_byte_order() {
    let t = TempStore::new();
    let c = ctx("t");
    for path in [
        "/d/b.txt", "/d/B/x", "/d/a/x", "/d/c", "/d/é", "/d/a.txt", "/d/z/x",
    ] {
        t.files.write(&c, &p(path), "x").await.unwrap();
    }
    let all = t.files.ls(&c, &p("/d"), 100).await.unwrap();
    let got: Vec<&str> = all.entries.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(got, ["B", "a", "a.txt", "b.txt", "c", "z", "é"]);
    assert!(!all.truncated);
    let some = t.files.ls(&c, &p("/d"), 3).await.unwrap();
    assert_eq!(some.entries.len(), 3);
    assert!(some.truncated);
    let exact = t.files.ls(&c, &p("/d"), 7).await.unwrap();
    assert!(!exact.truncated);
}

#[tokio::test]
async fn glob_and_grep_scan_only_beneath_their_directory() {
    let t = TempStore::new();
    let c = ctx("t");
    for (path, text) in [
        ("/src/a.rs", "fn a() {}\n"),
        ("/src/x/b.rs", "fn b() {}\nlet a = 1;\n"),
        ("/src0.rs", "fn zero() {}\n"),
        ("/srcx/c.rs", "fn c() {}\n"),
        ("/docs/a.md", "fn in docs\n"),
    ] {
        t.files.write(&c, &p(path), text).await.unwrap();
    }
    t.files
        .write_bytes(&c, &p("/src/bin.rs"), b"fn\0binary")
        .await
        .unwrap();
    let glob = |pattern: &'static str, under: &'static str| {
        let files = t.files.clone();
        let c = c.clone();
        async move {
            let r = files.glob(&c, pattern, &p(under), 100).await.unwrap();
            r.files.into_iter().map(|f| f.path).collect::<Vec<_>>()
        }
    };
    assert_eq!(
        glob("*.rs", "/src").await,
        ["/src/a.rs", "/src/bin.rs", "/src/x/b.rs"]
    );
    assert_eq!(
        glob("src/**/*.rs", "/").await,
        ["/src/a.rs", "/src/bin.rs", "/src/x/b.rs"]
    );
    assert_eq!(glob("/*.rs", "/").await, ["/src0.rs"]);
    assert_eq!(glob("x/*.rs", "/src").await, ["/src/x/b.rs"]);
    assert!(glob("*.rs", "/missing").await.is_empty());

    let grep = t
        .files
        .grep(&c, &GrepQuery::regex("^fn"), &p("/src"), 100)
        .await
        .unwrap();
    let hits: Vec<(&str, u64)> = grep
        .matches
        .iter()
        .map(|m| (m.path.as_str(), m.line_number))
        .collect();
    assert_eq!(hits, [("/src/a.rs", 1), ("/src/x/b.rs", 1)]);
    let grep = t
        .files
        .grep(
            &c,
            &GrepQuery::fixed("a").with_include("src/x/*.rs"),
            &p("/"),
            100,
        )
        .await
        .unwrap();
    let hits: Vec<(&str, u64)> = grep
        .matches
        .iter()
        .map(|m| (m.path.as_str(), m.line_number))
        .collect();
    assert_eq!(hits, [("/src/x/b.rs", 2)]);
    let one = t
        .files
        .grep(&c, &GrepQuery::regex("fn"), &p("/src/a.rs"), 100)
        .await
        .unwrap();
    assert_eq!(one.matches.len(), 1);
    let limited = t
        .files
        .grep(&c, &GrepQuery::regex("fn"), &p("/"), 2)
        .await
        .unwrap();
    assert_eq!(limited.matches.len(), 2);
    assert!(limited.truncated);
}

#[tokio::test]
async fn write_many_is_all_or_nothing() {
    let t = TempStore::new();
    let c = ctx("t");
    t.files.write(&c, &p("/f"), "file").await.unwrap();
    let err = t
        .files
        .write_many(
            &c,
            vec![
                (p("/ok/1.txt"), b"1".to_vec()),
                (p("/f/2.txt"), b"2".to_vec()),
            ],
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotADirectory);
    assert_eq!(
        t.files.ls(&c, &p("/ok"), 10).await.unwrap_err().kind(),
        ErrorKind::NotFound
    );
    let done = t
        .files
        .write_many(
            &c,
            vec![
                (p("/ok/1.txt"), b"1".to_vec()),
                (p("/ok/2.txt"), b"2".to_vec()),
            ],
        )
        .await
        .unwrap();
    assert_eq!(done.len(), 2);
    assert_eq!(
        t.files.ls(&c, &p("/ok"), 10).await.unwrap().entries.len(),
        2
    );
    assert_eq!(t.files.usage("t").await.unwrap(), (6, 3));
}

#[tokio::test]
async fn a_corrupt_database_is_a_clear_failure_without_host_paths() {
    let dir = tempfile::TempDir::new().unwrap();
    let path = dir.path().join("garbage.db");
    std::fs::write(&path, vec![0x5a; 8192]).unwrap();
    let err = SqliteStore::open(&path).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Failure);
    assert!(err.message().contains("corrupt"), "{err}");
    assert!(
        !err.message().contains(dir.path().to_str().unwrap()),
        "{err}"
    );

    let missing = dir.path().join("no/such/folder/x.db");
    let err = SqliteStore::open(&missing).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Failure);
    assert!(!err.message().contains("no/such"), "{err}");
}

#[tokio::test]
async fn a_writer_past_the_busy_timeout_fails_clearly() {
    let t = TempStore::new();
    let store = SqliteStore::builder(t.db_path())
        .busy_timeout(Duration::from_millis(100))
        .open()
        .unwrap();
    let files = store.files();
    let holder = Connection::open(t.db_path()).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let err = files.write(&ctx("t"), &p("/a"), "x").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Failure);
    assert!(err.message().contains("busy timeout"), "{err}");
    // Reads are not blocked by a writer (WAL).
    assert!(
        files
            .ls(&ctx("t"), &p("/"), 10)
            .await
            .unwrap()
            .entries
            .is_empty()
    );
    holder.execute_batch("COMMIT").unwrap();
    files.write(&ctx("t"), &p("/a"), "x").await.unwrap();
}

#[tokio::test]
async fn a_writer_waits_for_another_to_finish() {
    let t = TempStore::new();
    let holder = Connection::open(t.db_path()).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    holder
        .execute(
            "INSERT INTO usage (tenant, bytes, files) VALUES ('other', 0, 0)",
            [],
        )
        .unwrap();
    let release = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        holder.execute_batch("COMMIT").unwrap();
    });
    // The default busy timeout (5 s) outlasts the holder: the write just waits.
    t.files.write(&ctx("t"), &p("/a"), "x").await.unwrap();
    release.join().unwrap();
    assert_eq!(t.files.read_bytes(&ctx("t"), &p("/a")).await.unwrap(), b"x");
}

#[tokio::test]
async fn options_are_applied_and_a_file_named_like_a_uri_is_a_file() {
    let dir = tempfile::TempDir::new().unwrap();
    // Not a URI: the database is this file, not an in-memory one.
    let path = dir.path().join("file:x.db?mode=memory");
    let store = SqliteStore::builder(&path)
        .synchronous(Synchronous::Full)
        .busy_timeout(Duration::from_millis(250))
        .read_connections(0)
        .mmap_size(0)
        .open()
        .unwrap();
    let options = store.options();
    assert_eq!(options.synchronous, Synchronous::Full);
    assert_eq!(options.busy_timeout, Duration::from_millis(250));
    assert_eq!((options.read_connections, options.mmap_size), (0, 0));
    let files = store.files();
    files.write(&ctx("t"), &p("/a.txt"), "kept").await.unwrap();
    // With no pooled readers every read opens (and drops) a connection of its own.
    for _ in 0..3 {
        assert_eq!(
            files.read_bytes(&ctx("t"), &p("/a.txt")).await.unwrap(),
            b"kept"
        );
    }
    drop((files, store));
    assert!(path.exists());
    let reopened = SqliteStore::open(&path).unwrap().files();
    assert_eq!(
        reopened.read_bytes(&ctx("t"), &p("/a.txt")).await.unwrap(),
        b"kept"
    );
}

#[tokio::test]
async fn a_path_that_cannot_be_a_database_is_refused_at_once() {
    let dir = tempfile::TempDir::new().unwrap();
    let link = dir.path().join("null.db");
    std::os::unix::fs::symlink("/dev/null", &link).unwrap();
    for path in [
        std::path::PathBuf::from("/dev/null"),
        link,
        dir.path().to_owned(),
    ] {
        let err = SqliteStore::builder(&path)
            .busy_timeout(Duration::from_millis(100))
            .open()
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
        assert!(err.message().contains("not a regular file"), "{err}");
        assert!(!err.message().contains("another writer"), "{err}");
        assert!(!err.message().contains("/dev"), "{err}");
    }
    assert!(std::fs::read_link(dir.path().join("null.db")).is_ok());
}

#[tokio::test]
async fn busy_timeouts_from_zero_to_u64_max_seconds_open_and_work() {
    for timeout in [Duration::ZERO, Duration::from_secs(u64::MAX)] {
        let t = TempStore::new();
        let store = SqliteStore::builder(t.db_path())
            .busy_timeout(timeout)
            .open()
            .unwrap();
        assert_eq!(
            store.options().busy_timeout,
            timeout.min(burrow_sqlite::MAX_BUSY_TIMEOUT)
        );
        let files = store.files();
        files.write(&ctx("t"), &p("/a"), "x").await.unwrap();
        assert_eq!(files.read_bytes(&ctx("t"), &p("/a")).await.unwrap(), b"x");
    }
}

#[tokio::test]
async fn over_size_files_are_never_loaded_refused_by_reads_and_skipped_by_grep() {
    let t = TempStore::new();
    let c = ctx("t");
    // Stored while the limit was larger.
    t.files
        .write(&c, &p("/big.txt"), &"needle\n".repeat(100))
        .await
        .unwrap();
    t.files
        .write(&c, &p("/small.txt"), "needle\n")
        .await
        .unwrap();
    let strict = burrow_sqlite::StoreBackend::builder(&t.store)
        .max_file_size(64)
        .build();
    for err in [
        strict.read_bytes(&c, &p("/big.txt")).await.unwrap_err(),
        strict.read(&c, &p("/big.txt"), 0, 10).await.unwrap_err(),
        strict
            .edit(&c, &p("/big.txt"), "needle", "pin", true)
            .await
            .unwrap_err(),
    ] {
        assert_eq!(err.kind(), ErrorKind::TooLarge, "{err}");
    }
    let q = GrepQuery::fixed("needle");
    let found = strict.grep(&c, &q, &p("/"), 1000).await.unwrap();
    let paths: Vec<&str> = found.matches.iter().map(|m| m.path.as_str()).collect();
    assert_eq!(paths, ["/small.txt"]);
    assert!(
        strict
            .grep(&c, &q, &p("/big.txt"), 10)
            .await
            .unwrap()
            .matches
            .is_empty()
    );
    // The queries themselves never hand over an over-size blob.
    let conn = Connection::open(t.db_path()).unwrap();
    let content: Option<Vec<u8>> = conn
        .query_row(
            burrow_sqlite::queries::FILE_CONTENT,
            rusqlite::params!["t", "/big.txt", 64],
            |r| r.get(2),
        )
        .unwrap();
    assert_eq!(content, None);
    let listed: Vec<String> = conn
        .prepare(burrow_sqlite::queries::RANGE_CONTENT)
        .unwrap()
        .query_map(rusqlite::params!["t", "/", "0", 64], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(listed, ["/small.txt"]);
}

#[tokio::test]
async fn path_refusals_keep_the_path_as_a_field() {
    let t = TempStore::new();
    let files = burrow_sqlite::StoreBackend::builder(&t.store)
        .max_files(1)
        .build();
    let c = ctx("t");
    files.write(&c, &p("/dir/a.txt"), "a\n").await.unwrap();
    let not_empty = files.delete(&c, &p("/dir")).await.unwrap_err();
    assert_eq!(not_empty.kind(), ErrorKind::DirectoryNotEmpty);
    assert_eq!(not_empty.path(), Some(&p("/dir")));
    let quota = files.write(&c, &p("/b.txt"), "b").await.unwrap_err();
    assert_eq!(quota.kind(), ErrorKind::QuotaExceeded);
    assert_eq!(quota.path(), Some(&p("/b.txt")));
    // A composite mounting the store at /m re-prefixes the field in the message.
    let moved = quota.map_path(|inner| inner.under_prefix(&p("/m")));
    assert!(
        moved.message().starts_with("writing /m/b.txt would make"),
        "{}",
        moved.message()
    );
    let root = files.delete(&c, &p("/")).await.unwrap_err();
    assert_eq!(
        root.message(),
        burrow_backend::Error::root_cannot_be_deleted().message()
    );
    assert_eq!(
        files.read_bytes(&c, &p("/dir/a.txt")).await.unwrap(),
        b"a\n"
    );
}
