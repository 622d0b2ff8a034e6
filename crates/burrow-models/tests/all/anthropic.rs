//! The Anthropic Messages adapter against the local replay server: every fixture's events, fragments and UTF-8 split anywhere, thinking signatures, usage, in-stream errors, dropped connections, statuses, retry timing on the paused clock, and the golden request.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use burrow_models::anthropic::{API_VERSION, AnthropicModel, DEFAULT_MAX_TOKENS};
use burrow_runtime::agent::{Agent, Outcome};
use burrow_runtime::message::{AssistantPart, Message, ToolCall, ToolResult, Usage};
use burrow_runtime::model::{
    FinishReason, ModelErrorKind, ModelResponse, ModelSettings, PartKind, ResponseBuilder,
    StreamChecker, StreamEvent, ToolChoice, collect,
};
use burrow_runtime::tool::{ToolOutput, ToolRegistry};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::support::*;

fn model(server: &ReplayServer) -> AnthropicModel {
    AnthropicModel::new("claude-test", config(server)).expect("the model builds")
}

fn quick_model(server: &ReplayServer) -> AnthropicModel {
    AnthropicModel::new("claude-test", quick_config(server)).expect("the model builds")
}

fn fx(name: &str) -> Reply {
    sse(&format!("anthropic/{name}"))
}

fn hello() -> Vec<Message> {
    vec![Message::user("Hi")]
}

/// The events of one answer to a plain request, and the error that ended it.
async fn answer(
    model: &AnthropicModel,
) -> (Vec<StreamEvent>, Option<burrow_runtime::model::ModelError>) {
    use burrow_runtime::model::Model;
    let messages = hello();
    match model.stream(plain(&messages)).await {
        Ok(stream) => drain(stream).await,
        Err(e) => (Vec::new(), Some(e)),
    }
}

/// The whole answer to a plain request served as `reply`.
async fn response_of(reply: Reply) -> (ModelResponse, Vec<StreamEvent>) {
    let server = ReplayServer::start([reply]);
    let (events, error) = answer(&model(&server)).await;
    assert!(error.is_none(), "{error:?}");
    assert_well_formed(&events);
    (built(&events), events)
}

fn built(events: &[StreamEvent]) -> ModelResponse {
    let mut builder = ResponseBuilder::new();
    for e in events {
        builder.push(e.clone()).expect("a well-formed event");
    }
    builder.finish().expect("a finished stream")
}

fn usage(input: Option<u64>, output: Option<u64>, read: Option<u64>, write: Option<u64>) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: read,
        cache_write_tokens: write,
    }
}

fn call(id: &str, name: &str, arguments: Value) -> AssistantPart {
    AssistantPart::ToolCall(ToolCall {
        id: id.into(),
        name: name.into(),
        arguments,
    })
}

/// Events that passed the checker one by one (a stream cut by an error is a prefix).
fn assert_valid_prefix(events: &[StreamEvent]) {
    let mut checker = StreamChecker::new();
    for e in events {
        if let Err(v) = checker.push(e) {
            panic!("event {e:?} breaks the stream: {v}");
        }
    }
}

#[tokio::test]
async fn plain_text_with_headers_and_usage() {
    let server = ReplayServer::start([fx("text.sse")]);
    let (events, error) = answer(&model(&server)).await;
    assert!(error.is_none(), "{error:?}");
    assert_well_formed(&events);
    assert_eq!(text_of(&events), "Hello! How can I help you today?");
    let response = built(&events);
    assert_eq!(
        response.parts,
        [AssistantPart::Text {
            text: "Hello! How can I help you today?".into()
        }]
    );
    assert_eq!(response.finish, FinishReason::Stop);
    assert_eq!(response.usage, usage(Some(25), Some(15), Some(0), Some(0)));

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!(
        (r.method.as_str(), r.path.as_str()),
        ("POST", "/v1/messages")
    );
    assert_eq!(r.header("x-api-key"), Some(TEST_KEY));
    assert_eq!(r.header("anthropic-version"), Some(API_VERSION));
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.header("authorization"), None);
    let sent = body(r);
    assert_eq!(sent["max_tokens"], json!(DEFAULT_MAX_TOKENS));
    assert_eq!(sent["stream"], json!(true));
    assert_eq!(sent["model"], json!("claude-test"));
}

