//! Several processes on one database file: concurrent writers lose nothing, a writer killed with SIGKILL leaves a whole, prefix-consistent database, and a `delete_tree` killed mid-way leaves all of the tree or none.
//!
//! The children are this test binary re-executed on the `processes::worker`
//! test with `ROLE_ENV` set; run alone, that test exercises the same roles
//! in-process.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use burrow_backend::Backend;
use burrow_sqlite::StoreBackend;
use rusqlite::Connection;

use super::common::{TempStore, ctx, p};

/// Set when this binary is re-executed as a worker: "mixed", "editor", "stream" or "tree".
const ROLE_ENV: &str = "BURROW_SQLITE_ROLE";
/// The database file a worker opens.
const DB_ENV: &str = "BURROW_SQLITE_DB";
/// A mixed worker's id.
const ID_ENV: &str = "BURROW_SQLITE_WORKER_ID";
const WORKERS: usize = 4;
const ROUNDS_PER_WORKER: usize = 40;
/// An editor's edits of the one shared file.
const EDITS_PER_EDITOR: usize = 50;
const TENANT: &str = "procs";
/// The stream worker writes as a tenant of its own, so its usage counts only its files.
const STREAM_TENANT: &str = "stream";
/// How many files the tree a killed `delete_tree` removes holds.
const TREE_FILES: usize = 4000;

/// Writes its own files and appends to the shared ledger by editing its end marker.
async fn mixed_worker(files: &StoreBackend, id: usize, rounds: usize) {
    let c = ctx(TENANT);
    // Every worker seeds the ledger under one effect key: the first one to get
    // the write lock writes it, the others replay that outcome and change
    // nothing (so no worker can wipe another's appends).
    files
        .write(&c.with_effect_key("seed-ledger"), &p("/ledger.txt"), "END")
        .await
        .unwrap();
    for i in 0..rounds {
        files
            .write(&c, &p(&format!("/w{id}/{i}.txt")), &format!("{id}-{i}\n"))
            .await
            .unwrap();
        files
            .edit(
                &c,
                &p("/ledger.txt"),
                "END",
                &format!("{id}-{i}\nEND"),
                false,
            )
            .await
            .unwrap();
    }
}

/// Appends `edits` lines to /edits.txt, each by an edit of its end marker (the file exists).
async fn editor(files: &StoreBackend, id: usize, edits: usize) {
    let c = ctx(TENANT);
    for i in 0..edits {
        files
            .edit(
                &c,
                &p("/edits.txt"),
                "END",
                &format!("{id}-{i}\nEND"),
                false,
            )
            .await
            .unwrap();
    }
}

/// The content of the `i`th file of the stream: its size varies, its bytes say who it is.
fn stream_content(i: usize) -> Vec<u8> {
    let line = format!("write {i}\n");
    line.repeat(1 + (i * 37) % 400).into_bytes()
}

/// Writes /s/000000, /s/000001, ... and prints "ack N" once write N is acknowledged.
async fn stream_worker(files: &StoreBackend, count: Option<usize>) {
    let c = ctx(STREAM_TENANT);
    let mut stdout = std::io::stdout();
    for i in 0..count.unwrap_or(usize::MAX) {
        files
            .write_bytes(&c, &p(&format!("/s/{i:06}")), &stream_content(i))
            .await
            .unwrap();
        writeln!(stdout, "ack {i}").unwrap();
        stdout.flush().unwrap();
    }
}

/// Prints "start", deletes the tree /t whole, prints "done".
async fn tree_worker(files: &StoreBackend) {
    let mut stdout = std::io::stdout();
    writeln!(stdout, "start").unwrap();
    stdout.flush().unwrap();
    files.delete_tree(&ctx(TENANT), &p("/t")).await.unwrap();
    writeln!(stdout, "done").unwrap();
    stdout.flush().unwrap();
}

/// Run alone: both roles in-process, checked. As a child: the role `ROLE_ENV` names, unchecked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker() {
    if let Some(role) = std::env::var_os(ROLE_ENV) {
        let db = PathBuf::from(std::env::var_os(DB_ENV).unwrap());
        let files = StoreBackend::open(&db).unwrap();
        match role.to_str() {
            Some("mixed") => {
                let id: usize = std::env::var(ID_ENV).unwrap().parse().unwrap();
                mixed_worker(&files, id, ROUNDS_PER_WORKER).await;
            }
            Some("editor") => {
                let id: usize = std::env::var(ID_ENV).unwrap().parse().unwrap();
                editor(&files, id, EDITS_PER_EDITOR).await;
            }
            Some("stream") => stream_worker(&files, None).await,
            Some("tree") => tree_worker(&files).await,
            other => panic!("unknown worker role {other:?}"),
        }
        return;
    }
    let t = TempStore::new();
    let (a, b) = (t.files.clone(), t.files.clone());
    tokio::join!(
        mixed_worker(&a, 0, 5),
        mixed_worker(&b, 1, 5),
        stream_worker(&t.files, Some(5))
    );
    check_mixed(&t.db_path(), 2, 5).await;
    check_stream(&t.db_path(), 4).await;
}

