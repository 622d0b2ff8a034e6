//! OpenAI chat completions against recorded streams: text, parallel calls, the broken-index shapes of compatible servers, usage, errors, retries, the request's golden JSON, a call whose arguments are not JSON never being run, and call ids a server leaves out, repeats or reuses renamed consistently through the agent loop.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use burrow_models::openai::OpenAiChat;
use burrow_runtime::agent::{Agent, Outcome};
use burrow_runtime::message::{AssistantPart, Message, ToolCall, Usage};
use burrow_runtime::model::{
    FinishReason, Model, ModelError, ModelErrorKind, ModelResponse, ModelSettings, ResponseBuilder,
    StreamEvent, ToolChoice,
};
use burrow_runtime::tool::{ToolOutput, ToolRegistry};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::time::Instant;

use super::support::*;

fn model(server: &ReplayServer) -> OpenAiChat {
    OpenAiChat::new("gpt-4.1", config(server)).unwrap()
}

/// Streams one plain request from `server`: the events and the final error.
async fn answer(
    server: &ReplayServer,
) -> Result<(Vec<StreamEvent>, Option<ModelError>), ModelError> {
    let messages = [Message::user("hi")];
    settle(model(server).stream(plain(&messages)).await).await
}

/// The whole answer to a plain request served from fixture `rel`, checked well formed.
async fn fixture_answer(reply: Reply) -> (ModelResponse, Vec<StreamEvent>) {
    let server = ReplayServer::start([reply]);
    let (events, error) = answer(&server).await.unwrap();
    assert!(error.is_none(), "{error:?}");
    assert_well_formed(&events);
    let mut builder = ResponseBuilder::new();
    for e in events.clone() {
        builder.push(e).unwrap();
    }
    (builder.finish().unwrap(), events)
}

fn calls(response: &ModelResponse) -> Vec<ToolCall> {
    response
        .parts
        .iter()
        .filter_map(|p| match p {
            AssistantPart::ToolCall(c) => Some(c.clone()),
            _ => None,
        })
        .collect()
}

fn read(id: &str, path: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "read_file".into(),
        arguments: json!({"file_path": path}),
    }
}

#[tokio::test]
async fn every_fixture_is_a_well_formed_stream() {
    for name in [
        "text",
        "parallel_tools",
        "fragments_utf8",
        "ollama_all_index_zero",
        "missing_index",
        "id_on_first_fragment_only",
        "wrong_index_head",
        "usage_absent",
        "usage_partial",
        "usage_cumulative",
        "invalid_arguments",
        "refusal",
        "length",
    ] {
        let server = ReplayServer::start([sse(&format!("openai_chat/{name}.sse"))]);
        let (events, error) = answer(&server).await.unwrap();
        assert!(error.is_none(), "{name}: {error:?}");
        assert_well_formed(&events);
    }
}

#[tokio::test]
async fn plain_text_with_usage() {
    let server = ReplayServer::start([sse("openai_chat/text.sse")]);
    let (events, error) = answer(&server).await.unwrap();
    assert!(error.is_none());
    assert_eq!(text_of(&events), "Hello! How can I help?");
    assert_eq!(
        events.last(),
        Some(&StreamEvent::Finish {
            reason: FinishReason::Stop
        })
    );
    assert!(events.contains(&StreamEvent::Usage(Usage {
        input_tokens: Some(19),
        output_tokens: Some(10),
        cache_read_tokens: Some(0),
        cache_write_tokens: None,
    })));
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/chat/completions");
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {TEST_KEY}").as_str())
    );
    let body = body(sent);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["model"], "gpt-4.1");
    assert_eq!(model(&server).name(), "openai:gpt-4.1");
}

