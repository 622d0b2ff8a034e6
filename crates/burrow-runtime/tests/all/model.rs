//! Messages, usage, the stream check, collecting a stream, and the scripted model.

use burrow_runtime::message::{AssistantPart, Message, ToolCall, Usage};
use burrow_runtime::model::{
    FinishReason, Model, ModelErrorKind, ModelRequest, ModelSettings, PartKind, ScriptedModel,
    ScriptedResponse, StreamEvent, StreamViolation, check_stream, collect, complete,
};
use futures::StreamExt;
use serde_json::json;

fn start(index: usize, part: PartKind) -> StreamEvent {
    StreamEvent::PartStart { index, part }
}
fn text(index: usize, t: &str) -> StreamEvent {
    StreamEvent::TextDelta {
        index,
        text: t.into(),
    }
}
fn args(index: usize, j: &str) -> StreamEvent {
    StreamEvent::ArgumentsDelta {
        index,
        json: j.into(),
    }
}
fn end(index: usize) -> StreamEvent {
    StreamEvent::PartEnd { index }
}
fn finish() -> StreamEvent {
    StreamEvent::Finish {
        reason: FinishReason::Stop,
    }
}
fn call(id: &str) -> PartKind {
    PartKind::ToolCall {
        id: id.into(),
        name: "read_file".into(),
    }
}

fn request<'a>(messages: &'a [Message], settings: &'a ModelSettings) -> ModelRequest<'a> {
    ModelRequest {
        system: "",
        messages,
        tools: &[],
        settings,
    }
}

#[test]
fn a_well_formed_stream_passes_the_check() {
    let events = [
        start(0, PartKind::Thinking),
        StreamEvent::ThinkingDelta {
            index: 0,
            text: "hm".into(),
        },
        StreamEvent::SignatureDelta {
            index: 0,
            signature: "sig".into(),
        },
        start(1, call("c1")),
        args(1, "{\"a\""),
        end(0),
        args(1, ":1}"),
        end(1),
        StreamEvent::Usage(Usage::UNKNOWN),
        finish(),
    ];
    assert_eq!(check_stream(&events), Ok(()));
}

#[test]
fn each_violation_is_named() {
    let cases: Vec<(Vec<StreamEvent>, StreamViolation)> = vec![
        (vec![text(0, "x"), finish()], StreamViolation::NotStarted(0)),
        (
            vec![start(0, PartKind::Text), end(0), text(0, "x"), finish()],
            StreamViolation::AlreadyEnded(0),
        ),
        (
            vec![start(0, PartKind::Text), end(0), end(0), finish()],
            StreamViolation::AlreadyEnded(0),
        ),
        (
            vec![start(0, PartKind::Text), start(0, PartKind::Text)],
            StreamViolation::DuplicateStart(0),
        ),
        (
            vec![start(0, PartKind::Text), args(0, "{}"), end(0), finish()],
            StreamViolation::WrongKind {
                index: 0,
                delta: "arguments",
            },
        ),
        (
            vec![
                start(0, PartKind::Text),
                start(1, call("c")),
                end(0),
                finish(),
            ],
            StreamViolation::OpenAtFinish(vec![1]),
        ),
        (vec![finish(), finish()], StreamViolation::SecondFinish),
        (
            vec![finish(), StreamEvent::Usage(Usage::UNKNOWN)],
            StreamViolation::AfterFinish,
        ),
        (
            vec![start(0, PartKind::Text), end(0)],
            StreamViolation::NoFinish,
        ),
    ];
    for (events, want) in cases {
        assert_eq!(check_stream(&events), Err(want.clone()), "{events:?}");
        assert!(!want.to_string().is_empty());
    }
}

#[tokio::test]
async fn collecting_joins_deltas_keeps_the_signature_and_parses_arguments_at_the_end() {
    let events = vec![
        start(0, PartKind::Thinking),
        StreamEvent::ThinkingDelta {
            index: 0,
            text: "let me ".into(),
        },
        StreamEvent::ThinkingDelta {
            index: 0,
            text: "think".into(),
        },
        StreamEvent::SignatureDelta {
            index: 0,
            signature: "EqAB".into(),
        },
        StreamEvent::SignatureDelta {
            index: 0,
            signature: "cd==".into(),
        },
        end(0),
        start(1, PartKind::Text),
        text(1, "Hello, "),
        text(1, "world"),
        end(1),
        start(2, call("c1")),
        args(2, "{\"file_path\": \"/a"),
        args(2, ".txt\"}"),
        end(2),
        start(3, call("c2")),
        args(3, "{not json"),
        end(3),
        start(4, call("c3")),
        end(4),
        StreamEvent::Usage(Usage {
            input_tokens: Some(10),
            output_tokens: Some(1),
            ..Usage::UNKNOWN
        }),
        StreamEvent::Usage(Usage {
            output_tokens: Some(42),
            ..Usage::UNKNOWN
        }),
        StreamEvent::Finish {
            reason: FinishReason::ToolCalls,
        },
    ];
    let response = collect(futures::stream::iter(events.into_iter().map(Ok)).boxed())
        .await
        .unwrap();
    assert_eq!(response.finish, FinishReason::ToolCalls);
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: Some(10),
            output_tokens: Some(42),
            cache_read_tokens: None,
            cache_write_tokens: None
        }
    );
    assert_eq!(
        response.parts,
        vec![
            AssistantPart::Thinking {
                text: "let me think".into(),
                signature: Some("EqABcd==".into())
            },
            AssistantPart::Text {
                text: "Hello, world".into()
            },
            AssistantPart::ToolCall(ToolCall {
                id: "c1".into(),
                name: "read_file".into(),
                arguments: json!({"file_path": "/a.txt"})
            }),
            AssistantPart::ToolCall(ToolCall {
                id: "c2".into(),
                name: "read_file".into(),
                arguments: json!("{not json")
            }),
            AssistantPart::ToolCall(ToolCall {
                id: "c3".into(),
                name: "read_file".into(),
                arguments: json!({})
            }),
        ]
    );
}

