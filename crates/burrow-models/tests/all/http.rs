//! The shared HTTP layer over a toy wire: status mapping, the three retry-after forms, backoff on tokio's paused clock, and the rule that nothing is retried once a part reached the caller.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use burrow_models::HttpClient;
use burrow_models::http::{self as mh, Decoder, Failure, Flow, JsonRequest, Wire};
use burrow_models::sse::SseEvent;
use burrow_runtime::message::Usage;
use burrow_runtime::model::{
    EventStream, FinishReason, ModelError, ModelErrorKind, PartKind, StreamEvent,
};
use tokio::time::Instant;

use super::support::*;

/// A toy wire: `text:T` is text, `usage:N` input usage, `error:KIND` an
/// in-stream error, `end` the end marker.
struct ToyWire;

#[derive(Default)]
struct ToyDecoder {
    open: bool,
}

impl Decoder for ToyDecoder {
    fn event(&mut self, event: SseEvent, out: &mut VecDeque<StreamEvent>) -> Result<Flow, Failure> {
        let (tag, value) = event.data.split_once(':').unwrap_or((&event.data, ""));
        match tag {
            "text" => {
                if !self.open {
                    self.open = true;
                    out.push_back(StreamEvent::PartStart {
                        index: 0,
                        part: PartKind::Text,
                    });
                }
                out.push_back(StreamEvent::TextDelta {
                    index: 0,
                    text: value.to_owned(),
                });
            }
            "usage" => out.push_back(StreamEvent::Usage(Usage {
                input_tokens: value.parse().ok(),
                ..Usage::UNKNOWN
            })),
            "error" => {
                let kind = mh::code_kind(value).unwrap_or(ModelErrorKind::Server);
                return Err(Failure::of(kind, format!("in-stream {value}")));
            }
            "end" => {
                if self.open {
                    out.push_back(StreamEvent::PartEnd { index: 0 });
                }
                out.push_back(StreamEvent::Finish {
                    reason: FinishReason::Stop,
                });
                return Ok(Flow::Done);
            }
            _ => {}
        }
        Ok(Flow::More)
    }
}

impl Wire for ToyWire {
    type Decoder = ToyDecoder;

    fn decoder(&self) -> ToyDecoder {
        ToyDecoder::default()
    }

    fn status_error(&self, status: u16, body: &[u8]) -> Failure {
        let text = String::from_utf8_lossy(body);
        Failure::for_status(
            status,
            ModelError::new(
                mh::status_kind(status),
                mh::status_message(status, Some(&text)),
            ),
        )
    }
}

const OK: &str = "data: text:hello\n\ndata: end\n\n";

async fn send(
    server: &ReplayServer,
    config: burrow_models::ClientConfig,
) -> Result<EventStream, ModelError> {
    let client = HttpClient::new(config).unwrap();
    let request = JsonRequest::new("/v1/toy", "{}")
        .secret_header("authorization", &format!("Bearer {TEST_KEY}"))
        .unwrap();
    let _ = server;
    client.stream(request, Arc::new(ToyWire)).await
}

async fn answer(
    server: &ReplayServer,
) -> Result<(Vec<StreamEvent>, Option<ModelError>), ModelError> {
    settle(send(server, config(server)).await).await
}

