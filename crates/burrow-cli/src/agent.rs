//! `burrow run`: an agent from `burrow-runtime` over the opened backend, its events printed as text and progress lines or as JSON lines (docs/adr/0123).
//!
//! The configuration (the model spec, the script, the hook settings) is
//! checked by [`Config::load`] before any backend is opened, so a bad one
//! is one sentence and exit 2 with nothing run. The run itself uses the
//! runtime's file tools over the backend, outside any save group: a
//! `state:FILE.json` workspace locks and saves every change by itself,
//! before the tool returns, so a tool result the model (or a `--json`
//! reader) sees is already on disk, as with `burrow mcp` (ADR 0112).

use std::collections::VecDeque;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use burrow::FileContext;
use burrow_runtime::ToolConfig;
use burrow_runtime::agent::{Agent, AgentEvent, CancelToken, Outcome, RunOptions, RunResult};
use burrow_runtime::hooks::{HookEvent, Hooks};
use burrow_runtime::message::Usage;
use burrow_runtime::model::{Model, ScriptedModel};
use burrow_runtime::tool::{ToolRegistry, file_tools};
use serde::Serialize;
use serde_json::Value;

use crate::display;
use crate::output::Exit;
use crate::spec::Opened;

/// Provider model specs (their adapters live in burrow-models, one cargo feature each).
const PROVIDERS: [&str; 3] = ["openai", "openai-responses", "anthropic"];

/// Events of the loop that `burrow run` does not fire yet: their hooks are named in a note.
const NOT_FIRED: [HookEvent; 1] = [HookEvent::SubagentStop];

/// Longest argument summary a progress line shows (characters).
const SUMMARY_CHARS: usize = 80;

/// A run's configuration, checked before anything runs.
pub struct Config {
    model: Arc<dyn Model>,
    hooks: Hooks,
    max_turns: usize,
    /// Notes for stderr (settings that name hooks burrow does not run).
    notes: Vec<String>,
}

impl Config {
    /// Reads the model spec and the settings file; an `Err` is one sentence.
    pub fn load(
        model: &str,
        settings: Option<&Path>,
        max_turns: u32,
        request_timeout: Duration,
    ) -> Result<Config, String> {
        let model = open_model(model, request_timeout)?;
        let (hooks, notes) = match settings {
            Some(path) => load_hooks(path)?,
            None => (Hooks::new(), Vec::new()),
        };
        Ok(Config {
            model,
            hooks,
            max_turns: usize::try_from(max_turns).unwrap_or(usize::MAX),
            notes,
        })
    }
}

impl Config {
    /// Prints the configuration's notes on stderr.
    pub fn print_notes(&self) -> io::Result<()> {
        for note in &self.notes {
            writeln!(io::stderr(), "burrow: note: {note}")?;
        }
        Ok(())
    }

    /// The agent: the model, the file tools over `opened` as `ctx`, the hooks.
    pub fn agent(self, opened: &Opened, ctx: FileContext) -> Agent {
        let mut tools = ToolRegistry::new();
        for tool in file_tools(opened.backend.clone(), ctx, ToolConfig::default()) {
            tools.add_arc(tool);
        }
        Agent::new(self.model)
            .with_tools(tools)
            .with_hooks(self.hooks)
            .with_max_turns(self.max_turns)
    }
}

/// An agent for commands that only ask runs to stop: its model answers nothing.
pub fn idle_agent() -> Agent {
    Agent::new(Arc::new(ScriptedModel::from_responses(Vec::new())))
}

/// The model `spec` names.
fn open_model(spec: &str, request_timeout: Duration) -> Result<Arc<dyn Model>, String> {
    if spec.is_empty() {
        return Err(
            "the --model value is empty: give scripted:FILE.jsonl, openai:NAME, openai-responses:NAME or anthropic:NAME"
                .to_owned(),
        );
    }
    let Some((scheme, rest)) = spec.split_once(':') else {
        return Err(unknown_model(spec));
    };
    if scheme == "scripted" {
        if rest.is_empty() {
            return Err("the model scripted: names no file; give scripted:FILE.jsonl".to_owned());
        }
        let path = PathBuf::from(rest);
        return match ScriptedModel::from_file(&path) {
            Ok(model) => Ok(Arc::new(model)),
            Err(e) => Err(format!(
                "the model {} cannot be used: {}",
                display::name(spec),
                display::sentence(&e.message)
            )),
        };
    }
    if PROVIDERS.contains(&scheme) {
        if rest.is_empty() {
            return Err(format!(
                "the model {scheme}: names no model; give {scheme}:NAME"
            ));
        }
        return provider_model(scheme, rest, request_timeout).map_err(|message| {
            format!(
                "the model {} cannot be used: {}",
                display::name(spec),
                display::sentence(&message)
            )
        });
    }
    Err(unknown_model(spec))
}

