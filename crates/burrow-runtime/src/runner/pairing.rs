//! The history's one invariant a provider insists on: each tool call has exactly one result, after it. Checked before every model request of a run; a run that ends with unanswered calls answers them itself, and one left so by an earlier run is answered by the next (ADR 0251).

use std::collections::{HashMap, HashSet};

use crate::message::{Message, ToolResult};

/// What the model reads for a call its run never answered because the run ended first.
pub(crate) const ENDED_UNANSWERED: &str = "The call has no result: its run ended before the call ran or before its result was saved. Check whether it took effect before calling it again.";

/// The invariant checked as the history grows: each check reads only the
/// messages added since the one before (all of it again if the history was
/// rewritten shorter).
#[derive(Debug, Default)]
pub(crate) struct Pairing {
    /// How many history messages are checked.
    upto: usize,
    /// Every call id seen.
    calls: HashSet<String>,
    /// The calls seen without a result yet.
    open: HashSet<String>,
    /// The first break found (it stays: the history only grows).
    broken: Option<String>,
}

impl Pairing {
    /// Why `history` breaks the invariant, or `None` when each tool call has
    /// exactly one result after it and each result answers a call before it.
    pub(crate) fn check(&mut self, history: &[Message]) -> Option<String> {
        if history.len() < self.upto {
            *self = Self::default();
        }
        if self.broken.is_none() {
            self.broken = self.read(&history[self.upto..]);
        }
        self.upto = history.len();
        if let Some(why) = &self.broken {
            return Some(why.clone());
        }
        let mut open: Vec<&String> = self.open.iter().collect();
        open.sort_unstable();
        open.first().map(|id| {
            format!(
                "the call {id:?} has no result ({} unanswered in all)",
                open.len()
            )
        })
    }

    fn read(&mut self, messages: &[Message]) -> Option<String> {
        for message in messages {
            match message {
                Message::Assistant { .. } => {
                    for call in message.tool_calls() {
                        if !self.calls.insert(call.id.clone()) {
                            return Some(format!("two tool calls have the id {:?}", call.id));
                        }
                        self.open.insert(call.id.clone());
                    }
                }
                Message::ToolResult(r) => {
                    if self.open.remove(&r.call_id) {
                        continue;
                    }
                    return Some(if self.calls.contains(&r.call_id) {
                        format!("the call {:?} has two results", r.call_id)
                    } else {
                        format!(
                            "a result answers {:?}, which no earlier call has",
                            r.call_id
                        )
                    });
                }
                _ => {}
            }
        }
        None
    }
}

/// Results for the calls of the history's last answer that have none, in
/// call order: the recorded result when `recorded` has one, else
/// [`ENDED_UNANSWERED`] as an error.
pub(crate) fn close_unanswered(
    history: &[Message],
    recorded: &HashMap<String, ToolResult>,
) -> Vec<ToolResult> {
    super::durable::unanswered(history)
        .into_iter()
        .map(|call| match recorded.get(&call.id) {
            Some(result) => result.clone(),
            None => ToolResult {
                call_id: call.id,
                name: call.name,
                content: ENDED_UNANSWERED.to_owned(),
                is_error: true,
            },
        })
        .collect()
}
