//! Crash safety: a child process writing a large file is killed (SIGKILL) at random moments; the file is always whole.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use burrow_backend::Backend;
use burrow_fs::FsBackend;

use super::support::{ctx, p};

/// Set (to a folder) when this test binary is re-executed as the writer child.
const CHILD_ENV: &str = "BURROW_FS_CRASH_CHILD";
const ROUNDS: usize = 20;

/// The three contents the target may hold: the original and the two the child alternates.
fn versions() -> [Vec<u8>; 3] {
    let fill = |line: &str, bytes: usize| line.repeat(bytes / line.len()).into_bytes();
    [
        fill("the original content\n", 3 << 20),
        fill("version a\n", 4 << 20),
        fill("version b, a little longer\n", 5 << 20),
    ]
}

async fn write_versions(dir: &Path, forever: bool) {
    let backend = FsBackend::open(dir).unwrap();
    let [_, a, b] = versions();
    let target = p("/target.bin");
    let mut stdout = std::io::stdout();
    loop {
        for version in [&a, &b] {
            backend.write_bytes(&ctx(), &target, version).await.unwrap();
            if !forever {
                assert_eq!(&backend.read_bytes(&ctx(), &target).await.unwrap(), version);
            }
            writeln!(stdout, "wrote").unwrap();
            stdout.flush().unwrap();
        }
        if !forever {
            return;
        }
    }
}

/// Run alone, writes each version once and reads it back. Re-executed by
/// `a_killed_writer_leaves_old_or_new_content` with `CHILD_ENV` set, it
/// writes the versions in turn until it is killed.
#[tokio::test]
async fn writer_child() {
    match std::env::var_os(CHILD_ENV) {
        Some(dir) => write_versions(Path::new(&dir), true).await,
        None => {
            let dir = tempfile::tempdir().unwrap();
            write_versions(dir.path(), false).await;
        }
    }
}

fn random_below(n: u64) -> u64 {
    let mut h = RandomState::new().build_hasher();
    h.write_u64(n);
    h.finish() % n
}

#[tokio::test]
async fn a_killed_writer_leaves_old_or_new_content() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target.bin");
    let all = versions();
    std::fs::write(&target, &all[0]).unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut seen = [0usize; 3];
    for round in 0..ROUNDS {
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "all::crash::writer_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Let the child finish 0..3 writes first, so kills land before the
        // first write, between writes and in the middle of one.
        let writes_first = random_below(4);
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut wrote = 0;
        while wrote < writes_first {
            match lines.next() {
                Some(Ok(line)) if line == "wrote" => wrote += 1,
                Some(Ok(_)) => {}
                _ => panic!("round {round}: the writer child stopped before writing"),
            }
        }
        std::thread::sleep(Duration::from_micros(random_below(8000)));
        child.kill().unwrap();
        child.wait().unwrap();
        drop(lines);
        let content = std::fs::read(&target).unwrap();
        let which = all.iter().position(|v| *v == content);
        assert!(
            which.is_some(),
            "round {round}: the target holds {} bytes that are none of the versions",
            content.len()
        );
        if let Some(i) = which {
            seen[i] += 1;
        }
    }
    // No name is reserved (ADR 0061): temporary files a kill left behind are
    // ordinary files, and nothing else is there.
    let backend = FsBackend::open(dir.path()).unwrap();
    let listing = backend.ls(&ctx(), &p("/"), 100).await.unwrap();
    let names: Vec<&str> = listing.entries.iter().map(|e| e.name.as_str()).collect();
    assert!(names.contains(&"target.bin"), "{names:?}");
    for name in names.iter().filter(|n| **n != "target.bin") {
        assert!(name.starts_with(burrow_fs::TEMP_PREFIX), "{names:?}");
        backend
            .delete(&ctx(), &p(&format!("/{name}")))
            .await
            .unwrap();
    }
    assert!(
        seen[1] + seen[2] > 0,
        "no kill ever landed after a write: {seen:?}"
    );
    let leftovers = std::fs::read_dir(dir.path()).unwrap().count() - 1;
    eprintln!(
        "contents seen after kills (original, a, b): {seen:?}; temporary files left by kills mid-write: {leftovers}"
    );
}
