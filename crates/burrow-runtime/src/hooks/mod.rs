//! Hooks on Claude Code's wire: handlers (closures) and shell commands, configured in Claude Code's settings form, run around tool calls and at the loop's own events.
//!
//! A command hook gets the event as JSON on stdin (with Claude Code's
//! `transcript_path` and `permission_mode`). Exit 0: stdout, read whole up to
//! 1 MiB, may be JSON (`hookSpecificOutput` with `permissionDecision`, `updatedInput`,
//! `additionalContext`; top-level `decision: "block"` with `reason`;
//! `continue: false`). Exit 2: the call is denied and stderr is the reason
//! the model sees. Any other exit, a timeout, a command that cannot start,
//! stdout over 1 MiB, or JSON that does not parse: the hook **failed**.
//!
//! How several matching hooks combine: they run in parallel; deny beats ask
//! beats allow; every `additionalContext` is kept (in configured order);
//! `updatedInput` replaces the arguments (never merges), comes from the hook
//! that finished last, is dropped when any hook denies, and must fit the
//! tool's schema (else it is a failure of that hook).
//!
//! **Where burrow differs from Claude Code:** a failed hook follows its
//! `on_error` policy (a burrow key in the same settings). A `PreToolUse`
//! hook that fails **denies** the call unless it says `on_error: "allow"`;
//! Claude Code lets the call run, which is how approval hooks that timed out
//! were bypassed. Other events' hooks fail open unless they say
//! `on_error: "deny"`, which then ends the run (`hook_failed`). A failure
//! ignored under `on_error: "allow"` is reported to the hooks' failure sink
//! ([`Hooks::with_failure_sink`]), never silently dropped. Background
//! (`async`) hooks are never waited for by the call or the event; they run to
//! their end (bounded by their timeout), and [`Hooks::settle`] waits for them
//! before a process exits.
//!
//! The loop's own events (docs/adr/0138): `SessionStart` when a run starts
//! over an empty history (source `startup`), `UserPromptSubmit` for the
//! prompt (a block erases it and stops the run), `Stop` when an answer calls
//! no tool (a block keeps the run going with its reason as the next user
//! message). Their context (plain stdout on exit 0, `additionalContext`)
//! joins the prompt's user message.

mod command;
mod matcher;
mod settings;
mod transcript;

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::message::ToolCall;
use crate::tool::ToolOutput;

pub use command::{HOOK_DECISION_LIMIT, HOOK_OUTPUT_CAP};
pub use matcher::Matcher;
pub use transcript::{Transcript, transcript_file};

/// A hook configuration that cannot be used (one sentence).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HookConfigError(pub String);

/// When a hook fires (Claude Code's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum HookEvent {
    /// Before a tool call runs; may deny it or replace its arguments.
    PreToolUse,
    /// After a tool call returned a result.
    PostToolUse,
    /// After a tool call failed.
    PostToolUseFailure,
    /// When a prompt is submitted.
    UserPromptSubmit,
    /// When the model stops.
    Stop,
    /// When a session starts.
    SessionStart,
    /// When a subagent stops.
    SubagentStop,
    /// Before a compaction (matcher: `auto` or `manual`); a block stops it.
    PreCompact,
}

impl HookEvent {
    /// Every event, in Claude Code's spelling.
    pub const ALL: [HookEvent; 8] = [
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::PostToolUseFailure,
        HookEvent::UserPromptSubmit,
        HookEvent::Stop,
        HookEvent::SessionStart,
        HookEvent::SubagentStop,
        HookEvent::PreCompact,
    ];

    /// The event's name as the settings and the wire spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::PostToolUseFailure => "PostToolUseFailure",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::Stop => "Stop",
            HookEvent::SessionStart => "SessionStart",
            HookEvent::SubagentStop => "SubagentStop",
            HookEvent::PreCompact => "PreCompact",
        }
    }

    /// True for the events burrow fires: every one (`SubagentStop` when a
    /// `task` child ends, [`crate::subagent`]); kept so that an event added
    /// later can parse before it runs.
    pub fn is_fired(self) -> bool {
        true
    }

    /// The event named `name` (Claude Code's spelling).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == name)
    }
}

impl From<burrow_types::HookEvent> for HookEvent {
    fn from(e: burrow_types::HookEvent) -> Self {
        match e {
            burrow_types::HookEvent::PreToolUse => HookEvent::PreToolUse,
            burrow_types::HookEvent::PostToolUse => HookEvent::PostToolUse,
            burrow_types::HookEvent::PostToolUseFailure => HookEvent::PostToolUseFailure,
        }
    }
}

