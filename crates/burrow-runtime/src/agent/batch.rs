//! The call pipeline: every execution of a tool call (an answer's batch, a call decided again or replayed after a crash, an approved call on resume) goes through the same steps; the calls of one batch run concurrently, except where their lock keys meet; one result per call, in call order.
//!
//! [`CallPipeline::run`] is the one way a call runs (ADR 0241). Phases, for a
//! batch of calls:
//! 1. Each call is checked (a known tool, arguments that are an object and
//!    fit the schema); a call that fails a check gets a result the model
//!    can act on and does not run.
//! 2. The `PreToolUse` hooks of every call run concurrently; a hook may deny
//!    the call, ask for approval (the call does not run; a typed
//!    [`PendingApproval`] keeps the hook's `updatedInput`) or replace its
//!    arguments. An approved call skips this step: the approval is its
//!    decision. Lock keys are taken from the final arguments.
//! 3. Each call waits for the earlier calls its keys meet (the workspace key
//!    meets every key), then runs; a panic is caught and is a failure of that
//!    call. Its `PostToolUse` hooks (`PostToolUseFailure` for a refusal or
//!    an error) run right after it; calls waiting on it do not wait for them. Cancellation turns every
//!    call still waiting or running into a "cancelled" result.
//! 4. The results come back in call order once the whole batch has ended.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use burrow_backend::LockKey;
use futures::FutureExt;
use futures::future::{Shared, join_all};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use tracing::Instrument;

use super::cancel::CancelToken;
use super::capability::{CallInfo, CallWork, Capability};
use super::telemetry::{self, CallOutcome};
use crate::hooks::{Decision, HookContext, Hooks, with_context};
use crate::message::{ToolCall, ToolResult};
use crate::tool::{CallContext, Tool, ToolOutput, ToolRegistry, WORKSPACE_LOCK};

/// A call a `PreToolUse` hook sent for approval: it did not run, and runs
/// once approved with [`PendingApproval::arguments`] when a hook rewrote them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingApproval {
    /// The call's id.
    pub call_id: String,
    /// The tool called.
    pub tool_name: String,
    /// Why approval is needed (the hook's reason).
    pub reason: String,
    /// The arguments the call runs with once approved, when a hook's
    /// `updatedInput` replaced the model's (validated by the tool); `None`:
    /// the call's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
}

/// One call given to the pipeline.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PipelineCall<'a> {
    /// The call as the model made it.
    pub call: &'a ToolCall,
    /// `Some`: the call was approved (its decision is made; no `PreToolUse`
    /// hook is asked again), to run with these arguments.
    pub approved: Option<&'a Value>,
}

impl<'a> PipelineCall<'a> {
    /// A call its `PreToolUse` hooks decide.
    pub(crate) fn decide(call: &'a ToolCall) -> Self {
        Self {
            call,
            approved: None,
        }
    }
}

/// What a batch produced.
#[derive(Debug, Default)]
pub(crate) struct BatchOutcome {
    /// One per call, in call order.
    pub results: Vec<ToolResult>,
    /// Per call, in call order: whether its tool was started (it may have
    /// taken effect), as opposed to refused before it ran.
    pub ran: Vec<bool>,
    /// The calls sent for approval, in call order.
    pub approvals: Vec<PendingApproval>,
    /// The first failure (a tool's `Err` or panic), which ends the run.
    pub failure: Option<String>,
    /// A hook failure whose policy ends the run.
    pub hook_failure: Option<String>,
    /// A hook asked to stop the run (`continue: false`).
    pub stop: Option<String>,
    /// A call waits for approval (`ask`).
    pub paused: Option<String>,
    /// The batch was cancelled.
    pub cancelled: bool,
    /// How each call ended, in call order, and whether the agent has its
    /// tool: what the tool-call metric counts.
    #[cfg(feature = "otel")]
    pub ended: Vec<(CallOutcome, bool)>,
}

/// Why a call ended as it did, before it becomes a result.
enum Ended {
    Output(ToolOutput),
    /// A capability refused the call before it ran (its PostToolUseFailure hooks see the refusal).
    NotRun(ToolOutput),
    Failed(String),
    Cancelled,
}

