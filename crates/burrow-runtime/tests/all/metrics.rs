//! The runtime's OpenTelemetry metrics (feature `otel`), read back through the SDK's in-memory exporter: token usage, request durations (with `error.type` on failure), tool-call and run counters, and never an id or any text as an attribute.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::support::start_run;
use burrow_runtime::agent::{Agent, CancelToken, FailureReason, Outcome, RunOptions};
use burrow_runtime::message::{Message, Usage};
use burrow_runtime::model::{ModelError, ModelErrorKind, ScriptedModel, ScriptedResponse};
use burrow_runtime::runner::Runner;
use burrow_runtime::session::{MemoryStore, Scope};
use burrow_runtime::tool::{FnTool, ToolOutput, ToolRegistry};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

// ---------------------------------------------------------------- reading back

/// What one exported data point says: a counter's value, or a histogram's
/// count and sum.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    Count(u64),
    Histogram { count: u64, sum: f64 },
}

/// One exported data point.
#[derive(Debug, Clone)]
struct Point {
    metric: String,
    unit: String,
    attributes: BTreeMap<String, String>,
    value: Value,
}

/// The attribute keys a runtime metric may carry; anything else (an id, a
/// text) fails the test that reads the points.
const ALLOWED_KEYS: [&str; 7] = [
    "gen_ai.operation.name",
    "gen_ai.provider.name",
    "gen_ai.request.model",
    "gen_ai.token.type",
    "gen_ai.tool.name",
    "outcome",
    "error.type",
];

struct Exported {
    exporter: InMemoryMetricExporter,
    provider: SdkMeterProvider,
}

impl Exported {
    fn new() -> Self {
        let exporter = InMemoryMetricExporter::default();
        let provider = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(exporter.clone()).build())
            .build();
        Self { exporter, provider }
    }

    fn metrics(&self) -> burrow_runtime::otel::Metrics {
        burrow_runtime::otel::metrics(&self.provider)
    }

    /// Every data point of the last (cumulative) export.
    fn points(&self) -> Vec<Point> {
        self.provider.force_flush().unwrap();
        let exported = self.exporter.get_finished_metrics().unwrap();
        let last = exported.last().expect("one export at least");
        let mut points = Vec::new();
        for scope in last.scope_metrics() {
            assert_eq!(scope.scope().name(), burrow_runtime::otel::SCOPE);
            for metric in scope.metrics() {
                let mut push = |attributes: BTreeMap<String, String>, value: Value| {
                    points.push(Point {
                        metric: metric.name().to_owned(),
                        unit: metric.unit().to_owned(),
                        attributes,
                        value,
                    });
                };
                let attrs = |kvs: &mut dyn Iterator<Item = &opentelemetry::KeyValue>| {
                    kvs.map(|kv| (kv.key.as_str().to_owned(), kv.value.as_str().into_owned()))
                        .collect::<BTreeMap<_, _>>()
                };
                match metric.data() {
                    AggregatedMetrics::U64(MetricData::Sum(sum)) => {
                        for p in sum.data_points() {
                            push(attrs(&mut p.attributes()), Value::Count(p.value()));
                        }
                    }
                    AggregatedMetrics::U64(MetricData::Histogram(h)) => {
                        for p in h.data_points() {
                            #[allow(clippy::cast_precision_loss)]
                            let sum = p.sum() as f64;
                            push(
                                attrs(&mut p.attributes()),
                                Value::Histogram {
                                    count: p.count(),
                                    sum,
                                },
                            );
                        }
                    }
                    AggregatedMetrics::F64(MetricData::Histogram(h)) => {
                        for p in h.data_points() {
                            push(
                                attrs(&mut p.attributes()),
                                Value::Histogram {
                                    count: p.count(),
                                    sum: p.sum(),
                                },
                            );
                        }
                    }
                    other => panic!("{} is of an unexpected kind: {other:?}", metric.name()),
                }
            }
        }
        points
    }
}

/// The points of `metric`.
fn of<'a>(points: &'a [Point], metric: &str) -> Vec<&'a Point> {
    points.iter().filter(|p| p.metric == metric).collect()
}

/// `pairs` as an attribute map.
fn attributes(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// The point of `metric` whose attributes are exactly `pairs`.
fn point<'a>(points: &'a [Point], metric: &str, pairs: &[(&str, &str)]) -> &'a Point {
    let wanted = attributes(pairs);
    let found: Vec<&Point> = of(points, metric)
        .into_iter()
        .filter(|p| p.attributes == wanted)
        .collect();
    assert_eq!(found.len(), 1, "{metric} {wanted:?} among {points:#?}");
    found[0]
}