fn too_many(header: (&str, &str)) -> Reply {
    Reply::json(429, r#"{"error":"slow down"}"#).header(header.0, header.1)
}

#[tokio::test(start_paused = true)]
async fn retry_after_ms_is_waited_exactly() {
    let server = ReplayServer::start([too_many(("retry-after-ms", "1500")), Reply::sse(OK)]);
    let t0 = Instant::now();
    let (events, error) = answer(&server).await.unwrap();
    assert_eq!(t0.elapsed(), Duration::from_millis(1500));
    assert!(error.is_none());
    assert_eq!(text_of(&events), "hello");
    assert_eq!(server.request_count(), 2);
    let sent = server.requests();
    assert_eq!(sent[0].path, "/v1/toy");
    assert_eq!(
        sent[1].header("authorization"),
        Some(format!("Bearer {TEST_KEY}").as_str())
    );
}

#[tokio::test(start_paused = true)]
async fn retry_after_seconds_is_waited() {
    let server = ReplayServer::start([too_many(("retry-after", "2")), Reply::sse(OK)]);
    let t0 = Instant::now();
    answer(&server).await.unwrap();
    assert_eq!(t0.elapsed(), Duration::from_secs(2));
}

#[tokio::test(start_paused = true)]
async fn retry_after_http_date_is_waited_until_that_time() {
    let at = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(6));
    let server = ReplayServer::start([too_many(("retry-after", &at)), Reply::sse(OK)]);
    let t0 = Instant::now();
    answer(&server).await.unwrap();
    // Whole seconds on the wire, and real time passes while the test runs.
    let waited = t0.elapsed();
    assert!(
        (Duration::from_secs(4)..=Duration::from_secs(6)).contains(&waited),
        "{waited:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn overloaded_statuses_back_off_doubling() {
    let server = ReplayServer::start([
        Reply::json(529, "{}"),
        Reply::json(503, "{}"),
        Reply::sse(OK),
    ]);
    let t0 = Instant::now();
    let (events, _) = answer(&server).await.unwrap();
    assert_eq!(t0.elapsed(), Duration::from_millis(500 + 1000));
    assert_eq!(text_of(&events), "hello");
}

#[tokio::test(start_paused = true)]
async fn two_retries_then_the_error() {
    let server = ReplayServer::start([
        Reply::json(529, "{}"),
        Reply::json(529, "{}"),
        Reply::json(529, "overloaded, try later"),
    ]);
    let t0 = Instant::now();
    let error = answer(&server).await.err().unwrap();
    assert_eq!(t0.elapsed(), Duration::from_millis(1500));
    assert_eq!(error.kind, ModelErrorKind::Overloaded);
    assert_eq!(server.request_count(), 3);
    assert!(error.message.contains("529"), "{}", error.message);
}

#[tokio::test(start_paused = true)]
async fn jittered_backoff_stays_within_a_quarter() {
    let server = ReplayServer::start([Reply::json(500, "{}"), Reply::sse(OK)]);
    let mut config = config(&server);
    config.retry.jitter = 0.25;
    let t0 = Instant::now();
    drain(send(&server, config).await.unwrap()).await;
    let waited = t0.elapsed();
    assert!(
        (Duration::from_millis(375)..=Duration::from_millis(500)).contains(&waited),
        "{waited:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn unauthorized_is_not_retried_and_shows_no_key() {
    let body = format!(r#"{{"error":"Incorrect API key provided: {TEST_KEY}"}}"#);
    let server = ReplayServer::start([Reply::json(401, body), Reply::sse(OK)]);
    let error = answer(&server).await.err().unwrap();
    assert_eq!(error.kind, ModelErrorKind::Authentication);
    assert_eq!(server.request_count(), 1);
    assert_no_key(&error);
}

#[tokio::test(start_paused = true)]
async fn x_should_retry_overrides_the_status() {
    let server = ReplayServer::start([
        Reply::json(400, "{}").header("x-should-retry", "true"),
        Reply::json(500, "{}").header("x-should-retry", "false"),
    ]);
    let error = answer(&server).await.err().unwrap();
    assert_eq!(server.request_count(), 2);
    assert_eq!(error.kind, ModelErrorKind::Server);
}

#[tokio::test(start_paused = true)]
async fn a_wait_above_the_cap_is_not_retried_but_reported() {
    let server = ReplayServer::start([too_many(("retry-after", "120")), Reply::sse(OK)]);
    let t0 = Instant::now();
    let error = answer(&server).await.err().unwrap();
    assert_eq!(t0.elapsed(), Duration::ZERO);
    assert_eq!(error.kind, ModelErrorKind::RateLimited);
    assert_eq!(error.retry_after, Some(Duration::from_secs(120)));
    assert_eq!(server.request_count(), 1);
}

#[tokio::test(start_paused = true)]
async fn an_in_stream_error_before_any_part_is_retried() {
    // Usage before the first part commits nothing (Anthropic's message_start).
    let server = ReplayServer::start([
        Reply::sse("data: usage:7\n\ndata: error:overloaded_error\n\n"),
        Reply::sse(OK),
    ]);
    let (events, error) = answer(&server).await.unwrap();
    assert!(error.is_none());
    assert_eq!(server.request_count(), 2);
    assert_eq!(text_of(&events), "hello");
    assert!(
        !events.iter().any(|e| matches!(e, StreamEvent::Usage(_))),
        "the failed attempt's usage never reaches the caller"
    );
    assert_well_formed(&events);
}

#[tokio::test(start_paused = true)]
async fn an_in_stream_error_after_the_first_text_ends_the_stream() {
    let server = ReplayServer::start([
        Reply::sse("data: text:partial\n\ndata: error:overloaded_error\n\n"),
        Reply::sse(OK),
    ]);
    let (events, error) = answer(&server).await.unwrap();
    assert_eq!(server.request_count(), 1, "never retried after text");
    assert_eq!(text_of(&events), "partial");
    assert_eq!(error.unwrap().kind, ModelErrorKind::Overloaded);
}

#[tokio::test(start_paused = true)]
async fn a_connection_cut_before_any_part_is_retried() {
    let cut =
        Reply::sse("data: usage:3\n\ndata: text:lost\n\ndata: end\n\n").cut_before("data: text");
    let server = ReplayServer::start([cut, Reply::sse(OK)]);
    let (events, error) = answer(&server).await.unwrap();
    assert!(error.is_none());
    assert_eq!(server.request_count(), 2);
    assert_eq!(text_of(&events), "hello");
}

#[tokio::test(start_paused = true)]
async fn a_connection_cut_after_the_first_part_is_a_transport_error() {
    let cut = Reply::sse("data: text:kept\n\ndata: text:lost\n\ndata: end\n\n")
        .cut_before("data: text:lost");
    let server = ReplayServer::start([cut, Reply::sse(OK)]);
    let (events, error) = answer(&server).await.unwrap();
    assert_eq!(server.request_count(), 1);
    assert_eq!(text_of(&events), "kept");
    assert_eq!(error.unwrap().kind, ModelErrorKind::Transport);
}

#[tokio::test(start_paused = true)]
async fn a_stream_without_its_end_marker_is_a_transport_failure() {
    let server = ReplayServer::start([
        Reply::sse("data: usage:1\n\n"),
        Reply::sse("data: usage:1\n\n"),
        Reply::sse("data: usage:1\n\n"),
    ]);
    let error = answer(&server).await.err().unwrap();
    assert_eq!(error.kind, ModelErrorKind::Transport);
    assert_eq!(server.request_count(), 3, "retried as the policy says");
    assert!(error.message.contains("end marker"), "{}", error.message);
}

#[tokio::test]
async fn a_refused_connection_names_the_host_not_the_key() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let server = ReplayServer::start([]);
    let mut config = quick_config(&server);
    config.base_url = format!("http://127.0.0.1:{port}/v1");
    let error = settle(send(&server, config).await).await.err().unwrap();
    assert_eq!(error.kind, ModelErrorKind::Transport);
    assert!(
        error.message.contains(&format!("127.0.0.1:{port}")),
        "{}",
        error.message
    );
    assert_no_key(&error);
}

#[tokio::test]
async fn events_split_anywhere_decode_the_same() {
    let body = "data: text:h\u{e9}llo \u{2713}\r\n\r\n: keep-alive\r\n\r\ndata: end\r\n\r\n";
    let server = ReplayServer::start([Reply::sse(body).chunks_of(1)]);
    let (events, error) = answer(&server).await.unwrap();
    assert!(error.is_none());
    assert_eq!(text_of(&events), "h\u{e9}llo \u{2713}");
}

#[tokio::test(start_paused = true)]
async fn each_retry_is_announced_before_its_wait() {
    let server = ReplayServer::start([
        Reply::json(529, "{}"),
        Reply::json(503, "{}"),
        Reply::sse(OK),
    ]);
    let stream = send(&server, config(&server)).await.unwrap();
    let (retries, events, error) = drain_all(stream).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(text_of(&events), "hello");
    let announced: Vec<(u32, u32, u64, ModelErrorKind)> = retries
        .iter()
        .map(|r| match r {
            StreamEvent::Retry {
                attempt,
                attempts,
                wait_ms,
                kind,
                reason,
            } => {
                assert!(reason.contains("HTTP 5"), "{reason}");
                (*attempt, *attempts, *wait_ms, *kind)
            }
            other => panic!("not a retry: {other:?}"),
        })
        .collect();
    assert_eq!(
        announced,
        [
            (2, 3, 500, ModelErrorKind::Overloaded),
            (3, 3, 1000, ModelErrorKind::Overloaded)
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_request_that_fails_for_good_after_retries_ends_its_stream_with_the_error() {
    let server = ReplayServer::start([
        Reply::json(500, "{}"),
        Reply::json(500, "{}"),
        Reply::json(500, "{}"),
    ]);
    let stream = send(&server, config(&server)).await.unwrap();
    let (retries, events, error) = drain_all(stream).await;
    assert_eq!(retries.len(), 2);
    assert!(events.is_empty());
    assert_eq!(error.unwrap().kind, ModelErrorKind::Server);
    assert_eq!(server.request_count(), 3);
}

#[tokio::test]
async fn a_server_that_never_answers_costs_one_request_timeout_not_one_per_retry() {
    let (url, connections) = silent_server(b"");
    let server = ReplayServer::start([]);
    let mut config = quick_config(&server);
    config.base_url = url;
    config.request_timeout = Some(Duration::from_millis(300));
    let sent = send(&server, config).await;
    let error = sent.err().expect("the first attempt fails for good");
    assert_eq!(error.kind, ModelErrorKind::Transport);
    assert!(
        error.message.contains("did not answer within 0.3 s"),
        "{}",
        error.message
    );
    assert_eq!(connections.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_stream_that_goes_silent_before_any_part_is_retried_after_the_idle_timeout() {
    let head: &'static str = Box::leak(format!("{STREAM_HEAD}data: usage:1\n\n").into_boxed_str());
    let (url, connections) = silent_server(head.as_bytes());
    let server = ReplayServer::start([]);
    let mut config = quick_config(&server);
    config.base_url = url;
    config.idle_timeout = Some(Duration::from_millis(200));
    let stream = send(&server, config).await.unwrap();
    let (retries, events, error) = drain_all(stream).await;
    assert_eq!(retries.len(), 2, "{retries:?}");
    assert!(events.is_empty());
    let error = error.unwrap();
    assert_eq!(error.kind, ModelErrorKind::Transport);
    assert_eq!(error.message, "the model's stream sent nothing for 0.2 s");
    assert_eq!(connections.load(std::sync::atomic::Ordering::SeqCst), 3);
}

#[tokio::test]
async fn a_stream_that_goes_silent_after_its_first_text_ends_with_a_transport_error() {
    let head: &'static str =
        Box::leak(format!("{STREAM_HEAD}data: text:partial\n\n").into_boxed_str());
    let (url, connections) = silent_server(head.as_bytes());
    let server = ReplayServer::start([]);
    let mut config = quick_config(&server);
    config.base_url = url;
    config.idle_timeout = Some(Duration::from_millis(200));
    let (events, error) = settle(send(&server, config).await).await.unwrap();
    assert_eq!(text_of(&events), "partial");
    assert_eq!(error.unwrap().kind, ModelErrorKind::Transport);
    assert_eq!(connections.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_line_over_16_mib_fails_the_request_with_one_sentence_and_no_retry() {
    let mut body = b"data: text:".to_vec();
    body.extend(std::iter::repeat_n(b'x', 17 << 20));
    body.extend_from_slice(b"\n\ndata: end\n\n");
    let server = ReplayServer::start([Reply::sse(body), Reply::sse(OK)]);
    let error = answer(&server).await.err().unwrap();
    assert_eq!(error.kind, ModelErrorKind::InvalidStream);
    assert_eq!(
        error.message,
        "the model's stream sent a line longer than 16777216 bytes, the most burrow reads"
    );
    assert_eq!(server.request_count(), 1);
}