/// The adapter for `scheme:name`, with its key and endpoint from the
/// conventional variables and `request_timeout` for each request; a missing
/// key is refused here, before any request.
#[cfg_attr(
    not(any(feature = "openai", feature = "anthropic")),
    allow(unused_variables)
)]
fn provider_model(
    scheme: &str,
    name: &str,
    request_timeout: Duration,
) -> Result<Arc<dyn Model>, String> {
    match scheme {
        #[cfg(feature = "openai")]
        "openai" => burrow_models::openai::config_from_env()
            .and_then(|c| {
                burrow_models::openai::OpenAiChat::new(
                    name,
                    c.with_request_timeout(Some(request_timeout)),
                )
            })
            .map(|m| Arc::new(m) as Arc<dyn Model>)
            .map_err(|e| e.message),
        #[cfg(feature = "openai")]
        "openai-responses" => burrow_models::openai::config_from_env()
            .and_then(|c| {
                burrow_models::openai::OpenAiResponses::new(
                    name,
                    c.with_request_timeout(Some(request_timeout)),
                )
            })
            .map(|m| Arc::new(m) as Arc<dyn Model>)
            .map_err(|e| e.message),
        #[cfg(feature = "anthropic")]
        "anthropic" => burrow_models::anthropic::config_from_env()
            .and_then(|c| {
                burrow_models::anthropic::AnthropicModel::new(
                    name,
                    c.with_request_timeout(Some(request_timeout)),
                )
            })
            .map(|m| Arc::new(m) as Arc<dyn Model>)
            .map_err(|e| e.message),
        _ => Err(format!(
            "the {scheme} adapter is not built into this burrow (rebuild burrow-cli with its `{}` feature)",
            scheme.split('-').next().unwrap_or(scheme)
        )),
    }
}

fn unknown_model(spec: &str) -> String {
    format!(
        "{} is not a model burrow knows: give scripted:FILE.jsonl, openai:NAME, openai-responses:NAME or anthropic:NAME",
        display::name(spec)
    )
}

/// The hooks of a settings file, and notes about hooks that will not run.
fn load_hooks(path: &Path) -> Result<(Hooks, Vec<String>), String> {
    let shown = display::name(&path.to_string_lossy()).into_owned();
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("the settings file {shown} cannot be read: {e}"))?;
    let hooks = Hooks::from_settings(&text)
        .map_err(|e| format!("the settings file {shown} cannot be used: {e}"))?;
    let mut notes = Vec::new();
    for name in hooks.ignored_events() {
        // burrow-runtime lists the events its loop does not fire yet among
        // the ignored ones: those get the "not yet" note below.
        if HookEvent::from_name(name).is_some_and(|e| NOT_FIRED.contains(&e)) {
            continue;
        }
        notes.push(format!(
            "the settings name {} hooks, an event burrow does not know; they never run",
            display::sentence(name)
        ));
    }
    for event in NOT_FIRED {
        if hooks.hooks().iter().any(|h| h.event == event)
            || hooks.ignored_events().iter().any(|n| n == event.as_str())
        {
            notes.push(format!(
                "burrow run does not fire {} yet; those hooks do not run",
                event.as_str()
            ));
        }
    }
    Ok((hooks, notes))
}

/// Runs the agent over `opened` as `ctx`, printing as `json` says.
pub async fn run(
    config: Config,
    prompt: String,
    opened: &Opened,
    ctx: FileContext,
    json: bool,
) -> io::Result<Exit> {
    for note in &config.notes {
        writeln!(io::stderr(), "burrow: note: {note}")?;
    }
    let agent = config.agent(opened, ctx);
    let mut history = Vec::new();
    let mut printer = Printer::new(json);
    let options = RunOptions::default();
    let interrupts = cancel_on_interrupt(options.cancel.clone());
    let result = agent
        .run_with(&mut history, Some(prompt), options, &mut |event| {
            printer.event(event)
        })
        .await;
    if let Some(interrupts) = interrupts {
        interrupts.abort();
    }
    // Outside a group this saves nothing more (each change saved itself);
    // it surfaces a save that a composite's part still owes.
    let saved = opened.finish();
    printer.end(&result)?;
    if let Err(e) = saved {
        writeln!(io::stderr(), "{}", crate::output::error_text(&e))?;
        return Ok(Exit::Failed);
    }
    Ok(exit_of(&result.outcome))
}

/// Ctrl-C (SIGINT) cancels the run: calls in flight end "cancelled", the
/// run ends `stopped` and its closing line is printed (docs/adr/0137). A
/// second Ctrl-C ends burrow at once (exit 130). `None` when the signal
/// cannot be watched (the run then just is not cancellable).
fn cancel_on_interrupt(cancel: CancelToken) -> Option<tokio::task::JoinHandle<()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt()).ok()?;
    Some(tokio::spawn(async move {
        if interrupt.recv().await.is_some() {
            cancel.cancel();
        }
        if interrupt.recv().await.is_some() {
            let _ = writeln!(io::stderr(), "burrow: interrupted again; stopping now");
            std::process::exit(130);
        }
    }))
}