#[tokio::test]
async fn two_parallel_tool_calls() {
    let (response, events) = response_of(fx("tool_calls_parallel.sse")).await;
    assert_eq!(
        response.parts,
        [
            AssistantPart::Text {
                text: "I'll read both files.".into()
            },
            call("toolu_01A", "read_file", json!({"file_path": "/a.txt"})),
            call("toolu_01B", "read_file", json!({"file_path": "/b.txt"})),
        ]
    );
    assert_eq!(response.finish, FinishReason::ToolCalls);
    // Part indices are the adapter's own, one per block, in order; empty fragments are dropped.
    let starts: Vec<(usize, &PartKind)> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::PartStart { index, part } => Some((*index, part)),
            _ => None,
        })
        .collect();
    assert_eq!(starts.iter().map(|s| s.0).collect::<Vec<_>>(), [0, 1, 2]);
    assert!(!events.iter().any(|e| matches!(
        e,
        StreamEvent::ArgumentsDelta { json, .. } if json.is_empty()
    )));
}

#[tokio::test]
async fn fragments_and_utf8_split_anywhere_give_the_same_answer() {
    let expected_args = json!({
        "file_path": "/notes/café.txt",
        "content": "日本語 \"quoted\" \\ back\nline 🦀\n",
    });
    let (whole, whole_events) = response_of(fx("fragments.sse")).await;
    assert_eq!(
        whole.parts,
        [
            AssistantPart::Text {
                text: "Écrire le fichier 🦀 — 日本".into()
            },
            call("toolu_01Frag", "write_file", expected_args),
        ]
    );
    let fragments = whole_events
        .iter()
        .filter(|e| matches!(e, StreamEvent::ArgumentsDelta { .. }))
        .count();
    assert_eq!(fragments, 40, "each fragment passes through as it came");
    // Chunk sizes that cut inside events, lines, escapes and multi-byte characters.
    for size in [1, 2, 3, 5, 7, 13, 64] {
        let (response, events) = response_of(fx("fragments.sse").chunks_of(size)).await;
        assert_eq!(response, whole, "chunks of {size} bytes");
        assert_eq!(events, whole_events, "chunks of {size} bytes");
    }
}

#[tokio::test]
async fn thinking_and_its_signature_are_kept_for_the_next_request() {
    let signature = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds+bGt9Q0FBQkBRKPJbOvC0gPyAXNTIWLLeZNJzJRRxMeKJ0e5bxNqKGYpEGtDW2YTqEw==";
    let server = ReplayServer::start([fx("thinking.sse"), fx("text.sse")]);
    let model = model(&server);
    let (events, error) = answer(&model).await;
    assert!(error.is_none(), "{error:?}");
    assert_well_formed(&events);
    let signature_deltas = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::SignatureDelta { .. }))
        .count();
    assert_eq!(signature_deltas, 2);
    let response = built(&events);
    assert_eq!(
        response.parts,
        [
            AssistantPart::Thinking {
                text: "The user wants /a.txt. I should read it first.".into(),
                signature: Some(signature.into()),
            },
            AssistantPart::Text {
                text: "Reading it now.".into()
            },
            call("toolu_01Think", "read_file", json!({"file_path": "/a.txt"})),
        ]
    );
    assert_eq!(response.usage, usage(Some(96), Some(141), None, None));

    // The next request sends the thinking block back, signed, before the call.
    let mut history = hello();
    history.push(response.into_message());
    history.push(Message::ToolResult(ToolResult {
        call_id: "toolu_01Think".into(),
        name: "read_file".into(),
        content: "1\talpha".into(),
        is_error: false,
    }));
    let settings = ModelSettings::default();
    let tools = tools();
    let request = request("", &history, &tools, &settings);
    use burrow_runtime::model::Model;
    let (_, error) = drain(model.stream(request).await.expect("a stream")).await;
    assert!(error.is_none(), "{error:?}");
    let sent = body(&server.requests()[1]);
    assert_eq!(
        sent["messages"][1]["content"],
        json!([
            {"type": "thinking", "thinking": "The user wants /a.txt. I should read it first.", "signature": signature},
            {"type": "text", "text": "Reading it now."},
            {"type": "tool_use", "id": "toolu_01Think", "name": "read_file", "input": {"file_path": "/a.txt"}},
        ])
    );
    assert_eq!(
        sent["messages"][2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01Think", "content": "1\talpha"},
        ]})
    );
}

