//! Shared test support: the local replay server, fixture paths, a test client configuration, stream collection and golden files.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use burrow_models::{ClientConfig, RetryPolicy};
use burrow_runtime::message::{AssistantPart, Message, ToolCall, ToolResult};
use burrow_runtime::model::{
    EventStream, ModelError, ModelRequest, ModelSettings, StreamEvent, ToolChoice, ToolDefinition,
    check_stream,
};
use futures::StreamExt;
use serde_json::{Value, json};

pub use burrow_testkit::http::{Recorded, ReplayServer, Reply};

/// The key every test sends (and that must never show in an error).
pub const TEST_KEY: &str = "sk-test-0123456789abcdef";

/// `tests/fixtures/REL`.
pub fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

/// The text of `tests/fixtures/REL`.
pub fn fixture_text(rel: &str) -> String {
    std::fs::read_to_string(fixture(rel)).unwrap_or_else(|e| panic!("fixture {rel}: {e}"))
}

/// An SSE reply of the fixture `REL`.
pub fn sse(rel: &str) -> Reply {
    Reply::sse_file(fixture(rel))
}

/// A retry policy with exact waits (no jitter), the defaults otherwise.
pub fn exact_retry() -> RetryPolicy {
    RetryPolicy {
        jitter: 0.0,
        ..RetryPolicy::default()
    }
}

/// A configuration for `server` with no timers (so it runs under tokio's
/// paused clock: waits are the retry sleeps only) and exact retries.
pub fn config(server: &ReplayServer) -> ClientConfig {
    let mut config = ClientConfig::new(server.url(), TEST_KEY);
    config.request_timeout = None;
    config.idle_timeout = None;
    config.connect_timeout = None;
    config.pool_idle_timeout = None;
    config.retry = exact_retry();
    config
}

/// [`config`] with retries that wait a millisecond (for tests on the real clock).
pub fn quick_config(server: &ReplayServer) -> ClientConfig {
    let mut config = config(server);
    config.retry.initial_backoff = Duration::from_millis(1);
    config.retry.max_backoff = Duration::from_millis(2);
    config
}

/// Every item of a stream: the retry notices, the answer's events, and the
/// error that ended it, if any.
pub async fn drain_all(
    mut stream: EventStream,
) -> (Vec<StreamEvent>, Vec<StreamEvent>, Option<ModelError>) {
    let mut retries = Vec::new();
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(e @ StreamEvent::Retry { .. }) => {
                assert!(events.is_empty(), "a retry notice after a part: {e:?}");
                retries.push(e);
            }
            Ok(e) => events.push(e),
            Err(e) => {
                assert!(stream.next().await.is_none(), "nothing follows an error");
                return (retries, events, Some(e));
            }
        }
    }
    (retries, events, None)
}

/// The answer's events of a stream (retry notices left out), and the error that ended it, if any.
pub async fn drain(stream: EventStream) -> (Vec<StreamEvent>, Option<ModelError>) {
    let (_, events, error) = drain_all(stream).await;
    (events, error)
}

/// A request's result as the caller sees it in the end: an error with no
/// answer at all (at once, or after retries) is the `Err`.
pub async fn settle(
    sent: Result<EventStream, ModelError>,
) -> Result<(Vec<StreamEvent>, Option<ModelError>), ModelError> {
    match drain(sent?).await {
        (events, Some(error)) if events.is_empty() => Err(error),
        answer => Ok(answer),
    }
}

/// Asserts `events` are a well-formed stream.
pub fn assert_well_formed(events: &[StreamEvent]) {
    if let Err(v) = check_stream(events) {
        panic!("the stream is not well formed: {v}\n{events:#?}");
    }
}