/// 0 completed, 3 paused, 2 failed or stopped.
pub(crate) fn exit_of(outcome: &Outcome) -> Exit {
    match outcome {
        Outcome::Completed => Exit::Success,
        Outcome::Paused { .. } => Exit::Paused,
        Outcome::Failed { .. } | Outcome::Stopped { .. } => Exit::Failed,
    }
}

/// The stderr line of a retried model request:
/// `burrow: model request failed (REASON); retrying in N s, attempt 2 of 3`.
fn retry_line(attempt: u32, attempts: u32, wait_ms: u64, reason: &str) -> String {
    let tenths = wait_ms.saturating_add(50) / 100;
    let wait = if tenths.is_multiple_of(10) {
        format!("{}", tenths / 10)
    } else {
        format!("{}.{}", tenths / 10, tenths % 10)
    };
    format!(
        "burrow: model request failed ({}); retrying in {wait} s, attempt {attempt} of {attempts}",
        reason.trim_end_matches('.')
    )
}

/// Prints a run's events as they come. Write errors are kept (the first
/// one) and end the printing, not the run: the run's changes are made
/// whether or not anyone reads them.
pub(crate) struct Printer {
    json: bool,
    /// The calls of the current batch, in call order, waiting for their results.
    pending: VecDeque<(String, Value)>,
    /// Human output: stdout holds text not ended by a newline.
    mid_line: bool,
    error: Option<io::Error>,
}

impl Printer {
    pub(crate) fn new(json: bool) -> Self {
        Self {
            json,
            pending: VecDeque::new(),
            mid_line: false,
            error: None,
        }
    }

    pub(crate) fn event(&mut self, event: AgentEvent) {
        if self.error.is_some() {
            return;
        }
        if let AgentEvent::Retry {
            attempt,
            attempts,
            wait_ms,
            reason,
            ..
        } = &event
        {
            // On stderr in both modes; `--json` also gets the event.
            let line = retry_line(*attempt, *attempts, *wait_ms, reason);
            let written = self
                .end_text_line()
                .and_then(|()| writeln!(io::stderr(), "{}", display::sentence(&line)));
            if let Err(e) = written {
                self.error = Some(e);
                return;
            }
            if !self.json {
                return;
            }
        }
        let written = if self.json {
            self.json_event(event)
        } else {
            self.human_event(event)
        };
        if let Err(e) = written {
            self.error = Some(e);
        }
    }

    fn json_event(&mut self, event: AgentEvent) -> io::Result<()> {
        match event {
            AgentEvent::RunEnded {
                outcome,
                reason,
                message,
                usage,
            } => json_line(&RunEnded {
                kind: "run_ended",
                outcome: &outcome,
                reason: reason.as_deref(),
                message: message.as_deref(),
                usage,
            }),
            // thread_id is always there (null until runs belong to sessions).
            AgentEvent::RunStarted { run_id, thread_id } => json_line(&RunStarted {
                kind: "run_started",
                run_id,
                thread_id,
            }),
            // The runtime's own form: "type" first, then the event's fields.
            other => json_line(&other),
        }
    }

    fn human_event(&mut self, event: AgentEvent) -> io::Result<()> {
        match event {
            AgentEvent::TextDelta { text } => {
                if text.is_empty() {
                    return Ok(());
                }
                let mut out = io::stdout().lock();
                out.write_all(text.as_bytes())?;
                out.flush()?;
                self.mid_line = !text.ends_with('\n');
            }
            AgentEvent::ToolCall {
                name, arguments, ..
            } => self.pending.push_back((name, arguments)),
            AgentEvent::ToolResult {
                name,
                content,
                is_error,
                ..
            } => {
                let arguments = match self.pending.pop_front() {
                    Some((_, arguments)) => arguments,
                    None => Value::Null,
                };
                self.end_text_line()?;
                let outcome = if is_error {
                    format!("refused: {}", first_line(&content))
                } else {
                    "ok".to_owned()
                };
                let line = format!("burrow: tool {name} {}: {outcome}", summary(&arguments));
                writeln!(io::stderr(), "{}", display::sentence(&line))?;
            }
            // Thinking is not the answer; usage is summed in the closing line.
            AgentEvent::ThinkingDelta { .. }
            | AgentEvent::Usage { .. }
            | AgentEvent::Retry { .. }
            | AgentEvent::RunStarted { .. }
            | AgentEvent::RunEnded { .. } => {}
        }
        Ok(())
    }

