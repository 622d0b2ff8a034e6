//! OpenAI Responses against recorded event streams: text, reasoning kept and sent back with the tool results, calls by item and call id, usage, incomplete and failed answers, errors, retries and the request's golden JSON.

use std::time::Duration;

use burrow_models::openai::OpenAiResponses;
use burrow_runtime::message::{AssistantPart, Message, ToolCall, ToolResult, Usage};
use burrow_runtime::model::{
    FinishReason, Model, ModelError, ModelErrorKind, ModelResponse, ResponseBuilder, StreamEvent,
};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::support::*;

fn model(server: &ReplayServer) -> OpenAiResponses {
    OpenAiResponses::new("o4-mini", config(server)).unwrap()
}

async fn answer(
    server: &ReplayServer,
) -> Result<(Vec<StreamEvent>, Option<ModelError>), ModelError> {
    let messages = [Message::user("hi")];
    settle(model(server).stream(plain(&messages)).await).await
}

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

#[tokio::test]
async fn every_fixture_is_a_well_formed_stream() {
    for name in [
        "text",
        "reasoning_tools",
        "fragments_utf8",
        "incomplete",
        "invalid_arguments",
        "usage_absent",
        "whole_items",
    ] {
        let server = ReplayServer::start([sse(&format!("openai_responses/{name}.sse"))]);
        let (events, error) = answer(&server).await.unwrap();
        assert!(error.is_none(), "{name}: {error:?}");
        assert_well_formed(&events);
    }
}

#[tokio::test]
async fn plain_text_with_usage() {
    let server = ReplayServer::start([sse("openai_responses/text.sse")]);
    let (events, error) = answer(&server).await.unwrap();
    assert!(error.is_none());
    assert_eq!(text_of(&events), "Hi there! How can I help?");
    assert_eq!(
        events.last(),
        Some(&StreamEvent::Finish {
            reason: FinishReason::Stop
        })
    );
    assert!(events.contains(&StreamEvent::Usage(Usage {
        input_tokens: Some(37),
        output_tokens: Some(11),
        cache_read_tokens: Some(0),
        cache_write_tokens: None,
    })));
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/responses");
    let body = body(sent);
    assert_eq!(body["store"], json!(false));
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(model(&server).name(), "openai-responses:o4-mini");
}

#[tokio::test]
async fn reasoning_is_kept_and_sent_back_before_its_calls() {
    let fixture = "openai_responses/reasoning_tools.sse";
    let (response, _) = fixture_answer(sse(fixture)).await;
    assert_eq!(response.finish, FinishReason::ToolCalls);
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: Some(20),
            output_tokens: Some(64),
            cache_read_tokens: Some(100),
            cache_write_tokens: None,
        }
    );
    let AssistantPart::Thinking { text, signature } = &response.parts[0] else {
        panic!("{:?}", response.parts)
    };
    assert_eq!(
        text,
        "**Reading files**\n\nThe user wants both files read.\n\n**Plan**\n\nCall read_file twice."
    );
    let item: Value = serde_json::from_str(signature.as_deref().unwrap()).unwrap();
    assert_eq!(
        item["id"],
        "rs_6820f383d7c08191846711c5df8233bc0ac5ba57aafcbac7"
    );
    assert!(
        item["encrypted_content"]
            .as_str()
            .unwrap()
            .starts_with("gAAAA")
    );
    let calls = calls(&response);
    assert_eq!(calls.len(), 2);
    assert_eq!(
        calls[0].id, "call_CQwZ6QnTsvfYnCJ4w1G4Jkra",
        "answered by call_id"
    );
    assert_eq!(calls[0].arguments, json!({"file_path": "/a.txt"}));
    assert_eq!(calls[1].arguments, json!({"file_path": "/b.txt"}));

    // The next turn carries the reasoning item verbatim, then the calls and their outputs.
    let mut history = vec![Message::user("hi"), response.clone().into_message()];
    for call in &calls {
        history.push(Message::ToolResult(ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content: "text".into(),
            is_error: false,
        }));
    }
    let server = ReplayServer::start([sse("openai_responses/text.sse")]);
    drain(model(&server).stream(plain(&history)).await.unwrap()).await;
    let input = body(&server.requests()[0])["input"].clone();
    assert_eq!(
        input[1], item,
        "the reasoning item as it stood at output_item.done"
    );
    assert_eq!(input[2]["type"], "function_call");
    assert_eq!(input[2]["call_id"], "call_CQwZ6QnTsvfYnCJ4w1G4Jkra");
    assert_eq!(input[4]["type"], "function_call_output");
    assert_eq!(input[4]["call_id"], "call_CQwZ6QnTsvfYnCJ4w1G4Jkra");
}

#[tokio::test]
async fn arguments_in_many_fragments_split_inside_utf8() {
    let (response, _) =
        fixture_answer(sse("openai_responses/fragments_utf8.sse").chunks_of(7)).await;
    assert_eq!(
        calls(&response)[0].arguments,
        json!({"file_path": "/notes/é✓.txt", "content": "héllo wörld ✓ 日本"})
    );
}

#[tokio::test]
async fn items_sent_whole_without_deltas() {
    let (response, _) = fixture_answer(sse("openai_responses/whole_items.sse")).await;
    assert_eq!(
        response.parts[0],
        AssistantPart::Text {
            text: "Whole.".into()
        }
    );
    assert_eq!(
        calls(&response)[0].arguments,
        json!({"file_path": "/a.txt"})
    );
}