/// What a hook is told (the JSON a command hook reads on stdin).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookInput {
    /// The session (the thread, or the run when there is none).
    pub session_id: String,
    /// The run.
    pub run_id: String,
    /// The directory command hooks run in.
    pub cwd: String,
    /// Where the JSONL transcript of the session is (Claude Code's field),
    /// when the driver writes one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript_path: Option<String>,
    /// The permission mode (Claude Code's field): `default` unless the driver says otherwise.
    #[serde(default)]
    pub permission_mode: String,
    /// The event's name.
    pub hook_event_name: HookEvent,
    /// The tool (tool events).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// The call's arguments (tool events).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_input: Option<Value>,
    /// The call's id (tool events).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    /// The result (`PostToolUse`): `{"content": ..., "is_error": ...}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_response: Option<Value>,
    /// The failure (`PostToolUseFailure`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The prompt (`UserPromptSubmit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// True when a Stop hook already continued the run (`Stop`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_hook_active: Option<bool>,
    /// Why the session starts (`SessionStart`): `startup`, `resume`, `clear` or `compact`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The model's name (`SessionStart`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The subagent's run id (`SubagentStop`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// The subagent's type, its definition's name (`SubagentStop`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_type: Option<String>,
    /// The subagent's transcript, when one is written (`SubagentStop`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_transcript_path: Option<String>,
    /// What asks for the compaction: `auto` or `manual` (`PreCompact`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
    /// The instructions given for the summary, empty when none (`PreCompact`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_instructions: Option<String>,
}

/// A permission decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Run the call.
    Allow,
    /// Pause the call for approval.
    Ask,
    /// Do not run the call.
    Deny,
}

/// The event-specific part of a hook's output.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookSpecificOutput {
    /// The event it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook_event_name: Option<String>,
    /// allow | deny | ask (`PreToolUse`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_decision: Option<Decision>,
    /// Why (shown to the model on deny).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_decision_reason: Option<String>,
    /// Arguments that replace the call's (`PreToolUse`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_input: Option<Value>,
    /// Context for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_context: Option<String>,
}

/// What a hook answers (a command hook's stdout JSON on exit 0; a handler's return value).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookOutput {
    /// `false` stops the run.
    #[serde(rename = "continue", default, skip_serializing_if = "Option::is_none")]
    pub continue_: Option<bool>,
    /// Why the run stops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// `"block"` denies the call (or, after it, shows `reason` to the model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<String>,
    /// The reason for `decision`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A note for the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_message: Option<String>,
    /// The event-specific part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook_specific_output: Option<HookSpecificOutput>,
}

impl HookOutput {
    /// An output that denies with `reason`.
    pub fn deny(reason: impl Into<String>) -> Self {
        Self::decide(Decision::Deny, Some(reason.into()))
    }

    /// An output that allows.
    pub fn allow() -> Self {
        Self::decide(Decision::Allow, None)
    }

    /// An output that asks with `reason`.
    pub fn ask(reason: impl Into<String>) -> Self {
        Self::decide(Decision::Ask, Some(reason.into()))
    }

    /// An output that allows with arguments `input` replacing the call's.
    pub fn update_input(input: Value) -> Self {
        let mut out = Self::allow();
        if let Some(s) = out.hook_specific_output.as_mut() {
            s.updated_input = Some(input);
        }
        out
    }

