//! The output thread: `burrow run` writes stdout and stderr from a thread of its own, fed through a byte-bounded queue, so neither the run nor its claim renewal ever waits on a slow reader (docs/adr/0262).
//!
//! The run's events are formatted by the printer (a watcher of the run's
//! live frames, never the run itself) and queued here. While fewer than
//! [`OUTPUT_BUFFER`] bytes wait, queuing is immediate; past it the printer
//! waits for room (backpressure on the printer only). A reader that goes
//! away (EPIPE) closes the queue: what follows is dropped, [`closed`] says
//! so, and [`flush`] reports the broken pipe, which `main` turns into a
//! quiet end.

use std::io::{self, Write};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock, PoisonError};

use tokio::sync::{Semaphore, oneshot, watch};

/// Most bytes of output that wait for the reader before the printer waits too.
pub const OUTPUT_BUFFER: usize = 16 << 20;

enum Chunk {
    Out(Vec<u8>),
    Err(Vec<u8>),
    /// Answered once everything queued before it is written.
    Flush(oneshot::Sender<Option<io::ErrorKind>>),
}

struct Pipe {
    queue: Mutex<mpsc::Sender<(Chunk, u32)>>,
    room: Semaphore,
    closed: watch::Receiver<bool>,
}

fn pipe() -> &'static Pipe {
    static PIPE: OnceLock<Pipe> = OnceLock::new();
    PIPE.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<(Chunk, u32)>();
        let (closed_tx, closed) = watch::channel(false);
        let spawned = std::thread::Builder::new()
            .name("burrow-output".to_owned())
            .spawn(move || write_all(rx, closed_tx));
        if spawned.is_err() {
            // No thread: nothing will be written; say so once, plainly.
            let _ = writeln!(io::stderr(), "burrow: cannot start the output thread");
        }
        Pipe {
            queue: Mutex::new(tx),
            room: Semaphore::new(OUTPUT_BUFFER),
            closed,
        }
    })
}

/// The thread: writes each chunk whole and flushes it; after a write error
/// it drops the rest (still returning their room) and answers flushes with it.
fn write_all(rx: mpsc::Receiver<(Chunk, u32)>, closed: watch::Sender<bool>) {
    let mut failed: Option<io::ErrorKind> = None;
    for (chunk, permits) in rx {
        let written = match chunk {
            Chunk::Flush(done) => {
                let _ = done.send(failed);
                continue;
            }
            _ if failed.is_some() => Ok(()),
            Chunk::Out(bytes) => {
                let mut out = io::stdout().lock();
                out.write_all(&bytes).and_then(|()| out.flush())
            }
            Chunk::Err(bytes) => {
                let mut err = io::stderr().lock();
                err.write_all(&bytes).and_then(|()| err.flush())
            }
        };
        if let Err(e) = written {
            failed = Some(e.kind());
            let _ = closed.send(true);
        }
        if permits > 0 {
            pipe().room.add_permits(permits as usize);
        }
    }
}

fn enqueue(chunk: Chunk, permits: u32) {
    let queue = pipe().queue.lock().unwrap_or_else(PoisonError::into_inner);
    let _ = queue.send((chunk, permits));
}

async fn send(chunk: Chunk, len: usize) {
    if is_closed() {
        return;
    }
    let n = u32::try_from(len.clamp(1, OUTPUT_BUFFER)).unwrap_or(u32::MAX);
    match pipe().room.acquire_many(n).await {
        Ok(permit) => permit.forget(),
        Err(_) => return,
    }
    enqueue(chunk, n);
}

/// Queues `bytes` for stdout, waiting while the queue is full.
pub async fn out(bytes: Vec<u8>) {
    let len = bytes.len();
    send(Chunk::Out(bytes), len).await;
}

/// Queues `bytes` for stderr, waiting while the queue is full.
pub async fn err(bytes: Vec<u8>) {
    let len = bytes.len();
    send(Chunk::Err(bytes), len).await;
}

/// Queues a short line for stderr (or stdout) at once, without waiting for
/// room: for reports made where nothing may wait (a hook failure).
pub fn now(line: String, stdout: bool) {
    let bytes = line.into_bytes();
    enqueue(
        if stdout {
            Chunk::Out(bytes)
        } else {
            Chunk::Err(bytes)
        },
        0,
    );
}

/// True once the reader went away (or another write error ended the output).
pub fn is_closed() -> bool {
    *pipe().closed.borrow()
}

/// Resolves once the output is closed.
pub async fn closed() {
    let mut closed = pipe().closed.clone();
    let _ = closed.wait_for(|c| *c).await;
    // The sender lives in the thread for the process's life: a
    // dropped one means no thread, and then nothing is ever closed.
    if !is_closed() {
        std::future::pending::<()>().await;
    }
}

/// Waits until everything queued so far is written; the write error that
/// ended the output, if one did.
pub async fn flush() -> io::Result<()> {
    let (done, written) = oneshot::channel();
    enqueue(Chunk::Flush(done), 0);
    match written.await {
        Ok(None) => Ok(()),
        Ok(Some(kind)) => Err(io::Error::from(kind)),
        Err(_) => Err(io::Error::other("the output thread ended")),
    }
}
