//! Model adapters for the burrow runtime over reqwest (rustls): OpenAI chat completions, OpenAI Responses and Anthropic messages, sharing one SSE parser, one HTTP layer and one retry policy.
//!
//! # Key design decision: one driver, one decoder per wire
//!
//! Every provider streams Server-Sent Events, fails with an HTTP status or
//! with an error inside a 200 stream, and asks for waits in the same
//! headers. So the parts that decide *when* a request is sent again live
//! once, in [`http::HttpClient::stream`]: it sends, reads, parses SSE
//! ([`sse`]), and retries as the [`RetryPolicy`] says **only while no part
//! of the answer has reached the caller**. What differs per provider is a
//! [`http::Decoder`]: a small state machine from that wire's events to the
//! runtime's [`StreamEvent`](burrow_runtime::model::StreamEvent)s, with
//! the part indices it assigns. Tool-call fragments are routed to their
//! part there (by id, then by index, for OpenAI-compatible servers that
//! get the index wrong), and arguments are only parsed when a part ends
//! (by the runtime), so a call whose JSON is broken reaches the model as
//! an error result, never as a call with `{}`.
//!
//! Keys and endpoints come from the conventional variables
//! ([`http::config_from_env`]); an [`ApiKey`]'s `Debug` shows nothing,
//! and no error message holds a key, a header or the request body.
//!
//! # Features
//!
//! - `openai` (default): [`openai::OpenAiChat`] (`openai:NAME`, chat
//!   completions, any OpenAI-compatible server through `OPENAI_BASE_URL`)
//!   and [`openai::OpenAiResponses`] (`openai-responses:NAME`).
//! - `anthropic`: the Anthropic messages adapter (`anthropic:NAME`).
//!
//! Without either feature the crate still offers the shared layer
//! (`http`, `retry`, `sse`) for an adapter of one's own.

pub mod http;
pub mod ids;
pub mod retry;
pub mod sse;

#[cfg(feature = "openai")]
pub mod openai;

#[cfg(feature = "anthropic")]
pub mod anthropic;

pub use http::{ApiKey, ClientConfig, HttpClient};
pub use retry::RetryPolicy;