#[tokio::test]
async fn redacted_thinking_is_sent_back_as_it_came() {
    let server = ReplayServer::start([fx("redacted_thinking.sse"), fx("text.sse")]);
    let model = model(&server);
    let (events, error) = answer(&model).await;
    assert!(error.is_none(), "{error:?}");
    assert_well_formed(&events);
    let response = built(&events);
    let mut history = hello();
    history.push(response.into_message());
    history.push(Message::user("Go on."));
    use burrow_runtime::model::Model;
    let (_, error) = drain(model.stream(plain(&history)).await.expect("a stream")).await;
    assert!(error.is_none(), "{error:?}");
    let sent = body(&server.requests()[1]);
    assert_eq!(
        sent["messages"][1]["content"],
        json!([
            {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"},
            {"type": "text", "text": "Done."},
        ])
    );
}

#[tokio::test]
async fn usage_absent_partial_and_cumulative() {
    let (absent, _) = response_of(fx("usage_absent.sse")).await;
    assert!(absent.usage.is_unknown(), "{:?}", absent.usage);

    let (partial, _) = response_of(fx("usage_partial.sse")).await;
    assert_eq!(partial.usage, usage(Some(12), Some(7), None, None));

    let (cumulative, events) = response_of(fx("usage_cumulative.sse")).await;
    // Snapshots replace each other: the last counts, never their sum.
    assert_eq!(
        cumulative.usage,
        usage(Some(10), Some(55), Some(3000), Some(200))
    );
    let snapshots = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::Usage(_)))
        .count();
    assert_eq!(snapshots, 3);
}

#[tokio::test(start_paused = true)]
async fn in_stream_overload_before_the_first_part_is_retried() {
    let server = ReplayServer::start([fx("error_before_text.sse"), fx("text.sse")]);
    let started = Instant::now();
    let (events, error) = answer(&model(&server)).await;
    assert!(error.is_none(), "{error:?}");
    assert_well_formed(&events);
    assert_eq!(text_of(&events), "Hello! How can I help you today?");
    assert_eq!(server.request_count(), 2);
    // The first backoff, exactly (no jitter in the tests' policy).
    assert_eq!(started.elapsed(), Duration::from_millis(500));
    // The usage of the failed attempt did not leak into the answer.
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, StreamEvent::Usage(_)))
            .count(),
        2
    );
}

#[tokio::test]
async fn in_stream_overload_after_the_first_text_ends_the_stream_with_the_error() {
    let server = ReplayServer::start([fx("error_after_text.sse"), fx("text.sse")]);
    let (events, error) = answer(&quick_model(&server)).await;
    let error = error.expect("the stream ends with an error");
    assert_eq!(error.kind, ModelErrorKind::Overloaded);
    assert!(
        error.message.contains("overloaded_error"),
        "{}",
        error.message
    );
    assert_eq!(text_of(&events), "Partial ans");
    assert_valid_prefix(&events);
    assert_eq!(
        server.request_count(),
        1,
        "nothing is retried once text reached the run"
    );
}

#[tokio::test]
async fn in_stream_errors_of_every_type_map_to_kinds() {
    let cases = [
        ("overloaded_error", ModelErrorKind::Overloaded),
        ("rate_limit_error", ModelErrorKind::RateLimited),
        ("api_error", ModelErrorKind::Server),
        ("invalid_request_error", ModelErrorKind::InvalidRequest),
        ("authentication_error", ModelErrorKind::Authentication),
    ];
    for (kind, expected) in cases {
        let body = fixture_text("anthropic/error_after_text.sse").replace("overloaded_error", kind);
        let server = ReplayServer::start([Reply::sse(body)]);
        let (_, error) = answer(&quick_model(&server)).await;
        assert_eq!(error.map(|e| e.kind), Some(expected), "{kind}");
    }
}