/// The text of all text deltas.
pub fn text_of(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// Asserts no error message carries the key.
pub fn assert_no_key(error: &ModelError) {
    assert!(
        !error.message.contains(TEST_KEY) && !error.message.contains("Bearer"),
        "{}",
        error.message
    );
}

/// The tools of the golden conversation.
pub fn tools() -> Vec<ToolDefinition> {
    vec![
        ToolDefinition {
            name: "read_file".into(),
            description: "Read a file.".into(),
            input_schema: json!({"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]}),
            native_type: None,
        },
        ToolDefinition {
            name: "write_file".into(),
            description: "Write a file.".into(),
            input_schema: json!({"type": "object", "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}}, "required": ["file_path", "content"]}),
            native_type: None,
        },
    ]
}

/// The golden conversation: system, user, an assistant turn with thinking
/// (signed with `signature`), text and two tool calls, then both results.
pub fn conversation(signature: &str) -> Vec<Message> {
    vec![
        Message::system("Answer in English."),
        Message::user("Copy /a.txt to /b.txt."),
        Message::Assistant {
            parts: vec![
                AssistantPart::Thinking {
                    text: "I should read the file first.".into(),
                    signature: Some(signature.to_owned()),
                },
                AssistantPart::Text {
                    text: "Reading and writing.".into(),
                },
                AssistantPart::ToolCall(ToolCall {
                    id: "call_1".into(),
                    name: "read_file".into(),
                    arguments: json!({"file_path": "/a.txt"}),
                }),
                AssistantPart::ToolCall(ToolCall {
                    id: "call_2".into(),
                    name: "write_file".into(),
                    arguments: json!({"file_path": "/b.txt", "content": "hé"}),
                }),
            ],
        },
        Message::ToolResult(ToolResult {
            call_id: "call_1".into(),
            name: "read_file".into(),
            content: "1\thé".into(),
            is_error: false,
        }),
        Message::ToolResult(ToolResult {
            call_id: "call_2".into(),
            name: "write_file".into(),
            content: "Refused: /b.txt exists.".into(),
            is_error: true,
        }),
    ]
}

/// The settings of the golden request.
pub fn golden_settings() -> ModelSettings {
    ModelSettings {
        max_tokens: Some(1024),
        temperature: Some(0.2),
        tool_choice: ToolChoice::Auto,
    }
}

/// A request over `messages` with the golden tools and `settings`.
pub fn request<'a>(
    system: &'a str,
    messages: &'a [Message],
    tools: &'a [ToolDefinition],
    settings: &'a ModelSettings,
) -> ModelRequest<'a> {
    ModelRequest {
        system,
        messages,
        tools,
        settings,
    }
}

/// A plain request: one user message, no tools.
pub fn plain(messages: &[Message]) -> ModelRequest<'_> {
    static SETTINGS: std::sync::OnceLock<ModelSettings> = std::sync::OnceLock::new();
    ModelRequest {
        system: "",
        messages,
        tools: &[],
        settings: SETTINGS.get_or_init(ModelSettings::default),
    }
}

/// Compares `actual` with the golden file `REL` (JSON). With
/// `BURROW_BLESS=1` the file is written instead (review the diff).
pub fn assert_golden(rel: &str, actual: &Value) {
    let path = fixture(rel);
    if std::env::var("BURROW_BLESS").as_deref() == Ok("1") {
        let text = serde_json::to_string_pretty(actual).unwrap() + "\n";
        std::fs::write(&path, text).unwrap();
        return;
    }
    let expected: Value = serde_json::from_str(&fixture_text(rel))
        .unwrap_or_else(|e| panic!("golden {rel} is not JSON: {e}"));
    assert_eq!(
        actual,
        &expected,
        "the request differs from {rel}:\n{}",
        serde_json::to_string_pretty(actual).unwrap()
    );
}

/// The JSON body of a recorded request.
pub fn body(recorded: &Recorded) -> Value {
    serde_json::from_slice(&recorded.body).expect("the request body is JSON")
}

/// A server on 127.0.0.1 that reads each connection's request, writes
/// `head` (perhaps nothing: a server that never answers) and then holds the
/// connection open without another byte. Its base URL, and a count of the
/// connections it took.
pub fn silent_server(head: &'static [u8]) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let connections = Arc::new(AtomicUsize::new(0));
    let counted = connections.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { break };
            counted.fetch_add(1, Ordering::SeqCst);
            let mut request = [0u8; 16 * 1024];
            let _ = stream.read(&mut request);
            let _ = stream.write_all(head);
            let _ = stream.flush();
            held.push(stream);
        }
    });
    (url, connections)
}

/// The head of a 200 event stream that ends when the connection closes.
pub const STREAM_HEAD: &str =
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";

/// Runs an agent over `model`, whose server answers twice with `read_file`
/// calls sent without ids and then with text: every call runs once, the
/// made-up ids are the adapter's (`call_burrow_...`), none repeats across
/// the two turns, each result carries its call's id, and the last request
/// sends the provider every id. Returns the ids.
pub async fn made_up_ids_across_turns(
    model: Arc<dyn burrow_runtime::model::Model>,
    server: &ReplayServer,
    calls_per_turn: usize,
) -> Vec<String> {
    use burrow_runtime::agent::{Agent, Outcome};
    use burrow_runtime::tool::{ToolOutput, ToolRegistry};
    let runs = Arc::new(AtomicUsize::new(0));
    let mut tools = ToolRegistry::new();
    let counter = runs.clone();
    tools.add_typed("read_file", "Read a file.", move |_: Value, _| {
        counter.fetch_add(1, Ordering::SeqCst);
        async { Ok(ToolOutput::ok("contents")) }
    });
    let agent = Agent::new(model).with_tools(tools);
    let mut history = Vec::new();
    let result = agent.run(&mut history, "read them, twice").await;
    assert_eq!(result.outcome, Outcome::Completed, "{:?}", result.outcome);
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2 * calls_per_turn,
        "every call ran once"
    );
    let calls: Vec<String> = history
        .iter()
        .flat_map(|m| m.tool_calls().map(|c| c.id.clone()).collect::<Vec<_>>())
        .collect();
    let results: Vec<String> = history
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult(r) => Some(r.call_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 2 * calls_per_turn, "{history:#?}");
    assert_eq!(results, calls, "each result carries its call's id");
    let distinct: std::collections::HashSet<&String> = calls.iter().collect();
    assert_eq!(distinct.len(), calls.len(), "made-up ids repeat: {calls:?}");
    assert!(
        calls.iter().all(|id| id.starts_with("call_burrow_")),
        "{calls:?}"
    );
    let requests = server.requests();
    let last = body(&requests[requests.len() - 1]).to_string();
    for id in &calls {
        assert!(
            last.matches(id.as_str()).count() >= 2,
            "the last request sends {id} on its call and its result: {last}"
        );
    }
    calls
}