    /// An output that adds `context` for the model.
    pub fn context(context: impl Into<String>) -> Self {
        Self {
            hook_specific_output: Some(HookSpecificOutput {
                additional_context: Some(context.into()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn decide(decision: Decision, reason: Option<String>) -> Self {
        Self {
            hook_specific_output: Some(HookSpecificOutput {
                hook_event_name: Some("PreToolUse".to_owned()),
                permission_decision: Some(decision),
                permission_decision_reason: reason,
                ..Default::default()
            }),
            ..Default::default()
        }
    }
}

/// What a failed hook means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnError {
    /// Carry on as if the hook had not run.
    Allow,
    /// Deny the call (`PreToolUse`), or end the run (`hook_failed`) for other events.
    Deny,
}

/// A handler hook: a closure from the input to the output (an `Err` is a failure of the hook).
pub type HookHandler =
    Arc<dyn Fn(HookInput) -> BoxFuture<'static, Result<HookOutput, String>> + Send + Sync>;

/// What a hook runs.
#[derive(Clone)]
pub enum HookAction {
    /// `sh -c COMMAND` on the host, the input on stdin.
    Command(String),
    /// An in-process closure.
    Handler(HookHandler),
}

impl std::fmt::Debug for HookAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HookAction::Command(c) => f.debug_tuple("Command").field(c).finish(),
            HookAction::Handler(_) => f.write_str("Handler"),
        }
    }
}

/// One configured hook.
#[derive(Debug, Clone)]
pub struct Hook {
    /// When it fires.
    pub event: HookEvent,
    /// Which tools it applies to (tool events; ignored for the others).
    pub matcher: Matcher,
    /// What it runs.
    pub action: HookAction,
    /// How long it may take (30 s by default).
    pub timeout: Duration,
    /// What its failure means (`None`: deny for `PreToolUse`, allow for the rest).
    pub on_error: Option<OnError>,
    /// Never waited for by the call or event, its output ignored (a failure
    /// is reported to the failure sink); it runs to its end, which
    /// [`Hooks::settle`] waits for.
    pub background: bool,
}

/// The default hook timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(burrow_types::DEFAULT_HOOK_TIMEOUT_SECS);

impl Hook {
    /// A command hook on `event` for the tools `matcher` names.
    pub fn command(
        event: HookEvent,
        matcher: Option<&str>,
        command: impl Into<String>,
    ) -> Result<Self, HookConfigError> {
        Ok(Self::new(
            event,
            Matcher::parse(matcher)?,
            HookAction::Command(command.into()),
        ))
    }

    /// A handler hook on `event` for the tools `matcher` names.
    pub fn handler<F, Fut>(
        event: HookEvent,
        matcher: Option<&str>,
        f: F,
    ) -> Result<Self, HookConfigError>
    where
        F: Fn(HookInput) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<HookOutput, String>> + Send + 'static,
    {
        use futures::FutureExt;
        let handler: HookHandler = Arc::new(move |input| f(input).boxed());
        Ok(Self::new(
            event,
            Matcher::parse(matcher)?,
            HookAction::Handler(handler),
        ))
    }

    fn new(event: HookEvent, matcher: Matcher, action: HookAction) -> Self {
        Self {
            event,
            matcher,
            action,
            timeout: DEFAULT_TIMEOUT,
            on_error: None,
            background: false,
        }
    }

    /// The same hook with `timeout`.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The same hook with failure policy `on_error`.
    pub fn with_on_error(mut self, on_error: OnError) -> Self {
        self.on_error = Some(on_error);
        self
    }

    /// The same hook, run in the background.
    pub fn in_background(mut self) -> Self {
        self.background = true;
        self
    }

    /// Seed 001's hook (a command, a regex matcher, a timeout, background).
    pub fn from_seed(hook: &burrow_types::Hook) -> Result<Self, HookConfigError> {
        let command = hook.command.clone().ok_or_else(|| {
            HookConfigError(
                "a hook without a command needs a handler, which has no JSON form".to_owned(),
            )
        })?;
        let mut out = Self::command(hook.event.into(), hook.matcher.as_deref(), command)?
            .with_timeout(Duration::from_secs(hook.timeout));
        out.background = hook.background;
        Ok(out)
    }

    fn policy(&self) -> OnError {
        self.on_error.unwrap_or(match self.event {
            HookEvent::PreToolUse => OnError::Deny,
            _ => OnError::Allow,
        })
    }
}

/// Who the hooks run for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookContext {
    /// The session (thread) id.
    pub session_id: String,
    /// The run id.
    pub run_id: String,
}

/// How one hook ended.
enum HookRun {
    Output(HookOutput),
    /// Exit 0 with stdout that is not JSON: context for the events that take it.
    Text(String),
    /// Exit 2: blocked, with stderr.
    Blocked(String),
    Failed(String),
}

/// `text` with the hooks' `context` appended, a blank line before each, so
/// the model reads it with the result (every provider requires tool results
/// right after their calls); `burrow mcp` puts it after its results the same way.
pub fn with_context(mut text: String, context: &[String]) -> String {
    for c in context {
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(c);
    }
    text
}

/// What the `PreToolUse` hooks decided about one call.
#[derive(Debug, Clone, PartialEq)]
pub struct PreToolUse {
    /// The combined decision.
    pub decision: Decision,
    /// The reason for a deny or ask.
    pub reason: Option<String>,
    /// Arguments that replace the call's (allowed calls only; validated).
    pub arguments: Option<Value>,
    /// Every hook's additional context, in configured order.
    pub context: Vec<String>,
    /// A hook said `continue: false` (with this reason).
    pub stop: Option<String>,
    /// A hook failure whose policy ends the run.
    pub run_failure: Option<String>,
    /// Hooks that failed, with what their policy made of it.
    pub failures: Vec<String>,
}