#[tokio::test]
async fn a_stream_without_message_stop_is_a_transport_failure() {
    // Ended cleanly after message_start: retried, and the retry answers.
    let server = ReplayServer::start([fx("drop_before_part.sse"), fx("text.sse")]);
    let (events, error) = answer(&quick_model(&server)).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(text_of(&events), "Hello! How can I help you today?");
    assert_eq!(server.request_count(), 2);

    // Ended cleanly after the first text: the error follows the text, no retry.
    let server = ReplayServer::start([fx("drop_after_part.sse"), fx("text.sse")]);
    let (events, error) = answer(&quick_model(&server)).await;
    let error = error.expect("a transport error");
    assert_eq!(error.kind, ModelErrorKind::Transport);
    assert!(error.message.contains("message_stop"), "{}", error.message);
    assert_eq!(text_of(&events), "Half an ans");
    assert_valid_prefix(&events);
    assert_eq!(server.request_count(), 1);

    // Retries spent: three attempts, then the transport error itself.
    let server = ReplayServer::start([
        fx("drop_before_part.sse"),
        fx("drop_before_part.sse"),
        fx("drop_before_part.sse"),
    ]);
    let (events, error) = answer(&quick_model(&server)).await;
    assert!(events.is_empty());
    assert_eq!(error.map(|e| e.kind), Some(ModelErrorKind::Transport));
    assert_eq!(server.request_count(), 3);
}

#[tokio::test]
async fn a_connection_dropped_mid_body_before_and_after_the_first_part() {
    let server = ReplayServer::start([
        fx("text.sse").cut_before("event: content_block_start"),
        fx("text.sse"),
    ]);
    let (events, error) = answer(&quick_model(&server)).await;
    assert!(error.is_none(), "{error:?}");
    assert_well_formed(&events);
    assert_eq!(server.request_count(), 2);

    let server = ReplayServer::start([fx("text.sse").cut_before("event: content_block_stop")]);
    let (events, error) = answer(&quick_model(&server)).await;
    let error = error.expect("a transport error");
    assert_eq!(error.kind, ModelErrorKind::Transport);
    assert_eq!(text_of(&events), "Hello! How can I help you today?");
    assert_valid_prefix(&events);
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn invalid_json_arguments_become_an_error_result_and_nothing_runs() {
    let server = ReplayServer::start([fx("invalid_arguments.sse"), fx("text.sse")]);
    let ran = Arc::new(AtomicUsize::new(0));
    let mut tools = ToolRegistry::new();
    let counter = ran.clone();
    tools.add_typed("write_file", "Writes a file.", move |_: Value, _| {
        let counter = counter.clone();
        async move {
            counter.fetch_add(1, Ordering::SeqCst);
            Ok(ToolOutput::ok("written"))
        }
    });
    let agent = Agent::new(Arc::new(model(&server))).with_tools(tools);
    let mut history = Vec::new();
    let result = agent.run(&mut history, "Write /x.txt").await;
    assert!(
        matches!(result.outcome, Outcome::Completed),
        "{:?}",
        result.outcome
    );
    assert_eq!(
        ran.load(Ordering::SeqCst),
        0,
        "no call ran with {{}} or anything else"
    );
    let calls: Vec<&ToolCall> = history.iter().flat_map(|m| m.tool_calls()).collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0].arguments,
        json!(r#"{"file_path": "/x.txt", "content": "unterminated"#),
        "the model's text is kept, not replaced by {{}}"
    );
    let result = history
        .iter()
        .find_map(|m| match m {
            Message::ToolResult(r) => Some(r.clone()),
            _ => None,
        })
        .expect("the call has a result");
    assert!(result.is_error);
    assert!(
        result.content.contains("not valid JSON"),
        "{}",
        result.content
    );
    // The next request carries the call (with an object as its input) and the error result.
    let sent = body(&server.requests()[1]);
    assert_eq!(
        sent["messages"][1]["content"][0],
        json!({"type": "tool_use", "id": "toolu_01Bad", "name": "write_file", "input": {}})
    );
    assert_eq!(sent["messages"][2]["content"][0]["is_error"], json!(true));
}

