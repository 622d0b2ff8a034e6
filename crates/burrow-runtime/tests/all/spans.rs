//! The agent loop's and the runner's `tracing` spans, seen by a capturing layer: the span tree of a run with two concurrent tool calls, GenAI fields and no content; an evaluator's failure on the run segment's span; with `otel`, one exported trace per turn.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use super::support::start_run;
use burrow_backend::LockKey;
use burrow_runtime::agent::{Agent, Outcome};
use burrow_runtime::message::{Message, Usage};
use burrow_runtime::model::{ScriptedModel, ScriptedResponse};
use burrow_runtime::runner::{EndedTurn, Runner, RunnerConfig, TurnEvaluator};
use burrow_runtime::session::{MemoryStore, Scope};
use burrow_runtime::tool::{FnTool, ToolOutput, ToolRegistry};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

// ---------------------------------------------------------------- capture

/// One span as the capturing layer saw it: name, parent and fields.
#[derive(Debug, Clone)]
struct SpanSeen {
    name: &'static str,
    /// The index of the parent span in [`Seen::spans`].
    parent: Option<usize>,
    fields: BTreeMap<String, String>,
}

/// One event: the span it was recorded in, its level and its fields.
#[derive(Debug, Clone)]
struct EventSeen {
    span: Option<usize>,
    level: Level,
    fields: BTreeMap<String, String>,
}

#[derive(Debug, Default)]
struct Seen {
    spans: Vec<SpanSeen>,
    events: Vec<EventSeen>,
}

impl Seen {
    fn named(&self, name: &str) -> Vec<usize> {
        (0..self.spans.len())
            .filter(|&i| self.spans[i].name == name)
            .collect()
    }

    fn field(&self, span: usize, field: &str) -> Option<&str> {
        self.spans[span].fields.get(field).map(String::as_str)
    }

    /// Every field value of every span and event, for content checks.
    fn all_values(&self) -> Vec<&str> {
        let spans = self.spans.iter().flat_map(|s| s.fields.values());
        let events = self.events.iter().flat_map(|e| e.fields.values());
        spans.chain(events).map(String::as_str).collect()
    }
}

/// A layer recording every span and event; spans get indexes of their own
/// because the registry reuses span ids once a span closes.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Seen>>);

/// A span's index in [`Seen::spans`], kept in the span's extensions.
struct Index(usize);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl<S> Layer<S> for Capture
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let span = ctx.span(id).unwrap();
        let parent = span
            .parent()
            .and_then(|p| p.extensions().get::<Index>().map(|i| i.0));
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        let mut seen = self.0.lock().unwrap();
        seen.spans.push(SpanSeen {
            name: attrs.metadata().name(),
            parent,
            fields,
        });
        span.extensions_mut().insert(Index(seen.spans.len() - 1));
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let span = ctx.span(id).unwrap();
        let Some(index) = span.extensions().get::<Index>().map(|i| i.0) else {
            return;
        };
        let mut seen = self.0.lock().unwrap();
        values.record(&mut Fields(&mut seen.spans[index].fields));
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let span = ctx
            .event_span(event)
            .and_then(|s| s.extensions().get::<Index>().map(|i| i.0));
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        self.0.lock().unwrap().events.push(EventSeen {
            span,
            level: *event.metadata().level(),
            fields,
        });
    }
}

// ---------------------------------------------------------------- fixtures

#[derive(Deserialize, JsonSchema)]
struct Meet {
    key: String,
    secret: String,
}

/// A tool whose two calls of one batch can only end if they run at the same
/// time (each waits for the other at a barrier), and which logs as it works.
fn meet_tool(barrier: Arc<tokio::sync::Barrier>) -> FnTool<Meet> {
    FnTool::new("meet", "Waits for the other call.", move |m: Meet, _| {
        let barrier = barrier.clone();
        async move {
            tracing::info!(key = %m.key, "meeting");
            barrier.wait().await;
            tracing::info!(key = %m.key, "met");
            Ok(ToolOutput::ok(format!(
                "CANARY-RESULT {} {}",
                m.key, m.secret
            )))
        }
    })
    .with_locks(|m: &Meet| vec![LockKey::new(m.key.clone())])
}

fn usage(input: u64, output: u64) -> Usage {
    let mut usage = Usage::UNKNOWN;
    usage.input_tokens = Some(input);
    usage.output_tokens = Some(output);
    usage
}