/// What the hooks after a call said.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PostToolUse {
    /// Context (and block reasons) for the model.
    pub context: Vec<String>,
    /// A hook said `continue: false`.
    pub stop: Option<String>,
    /// A hook failure whose policy ends the run.
    pub run_failure: Option<String>,
}

/// A hook failure that its `on_error: allow` policy ignored (or a
/// background hook's failure, whose output is ignored by nature).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookFailure {
    /// The event the hook ran for.
    pub event: HookEvent,
    /// The hook: its command, or `handler`.
    pub hook: String,
    /// What failed (one sentence).
    pub message: String,
}

/// Where ignored hook failures are reported.
pub type FailureSink = Arc<dyn Fn(HookFailure) + Send + Sync>;

#[derive(Clone, Default)]
struct Sink(Option<FailureSink>);

impl std::fmt::Debug for Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "Sink" } else { "NoSink" })
    }
}

/// The background hooks started so far and not yet ended (shared by clones).
#[derive(Debug, Clone, Default)]
struct Background(Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>>);

/// The hooks of an agent.
#[derive(Debug, Clone)]
pub struct Hooks {
    hooks: Vec<Hook>,
    cwd: PathBuf,
    ignored_events: Vec<String>,
    /// The directory of the sessions' transcripts (`SESSION.jsonl`), if any.
    transcripts: Option<PathBuf>,
    permission_mode: String,
    sink: Sink,
    background: Background,
}

impl Default for Hooks {
    fn default() -> Self {
        Self {
            hooks: Vec::new(),
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
            ignored_events: Vec::new(),
            transcripts: None,
            permission_mode: "default".to_owned(),
            sink: Sink::default(),
            background: Background::default(),
        }
    }
}

impl Hooks {
    /// No hooks; command hooks run in the process's current directory.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `hook`.
    pub fn add(&mut self, hook: Hook) -> &mut Self {
        self.hooks.push(hook);
        self
    }

