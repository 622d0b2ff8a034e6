//! Benchmark: tool-call round trips through `burrow mcp` over stdio (100 read_file calls), speaking MCP JSON-RPC directly.
//!
//! Spawns the real binary on `memory:`, initializes a session, writes one
//! 100-line file, then times batches of 100 sequential `tools/call
//! read_file` requests (each waits for its response before the next is
//! sent). Prints the median, fastest and slowest batch of `SAMPLES`.
//! Run with `cargo bench -p burrow-agent-cli --bench mcp`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Write};
use std::process::{ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const CALLS: usize = 100;
const SAMPLES: usize = 20;

struct Session {
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
    line: String,
}

impl Session {
    fn send(&mut self, message: &Value) {
        let mut text = message.to_string();
        text.push('\n');
        self.stdin.write_all(text.as_bytes()).unwrap();
        self.stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            self.line.clear();
            assert!(
                self.stdout.read_line(&mut self.line).unwrap() > 0,
                "burrow mcp hung up"
            );
            let message: Value = serde_json::from_str(&self.line).unwrap();
            if message["id"] == id {
                assert!(message.get("error").is_none(), "{message}");
                return message;
            }
        }
    }
}

fn main() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_burrow"))
        .args(["--backend", "memory:", "mcp"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut session = Session {
        stdin: child.stdin.take().unwrap(),
        stdout: BufReader::new(child.stdout.take().unwrap()),
        next_id: 0,
        line: String::new(),
    };
    session.request(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "bench", "version": "0"}}),
    );
    session.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let content: String = (0..100)
        .map(|i| format!("line {i} of the benchmark file\n"))
        .collect();
    session.request(
        "tools/call",
        json!({"name": "write_file", "arguments": {"file_path": "/bench.txt", "content": content}}),
    );
    let read = json!({"name": "read_file", "arguments": {"file_path": "/bench.txt"}});

    // One warm-up batch, then the samples.
    let mut batches: Vec<Duration> = Vec::with_capacity(SAMPLES);
    for sample in 0..=SAMPLES {
        let start = Instant::now();
        for _ in 0..CALLS {
            let response = session.request("tools/call", read.clone());
            assert_eq!(response["result"]["isError"], false, "{response}");
        }
        if sample > 0 {
            batches.push(start.elapsed());
        }
    }
    drop(session);
    child.wait().unwrap();

    batches.sort();
    let median = batches[batches.len() / 2];
    let per_call = median / CALLS as u32;
    println!("mcp round trip: {CALLS} read_file calls over stdio (100-line file, memory: backend)");
    println!(
        "  median {median:?} per batch ({per_call:?} per call); fastest {:?}, slowest {:?}; {SAMPLES} batches",
        batches[0],
        batches[batches.len() - 1]
    );
}