/// One turn calling `meet` twice (concurrently), then a text answer.
fn two_call_agent() -> Agent {
    let model = ScriptedModel::from_responses(vec![
        ScriptedResponse {
            usage: Some(usage(11, 7)),
            ..ScriptedResponse::calls()
                .call("c1", "meet", json!({"key": "a", "secret": "CANARY-ARG-1"}))
                .call("c2", "meet", json!({"key": "b", "secret": "CANARY-ARG-2"}))
        },
        ScriptedResponse {
            usage: Some(usage(23, 5)),
            ..ScriptedResponse::text("CANARY-ANSWER")
        },
    ])
    .named("scripted:test-model");
    let mut tools = ToolRegistry::new();
    tools.add(meet_tool(Arc::new(tokio::sync::Barrier::new(2))));
    Agent::new(Arc::new(model)).with_tools(tools)
}

fn capture() -> (Capture, tracing::subscriber::DefaultGuard) {
    let capture = Capture::default();
    let subscriber = tracing_subscriber::registry().with(capture.clone());
    let guard = tracing::subscriber::set_default(subscriber);
    (capture, guard)
}

// ---------------------------------------------------------------- the loop

#[tokio::test]
async fn a_run_is_a_tree_of_turns_with_their_model_request_and_concurrent_tool_calls() {
    let (capture, _guard) = capture();
    let agent = two_call_agent();
    let mut history: Vec<Message> = Vec::new();
    let result = agent.run(&mut history, "CANARY-PROMPT").await;
    assert_eq!(result.outcome, Outcome::Completed);
    let seen = capture.0.lock().unwrap();

    let runs = seen.named("run");
    assert_eq!(runs.len(), 1, "one run span: {:?}", seen.spans);
    let run = runs[0];
    assert_eq!(seen.spans[run].parent, None);
    assert_eq!(seen.field(run, "run_id"), Some(result.run_id.as_str()));
    assert_eq!(
        seen.field(run, "gen_ai.operation.name"),
        Some("invoke_agent")
    );
    assert_eq!(seen.field(run, "outcome"), Some("completed"));

    let turns = seen.named("turn");
    assert_eq!(turns.len(), 2);
    for (n, &turn) in turns.iter().enumerate() {
        assert_eq!(seen.spans[turn].parent, Some(run));
        assert_eq!(seen.field(turn, "turn"), Some((n + 1).to_string().as_str()));
        assert_eq!(seen.field(turn, "run_id"), Some(result.run_id.as_str()));
    }
    assert_eq!(seen.field(turns[0], "tool_calls"), Some("2"));

    let requests = seen.named("model request");
    assert_eq!(requests.len(), 2);
    let expected = [("11", "7", "tool_calls"), ("23", "5", "stop")];
    for ((&request, &turn), (input, output, finish)) in requests.iter().zip(&turns).zip(expected) {
        assert_eq!(seen.spans[request].parent, Some(turn));
        assert_eq!(seen.field(request, "gen_ai.operation.name"), Some("chat"));
        assert_eq!(
            seen.field(request, "gen_ai.provider.name"),
            Some("scripted")
        );
        assert_eq!(
            seen.field(request, "gen_ai.request.model"),
            Some("test-model")
        );
        assert_eq!(seen.field(request, "otel.name"), Some("chat test-model"));
        assert_eq!(
            seen.field(request, "gen_ai.usage.input_tokens"),
            Some(input)
        );
        assert_eq!(
            seen.field(request, "gen_ai.usage.output_tokens"),
            Some(output)
        );
        assert_eq!(
            seen.field(request, "gen_ai.response.finish_reasons"),
            Some(finish)
        );
        let ttfp: f64 = seen
            .field(request, "burrow.time_to_first_part_ms")
            .unwrap()
            .parse()
            .unwrap();
        assert!(ttfp >= 0.0);
    }

    let calls = seen.named("tool call");
    assert_eq!(calls.len(), 2);
    for (&call, id) in calls.iter().zip(["c1", "c2"]) {
        assert_eq!(
            seen.spans[call].parent,
            Some(turns[0]),
            "calls nest under their turn, not each other"
        );
        assert_eq!(
            seen.field(call, "gen_ai.operation.name"),
            Some("execute_tool")
        );
        assert_eq!(seen.field(call, "gen_ai.tool.name"), Some("meet"));
        assert_eq!(seen.field(call, "gen_ai.tool.call.id"), Some(id));
        assert_eq!(seen.field(call, "outcome"), Some("ok"));
        assert_eq!(seen.field(call, "otel.name"), Some("execute_tool meet"));
    }
    // The tools' own events land in their own call's span although the two
    // calls interleave (each waited for the other).
    for (&call, key) in calls.iter().zip(["a", "b"]) {
        let inside: Vec<&EventSeen> = seen
            .events
            .iter()
            .filter(|e| e.span == Some(call))
            .collect();
        assert_eq!(inside.len(), 2, "meeting and met in call {key}");
        assert!(
            inside
                .iter()
                .all(|e| e.fields.get("key").map(String::as_str) == Some(key))
        );
    }

    let leaked: Vec<&str> = seen
        .all_values()
        .into_iter()
        .filter(|v| v.contains("CANARY"))
        .collect();
    assert!(leaked.is_empty(), "content in telemetry: {leaked:?}");
}