    /// Ends a line of answer text on stdout, so stderr lines start on their own.
    fn end_text_line(&mut self) -> io::Result<()> {
        if self.mid_line {
            let mut out = io::stdout().lock();
            out.write_all(b"\n")?;
            out.flush()?;
            self.mid_line = false;
        }
        Ok(())
    }

    /// Prints the end of the run: the closing line (`--json` printed `run_ended` already).
    pub(crate) fn end(mut self, result: &RunResult) -> io::Result<()> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        if self.json {
            return Ok(());
        }
        self.end_text_line()?;
        let line = format!(
            "burrow: run {}: {}, {}, {}",
            outcome_text(&result.outcome),
            count(result.turns, "turn"),
            count(result.tool_calls, "tool call"),
            usage_text(&result.usage)
        );
        writeln!(io::stderr(), "{}", display::sentence(&line))
    }
}

/// `run_started` as `--json` prints it.
#[derive(Serialize)]
struct RunStarted {
    #[serde(rename = "type")]
    kind: &'static str,
    run_id: String,
    thread_id: Option<String>,
}

/// `run_ended` as `--json` prints it: the runtime's fields and, for a
/// failure, its one-sentence message.
#[derive(Serialize)]
struct RunEnded<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    outcome: &'a str,
    reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a str>,
    usage: Usage,
}

fn json_line(value: &impl Serialize) -> io::Result<()> {
    let line = serde_json::to_string(value).map_err(io::Error::other)?;
    let mut out = io::stdout().lock();
    writeln!(out, "{line}")?;
    out.flush()
}

/// `completed`, `failed (model_error: ...)`, `paused (...)`, `stopped (...)`.
fn outcome_text(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Completed => "completed".to_owned(),
        Outcome::Failed { reason, message } => {
            format!("failed ({}: {message})", reason.as_str())
        }
        Outcome::Paused { reason } => format!("paused (waiting for approval: {reason})"),
        Outcome::Stopped { reason } => format!("stopped ({reason})"),
    }
}

fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// `usage unknown`, or each count the model reported (a missing one as `unknown`).
fn usage_text(usage: &Usage) -> String {
    if usage.is_unknown() {
        return "usage unknown".to_owned();
    }
    let show = |n: Option<u64>| n.map_or_else(|| "unknown".to_owned(), |n| n.to_string());
    let mut parts = vec![
        format!("{} input", show(usage.input_tokens)),
        format!("{} output", show(usage.output_tokens)),
    ];
    if let Some(n) = usage.cache_read_tokens {
        parts.push(format!("{n} cache read"));
    }
    if let Some(n) = usage.cache_write_tokens {
        parts.push(format!("{n} cache write"));
    }
    format!("usage: {} tokens", parts.join(", "))
}

/// A short view of a call's arguments: the path, pattern or command it is
/// about, else its JSON cut to [`SUMMARY_CHARS`].
fn summary(arguments: &Value) -> String {
    const MAIN: [&str; 4] = ["file_path", "path", "pattern", "command"];
    let main = MAIN
        .iter()
        .find_map(|key| arguments.get(key).and_then(Value::as_str));
    let text = match main {
        Some(text) => display::name(text).into_owned(),
        None => arguments.to_string(),
    };
    cut(&text, SUMMARY_CHARS)
}

fn first_line(text: &str) -> String {
    cut(text.lines().next().unwrap_or(""), 2 * SUMMARY_CHARS)
}

fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_usage_is_not_zero() {
        assert_eq!(usage_text(&Usage::UNKNOWN), "usage unknown");
        let some = Usage {
            input_tokens: Some(0),
            ..Usage::UNKNOWN
        };
        assert_eq!(usage_text(&some), "usage: 0 input, unknown output tokens");
    }

    #[test]
    fn summaries_quote_controls_and_cut_long_arguments() {
        let args = serde_json::json!({"file_path": "/a\nb", "content": "x"});
        assert_eq!(summary(&args), "\"/a\\nb\"");
        let long = serde_json::json!({"x": "y".repeat(200)});
        assert_eq!(summary(&long).chars().count(), SUMMARY_CHARS + 3);
    }

    #[test]
    fn model_specs_are_checked() {
        #[cfg(not(feature = "anthropic"))]
        {
            let refused = open_model("anthropic:claude", Duration::from_secs(600))
                .err()
                .unwrap();
            assert!(refused.contains("not built into this burrow"), "{refused}");
        }
        assert!(
            open_model("openai:", Duration::from_secs(600))
                .err()
                .unwrap()
                .contains("names no model")
        );
        assert!(
            open_model("gpt-4", Duration::from_secs(600))
                .err()
                .unwrap()
                .contains("not a model")
        );
        assert!(
            open_model("scripted:", Duration::from_secs(600))
                .err()
                .unwrap()
                .contains("names no file")
        );
    }
}
