//! The checkpoint a runner takes before each batch of tool calls that changes files (ADR 0295).

use crate::agent::RunFailure;
use crate::checkpoint::Checkpointer;
use crate::message::{Message, ToolCall};
use crate::session::Write;

/// The write saving a checkpoint before the calls of `history`'s last answer
/// run, or none when they change no file. A pre-image that cannot be read
/// fails the run (`checkpoint_failed`) before any call runs: a batch is never
/// run without the checkpoint that undoes it.
pub(super) async fn checkpoint_before(
    taker: &Checkpointer,
    history: &[Message],
) -> Result<Option<Write>, RunFailure> {
    let Some(answer) = history.last() else {
        return Ok(None);
    };
    let calls: Vec<ToolCall> = answer.tool_calls().cloned().collect();
    if calls.is_empty() {
        return Ok(None);
    }
    let turn = history
        .iter()
        .filter(|m| matches!(m, Message::Assistant { .. }))
        .count();
    taker
        .batch_write(&calls, u32::try_from(turn).ok())
        .await
        .map_err(|e| {
            RunFailure::new(
                "checkpoint_failed",
                format!("the checkpoint before the batch could not be taken: {e}"),
            )
        })
}