#[tokio::test]
async fn a_refused_call_and_a_failed_request_say_so_on_their_spans() {
    let (capture, _guard) = capture();
    let model = ScriptedModel::from_responses(vec![ScriptedResponse::calls().call(
        "c1",
        "no_such_tool",
        json!({"x": "CANARY-ARG"}),
    )])
    .named("scripted:test-model");
    let agent = Agent::new(Arc::new(model));
    let mut history: Vec<Message> = Vec::new();
    let result = agent.run(&mut history, "go").await;
    // The script has one answer: the second request fails.
    assert_eq!(result.outcome.name(), "failed");
    let seen = capture.0.lock().unwrap();
    let calls = seen.named("tool call");
    assert_eq!(calls.len(), 1);
    assert_eq!(seen.field(calls[0], "outcome"), Some("refused"));
    let requests = seen.named("model request");
    assert_eq!(requests.len(), 2);
    assert!(seen.field(requests[1], "error.type").is_some());
    assert_eq!(seen.field(seen.named("run")[0], "outcome"), Some("failed"));
    assert!(seen.all_values().iter().all(|v| !v.contains("CANARY")));
}

// ---------------------------------------------------------------- the runner

struct Failing;

impl TurnEvaluator for Failing {
    fn submit(&self, _turn: &EndedTurn) -> Result<(), String> {
        Err("the judge is down".into())
    }
}

#[tokio::test]
async fn an_evaluator_failure_is_an_event_on_the_segments_run_span_and_the_turn_goes_on() {
    let (capture, _guard) = capture();
    let agent = two_call_agent();
    let config = RunnerConfig::default().with_evaluator(Arc::new(Failing));
    let runner = Runner::with_config(agent, Arc::new(MemoryStore::new()), config);
    let thread = Scope::new("acme", "ws").thread("t1");
    let run = start_run(&runner, &thread, "alice", "CANARY-PROMPT").await;
    assert_eq!(run.wait().await.outcome, Outcome::Completed);
    runner.drain().await;
    let seen = capture.0.lock().unwrap();

    // The runner's segment span is the run: the loop opens no second one.
    let runs = seen.named("run");
    assert_eq!(runs.len(), 1, "one run span: {:?}", seen.spans);
    let run_span = runs[0];
    assert_eq!(seen.field(run_span, "run_id"), Some(run.run_id()));
    assert_eq!(seen.field(run_span, "gen_ai.conversation.id"), Some("t1"));
    let turns = seen.named("turn");
    assert_eq!(turns.len(), 2);
    assert!(
        turns
            .iter()
            .all(|&t| seen.spans[t].parent == Some(run_span))
    );
    for &call in &seen.named("tool call") {
        assert_eq!(seen.spans[call].parent, Some(turns[0]));
    }

    let failures: Vec<&EventSeen> = seen
        .events
        .iter()
        .filter(|e| e.fields.get("error").map(String::as_str) == Some("the judge is down"))
        .collect();
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0].span, Some(run_span));
    assert_eq!(failures[0].level, Level::WARN);
    assert!(seen.all_values().iter().all(|v| !v.contains("CANARY")));
}

// ---------------------------------------------------------------- otel

