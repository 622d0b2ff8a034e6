//! The agent loop's one step of compaction: before each model request, estimate the request and, past the threshold, ask the `PreCompact` hooks and the model for a summary and append the compaction to the history (ADR 0293).

use crate::compaction::{
    self, AUTO, CompactionConfig, MAX_FAILURES, Request, View, message_chars, reported_tokens,
};
use crate::hooks::{HookContext, HookEvent};
use crate::message::{Message, Usage};

use super::{Agent, AgentEvent, CancelToken, Outcome, RunState, hook_failed, stopped_by_cancel};

/// What a run's estimate anchors on, and how its summaries went.
#[derive(Debug, Default)]
pub(super) struct Tracker {
    /// The run's usage when its previous request was sent: the usage since
    /// is that request's.
    seen: Usage,
    /// The history's length when the previous request was sent.
    asked_at: Option<usize>,
    /// Summaries failed in a row.
    failures: u32,
}

impl Tracker {
    /// The estimated input of a request of `history` now: the previous
    /// request's reported tokens (its answer included) plus the characters
    /// added since over four; without a reported count, every character of
    /// the request over four.
    fn estimate(
        &self,
        total: &Usage,
        view: &mut View,
        history: &[Message],
        system: &str,
        agent: &Agent,
    ) -> u64 {
        let previous = Usage {
            input_tokens: since(total.input_tokens, self.seen.input_tokens),
            output_tokens: since(total.output_tokens, self.seen.output_tokens),
            cache_read_tokens: since(total.cache_read_tokens, self.seen.cache_read_tokens),
            cache_write_tokens: since(total.cache_write_tokens, self.seen.cache_write_tokens),
        };
        match (self.asked_at, reported_tokens(&previous)) {
            // The previous request's answer is at `at`; its tokens are in the output count.
            (Some(at), Some(tokens)) if at < history.len() => {
                let added: usize = history[at + 1..].iter().map(message_chars).sum();
                tokens + (added as u64).div_ceil(compaction::CHARS_PER_TOKEN)
            }
            _ => compaction::estimate_chars(system, agent.tools.definitions(), view.chars(history)),
        }
    }
}

/// The count reported since `before`, if any was.
fn since(now: Option<u64>, before: Option<u64>) -> Option<u64> {
    match (now, before) {
        (Some(n), Some(b)) if n > b => Some(n - b),
        (Some(_), Some(_)) => None,
        (n, None) => n,
        (None, Some(_)) => None,
    }
}

impl Agent {
    /// The same agent, compacting its history as `config` says: when a
    /// request's estimated input would pass the threshold, the older part is
    /// summarised (a request of its own) and replaced, in the model's view, by
    /// a compaction entry appended to the history.
    pub fn with_compaction(mut self, config: CompactionConfig) -> Self {
        self.compaction = Some(config);
        self
    }

    /// How the agent compacts its history, if it does.
    pub fn compaction(&self) -> Option<&CompactionConfig> {
        self.compaction.as_ref()
    }

    /// Compacts `history` when the next request would pass the threshold.
    /// `Some` when a `PreCompact` hook ends the run; a blocked or failed
    /// compaction is an event and the run goes on uncompacted.
    pub(super) async fn compact_if_due(
        &self,
        history: &mut Vec<Message>,
        system: &str,
        state: &mut RunState,
        hook_cx: &HookContext,
        cancel: &CancelToken,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Option<Outcome> {
        let outcome = match &self.compaction {
            Some(config) if state.compaction.failures < MAX_FAILURES => {
                self.compact_step(config, history, system, state, hook_cx, cancel, on_event)
                    .await
            }
            _ => None,
        };
        state.compaction.seen = state.usage;
        state.compaction.asked_at = Some(history.len());
        outcome
    }

    #[allow(clippy::too_many_arguments)]
    async fn compact_step(
        &self,
        config: &CompactionConfig,
        history: &mut Vec<Message>,
        system: &str,
        state: &mut RunState,
        hook_cx: &HookContext,
        cancel: &CancelToken,
        on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Option<Outcome> {
        let threshold = config
            .threshold
            .unwrap_or_else(|| compaction::default_threshold(self.model.name()));
        let tokens =
            state
                .compaction
                .estimate(&state.usage, &mut state.view, history, system, self);
        if tokens <= threshold {
            return None;
        }
        // Nothing to summarise is not a failure: the kept messages are all there is.
        compaction::plan(history, config.keep_messages)?;
        if self.hooks.has_event(HookEvent::PreCompact) {
            let said = tokio::select! {
                biased;
                () = cancel.cancelled() => return Some(stopped_by_cancel()),
                said = self.hooks.pre_compact(hook_cx, AUTO, None) => said,
            };
            if let Some(message) = said.run_failure {
                return Some(hook_failed(message));
            }
            if let Some(reason) = said.stop {
                return Some(Outcome::Stopped { reason });
            }
            if let Some(reason) = said.block {
                on_event(AgentEvent::CompactionBlocked { reason });
                return None;
            }
        }
        let request = Request {
            trigger: AUTO,
            instructions: None,
            keep_messages: config.keep_messages,
            tools: self.tools.definitions(),
            settings: &self.settings,
            tokens_before: Some(tokens),
        };
        let done = tokio::select! {
            biased;
            () = cancel.cancelled() => return Some(stopped_by_cancel()),
            done = compaction::compact(self.model.as_ref(), history, request) => done,
        };
        match done {
            Ok((entry, usage)) => {
                state.compaction.failures = 0;
                state.usage.add(&usage);
                on_event(AgentEvent::Usage { usage });
                on_event(AgentEvent::Compacted {
                    trigger: entry.trigger.clone(),
                    summarised: entry.summarised,
                    kept: entry.kept,
                    tokens_before: entry.tokens_before,
                    summary: entry.summary.clone(),
                });
                history.push(Message::Compaction(entry));
            }
            Err(e) => {
                state.compaction.failures += 1;
                on_event(AgentEvent::CompactionFailed {
                    reason: e.kind.as_str().to_owned(),
                    message: e.message,
                });
            }
        }
        None
    }
}
