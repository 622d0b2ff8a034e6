//! A cancelled edit keeps its path locked until its blocking write is done, so no update is lost.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, mpsc};

use burrow_backend::{Backend, FileContext, VPath};
use tokio::sync::mpsc::unbounded_channel;

use crate::FsBackend;
use crate::hook::lock_users;
use crate::hook::on_after_edit_read;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_edit_future_keeps_the_path_locked_until_its_write_ends() {
    let dir = tempfile::tempdir().unwrap();
    let backend = FsBackend::open(dir.path()).unwrap();
    let ctx = FileContext::default();
    let path = VPath::parse("/cancelled-edit.txt").unwrap();
    backend.write(&ctx, &path, "END").await.unwrap();

    // Each edit of the path, once it has read the file, tells the test what
    // the file held and waits (on its blocking thread) until the test lets it
    // write. Gates are released in the order the edits read.
    let (read_tx, mut read_rx) = unbounded_channel::<String>();
    let gates: Arc<Mutex<VecDeque<mpsc::Sender<()>>>> = Arc::default();
    {
        let (host, path, gates) = (
            dir.path().join("cancelled-edit.txt"),
            path.clone(),
            Arc::clone(&gates),
        );
        on_after_edit_read(move |p| {
            if *p != path {
                return;
            }
            let content = std::fs::read_to_string(&host).unwrap();
            let (tx, rx) = mpsc::channel();
            gates.lock().unwrap().push_back(tx);
            read_tx.send(content).unwrap();
            let _ = rx.recv();
        });
    }
    let release_next = || {
        let gate = gates.lock().unwrap().pop_front().unwrap();
        gate.send(()).unwrap();
    };

    // Edit A reads the file; its future is aborted while the blocking part waits.
    let a = {
        let (backend, ctx, path) = (backend.clone(), ctx.clone(), path.clone());
        tokio::spawn(async move { backend.edit(&ctx, &path, "END", "a\nEND", false).await })
    };
    assert_eq!(read_rx.recv().await.unwrap(), "END");
    a.abort();
    assert!(a.await.unwrap_err().is_cancelled());

    // Edit B starts. Either it gets in at once (the lock went with A's
    // future) and reads the file A has not written yet, or it waits for the
    // lock A's blocking work still holds (one holder, one waiter).
    let b = {
        let (backend, ctx, path) = (backend.clone(), ctx.clone(), path.clone());
        tokio::spawn(async move { backend.edit(&ctx, &path, "END", "b\nEND", false).await })
    };
    let root_id = backend.root_id().to_owned();
    let b_got_in = loop {
        if read_rx.try_recv().is_ok() {
            break true;
        }
        if lock_users(&root_id, &path) >= 2 {
            break false;
        }
        tokio::task::yield_now().await;
    };
    // A writes; then B (which reads now, if it has not already) writes.
    release_next();
    if !b_got_in {
        read_rx.recv().await.unwrap();
    }
    release_next();
    assert_eq!(b.await.unwrap().unwrap().occurrences, Some(1));
    let text = String::from_utf8(backend.read_bytes(&ctx, &path).await.unwrap()).unwrap();
    assert!(
        text.contains("a\n") && text.contains("b\n"),
        "an update was lost: the file holds {text:?}"
    );
}
