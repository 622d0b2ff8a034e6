//! Context compaction (issue 27): when a request would pass a threshold, the older part of the history is summarised by the model and the model's view becomes the summary, the todos and the last user instruction (verbatim), and the last messages; the history keeps everything (ADR 0293).
//!
//! A compaction is an entry of the history, a [`Message::Compaction`]: what
//! was summarised (how many messages the summary request read, how many
//! right before the entry stay verbatim) and the summary. Nothing is
//! deleted: [`view`] is what the model reads, built anew for each request
//! from the history's last compaction, so a resumed thread sees the
//! compacted view and `burrow thread show` shows every message and every
//! compaction.
//!
//! The cut ([`plan`]) never separates a tool call from its result: the kept
//! tail starts at an answer, a user message or a system message, never at a
//! tool result. Estimation ([`estimate_tokens`]) counts four characters per
//! token; the agent loop anchors it on the provider's reported usage of the
//! previous request and estimates only what was added since.
//!
//! Tool results too large to return are the file tools' business, before a
//! compaction: [`crate::ToolConfig::large_result_chars`] (80,000 characters,
//! 20,000 tokens at [`CHARS_PER_TOKEN`]) is the one setting, and they go to
//! a file as they always have.

use crate::message::{AssistantPart, Compaction, Message, ToolCall, ToolResult, Usage};
use crate::model::{Model, ModelRequest, ModelSettings, ToolChoice, ToolDefinition};

mod view;

use view::layout;
pub use view::{View, view};

/// Characters counted as one token by the estimates.
pub const CHARS_PER_TOKEN: u64 = 4;

/// Tool results estimated past this many tokens are saved to a file by the
/// file tools ([`crate::ToolConfig::large_result_chars`] is this times
/// [`CHARS_PER_TOKEN`]): the one setting of spilling, which a compaction
/// relies on rather than adding a limit of its own.
pub const DEFAULT_LARGE_RESULT_TOKENS: usize = 20_000;

/// The threshold when the model's context window is not known (tokens).
pub const DEFAULT_THRESHOLD: u64 = 170_000;

/// The share of a known context window the threshold is, in percent.
pub const WINDOW_PERCENT: u64 = 85;

/// How many of the last messages stay verbatim by default.
pub const DEFAULT_KEEP_MESSAGES: usize = 6;

/// The most characters of one tool result or one call's arguments the
/// summary request reads (the rest is cut with a marker), so the summary
/// request itself fits.
pub const SUMMARY_ITEM_CHARS: usize = 4_000;

/// Consecutive failed summaries after which a run stops trying (Claude Code's circuit breaker).
pub const MAX_FAILURES: u32 = 3;

/// `auto`: the threshold asked for the compaction.
pub const AUTO: &str = "auto";
/// `manual`: someone asked for it (`burrow thread compact`).
pub const MANUAL: &str = "manual";

/// Context windows of common models, by the start of their id (tokens).
const WINDOWS: &[(&str, u64)] = &[
    ("claude-", 200_000),
    ("gpt-5", 400_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("gemini-1.5-pro", 2_097_152),
    ("gemini-1.5-flash", 1_048_576),
    ("gemini-2", 1_048_576),
];

/// The context window of `model` (a model id, with or without a `provider:`
/// prefix) when it is one of the common models burrow knows, else `None`.
pub fn context_window(model: &str) -> Option<u64> {
    let id = model.rsplit(':').next().unwrap_or(model);
    WINDOWS
        .iter()
        .filter(|(prefix, _)| id.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, window)| *window)
}

/// The default threshold for `model`: 85% of its context window when it is
/// known, else [`DEFAULT_THRESHOLD`].
pub fn default_threshold(model: &str) -> u64 {
    context_window(model).map_or(DEFAULT_THRESHOLD, |w| w * WINDOW_PERCENT / 100)
}

/// How a run compacts its history.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompactionConfig {
    /// Compact when a request's estimated input would pass this many
    /// tokens (`None`: [`default_threshold`] of the agent's model).
    pub threshold: Option<u64>,
    /// How many of the last messages stay verbatim (6; more when a tool
    /// call's results would otherwise be cut from it).
    pub keep_messages: usize,
}

impl Default for CompactionConfig {
    fn default() -> Self {
        Self {
            threshold: None,
            keep_messages: DEFAULT_KEEP_MESSAGES,
        }
    }
}

