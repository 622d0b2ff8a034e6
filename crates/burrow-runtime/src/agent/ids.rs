//! Call ids unique in a history: a model that repeats an id within an answer, reuses one from an earlier turn or sends none has its calls renamed deterministically before anything runs, and the history keeps the new names, so the provider always sees consistent ids (ADR 0253).

use std::collections::HashSet;

use crate::message::{AssistantPart, Message};

/// The id given to a call that came without one (then numbered like any repeat).
const NO_ID: &str = "call";

/// The ids a run's history uses (its calls' and results'), kept up to date
/// as the history grows, so each answer costs only its own calls.
#[derive(Debug, Default)]
pub(crate) struct UsedIds {
    /// How many history messages are counted in `ids`.
    upto: usize,
    ids: HashSet<String>,
}

impl UsedIds {
    fn catch_up(&mut self, history: &[Message]) {
        if history.len() < self.upto {
            // The history was rewritten (compacted): count it again.
            *self = Self::default();
        }
        for message in &history[self.upto..] {
            match message {
                Message::ToolResult(r) => {
                    self.ids.insert(r.call_id.clone());
                }
                other => self.ids.extend(other.tool_calls().map(|c| c.id.clone())),
            }
        }
        self.upto = history.len();
    }

    /// Renames the calls of `answer` whose id is empty or is used already (by a
    /// call or a result of `history`, or by an earlier call of `answer`): the id
    /// gets the first free suffix `~2`, `~3`, ... (an empty id becomes `call~N`).
    /// The same history and answer always give the same names. Returns how many
    /// calls were renamed.
    pub(crate) fn make_unique(&mut self, history: &[Message], answer: &mut Message) -> usize {
        let Message::Assistant { parts } = answer else {
            return 0;
        };
        if !parts
            .iter()
            .any(|p| matches!(p, AssistantPart::ToolCall(_)))
        {
            return 0;
        }
        self.catch_up(history);
        let used = &mut self.ids;
        let mut renamed = 0;
        for part in parts.iter_mut() {
            let AssistantPart::ToolCall(call) = part else {
                continue;
            };
            if !call.id.is_empty() && used.insert(call.id.clone()) {
                continue;
            }
            let base = if call.id.is_empty() {
                NO_ID.to_owned()
            } else {
                call.id.clone()
            };
            let fresh = (2u64..)
                .map(|n| format!("{base}~{n}"))
                .find(|id| !used.contains(id))
                .unwrap_or_else(|| base.clone());
            tracing::debug!(from = %call.id, to = %fresh, "a call id the model used already was renamed");
            used.insert(fresh.clone());
            call.id = fresh;
            renamed += 1;
        }
        renamed
    }
}