    /// The same hooks, command hooks running in `cwd`.
    pub fn with_cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.cwd = cwd.into();
        self
    }

    /// The same hooks, telling each hook that the session's transcript is
    /// [`transcript_file`]`(dir, session)` (the driver writes it, with [`Transcript`]).
    pub fn with_transcripts(mut self, dir: impl Into<PathBuf>) -> Self {
        self.transcripts = Some(dir.into());
        self
    }

    /// The same hooks, telling each hook the permission mode `mode` (`default` otherwise).
    pub fn with_permission_mode(mut self, mode: impl Into<String>) -> Self {
        self.permission_mode = mode.into();
        self
    }

    /// The same hooks, reporting to `sink` every failure they ignore (a hook
    /// under `on_error: allow`, a background hook).
    pub fn with_failure_sink(mut self, sink: FailureSink) -> Self {
        self.sink = Sink(Some(sink));
        self
    }

    /// Waits until every background hook started so far (by these hooks or a
    /// clone of them) has ended; each is bounded by its timeout.
    pub async fn settle(&self) {
        loop {
            let started: Vec<_> = std::mem::take(
                &mut *self
                    .background
                    .0
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner),
            );
            if started.is_empty() {
                return;
            }
            for handle in started {
                let _ = handle.await;
            }
        }
    }

    /// Reports a failure the hooks ignore.
    fn ignored(&self, i: usize, message: &str) {
        if let (Some(sink), Some(hook)) = (&self.sink.0, self.hooks.get(i)) {
            sink(failure(hook, message));
        }
    }

    fn transcript_path(&self, cx: &HookContext) -> Option<String> {
        self.transcripts
            .as_ref()
            .map(|dir| transcript_file(dir, &cx.session_id).display().to_string())
    }

    /// The hooks, in configured order.
    pub fn hooks(&self) -> &[Hook] {
        &self.hooks
    }

    /// Events named in the settings that burrow does not fire (so their hooks never run).
    pub fn ignored_events(&self) -> &[String] {
        &self.ignored_events
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    fn has(&self, event: HookEvent) -> bool {
        self.hooks.iter().any(|h| h.event == event)
    }

    pub(crate) fn has_pre_tool_use(&self) -> bool {
        self.has(HookEvent::PreToolUse)
    }
    pub(crate) fn has_post_tool_use(&self) -> bool {
        self.has(HookEvent::PostToolUse)
    }
    pub(crate) fn has_post_tool_use_failure(&self) -> bool {
        self.has(HookEvent::PostToolUseFailure)
    }

    fn input(
        &self,
        cx: &HookContext,
        event: HookEvent,
        call: &ToolCall,
        args: &Value,
    ) -> HookInput {
        HookInput {
            session_id: cx.session_id.clone(),
            run_id: cx.run_id.clone(),
            cwd: self.cwd.display().to_string(),
            transcript_path: self.transcript_path(cx),
            permission_mode: self.permission_mode.clone(),
            hook_event_name: event,
            tool_name: Some(call.name.clone()),
            tool_input: Some(args.clone()),
            tool_use_id: Some(call.id.clone()),
            tool_response: None,
            error: None,
            prompt: None,
            stop_hook_active: None,
            source: None,
            model: None,
            agent_id: None,
            agent_type: None,
            agent_transcript_path: None,
            trigger: None,
            custom_instructions: None,
        }
    }

    /// The input of an event that is not about a tool call.
    fn event_input(&self, cx: &HookContext, event: HookEvent) -> HookInput {
        HookInput {
            session_id: cx.session_id.clone(),
            run_id: cx.run_id.clone(),
            cwd: self.cwd.display().to_string(),
            transcript_path: self.transcript_path(cx),
            permission_mode: self.permission_mode.clone(),
            hook_event_name: event,
            tool_name: None,
            tool_input: None,
            tool_use_id: None,
            tool_response: None,
            error: None,
            prompt: None,
            stop_hook_active: None,
            source: None,
            model: None,
            agent_id: None,
            agent_type: None,
            agent_transcript_path: None,
            trigger: None,
            custom_instructions: None,
        }
    }

    /// Runs the matching hooks of `input`'s event: background ones are
    /// started and left to run to their end (see [`Hooks::settle`]); the
    /// others run in parallel. Returns, for each
    /// waited-for hook, its index in configured order, its completion rank
    /// and how it ended.
    async fn dispatch(
        &self,
        input: HookInput,
        subject: Option<&str>,
    ) -> Vec<(usize, usize, HookRun)> {
        let event = input.hook_event_name;
        let input = Arc::new(input);
        let mut running = FuturesUnordered::new();
        for (i, hook) in self.hooks.iter().enumerate() {
            if hook.event != event || subject.is_some_and(|s| !hook.matcher.matches(s)) {
                continue;
            }
            if hook.background {
                // Outside a tokio runtime there is nowhere to leave it running
                // (and a command hook could not run at all): it is skipped.
                if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                    let (hook, input, cwd) = (hook.clone(), input.clone(), self.cwd.clone());
                    let sink = self.sink.clone();
                    let handle = runtime.spawn(async move {
                        if let HookRun::Failed(why) = run_hook(&hook, &input, &cwd).await
                            && let Some(sink) = sink.0
                        {
                            sink(failure(&hook, &format!("a background hook failed: {why}")));
                        }
                    });
                    let mut started = self
                        .background
                        .0
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner);
                    started.retain(|h| !h.is_finished());
                    started.push(handle);
                }
                continue;
            }
            let input = input.clone();
            running.push(async move { (i, run_hook(hook, &input, &self.cwd).await) });
        }
        let mut ended = Vec::with_capacity(running.len());
        let mut rank = 0;
        while let Some((i, run)) = running.next().await {
            ended.push((i, rank, run));
            rank += 1;
        }
        ended
    }

    /// Runs the `PreToolUse` hooks for `call` (with `args`) and combines them;
    /// `validate` checks a rewrite against the tool's schema.
    pub async fn pre_tool_use(
        &self,
        cx: &HookContext,
        call: &ToolCall,
        args: &Value,
        validate: &(dyn Fn(&Value) -> Result<(), String> + Sync),
    ) -> PreToolUse {
        let input = self.input(cx, HookEvent::PreToolUse, call, args);
        let mut ended = self.dispatch(input, Some(&call.name)).await;
        ended.sort_by_key(|(i, _, _)| *i);
        let mut out = PreToolUse {
            decision: Decision::Allow,
            reason: None,
            arguments: None,
            context: Vec::new(),
            stop: None,
            run_failure: None,
            failures: Vec::new(),
        };
        let mut deny: Option<String> = None;
        let mut ask: Option<String> = None;
        // (completion rank, hook index, input)
        let mut latest: Option<(usize, usize, Value)> = None;
        let fail = |out: &mut PreToolUse, deny: &mut Option<String>, i: usize, why: String| {
            let hook = &self.hooks[i];
            match hook.policy() {
                OnError::Deny => {
                    out.failures.push(format!("{why} (the call is denied)"));
                    deny.get_or_insert(format!("a PreToolUse hook failed: {why}"));
                }
                OnError::Allow => {
                    self.ignored(i, &why);
                    out.failures.push(format!("{why} (ignored)"));
                }
            }
        };
        for (i, rank, run) in ended {
            match run {
                HookRun::Text(_) => {}
                HookRun::Failed(why) => fail(&mut out, &mut deny, i, why),
                HookRun::Blocked(stderr) => {
                    let reason = if stderr.trim().is_empty() {
                        "a hook blocked the call".to_owned()
                    } else {
                        stderr.trim().to_owned()
                    };
                    deny.get_or_insert(reason);
                }
                HookRun::Output(o) => {
                    if o.continue_ == Some(false) {
                        out.stop.get_or_insert(
                            o.stop_reason
                                .clone()
                                .unwrap_or_else(|| "a hook stopped the run".into()),
                        );
                    }
                    if o.decision.as_deref() == Some("block") {
                        deny.get_or_insert(
                            o.reason
                                .clone()
                                .unwrap_or_else(|| "a hook blocked the call".into()),
                        );
                    }
                    if let Some(s) = o.hook_specific_output {
                        if let Some(c) = s.additional_context.filter(|c| !c.is_empty()) {
                            out.context.push(c);
                        }
                        let reason = s.permission_decision_reason;
                        match s.permission_decision {
                            Some(Decision::Deny) => {
                                deny.get_or_insert(
                                    reason.unwrap_or_else(|| "a hook denied the call".into()),
                                );
                            }
                            Some(Decision::Ask) => {
                                ask.get_or_insert(
                                    reason.unwrap_or_else(|| "a hook asked for approval".into()),
                                );
                            }
                            _ => {}
                        }
                        if let Some(input) = s.updated_input
                            && latest.as_ref().is_none_or(|(r, _, _)| rank > *r)
                        {
                            latest = Some((rank, i, input));
                        }
                    }
                }
            }
        }
        if deny.is_none()
            && let Some((_, i, input)) = latest
        {
            match validate(&input) {
                Ok(()) => out.arguments = Some(input),
                Err(why) => fail(
                    &mut out,
                    &mut deny,
                    i,
                    format!("its updatedInput does not fit the tool's schema: {why}"),
                ),
            }
        }
        if let Some(reason) = deny {
            out.decision = Decision::Deny;
            out.reason = Some(reason);
            out.arguments = None;
        } else if let Some(reason) = ask {
            out.decision = Decision::Ask;
            out.reason = Some(reason);
        }
        out
    }

    /// Runs the `PostToolUse` hooks for `call` and its `output`.
    pub async fn post_tool_use(
        &self,
        cx: &HookContext,
        call: &ToolCall,
        args: &Value,
        output: &ToolOutput,
    ) -> PostToolUse {
        let mut input = self.input(cx, HookEvent::PostToolUse, call, args);
        input.tool_response = Some(serde_json::json!({
            "content": output.text,
            "is_error": output.is_error,
        }));
        self.post(input, &call.name).await
    }

    /// Runs the `PostToolUseFailure` hooks for `call` and its `error`.
    pub async fn post_tool_use_failure(
        &self,
        cx: &HookContext,
        call: &ToolCall,
        args: &Value,
        error: &str,
    ) -> PostToolUse {
        let mut input = self.input(cx, HookEvent::PostToolUseFailure, call, args);
        input.error = Some(error.to_owned());
        self.post(input, &call.name).await
    }

    async fn post(&self, input: HookInput, tool: &str) -> PostToolUse {
        let event = input.hook_event_name.as_str();
        let mut ended = self.dispatch(input, Some(tool)).await;
        ended.sort_by_key(|(i, _, _)| *i);
        let mut out = PostToolUse::default();
        for (i, _, run) in ended {
            match run {
                HookRun::Text(_) => {}
                HookRun::Failed(why) => {
                    if self.hooks[i].policy() == OnError::Deny {
                        out.run_failure
                            .get_or_insert(format!("a {event} hook failed: {why}"));
                    } else {
                        self.ignored(i, &why);
                    }
                }
                HookRun::Blocked(stderr) => {
                    if !stderr.trim().is_empty() {
                        out.context.push(stderr.trim().to_owned());
                    }
                }
                HookRun::Output(o) => {
                    if o.continue_ == Some(false) {
                        out.stop.get_or_insert(
                            o.stop_reason
                                .clone()
                                .unwrap_or_else(|| "a hook stopped the run".into()),
                        );
                    }
                    if o.decision.as_deref() == Some("block")
                        && let Some(reason) = o.reason.filter(|r| !r.is_empty())
                    {
                        out.context.push(reason);
                    }
                    if let Some(c) = o
                        .hook_specific_output
                        .and_then(|s| s.additional_context)
                        .filter(|c| !c.is_empty())
                    {
                        out.context.push(c);
                    }
                }
            }
        }
        out
    }
}