impl CompactionConfig {
    /// The same configuration compacting past `tokens`.
    pub fn with_threshold(mut self, tokens: u64) -> Self {
        self.threshold = Some(tokens);
        self
    }

    /// The same configuration keeping the last `n` messages (at least 1).
    pub fn with_keep_messages(mut self, n: usize) -> Self {
        self.keep_messages = n.max(1);
        self
    }
}

/// What kind of failure a compaction met.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CompactionErrorKind {
    /// Nothing before the kept messages is left to summarise.
    NothingToCompact,
    /// The summary request failed.
    ModelFailed,
    /// The model answered the summary request without any text.
    EmptySummary,
}

impl CompactionErrorKind {
    /// The kind as `--json` events spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            CompactionErrorKind::NothingToCompact => "nothing_to_compact",
            CompactionErrorKind::ModelFailed => "model_failed",
            CompactionErrorKind::EmptySummary => "empty_summary",
        }
    }
}

/// A compaction that did not happen; the history is as it was.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct CompactionError {
    /// What kind of failure.
    pub kind: CompactionErrorKind,
    /// One sentence.
    pub message: String,
}

impl CompactionError {
    fn new(kind: CompactionErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }
}

/// Where a compaction of `history` would cut, keeping about `keep` messages.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The first position of the history kept verbatim.
    pub cut: usize,
    /// What the summary request reads (before its closing instruction): the
    /// earlier compaction's text, if any, then the messages up to the cut.
    pub input: Vec<Message>,
    /// The last user message, when it falls before the cut (it is then
    /// repeated verbatim in the compaction's text).
    pub last_instruction: Option<String>,
}

/// Where a compaction of `history` cuts so that the last `keep` messages
/// (at least one) stay, moved earlier so that no tool result is kept without
/// the answer that called it; `None` when nothing before the cut is left to
/// summarise.
pub fn plan(history: &[Message], keep: usize) -> Option<Plan> {
    let (start, last) = layout(history);
    let keep = keep.max(1);
    let mut cut = history.len();
    let mut counted = 0;
    while cut > start && counted < keep {
        cut -= 1;
        if !matches!(history[cut], Message::Compaction(_)) {
            counted += 1;
        }
    }
    while cut > start
        && matches!(
            history[cut],
            Message::ToolResult(_) | Message::Compaction(_)
        )
    {
        cut -= 1;
    }
    let summarised: Vec<&Message> = history[start..cut]
        .iter()
        .filter(|m| !matches!(m, Message::Compaction(_) | Message::System { .. }))
        .collect();
    if summarised.is_empty() {
        return None;
    }
    let mut input = Vec::with_capacity(summarised.len() + 1);
    if let Some(last) = last {
        input.push(Message::user(last.text.clone()));
    }
    input.extend(summarised.into_iter().map(bounded));
    let last_instruction = history
        .iter()
        .rposition(|m| matches!(m, Message::User { .. }))
        .filter(|at| *at < cut)
        .and_then(|at| match &history[at] {
            Message::User { text } => Some(text.clone()),
            _ => None,
        });
    Some(Plan {
        cut,
        input,
        last_instruction,
    })
}

/// `message` for the summary request: long tool results and arguments cut.
fn bounded(message: &Message) -> Message {
    match message {
        Message::ToolResult(r) => Message::ToolResult(ToolResult {
            content: clip(&r.content),
            ..r.clone()
        }),
        Message::Assistant { parts } => Message::Assistant {
            parts: parts
                .iter()
                .map(|p| match p {
                    AssistantPart::ToolCall(call) => {
                        let text = call.arguments.to_string();
                        if text.chars().count() <= SUMMARY_ITEM_CHARS {
                            p.clone()
                        } else {
                            AssistantPart::ToolCall(ToolCall {
                                arguments: serde_json::json!({ "truncated": clip(&text) }),
                                ..call.clone()
                            })
                        }
                    }
                    other => other.clone(),
                })
                .collect(),
        },
        other => other.clone(),
    }
}

fn clip(text: &str) -> String {
    let total = text.chars().count();
    if total <= SUMMARY_ITEM_CHARS {
        return text.to_owned();
    }
    let head: String = text.chars().take(SUMMARY_ITEM_CHARS).collect();
    format!(
        "{head}\n[... {} more characters, not shown to the summary]",
        total - SUMMARY_ITEM_CHARS
    )
}