#[tokio::test]
async fn a_malformed_stream_is_an_invalid_stream_error() {
    let events = vec![start(0, PartKind::Text), text(0, "x")];
    let err = collect(futures::stream::iter(events.into_iter().map(Ok)).boxed())
        .await
        .unwrap_err();
    assert_eq!(err.kind, ModelErrorKind::InvalidStream);
}

#[test]
fn usage_keeps_unknown_apart_from_zero() {
    let mut total = Usage::UNKNOWN;
    assert!(total.is_unknown());
    total.add(&Usage::UNKNOWN);
    assert!(total.is_unknown(), "unknown plus unknown stays unknown");
    total.add(&Usage {
        input_tokens: Some(0),
        ..Usage::UNKNOWN
    });
    assert_eq!(total.input_tokens, Some(0));
    assert_eq!(total.output_tokens, None);
    total.add(&Usage {
        input_tokens: Some(5),
        output_tokens: Some(3),
        ..Usage::UNKNOWN
    });
    assert_eq!(total.input_tokens, Some(5));
    assert_eq!(total.output_tokens, Some(3));
    // The JSON form leaves unknown counts out instead of writing 0.
    assert_eq!(
        serde_json::to_value(total).unwrap(),
        json!({"input_tokens": 5, "output_tokens": 3})
    );
}

#[test]
fn messages_have_a_stable_json_form() {
    let m = Message::Assistant {
        parts: vec![
            AssistantPart::Text { text: "hi".into() },
            AssistantPart::ToolCall(ToolCall {
                id: "c1".into(),
                name: "ls".into(),
                arguments: json!({}),
            }),
        ],
    };
    let v = serde_json::to_value(&m).unwrap();
    assert_eq!(
        v,
        json!({"role": "assistant", "parts": [
            {"type": "text", "text": "hi"},
            {"type": "tool_call", "id": "c1", "name": "ls", "arguments": {}}
        ]})
    );
    assert_eq!(serde_json::from_value::<Message>(v).unwrap(), m);
    assert_eq!(m.tool_calls().count(), 1);
}

#[tokio::test]
async fn a_sync_closure_answers_from_the_messages_so_far() {
    let model = ScriptedModel::new(|req| {
        Ok(ScriptedResponse::text(format!(
            "{} messages",
            req.messages.len()
        )))
    });
    let settings = ModelSettings::default();
    let history = vec![Message::user("a"), Message::assistant_text("b")];
    let events: Vec<StreamEvent> = model
        .stream(request(&history, &settings))
        .await
        .unwrap()
        .map(|e| e.unwrap())
        .collect()
        .await;
    check_stream(&events).unwrap();
    // One text part is exactly one delta.
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, StreamEvent::TextDelta { .. }))
            .count(),
        1
    );
    let response = complete(&model, request(&history, &settings))
        .await
        .unwrap();
    assert_eq!(
        response.parts,
        vec![AssistantPart::Text {
            text: "2 messages".into()
        }]
    );
    assert_eq!(model.requests(), 2);
}

#[tokio::test]
async fn an_async_closure_answers_too() {
    let model = ScriptedModel::new_async(|req| {
        let n = req.messages.len();
        async move {
            tokio::task::yield_now().await;
            Ok(ScriptedResponse::calls().call("c1", "ls", json!({"path": format!("/{n}")})))
        }
    });
    let settings = ModelSettings::default();
    let response = complete(&model, request(&[], &settings)).await.unwrap();
    assert_eq!(response.finish, FinishReason::ToolCalls);
    assert_eq!(
        response.parts,
        vec![AssistantPart::ToolCall(ToolCall {
            id: "c1".into(),
            name: "ls".into(),
            arguments: json!({"path": "/0"})
        })]
    );
}

#[tokio::test]
async fn a_jsonl_script_answers_line_by_line_and_running_out_is_a_failure() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("script.jsonl");
    std::fs::write(
        &path,
        concat!(
            r#"{"text": "reading", "tool_calls": [{"id": "c1", "name": "read_file", "arguments": {"file_path": "/a"}}]}"#,
            "\n\n",
            r#"{"text": "done"}"#,
            "\n"
        ),
    )
    .unwrap();
    let model = ScriptedModel::from_file(&path).unwrap();
    let file = path.file_name().unwrap().to_string_lossy();
    assert_eq!(
        model.name(),
        format!("scripted:{file}"),
        "no folder in the name"
    );
    let settings = ModelSettings::default();
    let first = complete(&model, request(&[], &settings)).await.unwrap();
    assert_eq!(first.parts.len(), 2);
    assert_eq!(first.finish, FinishReason::ToolCalls);
    let second = complete(&model, request(&[], &settings)).await.unwrap();
    assert_eq!(
        second.parts,
        vec![AssistantPart::Text {
            text: "done".into()
        }]
    );
    let err = complete(&model, request(&[], &settings)).await.unwrap_err();
    assert_eq!(err.kind, ModelErrorKind::Exhausted);
    assert!(err.message.contains("2 answers"), "{}", err.message);
}

#[test]
fn a_bad_script_line_is_named() {
    let err = ScriptedModel::from_jsonl("{\"text\": \"ok\"}\n{\"txet\": 1}\n").unwrap_err();
    assert_eq!(err.kind, ModelErrorKind::InvalidRequest);
    assert!(err.message.contains("line 2"), "{}", err.message);
}
