//! Streaming overhead of the OpenAI chat-completions adapter: a 2,000-delta answer served from 127.0.0.1, parsed and turned into events, per delta, side by side with the official `openai` Python SDK reading the same stream from the same server.
//!
//! First a side-by-side table (CPU time of the client thread per delta, and
//! wall time, over `ANSWERS` answers for burrow and for the SDK's two ways
//! of streaming), then divan's wall-time benchmark of one answer. The
//! Python peer is `benches/openai_sdk_stream.py`, run with `BURROW_PYTHON`
//! (else `python3`); without the `openai` package the table says so and
//! only burrow's rows are printed. Run:
//! `cargo bench -p burrow-models --bench openai_stream`.

#![allow(clippy::panic)] // a bench that cannot run its answer has nothing to measure

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use burrow_models::ClientConfig;
use burrow_models::openai::OpenAiChat;
use burrow_runtime::message::Message;
use burrow_runtime::model::{Model, ModelRequest, ModelSettings, StreamEvent};
use burrow_testkit::http::{ReplayServer, Reply};
use futures::StreamExt;

/// Text deltas in one answer.
const DELTAS: usize = 2000;
/// Answers per side in the side-by-side table.
const ANSWERS: usize = 50;

/// The answer: a role chunk, [`DELTAS`] content chunks (a few words each,
/// some non-ASCII), the finish chunk, the usage chunk and `[DONE]`.
fn answer_body() -> String {
    let head = "{\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":1741569952,\"model\":\"gpt-bench\",\"system_fingerprint\":\"fp_bench\",\"choices\":";
    let mut body = format!(
        "data: {head}[{{\"index\":0,\"delta\":{{\"role\":\"assistant\",\"content\":\"\",\"refusal\":null}},\"logprobs\":null,\"finish_reason\":null}}],\"usage\":null}}\n\n"
    );
    let words = [
        "the ",
        "file ",
        "reads ",
        "café ",
        "line ",
        "\\\"quoted\\\" ",
        "日本 ",
        "next\\n",
    ];
    for i in 0..DELTAS {
        let text: String = (0..3).map(|k| words[(i + k) % words.len()]).collect();
        body.push_str(&format!(
            "data: {head}[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}},\"logprobs\":null,\"finish_reason\":null}}],\"usage\":null}}\n\n"
        ));
    }
    body.push_str(&format!(
        "data: {head}[{{\"index\":0,\"delta\":{{}},\"logprobs\":null,\"finish_reason\":\"stop\"}}],\"usage\":null}}\n\n\
         data: {head}[],\"usage\":{{\"prompt_tokens\":25,\"completion_tokens\":6000,\"total_tokens\":6025}}}}\n\n\
         data: [DONE]\n\n"
    ));
    body
}

fn server() -> &'static ReplayServer {
    static SERVER: OnceLock<ReplayServer> = OnceLock::new();
    SERVER.get_or_init(|| ReplayServer::repeating(Reply::sse(answer_body())))
}

fn model() -> OpenAiChat {
    let mut config = ClientConfig::new(server().url(), "sk-bench");
    config.retry = burrow_models::RetryPolicy::none();
    match OpenAiChat::new("gpt-bench", config) {
        Ok(m) => m,
        Err(e) => panic!("the bench model: {e}"),
    }
}

fn runtime() -> tokio::runtime::Runtime {
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => panic!("a tokio runtime: {e}"),
    }
}

/// One answer, streamed and drained; its text-delta count.
async fn one_answer(model: &OpenAiChat) -> usize {
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

fn side_by_side() {
    let rt = runtime();
    let model = model();
    // Warm up: the connection pool, allocations.
    rt.block_on(one_answer(&model));
    let cpu0 = thread_cpu();
    let wall0 = Instant::now();
    let mut deltas = 0;
    for _ in 0..ANSWERS {
        deltas += rt.block_on(one_answer(&model));
    }
    let wall = wall0.elapsed();
    let cpu = match (cpu0, thread_cpu()) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    println!(
        "openai chat stream: {DELTAS} text deltas per answer, {ANSWERS} answers per row, server on 127.0.0.1"
    );
    println!(
        "{:<34} {:>14} {:>14}",
        "client", "CPU ns/delta", "wall ns/delta"
    );
    let rust_cpu = cpu.map(|c| per_delta(c, deltas));
    println!(
        "{:<34} {:>14} {:>14.0}",
        "burrow OpenAiChat (events)",
        rust_cpu.map_or("n/a".to_owned(), |c| format!("{c:.0}")),
        per_delta(wall, deltas)
    );
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/openai_sdk_stream.py");
    let python = std::env::var("BURROW_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let output = Command::new(&python)
        .arg(&script)
        .arg(server().url())
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
            format!("openai SDK {}", row["mode"].as_str().unwrap_or("?")),
            sdk_cpu,
            per_delta(wall, deltas)
        );
    }
}

fn main() {
    side_by_side();
    divan::main();
}

/// Wall time of one 2,000-delta answer: request, SSE parsing, decoding, events.
#[divan::bench(sample_count = 30)]
fn answer_2000_deltas(bencher: divan::Bencher) {
    let rt = runtime();
    let model = model();
    rt.block_on(one_answer(&model));
    bencher.bench_local(|| rt.block_on(one_answer(&model)));
}
