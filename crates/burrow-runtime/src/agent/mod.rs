//! The agent loop: `Agent` sends the history to its model, runs the answer's tool calls as one batch, and repeats until the model stops.
//!
//! The caller owns the history (`Vec<Message>`); a run appends to it and
//! never copies it: each request borrows it, until the history holds a
//! compaction: then the request reads [`crate::compaction::view`], the
//! compaction's text and the messages after its cut, kept up to date as the
//! history grows ([`crate::compaction::View`]: a request reads only the
//! messages added since the one before). Whatever way a run ends, the
//! history it leaves is valid for the next run: every tool call has exactly
//! one result, in call order, right after the answer that made it.
//!
//! A run ends [`Outcome::Completed`] (the model answered without calling a
//! tool), [`Outcome::Failed`] with a stable [`FailureReason`],
//! [`Outcome::Paused`] (a call waits for approval) or [`Outcome::Stopped`]
//! (cancelled, or a hook said `continue: false`).

pub(crate) mod batch;
mod cancel;
mod capability;
mod compact;
mod context;
mod ids;
mod instructions;
mod memory;
mod observer;
mod style;
pub(crate) mod telemetry;

use std::sync::Arc;

use std::panic::AssertUnwindSafe;

use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tracing::Instrument;

use crate::hooks::{HookContext, HookEvent, Hooks};
use crate::message::{Message, ToolCall, Usage};
use crate::model::{Model, ModelRequest, ModelSettings, ResponseBuilder, StreamEvent};
use crate::tool::ToolRegistry;

pub use batch::PendingApproval;
pub(crate) use batch::{CallPipeline, PipelineCall};
pub use cancel::CancelToken;
pub use capability::{CallInfo, CallWork, Capability, RunInfo};
pub use context::{ContextFiles, DEFAULT_CONTEXT_CHARS, DEFAULT_CONTEXT_FILES};
pub use ids::CallIds;
pub use instructions::{FnProvider, InstructionProvider, Instructions};
pub use memory::{
    DEFAULT_MEMORY_CHARS, DEFAULT_MEMORY_DIR, MEMORY_FILE_NAME, MemoryFile, MemoryFiles,
};
pub use observer::{RunFailure, RunObserver};
pub use style::{DEFAULT_STYLE_CHARS, DEFAULT_STYLE_DIR, OutputStyle, OutputStyleFile};

/// Bounds on one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Most model requests in one run (100).
    pub max_turns: usize,
    /// Most tool calls in one run (`None`: no limit).
    pub max_tool_calls: Option<usize>,
    /// Most tokens one run uses, input and output as the model reports them
    /// summed over its requests (`None`: no limit; ADR 0386).
    pub max_run_tokens: Option<u64>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_turns: 100,
            max_tool_calls: None,
            max_run_tokens: None,
        }
    }
}

/// Why a run failed: a short stable name, the one type of every failed run's
/// reason, in the loop's [`Outcome`] and in the session store's
/// [`RunEnd`](crate::session::RunEnd).
///
/// It serialises as its name (`"max_turns"`, `"abandoned"`, an application's
/// own string for [`FailureReason::Other`]), the strings session files held
/// before it existed, so those still read; a name it does not know reads as
/// [`FailureReason::Other`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FailureReason {
    /// The run reached `max_turns` while the model still called tools.
    MaxTurns,
    /// The run reached `max_tool_calls`.
    MaxToolCalls,
    /// The run's tokens passed `max_run_tokens`.
    MaxRunTokens,
    /// The model request failed.
    ModelError,
    /// A tool call failed (an error or a panic).
    ToolFailure,
    /// A hook failed and its policy ends the run.
    HookFailed,
    /// An instruction provider failed.
    InstructionsFailed,
    /// Code the loop calls out to panicked (a hook handler, a capability, an
    /// instruction provider, the model adapter, an observer, a store).
    Panicked,
    /// The runner that drove the run stopped (its claim lapsed) before the run
    /// ended; the next claimant recorded it so.
    Abandoned,
    /// The run paused but asked nothing anyone could answer.
    PausedWithoutRequest,
    /// The runner's task for the run ended without a result.
    RunnerFailed,
    /// The session store failed a step the run could not go on without.
    StoreFailed,
    /// An application's own reason.
    #[serde(untagged)]
    Other(String),
}

impl FailureReason {
    /// The stable name.
    pub fn as_str(&self) -> &str {
        match self {
            FailureReason::Other(s) => s,
            builtin => builtin.builtin_name().unwrap_or("other"),
        }
    }