#[tokio::test]
async fn two_parallel_tool_calls_and_cached_usage() {
    let (response, _) = fixture_answer(sse("openai_chat/parallel_tools.sse")).await;
    assert_eq!(
        calls(&response),
        [
            read("call_a1", "/a.txt"),
            ToolCall {
                id: "call_b2".into(),
                name: "write_file".into(),
                arguments: json!({"file_path": "/b.txt", "content": "hi"}),
            }
        ]
    );
    assert_eq!(response.finish, FinishReason::ToolCalls);
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: Some(16),
            output_tokens: Some(40),
            cache_read_tokens: Some(64),
            cache_write_tokens: None,
        }
    );
}

#[tokio::test]
async fn arguments_in_many_fragments_split_inside_utf8() {
    let (response, events) =
        fixture_answer(sse("openai_chat/fragments_utf8.sse").chunks_of(5)).await;
    let fragments = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::ArgumentsDelta { .. }))
        .count();
    assert!(fragments > 20, "{fragments}");
    assert_eq!(
        calls(&response)[0].arguments,
        json!({"file_path": "/notes/é✓.txt", "content": "héllo wörld ✓ 日本"})
    );
    assert_eq!(
        response.parts[0],
        AssistantPart::Text {
            text: "Writing. ".into()
        }
    );
}

#[tokio::test]
async fn servers_that_put_every_call_at_index_zero() {
    let (response, _) = fixture_answer(sse("openai_chat/ollama_all_index_zero.sse")).await;
    assert_eq!(
        calls(&response),
        [read("call_o1", "/a.txt"), read("call_o2", "/b.txt")]
    );
}

#[tokio::test]
async fn servers_that_omit_the_index() {
    let (response, _) = fixture_answer(sse("openai_chat/missing_index.sse")).await;
    assert_eq!(
        calls(&response),
        [read("call_g1", "/a.txt"), read("call_g2", "/b.txt")]
    );
    assert_eq!(response.usage, Usage::UNKNOWN);
}

#[tokio::test]
async fn ids_only_on_each_calls_first_fragment() {
    let (response, _) = fixture_answer(sse("openai_chat/id_on_first_fragment_only.sse")).await;
    assert_eq!(
        calls(&response),
        [read("call_f1", "/a.txt"), read("call_f2", "/b.txt")]
    );
}

#[tokio::test]
async fn a_second_call_headed_with_the_wrong_index() {
    let (response, _) = fixture_answer(sse("openai_chat/wrong_index_head.sse")).await;
    assert_eq!(
        calls(&response),
        [read("call_d1", "/a.txt"), read("call_d2", "/b.txt")]
    );
    assert_eq!(
        response.parts[0],
        AssistantPart::Thinking {
            text: "Two files to read.".into(),
            signature: None
        }
    );
    assert_eq!(response.usage.input_tokens, Some(20));
}

#[tokio::test]
async fn usage_absent_partial_and_cumulative() {
    let (absent, _) = fixture_answer(sse("openai_chat/usage_absent.sse")).await;
    assert!(absent.usage.is_unknown(), "unknown, not zero");
    let (partial, _) = fixture_answer(sse("openai_chat/usage_partial.sse")).await;
    assert_eq!(
        partial.usage,
        Usage {
            output_tokens: Some(2),
            ..Usage::UNKNOWN
        }
    );
    let (cumulative, events) = fixture_answer(sse("openai_chat/usage_cumulative.sse")).await;
    let snapshots = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::Usage(_)))
        .count();
    assert_eq!(snapshots, 3);
    assert_eq!(cumulative.usage.input_tokens, Some(12));
    assert_eq!(cumulative.usage.output_tokens, Some(3));
}

#[tokio::test]
async fn refusals_and_the_token_limit() {
    let (refusal, _) = fixture_answer(sse("openai_chat/refusal.sse")).await;
    assert_eq!(refusal.finish, FinishReason::Refusal);
    assert_eq!(
        refusal.parts,
        [AssistantPart::Text {
            text: "I'm sorry, I can't help with that.".into()
        }]
    );
    let (length, _) = fixture_answer(sse("openai_chat/length.sse")).await;
    assert_eq!(length.finish, FinishReason::MaxTokens);
}

