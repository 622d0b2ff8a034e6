//! StoreBackend benchmarks: 10,000 writes of 2.4 KiB files (one transaction each, and batched) beside raw rusqlite inserts of the same rows, and grep over 10,000 files beside StateBackend.
//!
//! Each write sample is a fresh database receiving 10,000 files; divan
//! reports the time per sample and the throughput in files per second.
//!
//! - `write_each` / `raw_insert_each`: one transaction per file. burrow's
//!   `write_bytes` (spawn_blocking, BEGIN IMMEDIATE, the existence, directory
//!   and quota checks, the insert, the directory count and usage updates)
//!   against a bare `BEGIN IMMEDIATE; INSERT; COMMIT` of the same row into the
//!   same table with the same pragmas.
//! - `write_many` / `raw_insert_batched`: all 10,000 in one transaction.
//! - `grep_sqlite` / `grep_state`: a regex that matches one line of one file,
//!   so every one of the 10,000 files is searched.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use burrow_backend::{Backend, FileContext, GrepQuery, VPath};
use burrow_sqlite::{SqliteStore, StoreBackend};
use burrow_state::StateBackend;
use divan::Bencher;
use divan::counter::ItemsCount;
use rusqlite::{Connection, params};
use tempfile::TempDir;
use tokio::runtime::Runtime;

fn main() {
    divan::main();
}

const FILES: usize = 10_000;
const PER_DIR: usize = 100;

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a tokio runtime")
}

fn path(i: usize) -> VPath {
    VPath::parse(&format!("/bench/d{:03}/f{i:05}.txt", i / PER_DIR)).expect("a valid path")
}

/// 2.4 KiB of text: 40 lines of 61 bytes, the first naming the file.
fn content(i: usize) -> Vec<u8> {
    let mut text = format!("{:<60}\n", format!("needle_{i:05} header line"));
    for line in 1..40 {
        text.push_str(&format!(
            "{:<60}\n",
            format!("line {line} of file {i}: some ordinary text")
        ));
    }
    text.into_bytes()
}

fn rows() -> Vec<(VPath, Vec<u8>)> {
    (0..FILES).map(|i| (path(i), content(i))).collect()
}

/// A fresh, empty database (schema created by burrow) in a temporary folder.
fn fresh() -> (TempDir, StoreBackend) {
    let dir = TempDir::new().unwrap();
    let files = SqliteStore::open(dir.path().join("bench.db"))
        .unwrap()
        .files();
    (dir, files)
}

/// A raw connection to a fresh burrow database, with burrow's pragmas.
fn fresh_raw() -> (TempDir, StoreBackend, Connection) {
    let (dir, files) = fresh();
    let conn = Connection::open(dir.path().join("bench.db")).unwrap();
    conn.pragma_update(None, "synchronous", "NORMAL").unwrap();
    (dir, files, conn)
}

const RAW_INSERT: &str = "INSERT INTO files (tenant, path, parent, name, size, created_at, modified_at, content) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7)";

fn raw_insert(conn: &Connection, path: &VPath, bytes: &[u8]) {
    let parent = path.parent().unwrap();
    conn.prepare_cached(RAW_INSERT)
        .unwrap()
        .execute(params![
            "default",
            path.as_str(),
            parent.as_str(),
            path.name(),
            bytes.len() as i64,
            jiff::Timestamp::now().to_string(),
            bytes
        ])
        .unwrap();
}

#[divan::bench(sample_count = 5, sample_size = 1)]
fn write_each(bencher: Bencher) {
    let rt = runtime();
    let (rows, ctx) = (rows(), FileContext::default());
    bencher
        .counter(ItemsCount::new(FILES))
        .with_inputs(fresh)
        .bench_local_values(|(dir, files)| {
            rt.block_on(async {
                for (path, bytes) in &rows {
                    files.write_bytes(&ctx, path, bytes).await.unwrap();
                }
            });
            (dir, files)
        });
}

#[divan::bench(sample_count = 5, sample_size = 1)]
fn raw_insert_each(bencher: Bencher) {
    let rows = rows();
    bencher
        .counter(ItemsCount::new(FILES))
        .with_inputs(fresh_raw)
        .bench_local_values(|(dir, files, mut conn)| {
            for (path, bytes) in &rows {
                let tx = conn
                    .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                    .unwrap();
                raw_insert(&tx, path, bytes);
                tx.commit().unwrap();
            }
            (dir, files, conn)
        });
}

#[divan::bench(sample_count = 5, sample_size = 1)]
fn write_many(bencher: Bencher) {
    let rt = runtime();
    let (rows, ctx) = (rows(), FileContext::default());
    bencher
        .counter(ItemsCount::new(FILES))
        .with_inputs(|| (fresh(), rows.clone()))
        .bench_local_values(|((dir, files), rows)| {
            rt.block_on(files.write_many(&ctx, rows)).unwrap();
            (dir, files)
        });
}

#[divan::bench(sample_count = 5, sample_size = 1)]
fn raw_insert_batched(bencher: Bencher) {
    let rows = rows();
    bencher
        .counter(ItemsCount::new(FILES))
        .with_inputs(fresh_raw)
        .bench_local_values(|(dir, files, mut conn)| {
            let tx = conn
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                .unwrap();
            for (path, bytes) in &rows {
                raw_insert(&tx, path, bytes);
            }
            tx.commit().unwrap();
            (dir, files, conn)
        });
}

fn needle() -> GrepQuery {
    GrepQuery::regex(r"needle_0777\d header")
}

#[divan::bench(sample_count = 20)]
fn grep_sqlite(bencher: Bencher) {
    let rt = runtime();
    let (_dir, files) = fresh();
    let ctx = FileContext::default();
    rt.block_on(files.write_many(&ctx, rows())).unwrap();
    bencher.counter(ItemsCount::new(FILES)).bench_local(|| {
        let found = rt
            .block_on(files.grep(&ctx, &needle(), &VPath::root(), 100))
            .unwrap();
        assert_eq!(found.matches.len(), 10);
    });
}

#[divan::bench(sample_count = 20)]
fn grep_state(bencher: Bencher) {
    let rt = runtime();
    let state = StateBackend::new();
    let ctx = FileContext::default();
    rt.block_on(async {
        for (path, bytes) in rows() {
            state.write_bytes(&ctx, &path, &bytes).await.unwrap();
        }
    });
    bencher.counter(ItemsCount::new(FILES)).bench_local(|| {
        let found = rt
            .block_on(state.grep(&ctx, &needle(), &VPath::root(), 100))
            .unwrap();
        assert_eq!(found.matches.len(), 10);
    });
}
