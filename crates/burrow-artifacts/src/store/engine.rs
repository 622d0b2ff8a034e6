//! The one write path: every store runs these functions inside its own transaction, so the optimistic-version, revision, proposal and event-log rules live once.
//!
//! A store implements [`Tx`] (reads and writes of rows inside one
//! transaction that is serialised with every other on the same workspace)
//! and [`Transact`] (how it opens, commits and rolls back one); the blanket
//! [`ArtifactStore`](super::ArtifactStore) implementation does the rest.
//! Each function here reads everything it needs and decides before it
//! writes anything, so a refusal leaves the transaction with no writes.

use std::future::Future;
use std::time::{SystemTime, UNIX_EPOCH};

use burrow_runtime::session::Scope;

use super::types::{
    Actor, Committed, Event, EventKind, Proposal, ProposalStatus, Revision, Versioned,
};
use crate::change::{self, Change, Meta};
use crate::error::{ArtifactError, ChangeSince, Result};
use crate::kind::{Kinds, clip};

/// The longest rationale or rejection reason kept, in characters.
pub const MAX_RATIONALE_CHARS: usize = 2000;

/// Row access inside one transaction on one workspace.
pub trait Tx {
    /// The artifact `id`'s head.
    fn head(&mut self, id: &str) -> Result<Option<Versioned>>;
    /// Every head, sorted by id.
    fn heads(&mut self) -> Result<Vec<Versioned>>;
    /// The artifact `id`'s revisions after `after`, oldest first.
    fn revisions_after(&mut self, id: &str, after: u64) -> Result<Vec<Revision>>;
    /// The artifact `id`'s revision `version`.
    fn revision(&mut self, id: &str, version: u64) -> Result<Option<Revision>>;
    /// The workspace log's last seq (0 when empty).
    fn last_seq(&mut self) -> Result<u64>;
    /// Events after `after`, at most `limit`, in order.
    fn events_after(&mut self, after: u64, limit: usize) -> Result<Vec<Event>>;
    /// The last proposal's id (0 when none).
    fn last_proposal(&mut self) -> Result<u64>;
    /// The proposal `id`.
    fn proposal(&mut self, id: u64) -> Result<Option<Proposal>>;
    /// Every proposal, by id.
    fn proposals(&mut self) -> Result<Vec<Proposal>>;
    /// Writes `head` (inserting it or replacing the row of its id).
    fn put_head(&mut self, head: &Versioned) -> Result<()>;
    /// Appends `revision` to the artifact `id`.
    fn put_revision(&mut self, id: &str, revision: &Revision) -> Result<()>;
    /// Appends `event` to the log.
    fn put_event(&mut self, event: &Event) -> Result<()>;
    /// Writes `proposal` (inserting it or replacing the row of its id).
    fn put_proposal(&mut self, proposal: &Proposal) -> Result<()>;
}

/// How a store runs one transaction on a workspace.
pub trait Transact: Send + Sync {
    /// The workspace's kinds.
    fn kinds(&self) -> &std::sync::Arc<Kinds>;