#[tokio::test(start_paused = true)]
async fn an_in_stream_error_before_the_text_is_retried() {
    let server = ReplayServer::start([
        sse("openai_chat/error_before_text.sse"),
        sse("openai_chat/text.sse"),
    ]);
    let t0 = Instant::now();
    let (events, error) = answer(&server).await.unwrap();
    assert!(error.is_none());
    assert_eq!(server.request_count(), 2);
    assert_eq!(t0.elapsed(), Duration::from_millis(500));
    assert_eq!(text_of(&events), "Hello! How can I help?");
}

#[tokio::test(start_paused = true)]
async fn an_in_stream_error_after_the_text_ends_the_answer() {
    let server = ReplayServer::start([
        sse("openai_chat/error_after_text.sse"),
        sse("openai_chat/text.sse"),
    ]);
    let (events, error) = answer(&server).await.unwrap();
    let error = error.unwrap();
    assert_eq!(server.request_count(), 1);
    assert_eq!(text_of(&events), "Partial answer");
    assert_eq!(error.kind, ModelErrorKind::Server);
    assert!(error.message.contains("server_error"), "{}", error.message);
}

#[tokio::test(start_paused = true)]
async fn a_connection_dropped_before_the_first_part_is_retried() {
    let server = ReplayServer::start([
        sse("openai_chat/text.sse").cut_before("\"Hello\""),
        sse("openai_chat/text.sse"),
    ]);
    let (events, error) = answer(&server).await.unwrap();
    assert!(error.is_none());
    assert_eq!(server.request_count(), 2);
    assert_eq!(text_of(&events), "Hello! How can I help?");
}

#[tokio::test(start_paused = true)]
async fn a_connection_dropped_after_the_first_part_is_a_transport_error() {
    let server = ReplayServer::start([
        sse("openai_chat/text.sse").cut_before("\" How\""),
        sse("openai_chat/text.sse"),
    ]);
    let (events, error) = answer(&server).await.unwrap();
    assert_eq!(server.request_count(), 1);
    assert_eq!(text_of(&events), "Hello!");
    assert_eq!(error.unwrap().kind, ModelErrorKind::Transport);
}

#[tokio::test(start_paused = true)]
async fn a_stream_that_ends_after_its_finish_reason_without_done_completes() {
    let server = ReplayServer::start([sse("openai_chat/no_done.sse")]);
    let (events, error) = answer(&server).await.unwrap();
    assert!(error.is_none(), "{error:?}");
    assert_well_formed(&events);
    assert_eq!(text_of(&events), "Hello");
    assert_eq!(
        events.last(),
        Some(&StreamEvent::Finish {
            reason: FinishReason::Stop
        })
    );
    assert!(
        events.iter().any(|e| matches!(e, StreamEvent::Usage(_))),
        "the usage chunk before the close is kept"
    );
    assert_eq!(server.request_count(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_stream_cut_before_its_finish_reason_is_a_transport_failure() {
    let text = fixture_text("openai_chat/no_done.sse");
    let cut = Reply::sse(text.clone()).cut_before("\"finish_reason\":\"stop\"");
    let server = ReplayServer::start([cut]);
    let (events, error) = answer(&server).await.unwrap();
    assert_eq!(text_of(&events), "Hello");
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, StreamEvent::Finish { .. })),
        "no finish without a finish_reason"
    );
    assert_eq!(error.unwrap().kind, ModelErrorKind::Transport);
}