impl Hooks {
    /// True when a hook is configured for `event`.
    pub fn has_event(&self, event: HookEvent) -> bool {
        self.has(event)
    }

    /// Runs the `UserPromptSubmit` hooks for `prompt` (every hook: this
    /// event takes no matcher). A block erases the prompt.
    pub async fn user_prompt_submit(&self, cx: &HookContext, prompt: &str) -> EventHooks {
        let mut input = self.event_input(cx, HookEvent::UserPromptSubmit);
        input.prompt = Some(prompt.to_owned());
        self.event(input, None, true).await
    }

    /// Runs the `SessionStart` hooks whose matcher matches `source`
    /// (`startup`, `resume`, `clear`, `compact`). A block only reaches the
    /// user (Claude Code shows its stderr and goes on).
    pub async fn session_start(&self, cx: &HookContext, source: &str, model: &str) -> EventHooks {
        let mut input = self.event_input(cx, HookEvent::SessionStart);
        input.source = Some(source.to_owned());
        input.model = Some(model.to_owned());
        self.event(input, Some(source), true).await
    }

    /// Runs the `Stop` hooks (every hook: this event takes no matcher);
    /// `stop_hook_active` says a Stop hook already kept this run going. A
    /// block keeps the run going with its reason for the model.
    pub async fn stop(&self, cx: &HookContext, stop_hook_active: bool) -> EventHooks {
        let mut input = self.event_input(cx, HookEvent::Stop);
        input.stop_hook_active = Some(stop_hook_active);
        self.event(input, None, false).await
    }

