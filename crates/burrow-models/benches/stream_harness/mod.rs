//! The part the streaming benches share: a runtime, one answer drained for its text-delta count, thread CPU time, and the side-by-side table beside a provider's official Python SDK.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use burrow_runtime::message::Message;
use burrow_runtime::model::{Model, ModelRequest, ModelSettings, StreamEvent};
use futures::StreamExt;

/// Text deltas in one answer.
pub const DELTAS: usize = 2000;
/// Answers per side in the side-by-side table.
pub const ANSWERS: usize = 50;

pub fn runtime() -> tokio::runtime::Runtime {
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => panic!("a tokio runtime: {e}"),
    }
}

/// One answer, streamed and drained; its text-delta count.
pub async fn one_answer(model: &dyn Model) -> usize {
    let messages = [Message::user("Hi")];
    let settings = ModelSettings::default();
    let request = ModelRequest {
        system: "",
        messages: &messages,
        tools: &[],
        settings: &settings,
    };
    let mut stream = match model.stream(request).await {
        Ok(s) => s,
        Err(e) => panic!("the bench answer: {e}"),
    };
    let mut deltas = 0;
    while let Some(event) = stream.next().await {
        match event {
            Ok(StreamEvent::TextDelta { .. }) => deltas += 1,
            Ok(_) => {}
            Err(e) => panic!("the bench answer: {e}"),
        }
    }
    deltas
}

/// CPU time this thread has run (Linux `schedstat`, nanoseconds), if readable.
fn thread_cpu() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = text.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

fn per_delta(total: Duration, deltas: usize) -> f64 {
    total.as_secs_f64() * 1e9 / deltas.max(1) as f64
}

/// What differs between the providers' side-by-side tables.
pub struct Peer<'a> {
    /// The stream's name in the table's heading (`anthropic stream`).
    pub stream: &'a str,
    /// burrow's row (`burrow AnthropicModel (events)`).
    pub burrow_row: &'a str,
    /// The Python script beside this bench (`anthropic_sdk_stream.py`).
    pub script: &'a str,
    /// The SDK rows' prefix (`anthropic SDK`).
    pub sdk: &'a str,
}

/// Prints the side-by-side table: burrow's `model` reading the stream
/// `url` serves, then the Python SDK's rows reading the same server.
pub fn side_by_side(model: &dyn Model, url: &str, peer: &Peer<'_>) {
    let rt = runtime();
    // Warm up: the connection pool, allocations.
    rt.block_on(one_answer(model));
    let cpu0 = thread_cpu();
    let wall0 = Instant::now();
    let mut deltas = 0;
    for _ in 0..ANSWERS {
        deltas += rt.block_on(one_answer(model));
    }
    let wall = wall0.elapsed();
    let cpu = match (cpu0, thread_cpu()) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    println!(
        "{}: {DELTAS} text deltas per answer, {ANSWERS} answers per row, server on 127.0.0.1",
        peer.stream
    );
    println!(
        "{:<34} {:>14} {:>14}",
        "client", "CPU ns/delta", "wall ns/delta"
    );
    let rust_cpu = cpu.map(|c| per_delta(c, deltas));
    println!(
        "{:<34} {:>14} {:>14.0}",
        peer.burrow_row,
        rust_cpu.map_or("n/a".to_owned(), |c| format!("{c:.0}")),
        per_delta(wall, deltas)
    );
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("benches")
        .join(peer.script);
    let python = std::env::var("BURROW_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let output = Command::new(&python)
        .arg(&script)
        .arg(url)
        .arg(ANSWERS.to_string())
        .output();
    let output = match output {
        Ok(o) if o.status.success() => o,
        Ok(o) => {
            let err = String::from_utf8_lossy(&o.stderr);
            println!(
                "python SDK rows: not measured ({python} failed: {})",
                err.lines().last().unwrap_or("no output")
            );
            return;
        }
        Err(e) => {
            println!("python SDK rows: not measured ({python} did not start: {e})");
            return;
        }
    };
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(row) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let deltas = row["deltas"].as_u64().unwrap_or(0) as usize;
        let cpu = Duration::from_secs_f64(row["cpu_s"].as_f64().unwrap_or(0.0));
        let wall = Duration::from_secs_f64(row["wall_s"].as_f64().unwrap_or(0.0));
        let sdk_cpu = per_delta(cpu, deltas);
        let ratio = rust_cpu.map_or("".to_owned(), |r| {
            format!("  ({:.1}x burrow's CPU)", sdk_cpu / r)
        });
        println!(
            "{:<34} {:>14.0} {:>14.0}{ratio}",
            format!("{} {}", peer.sdk, row["mode"].as_str().unwrap_or("?")),
            sdk_cpu,
            per_delta(wall, deltas)
        );
    }
}