/// An answer of `read_file` calls, each `(id, path)`; an id of `None` is left
/// out (as some compatible servers do), and servers that number `call_0` in
/// every turn or send one id for several calls are given theirs.
fn read_calls(calls: &[(Option<&str>, &str)]) -> Reply {
    let chunk = |delta: &str, finish: &str| {
        format!(
            "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":{finish}}}]}}\n\n"
        )
    };
    let mut text = String::new();
    for (index, (id, path)) in calls.iter().enumerate() {
        let id = id.map(|id| format!("\"id\":\"{id}\",")).unwrap_or_default();
        text.push_str(&chunk(
            &format!(
                "{{\"tool_calls\":[{{\"index\":{index},{id}\"type\":\"function\",\"function\":{{\"name\":\"read_file\",\"arguments\":\"{{\\\"file_path\\\":\\\"{path}\\\"}}\"}}}}]}}"
            ),
            "null",
        ));
    }
    text.push_str(&chunk("{}", "\"tool_calls\""));
    text.push_str("data: [DONE]\n\n");
    Reply::sse(text)
}

/// Runs an agent whose `read_file` counts its calls against `server`; returns
/// the outcome, how many calls ran, and the call ids of the results in order.
async fn run_counting_reads(server: &ReplayServer, prompt: &str) -> (Outcome, usize, Vec<String>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut tools = ToolRegistry::new();
    let counter = runs.clone();
    tools.add_typed("read_file", "Read a file.", move |_: ReadArgs, _| {
        counter.fetch_add(1, Ordering::SeqCst);
        async { Ok(ToolOutput::ok("contents")) }
    });
    let agent = Agent::new(Arc::new(model(server))).with_tools(tools);
    let mut history = Vec::new();
    let result = agent.run(&mut history, prompt).await;
    let ids = history
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult(r) => Some(r.call_id.clone()),
            _ => None,
        })
        .collect();
    (result.outcome, runs.load(Ordering::SeqCst), ids)
}

/// The call ids a request sent on its assistant messages' calls and on its tool results.
fn sent_ids(request: &Recorded) -> (Vec<String>, Vec<String>) {
    let sent = body(request);
    let mut calls = Vec::new();
    let mut results = Vec::new();
    for message in sent["messages"].as_array().unwrap() {
        for call in message["tool_calls"].as_array().into_iter().flatten() {
            calls.push(call["id"].as_str().unwrap().to_owned());
        }
        if let Some(id) = message["tool_call_id"].as_str() {
            results.push(id.to_owned());
        }
    }
    (calls, results)
}

#[tokio::test]
async fn ids_made_up_for_calls_without_ids_are_unique_across_turns() {
    let without_ids = || read_calls(&[(None, "/a.txt"), (None, "/b.txt")]);
    let server = ReplayServer::start([without_ids(), without_ids(), sse("openai_chat/text.sse")]);
    let (outcome, runs, ids) = run_counting_reads(&server, "read both, twice").await;
    assert_eq!(outcome, Outcome::Completed, "{outcome:?}");
    assert_eq!(runs, 4, "every call ran");
    assert_eq!(ids.len(), 4);
    let distinct: std::collections::HashSet<&String> = ids.iter().collect();
    assert_eq!(distinct.len(), 4, "made-up ids repeat: {ids:?}");
    assert!(
        ids.iter().all(|id| id.starts_with("call_burrow_")),
        "{ids:?}"
    );
    // The provider sees the same ids on the calls and on their results.
    assert_eq!(sent_ids(&server.requests()[2]), (ids.clone(), ids));
}

#[tokio::test]
async fn ids_a_server_repeats_in_a_turn_and_reuses_across_turns_are_renamed_consistently() {
    let server = ReplayServer::start([
        read_calls(&[(Some("call_0"), "/a.txt"), (Some("call_0"), "/a.txt")]),
        read_calls(&[(Some("call_0"), "/a.txt")]),
        sse("openai_chat/text.sse"),
    ]);
    let (outcome, runs, ids) = run_counting_reads(&server, "read it three times").await;
    assert_eq!(outcome, Outcome::Completed, "{outcome:?}");
    assert_eq!(runs, 3, "every call ran once");
    assert_eq!(ids, ["call_0", "call_0-2", "call_0-3"]);
    // Every later request sends the renamed ids on the calls and their results.
    for (request, expected) in server.requests()[1..].iter().zip([2, 3]) {
        let prefix = ids[..expected].to_vec();
        assert_eq!(sent_ids(request), (prefix.clone(), prefix));
    }
}

