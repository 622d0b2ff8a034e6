//! A swapper thread replaces files and directories with escaping links while readers read: no outside byte ever comes back.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use burrow_backend::{Backend, ErrorKind, GrepQuery};

use super::support::{SECRET, World, ctx, p};

/// How many reads each reader makes while the swapper runs.
const READS_PER_READER: usize = 1500;
const READERS: usize = 4;
/// The writer stops once this many of its writes have landed inside...
const MIN_LANDED_WRITES: usize = 20;
/// ...or after this many attempts.
const MAX_WRITES: usize = 200_000;

/// Swaps `victim` between a regular file and links (absolute and climbing)
/// to the secret, `sub` between a real directory and a link to an outside
/// directory holding a file of the same name, and the link `lsub` between
/// `real-lsub` and the outside directory (atomically, so writers always find
/// it), until told to stop.
fn swap(w_root: std::path::PathBuf, outside: std::path::PathBuf, stop: Arc<AtomicBool>) -> usize {
    let at = |name: &str| w_root.join(name);
    let mut rounds = 0;
    // Bounded even if the readers never finish.
    while !stop.load(Ordering::Relaxed) && rounds < 5_000_000 {
        match rounds % 3 {
            0 => std::fs::write(at("victim.next"), "inside\n").unwrap(),
            1 => std::os::unix::fs::symlink(outside.join("secret.txt"), at("victim.next")).unwrap(),
            _ => std::os::unix::fs::symlink("../outside/secret.txt", at("victim.next")).unwrap(),
        }
        std::fs::rename(at("victim.next"), at("victim")).unwrap();
        if rounds % 2 == 0 {
            std::os::unix::fs::symlink(&outside, at("lsub.next")).unwrap();
        } else {
            std::os::unix::fs::symlink("real-lsub", at("lsub.next")).unwrap();
        }
        std::fs::rename(at("lsub.next"), at("lsub")).unwrap();
        if rounds % 2 == 0 {
            std::fs::rename(at("sub"), at("sub.parked")).unwrap();
            std::os::unix::fs::symlink(&outside, at("sub")).unwrap();
        } else {
            std::fs::remove_file(at("sub")).unwrap();
            std::fs::rename(at("sub.parked"), at("sub")).unwrap();
        }
        rounds += 1;
    }
    rounds
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn swapped_links_never_leak_outside_content() {
    let w = World::new();
    w.put("victim", "inside\n");
    w.put("sub/secret.txt", "inside sub\n");
    w.put("real-lsub/secret.txt", "inside lsub\n");
    w.symlink("real-lsub", "lsub");
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (root, outside, stop) = (w.root(), w.outside(), Arc::clone(&stop));
        std::thread::spawn(move || swap(root, outside, stop))
    };
    let backend = Arc::new(w.backend.clone());
    let mut readers = Vec::new();
    for reader in 0..READERS {
        let b = Arc::clone(&backend);
        readers.push(tokio::spawn(async move {
            let mut seen_inside = 0;
            for i in 0..READS_PER_READER {
                let (path, want) = match (i + reader) % 3 {
                    0 => ("/victim", "inside\n"),
                    1 => ("/sub/secret.txt", "inside sub\n"),
                    _ => ("/lsub/secret.txt", "inside lsub\n"),
                };
                match b.read_bytes(&ctx(), &p(path)).await {
                    Ok(bytes) => {
                        let text = String::from_utf8(bytes).unwrap();
                        assert!(
                            !text.contains(SECRET),
                            "read {path} returned outside content"
                        );
                        assert_eq!(text, want);
                        seen_inside += 1;
                    }
                    Err(e) => assert!(
                        matches!(e.kind(), ErrorKind::PermissionDenied | ErrorKind::NotFound),
                        "unexpected error for {path}: {:?} {}",
                        e.kind(),
                        e.message()
                    ),
                }
                if i % 50 == 0 {
                    let found = b
                        .grep(&ctx(), &GrepQuery::fixed(SECRET), &p("/"), 10)
                        .await
                        .unwrap();
                    assert!(
                        found.matches.is_empty(),
                        "grep returned outside content: {:?}",
                        found.matches
                    );
                    let globbed = b.glob(&ctx(), "**/secret.txt", &p("/"), 10).await.unwrap();
                    for f in &globbed.files {
                        let allowed = [
                            "/sub/secret.txt",
                            "/sub.parked/secret.txt",
                            "/real-lsub/secret.txt",
                        ];
                        assert!(allowed.contains(&f.path.as_str()), "{}", f.path);
                    }
                    if let Ok(window) = b.read(&ctx(), &p("/sub/secret.txt"), 0, 10).await {
                        assert_eq!(window.lines, ["inside sub"]);
                    }
                }
            }
            seen_inside
        }));
    }
    // A writer races the swapper too: through the swapped file and the
    // swapped parent link, never creating or changing anything outside.
    // It goes on until some of its writes have landed (the swapper keeps
    // running until it is done), so the test always proves something.
    let writer = {
        let b = Arc::clone(&backend);
        tokio::spawn(async move {
            let mut written = 0;
            for i in 0..MAX_WRITES {
                if i >= READS_PER_READER && written >= MIN_LANDED_WRITES {
                    break;
                }
                let (path, content) = match i % 3 {
                    0 => ("/victim", "inside\n"),
                    1 => ("/lsub/secret.txt", "inside lsub\n"),
                    _ => ("/lsub/new.txt", "new\n"),
                };
                match b.write(&ctx(), &p(path), content).await {
                    Ok(_) => written += 1,
                    Err(e) => assert!(
                        matches!(e.kind(), ErrorKind::PermissionDenied | ErrorKind::Conflict),
                        "write {path}: {e:?}"
                    ),
                }
            }
            written
        })
    };
    let mut inside_reads = 0;
    for reader in readers {
        inside_reads += reader.await.unwrap();
    }
    let written = writer.await.unwrap();
    stop.store(true, Ordering::Relaxed);
    let rounds = swapper.join().unwrap();
    assert!(rounds > 0, "the swapper never ran");
    let reads = READERS * READS_PER_READER;
    eprintln!(
        "swapper rounds: {rounds}; reads: {reads}, of which returned inside content: {inside_reads}; writes that landed inside: {written}"
    );
    assert!(
        inside_reads > 0,
        "no read ever succeeded, so the test proved nothing"
    );
    assert!(
        written > 0,
        "no write ever succeeded, so the test proved nothing"
    );
    w.assert_outside_intact();
}