/// No point carries an attribute outside [`ALLOWED_KEYS`], nor a value
/// that is an id or content (`needles`).
fn assert_no_ids_or_text(points: &[Point], needles: &[&str]) {
    for p in points {
        for (key, value) in &p.attributes {
            assert!(
                ALLOWED_KEYS.contains(&key.as_str()),
                "{} carries the attribute {key} = {value}",
                p.metric
            );
            for needle in needles {
                assert!(
                    !value.contains(needle),
                    "{} carries {needle} in {key} = {value}",
                    p.metric
                );
            }
        }
    }
}

// ---------------------------------------------------------------- fixtures

#[derive(Deserialize, JsonSchema)]
struct Echo {
    text: String,
}

fn tools() -> ToolRegistry {
    let mut tools = ToolRegistry::new();
    tools.add(FnTool::new(
        "echo",
        "Says it back.",
        |e: Echo, _| async move { Ok(ToolOutput::ok(format!("echo {}", e.text))) },
    ));
    tools
}

fn usage(input: u64, output: u64, cache_read: Option<u64>) -> Usage {
    let mut usage = Usage::UNKNOWN;
    usage.input_tokens = Some(input);
    usage.output_tokens = Some(output);
    usage.cache_read_tokens = cache_read;
    usage
}

/// One turn calling `echo` and a tool the agent does not have, then a text answer.
fn one_call_model() -> ScriptedModel {
    ScriptedModel::from_responses(vec![
        ScriptedResponse {
            usage: Some(usage(11, 7, Some(3))),
            ..ScriptedResponse::calls()
                .call("call-CANARY-1", "echo", json!({"text": "CANARY-ARG"}))
                .call("call-CANARY-2", "CANARY-no-such-tool", json!({}))
        },
        ScriptedResponse {
            usage: Some(usage(23, 5, None)),
            ..ScriptedResponse::text("CANARY-ANSWER")
        },
    ])
    .named("scripted:test-model")
}

const CHAT: [(&str, &str); 3] = [
    ("gen_ai.operation.name", "chat"),
    ("gen_ai.provider.name", "scripted"),
    ("gen_ai.request.model", "test-model"),
];

fn with(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
    CHAT.iter().chain(extra).copied().collect()
}

// ---------------------------------------------------------------- the loop

#[tokio::test]
async fn a_run_with_a_tool_call_records_token_usage_request_durations_and_the_counters() {
    let exported = Exported::new();
    let agent = Agent::new(Arc::new(one_call_model()))
        .with_tools(tools())
        .with_metrics(exported.metrics());
    let mut history = vec![Message::user("CANARY-PROMPT")];
    let options = RunOptions {
        run_id: Some("run-CANARY".to_owned()),
        thread_id: Some("thread-CANARY".to_owned()),
        ..RunOptions::default()
    };
    let result = agent
        .run_with(&mut history, None, options, &mut |_| {})
        .await;
    assert_eq!(result.outcome, Outcome::Completed);
    let points = exported.points();

    // Input counts cached tokens too (11 + 3, then 23); output as reported.
    let input = point(
        &points,
        "gen_ai.client.token.usage",
        &with(&[("gen_ai.token.type", "input")]),
    );
    assert_eq!(input.unit, "{token}");
    assert_eq!(
        input.value,
        Value::Histogram {
            count: 2,
            sum: 37.0
        }
    );
    let output = point(
        &points,
        "gen_ai.client.token.usage",
        &with(&[("gen_ai.token.type", "output")]),
    );
    assert_eq!(
        output.value,
        Value::Histogram {
            count: 2,
            sum: 12.0
        }
    );
    assert_eq!(of(&points, "gen_ai.client.token.usage").len(), 2);

    let durations = of(&points, "gen_ai.client.operation.duration");
    assert_eq!(durations.len(), 1, "no error.type: {durations:#?}");
    let duration = point(&points, "gen_ai.client.operation.duration", &CHAT);
    assert_eq!(duration.unit, "s");
    let Value::Histogram { count, sum } = duration.value else {
        panic!("a duration is a histogram: {duration:?}");
    };
    assert_eq!(count, 2);
    assert!((0.0..60.0).contains(&sum), "{sum} s");

    let ok = point(
        &points,
        "burrow.tool.calls",
        &[("gen_ai.tool.name", "echo"), ("outcome", "ok")],
    );
    assert_eq!(ok.value, Value::Count(1));
    let unknown = point(
        &points,
        "burrow.tool.calls",
        &[("gen_ai.tool.name", "_OTHER"), ("outcome", "refused")],
    );
    assert_eq!(unknown.value, Value::Count(1));
    assert_eq!(of(&points, "burrow.tool.calls").len(), 2);

    let runs = point(&points, "burrow.runs", &[("outcome", "completed")]);
    assert_eq!(runs.value, Value::Count(1));
    assert_eq!(of(&points, "burrow.runs").len(), 1);

    assert_no_ids_or_text(&points, &["CANARY", &result.run_id]);
}