    /// Runs the `SubagentStop` hooks whose matcher matches `agent_type`,
    /// once the subagent's run `agent_id` has ended. The subagent has
    /// ended already: a block or `continue: false` only reaches the user.
    pub async fn subagent_stop(
        &self,
        cx: &HookContext,
        agent_id: &str,
        agent_type: &str,
        agent_transcript_path: Option<String>,
    ) -> EventHooks {
        let mut input = self.event_input(cx, HookEvent::SubagentStop);
        input.stop_hook_active = Some(false);
        input.agent_id = Some(agent_id.to_owned());
        input.agent_type = Some(agent_type.to_owned());
        input.agent_transcript_path = agent_transcript_path;
        self.event(input, Some(agent_type), false).await
    }

    /// Runs the `PreCompact` hooks whose matcher matches `trigger` (`auto`
    /// or `manual`), told the summary's `custom_instructions` (empty when
    /// none). A block (exit 2, or `decision: "block"`) stops the compaction;
    /// the run goes on uncompacted.
    pub async fn pre_compact(
        &self,
        cx: &HookContext,
        trigger: &str,
        custom_instructions: Option<&str>,
    ) -> EventHooks {
        let mut input = self.event_input(cx, HookEvent::PreCompact);
        input.trigger = Some(trigger.to_owned());
        input.custom_instructions = Some(custom_instructions.unwrap_or("").to_owned());
        self.event(input, Some(trigger), false).await
    }

    /// Runs the hooks of an event that is not about a tool call and
    /// combines them: the first block (in configured order) wins, every
    /// context is kept, `continue: false` stops the run.
    async fn event(
        &self,
        input: HookInput,
        subject: Option<&str>,
        text_is_context: bool,
    ) -> EventHooks {
        let event = input.hook_event_name.as_str();
        let mut ended = self.dispatch(input, subject).await;
        ended.sort_by_key(|(i, _, _)| *i);
        let mut out = EventHooks::default();
        for (i, _, run) in ended {
            match run {
                HookRun::Text(text) => {
                    if text_is_context && !text.is_empty() {
                        out.context.push(text);
                    }
                }
                HookRun::Failed(why) => {
                    if self.hooks[i].policy() == OnError::Deny {
                        out.run_failure
                            .get_or_insert(format!("a {event} hook failed: {why}"));
                    } else {
                        self.ignored(i, &why);
                    }
                }
                HookRun::Blocked(stderr) => {
                    let reason = stderr.trim();
                    out.block.get_or_insert(if reason.is_empty() {
                        format!("a {event} hook blocked without saying why")
                    } else {
                        reason.to_owned()
                    });
                }
                HookRun::Output(o) => {
                    if o.continue_ == Some(false) {
                        out.stop.get_or_insert(
                            o.stop_reason
                                .clone()
                                .unwrap_or_else(|| "a hook stopped the run".into()),
                        );
                    }
                    if o.decision.as_deref() == Some("block") {
                        out.block.get_or_insert(
                            o.reason
                                .clone()
                                .filter(|r| !r.trim().is_empty())
                                .unwrap_or_else(|| {
                                    format!("a {event} hook blocked without saying why")
                                }),
                        );
                    }
                    if let Some(c) = o
                        .hook_specific_output
                        .and_then(|s| s.additional_context)
                        .filter(|c| !c.is_empty())
                    {
                        out.context.push(c);
                    }
                }
            }
        }
        out
    }
}

