//! The workspace in every request: the artifacts an agent follows rendered fresh into the instructions ([`Followed`]), and change notes of what others did since the run's `watch_after` appended to the history before each model request ([`Notices`], ADR 0334).
//!
//! A note is one user message, `<workspace-changes through="SEQ">` ...
//! `</workspace-changes>`, one line per change others made (a person
//! through the CLI, another agent's run, a decision on the agent's own
//! proposal), its summary and patch clipped to `max_summary_chars`. It stays
//! in the history, and the `through` seq of the last note there is where the
//! next look starts: a resumed run (a new process on the same thread) never
//! gets a change twice.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use async_trait::async_trait;
use burrow_backend::Error;
use burrow_runtime::agent::{Capability, InstructionProvider, RunFailure, RunInfo};
use burrow_runtime::message::{AssistantPart, Message};
use serde_json::Value;

use crate::error::{ArtifactError, ArtifactErrorKind};
use crate::kind::clip;
use crate::store::{Actor, Event, EventKind, MAX_EVENTS_PAGE, ProposalStatus, Versioned};
use crate::tools::{ARCHIVE, ArtifactWorkspace, EDIT, READ};

/// The tag a change note opens with.
pub const NOTE_TAG: &str = "<workspace-changes through=\"";

/// The instructions' block of the artifacts an agent follows.
pub struct Followed(pub Arc<ArtifactWorkspace>);

/// The capability that appends change notes before each model request.
pub struct Notices(pub Arc<ArtifactWorkspace>);

/// The seq the last change note of `history` went through, if it has one.
pub fn noted_through(history: &[Message]) -> Option<u64> {
    history.iter().rev().find_map(|m| match m {
        Message::User { text } => text
            .strip_prefix(NOTE_TAG)
            .and_then(|rest| rest.split('"').next())
            .and_then(|n| n.parse().ok()),
        _ => None,
    })
}

/// The ids of the artifacts `history`'s calls read, edited or archived.
fn called_ids(history: &[Message]) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    for message in history {
        let Message::Assistant { parts } = message else {
            continue;
        };
        for part in parts {
            if let AssistantPart::ToolCall(call) = part
                && [READ, EDIT, ARCHIVE].contains(&call.name.as_str())
                && let Some(id) = call.arguments.get("id").and_then(Value::as_str)
            {
                ids.insert(id.to_owned());
            }
        }
    }
    ids
}

impl ArtifactWorkspace {
    /// Whether `actor` is this agent (any of its runs).
    fn is_me(&self, actor: &Actor) -> bool {
        matches!(actor, Actor::Agent { name, .. } if *name == self.agent)
    }

    /// The artifacts the agent follows, at their heads, sorted by id: those
    /// it made (created by its name), read, edited or archived in `history`
    /// or in this process; archived and deleted ones are left out.
    pub async fn followed_heads(
        &self,
        history: &[Message],
    ) -> Result<Vec<Versioned>, ArtifactError> {
        let mut ids: BTreeSet<String> = self.followed().into_iter().collect();
        ids.extend(called_ids(history));
        let heads = self.store.list(&self.scope, None, false).await?;
        Ok(heads
            .into_iter()
            .filter(|h| ids.contains(&h.id) || self.is_me(&h.created_by))
            .collect())
    }

    /// The instructions' block: every followed artifact rendered
    /// ([`ArtifactWorkspace::render`]), or `None` when it follows none.
    pub async fn followed_block(
        &self,
        history: &[Message],
    ) -> Result<Option<String>, ArtifactError> {
        let heads = self.followed_heads(history).await?;
        if heads.is_empty() {
            return Ok(None);
        }
        let mut out = String::from(
            "## Artifacts you follow\nThese are their head versions now (fresh at every request); \
             an edit names the version it was made against:\n",
        );
        for head in &heads {
            out.push('\n');
            out.push_str(&self.render(head));
            out.push('\n');
        }
        Ok(Some(out.trim_end().to_owned()))
    }

    /// The change note of what others did after the look's start (the last
    /// note of `history`, else what this process saw last, else
    /// `watch_after`), or `None` when they did nothing. Reads at most one
    /// page of the log ([`MAX_EVENTS_PAGE`]); the next look goes on from it.
    pub async fn change_note(&self, history: &[Message]) -> Result<Option<String>, ArtifactError> {
        let noted = noted_through(history);
        let mut after = noted
            .unwrap_or(0)
            .max(self.watch_after)
            .max(self.seen.load(Ordering::Acquire));
        if self.from_first_look && noted.is_none() {
            let first = match self.first_look.get() {
                Some(seq) => *seq,
                None => {
                    let head = self.head_seq().await?;
                    *self.first_look.get_or_init(|| head)
                }
            };
            after = after.max(first);
        }
        let events = self
            .store
            .events(&self.scope, after, MAX_EVENTS_PAGE)
            .await?;
        let Some(last) = events.last().map(|e| e.seq) else {
            return Ok(None);
        };
        let mut lines = Vec::new();
        for event in &events {
            if let Some(line) = self.note_line(event).await? {
                lines.push(line);
            }
        }
        self.seen.fetch_max(last, Ordering::AcqRel);
        if lines.is_empty() {
            return Ok(None);
        }
        let mut text = format!("{NOTE_TAG}{last}\">\n");
        for line in lines {
            text.push_str("- ");
            text.push_str(&line);
            text.push('\n');
        }
        text.push_str(
            "</workspace-changes>\nOthers changed the artifact workspace (above). Before you change an \
             artifact that moved, read it again: a change made against an old version is refused.",
        );
        Ok(Some(text))
    }