fn rate_limited() -> Reply {
    Reply::json(
        429,
        r#"{"error":{"message":"Rate limit reached for gpt-4.1 on tokens per min (TPM). Please try again in 1.5s.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}"#,
    )
}

#[tokio::test(start_paused = true)]
async fn rate_limits_wait_as_each_retry_after_form_says() {
    let date = httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(4));
    let server = ReplayServer::start([
        rate_limited().header("retry-after-ms", "1500"),
        rate_limited().header("retry-after", "3"),
        sse("openai_chat/text.sse"),
    ]);
    let t0 = Instant::now();
    let (events, _) = answer(&server).await.unwrap();
    assert_eq!(t0.elapsed(), Duration::from_millis(4500));
    assert_eq!(text_of(&events), "Hello! How can I help?");

    let server = ReplayServer::start([
        rate_limited().header("retry-after", &date),
        sse("openai_chat/text.sse"),
    ]);
    let t0 = Instant::now();
    answer(&server).await.unwrap();
    let waited = t0.elapsed();
    assert!(
        (Duration::from_secs(2)..=Duration::from_secs(4)).contains(&waited),
        "{waited:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn overload_statuses_are_retried_then_reported() {
    let overloaded = || {
        Reply::json(
            503,
            r#"{"error":{"message":"The engine is currently overloaded, please try again later.","type":"server_error"}}"#,
        )
    };
    let server = ReplayServer::start([overloaded(), Reply::json(529, "{}"), overloaded()]);
    let error = answer(&server).await.err().unwrap();
    assert_eq!(error.kind, ModelErrorKind::Overloaded);
    assert_eq!(server.request_count(), 3);
    assert!(error.message.contains("overloaded"), "{}", error.message);
}

#[tokio::test(start_paused = true)]
async fn unauthorized_is_reported_at_once_without_the_key() {
    let body = format!(
        r#"{{"error":{{"message":"Incorrect API key provided: {TEST_KEY}.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}}}"#
    );
    let server = ReplayServer::start([Reply::json(401, body), sse("openai_chat/text.sse")]);
    let error = answer(&server).await.err().unwrap();
    assert_eq!(error.kind, ModelErrorKind::Authentication);
    assert_eq!(server.request_count(), 1);
    assert_no_key(&error);
}

