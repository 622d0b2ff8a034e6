//! The runtime's OpenTelemetry metrics (feature `otel`): GenAI client token usage and request duration, and burrow's tool-call and run counters, labelled by names and outcomes only.
//!
//! [`Metrics`] holds the instruments, made once from a meter provider
//! ([`metrics`]); an agent records into them when it was given the handle
//! (`Agent::with_metrics`), and records nothing otherwise (ADR 0191).
//!
//! | instrument | kind, unit | attributes |
//! | --- | --- | --- |
//! | `gen_ai.client.token.usage` | histogram, `{token}` | `gen_ai.operation.name` (`chat`), `gen_ai.provider.name`, `gen_ai.request.model`, `gen_ai.token.type` (`input`, `output`) |
//! | `gen_ai.client.operation.duration` | histogram, `s` | `gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model`, `error.type` on failure |
//! | `burrow.tool.calls` | counter, `{call}` | `gen_ai.tool.name`, `outcome` (`ok`, `refused`, `failed`, `cancelled`) |
//! | `burrow.runs` | counter, `{run}` | `outcome` (`completed`, `failed`, `stopped`, `paused`), `error.type` (the failure reason) on failure |
//!
//! Token usage is recorded once per model request that reported it, one data
//! point per reported count (a count the provider left out is not guessed).
//! A request's duration runs from asking the model to its last streamed part;
//! a request the run's cancellation cut short ends with `error.type`
//! `cancelled`. A tool the model named but the agent does not have is counted
//! as `_OTHER` (the model's text never becomes a label). `burrow.runs` counts
//! what the issue calls a run and the runner a segment: a paused run resumed
//! later counts once as `paused` and once more as it ends.
//!
//! No attribute is ever an id (run, thread, call, tenant, workspace) or any
//! text from a prompt, answer, argument, result or error message: the ids are
//! span attributes only (ADR 0190), so a metric's series stay few.

use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram, MeterProvider};

use crate::agent::telemetry::{CallOutcome, provider_and_model};
use crate::agent::{FailureReason, Outcome};
use crate::message::Usage;

/// Bucket boundaries for `gen_ai.client.token.usage`, as the GenAI conventions advise.
const TOKEN_BOUNDARIES: [f64; 14] = [
    1.0,
    4.0,
    16.0,
    64.0,
    256.0,
    1024.0,
    4096.0,
    16384.0,
    65536.0,
    262_144.0,
    1_048_576.0,
    4_194_304.0,
    16_777_216.0,
    67_108_864.0,
];

/// Bucket boundaries (seconds) for `gen_ai.client.operation.duration`, as the GenAI conventions advise.
const DURATION_BOUNDARIES: [f64; 14] = [
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];

/// The value of `gen_ai.tool.name` for a tool the agent does not have.
pub const OTHER_TOOL: &str = "_OTHER";

/// The runtime's metric instruments, cheap to clone (each is a shared handle).
#[derive(Debug, Clone)]
pub struct Metrics {
    token_usage: Histogram<u64>,
    operation_duration: Histogram<f64>,
    tool_calls: Counter<u64>,
    runs: Counter<u64>,
}

/// The runtime's instruments, made from `provider`'s meter for scope
/// [`SCOPE`](super::SCOPE).
///
/// Any meter provider does: an `opentelemetry_sdk` `SdkMeterProvider` with
/// the reader and exporter of your choice, or
/// `opentelemetry::global::meter_provider()` to follow the global one. Give
/// the handle to each agent that should record (`Agent::with_metrics`).
pub fn metrics<P>(provider: &P) -> Metrics
where
    P: MeterProvider + ?Sized,
{
    let meter = provider.meter(super::SCOPE);
    Metrics {
        token_usage: meter
            .u64_histogram("gen_ai.client.token.usage")
            .with_unit("{token}")
            .with_description("Number of input and output tokens used per model request.")
            .with_boundaries(TOKEN_BOUNDARIES.to_vec())
            .build(),
        operation_duration: meter
            .f64_histogram("gen_ai.client.operation.duration")
            .with_unit("s")
            .with_description("Duration of a model request.")
            .with_boundaries(DURATION_BOUNDARIES.to_vec())
            .build(),
        tool_calls: meter
            .u64_counter("burrow.tool.calls")
            .with_unit("{call}")
            .with_description("Tool calls answered, by tool and outcome.")
            .build(),
        runs: meter
            .u64_counter("burrow.runs")
            .with_unit("{run}")
            .with_description("Runs (runner segments) ended, by outcome and failure reason.")
            .build(),
    }
}

/// How a model request ended, for its metrics.
pub(crate) enum RequestEnd<'a> {
    /// The model answered; its usage (known counts only).
    Answered(&'a Usage),
    /// The request failed with this error kind.
    Failed(&'static str),
}

impl Metrics {
    /// Records one model request of `model_name` (`provider:model`): its
    /// duration, and its token usage when it answered.
    pub(crate) fn model_request(&self, model_name: &str, took: Duration, end: RequestEnd<'_>) {
        let (provider, model) = provider_and_model(model_name);
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "chat"),
            KeyValue::new("gen_ai.provider.name", provider.to_owned()),
            KeyValue::new("gen_ai.request.model", model.to_owned()),
        ];
        match end {
            RequestEnd::Answered(usage) => {
                self.operation_duration
                    .record(took.as_secs_f64(), &attributes);
                let counts = [
                    ("input", input_tokens(usage)),
                    ("output", usage.output_tokens),
                ];
                for (token_type, count) in counts {
                    if let Some(count) = count {
                        attributes.push(KeyValue::new("gen_ai.token.type", token_type));
                        self.token_usage.record(count, &attributes);
                        attributes.pop();
                    }
                }
            }
            RequestEnd::Failed(kind) => {
                attributes.push(KeyValue::new("error.type", kind));
                self.operation_duration
                    .record(took.as_secs_f64(), &attributes);
            }
        }
    }

    /// Counts one tool call of `tool` (a tool the agent has, or [`OTHER_TOOL`]).
    pub(crate) fn tool_call(&self, tool: &str, outcome: CallOutcome) {
        self.tool_calls.add(
            1,
            &[
                KeyValue::new("gen_ai.tool.name", tool.to_owned()),
                KeyValue::new("outcome", outcome.as_str()),
            ],
        );
    }

    /// Counts one ended run (a runner segment) by its outcome.
    pub(crate) fn run(&self, outcome: &Outcome) {
        let name = KeyValue::new("outcome", outcome.name());
        match outcome {
            Outcome::Failed { reason, .. } => {
                let reason = match reason {
                    FailureReason::Other(other) => KeyValue::new("error.type", other.clone()),
                    known => KeyValue::new("error.type", known.builtin_name().unwrap_or("other")),
                };
                self.runs.add(1, &[name, reason]);
            }
            Outcome::Completed | Outcome::Paused { .. } | Outcome::Stopped { .. } => {
                self.runs.add(1, &[name]);
            }
        }
    }
}

/// All input tokens, cached ones included, as the GenAI conventions count
/// them (burrow's `input_tokens` leaves out cache reads and writes); none
/// when the provider reported no input count.
fn input_tokens(usage: &Usage) -> Option<u64> {
    usage.input_tokens.map(|input| {
        input
            .saturating_add(usage.cache_read_tokens.unwrap_or(0))
            .saturating_add(usage.cache_write_tokens.unwrap_or(0))
    })
}
