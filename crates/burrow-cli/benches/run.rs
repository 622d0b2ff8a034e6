//! Benchmark: `burrow run --model scripted:` end to end, 1,000 tool turns (one write_file, then one read_file per turn) over `memory:`.
//!
//! Writes a script of `TURNS` answers, each one tool call (the first writes
//! a 50-line /a.txt, the others read it), plus a closing text answer, then
//! times whole runs of the real binary with `--json` (stdout and stderr to
//! /dev/null): process start, the loop, the tools, the event printing.
//! Prints the median, fastest and slowest run of `SAMPLES` and the median
//! per turn. Run with `cargo bench -p burrow-agent-cli --bench run`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fmt::Write as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

const TURNS: usize = 1_000;
const SAMPLES: usize = 10;

fn script() -> String {
    let content: String = (1..=50)
        .map(|i| format!("line {i} of the file\n"))
        .collect();
    let mut text = String::new();
    for turn in 0..TURNS {
        let call = if turn == 0 {
            json!({"id": "c0", "name": "write_file", "arguments": {"file_path": "/a.txt", "content": content}})
        } else {
            json!({"id": format!("c{turn}"), "name": "read_file", "arguments": {"file_path": "/a.txt"}})
        };
        writeln!(text, "{}", json!({"tool_calls": [call]})).unwrap();
    }
    writeln!(text, "{}", json!({"text": "done"})).unwrap();
    text
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("script.jsonl");
    std::fs::write(&path, script()).unwrap();
    let model = format!("scripted:{}", path.display());
    let max_turns = (TURNS + 1).to_string();
    let mut times: Vec<Duration> = (0..SAMPLES)
        .map(|_| {
            let started = Instant::now();
            let status = Command::new(env!("CARGO_BIN_EXE_burrow"))
                .args([
                    "--json",
                    "run",
                    "go",
                    "--model",
                    &model,
                    "--max-turns",
                    &max_turns,
                ])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .unwrap();
            let took = started.elapsed();
            assert!(status.success(), "burrow run failed: {status}");
            took
        })
        .collect();
    times.sort();
    let median = times[SAMPLES / 2];
    println!(
        "burrow run --json, {TURNS} tool turns + 1 answer over memory: median {:.1} ms (fastest {:.1} ms, slowest {:.1} ms), {:.1} µs per turn",
        median.as_secs_f64() * 1e3,
        times[0].as_secs_f64() * 1e3,
        times[SAMPLES - 1].as_secs_f64() * 1e3,
        median.as_secs_f64() * 1e6 / (TURNS + 1) as f64
    );
}