#[cfg(feature = "otel")]
mod otel {
    use opentelemetry::Value;
    use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
    use tracing_subscriber::layer::SubscriberExt;

    use super::*;

    fn attribute<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
        span.attributes
            .iter()
            .find(|kv| kv.key.as_str() == key)
            .map(|kv| &kv.value)
    }

    fn exported() -> (InMemorySpanExporter, SdkTracerProvider) {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        (exporter, provider)
    }

    #[tokio::test]
    async fn each_turn_is_its_own_trace_linked_to_the_run_with_genai_attributes() {
        let (exporter, provider) = exported();
        let subscriber =
            tracing_subscriber::registry().with(burrow_runtime::otel::layer(&provider));
        let guard = tracing::subscriber::set_default(subscriber);
        let agent = two_call_agent();
        let mut history: Vec<Message> = Vec::new();
        let result = agent.run(&mut history, "CANARY-PROMPT").await;
        drop(guard);
        assert_eq!(result.outcome, Outcome::Completed);
        provider.force_flush().unwrap();
        let spans = exporter.get_finished_spans().unwrap();

        let named = |name: &str| -> Vec<&SpanData> {
            spans.iter().filter(|s| s.name.as_ref() == name).collect()
        };
        let runs = named("run");
        assert_eq!(runs.len(), 1);
        let run = runs[0];
        let turns = named("turn");
        assert_eq!(turns.len(), 2);
        let run_trace = run.span_context.trace_id();
        let mut traces: Vec<_> = turns.iter().map(|t| t.span_context.trace_id()).collect();
        traces.dedup();
        assert_eq!(traces.len(), 2, "one trace per turn");
        for turn in &turns {
            assert_ne!(turn.span_context.trace_id(), run_trace);
            assert_eq!(
                turn.parent_span_id,
                opentelemetry::trace::SpanId::INVALID,
                "a turn is a root"
            );
            let links: Vec<_> = turn
                .links
                .iter()
                .map(|l| l.span_context.span_id())
                .collect();
            assert_eq!(
                links,
                vec![run.span_context.span_id()],
                "a turn links to its run"
            );
            assert_eq!(
                attribute(turn, "run_id").map(|v| v.as_str().into_owned()),
                Some(result.run_id.clone())
            );
        }

        let chats = named("chat test-model");
        assert_eq!(chats.len(), 2);
        for (chat, turn) in chats.iter().zip(&turns) {
            assert_eq!(chat.span_context.trace_id(), turn.span_context.trace_id());
            assert_eq!(chat.parent_span_id, turn.span_context.span_id());
            assert_eq!(
                attribute(chat, "gen_ai.operation.name")
                    .map(|v| v.as_str().into_owned())
                    .as_deref(),
                Some("chat")
            );
            assert_eq!(
                attribute(chat, "gen_ai.request.model")
                    .map(|v| v.as_str().into_owned())
                    .as_deref(),
                Some("test-model")
            );
            assert_eq!(
                attribute(chat, "gen_ai.provider.name")
                    .map(|v| v.as_str().into_owned())
                    .as_deref(),
                Some("scripted")
            );
            assert!(matches!(
                attribute(chat, "gen_ai.usage.input_tokens"),
                Some(Value::I64(_))
            ));
            assert!(matches!(
                attribute(chat, "gen_ai.usage.output_tokens"),
                Some(Value::I64(_))
            ));
        }
        let tools = named("execute_tool meet");
        assert_eq!(tools.len(), 2);
        for tool in &tools {
            assert_eq!(
                tool.span_context.trace_id(),
                turns[0].span_context.trace_id()
            );
            assert_eq!(tool.parent_span_id, turns[0].span_context.span_id());
            assert_eq!(
                attribute(tool, "gen_ai.tool.name")
                    .map(|v| v.as_str().into_owned())
                    .as_deref(),
                Some("meet")
            );
            assert!(attribute(tool, "gen_ai.tool.call.id").is_some());
            assert_eq!(
                attribute(tool, "outcome")
                    .map(|v| v.as_str().into_owned())
                    .as_deref(),
                Some("ok")
            );
        }
        let leaked = spans
            .iter()
            .flat_map(|s| s.attributes.iter())
            .any(|kv| kv.value.as_str().contains("CANARY"));
        assert!(!leaked, "content in exported attributes");
    }
}