    /// A built-in reason's name (`None` for [`FailureReason::Other`]), without an allocation.
    pub(crate) fn builtin_name(&self) -> Option<&'static str> {
        Some(match self {
            FailureReason::MaxTurns => "max_turns",
            FailureReason::MaxToolCalls => "max_tool_calls",
            FailureReason::MaxRunTokens => "max_run_tokens",
            FailureReason::ModelError => "model_error",
            FailureReason::ToolFailure => "tool_failure",
            FailureReason::HookFailed => "hook_failed",
            FailureReason::InstructionsFailed => "instructions_failed",
            FailureReason::Panicked => "panicked",
            FailureReason::Abandoned => "abandoned",
            FailureReason::PausedWithoutRequest => "paused_without_request",
            FailureReason::RunnerFailed => "runner_failed",
            FailureReason::StoreFailed => "store_failed",
            FailureReason::Other(_) => return None,
        })
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The model answered without calling a tool.
    Completed,
    /// The run failed.
    Failed {
        /// The stable reason.
        reason: FailureReason,
        /// One sentence about what failed.
        message: String,
    },
    /// A call waits for an answer (approval).
    Paused {
        /// What it waits for.
        reason: String,
    },
    /// The run was stopped (cancelled, or by a hook).
    Stopped {
        /// Why.
        reason: String,
    },
}

impl Outcome {
    /// `completed`, `failed`, `paused` or `stopped`.
    pub fn name(&self) -> &'static str {
        match self {
            Outcome::Completed => "completed",
            Outcome::Failed { .. } => "failed",
            Outcome::Paused { .. } => "paused",
            Outcome::Stopped { .. } => "stopped",
        }
    }

    /// The reason: a failure's stable name, a pause's or a stop's text; none when completed.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Outcome::Completed => None,
            Outcome::Failed { reason, .. } => Some(reason.as_str()),
            Outcome::Paused { reason } | Outcome::Stopped { reason } => Some(reason),
        }
    }
}

/// What a run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunResult {
    /// The run's id.
    pub run_id: String,
    /// How it ended.
    pub outcome: Outcome,
    /// Model requests made.
    pub turns: usize,
    /// Tool calls answered (every call gets a result, run or not).
    pub tool_calls: usize,
    /// The usage of all requests (counts no request reported stay unknown).
    pub usage: Usage,
    /// A paused run's calls that wait for approval, in call order (typed:
    /// never found by their result's text).
    pub approvals: Vec<PendingApproval>,
}

/// One event of a run, as `burrow run --json` prints them (DESIGN §7).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEvent {
    /// The run started.
    RunStarted {
        /// The run's id.
        run_id: String,
        /// The thread's id, when the run belongs to one.
        #[serde(skip_serializing_if = "Option::is_none")]
        thread_id: Option<String>,
    },
    /// Answer text as it streams.
    TextDelta {
        /// The text.
        text: String,
    },
    /// Reasoning as it streams.
    ThinkingDelta {
        /// The text.
        text: String,
    },
    /// The model called a tool (arguments complete).
    ToolCall {
        /// The call id.
        id: String,
        /// The tool.
        name: String,
        /// The arguments.
        arguments: Value,
    },
    /// A call's result (after its batch ended, in call order).
    ToolResult {
        /// The call id.
        id: String,
        /// The tool.
        name: String,
        /// The text the model reads.
        content: String,
        /// True for a refusal, denial, unknown tool, invalid arguments, cancellation or failure.
        is_error: bool,
    },
    /// The usage of one model request.
    Usage {
        /// The counts it reported.
        usage: Usage,
    },
    /// A model request failed and is sent again after a wait.
    Retry {
        /// The attempt about to be made (2 for the first retry).
        attempt: u32,
        /// The most attempts made.
        attempts: u32,
        /// The wait before it, in milliseconds.
        wait_ms: u64,
        /// What kind of failure it was (`transport`, `rate_limited`, ...).
        kind: String,
        /// The failure, as one sentence.
        reason: String,
    },
    /// The history was compacted before a request (ADR 0293).
    Compacted {
        /// `auto` or `manual`.
        trigger: String,
        /// How many messages of the view the summary replaced.
        summarised: usize,
        /// How many of the last messages stay verbatim.
        kept: usize,
        /// The estimated input tokens before, if estimated.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tokens_before: Option<u64>,
        /// The summary.
        summary: String,
    },
    /// A compaction was due but failed: the run goes on uncompacted.
    CompactionFailed {
        /// `model_failed`, `empty_summary`, ...
        reason: String,
        /// One sentence.
        message: String,
    },
    /// A `PreCompact` hook blocked a due compaction: the run goes on uncompacted.
    CompactionBlocked {
        /// The hook's reason.
        reason: String,
    },
    /// The run ended.
    RunEnded {
        /// `completed`, `failed`, `paused` or `stopped`.
        outcome: String,
        /// The failure's stable reason, or the pause's or stop's text.
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// A failure's one sentence about what failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        /// The run's total usage.
        usage: Usage,
    },
}