struct Prepared<'a> {
    call: &'a ToolCall,
    /// Approved already: no `PreToolUse` hook decides it.
    approved: bool,
    tool: Option<&'a Arc<dyn Tool>>,
    /// The result when the call does not run.
    early: Option<ToolOutput>,
    arguments: Value,
    context: Vec<String>,
    locks: Vec<LockKey>,
}

pub(crate) const CANCELLED: &str = "The call was cancelled before it finished: the run was stopped. Its effects, if any, may be partial; check before calling it again.";

fn check<'a>(tools: &'a ToolRegistry, entry: PipelineCall<'a>) -> Prepared<'a> {
    let call = entry.call;
    let mut prepared = Prepared {
        call,
        approved: entry.approved.is_some(),
        tool: None,
        early: None,
        arguments: Value::Null,
        context: Vec::new(),
        locks: Vec::new(),
    };
    let Some(tool) = tools.get(&call.name) else {
        prepared.early = Some(ToolOutput::refused(tools.unknown_tool(&call.name)));
        return prepared;
    };
    prepared.tool = Some(tool);
    let arguments = match entry.approved.unwrap_or(&call.arguments) {
        Value::String(raw) => {
            prepared.early = Some(ToolOutput::refused(format!(
                "The arguments for {} are not valid JSON ({}); send them again as one JSON object that fits the tool's input schema.",
                call.name,
                preview(raw)
            )));
            return prepared;
        }
        other => match crate::tool::object_arguments(&call.name, other.clone()) {
            Ok(arguments) => arguments,
            Err(refusal) => {
                prepared.early = Some(ToolOutput::refused(refusal));
                return prepared;
            }
        },
    };
    if let Err(why) = tool.validate(&arguments) {
        prepared.early = Some(ToolOutput::refused(why));
        return prepared;
    }
    prepared.arguments = arguments;
    prepared
}

fn preview(raw: &str) -> String {
    let cut: String = raw.chars().take(80).collect();
    if cut.len() < raw.len() {
        format!("{cut}...")
    } else {
        cut
    }
}

/// Runs one call that passed every check, inside the capabilities: each
/// `before_call` may refuse it, each `around_call` wraps its work (the first
/// capability outermost), and `after_call` / `on_call_error` see how it
/// ended. A panic, in the tool or in a capability, is a failure of the call.
async fn run_call(
    capabilities: &[Arc<dyn Capability>],
    tool: &Arc<dyn Tool>,
    p: &Prepared<'_>,
    run_id: &Arc<str>,
    batch: &[ToolCall],
) -> Ended {
    let info = CallInfo {
        run_id,
        call_id: &p.call.id,
        tool: &p.call.name,
        arguments: &p.arguments,
        batch,
    };
    for capability in capabilities {
        if let Err(refusal) = capability.before_call(&info).await {
            return Ended::NotRun(ToolOutput::refused(refusal));
        }
    }
    let cx = CallContext {
        run_id: run_id.clone(),
        call_id: p.call.id.clone(),
    };
    let arguments = p.arguments.clone();
    let mut work: CallWork<'_> = Box::pin(async move {
        match AssertUnwindSafe(tool.call(&cx, arguments))
            .catch_unwind()
            .await
        {
            Ok(Ok(output)) => Ok(output),
            Ok(Err(e)) => Err(e.to_string()),
            Err(panic) => Err(format!(
                "the tool panicked: {}",
                panic_message(pass_on_loop_panics(panic).as_ref())
            )),
        }
    });
    for capability in capabilities.iter().rev() {
        work = capability.around_call(info, work);
    }
    let ended = match AssertUnwindSafe(work).catch_unwind().await {
        Ok(ended) => ended,
        Err(panic) => Err(format!(
            "a capability panicked: {}",
            panic_message(pass_on_loop_panics(panic).as_ref())
        )),
    };
    match ended {
        Ok(mut output) => {
            for capability in capabilities.iter().rev() {
                capability.after_call(&info, &mut output).await;
            }
            Ended::Output(output)
        }
        Err(message) => {
            for capability in capabilities.iter().rev() {
                capability.on_call_error(&info, &message).await;
            }
            Ended::Failed(message)
        }
    }
}