#[tokio::test]
async fn incomplete_answers_and_absent_usage() {
    let (response, _) = fixture_answer(sse("openai_responses/incomplete.sse")).await;
    assert_eq!(response.finish, FinishReason::MaxTokens);
    assert_eq!(response.usage.output_tokens, Some(16));
    let (response, _) = fixture_answer(sse("openai_responses/usage_absent.sse")).await;
    assert!(response.usage.is_unknown());
}

#[tokio::test]
async fn invalid_arguments_reach_the_caller_as_text() {
    let (response, _) = fixture_answer(sse("openai_responses/invalid_arguments.sse")).await;
    let calls = calls(&response);
    assert_eq!(
        calls[0].arguments,
        Value::String("{\"file_path\": \"/a.txt\"".into()),
        "kept as text for an error result, never {{}}"
    );
    assert_eq!(calls[1].arguments, json!({"file_path": "/b.txt"}));
}

#[tokio::test(start_paused = true)]
async fn an_error_event_before_the_text_is_retried() {
    let server = ReplayServer::start([
        sse("openai_responses/error_before_text.sse"),
        sse("openai_responses/text.sse"),
    ]);
    let t0 = Instant::now();
    let (events, error) = answer(&server).await.unwrap();
    assert!(error.is_none());
    assert_eq!(t0.elapsed(), Duration::from_millis(500));
    assert_eq!(text_of(&events), "Hi there! How can I help?");
}

#[tokio::test(start_paused = true)]
async fn an_error_event_after_the_text_ends_the_answer() {
    let server = ReplayServer::start([
        sse("openai_responses/error_after_text.sse"),
        sse("openai_responses/text.sse"),
    ]);
    let (events, error) = answer(&server).await.unwrap();
    assert_eq!(server.request_count(), 1);
    assert_eq!(text_of(&events), "Partial");
    assert_eq!(error.unwrap().kind, ModelErrorKind::Server);
}

#[tokio::test(start_paused = true)]
async fn a_failed_response_is_an_error_of_its_code() {
    let server = ReplayServer::start([
        sse("openai_responses/failed.sse"),
        sse("openai_responses/failed.sse"),
        sse("openai_responses/failed.sse"),
    ]);
    let error = answer(&server).await.err().unwrap();
    assert_eq!(error.kind, ModelErrorKind::Server);
    assert_eq!(server.request_count(), 3);
    assert!(
        error.message.contains("failed to generate"),
        "{}",
        error.message
    );
}

#[tokio::test(start_paused = true)]
async fn drops_and_missing_completion() {
    let server = ReplayServer::start([
        sse("openai_responses/text.sse").cut_before("\"delta\":\"Hi\""),
        sse("openai_responses/text.sse"),
    ]);
    let (events, error) = answer(&server).await.unwrap();
    assert!(error.is_none());
    assert_eq!(server.request_count(), 2);
    assert_eq!(text_of(&events), "Hi there! How can I help?");

    let server =
        ReplayServer::start([sse("openai_responses/text.sse").cut_before("\"delta\":\" there\"")]);
    let (events, error) = answer(&server).await.unwrap();
    assert_eq!(text_of(&events), "Hi");
    assert_eq!(error.unwrap().kind, ModelErrorKind::Transport);

    let server = ReplayServer::start([sse("openai_responses/no_completed.sse")]);
    let (events, error) = answer(&server).await.unwrap();
    assert_eq!(text_of(&events), "Hello");
    assert_eq!(error.unwrap().kind, ModelErrorKind::Transport);
}

#[tokio::test(start_paused = true)]
async fn statuses_429_and_401() {
    let server = ReplayServer::start([
        Reply::json(429, r#"{"error":{"message":"Rate limit reached.","type":"requests","code":"rate_limit_exceeded"}}"#)
            .header("retry-after-ms", "250"),
        sse("openai_responses/text.sse"),
    ]);
    let t0 = Instant::now();
    answer(&server).await.unwrap();
    assert_eq!(t0.elapsed(), Duration::from_millis(250));

    let server = ReplayServer::start([Reply::json(
        401,
        r#"{"error":{"message":"Incorrect API key provided."}}"#,
    )]);
    let error = answer(&server).await.err().unwrap();
    assert_eq!(error.kind, ModelErrorKind::Authentication);
    assert_eq!(server.request_count(), 1);
    assert_no_key(&error);
}

#[tokio::test]
async fn the_request_matches_its_golden_file() {
    let server = ReplayServer::start([sse("openai_responses/text.sse")]);
    let model = model(&server).with_parallel_tool_calls(true);
    let item = json!({"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": "I should read the file first."}], "encrypted_content": "gAAAAB-opaque"});
    let messages = conversation(&item.to_string());
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
    assert_golden(
        "openai_responses/request.json",
        &body(&server.requests()[0]),
    );

    // Thinking from another provider cannot be sent back and is left out.
    let foreign = conversation("anthropic-signature");
    let body = model.request_body(request("", &foreign, &tools, &settings));
    assert!(
        !body["input"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["type"] == "reasoning"),
        "{body}"
    );
}

#[tokio::test]
async fn ids_made_up_for_function_calls_without_ids_are_unique_across_turns() {
    // The whole-items fixture's function call with neither `call_id` nor `id`, twice.
    let without_ids = fixture_text("openai_responses/whole_items.sse")
        .replace("\"id\":\"fc_w\",", "")
        .replace(",\"call_id\":\"call_w\"", "");
    assert!(!without_ids.contains("call_w") && !without_ids.contains("fc_w"));
    let server = ReplayServer::start([
        Reply::sse(without_ids.clone()),
        Reply::sse(without_ids),
        sse("openai_responses/text.sse"),
    ]);
    made_up_ids_across_turns(std::sync::Arc::new(model(&server)), &server, 1).await;
}
