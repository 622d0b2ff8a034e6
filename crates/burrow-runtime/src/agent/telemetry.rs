//! The agent loop's `tracing` spans: `run` > `turn` > `model request` and `tool call`, named with the OpenTelemetry GenAI conventions and carrying no content.
//!
//! Field names are the GenAI attribute names (`gen_ai.operation.name`,
//! `gen_ai.request.model`, `gen_ai.usage.input_tokens`, `gen_ai.tool.name`,
//! `gen_ai.tool.call.id` ...), so an OpenTelemetry layer exports them as they
//! are. No prompt, answer, argument or result text goes into a field: content
//! stays out of telemetry, as it stays out of the durable events' summaries.
//!
//! A span's field values are only computed when a subscriber wants the span
//! (`tracing`'s macros evaluate them lazily), so with no subscriber each span
//! costs a callsite check and nothing else.

use std::time::Instant;

use tracing::Span;
use tracing::field::Empty;

use crate::message::{ToolCall, Usage};
use crate::model::{FinishReason, ModelError};

/// The name of the runner's and the loop's run span.
pub(crate) const RUN_SPAN: &str = "run";

/// The run's span, or a disabled one when the current span is already a
/// `run` (the runner opens it around a segment, and one run is one span).
pub(crate) fn run_span(run_id: &str, thread_id: Option<&str>) -> Span {
    let current = Span::current();
    if current.metadata().is_some_and(|m| m.name() == RUN_SPAN) {
        return Span::none();
    }
    let span = tracing::info_span!(
        "run",
        run_id = %run_id,
        thread = Empty,
        gen_ai.operation.name = "invoke_agent",
        gen_ai.conversation.id = Empty,
        outcome = Empty,
    );
    if let Some(thread) = thread_id {
        span.record("thread", thread);
        span.record("gen_ai.conversation.id", thread);
    }
    span
}

/// Records how the run ended on `span` (a no-op on a disabled span).
pub(crate) fn record_run_end(span: &Span, outcome: &str) {
    span.record("outcome", outcome);
}

/// A turn's span: one model request and the tool calls of its answer.
///
/// Exported to OpenTelemetry, a turn is the root of its own trace, linked to
/// its run's span (ADR 0190); in `tracing` it stays the run's child, so logs
/// carry the run's fields.
pub(crate) fn turn_span(run_id: &str, thread_id: Option<&str>, turn: usize) -> Span {
    let span = tracing::info_span!(
        "turn",
        otel.name = "turn",
        run_id = %run_id,
        gen_ai.conversation.id = Empty,
        turn = turn,
        tool_calls = Empty,
    );
    if let Some(thread) = thread_id {
        span.record("gen_ai.conversation.id", thread);
    }
    #[cfg(feature = "otel")]
    crate::otel::root_turn(&span);
    span
}

/// The model's provider and model names, from a name such as `anthropic:claude-...`.
pub(crate) fn provider_and_model(name: &str) -> (&str, &str) {
    match name.split_once(':') {
        Some(("openai-responses", model)) => ("openai", model),
        Some((provider, model)) => (provider, model),
        None => (name, name),
    }
}

/// A model request's span; its usage, finish reason and time to the first
/// streamed part are recorded as they become known.
pub(crate) fn model_span(model_name: &str) -> Span {
    let (provider, model) = provider_and_model(model_name);
    tracing::info_span!(
        "model request",
        otel.name = %format_args!("chat {model}"),
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = provider,
        gen_ai.request.model = model,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.usage.cache_read.input_tokens = Empty,
        gen_ai.usage.cache_creation.input_tokens = Empty,
        gen_ai.response.finish_reasons = Empty,
        burrow.time_to_first_part_ms = Empty,
        error.type = Empty,
    )
}

/// Times a model request to its first streamed part, only when its span is recorded.
pub(crate) struct FirstPart {
    started: Option<Instant>,
}

impl FirstPart {
    /// Starts timing for `span` (no clock read when the span is disabled).
    pub(crate) fn start(span: &Span) -> Self {
        Self {
            started: (!span.is_disabled()).then(Instant::now),
        }
    }

    /// Records the time to the first part on `span`, once.
    pub(crate) fn part(&mut self, span: &Span) {
        if let Some(started) = self.started.take() {
            span.record(
                "burrow.time_to_first_part_ms",
                started.elapsed().as_secs_f64() * 1000.0,
            );
        }
    }
}

/// Records a finished request's usage (known counts only) and finish reason.
pub(crate) fn record_response(span: &Span, usage: &Usage, finish: &FinishReason) {
    if span.is_disabled() {
        return;
    }
    let counts = [
        ("gen_ai.usage.input_tokens", usage.input_tokens),
        ("gen_ai.usage.output_tokens", usage.output_tokens),
        (
            "gen_ai.usage.cache_read.input_tokens",
            usage.cache_read_tokens,
        ),
        (
            "gen_ai.usage.cache_creation.input_tokens",
            usage.cache_write_tokens,
        ),
    ];
    for (field, count) in counts {
        if let Some(count) = count {
            // OpenTelemetry's integers are i64, and tracing-opentelemetry exports a
            // u64 field as text; the counts never come near i64::MAX.
            span.record(field, i64::try_from(count).unwrap_or(i64::MAX));
        }
    }
    span.record("gen_ai.response.finish_reasons", finish_reason(finish));
}

/// Records a failed request's error kind (never its message, which may quote content).
pub(crate) fn record_model_error(span: &Span, error: &ModelError) {
    span.record("error.type", error.kind.as_str());
}

/// The GenAI name of a finish reason.
fn finish_reason(finish: &FinishReason) -> &str {
    match finish {
        FinishReason::Stop => "stop",
        FinishReason::ToolCalls => "tool_calls",
        FinishReason::MaxTokens => "length",
        FinishReason::ContentFilter => "content_filter",
        FinishReason::Refusal => "refusal",
        FinishReason::Other(other) => other,
    }
}

/// A tool call's span: the tool's name and the call's id, never its arguments.
pub(crate) fn tool_span(call: &ToolCall) -> Span {
    tracing::info_span!(
        "tool call",
        otel.name = %format_args!("execute_tool {}", call.name),
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %call.name,
        gen_ai.tool.call.id = %call.id,
        gen_ai.tool.type = "function",
        outcome = Empty,
        error.type = Empty,
    )
}

/// How a tool call ended, as its span's `outcome` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CallOutcome {
    /// The tool ran and answered.
    Ok,
    /// The call did not run or the tool refused it (a refusal the model can act on).
    Refused,
    /// The tool failed (an error or a panic), which ends the run.
    Failed,
    /// The run was cancelled before the call ended.
    Cancelled,
}

impl CallOutcome {
    /// `ok`, `refused`, `failed` or `cancelled`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            CallOutcome::Ok => "ok",
            CallOutcome::Refused => "refused",
            CallOutcome::Failed => "failed",
            CallOutcome::Cancelled => "cancelled",
        }
    }
}

/// Records a call's outcome on its span.
pub(crate) fn record_call(span: &Span, outcome: CallOutcome) {
    span.record("outcome", outcome.as_str());
    if outcome == CallOutcome::Failed {
        span.record("error.type", "tool_failure");
    }
}