fn spawn(role: &str, db: &Path, id: usize) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "all::processes::worker",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(ROLE_ENV, role)
        .env(DB_ENV, db)
        .env(ID_ENV, id.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

fn integrity(db: &Path) -> String {
    Connection::open(db)
        .unwrap()
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap()
}

/// Every worker's files are there, and the ledger holds every append exactly once.
async fn check_mixed(db: &Path, workers: usize, rounds: usize) {
    assert_eq!(integrity(db), "ok");
    let files = StoreBackend::open(db).unwrap();
    let c = ctx(TENANT);
    for id in 0..workers {
        let dir = files.ls(&c, &p(&format!("/w{id}")), 10_000).await.unwrap();
        assert_eq!(dir.entries.len(), rounds, "worker {id}");
        for i in 0..rounds {
            let got = files
                .read_bytes(&c, &p(&format!("/w{id}/{i}.txt")))
                .await
                .unwrap();
            assert_eq!(got, format!("{id}-{i}\n").into_bytes());
        }
    }
    let ledger = String::from_utf8(files.read_bytes(&c, &p("/ledger.txt")).await.unwrap()).unwrap();
    let mut lines: Vec<&str> = ledger.lines().collect();
    assert_eq!(lines.pop(), Some("END"));
    assert_eq!(
        lines.len(),
        workers * rounds,
        "lost or doubled ledger appends"
    );
    for id in 0..workers {
        let mine: Vec<&str> = lines
            .iter()
            .copied()
            .filter(|l| l.starts_with(&format!("{id}-")))
            .collect();
        let want: Vec<String> = (0..rounds).map(|i| format!("{id}-{i}")).collect();
        assert_eq!(
            mine, want,
            "worker {id}'s appends are out of order or missing"
        );
    }
}

/// The stream's files are exactly /s/0 .. /s/(n-1) for some n >= `at_least`, each whole.
async fn check_stream(db: &Path, at_least: usize) -> usize {
    assert_eq!(integrity(db), "ok");
    let files = StoreBackend::open(db).unwrap();
    let c = ctx(STREAM_TENANT);
    let listing = files.ls(&c, &p("/s"), 1_000_000).await.unwrap();
    let n = listing.entries.len();
    assert!(
        n >= at_least,
        "only {n} writes survived, but {at_least} were acknowledged"
    );
    for (i, entry) in listing.entries.iter().enumerate() {
        assert_eq!(
            entry.name,
            format!("{i:06}"),
            "the surviving writes are not a prefix"
        );
        let want = stream_content(i);
        assert_eq!(entry.size, Some(want.len() as u64));
        assert_eq!(files.read_bytes(&c, &p(&entry.path)).await.unwrap(), want);
    }
    let (_, count) = files.usage(STREAM_TENANT).await.unwrap();
    assert_eq!(count, n as u64);
    n
}

#[tokio::test]
async fn four_processes_writing_and_editing_lose_nothing() {
    // The database file does not exist yet: the workers race to create and
    // migrate it, and to seed the ledger.
    let dir = tempfile::TempDir::new().unwrap();
    let db = dir.path().join("shared.db");
    let children: Vec<Child> = (0..WORKERS).map(|id| spawn("mixed", &db, id)).collect();
    for mut child in children {
        let status = child.wait().unwrap();
        assert!(status.success(), "a worker failed: {status}");
    }
    check_mixed(&db, WORKERS, ROUNDS_PER_WORKER).await;
}

#[tokio::test]
async fn four_processes_of_fifty_edits_on_one_file_lose_none() {
    let t = TempStore::new();
    t.files
        .write(&ctx(TENANT), &p("/edits.txt"), "END")
        .await
        .unwrap();
    let children: Vec<Child> = (0..WORKERS)
        .map(|id| spawn("editor", &t.db_path(), id))
        .collect();
    for mut child in children {
        let status = child.wait().unwrap();
        assert!(status.success(), "an editor failed: {status}");
    }
    let text = t
        .files
        .read_bytes(&ctx(TENANT), &p("/edits.txt"))
        .await
        .unwrap();
    let text = String::from_utf8(text).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.pop(), Some("END"));
    let expected = WORKERS * EDITS_PER_EDITOR;
    assert_eq!(
        lines.len(),
        expected,
        "{} of {expected} edits were lost",
        expected.saturating_sub(lines.len())
    );
    for id in 0..WORKERS {
        let mine: Vec<&str> = lines
            .iter()
            .copied()
            .filter(|l| l.starts_with(&format!("{id}-")))
            .collect();
        let want: Vec<String> = (0..EDITS_PER_EDITOR).map(|i| format!("{id}-{i}")).collect();
        assert_eq!(
            mine, want,
            "editor {id}'s edits are missing or out of order"
        );
    }
}