    /// Runs `f` in one transaction on `scope`, serialised with every other on
    /// that workspace from its first read to its commit; commits when `f`
    /// returns `Ok`, else leaves nothing written.
    fn transact<T, F>(&self, scope: &Scope, f: F) -> impl Future<Output = Result<T>> + Send
    where
        T: Send + 'static,
        F: FnOnce(&mut dyn Tx) -> Result<T> + Send + 'static;
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

fn event(tx: &mut dyn Tx, actor: &Actor, kind: EventKind) -> Result<Event> {
    Ok(Event {
        seq: tx.last_seq()? + 1,
        actor: actor.clone(),
        at_ms: now_ms(),
        kind,
    })
}

/// What `change` makes, decided without writing: the new head and revision.
fn decide(
    tx: &mut dyn Tx,
    kinds: &Kinds,
    actor: &Actor,
    change: &Change,
    proposal: Option<u64>,
) -> Result<(Versioned, Revision)> {
    let summary = change.summary().map(|s| clip(s, MAX_RATIONALE_CHARS));
    if let Change::Create { kind, .. } = change {
        let applied = change::apply(kinds, None, change, None)?;
        let id = format!("{kind}-{}", tx.last_seq()? + 1);
        let head = Versioned {
            id,
            kind: kind.clone(),
            version: 1,
            snapshot: applied.snapshot.clone(),
            created_by: actor.clone(),
            updated_by: actor.clone(),
            archived: false,
        };
        let revision = Revision {
            version: 1,
            op: change.op().to_owned(),
            patch: applied.patch,
            snapshot: applied.snapshot,
            actor: actor.clone(),
            proposal,
            summary,
        };
        return Ok((head, revision));
    }
    let id = change.id().unwrap_or_default();
    let Some(mut current) = tx.head(id)? else {
        return Err(ArtifactError::not_found(format!(
            "there is no artifact {}.",
            clip(id, 100)
        )));
    };
    let base = change.base_version().unwrap_or_default();
    if base != current.version {
        if base > current.version {
            return Err(ArtifactError::invalid_argument(format!(
                "{id} has no version {base} yet: its head is version {}.",
                current.version
            )));
        }
        let since = tx
            .revisions_after(id, base)?
            .into_iter()
            .map(|r| ChangeSince {
                version: r.version,
                actor: r.actor,
                op: r.op,
                summary: r.summary,
            })
            .collect();
        return Err(ArtifactError::conflict(id, base, current.version, since));
    }
    let old = match change {
        Change::Revert { to_version, .. } => tx.revision(id, *to_version)?.map(|r| r.snapshot),
        _ => None,
    };
    // The head read here is only replaced: its snapshot is changed in place.
    let doc = std::mem::take(&mut current.snapshot);
    let applied = change::apply_owned(
        kinds,
        Meta {
            id,
            kind: &current.kind,
            version: current.version,
            archived: current.archived,
        },
        doc,
        change,
        old.as_ref(),
    )?;
    let version = current.version + 1;
    let revision = Revision {
        version,
        op: change.op().to_owned(),
        patch: applied.patch,
        snapshot: applied.snapshot.clone(),
        actor: actor.clone(),
        proposal,
        summary,
    };
    let head = Versioned {
        version,
        snapshot: applied.snapshot,
        updated_by: actor.clone(),
        archived: applied.archived,
        ..current
    };
    Ok((head, revision))
}

/// Commits `change` as `actor`: its revision, its head and its event.
pub fn submit(
    tx: &mut dyn Tx,
    kinds: &Kinds,
    actor: &Actor,
    change: &Change,
    proposal: Option<u64>,
) -> Result<Committed> {
    let (head, revision) = decide(tx, kinds, actor, change, proposal)?;
    let event = event(
        tx,
        actor,
        EventKind::Changed {
            artifact: head.id.clone(),
            kind: head.kind.clone(),
            version: head.version,
            op: revision.op.clone(),
            proposal,
        },
    )?;
    tx.put_revision(&head.id, &revision)?;
    tx.put_head(&head)?;
    tx.put_event(&event)?;
    Ok(Committed {
        artifact: head,
        revision,
        seq: event.seq,
    })
}

/// Records `change` as a proposal with `rationale`, after checking it would
/// apply now (so a proposal that could never apply is refused at once).
pub fn propose(
    tx: &mut dyn Tx,
    kinds: &Kinds,
    actor: &Actor,
    change: &Change,
    rationale: &str,
) -> Result<Proposal> {
    decide(tx, kinds, actor, change, None)?;
    let proposal = Proposal {
        id: tx.last_proposal()? + 1,
        change: change.clone(),
        rationale: clip(rationale, MAX_RATIONALE_CHARS),
        actor: actor.clone(),
        status: ProposalStatus::Pending,
    };
    let event = event(
        tx,
        actor,
        EventKind::Proposed {
            proposal: proposal.id,
        },
    )?;
    tx.put_proposal(&proposal)?;
    tx.put_event(&event)?;
    Ok(proposal)
}

fn pending(tx: &mut dyn Tx, id: u64) -> Result<Proposal> {
    let Some(proposal) = tx.proposal(id)? else {
        return Err(ArtifactError::not_found(format!(
            "there is no proposal {id}."
        )));
    };
    if proposal.status != ProposalStatus::Pending {
        return Err(ArtifactError::invalid_state(format!(
            "proposal {id} was already {}.",
            match proposal.status {
                ProposalStatus::Applied { .. } => "applied",
                _ => "rejected",
            }
        )));
    }
    Ok(proposal)
}

/// Applies the pending proposal `id` as `actor`: its change is committed
/// (attributed to its proposer, naming the proposal) and the proposal
/// marked applied, in one transaction. A moved head is a Conflict.
pub fn apply_proposal(tx: &mut dyn Tx, kinds: &Kinds, actor: &Actor, id: u64) -> Result<Committed> {
    let mut proposal = pending(tx, id)?;
    let committed = submit(tx, kinds, &proposal.actor, &proposal.change, Some(id))?;
    proposal.status = ProposalStatus::Applied {
        by: actor.clone(),
        artifact: committed.artifact.id.clone(),
        version: committed.artifact.version,
    };
    tx.put_proposal(&proposal)?;
    Ok(committed)
}

/// Rejects the pending proposal `id` as `actor`, with an optional reason.
pub fn reject_proposal(
    tx: &mut dyn Tx,
    actor: &Actor,
    id: u64,
    reason: Option<&str>,
) -> Result<Proposal> {
    let mut proposal = pending(tx, id)?;
    proposal.status = ProposalStatus::Rejected {
        by: actor.clone(),
        reason: reason.map(|r| clip(r, MAX_RATIONALE_CHARS)),
    };
    let event = event(tx, actor, EventKind::Rejected { proposal: id })?;
    tx.put_proposal(&proposal)?;
    tx.put_event(&event)?;
    Ok(proposal)
}