/// The payload of a panic of the loop's own machinery met inside a call (the
/// session store recording the call started or finished, ADR 0352): it is not
/// the tool's, so the call's guards pass it on and the run ends
/// `failed/panicked` instead of blaming the tool.
#[derive(Debug)]
pub(crate) struct LoopPanic(pub(crate) String);

/// Passes a [`LoopPanic`] on (unwinding further); any other panic is returned.
fn pass_on_loop_panics(panic: Box<dyn std::any::Any + Send>) -> Box<dyn std::any::Any + Send> {
    if panic.is::<LoopPanic>() {
        std::panic::resume_unwind(panic);
    }
    panic
}

/// The decision of a call no `PreToolUse` hook is configured for.
fn allowed() -> crate::hooks::PreToolUse {
    crate::hooks::PreToolUse {
        decision: Decision::Allow,
        reason: None,
        arguments: None,
        context: Vec::new(),
        stop: None,
        run_failure: None,
        failures: Vec::new(),
    }
}

/// For each call, the earlier calls it must wait for.
fn predecessors(prepared: &[Prepared<'_>]) -> Vec<Vec<usize>> {
    let mut last: HashMap<&str, usize> = HashMap::new();
    let mut since_workspace: Vec<usize> = Vec::new();
    let mut last_workspace: Option<usize> = None;
    let mut preds = Vec::with_capacity(prepared.len());
    for (i, p) in prepared.iter().enumerate() {
        let mut mine = Vec::new();
        if p.early.is_some() || p.locks.is_empty() {
            preds.push(mine);
            continue;
        }
        let workspace = p.locks.iter().any(|k| k.as_str() == WORKSPACE_LOCK);
        if workspace {
            mine.append(&mut since_workspace);
            mine.extend(last_workspace);
            last_workspace = Some(i);
        } else {
            for key in &p.locks {
                if let Some(&j) = last.get(key.as_str()) {
                    mine.push(j);
                }
                last.insert(key.as_str(), i);
            }
            mine.extend(last_workspace);
            since_workspace.push(i);
        }
        mine.sort_unstable();
        mine.dedup();
        preds.push(mine);
    }
    preds
}

/// The steps every execution of a tool call goes through, set up for one run.
pub(crate) struct CallPipeline<'a> {
    pub tools: &'a ToolRegistry,
    pub hooks: &'a Hooks,
    pub capabilities: &'a [Arc<dyn Capability>],
    pub hook_cx: &'a HookContext,
    pub run_id: &'a Arc<str>,
    pub cancel: &'a CancelToken,
    /// Told which calls will not run once the batch is decided (a session runner), if anyone.
    pub observer: Option<&'a dyn super::RunObserver>,
    /// Where the run crashes, in crash-recovery tests.
    #[cfg(feature = "failpoints")]
    pub failpoint: Option<&'a Arc<dyn crate::failpoint::Failpoint>>,
}

impl CallPipeline<'_> {
    /// Runs one batch of calls (an answer's, in call order) through every step.
    pub(crate) async fn run(&self, calls: &[PipelineCall<'_>]) -> BatchOutcome {
        run_batch(self, calls).await
    }
}

