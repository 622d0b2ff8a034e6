//! A tiny HTTP/1.1 server on 127.0.0.1 for model-adapter tests and benches: it answers scripted replies in order (any status, headers, chunking, a connection cut mid-body) and records every request it received.
//!
//! It runs on plain threads (std only), so the same server serves an async
//! test (also under tokio's paused clock: it sets no timers), a sync test
//! that drives the `burrow` binary, and a benchmark whose Python peer reads
//! from the same port. Every response closes its connection.

use std::collections::VecDeque;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;

/// One scripted response.
#[derive(Debug, Clone)]
pub struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    /// Chunked transfer encoding, with the body split at these offsets; `None` sends a Content-Length.
    chunks: Option<Vec<usize>>,
    /// Drop the connection after this many body bytes (no terminating chunk).
    cut: Option<usize>,
}

impl Reply {
    /// A `200 text/event-stream` answer of `body`, chunked, one chunk per
    /// SSE event (split after each blank line).
    pub fn sse(body: impl Into<Vec<u8>>) -> Self {
        let body = body.into();
        let mut cuts = Vec::new();
        let mut i = 0;
        while i + 1 < body.len() {
            if body[i] == b'\n' && body[i + 1] == b'\n' {
                cuts.push(i + 2);
                i += 2;
            } else {
                i += 1;
            }
        }
        Self {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body,
            chunks: Some(cuts),
            cut: None,
        }
    }

    /// [`Reply::sse`] of a fixture file (panics, failing the test, when it cannot be read).
    pub fn sse_file(path: impl AsRef<Path>) -> Self {
        let path = path.as_ref();
        match std::fs::read(path) {
            Ok(body) => Self::sse(body),
            Err(e) => panic!("the fixture {} cannot be read: {e}", path.display()),
        }
    }

    /// A JSON answer with `status` and a Content-Length.
    pub fn json(status: u16, body: impl Into<Vec<u8>>) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.into(),
            chunks: None,
            cut: None,
        }
    }

    /// The same reply with one more header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// The same reply with another status.
    pub fn status(mut self, status: u16) -> Self {
        self.status = status;
        self
    }

    /// The same reply chunked every `size` bytes (so chunks split events,
    /// lines and UTF-8 characters anywhere).
    pub fn chunks_of(mut self, size: usize) -> Self {
        let size = size.max(1);
        self.chunks = Some((1..=self.body.len() / size).map(|n| n * size).collect());
        self
    }

    /// The same reply with the connection dropped after `bytes` of the body.
    pub fn cut_after(mut self, bytes: usize) -> Self {
        self.cut = Some(bytes);
        self
    }

    /// The same reply with the connection dropped just before the first
    /// occurrence of `marker` in the body (panics when it is not there).
    pub fn cut_before(self, marker: &str) -> Self {
        let at = self
            .body
            .windows(marker.len().max(1))
            .position(|w| w == marker.as_bytes());
        match at {
            Some(at) => self.cut_after(at),
            None => panic!("the reply's body holds no {marker:?} to cut before"),
        }
    }
}

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// `POST`, `GET`, ...
    pub method: String,
    /// The request target (path and query).
    pub path: String,
    /// Header names (lower case) and values, in order.
    pub headers: Vec<(String, String)>,
    /// The body's bytes.
    pub body: Vec<u8>,
}

impl Recorded {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as text (lossy).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

#[derive(Debug, Default)]
struct State {
    replies: VecDeque<Reply>,
    repeat: Option<Reply>,
    requests: Vec<Recorded>,
}

/// The server; it stops accepting when dropped.
#[derive(Debug)]
pub struct ReplayServer {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
}

impl ReplayServer {
    /// Starts a server that answers `replies` in order, then `500` with a
    /// JSON error saying it has no reply left.
    pub fn start(replies: impl IntoIterator<Item = Reply>) -> Self {
        Self::with_state(State {
            replies: replies.into_iter().collect(),
            ..State::default()
        })
    }

    /// Starts a server that answers every request with `reply` (for benches).
    pub fn repeating(reply: Reply) -> Self {
        Self::with_state(State {
            repeat: Some(reply),
            ..State::default()
        })
    }

    fn with_state(state: State) -> Self {
        let listener = match TcpListener::bind("127.0.0.1:0") {
            Ok(l) => l,
            Err(e) => panic!("the test HTTP server cannot listen on 127.0.0.1: {e}"),
        };
        let addr = match listener.local_addr() {
            Ok(a) => a,
            Err(e) => panic!("the test HTTP server has no address: {e}"),
        };
        let state = Arc::new(Mutex::new(state));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, st) = (state.clone(), stop.clone());
        thread::spawn(move || {
            for conn in listener.incoming() {
                if st.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let s = s.clone();
                thread::spawn(move || {
                    // A client that went away is not the test's failure.
                    let _ = serve(conn, &s);
                });
            }
        });
        Self { addr, state, stop }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Queues one more reply.
    pub fn push(&self, reply: Reply) {
        lock(&self.state).replies.push_back(reply);
    }

    /// The requests received so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        lock(&self.state).requests.clone()
    }

    /// How many requests arrived so far.
    pub fn request_count(&self) -> usize {
        lock(&self.state).requests.len()
    }
}

impl Drop for ReplayServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

fn serve(conn: TcpStream, state: &Mutex<State>) -> io::Result<()> {
    conn.set_nodelay(true)?;
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(());
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_owned();
    let path = parts.next().unwrap_or("").to_owned();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 {
            break;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((name, value)) = h.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    let len = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    reader.read_exact(&mut body)?;
    let reply = {
        let mut st = lock(state);
        st.requests.push(Recorded {
            method,
            path,
            headers,
            body,
        });
        match st.replies.pop_front().or_else(|| st.repeat.clone()) {
            Some(r) => r,
            None => Reply::json(
                500,
                r#"{"error":{"message":"the test server has no reply left","type":"server_error"}}"#,
            ),
        }
    };
    write_reply(conn, &reply)
}

fn write_reply(mut conn: TcpStream, reply: &Reply) -> io::Result<()> {
    let mut head = format!("HTTP/1.1 {} {}\r\n", reply.status, reason(reply.status));
    for (n, v) in &reply.headers {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    head.push_str("connection: close\r\n");
    match &reply.chunks {
        Some(_) => head.push_str("transfer-encoding: chunked\r\n\r\n"),
        None => head.push_str(&format!("content-length: {}\r\n\r\n", reply.body.len())),
    }
    conn.write_all(head.as_bytes())?;
    let limit = reply.cut.unwrap_or(usize::MAX).min(reply.body.len());
    match &reply.chunks {
        None => conn.write_all(&reply.body[..limit])?,
        Some(cuts) => {
            let mut start = 0;
            let ends = cuts
                .iter()
                .copied()
                .filter(|&c| c > 0 && c < reply.body.len())
                .chain(std::iter::once(reply.body.len()));
            for end in ends {
                if start >= limit {
                    break;
                }
                let end = end.min(limit);
                if end > start {
                    let chunk = &reply.body[start..end];
                    conn.write_all(format!("{:x}\r\n", chunk.len()).as_bytes())?;
                    conn.write_all(chunk)?;
                    conn.write_all(b"\r\n")?;
                    conn.flush()?;
                }
                start = end;
            }
            if reply.cut.is_none() {
                conn.write_all(b"0\r\n\r\n")?;
            }
        }
    }
    conn.flush()?;
    // A cut body ends here too: the client sees the connection close
    // before the body's end (no terminating chunk, or short of its length).
    let _ = conn.shutdown(Shutdown::Both);
    Ok(())
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        409 => "Conflict",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Status",
    }
}