/// A definition for each tool `history` calls, with no description and any
/// object for arguments: what a compaction by hand sends along when the
/// run's own tools are not at hand (a provider refuses tool calls in a
/// history that comes without tools).
pub fn tools_named_in(history: &[Message]) -> Vec<ToolDefinition> {
    let mut names: Vec<&str> = history
        .iter()
        .flat_map(Message::tool_calls)
        .map(|c| c.name.as_str())
        .collect();
    names.sort_unstable();
    names.dedup();
    names
        .into_iter()
        .map(|name| ToolDefinition {
            name: name.to_owned(),
            description: String::new(),
            input_schema: serde_json::json!({"type": "object"}),
            native_type: None,
        })
        .collect()
}

/// The estimated tokens of a request of `system`, `tools` and `messages`:
/// their characters over [`CHARS_PER_TOKEN`].
pub fn estimate_tokens(system: &str, tools: &[ToolDefinition], messages: &[Message]) -> u64 {
    estimate_chars(system, tools, messages.iter().map(message_chars).sum())
}

/// [`estimate_tokens`] of a request whose messages count `chars` characters
/// (as [`View::chars`] keeps them).
pub(crate) fn estimate_chars(system: &str, tools: &[ToolDefinition], chars: usize) -> u64 {
    let tools: usize = tools
        .iter()
        .map(|t| t.name.len() + t.description.len() + t.input_schema.to_string().len())
        .sum();
    let chars = system.len() + tools + chars;
    (chars as u64).div_ceil(CHARS_PER_TOKEN)
}

/// The characters of `message` an estimate counts.
pub(crate) fn message_chars(message: &Message) -> usize {
    match message {
        Message::System { text } | Message::User { text } => text.len(),
        Message::Compaction(c) => c.text.len(),
        Message::ToolResult(r) => r.content.len() + r.name.len() + r.call_id.len(),
        Message::Assistant { parts } => parts
            .iter()
            .map(|p| match p {
                AssistantPart::Text { text } => text.len(),
                AssistantPart::Thinking { text, signature } => {
                    text.len() + signature.as_ref().map_or(0, String::len)
                }
                AssistantPart::ToolCall(call) => {
                    call.id.len() + call.name.len() + call.arguments.to_string().len()
                }
            })
            .sum(),
    }
}

/// The input tokens a request's reported `usage` stands for once answered:
/// input, cache reads and writes, and the answer's output; `None` when the
/// provider reported no input count.
pub fn reported_tokens(usage: &Usage) -> Option<u64> {
    let input = usage.input_tokens?;
    Some(
        input
            + usage.cache_read_tokens.unwrap_or(0)
            + usage.cache_write_tokens.unwrap_or(0)
            + usage.output_tokens.unwrap_or(0),
    )
}

/// The summary request's instructions (burrow's own).
pub const SUMMARY_INSTRUCTIONS: &str = "You write handover notes. The conversation you are shown, between a user and an AI agent that works with files and tools, is about to be replaced by your notes: the agent will carry on from them and from its few most recent messages alone, so whatever the notes leave out is lost to it.

Write the notes under these headings:
1. Task: what the user asked for, with every requirement, constraint and preference they stated (quote them where the wording matters).
2. Done so far: decisions made and why; files read, created, changed or deleted (exact paths); commands and tools run and what they showed.
3. Learnt: facts about the code, data or environment the agent relies on; errors met and whether and how they were fixed.
4. State: what is finished, what is in progress, what is left, and the very next step.

Keep paths, names, numbers, identifiers and error messages exact. Leave out pleasantries and anything the agent no longer needs. Do not call tools; answer with the notes only.";

/// The summary request's closing user message, with `instructions` (the
/// user's or a hook's) after it when given.
fn summary_prompt(instructions: Option<&str>) -> String {
    let mut text =
        "Write the handover notes for the conversation above, as your instructions say.".to_owned();
    if let Some(extra) = instructions.map(str::trim).filter(|s| !s.is_empty()) {
        text.push_str("\n\nFollow these instructions for the notes too:\n");
        text.push_str(extra);
    }
    text
}

/// The text the model reads in place of what `summary` replaces.
pub fn compacted_text(
    summary: &str,
    todos: Option<&[burrow_types::Todo]>,
    last_instruction: Option<&str>,
) -> String {
    let mut text = format!(
        "The earlier part of this conversation was summarised to save context. The summary:\n\n<summary>\n{}\n</summary>",
        summary.trim()
    );
    if let Some(todos) = todos.filter(|t| !t.is_empty()) {
        text.push_str("\n\nYour todo list, as you last wrote it with write_todos:\n");
        text.push_str(&crate::todos::render(todos));
    }
    if let Some(said) = last_instruction {
        text.push_str("\n\nThe user's last instruction, verbatim:\n<user_instruction>\n");
        text.push_str(said);
        text.push_str("\n</user_instruction>");
    }
    text.push_str("\n\nThe most recent messages follow unchanged; carry on from them.");
    text
}