#[tokio::test]
async fn a_failing_model_request_records_its_error_type_and_a_failed_run() {
    let exported = Exported::new();
    let model = ScriptedModel::new(|_| {
        Err(ModelError::new(
            ModelErrorKind::RateLimited,
            "CANARY: slow down",
        ))
    })
    .named("scripted:test-model");
    let agent = Agent::new(Arc::new(model)).with_metrics(exported.metrics());
    let mut history: Vec<Message> = Vec::new();
    let result = agent.run(&mut history, "CANARY-PROMPT").await;
    assert!(matches!(
        result.outcome,
        Outcome::Failed {
            reason: FailureReason::ModelError,
            ..
        }
    ));
    let points = exported.points();

    let failed = point(
        &points,
        "gen_ai.client.operation.duration",
        &with(&[("error.type", "rate_limited")]),
    );
    assert!(matches!(failed.value, Value::Histogram { count: 1, .. }));
    assert_eq!(of(&points, "gen_ai.client.operation.duration").len(), 1);
    assert!(
        of(&points, "gen_ai.client.token.usage").is_empty(),
        "a failed request reported no usage"
    );
    let runs = point(
        &points,
        "burrow.runs",
        &[("outcome", "failed"), ("error.type", "model_error")],
    );
    assert_eq!(runs.value, Value::Count(1));
    assert_no_ids_or_text(&points, &["CANARY", &result.run_id]);
}

#[tokio::test]
async fn a_request_the_run_cancels_records_error_type_cancelled_and_a_stopped_run() {
    let exported = Exported::new();
    let cancel = CancelToken::new();
    let asked = cancel.clone();
    // The model cancels the run as it is asked, then never answers.
    let model = ScriptedModel::new_async(move |_| {
        asked.cancel();
        futures::future::pending()
    })
    .named("scripted:test-model");
    let agent = Agent::new(Arc::new(model)).with_metrics(exported.metrics());
    let mut history = vec![Message::user("go")];
    let options = RunOptions {
        cancel,
        ..RunOptions::default()
    };
    let result = agent
        .run_with(&mut history, None, options, &mut |_| {})
        .await;
    assert_eq!(result.outcome.name(), "stopped");
    let points = exported.points();
    let cancelled = point(
        &points,
        "gen_ai.client.operation.duration",
        &with(&[("error.type", "cancelled")]),
    );
    assert!(matches!(cancelled.value, Value::Histogram { count: 1, .. }));
    let runs = point(&points, "burrow.runs", &[("outcome", "stopped")]);
    assert_eq!(runs.value, Value::Count(1));
    assert_no_ids_or_text(&points, &[&result.run_id]);
}

#[tokio::test]
async fn an_agent_without_the_handle_records_nothing() {
    let exported = Exported::new();
    // Instruments made, but the agent was not given them.
    let _unused = exported.metrics();
    let agent = Agent::new(Arc::new(one_call_model())).with_tools(tools());
    let mut history: Vec<Message> = Vec::new();
    let result = agent.run(&mut history, "go").await;
    assert_eq!(result.outcome, Outcome::Completed);
    exported.provider.force_flush().unwrap();
    let exported_points: usize = exported
        .exporter
        .get_finished_metrics()
        .unwrap()
        .iter()
        .flat_map(|r| r.scope_metrics())
        .map(|s| s.metrics().count())
        .sum();
    assert_eq!(exported_points, 0);
}

// ---------------------------------------------------------------- the runner

#[tokio::test]
async fn a_runner_segment_counts_as_one_run_with_no_thread_or_tenant_label() {
    let exported = Exported::new();
    let agent = Agent::new(Arc::new(one_call_model()))
        .with_tools(tools())
        .with_metrics(exported.metrics());
    let runner = Runner::new(agent, Arc::new(MemoryStore::new()));
    let thread = Scope::new("tenant-CANARY", "workspace-CANARY").thread("thread-CANARY");
    let run = start_run(&runner, &thread, "alice", "CANARY-PROMPT").await;
    assert_eq!(run.wait().await.outcome, Outcome::Completed);
    runner.drain().await;
    let points = exported.points();

    let runs = point(&points, "burrow.runs", &[("outcome", "completed")]);
    assert_eq!(runs.value, Value::Count(1));
    assert_eq!(of(&points, "burrow.runs").len(), 1);
    let ok = point(
        &points,
        "burrow.tool.calls",
        &[("gen_ai.tool.name", "echo"), ("outcome", "ok")],
    );
    assert_eq!(ok.value, Value::Count(1));
    assert_no_ids_or_text(&points, &["CANARY", "alice", run.run_id()]);
}
