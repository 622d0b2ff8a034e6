//! Benchmark: `state:DOC` through one `burrow --json batch` process beside pydantic-ai-backend's StateBackend in one Python process (issue 24).
//!
//! The workload at N files: N writes of 50-line files, N reads, N edits, a
//! glob and a grep, every answer compared with the peer's
//! (`benches/state_peer.py`, run with `BURROW_PYTHON` or `python3`, which
//! must import `pydantic_ai_backends` 0.2.37: `cargo xtask setup` installs
//! it). Both sides are whole processes timed from spawn to exit (wall
//! clock, and CPU from the kernel's child accounting), so both pay one start;
//! burrow's run includes its journal appends (one fsync per group) and the
//! compaction when it ends, the peer's a `json.dump` of its document.
//!
//! Prints one row per size and the ratios the issue targets: the peer's time
//! over burrow's (>= 25x at 1,000, >= 100x at 10,000) and burrow's cost per
//! change at 10,000 over that at 1,000 (within 1.5x).
//! Run with `cargo xtask bench burrow-agent-cli -- state_peer` or
//! `cargo bench -p burrow-agent-cli --bench state_peer [-- N...]`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Runs of each side per size; the median is reported.
const RUNS: usize = 3;

fn path_of(i: usize) -> String {
    format!("/src/d{:02}/f{i:05}.txt", i % 100)
}

fn content_of(i: usize) -> String {
    (0..50)
        .map(|j| format!("line {j} of file {i}: some text to make it a line\n"))
        .collect()
}

/// The batch input at `n` files, one JSON line per operation.
fn workload(n: usize) -> String {
    let mut lines = Vec::with_capacity(3 * n + 2);
    for i in 0..n {
        lines.push(json!({"op": "write", "path": path_of(i), "content": content_of(i)}));
    }
    for i in 0..n {
        lines.push(json!({"op": "read", "path": path_of(i), "limit": 2000}));
    }
    for i in 0..n {
        lines.push(json!({"op": "edit", "path": path_of(i),
            "old": format!("line 7 of file {i}:"), "new": format!("LINE 7 of file {i}:")}));
    }
    lines.push(json!({"op": "glob", "pattern": "**/*.txt", "under": "/src", "limit": n}));
    lines.push(json!({"op": "grep", "pattern": "LINE 7 of", "limit": n}));
    lines.iter().map(|l| l.to_string() + "\n").collect()
}

/// burrow's answers in the peer's shape (see `state_peer.py`).
fn normalise(n: usize, burrow: &str) -> Vec<Value> {
    let lines: Vec<Value> = burrow
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3 * n + 2, "burrow answered every line");
    lines
        .iter()
        .enumerate()
        .map(|(k, v)| {
            assert!(v["error"].is_null(), "line {k}: {v}");
            match k {
                k if k < n => v["path"].clone(),
                k if k < 2 * n => v["lines"].clone(),
                k if k < 3 * n => v["occurrences"].clone(),
                k if k == 3 * n => v["paths"].clone(),
                _ => Value::Array(
                    v["matches"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|m| json!([m["path"], m["line_number"]]))
                        .collect(),
                ),
            }
        })
        .collect()
}

/// The CPU time (user + system) of this process's waited-for children so
/// far, from /proc/self/stat; zero where there is none.
fn children_cpu() -> Duration {
    let Ok(stat) = fs::read_to_string("/proc/self/stat") else {
        return Duration::ZERO;
    };
    // Fields after the command name (which ends with the last ')').
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    // cutime and cstime are fields 16 and 17 (1-based), 14 and 15 here.
    let ticks: u64 = fields[13].parse::<u64>().unwrap() + fields[14].parse::<u64>().unwrap();
    // The kernel reports USER_HZ ticks, 100 a second on Linux.
    Duration::from_millis(ticks * 10)
}