async fn run_batch(pipeline: &CallPipeline<'_>, calls: &[PipelineCall<'_>]) -> BatchOutcome {
    let CallPipeline {
        tools,
        hooks,
        capabilities,
        hook_cx,
        run_id,
        cancel,
        ..
    } = *pipeline;
    let mut out = BatchOutcome::default();
    let mut prepared: Vec<Prepared<'_>> = calls.iter().map(|c| check(tools, *c)).collect();
    // Capabilities see the whole batch as the model made it (e.g. todos refuse a
    // second `write_todos` in one answer).
    let batch: Vec<ToolCall> = calls.iter().map(|c| c.call.clone()).collect();
    let batch = batch.as_slice();

    // PreToolUse hooks, every call's at once (an approved call's decision is made).
    let deciding = prepared
        .iter()
        .any(|p| p.tool.is_some() && p.early.is_none() && !p.approved);
    if deciding && (hooks.has_pre_tool_use() || cfg!(feature = "failpoints")) {
        let pending = join_all(prepared.iter().map(|p| async move {
            match (p.tool, &p.early) {
                (Some(_), None) if p.approved => None,
                // A panicking PreToolUse hook denies the call (fail closed).
                (Some(tool), None) => Some({
                    crate::crash_point!(
                        pipeline.failpoint,
                        crate::failpoint::CrashPoint::BeforePreToolUse {
                            call_id: p.call.id.clone()
                        }
                    );
                    let decided = if !hooks.has_pre_tool_use() {
                        allowed()
                    } else {
                        AssertUnwindSafe(
                            hooks
                                .pre_tool_use(hook_cx, p.call, &p.arguments, &|v| tool.validate(v)),
                        )
                        .catch_unwind()
                        .await
                        .unwrap_or_else(|panic| crate::hooks::PreToolUse {
                            decision: Decision::Deny,
                            reason: Some(format!(
                                "a PreToolUse hook panicked: {}",
                                panic_message(panic.as_ref())
                            )),
                            arguments: None,
                            context: Vec::new(),
                            stop: None,
                            run_failure: None,
                            failures: Vec::new(),
                        })
                    };
                    crate::crash_point!(
                        pipeline.failpoint,
                        crate::failpoint::CrashPoint::Decided {
                            call_id: p.call.id.clone()
                        }
                    );
                    decided
                }),
                _ => None,
            }
        }));
        // Cancelled while the hooks run: no call runs (the hooks' processes
        // are killed as they are dropped), each gets its "cancelled" result.
        let decisions = tokio::select! {
            biased;
            () = cancel.cancelled() => {
                for p in prepared.iter_mut() {
                    if p.early.is_none() {
                        p.early = Some(ToolOutput::refused(CANCELLED));
                    }
                }
                out.cancelled = true;
                prepared.iter().map(|_| None).collect()
            }
            decisions = pending => decisions,
        };
        for (p, decision) in prepared.iter_mut().zip(decisions) {
            let Some(d) = decision else { continue };
            p.context = d.context;
            if let Some(reason) = d.stop {
                out.stop.get_or_insert(reason.clone());
                p.early = Some(ToolOutput::refused(format!(
                    "A hook stopped the run before this call ran: {reason}"
                )));
                continue;
            }
            if let Some(failure) = d.run_failure {
                out.hook_failure.get_or_insert(failure);
            }
            match d.decision {
                Decision::Allow => {
                    if let Some(args) = d.arguments {
                        p.arguments = args;
                    }
                }
                Decision::Deny => {
                    p.early = Some(ToolOutput::refused(format!(
                        "The call was denied by a hook: {}",
                        d.reason.unwrap_or_else(|| "no reason given".to_owned())
                    )));
                }
                Decision::Ask => {
                    let reason = d
                        .reason
                        .unwrap_or_else(|| "a hook asked for approval".into());
                    out.paused.get_or_insert(reason.clone());
                    // The hook's updatedInput is what the approved call runs with.
                    out.approvals.push(PendingApproval {
                        call_id: p.call.id.clone(),
                        tool_name: p.call.name.clone(),
                        reason: reason.clone(),
                        arguments: d.arguments,
                    });
                    p.early = Some(ToolOutput::refused(format!(
                        "The call was not run: it needs approval ({reason})."
                    )));
                }
            }
        }
    }
    for p in prepared.iter_mut() {
        if let (Some(tool), None) = (p.tool, &p.early) {
            p.locks = tool.locks(&p.arguments);
        }
    }
    if let Some(observer) = pipeline.observer {
        let not_run: Vec<&str> = prepared
            .iter()
            .filter(|p| p.early.is_some())
            .map(|p| p.call.id.as_str())
            .collect();
        observer.calls_decided(&not_run);
    }
    let preds = predecessors(&prepared);

    // One completion signal per call; a dropped sender also signals.
    let mut senders = Vec::with_capacity(prepared.len());
    let mut done: Vec<Shared<futures::channel::oneshot::Receiver<()>>> =
        Vec::with_capacity(prepared.len());
    for _ in &prepared {
        let (tx, rx) = futures::channel::oneshot::channel::<()>();
        senders.push(tx);
        done.push(rx.shared());
    }
    let done = &done;
    let runs = prepared
        .iter()
        .zip(preds)
        .zip(senders)
        .map(|((p, preds), tx)| {
            // Each call's span is entered only while its own future is polled,
            // so concurrent calls nest under the turn, not under each other.
            let span = telemetry::tool_span(p.call);
            let recorder = span.clone();
            async move {
                let ended = match (&p.early, p.tool) {
                    (Some(early), _) => Ended::Output(early.clone()),
                    (None, None) => Ended::Cancelled,
                    (None, Some(tool)) => {
                        let work = async {
                            for j in &preds {
                                let _ = done[*j].clone().await;
                            }
                            run_call(capabilities, tool, p, run_id, batch).await
                        };
                        tokio::select! {
                            biased;
                            () = cancel.cancelled() => Ended::Cancelled,
                            ended = work => ended,
                        }
                    }
                };
                // Calls waiting on this one may start; its post hooks only observe.
                drop(tx);
                telemetry::record_call(&recorder, call_outcome(&ended));
                // Refusals and errors go to PostToolUseFailure, as in Claude
                // Code; calls the loop refused before any step ran go to neither.
                let post = match &ended {
                    Ended::Output(output)
                        if p.early.is_none() && !output.is_error && hooks.has_post_tool_use() =>
                    {
                        Some(
                            hooks
                                .post_tool_use(hook_cx, p.call, &p.arguments, output)
                                .await,
                        )
                    }
                    Ended::Output(output) | Ended::NotRun(output)
                        if p.early.is_none()
                            && output.is_error
                            && hooks.has_post_tool_use_failure() =>
                    {
                        Some(
                            hooks
                                .post_tool_use_failure(hook_cx, p.call, &p.arguments, &output.text)
                                .await,
                        )
                    }
                    Ended::Failed(message) if hooks.has_post_tool_use_failure() => Some(
                        hooks
                            .post_tool_use_failure(hook_cx, p.call, &p.arguments, message)
                            .await,
                    ),
                    _ => None,
                };
                (ended, post)
            }
            .instrument(span)
        });
    let ended = join_all(runs).await;

    for (p, (ended, post)) in prepared.iter().zip(ended) {
        let mut context = p.context.clone();
        if let Some(post) = post {
            context.extend(post.context);
            if let Some(stop) = post.stop {
                out.stop.get_or_insert(stop);
            }
            if let Some(f) = post.run_failure {
                out.hook_failure.get_or_insert(f);
            }
        }
        #[cfg(feature = "otel")]
        out.ended.push((call_outcome(&ended), p.tool.is_some()));
        out.ran.push(match &ended {
            Ended::Output(_) | Ended::Failed(_) => p.early.is_none(),
            Ended::NotRun(_) => false,
            Ended::Cancelled => p.early.is_none() && p.tool.is_some(),
        });
        let (content, is_error) = match ended {
            Ended::Output(output) | Ended::NotRun(output) => {
                (with_context(output.text, &context), output.is_error)
            }
            Ended::Failed(message) => {
                let text = format!(
                    "The tool {} failed: {message}. The run ends here.",
                    p.call.name
                );
                out.failure.get_or_insert(message);
                (with_context(text, &context), true)
            }
            Ended::Cancelled => {
                out.cancelled = true;
                (CANCELLED.to_owned(), true)
            }
        };
        out.results.push(ToolResult {
            call_id: p.call.id.clone(),
            name: p.call.name.clone(),
            content,
            is_error,
        });
    }
    out
}

/// How a call ended, for its span: a refusal the model can act on, or not.
fn call_outcome(ended: &Ended) -> CallOutcome {
    match ended {
        Ended::Output(output) if !output.is_error => CallOutcome::Ok,
        Ended::Output(_) | Ended::NotRun(_) => CallOutcome::Refused,
        Ended::Failed(_) => CallOutcome::Failed,
        Ended::Cancelled => CallOutcome::Cancelled,
    }
}

pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(LoopPanic(s)) = panic.downcast_ref::<LoopPanic>() {
        s.clone()
    } else if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "no message".to_owned()
    }
}