#[tokio::test]
async fn every_fixture_passes_the_stream_check() {
    let complete = [
        "text.sse",
        "tool_calls_parallel.sse",
        "fragments.sse",
        "thinking.sse",
        "redacted_thinking.sse",
        "usage_absent.sse",
        "usage_partial.sse",
        "usage_cumulative.sse",
        "invalid_arguments.sse",
    ];
    for name in complete {
        let server = ReplayServer::start([fx(name)]);
        let (events, error) = answer(&model(&server)).await;
        assert!(error.is_none(), "{name}: {error:?}");
        assert_well_formed(&events);
        let finishes = events
            .iter()
            .filter(|e| matches!(e, StreamEvent::Finish { .. }))
            .count();
        assert_eq!(finishes, 1, "{name}");
    }
    // The broken ones: what reached the caller before the error is a valid prefix.
    for name in ["error_after_text.sse", "drop_after_part.sse"] {
        let server = ReplayServer::start([fx(name)]);
        let (events, error) = answer(&quick_model(&server)).await;
        assert!(error.is_some(), "{name}");
        assert_valid_prefix(&events);
    }
    for name in ["error_before_text.sse", "drop_before_part.sse"] {
        let server = ReplayServer::start([fx(name), fx(name), fx(name)]);
        let (events, error) = answer(&quick_model(&server)).await;
        assert!(error.is_some(), "{name}");
        assert!(events.is_empty(), "{name}: nothing reaches the caller");
    }
}

#[tokio::test]
async fn golden_request_with_system_thinking_two_calls_and_two_results() {
    let server = ReplayServer::start([fx("text.sse")]);
    let model = model(&server);
    let messages = conversation("EqQBCgIYAhIMsig");
    let tools = tools();
    let settings = golden_settings();
    let request = request("You are burrow.", &messages, &tools, &settings);
    use burrow_runtime::model::Model;
    let (_, error) = drain(model.stream(request).await.expect("a stream")).await;
    assert!(error.is_none(), "{error:?}");
    let sent = body(&server.requests()[0]);
    assert_golden("anthropic/request.json", &sent);
    assert_eq!(model.request_body(request).expect("a body"), sent);
}

#[tokio::test]
async fn request_shapes_tool_choice_merged_turns_and_dropped_parts() {
    let server = ReplayServer::start([]);
    let model = AnthropicModel::new("claude-test", config(&server))
        .expect("the model builds")
        .with_max_tokens(2000)
        .with_thinking_budget(1024);
    let history = vec![
        Message::user("one"),
        Message::user(""),
        Message::user("two"),
        Message::Assistant {
            parts: vec![
                AssistantPart::Thinking {
                    text: "from another provider".into(),
                    signature: None,
                },
                AssistantPart::Text {
                    text: String::new(),
                },
                call("c1", "read_file", json!({"file_path": "/a"})),
            ],
        },
        Message::ToolResult(ToolResult {
            call_id: "c1".into(),
            name: "read_file".into(),
            content: "x".into(),
            is_error: false,
        }),
        Message::system("Be brief."),
        Message::user("three"),
        Message::Assistant { parts: vec![] },
    ];
    let tools = tools();
    let mut settings = ModelSettings::default();
    let choices = [
        (ToolChoice::Auto, Value::Null),
        (ToolChoice::None, json!({"type": "none"})),
        (ToolChoice::Required, json!({"type": "any"})),
        (
            ToolChoice::Tool("read_file".into()),
            json!({"type": "tool", "name": "read_file"}),
        ),
    ];
    for (choice, expected) in choices {
        settings.tool_choice = choice;
        let body = model
            .request_body(request("", &history, &tools, &settings))
            .expect("a body");
        assert_eq!(body["tool_choice"], expected);
        assert_eq!(body["max_tokens"], json!(2000));
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": 1024})
        );
        assert_eq!(body["system"], json!("Be brief."));
        assert_eq!(
            body["messages"],
            json!([
                {"role": "user", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "c1", "name": "read_file", "input": {"file_path": "/a"}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "c1", "content": "x"},
                    {"type": "text", "text": "three"},
                ]},
            ])
        );
    }
    // No tools: neither tools nor tool_choice is sent.
    settings.tool_choice = ToolChoice::Required;
    let body = model
        .request_body(request("", &history, &[], &settings))
        .expect("a body");
    assert!(body.get("tools").is_none() && body.get("tool_choice").is_none());
}