/// Runs `command` to its end, stdout into `out`; returns (wall, cpu).
fn timed(command: &mut Command, out: &Path) -> (Duration, Duration) {
    let cpu = children_cpu();
    let start = Instant::now();
    let status = command
        .stdout(fs::File::create(out).unwrap())
        .stderr(Stdio::inherit())
        .status()
        .unwrap();
    let wall = start.elapsed();
    assert!(status.success(), "{command:?} failed");
    (wall, children_cpu().saturating_sub(cpu))
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

struct Row {
    n: usize,
    burrow: (Duration, Duration),
    peer: (Duration, Duration),
}

fn measure(n: usize, python: &str) -> Row {
    let input = workload(n);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/state_peer.py");
    let (mut bw, mut bc, mut pw, mut pc) = (vec![], vec![], vec![], vec![]);
    for _ in 0..RUNS {
        let dir = tempfile::tempdir().unwrap();
        let input_path = dir.path().join("input.jsonl");
        fs::write(&input_path, &input).unwrap();
        let spec = format!("state:{}", dir.path().join("doc.json").display());
        let burrow_out = dir.path().join("burrow.out");
        let (wall, cpu) = timed(
            Command::new(env!("CARGO_BIN_EXE_burrow"))
                .args(["--backend", &spec, "--json", "batch"])
                .stdin(fs::File::open(&input_path).unwrap()),
            &burrow_out,
        );
        bw.push(wall);
        bc.push(cpu);
        let peer_out = dir.path().join("peer.out");
        let (wall, cpu) = timed(
            Command::new(python)
                .arg(&script)
                .arg(n.to_string())
                .arg(dir.path().join("peer.json"))
                .stdin(Stdio::null()),
            &peer_out,
        );
        pw.push(wall);
        pc.push(cpu);
        let ours = normalise(n, &fs::read_to_string(&burrow_out).unwrap());
        let theirs: Vec<Value> = fs::read_to_string(&peer_out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert!(
            ours == theirs,
            "burrow and the peer answered differently at {n} files"
        );
        // The document burrow left (compacted at its end) holds what the peer's does.
        let doc: Value =
            serde_json::from_slice(&fs::read(dir.path().join("doc.json")).unwrap()).unwrap();
        let peer: Value =
            serde_json::from_slice(&fs::read(dir.path().join("peer.json")).unwrap()).unwrap();
        let contents = |v: &Value| -> Vec<(String, Value)> {
            v.as_object()
                .unwrap()
                .iter()
                .map(|(k, f)| (k.clone(), f["content"].clone()))
                .collect()
        };
        let (mut a, mut b) = (contents(&doc), contents(&peer));
        a.sort_by(|x, y| x.0.cmp(&y.0));
        b.sort_by(|x, y| x.0.cmp(&y.0));
        assert!(a == b, "the documents differ at {n} files");
    }
    Row {
        n,
        burrow: (median(bw), median(bc)),
        peer: (median(pw), median(pc)),
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![1_000, 10_000]
    } else {
        sizes
    };
    let python = std::env::var("BURROW_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    println!(
        "state_peer: burrow batch on state:DOC beside pydantic-ai-backend's StateBackend ({python}); medians of {RUNS} runs, answers compared"
    );
    println!(
        "| files | burrow wall (CPU) | peer wall (CPU) | peer / burrow wall (CPU) | burrow per change, wall |"
    );
    println!("|---|---|---|---|---|");
    let mut rows = Vec::new();
    for n in sizes {
        let row = measure(n, &python);
        let changes = (2 * row.n) as f64;
        println!(
            "| {} | {:.1} ms ({:.0} ms) | {:.1} ms ({:.0} ms) | {:.1}x ({:.1}x) | {:.2} µs |",
            row.n,
            ms(row.burrow.0),
            ms(row.burrow.1),
            ms(row.peer.0),
            ms(row.peer.1),
            row.peer.0.as_secs_f64() / row.burrow.0.as_secs_f64(),
            row.peer.1.as_secs_f64() / row.burrow.1.as_secs_f64().max(0.01),
            ms(row.burrow.0) * 1e3 / changes,
        );
        rows.push(row);
    }
    if let [first, .., last] = rows.as_slice() {
        let per = |r: &Row| r.burrow.0.as_secs_f64() / r.n as f64;
        println!(
            "burrow per change at {} over at {}: {:.2}x (wall)",
            last.n,
            first.n,
            per(last) / per(first)
        );
    }
}