#[tokio::test(start_paused = true)]
async fn context_length_quota_and_json_answers() {
    let server = ReplayServer::start([Reply::json(
        400,
        r#"{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
    )]);
    let error = answer(&server).await.err().unwrap();
    assert_eq!(error.kind, ModelErrorKind::ContextTooLong);
    assert_eq!(server.request_count(), 1);

    let server = ReplayServer::start([Reply::json(
        429,
        r#"{"error":{"message":"You exceeded your current quota.","type":"insufficient_quota","code":"insufficient_quota"}}"#,
    )]);
    let error = answer(&server).await.err().unwrap();
    assert_eq!(error.kind, ModelErrorKind::RateLimited);
    assert_eq!(server.request_count(), 1, "a spent quota is not retried");

    let server = ReplayServer::start([Reply::json(200, r#"{"choices":[]}"#)]);
    let error = answer(&server).await.err().unwrap();
    assert!(
        error.message.contains("not an event stream"),
        "{}",
        error.message
    );
}

#[tokio::test]
async fn the_request_matches_its_golden_file() {
    let server = ReplayServer::start([sse("openai_chat/text.sse")]);
    let model = model(&server).with_parallel_tool_calls(true);
    let messages = conversation("sig-anthropic-style");
    let tools = tools();
    let settings = golden_settings();
    let stream = model
        .stream(request(
            "You are a careful agent.",
            &messages,
            &tools,
            &settings,
        ))
        .await
        .unwrap();
    drain(stream).await;
    let sent = body(&server.requests()[0]);
    assert_golden("openai_chat/request.json", &sent);
    assert_eq!(
        sent,
        model.request_body(request(
            "You are a careful agent.",
            &messages,
            &tools,
            &settings
        ))
    );
}

#[tokio::test]
async fn tool_choice_forms() {
    let server = ReplayServer::start([]);
    let model = model(&server);
    let messages = [Message::user("hi")];
    let tools = tools();
    let choice = |c: ToolChoice| {
        let settings = ModelSettings {
            tool_choice: c,
            ..ModelSettings::default()
        };
        model.request_body(request("", &messages, &tools, &settings))["tool_choice"].clone()
    };
    assert_eq!(choice(ToolChoice::None), json!("none"));
    assert_eq!(choice(ToolChoice::Required), json!("required"));
    assert_eq!(
        choice(ToolChoice::Tool("read_file".into())),
        json!({"type": "function", "function": {"name": "read_file"}})
    );
    let body = model.request_body(plain(&messages));
    assert!(body.get("tools").is_none() && body.get("tool_choice").is_none());
}

#[derive(Deserialize, JsonSchema)]
struct ReadArgs {
    /// The file.
    #[allow(dead_code)]
    file_path: String,
}

#[tokio::test]
async fn a_call_whose_arguments_are_not_json_is_answered_not_run() {
    let server = ReplayServer::start([
        sse("openai_chat/invalid_arguments.sse"),
        sse("openai_chat/text.sse"),
    ]);
    let runs = Arc::new(AtomicUsize::new(0));
    let mut tools = ToolRegistry::new();
    let counter = runs.clone();
    tools.add_typed("read_file", "Read a file.", move |_: ReadArgs, _| {
        counter.fetch_add(1, Ordering::SeqCst);
        async { Ok(ToolOutput::ok("contents")) }
    });
    let agent = Agent::new(Arc::new(model(&server))).with_tools(tools);
    let mut history = Vec::new();
    let result = agent.run(&mut history, "read both").await;
    assert_eq!(result.outcome, Outcome::Completed);
    assert_eq!(runs.load(Ordering::SeqCst), 1, "only the valid call ran");
    let results: Vec<_> = history
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult(r) => Some(r.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].call_id, "call_bad");
    assert!(results[0].is_error, "{}", results[0].content);
    assert!(
        results[0].content.contains("not valid JSON"),
        "{}",
        results[0].content
    );
    assert!(!results[1].is_error);
    // The broken text goes back to the model as it was, with its error result.
    let second = body(&server.requests()[1]);
    let sent_call = &second["messages"][1]["tool_calls"][0]["function"]["arguments"];
    assert_eq!(
        sent_call,
        &Value::String("{\"file_path\": \"/a.txt\"".into())
    );
}

/// A tool with a provider-native type (the memory tool) is an ordinary
/// function for OpenAI: its name, description and schema.
#[tokio::test]
async fn a_native_tool_is_sent_as_a_function() {
    use burrow_runtime::model::{Model, ToolDefinition};
    let server = ReplayServer::start([sse("openai_chat/text.sse")]);
    let tools = vec![ToolDefinition {
        name: "memory".into(),
        description: "Your memory directory.".into(),
        input_schema: json!({"type": "object", "properties": {"command": {"type": "string"}}}),
        native_type: Some("memory_20250818".into()),
    }];
    let messages = [Message::user("hi")];
    let settings = ModelSettings::default();
    let (_, error) = settle(
        model(&server)
            .stream(request("", &messages, &tools, &settings))
            .await,
    )
    .await
    .unwrap();
    assert!(error.is_none(), "{error:?}");
    let sent = body(&server.requests()[0]);
    assert_eq!(sent["tools"][0]["type"], json!("function"));
    assert_eq!(sent["tools"][0]["function"]["name"], json!("memory"));
    assert_eq!(
        sent["tools"][0]["function"]["parameters"],
        tools[0].input_schema
    );
}
