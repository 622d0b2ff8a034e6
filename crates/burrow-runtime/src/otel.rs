//! OpenTelemetry export (feature `otel`): a `tracing_subscriber` layer that exports the runtime's spans through `tracing-opentelemetry`, a turn as its own trace, and the runtime's metrics.
//!
//! Install it like any layer, over an `opentelemetry_sdk` tracer provider
//! with the exporter of your choice (OTLP, stdout, in-memory):
//!
//! ```
//! use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
//! use tracing_subscriber::layer::SubscriberExt;
//!
//! let exporter = InMemorySpanExporter::default();
//! let provider = SdkTracerProvider::builder()
//!     .with_simple_exporter(exporter.clone())
//!     .build();
//! let subscriber = tracing_subscriber::registry().with(burrow_runtime::otel::layer(&provider));
//! let _guard = tracing::subscriber::set_default(subscriber);
//! // ... run agents; call `provider.shutdown()` before exit to flush.
//! ```
//!
//! What it exports (ADR 0190):
//! - `run` (`gen_ai.operation.name = invoke_agent`): the run, with `run_id`
//!   and the thread as `gen_ai.conversation.id`.
//! - `turn`: one model request and its tool calls. Each turn is the **root of
//!   its own trace**, linked to its run's span by a span link and carrying
//!   `run_id`, so a long run is many small traces, not one that never ends.
//! - `chat {model}` (`model request`): `gen_ai.provider.name`,
//!   `gen_ai.request.model`, `gen_ai.usage.input_tokens` /
//!   `output_tokens` / `cache_read.input_tokens` /
//!   `cache_creation.input_tokens`, `gen_ai.response.finish_reasons`,
//!   `burrow.time_to_first_part_ms`, `error.type` on failure.
//! - `execute_tool {tool}` (`tool call`): `gen_ai.tool.name`,
//!   `gen_ai.tool.call.id`, `outcome` (`ok`, `refused`, `failed`,
//!   `cancelled`).
//!
//! Metrics (ADR 0191): [`metrics()`] makes the runtime's instruments from a
//! meter provider, and an agent given them (`Agent::with_metrics`) records
//! `gen_ai.client.token.usage`, `gen_ai.client.operation.duration`,
//! `burrow.tool.calls` and `burrow.runs` (the [`metrics` module](mod@self::metrics)
//! lists their attributes):
//!
//! ```
//! use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
//!
//! let exporter = InMemoryMetricExporter::default();
//! let provider = SdkMeterProvider::builder()
//!     .with_reader(PeriodicReader::builder(exporter.clone()).build())
//!     .build();
//! let model = std::sync::Arc::new(burrow_runtime::model::ScriptedModel::from_responses(Vec::new()));
//! let agent = burrow_runtime::agent::Agent::new(model)
//!     .with_metrics(burrow_runtime::otel::metrics(&provider));
//! // ... run `agent`; call `provider.shutdown()` before exit to flush.
//! ```
//!
//! Ids are span attributes only: a metric's attributes are model, provider,
//! tool, outcome and error-kind names, never an id. No prompt, answer,
//! argument or result text is exported.

use opentelemetry::trace::{TraceContextExt, TracerProvider};
use opentelemetry_sdk::trace::{SdkTracerProvider, Tracer};
use tracing::Span;
use tracing::Subscriber;
use tracing_opentelemetry::{OpenTelemetryLayer, OpenTelemetrySpanExt};
use tracing_subscriber::registry::LookupSpan;

pub mod metrics;

pub use metrics::{Metrics, metrics};

/// The instrumentation scope the runtime's spans and metrics are exported under.
pub const SCOPE: &str = "burrow";

/// A layer that exports spans to `provider`'s tracer (scope [`SCOPE`]).
///
/// It exports every span the subscriber sees, the runtime's and any other;
/// filter it (`Layer::with_filter`) to keep only some. Code locations and
/// thread names are left out.
pub fn layer<S>(provider: &SdkTracerProvider) -> OpenTelemetryLayer<S, Tracer>
where
    S: Subscriber + for<'span> LookupSpan<'span>,
{
    tracing_opentelemetry::layer()
        .with_tracer(provider.tracer(SCOPE))
        .with_location(false)
        .with_threads(false)
}

/// Makes a new turn span the root of its own trace, linked to the current
/// span (its run). A no-op when no OpenTelemetry layer records the span.
pub(crate) fn root_turn(turn: &Span) {
    if turn.is_disabled() {
        return;
    }
    let run = Span::current().context().span().span_context().clone();
    // Only a span not yet entered takes a new parent; a turn span is new here.
    if turn.set_parent(opentelemetry::Context::new()).is_ok() {
        turn.add_link(run);
    }
}
