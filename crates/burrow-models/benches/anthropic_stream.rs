//! Streaming overhead of the Anthropic adapter: a 2,000-delta answer served from 127.0.0.1, parsed and turned into events, per delta, side by side with the official `anthropic` Python SDK reading the same stream from the same server.
//!
//! First a side-by-side table (CPU time of the client thread per delta, and
//! wall time, over `ANSWERS` answers for burrow and for the SDK's two ways
//! of streaming), then divan's wall-time benchmark of one answer. The
//! Python peer is `benches/anthropic_sdk_stream.py`, run with `BURROW_PYTHON`
//! (else `python3`); without the `anthropic` package the table says so and
//! only burrow's rows are printed. Run:
//! `cargo bench -p burrow-models --features anthropic --bench anthropic_stream`.

#![allow(clippy::panic)] // a bench that cannot run its answer has nothing to measure

use std::sync::OnceLock;

use burrow_models::ClientConfig;
use burrow_models::anthropic::AnthropicModel;
use burrow_testkit::http::{ReplayServer, Reply};

mod stream_harness;
use stream_harness::{DELTAS, Peer, one_answer, runtime, side_by_side};

/// The answer: `message_start`, one text block of [`DELTAS`] deltas (a few
/// words each, some non-ASCII), a `ping` every 100 deltas, the stop events.
fn answer_body() -> String {
    let mut body = String::from(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_bench\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-bench\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":25,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0,\"output_tokens\":1}}}\n\n\
         event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
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
        if i % 100 == 0 {
            body.push_str("event: ping\ndata: {\"type\": \"ping\"}\n\n");
        }
        let text: String = (0..3).map(|k| words[(i + k) % words.len()]).collect();
        body.push_str(&format!(
            "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"{text}\"}}}}\n\n"
        ));
    }
    body.push_str(
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
         event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":6000}}\n\n\
         event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    );
    body
}

fn server() -> &'static ReplayServer {
    static SERVER: OnceLock<ReplayServer> = OnceLock::new();
    SERVER.get_or_init(|| ReplayServer::repeating(Reply::sse(answer_body())))
}

fn model() -> AnthropicModel {
    let mut config = ClientConfig::new(server().url(), "sk-bench");
    config.retry = burrow_models::RetryPolicy::none();
    match AnthropicModel::new("claude-bench", config) {
        Ok(m) => m,
        Err(e) => panic!("the bench model: {e}"),
    }
}

fn main() {
    side_by_side(
        &model(),
        &server().url(),
        &Peer {
            stream: "anthropic stream",
            burrow_row: "burrow AnthropicModel (events)",
            script: "anthropic_sdk_stream.py",
            sdk: "anthropic SDK",
        },
    );
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