/// What the hooks of `UserPromptSubmit`, `SessionStart` or `Stop` said.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventHooks {
    /// A hook blocked (exit 2 with stderr, or `decision: "block"` with a
    /// reason): the reason.
    pub block: Option<String>,
    /// Context for the model (`additionalContext`, and plain stdout on exit
    /// 0 for `UserPromptSubmit` and `SessionStart`), in configured order.
    pub context: Vec<String>,
    /// A hook said `continue: false` (with this reason).
    pub stop: Option<String>,
    /// A hook failure whose policy ends the run.
    pub run_failure: Option<String>,
}

/// Runs one hook to its end.
async fn run_hook(hook: &Hook, input: &HookInput, cwd: &std::path::Path) -> HookRun {
    match &hook.action {
        HookAction::Handler(f) => {
            match tokio::time::timeout(hook.timeout, f(input.clone())).await {
                Ok(Ok(output)) => HookRun::Output(output),
                Ok(Err(why)) => HookRun::Failed(why),
                Err(_) => HookRun::Failed(format!(
                    "the hook timed out after {} s",
                    hook.timeout.as_secs_f64()
                )),
            }
        }
        HookAction::Command(cmd) => {
            let json = match serde_json::to_vec(input) {
                Ok(json) => json,
                Err(e) => {
                    return HookRun::Failed(format!("the hook input could not be encoded: {e}"));
                }
            };
            match command::run(cmd, &json, cwd, hook.timeout).await {
                command::CommandEnd::Failed(why) => HookRun::Failed(why),
                command::CommandEnd::Exited {
                    code: 2, stderr, ..
                } => HookRun::Blocked(stderr),
                command::CommandEnd::Exited { stdout: None, .. } => HookRun::Failed(format!(
                    "the hook printed more than {} MiB on stdout",
                    command::HOOK_DECISION_LIMIT >> 20
                )),
                command::CommandEnd::Exited {
                    code: 0,
                    stdout: Some(stdout),
                    ..
                } => {
                    let text = stdout.trim();
                    if !text.starts_with('{') {
                        // Plain text: not a decision; context for the events
                        // that take it (Claude Code logs it for the others),
                        // cut like stderr.
                        return HookRun::Text(cut(text, HOOK_OUTPUT_CAP).to_owned());
                    }
                    match serde_json::from_str::<HookOutput>(text) {
                        Ok(output) => HookRun::Output(output),
                        Err(e) => HookRun::Failed(format!(
                            "the hook printed JSON that is not a valid hook output: {e}"
                        )),
                    }
                }
                command::CommandEnd::Exited {
                    code: code @ (126 | 127),
                    stderr,
                    ..
                } => HookRun::Failed(format!(
                    "the hook command could not be run (the shell exited with code {code}){}",
                    first_line(&stderr)
                )),
                command::CommandEnd::Exited { code, stderr, .. } => HookRun::Failed(format!(
                    "the hook exited with code {code}{}",
                    first_line(&stderr)
                )),
            }
        }
    }
}

/// The failure report of `hook`.
fn failure(hook: &Hook, message: &str) -> HookFailure {
    HookFailure {
        event: hook.event,
        hook: match &hook.action {
            HookAction::Command(c) => c.clone(),
            HookAction::Handler(_) => "handler".to_owned(),
        },
        message: message.to_owned(),
    }
}

/// The first `max` characters of `text`.
fn cut(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

fn first_line(stderr: &str) -> String {
    match stderr.lines().find(|l| !l.trim().is_empty()) {
        Some(line) => format!(": {}", line.trim().chars().take(200).collect::<String>()),
        None => String::new(),
    }
}