#[tokio::test(start_paused = true)]
async fn retry_waits_follow_retry_after_and_backoff_on_the_paused_clock() {
    let overloaded =
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let limited = r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}"#;
    // 529 without a wait: backoff 0.5 s; 429 with retry-after-ms: 1.5 s.
    let server = ReplayServer::start([
        Reply::json(529, overloaded).header("x-should-retry", "true"),
        Reply::json(429, limited).header("retry-after-ms", "1500"),
        fx("text.sse"),
    ]);
    let started = Instant::now();
    let (events, error) = answer(&model(&server)).await;
    assert!(error.is_none(), "{error:?}");
    assert_well_formed(&events);
    assert_eq!(started.elapsed(), Duration::from_millis(2000));
    assert_eq!(server.request_count(), 3);

    // retry-after in seconds, then an HTTP date in the past (a wait of zero: backoff instead).
    let server = ReplayServer::start([
        Reply::json(429, limited).header("retry-after", "3"),
        Reply::json(429, limited).header("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT"),
        fx("text.sse"),
    ]);
    let started = Instant::now();
    let (_, error) = answer(&model(&server)).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(started.elapsed(), Duration::from_millis(3000 + 1000));

    // Retries spent: the third 529 is the error, after 0.5 s + 1 s.
    let server = ReplayServer::start([
        Reply::json(529, overloaded),
        Reply::json(529, overloaded),
        Reply::json(529, overloaded),
    ]);
    let started = Instant::now();
    let (_, error) = answer(&model(&server)).await;
    let error = error.expect("overloaded");
    assert_eq!(error.kind, ModelErrorKind::Overloaded);
    assert!(error.message.contains("529"), "{}", error.message);
    assert_eq!(started.elapsed(), Duration::from_millis(1500));
    assert_eq!(server.request_count(), 3);
}

#[tokio::test]
async fn statuses_that_are_not_retried() {
    let cases = [
        (
            401,
            r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
            ModelErrorKind::Authentication,
        ),
        (
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
            ModelErrorKind::ContextTooLong,
        ),
        (
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}}"#,
            ModelErrorKind::InvalidRequest,
        ),
        (
            429,
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"You have reached your specified workspace API usage limits.","details":{"error_code":"enforced_spend_limit_reached"}}}"#,
            ModelErrorKind::RateLimited,
        ),
        (
            529,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            ModelErrorKind::Overloaded,
        ),
    ];
    for (status, body, kind) in cases {
        let mut reply = Reply::json(status, body);
        if status == 529 {
            // The provider's own word wins over the status.
            reply = reply.header("x-should-retry", "false");
        }
        let server = ReplayServer::start([reply, fx("text.sse")]);
        let (events, error) = answer(&quick_model(&server)).await;
        let error = error.expect("an error");
        assert!(events.is_empty());
        assert_eq!(error.kind, kind, "{status} {body}");
        assert_no_key(&error);
        assert_eq!(server.request_count(), 1, "{status} is not retried");
        if status == 401 {
            assert!(!error.message.contains("x-api-key"), "{}", error.message);
        } else {
            assert!(
                error.message.contains(&status.to_string()),
                "{}",
                error.message
            );
        }
    }
}

#[tokio::test]
async fn protocol_violations_are_invalid_stream_errors() {
    let start = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1}}}\n\n";
    let text = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"a\"}}\n\n";
    let cases = [
        // A delta for a block that never started.
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"text_delta\",\"text\":\"a\"}}\n\n".to_owned(),
        // message_stop with a block open.
        format!("{text}event: message_stop\ndata: {{\"type\":\"message_stop\"}}\n\n"),
        // Arguments into a text block.
        format!("{text}event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"input_json_delta\",\"partial_json\":\"{{\"}}}}\n\n"),
        // Not JSON.
        format!("{text}event: content_block_delta\ndata: {{not json\n\n"),
    ];
    for case in cases {
        let server = ReplayServer::start([Reply::sse(format!("{start}{case}"))]);
        let (events, error) = answer(&quick_model(&server)).await;
        assert_eq!(
            error.as_ref().map(|e| e.kind),
            Some(ModelErrorKind::InvalidStream),
            "{case}: {error:?}"
        );
        assert_valid_prefix(&events);
    }
}