/// One compaction to make: what asks for it and the summary's instructions.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// `auto` or `manual`.
    pub trigger: &'a str,
    /// Extra instructions for the summary (the user's or a hook's).
    pub instructions: Option<&'a str>,
    /// How many of the last messages stay verbatim.
    pub keep_messages: usize,
    /// The tools of the run (sent along: a provider refuses tool calls in a
    /// history without them), none of which the model may call.
    pub tools: &'a [ToolDefinition],
    /// The run's settings (the summary request's tool choice is `none`).
    pub settings: &'a ModelSettings,
    /// The estimated input tokens of the view it replaces, if known.
    pub tokens_before: Option<u64>,
}

/// A compaction of `history` by `model`: the entry to append to it (the
/// caller appends it: nothing is changed here) and the summary request's usage.
///
/// # Errors
/// [`CompactionErrorKind::NothingToCompact`] when nothing before the kept
/// messages is left; [`CompactionErrorKind::ModelFailed`] when the summary
/// request fails; [`CompactionErrorKind::EmptySummary`] when its answer has
/// no text.
pub async fn compact(
    model: &dyn Model,
    history: &[Message],
    request: Request<'_>,
) -> Result<(Compaction, Usage), CompactionError> {
    let Some(plan) = plan(history, request.keep_messages) else {
        return Err(CompactionError::new(
            CompactionErrorKind::NothingToCompact,
            "there is nothing to compact: the history is no longer than the messages kept",
        ));
    };
    let mut messages = plan.input.clone();
    messages.push(Message::user(summary_prompt(request.instructions)));
    let settings = ModelSettings {
        tool_choice: ToolChoice::None,
        ..request.settings.clone()
    };
    let response = crate::model::complete(
        model,
        ModelRequest {
            system: SUMMARY_INSTRUCTIONS,
            messages: &messages,
            tools: request.tools,
            settings: &settings,
        },
    )
    .await
    .map_err(|e| {
        CompactionError::new(
            CompactionErrorKind::ModelFailed,
            format!(
                "the summary request failed: {} ({})",
                e.message,
                e.kind.as_str()
            ),
        )
    })?;
    let usage = response.usage;
    let summary: String = response
        .parts
        .iter()
        .filter_map(|p| match p {
            AssistantPart::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    if summary.trim().is_empty() {
        return Err(CompactionError::new(
            CompactionErrorKind::EmptySummary,
            "the model answered the summary request without any text",
        ));
    }
    let todos = crate::todos::current(history);
    let text = compacted_text(&summary, todos.as_deref(), plan.last_instruction.as_deref());
    Ok((
        Compaction {
            summary,
            text,
            kept: history.len() - plan.cut,
            summarised: plan.input.len(),
            trigger: request.trigger.to_owned(),
            tokens_before: request.tokens_before,
        },
        usage,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolResult;
    use proptest::prelude::*;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.to_owned(),
            name: "read_file".to_owned(),
            arguments: serde_json::json!({"path": "/a"}),
        }
    }

    fn answer(ids: &[String]) -> Message {
        Message::Assistant {
            parts: ids
                .iter()
                .map(|id| AssistantPart::ToolCall(call(id)))
                .chain(std::iter::once(AssistantPart::Text {
                    text: "ok".to_owned(),
                }))
                .collect(),
        }
    }

    fn result(id: &str) -> Message {
        Message::ToolResult(ToolResult {
            call_id: id.to_owned(),
            name: "read_file".to_owned(),
            content: "x".repeat(10),
            is_error: false,
        })
    }

    fn entry(history: &[Message], plan: &Plan) -> Message {
        Message::Compaction(Compaction {
            summary: "s".to_owned(),
            text: "summary".to_owned(),
            kept: history.len() - plan.cut,
            summarised: plan.input.len(),
            trigger: AUTO.to_owned(),
            tokens_before: None,
        })
    }

    /// Why `view` would be refused by a provider: a result with no call
    /// before it, or a call with no result after it.
    fn orphan(view: &[Message]) -> Option<String> {
        let mut open = std::collections::HashSet::new();
        for m in view {
            match m {
                Message::ToolResult(r) => {
                    if !open.remove(&r.call_id) {
                        return Some(format!("orphan result {}", r.call_id));
                    }
                }
                Message::Compaction(_) => return Some("a compaction entry in the view".into()),
                _ => {
                    if !open.is_empty() {
                        return Some("a call left without its result".into());
                    }
                    open.extend(m.tool_calls().map(|c| c.id.clone()));
                }
            }
        }
        None
    }

    #[test]
    fn the_cut_moves_back_to_the_answer_of_the_kept_results() {
        let ids: Vec<String> = (0..3).map(|i| format!("c{i}")).collect();
        let mut history = vec![Message::user("do it"), Message::assistant_text("sure")];
        history.push(answer(&ids));
        history.extend(ids.iter().map(|id| result(id)));
        // Keeping 2 would start at c1's result: the cut moves to the answer.
        let plan = plan(&history, 2).expect("something to summarise");
        assert_eq!(plan.cut, 2);
        assert_eq!(plan.input.len(), 2);
        assert_eq!(plan.last_instruction.as_deref(), Some("do it"));
    }

    #[test]
    fn nothing_to_summarise_is_no_plan() {
        let history = vec![Message::user("hi"), Message::assistant_text("hello")];
        assert_eq!(plan(&history, 6), None);
        let ids = vec!["a".to_owned()];
        // One answer and its result are all there is besides the prompt's
        // answer: keeping 1 keeps the pair, the prompt is summarised.
        let history = vec![Message::user("go"), answer(&ids), result("a")];
        let plan = plan(&history, 1).expect("the prompt is summarised");
        assert_eq!(plan.cut, 1);
    }

    #[test]
    fn the_view_replaces_what_was_summarised_and_keeps_the_rest() {
        let mut history = vec![
            Message::system("rules"),
            Message::user("one"),
            Message::assistant_text("a"),
            Message::user("two"),
            Message::assistant_text("b"),
        ];
        let plan1 = plan(&history, 2).expect("a plan");
        assert_eq!(plan1.cut, 3);
        history.push(entry(&history, &plan1));
        history.push(Message::user("three"));
        let view = view(&history);
        assert_eq!(
            *view,
            [
                Message::system("rules"),
                Message::user("summary"),
                Message::user("two"),
                Message::assistant_text("b"),
                Message::user("three"),
            ]
        );
        // A second compaction reads the first one's text and the messages since.
        let plan2 = plan(&history, 1).expect("a second plan");
        assert_eq!(plan2.input[0], Message::user("summary"));
        assert_eq!(plan2.input.len(), 3);
    }

    #[test]
    fn windows_come_from_the_table_else_170k() {
        assert_eq!(context_window("anthropic:claude-sonnet-4-5"), Some(200_000));
        assert_eq!(default_threshold("claude-opus-4-1"), 170_000);
        assert_eq!(default_threshold("openai:gpt-4o-mini"), 108_800);
        assert_eq!(context_window("gpt-4.1-mini"), Some(1_047_576));
        assert_eq!(default_threshold("scripted"), DEFAULT_THRESHOLD);
    }

    #[test]
    fn long_results_are_cut_for_the_summary_request() {
        let long = Message::ToolResult(ToolResult {
            call_id: "a".into(),
            name: "grep".into(),
            content: "y".repeat(SUMMARY_ITEM_CHARS + 10),
            is_error: false,
        });
        let Message::ToolResult(r) = bounded(&long) else {
            panic!("a result stays a result");
        };
        assert!(
            r.content
                .ends_with("[... 10 more characters, not shown to the summary]")
        );
    }

    /// A turn of a generated history.
    #[derive(Debug, Clone)]
    enum Step {
        User,
        Text,
        Calls(usize),
        Compact(usize),
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            Just(Step::User),
            Just(Step::Text),
            (1usize..4).prop_map(Step::Calls),
            (1usize..8).prop_map(Step::Compact),
        ]
    }

    /// A step of a history a [`View`] follows: a turn, or the history cut
    /// back to an earlier length (as a rewind's view is shorter).
    #[derive(Debug, Clone)]
    enum Grow {
        Step(Step),
        System,
        Back(usize),
    }

    fn grow() -> impl Strategy<Value = Grow> {
        prop_oneof![
            6 => step().prop_map(Grow::Step),
            1 => Just(Grow::System),
            1 => (0usize..30).prop_map(Grow::Back),
        ]
    }

    #[test]
    fn the_kept_view_follows_several_compactions_and_a_history_cut_back() {
        let mut kept = View::new();
        let mut history = vec![Message::system("rules"), Message::user("one")];
        assert_eq!(kept.of(&history), &*view(&history));
        for round in 0..3 {
            let ids = vec![format!("c{round}")];
            history.push(answer(&ids));
            history.push(result(&ids[0]));
            history.push(Message::user(format!("more {round}")));
            assert_eq!(kept.of(&history), &*view(&history));
            let p = plan(&history, 2).expect("something to summarise");
            let e = entry(&history, &p);
            history.push(e);
            history.push(Message::system(format!("rule {round}")));
            assert_eq!(kept.of(&history), &*view(&history));
        }
        let compacted = view(&history).into_owned();
        assert_eq!(compacted.first(), Some(&Message::system("rules")));
        // Cut back past the last compaction (as a rewind to before it).
        history.truncate(history.len() - 3);
        assert_eq!(kept.of(&history), &*view(&history));
        history.truncate(2);
        assert_eq!(kept.of(&history), history.as_slice());
        history.push(Message::assistant_text("again"));
        assert_eq!(kept.of(&history), history.as_slice());
    }

    proptest! {
        /// A [`View`] kept as the history grows (and is sometimes cut back)
        /// is [`view`] of the history at every step, and counts its
        /// characters as [`estimate_tokens`] does.
        #[test]
        fn the_kept_view_is_the_view_at_every_step(
            steps in proptest::collection::vec(grow(), 1..60),
        ) {
            let mut history = vec![Message::user("start")];
            let mut kept = View::new();
            for (n, s) in steps.into_iter().enumerate() {
                match s {
                    Grow::System => history.push(Message::system(format!("s{n}"))),
                    Grow::Back(k) => history.truncate(k.max(1)),
                    Grow::Step(Step::User) => history.push(Message::user("more")),
                    Grow::Step(Step::Text) => history.push(Message::assistant_text("t")),
                    Grow::Step(Step::Calls(k)) => {
                        let ids: Vec<String> = (0..k).map(|i| format!("c{n}_{i}")).collect();
                        history.push(answer(&ids));
                        history.extend(ids.iter().map(|id| result(id)));
                    }
                    Grow::Step(Step::Compact(k)) => {
                        if let Some(p) = plan(&history, k) {
                            let e = entry(&history, &p);
                            history.push(e);
                        }
                    }
                }
                let whole = view(&history);
                prop_assert_eq!(kept.of(&history), &*whole);
                let chars: usize = whole.iter().map(message_chars).sum();
                prop_assert_eq!(kept.chars(&history), chars);
            }
        }

        /// However the history and the kept count fall, and however many
        /// compactions came before, the view after a compaction has no tool
        /// result without its call and no call without its results, and
        /// the kept messages are the history's last ones, verbatim.
        #[test]
        fn no_compaction_separates_a_call_from_its_result(
            steps in proptest::collection::vec(step(), 1..40),
            keep in 1usize..10,
        ) {
            let mut history = vec![Message::user("start")];
            let mut n = 0;
            for s in steps {
                match s {
                    Step::User => history.push(Message::user("more")),
                    Step::Text => history.push(Message::assistant_text("t")),
                    Step::Calls(k) => {
                        let ids: Vec<String> = (0..k).map(|i| format!("c{n}_{i}")).collect();
                        n += 1;
                        history.push(answer(&ids));
                        history.extend(ids.iter().map(|id| result(id)));
                    }
                    Step::Compact(k) => {
                        if let Some(p) = plan(&history, k) {
                            let e = entry(&history, &p);
                            history.push(e);
                        }
                    }
                }
                prop_assert_eq!(orphan(&view(&history)), None);
            }
            if let Some(p) = plan(&history, keep) {
                prop_assert!(!matches!(history[p.cut], Message::ToolResult(_)));
                let e = entry(&history, &p);
                history.push(e);
                let after = view(&history).into_owned();
                prop_assert_eq!(orphan(&after), None);
                let kept: Vec<&Message> = history[p.cut..]
                    .iter()
                    .filter(|m| !matches!(m, Message::Compaction(_)))
                    .collect();
                prop_assert!(kept.len() >= keep);
                let tail: Vec<&Message> = after[after.len() - kept.len()..].iter().collect();
                prop_assert_eq!(tail, kept);
            }
        }
    }
}
