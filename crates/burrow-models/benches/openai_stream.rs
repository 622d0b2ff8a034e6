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

use std::sync::OnceLock;

use burrow_models::ClientConfig;
use burrow_models::openai::OpenAiChat;
use burrow_testkit::http::{ReplayServer, Reply};

mod stream_harness;
use stream_harness::{DELTAS, Peer, one_answer, runtime, side_by_side};

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

fn main() {
    side_by_side(
        &model(),
        &server().url(),
        &Peer {
            stream: "openai chat stream",
            burrow_row: "burrow OpenAiChat (events)",
            script: "openai_sdk_stream.py",
            sdk: "openai SDK",
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
