//! The history's one invariant a provider insists on: each tool call has exactly one result, after it. Checked before every model request of a run; a run that ends with unanswered calls answers them itself, and one left so by an earlier run is answered by the next (ADR 0251).

use std::collections::HashMap;

use crate::message::{Message, ToolResult};

/// What the model reads for a call its run never answered because the run ended first.
pub(crate) const ENDED_UNANSWERED: &str = "The call has no result: its run ended before the call ran or before its result was saved. Check whether it took effect before calling it again.";

/// Why `history` breaks the invariant, or `None` when each tool call has
/// exactly one result after it and each result answers a call before it.
pub(crate) fn unpaired(history: &[Message]) -> Option<String> {
    // Call id -> results seen so far (None: no call of that id yet).
    let mut open: HashMap<&str, usize> = HashMap::new();
    for message in history {
        match message {
            Message::Assistant { .. } => {
                for call in message.tool_calls() {
                    if open.insert(call.id.as_str(), 0).is_some() {
                        return Some(format!("two tool calls have the id {:?}", call.id));
                    }
                }
            }
            Message::ToolResult(r) => match open.get_mut(r.call_id.as_str()) {
                Some(n) if *n == 0 => *n = 1,
                Some(_) => return Some(format!("the call {:?} has two results", r.call_id)),
                None => {
                    return Some(format!(
                        "a result answers {:?}, which no earlier call has",
                        r.call_id
                    ));
                }
            },
            _ => {}
        }
    }
    let mut missing: Vec<&str> = open
        .into_iter()
        .filter(|(_, n)| *n == 0)
        .map(|(id, _)| id)
        .collect();
    missing.sort_unstable();
    missing.first().map(|id| {
        format!(
            "the call {id:?} has no result ({} unanswered in all)",
            missing.len()
        )
    })
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