#[tokio::test]
async fn unknown_events_and_blocks_are_skipped() {
    let body = fixture_text("anthropic/text.sse").replace(
        "event: content_block_start",
        "event: some_future_event\ndata: {\"type\":\"some_future_event\",\"x\":1}\n\n\
         event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":9,\"content_block\":{\"type\":\"server_tool_use\",\"id\":\"srvtoolu_1\",\"name\":\"web_search\",\"input\":{}}}\n\n\
         event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":9,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n\n\
         event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":9}\n\n\
         event: content_block_start",
    );
    let (response, events) = response_of(Reply::sse(body)).await;
    assert_eq!(
        response.parts,
        [AssistantPart::Text {
            text: "Hello! How can I help you today?".into()
        }]
    );
    assert!(matches!(
        events
            .iter()
            .find(|e| matches!(e, StreamEvent::PartStart { .. })),
        Some(StreamEvent::PartStart { index: 0, .. })
    ));
}

#[tokio::test]
async fn collected_answer_matches_the_streamed_one() {
    use burrow_runtime::model::Model;
    let server = ReplayServer::start([fx("tool_calls_parallel.sse")]);
    let messages = hello();
    let stream = model(&server)
        .stream(plain(&messages))
        .await
        .expect("a stream");
    let response = collect(stream).await.expect("an answer");
    assert_eq!(response.parts.len(), 3);
    assert_eq!(response.usage, usage(Some(472), Some(89), None, None));
}

#[tokio::test(start_paused = true)]
async fn a_stream_closed_after_its_stop_reason_without_message_stop_completes() {
    let text = fixture_text("anthropic/text.sse");
    let cut = text.split("event: message_stop").next().unwrap().to_owned();
    let (response, events) = response_of(Reply::sse(cut)).await;
    assert_well_formed(&events);
    assert_eq!(response.finish, FinishReason::Stop);
}

/// A tool whose type Anthropic defines (the memory tool) is sent as that
/// type, with the beta its requests must name; a plain request names none.
#[tokio::test]
async fn a_native_tool_is_sent_as_its_type_with_its_beta() {
    use burrow_runtime::model::{Model, ToolDefinition};
    let server = ReplayServer::start([fx("text.sse"), fx("text.sse")]);
    let model = model(&server);
    let mut tools = tools();
    tools.push(ToolDefinition {
        name: "memory".into(),
        description: "Your memory directory.".into(),
        input_schema: json!({"type": "object", "properties": {"command": {"type": "string"}}}),
        native_type: Some("memory_20250818".into()),
    });
    let messages = hello();
    let settings = ModelSettings::default();
    let (_, error) = drain(
        model
            .stream(request("", &messages, &tools, &settings))
            .await
            .unwrap(),
    )
    .await;
    assert!(error.is_none(), "{error:?}");
    let (_, error) = answer(&model).await;
    assert!(error.is_none(), "{error:?}");

    let requests = server.requests();
    let sent = body(&requests[0]);
    assert_eq!(sent["tools"][0]["name"], json!("read_file"));
    assert!(sent["tools"][0]["input_schema"].is_object());
    assert_eq!(
        sent["tools"][2],
        json!({"type": "memory_20250818", "name": "memory"})
    );
    assert_eq!(
        requests[0].header("anthropic-beta"),
        Some("context-management-2025-06-27")
    );
    assert_eq!(requests[1].header("anthropic-beta"), None);
}

#[tokio::test]
async fn ids_made_up_for_tool_use_blocks_without_ids_are_unique_across_turns() {
    // The parallel-calls fixture with both `tool_use` ids left empty, twice.
    let without_ids = fixture_text("anthropic/tool_calls_parallel.sse")
        .replace("\"id\":\"toolu_01A\"", "\"id\":\"\"")
        .replace("\"id\":\"toolu_01B\"", "\"id\":\"\"");
    assert_eq!(without_ids.matches("\"id\":\"\"").count(), 2);
    let server = ReplayServer::start([
        Reply::sse(without_ids.clone()),
        Reply::sse(without_ids),
        sse("anthropic/text.sse"),
    ]);
    made_up_ids_across_turns(Arc::new(model(&server)), &server, 2).await;
}
