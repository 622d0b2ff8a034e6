//! `burrow mcp --settings`: the settings' PreToolUse, PostToolUse and PostToolUseFailure hooks run around each MCP client's tool call, as they run around a run's (docs/adr/0367).
//!
//! The runtime's [`Hooks`] decide and combine exactly as in a run (a deny
//! wins, then an ask, an allowed call runs with the last `updatedInput`);
//! what has no place without a run is mapped: an ask is refused (no client
//! can approve its own call, as for an `ask` rule, ADR 0319), `continue:
//! false` refuses the call it came before and is a line of the result it
//! came after, and a hook failure whose policy would end a run makes the
//! result an error. The hooks run outside the permission rules, so a hook's
//! rewrite is decided by the rules too, and a path rule holds below both.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use burrow_runtime::hooks::{Decision, HookContext, HookEvent, HookFailure, Hooks, with_context};
use burrow_runtime::message::ToolCall;
use burrow_runtime::tool::{CallContext, Tool, ToolOutput, ToolRegistry};
use serde_json::Value;

/// The events whose hooks `burrow mcp` runs.
const TOOL_EVENTS: [HookEvent; 3] = [
    HookEvent::PreToolUse,
    HookEvent::PostToolUse,
    HookEvent::PostToolUseFailure,
];

/// `tools` with the tool hooks of `files` (merged in order) around each call,
/// the hooks (to settle before burrow ends) and notes naming the events whose
/// hooks never run here; the same registry and no hooks when the files name
/// no tool hook. `Err` is one sentence.
pub fn hooked(
    tools: ToolRegistry,
    files: &[PathBuf],
) -> Result<(ToolRegistry, Option<Hooks>, Vec<String>), String> {
    let Some(merged) = crate::settings_files::merged(files)? else {
        return Ok((tools, None, Vec::new()));
    };
    let hooks = Hooks::from_settings(&merged.text())
        .map_err(|e| format!("{} cannot be used: {}", merged.shown, e.0))?;
    let mut notes: Vec<String> = HookEvent::ALL
        .into_iter()
        .filter(|e| !TOOL_EVENTS.contains(e) && hooks.has_event(*e))
        .map(|e| {
            format!(
                "the settings name {} hooks, which burrow mcp does not run (it has no run, only tool calls)",
                e.as_str()
            )
        })
        .collect();
    notes.extend(hooks.ignored_events().iter().map(|e| {
        format!("the settings name {e} hooks, an event burrow does not know; they never run")
    }));
    if !TOOL_EVENTS.iter().any(|e| hooks.has_event(*e)) {
        return Ok((tools, None, notes));
    }
    let mode = crate::permissions::layers(files)
        .map(burrow::permissions::PermissionSettings::merged)?
        .default_mode
        .unwrap_or_else(|| "default".to_owned());
    let hooks =
        hooks
            .with_permission_mode(mode)
            .with_failure_sink(Arc::new(|failure: HookFailure| {
                // stdout is the protocol's: the note goes to stderr.
                eprintln!(
                    "burrow: a {} hook failed and was ignored (on_error: allow): {}",
                    failure.event.as_str(),
                    failure.message
                );
            }));
    let shared = Arc::new(Shared {
        hooks: hooks.clone(),
        cx: HookContext {
            session_id: format!("burrow-mcp-{}", std::process::id()),
            run_id: format!("burrow-mcp-{}", std::process::id()),
        },
        calls: AtomicU64::new(0),
    });
    let mut out = ToolRegistry::new();
    for (name, why) in tools.absent() {
        out.note_absent(name, why);
    }
    for tool in tools.tools() {
        out.add_arc(Arc::new(Hooked {
            inner: tool.clone(),
            shared: shared.clone(),
        }));
    }
    Ok((out, Some(hooks), notes))
}

/// What every hooked tool shares: the hooks, who they run for, a call counter.
struct Shared {
    hooks: Hooks,
    cx: HookContext,
    calls: AtomicU64,
}

/// A served tool with the hooks around its calls.
struct Hooked {
    inner: Arc<dyn Tool>,
    shared: Arc<Shared>,
}

#[async_trait]
impl Tool for Hooked {
    crate::mcp_permissions::forward_to_inner!();

    /// Runs the PreToolUse hooks, then (unless they deny or ask) the call
    /// with their rewrite, then the PostToolUse hooks (PostToolUseFailure
    /// for an error result or a failure); their context follows the result.
    async fn call(&self, cx: &CallContext, args: Value) -> Result<ToolOutput, burrow::Error> {
        let hooks = &self.shared.hooks;
        let hook_cx = &self.shared.cx;
        let n = self.shared.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let call = ToolCall {
            id: format!("mcp-call-{n}"),
            name: self.inner.name().to_owned(),
            arguments: args.clone(),
        };
        let pre = hooks
            .pre_tool_use(hook_cx, &call, &args, &|v| self.inner.validate(v))
            .await;
        let mut context = pre.context;
        if let Some(reason) = pre.stop {
            return Ok(ToolOutput::refused(with_context(
                format!("A hook stopped before this call ran: {reason}"),
                &context,
            )));
        }
        let reason = pre.reason.unwrap_or_else(|| "no reason given".to_owned());
        let args = match pre.decision {
            Decision::Allow => pre.arguments.unwrap_or(args),
            Decision::Deny => {
                return Ok(ToolOutput::refused(with_context(
                    format!("The call was denied by a hook: {reason}"),
                    &context,
                )));
            }
            Decision::Ask => {
                return Ok(ToolOutput::refused(with_context(
                    format!(
                        "The call was refused: a hook asks for approval ({reason}), and burrow mcp cannot ask its client for approval, so only calls that need none run."
                    ),
                    &context,
                )));
            }
        };
        let output = match self.inner.call(cx, args.clone()).await {
            Ok(output) => output,
            Err(e) => {
                // A failure stays a failure; the hooks are told of it first.
                if hooks.has_event(HookEvent::PostToolUseFailure) {
                    let _ = hooks
                        .post_tool_use_failure(hook_cx, &call, &args, &e.to_string())
                        .await;
                }
                return Err(e);
            }
        };
        let post = if !output.is_error && hooks.has_event(HookEvent::PostToolUse) {
            Some(hooks.post_tool_use(hook_cx, &call, &args, &output).await)
        } else if output.is_error && hooks.has_event(HookEvent::PostToolUseFailure) {
            Some(
                hooks
                    .post_tool_use_failure(hook_cx, &call, &args, &output.text)
                    .await,
            )
        } else {
            None
        };
        let mut output = output;
        if let Some(post) = post {
            context.extend(post.context);
            if let Some(stop) = post.stop {
                context.push(format!("A hook said to stop after this call: {stop}"));
            }
            if let Some(failure) = post.run_failure {
                context.push(format!("The call ran, but {failure}"));
                output.is_error = true;
            }
        }
        output.text = with_context(output.text, &context);
        Ok(output)
    }
}
