//! `TeamInbox`: the capability that delivers a member's team messages into its thread, as user messages appended before each model request.
//!
//! What was delivered is read back from the history the thread already
//! keeps: each delivered message starts `<team-message seq="N"`, and the
//! inbox delivers only messages with a greater seq than the greatest there,
//! than the greatest it delivered in this process, and than the member's
//! delivery cursor in the store. In a session thread that history is the
//! store's, so a crash, a resume or a take-over neither loses a message nor
//! delivers one twice. The cursor is raised to what the history holds before
//! each request (those messages are saved by then) and to what was
//! delivered when a run completes, so a history that no longer shows a
//! delivered message (compacted, rewound) still gets it once (ADR 0356).

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

impl TeamInbox {
    /// The greatest seq this inbox delivered (or found delivered) in this process.
    pub fn delivered(&self) -> u64 {
        *self.delivered.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn raise(&self, seq: u64) {
        let mut d = self.delivered.lock().unwrap_or_else(|e| e.into_inner());
        *d = (*d).max(seq);
    }

    fn teams(&self) -> Result<&dyn super::TeamStore, RunFailure> {
        self.cx.store.teams().ok_or_else(|| {
            RunFailure::new(
                "store_failed",
                "the session store keeps no teams, so team messages cannot be delivered",
            )
        })
    }

    /// Raises the member's cursor in the store to `seq` (a refusal, such as
    /// a history of another team's longer log, changes nothing and is no failure).
    async fn mark(&self, seq: u64) -> Result<u64, RunFailure> {
        let teams = self.teams()?;
        match teams
            .mark_delivered(&self.cx.team, &self.cx.member, seq)
            .await
        {
            Ok(at) => Ok(at),
            Err(e) if is_failure(&e) => Err(read_failed(&e)),
            Err(_) => teams
                .delivered(&self.cx.team, &self.cx.member)
                .await
                .map_err(|e| read_failed(&e)),
        }
    }

    /// The member's messages not delivered yet (after this inbox's mark, the
    /// history's `in_history` and the store's cursor), as user messages; the
    /// mark is raised past them.
    pub async fn fresh(&self, in_history: u64) -> Result<Vec<Message>, RunFailure> {
        let teams = self.teams()?;
        let stored = if in_history > 0 {
            self.mark(in_history).await?
        } else {
            teams
                .delivered(&self.cx.team, &self.cx.member)
                .await
                .map_err(|e| read_failed(&e))?
        };
        self.raise(in_history.max(stored));
        let after = self.delivered();
        let fresh = teams
            .messages_for(&self.cx.team, &self.cx.member, after)
            .await
            .map_err(|e| read_failed(&e))?;
        if let Some(last) = fresh.last() {
            self.raise(last.seq);
        }
        Ok(fresh.iter().map(|m| Message::user(render(m))).collect())
    }
}

fn is_failure(e: &crate::session::StoreError) -> bool {
    matches!(
        e.kind(),
        crate::session::StoreErrorKind::Storage | crate::session::StoreErrorKind::Corrupt
    )
}

fn read_failed(e: &crate::session::StoreError) -> RunFailure {
    RunFailure::new(
        "store_failed",
        format!("team messages could not be read: {}", e.message()),
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
        self.fresh(delivered_in(history)).await
    }

    async fn after_run(&self, _run: &RunInfo, outcome: &crate::agent::Outcome) {
        // A completed run's history is saved with every message delivered in it.
        if matches!(outcome, crate::agent::Outcome::Completed) {
            let seq = self.delivered();
            if seq > 0 {
                let _ = self.mark(seq).await;
            }
        }
    }
}