fn random_below(n: u64) -> u64 {
    let mut h = RandomState::new().build_hasher();
    h.write_u64(n);
    h.finish() % n
}

/// N of a line holding "ack N".
fn ack_index(line: &str) -> Option<usize> {
    line.rsplit_once("ack ")?.1.trim().parse().ok()
}

#[tokio::test]
async fn a_writer_killed_mid_stream_leaves_a_whole_prefix() {
    for _ in 0..3 {
        let t = TempStore::new();
        let mut child = spawn("stream", &t.db_path(), 0);
        let kill_after = 10 + random_below(200) as usize;
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        // How many writes were acknowledged: one more than the highest "ack N"
        // seen (libtest may print its "test ... " banner on the first ack's line).
        let mut acked = 0;
        for line in lines.by_ref() {
            if let Some(n) = ack_index(&line.unwrap()) {
                acked = acked.max(n + 1);
                if acked >= kill_after {
                    break;
                }
            }
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        // Acknowledgements printed before the kill are still in the pipe.
        for line in lines.map_while(Result::ok) {
            if let Some(n) = ack_index(&line) {
                acked = acked.max(n + 1);
            }
        }
        assert!(acked >= kill_after);
        let survived = check_stream(&t.db_path(), acked).await;
        // At most the one write in flight at the kill may have landed unacknowledged.
        assert!(
            survived <= acked + 1,
            "{survived} writes survived but only {acked} were acknowledged"
        );
    }
}

/// The tree /t: `TREE_FILES` files in 40 directories two levels deep, and a made, empty directory.
async fn plant_tree(files: &StoreBackend) {
    let batch = (0..TREE_FILES)
        .map(|i| {
            let path = p(&format!("/t/{}/{}/{i}.txt", i % 8, i % 5));
            (path, format!("file {i}\n").into_bytes())
        })
        .collect();
    let c = ctx(TENANT);
    files.write_many(&c, batch).await.unwrap();
    files.make_dir(&c, &p("/t/made/empty"), true).await.unwrap();
    files
        .write(&c, &p("/t.txt"), "beside the tree")
        .await
        .unwrap();
}

/// How many files of `TENANT` lie beneath /t.
fn files_in_tree(db: &Path) -> i64 {
    Connection::open(db)
        .unwrap()
        .query_row(
            "SELECT COUNT(*) FROM files WHERE tenant = ?1 AND path > '/t/' AND path < '/t0'",
            [TENANT],
            |r| r.get(0),
        )
        .unwrap()
}

#[tokio::test]
async fn a_delete_tree_killed_mid_way_leaves_all_of_the_tree_or_none() {
    let mut outcomes = Vec::new();
    for round in 0..4u64 {
        let t = TempStore::new();
        plant_tree(&t.files).await;
        let mut child = spawn("tree", &t.db_path(), 0);
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        for line in lines.by_ref() {
            if line.unwrap().ends_with("start") {
                break;
            }
        }
        // Kill at a different moment each round, from at once to (likely) after the commit.
        let after = [0, 40, 200, 1500][round as usize] + random_below(20);
        std::thread::sleep(std::time::Duration::from_millis(after));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let said_done = lines.map_while(Result::ok).any(|l| l.ends_with("done"));
        assert_eq!(integrity(&t.db_path()), "ok");
        super::dirs::assert_consistent(&t.db_path());
        let left = files_in_tree(&t.db_path());
        let c = ctx(TENANT);
        let tree = t.files.ls(&c, &p("/t"), 100).await;
        if left == 0 {
            assert_eq!(
                tree.unwrap_err().kind(),
                burrow_backend::ErrorKind::NotFound
            );
        } else {
            assert_eq!(left, TREE_FILES as i64, "part of the tree was deleted");
            assert!(
                !said_done,
                "the child said done, but the tree is still there"
            );
            let made = t.files.ls(&c, &p("/t/made/empty"), 10).await.unwrap();
            assert!(made.entries.is_empty());
        }
        assert_eq!(
            t.files.read_bytes(&c, &p("/t.txt")).await.unwrap(),
            b"beside the tree"
        );
        outcomes.push(left == 0);
    }
    eprintln!("tree deleted in rounds: {outcomes:?}");
}