/// Options of one run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// The run's id (a fresh one when `None`).
    pub run_id: Option<String>,
    /// The thread the run belongs to.
    pub thread_id: Option<String>,
    /// Stops the run when cancelled.
    pub cancel: CancelToken,
    /// Follows the run from inside the loop (a session runner), if any.
    pub observer: Option<Observer>,
    /// The call ids of the history, kept beside it from run to run (ADR
    /// 0284); `None`: the run counts them itself at its first answer with
    /// calls, in time linear in the history.
    pub call_ids: Option<CallIds>,
    /// Where the run crashes, in crash-recovery tests (feature `failpoints`).
    #[cfg(feature = "failpoints")]
    pub failpoint: Option<Arc<dyn crate::failpoint::Failpoint>>,
}

/// A shared [`RunObserver`], as [`RunOptions`] holds it.
#[derive(Clone)]
pub struct Observer(pub Arc<dyn RunObserver>);

impl std::fmt::Debug for Observer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Observer")
    }
}

/// A model, instructions, tools, hooks and limits.
#[derive(Clone)]
pub struct Agent {
    model: Arc<dyn Model>,
    instructions: Instructions,
    tools: ToolRegistry,
    hooks: Hooks,
    limits: Limits,
    settings: ModelSettings,
    capabilities: Vec<Arc<dyn Capability>>,
    /// When and how the agent compacts its history (ADR 0293), if it does.
    compaction: Option<crate::compaction::CompactionConfig>,
    /// Where the agent records its metrics, if anywhere (ADR 0191).
    #[cfg(feature = "otel")]
    metrics: Option<crate::otel::Metrics>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("model", &self.model.name())
            .field("instructions", &self.instructions)
            .field("tools", &self.tools)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Agent {
    /// An agent over `model` with no instructions, tools or hooks, and default limits.
    pub fn new(model: Arc<dyn Model>) -> Self {
        Self {
            model,
            instructions: Instructions::default(),
            tools: ToolRegistry::new(),
            hooks: Hooks::default(),
            limits: Limits::default(),
            settings: ModelSettings::default(),
            capabilities: Vec::new(),
            compaction: None,
            #[cfg(feature = "otel")]
            metrics: None,
        }
    }

    /// The same agent recording its model requests, tool calls and runs into
    /// `metrics` (feature `otel`, ADR 0191); without it the agent records none.
    #[cfg(feature = "otel")]
    pub fn with_metrics(mut self, metrics: crate::otel::Metrics) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Counts a run (a runner segment) that ended with `outcome` in the
    /// agent's metrics, if it has any.
    #[cfg(feature = "otel")]
    pub(crate) fn count_run(&self, outcome: &Outcome) {
        if let Some(metrics) = &self.metrics {
            metrics.run(outcome);
        }
    }

    /// The same agent with `capability` wrapping its runs and tool calls,
    /// inside the capabilities added before it.
    pub fn with_capability(mut self, capability: Arc<dyn Capability>) -> Self {
        self.capabilities.push(capability);
        self
    }

    /// The same agent with static instructions `text`.
    pub fn with_instructions(mut self, text: impl Into<String>) -> Self {
        let providers = std::mem::take(&mut self.instructions);
        let mut instructions = Instructions::new(text);
        for p in providers.providers() {
            instructions.push(p.clone());
        }
        self.instructions = instructions;
        self
    }

    /// The same agent with one more instruction provider (evaluated for every request).
    pub fn with_provider(mut self, provider: Arc<dyn InstructionProvider>) -> Self {
        self.instructions.push(provider);
        self
    }

    /// The same agent with `tools`.
    pub fn with_tools(mut self, tools: ToolRegistry) -> Self {
        self.tools = tools;
        self
    }

    /// The same agent with `hooks`.
    pub fn with_hooks(mut self, hooks: Hooks) -> Self {
        self.hooks = hooks;
        self
    }

    /// The same agent with `limits`.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The same agent with at most `n` model requests per run.
    pub fn with_max_turns(mut self, n: usize) -> Self {
        self.limits.max_turns = n;
        self
    }

    /// The same agent stopping a run whose tokens pass `n`.
    ///
    /// # Behavior
    /// Before each model request the run's usage so far (input plus output
    /// tokens as the model reported them, over this run's requests; cache
    /// reads and writes not counted, an unknown count as 0) is compared with
    /// `n`: past it, the run ends failed with the reason `max_run_tokens`
    /// and makes no more requests. A request is never cut short, so a run
    /// may end a request's worth past `n`; the bound is per run, as
    /// `max_turns` is (a resumed run counts from 0 again).
    pub fn with_max_run_tokens(mut self, n: u64) -> Self {
        self.limits.max_run_tokens = Some(n);
        self
    }

    /// The same agent with at most `n` tool calls per run.
    pub fn with_max_tool_calls(mut self, n: usize) -> Self {
        self.limits.max_tool_calls = Some(n);
        self
    }

    /// The same agent with request `settings` (max tokens, temperature, tool choice).
    pub fn with_settings(mut self, settings: ModelSettings) -> Self {
        self.settings = settings;
        self
    }

    /// The run's limit on tool calls, if any.
    pub(crate) fn max_tool_calls(&self) -> Option<usize> {
        self.limits.max_tool_calls
    }

    /// The tools.
    pub fn tools(&self) -> &ToolRegistry {
        &self.tools
    }

    /// The hooks.
    pub fn hooks(&self) -> &Hooks {
        &self.hooks
    }

    /// The steps every execution of this agent's tool calls goes through
    /// (its tools, hooks and capabilities), for run `run_id`: the loop's
    /// batches, and a runner's repair and approved calls (ADR 0241).
    pub(crate) fn call_pipeline<'a>(
        &'a self,
        hook_cx: &'a HookContext,
        run_id: &'a Arc<str>,
        cancel: &'a CancelToken,
    ) -> CallPipeline<'a> {
        CallPipeline {
            tools: &self.tools,
            hooks: &self.hooks,
            capabilities: &self.capabilities,
            hook_cx,
            run_id,
            cancel,
            observer: None,
            #[cfg(feature = "failpoints")]
            failpoint: None,
        }
    }

    /// Appends `prompt` as a user message and runs until the model stops.
    pub async fn run(&self, history: &mut Vec<Message>, prompt: impl Into<String>) -> RunResult {
        self.run_with(
            history,
            Some(prompt.into()),
            RunOptions::default(),
            &mut |_| {},
        )
        .await
    }

    /// Runs (appending `prompt` first, if any) with `options`, passing each event to `on_event`.
    pub async fn run_with(
        &self,
        history: &mut Vec<Message>,
        prompt: Option<String>,
        options: RunOptions,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> RunResult {
        let run_id = options.run_id.clone().unwrap_or_else(new_run_id);
        let span = telemetry::run_span(&run_id, options.thread_id.as_deref());
        let result = self
            .run_in_span(history, prompt, options, run_id, on_event)
            .instrument(span.clone())
            .await;
        telemetry::record_run_end(&span, result.outcome.name());
        #[cfg(feature = "otel")]
        self.count_run(&result.outcome);
        result
    }

    /// The run itself, inside its span.
    async fn run_in_span(
        &self,
        history: &mut Vec<Message>,
        prompt: Option<String>,
        options: RunOptions,
        run_id: String,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> RunResult {
        on_event(AgentEvent::RunStarted {
            run_id: run_id.clone(),
            thread_id: options.thread_id.clone(),
        });
        let mut state = RunState {
            run_id: Arc::from(run_id.as_str()),
            turns: 0,
            tool_calls: 0,
            usage: Usage::UNKNOWN,
            stop_hook_active: false,
            ids: options.call_ids.clone().unwrap_or_default(),
            approvals: Vec::new(),
            compaction: compact::Tracker::default(),
            view: crate::compaction::View::new(),
        };
        let run = RunInfo {
            run_id: run_id.clone(),
            thread_id: options.thread_id.clone(),
        };
        let mut asked = 0;
        // A panic anywhere in the loop (a hook handler, a capability, an
        // instruction provider, the model adapter, an observer) ends the run
        // `failed/panicked`; the history stays valid (ADR 0240).
        let outcome = AssertUnwindSafe(async {
            let mut refused = None;
            for capability in &self.capabilities {
                asked += 1;
                if let Err(failure) = capability.before_run(&run).await {
                    refused = Some(failure.into_outcome());
                    break;
                }
            }
            match refused {
                Some(outcome) => outcome,
                None => {
                    self.drive(history, prompt, &options, &mut state, on_event)
                        .await
                }
            }
        })
        .catch_unwind()
        .await
        .unwrap_or_else(|panic| {
            close_unanswered(history);
            panicked(panic.as_ref())
        });
        let after = AssertUnwindSafe(async {
            for capability in self.capabilities[..asked].iter().rev() {
                capability.after_run(&run, &outcome).await;
            }
        })
        .catch_unwind()
        .await;
        let outcome = match after {
            Ok(()) => outcome,
            Err(panic) => panicked(panic.as_ref()),
        };
        on_event(AgentEvent::RunEnded {
            outcome: outcome.name().to_owned(),
            reason: outcome.reason().map(str::to_owned),
            message: match &outcome {
                Outcome::Failed { message, .. } => Some(message.clone()),
                _ => None,
            },
            usage: state.usage,
        });
        let approvals = match outcome {
            Outcome::Paused { .. } => std::mem::take(&mut state.approvals),
            _ => Vec::new(),
        };
        RunResult {
            run_id,
            outcome,
            turns: state.turns,
            tool_calls: state.tool_calls,
            usage: state.usage,
            approvals,
        }
    }

    /// The same run as a stream of events; it ends after `run_ended`.
    ///
    /// The run goes on only while the stream is read: it is polled again
    /// only once the events it produced so far were taken, so no queue
    /// grows past what one step of the run produces, however slow the reader.
    pub fn run_stream<'a>(
        &'a self,
        history: &'a mut Vec<Message>,
        prompt: Option<String>,
        options: RunOptions,
    ) -> BoxStream<'a, AgentEvent> {
        let queue = Arc::new(std::sync::Mutex::new(std::collections::VecDeque::new()));
        let produced = queue.clone();
        let mut run = Box::pin(async move {
            let mut send = move |event: AgentEvent| {
                produced
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push_back(event);
            };
            self.run_with(history, prompt, options, &mut send).await;
        });
        let mut ended = false;
        futures::stream::poll_fn(move |cx| {
            loop {
                let next = queue
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .pop_front();
                if let Some(event) = next {
                    return std::task::Poll::Ready(Some(event));
                }
                if ended {
                    return std::task::Poll::Ready(None);
                }
                match run.as_mut().poll(cx) {
                    std::task::Poll::Ready(()) => ended = true,
                    std::task::Poll::Pending => return std::task::Poll::Pending,
                }
            }
        })
        .boxed()
    }

    async fn drive(
        &self,
        history: &mut Vec<Message>,
        prompt: Option<String>,
        options: &RunOptions,
        state: &mut RunState,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Outcome {
        let cancel = &options.cancel;
        let hook_cx = HookContext {
            session_id: options
                .thread_id
                .clone()
                .unwrap_or_else(|| state.run_id.to_string()),
            run_id: state.run_id.to_string(),
        };
        if let Some(early) = self.open(history, prompt, &hook_cx, cancel).await {
            return early;
        }
        loop {
            if cancel.is_cancelled() {
                return stopped_by_cancel();
            }
            if state.turns >= self.limits.max_turns {
                return Outcome::Failed {
                    reason: FailureReason::MaxTurns,
                    message: format!(
                        "the run reached its limit of {} model requests",
                        self.limits.max_turns
                    ),
                };
            }
            if let Some(max) = self.limits.max_run_tokens {
                let used =
                    state.usage.input_tokens.unwrap_or(0) + state.usage.output_tokens.unwrap_or(0);
                if used > max {
                    return Outcome::Failed {
                        reason: FailureReason::MaxRunTokens,
                        message: format!(
                            "the run used {used} tokens (input and output), past its limit of {max}"
                        ),
                    };
                }
            }
            let span =
                telemetry::turn_span(&state.run_id, options.thread_id.as_deref(), state.turns + 1);
            let step = self
                .turn(history, options, state, &hook_cx, on_event)
                .instrument(span)
                .await;
            if let Some(outcome) = step {
                return outcome;
            }
        }
    }

    /// One turn: a model request and the tool calls of its answer. `None`
    /// when the run goes on to another turn.
    async fn turn(
        &self,
        history: &mut Vec<Message>,
        options: &RunOptions,
        state: &mut RunState,
        hook_cx: &HookContext,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Option<Outcome> {
        let cancel = &options.cancel;
        if let Some(Observer(observer)) = &options.observer {
            match observer.before_request(history).await {
                Ok(steering) => {
                    if let Some(outcome) = self.steer(history, steering, hook_cx, cancel).await {
                        return Some(outcome);
                    }
                }
                Err(failure) => return Some(failure.into_outcome()),
            }
        }
        if let Err(failure) = self.capability_notes(history, options, state).await {
            return Some(failure.into_outcome());
        }
        let system = match self.instructions.render(history).await {
            Ok(system) => system,
            Err(e) => {
                return Some(Outcome::Failed {
                    reason: FailureReason::InstructionsFailed,
                    message: e.to_string(),
                });
            }
        };
        if let Some(outcome) = self
            .compact_if_due(history, &system, state, hook_cx, cancel, on_event)
            .await
        {
            return Some(outcome);
        }
        let view = state.view.of(history);
        let request = ModelRequest {
            system: &system,
            messages: view,
            tools: self.tools.definitions(),
            settings: &self.settings,
        };
        state.turns += 1;
        let span = telemetry::model_span(self.model.name());
        #[cfg(feature = "otel")]
        let asked = self.metrics.as_ref().map(|_| std::time::Instant::now());
        let answer = tokio::select! {
            biased;
            () = cancel.cancelled() => {
                #[cfg(feature = "otel")]
                self.time_request(asked, crate::otel::metrics::RequestEnd::Failed("cancelled"));
                return Some(stopped_by_cancel());
            }
            answer = self.answer(request, &span, on_event).instrument(span.clone()) => answer,
        };
        let response = match answer {
            Ok(response) => {
                telemetry::record_response(&span, &response.usage, &response.finish);
                #[cfg(feature = "otel")]
                self.time_request(
                    asked,
                    crate::otel::metrics::RequestEnd::Answered(&response.usage),
                );
                response
            }
            Err(e) => {
                telemetry::record_model_error(&span, &e);
                #[cfg(feature = "otel")]
                self.time_request(
                    asked,
                    crate::otel::metrics::RequestEnd::Failed(e.kind.as_str()),
                );
                return Some(Outcome::Failed {
                    reason: FailureReason::ModelError,
                    message: format!("{} ({})", e.message, e.kind.as_str()),
                });
            }
        };
        drop(system);
        state.usage.add(&response.usage);
        on_event(AgentEvent::Usage {
            usage: response.usage,
        });
        let mut message = response.into_message();
        state.ids.lock().make_unique(history, &mut message);
        let calls: Vec<ToolCall> = message.tool_calls().cloned().collect();
        history.push(message);
        if let Some(Observer(observer)) = &options.observer
            && let Err(failure) = observer.answered(history).await
        {
            return Some(failure.into_outcome());
        }
        if calls.is_empty() && !self.capabilities.is_empty() {
            let run = RunInfo {
                run_id: state.run_id.to_string(),
                thread_id: options.thread_id.clone(),
            };
            let mut news = Vec::new();
            for capability in &self.capabilities {
                news.extend(tokio::select! {
                    biased;
                    () = cancel.cancelled() => return Some(stopped_by_cancel()),
                    more = capability.before_end(&run) => more,
                });
            }
            if !news.is_empty() {
                history.extend(news);
                return None;
            }
        }
        if calls.is_empty() {
            if !self.hooks.has_event(HookEvent::Stop) {
                return Some(Outcome::Completed);
            }
            let said = tokio::select! {
                biased;
                () = cancel.cancelled() => return Some(stopped_by_cancel()),
                said = self.hooks.stop(hook_cx, state.stop_hook_active) => said,
            };
            if let Some(message) = said.run_failure {
                return Some(hook_failed(message));
            }
            if let Some(reason) = said.stop {
                return Some(Outcome::Stopped { reason });
            }
            match said.block {
                // A Stop hook keeps the run going: its reason is the
                // model's next message.
                Some(reason) => {
                    state.stop_hook_active = true;
                    history.push(Message::user(reason));
                    return None;
                }
                None => return Some(Outcome::Completed),
            }
        }
        for call in &calls {
            on_event(AgentEvent::ToolCall {
                id: call.id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
            });
        }
        let over_limit = self
            .limits
            .max_tool_calls
            .filter(|max| state.tool_calls + calls.len() > *max);
        let batch = match over_limit {
            Some(max) => batch::BatchOutcome {
                results: calls
                    .iter()
                    .map(|c| crate::message::ToolResult {
                        call_id: c.id.clone(),
                        name: c.name.clone(),
                        content: over_limit_text(max),
                        is_error: true,
                    })
                    .collect(),
                #[cfg(feature = "otel")]
                ended: calls
                    .iter()
                    .map(|c| {
                        (
                            telemetry::CallOutcome::Refused,
                            self.tools.get(&c.name).is_some(),
                        )
                    })
                    .collect(),
                ..Default::default()
            },
            None => {
                let entries: Vec<PipelineCall<'_>> =
                    calls.iter().map(PipelineCall::decide).collect();
                let pipeline = CallPipeline {
                    observer: options.observer.as_ref().map(|Observer(o)| o.as_ref()),
                    #[cfg(feature = "failpoints")]
                    failpoint: options.failpoint.as_ref(),
                    ..self.call_pipeline(hook_cx, &state.run_id, cancel)
                };
                pipeline.run(&entries).await
            }
        };
        state.approvals = batch.approvals;
        state.tool_calls += batch.results.len();
        #[cfg(feature = "otel")]
        if let Some(metrics) = &self.metrics {
            for (result, (outcome, known)) in batch.results.iter().zip(&batch.ended) {
                let tool = if *known {
                    result.name.as_str()
                } else {
                    crate::otel::metrics::OTHER_TOOL
                };
                metrics.tool_call(tool, *outcome);
            }
        }
        tracing::Span::current().record("tool_calls", batch.results.len());
        history.reserve(batch.results.len());
        for result in batch.results {
            on_event(AgentEvent::ToolResult {
                id: result.call_id.clone(),
                name: result.name.clone(),
                content: result.content.clone(),
                is_error: result.is_error,
            });
            history.push(Message::ToolResult(result));
        }
        let observed_pause = match &options.observer {
            Some(Observer(observer)) => match observer.batch_ended(history).await {
                Ok(pause) => pause,
                Err(failure) => return Some(failure.into_outcome()),
            },
            None => None,
        };
        if let Some(max) = over_limit {
            return Some(Outcome::Failed {
                reason: FailureReason::MaxToolCalls,
                message: format!("the run reached its limit of {max} tool calls"),
            });
        }
        if batch.cancelled {
            return Some(stopped_by_cancel());
        }
        if let Some(message) = batch.failure {
            return Some(Outcome::Failed {
                reason: FailureReason::ToolFailure,
                message,
            });
        }
        if let Some(message) = batch.hook_failure {
            return Some(hook_failed(message));
        }
        if let Some(reason) = batch.stop {
            return Some(Outcome::Stopped { reason });
        }
        if let Some(reason) = batch.paused.or(observed_pause) {
            return Some(Outcome::Paused { reason });
        }
        None
    }

    /// Starts the run: the `SessionStart` hooks when the history is empty
    /// (source `startup`), the `UserPromptSubmit` hooks for the prompt, then
    /// the prompt (with the hooks' context after it) joins the history.
    /// `Some` when the hooks end the run before any model request.
    async fn open(
        &self,
        history: &mut Vec<Message>,
        prompt: Option<String>,
        hook_cx: &HookContext,
        cancel: &CancelToken,
    ) -> Option<Outcome> {
        let mut context = Vec::new();
        if history.is_empty() && self.hooks.has_event(HookEvent::SessionStart) {
            let said = tokio::select! {
                biased;
                () = cancel.cancelled() => return Some(stopped_by_cancel()),
                said = self.hooks.session_start(hook_cx, "startup", self.model.name()) => said,
            };
            if let Some(message) = said.run_failure {
                return Some(hook_failed(message));
            }
            if let Some(reason) = said.stop {
                return Some(Outcome::Stopped { reason });
            }
            // A block of SessionStart is for the user only (Claude Code shows
            // its stderr and goes on).
            context.extend(said.context);
        }
        if let Some(prompt) = &prompt
            && self.hooks.has_event(HookEvent::UserPromptSubmit)
        {
            let said = tokio::select! {
                biased;
                () = cancel.cancelled() => return Some(stopped_by_cancel()),
                said = self.hooks.user_prompt_submit(hook_cx, prompt) => said,
            };
            if let Some(message) = said.run_failure {
                return Some(hook_failed(message));
            }
            if let Some(reason) = said.stop {
                return Some(Outcome::Stopped { reason });
            }
            if let Some(reason) = said.block {
                // The prompt is erased: it never reaches the history.
                return Some(Outcome::Stopped {
                    reason: format!("a UserPromptSubmit hook blocked the prompt: {reason}"),
                });
            }
            context.extend(said.context);
        }
        let text = match (prompt, context.is_empty()) {
            (Some(prompt), true) => Some(prompt),
            (Some(prompt), false) => Some(format!("{prompt}\n\n{}", context.join("\n\n"))),
            (None, false) => Some(context.join("\n\n")),
            (None, true) => None,
        };
        if let Some(text) = text {
            history.push(Message::user(text));
        }
        None
    }

    /// Appends what each capability's `before_request` returns to the history.
    async fn capability_notes(
        &self,
        history: &mut Vec<Message>,
        options: &RunOptions,
        state: &RunState,
    ) -> Result<(), RunFailure> {
        if self.capabilities.is_empty() {
            return Ok(());
        }
        let run = RunInfo {
            run_id: state.run_id.to_string(),
            thread_id: options.thread_id.clone(),
        };
        for capability in &self.capabilities {
            let notes = capability.before_request(&run, history).await?;
            history.extend(notes);
        }
        Ok(())
    }

    /// Appends steering messages to the history, each user message through
    /// the `UserPromptSubmit` hooks like a prompt: a block erases it (the run
    /// goes on), their context joins it. `Some` when the hooks end the run.
    async fn steer(
        &self,
        history: &mut Vec<Message>,
        steering: Vec<Message>,
        hook_cx: &HookContext,
        cancel: &CancelToken,
    ) -> Option<Outcome> {
        if !self.hooks.has_event(HookEvent::UserPromptSubmit) {
            history.extend(steering);
            return None;
        }
        for message in steering {
            let Message::User { text } = message else {
                history.push(message);
                continue;
            };
            let said = tokio::select! {
                biased;
                () = cancel.cancelled() => return Some(stopped_by_cancel()),
                said = self.hooks.user_prompt_submit(hook_cx, &text) => said,
            };
            if let Some(message) = said.run_failure {
                return Some(hook_failed(message));
            }
            if let Some(reason) = said.stop {
                return Some(Outcome::Stopped { reason });
            }
            if said.block.is_some() {
                continue;
            }
            history.push(Message::user(if said.context.is_empty() {
                text
            } else {
                format!("{text}\n\n{}", said.context.join("\n\n"))
            }));
        }
        None
    }

    /// Records a model request asked at `asked` (when the agent has metrics).
    #[cfg(feature = "otel")]
    fn time_request(
        &self,
        asked: Option<std::time::Instant>,
        end: crate::otel::metrics::RequestEnd<'_>,
    ) {
        if let (Some(metrics), Some(asked)) = (&self.metrics, asked) {
            metrics.model_request(self.model.name(), asked.elapsed(), end);
        }
    }

    /// Streams one answer, forwarding text and thinking deltas as they come
    /// and timing the first streamed event on `span`.
    async fn answer(
        &self,
        request: ModelRequest<'_>,
        span: &tracing::Span,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<crate::model::ModelResponse, crate::model::ModelError> {
        let mut first = telemetry::FirstPart::start(span);
        let mut stream = self.model.stream(request).await?;
        let mut builder = ResponseBuilder::new();
        while let Some(event) = stream.next().await {
            let event = event?;
            if let StreamEvent::Retry {
                attempt,
                attempts,
                wait_ms,
                kind,
                reason,
            } = event
            {
                on_event(AgentEvent::Retry {
                    attempt,
                    attempts,
                    wait_ms,
                    kind: kind.as_str().to_owned(),
                    reason,
                });
                continue;
            }
            first.part(span);
            match &event {
                StreamEvent::TextDelta { text, .. } => {
                    on_event(AgentEvent::TextDelta { text: text.clone() })
                }
                StreamEvent::ThinkingDelta { text, .. } => {
                    on_event(AgentEvent::ThinkingDelta { text: text.clone() })
                }
                _ => {}
            }
            builder.push(event)?;
        }
        builder.finish()
    }
}

struct RunState {
    run_id: Arc<str>,
    turns: usize,
    tool_calls: usize,
    usage: Usage,
    /// A Stop hook has kept this run going.
    stop_hook_active: bool,
    /// The call ids the history uses, for renaming a model's repeats.
    ids: CallIds,
    /// The last batch's calls sent for approval.
    approvals: Vec<PendingApproval>,
    /// What the compaction estimate anchors on.
    compaction: compact::Tracker,
    /// What the model reads of the history, kept up to date as it grows
    /// (each request reads only the messages added since the one before).
    view: crate::compaction::View,
}

fn hook_failed(message: String) -> Outcome {
    Outcome::Failed {
        reason: FailureReason::HookFailed,
        message,
    }
}

/// The outcome of a run whose loop panicked.
pub(crate) fn panicked(panic: &(dyn std::any::Any + Send)) -> Outcome {
    Outcome::Failed {
        reason: FailureReason::Panicked,
        message: format!("the run panicked: {}", batch::panic_message(panic)),
    }
}

/// What the model reads for a call whose result was lost to a panic of the loop.
pub(crate) const LOST_TO_PANIC: &str = "The outcome of this call is unknown: the run failed (something it called panicked) before the call's result was known. Check whether it took effect before calling it again.";

/// Gives each unanswered call of the history's last answer a result saying
/// its outcome is unknown, so the history stays valid after a panic.
fn close_unanswered(history: &mut Vec<Message>) {
    let Some(at) = history
        .iter()
        .rposition(|m| matches!(m, Message::Assistant { .. }))
    else {
        return;
    };
    let answered: Vec<String> = history[at + 1..]
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult(r) => Some(r.call_id.clone()),
            _ => None,
        })
        .collect();
    let missing: Vec<ToolCall> = history[at]
        .tool_calls()
        .filter(|c| !answered.contains(&c.id))
        .cloned()
        .collect();
    for call in missing {
        history.push(Message::ToolResult(crate::message::ToolResult {
            call_id: call.id,
            name: call.name,
            content: LOST_TO_PANIC.to_owned(),
            is_error: true,
        }));
    }
}

fn stopped_by_cancel() -> Outcome {
    Outcome::Stopped {
        reason: "cancelled".to_owned(),
    }
}

fn new_run_id() -> String {
    format!("run_{}", uuid::Uuid::now_v7().simple())
}

/// What the model reads for a call refused because the run reached its
/// limit of `max` tool calls.
pub(crate) fn over_limit_text(max: usize) -> String {
    format!("The call was not run: the run reached its limit of {max} tool calls.")
}
