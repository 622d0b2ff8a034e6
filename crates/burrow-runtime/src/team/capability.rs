//! `TeamInbox`: the capability that delivers a member's team messages into its thread, as user messages appended before each model request.
//!
//! What was delivered is read back from the history the thread already
//! keeps: each delivered message starts `<team-message seq="N"`, and the
//! inbox delivers only messages with a greater seq than the greatest there
//! (and than the greatest it delivered in this process). In a session thread
//! that history is the store's, so a crash, a resume or a take-over neither
//! loses a message nor delivers one twice.

use std::sync::Mutex;

use async_trait::async_trait;

use super::LoggedMessage;
use super::tools::TeamContext;
use crate::agent::{Capability, RunFailure, RunInfo};
use crate::message::Message;

const MARK: &str = "<team-message seq=\"";

/// Delivers `member`'s team messages before each model request.
#[derive(Debug)]
pub struct TeamInbox {
    cx: TeamContext,
    delivered: Mutex<u64>,
}

impl TeamInbox {
    /// The inbox of `cx.member` in `cx.team`.
    pub fn new(cx: TeamContext) -> Self {
        Self {
            cx,
            delivered: Mutex::new(0),
        }
    }
}

/// The seq of a delivered message's text (`None` for any other text).
fn seq_of(text: &str) -> Option<u64> {
    let rest = text.strip_prefix(MARK)?;
    rest.split('"').next()?.parse().ok()
}

/// The greatest seq delivered into `history`.
pub fn delivered_in(history: &[Message]) -> u64 {
    history
        .iter()
        .filter_map(|m| match m {
            Message::User { text } => seq_of(text),
            _ => None,
        })
        .max()
        .unwrap_or(0)
}

/// A logged message as the receiver's model reads it.
pub fn render(m: &LoggedMessage) -> String {
    let to = if m.message.is_broadcast() {
        "everyone"
    } else {
        m.message.receiver.as_str()
    };
    format!(
        "{MARK}{}\" from=\"{}\" to=\"{to}\">\n{}\n</team-message>",
        m.seq, m.message.sender, m.message.content
    )
}

#[async_trait]
impl Capability for TeamInbox {
    fn name(&self) -> &str {
        "team-inbox"
    }

    async fn before_request(
        &self,
        _run: &RunInfo,
        history: &[Message],
    ) -> Result<Vec<Message>, RunFailure> {
        let Some(teams) = self.cx.store.teams() else {
            return Err(RunFailure::new(
                "store_failed",
                "the session store keeps no teams, so team messages cannot be delivered",
            ));
        };
        let seen = *self.delivered.lock().unwrap_or_else(|e| e.into_inner());
        let after = seen.max(delivered_in(history));
        let fresh = teams
            .messages_for(&self.cx.team, &self.cx.member, after)
            .await
            .map_err(|e| {
                RunFailure::new(
                    "store_failed",
                    format!("team messages could not be read: {}", e.message()),
                )
            })?;
        if let Some(last) = fresh.last() {
            let mut d = self.delivered.lock().unwrap_or_else(|e| e.into_inner());
            *d = (*d).max(last.seq);
        }
        Ok(fresh.iter().map(|m| Message::user(render(m))).collect())
    }
}