    /// One line of a note for `event`, `None` for the agent's own doings.
    async fn note_line(&self, event: &Event) -> Result<Option<String>, ArtifactError> {
        let max = self.max_summary_chars;
        match &event.kind {
            EventKind::Changed {
                artifact,
                kind,
                version,
                op,
                proposal,
            } => {
                let mine = self.is_me(&event.actor);
                if mine && proposal.is_none() {
                    return Ok(None);
                }
                let revision = match self.store.revision(&self.scope, artifact, *version).await {
                    Ok(r) => Some(r),
                    Err(e) if e.is_refusal() => None,
                    Err(e) => return Err(e),
                };
                let mut line = match (mine, proposal) {
                    (true, Some(p)) => {
                        let by = self.decider(*p).await?;
                        format!(
                            "{by} applied your proposal {p}: {artifact} ({kind}) is now at version {version}"
                        )
                    }
                    (_, Some(p)) => format!(
                        "{} changed {artifact} ({kind}) to version {version} ({op}, proposal {p} applied)",
                        event.actor
                    ),
                    _ => format!(
                        "{} {} {artifact} ({kind}): now at version {version}",
                        event.actor,
                        verb(op)
                    ),
                };
                if let Some(r) = revision {
                    if let Some(summary) = r.summary.as_deref().filter(|s| !s.trim().is_empty()) {
                        line.push_str(&format!("; summary: {}", clip(summary, max)));
                    }
                    if op != "create" && op != "archive" {
                        let patch = serde_json::to_string(&r.patch).unwrap_or_default();
                        line.push_str(&format!("; patch: {}", clip(&patch, max)));
                    }
                }
                line.push('.');
                Ok(Some(line))
            }
            EventKind::Proposed { proposal } => {
                if self.is_me(&event.actor) {
                    return Ok(None);
                }
                let p = self.store.proposal(&self.scope, *proposal).await?;
                let target = p.change.id().unwrap_or("a new artifact");
                Ok(Some(format!(
                    "{} proposed proposal {proposal} ({} of {target}): {}.",
                    event.actor,
                    p.change.op(),
                    clip(&p.rationale, max)
                )))
            }
            EventKind::Rejected { proposal } => {
                let p = self.store.proposal(&self.scope, *proposal).await?;
                let whose = if self.is_me(&p.actor) {
                    "your proposal".to_owned()
                } else {
                    format!("{}'s proposal", p.actor)
                };
                let reason = match &p.status {
                    ProposalStatus::Rejected {
                        reason: Some(reason),
                        ..
                    } => format!(": {}", clip(reason, max)),
                    _ => String::new(),
                };
                Ok(Some(format!(
                    "{} rejected {whose} {proposal}{reason}; nothing changed.",
                    event.actor
                )))
            }
        }
    }

    /// Who applied the proposal `id`.
    async fn decider(&self, id: u64) -> Result<String, ArtifactError> {
        let p = self.store.proposal(&self.scope, id).await?;
        Ok(match p.status {
            ProposalStatus::Applied { by, .. } | ProposalStatus::Rejected { by, .. } => {
                by.to_string()
            }
            ProposalStatus::Pending => "someone".to_owned(),
        })
    }
}

fn verb(op: &str) -> &'static str {
    match op {
        "create" => "created",
        "archive" => "archived",
        "revert" => "reverted",
        _ => "changed",
    }
}

fn backend_error(e: &ArtifactError) -> Error {
    Error::failure_msg(format!("the artifact store failed: {}", e.message()))
}

#[async_trait]
impl InstructionProvider for Followed {
    async fn instructions(&self, history: &[Message]) -> Result<Option<String>, Error> {
        self.0
            .followed_block(history)
            .await
            .map_err(|e| backend_error(&e))
    }
}

#[async_trait]
impl Capability for Notices {
    fn name(&self) -> &str {
        "artifact_notices"
    }

    async fn before_request(
        &self,
        _run: &RunInfo,
        history: &[Message],
    ) -> Result<Vec<Message>, RunFailure> {
        match self.0.change_note(history).await {
            Ok(Some(note)) => Ok(vec![Message::user(note)]),
            Ok(None) => Ok(Vec::new()),
            Err(e) if matches!(e.kind(), ArtifactErrorKind::Store) => Err(RunFailure::new(
                "artifact_store_failed",
                format!("the artifact store failed: {}", e.message()),
            )),
            // A refusal (a name the store does not take) is no reason to stop the run.
            Err(_) => Ok(Vec::new()),
        }
    }
}
