//! The `ArtifactStore` trait (the API boundary every store meets) and its one implementation over any store's transactions ([`engine`]).

pub mod engine;
mod memory;
#[cfg(feature = "postgres")]
mod postgres;
mod sqlite;
mod types;

use std::sync::Arc;

use async_trait::async_trait;
use burrow_runtime::session::Scope;

pub use memory::MemoryArtifactStore;
#[cfg(feature = "postgres")]
pub use postgres::PostgresArtifactStore;
pub use sqlite::{SqliteArtifactOptions, SqliteArtifactStore};
pub use types::{
    Actor, Committed, Event, EventKind, Proposal, ProposalStatus, Revision, Versioned,
};

use crate::change::Change;
use crate::error::{ArtifactError, Result};
use crate::kind::{Kinds, clip};
use engine::Transact;

/// The most events one [`ArtifactStore::events`] call returns.
pub const MAX_EVENTS_PAGE: usize = 1000;

/// Where a workspace's artifacts, revisions, proposals and event log live.
///
/// Every change is optimistic: it names the `base_version` it was made
/// against, and the store checks it against the head under the same lock
/// that writes. Each workspace ([`Scope`]) is independent.
///
/// # Behavior
/// - Every method refuses a tenant, workspace or id holding a NUL character
///   with InvalidArgument, writing nothing.
#[async_trait]
pub trait ArtifactStore: Send + Sync {
    /// The kinds this store accepts.
    ///
    /// # Behavior
    /// Constant for the store.
    fn kinds(&self) -> &Arc<Kinds>;

    /// Commits `change` as `actor`: its revision, the new head and its event,
    /// in one transaction.
    ///
    /// # Behavior
    /// - A create makes version 1 with the id `KIND-SEQ` (SEQ its event's
    ///   seq); every other change makes head version + 1.
    /// - A base version behind the head: Conflict with the head version and
    ///   the changes since, oldest first; ahead of it: InvalidArgument.
    /// - The new snapshot is validated against its kind (UnknownKind,
    ///   Validation naming paths, TooLarge); a patch that cannot apply is
    ///   Patch; a text edit follows burrow's edit rule (Edit "not found" /
    ///   "ambiguous: it occurs N times", line endings kept); an archived
    ///   artifact takes no change (InvalidState).
    /// - A refused change writes nothing: no revision, no event, head unchanged.
    /// - Of two changes from one base version, exactly one applies; the other
    ///   is a Conflict, whichever process or connection made it.
    async fn submit(&self, scope: &Scope, actor: &Actor, change: Change) -> Result<Committed>;

    /// Records `change` as a pending proposal with `rationale`; changes no artifact.
    ///
    /// # Behavior
    /// - The change is checked as `submit` would check it now; a refusal
    ///   records nothing.
    /// - The proposal gets the next id (1, 2, ...) and a `proposed` event.
    async fn propose(
        &self,
        scope: &Scope,
        actor: &Actor,
        change: Change,
        rationale: &str,
    ) -> Result<Proposal>;

    /// Applies the pending proposal `id`, decided by `actor`.
    ///
    /// # Behavior
    /// - Commits the proposal's change as `submit` does, attributed to its
    ///   proposer and naming the proposal, and marks it applied, in one
    ///   transaction.
    /// - A head that moved since the proposal's base: Conflict, the proposal
    ///   left pending. A missing proposal: NotFound; a decided one: InvalidState.
    async fn apply_proposal(&self, scope: &Scope, actor: &Actor, id: u64) -> Result<Committed>;

    /// Rejects the pending proposal `id`, decided by `actor`, with an optional reason.
    ///
    /// # Behavior
    /// - Marks it rejected with a `rejected` event; changes no artifact.
    /// - A missing proposal: NotFound; a decided one: InvalidState.
    async fn reject_proposal(
        &self,
        scope: &Scope,
        actor: &Actor,
        id: u64,
        reason: Option<&str>,
    ) -> Result<Proposal>;

    /// The artifact `id` at its head.
    ///
    /// # Behavior
    /// - A missing artifact: NotFound. An archived one is returned (archived).
    async fn get(&self, scope: &Scope, id: &str) -> Result<Versioned>;

    /// The artifact `id`'s revision `version`.
    ///
    /// # Behavior
    /// - A missing artifact or version: NotFound.
    async fn revision(&self, scope: &Scope, id: &str, version: u64) -> Result<Revision>;

    /// The artifact `id`'s revisions, oldest first.
    ///
    /// # Behavior
    /// - Versions 1..=head, each once; replaying each revision's patch on the
    ///   previous snapshot gives its snapshot. A missing artifact: NotFound.
    async fn history(&self, scope: &Scope, id: &str) -> Result<Vec<Revision>>;

    /// The heads, sorted by id, of `kind` only when given, archived ones only
    /// when `include_archived`.
    ///
    /// # Behavior
    /// - An empty workspace lists nothing; an unknown kind lists nothing.
    async fn list(
        &self,
        scope: &Scope,
        kind: Option<&str>,
        include_archived: bool,
    ) -> Result<Vec<Versioned>>;

    /// The proposal `id`.
    ///
    /// # Behavior
    /// - A missing proposal: NotFound.
    async fn proposal(&self, scope: &Scope, id: u64) -> Result<Proposal>;

    /// The proposals by id, pending ones only when `pending_only`.
    ///
    /// # Behavior
    /// - Decided proposals keep their decision.
    async fn proposals(&self, scope: &Scope, pending_only: bool) -> Result<Vec<Proposal>>;

    /// The workspace log's events after `after`, at most `limit` (capped at
    /// [`MAX_EVENTS_PAGE`]), in order.
    ///
    /// # Behavior
    /// - Seqs are 1, 2, ... with no gap; each committed change, proposal and
    ///   rejection is one event, written in its transaction; a refused call
    ///   writes none.
    async fn events(&self, scope: &Scope, after: u64, limit: usize) -> Result<Vec<Event>>;
}

#[async_trait]
impl<S> ArtifactStore for S
where
    S: Transact + 'static,
{
    fn kinds(&self) -> &Arc<Kinds> {
        Transact::kinds(self)
    }

    async fn submit(&self, scope: &Scope, actor: &Actor, change: Change) -> Result<Committed> {
        check_names(scope, &[change.id().unwrap_or_default()])?;
        let (kinds, actor) = (Arc::clone(Transact::kinds(self)), actor.clone());
        self.transact(scope, move |tx| {
            engine::submit(tx, &kinds, &actor, &change, None)
        })
        .await
    }

    async fn propose(
        &self,
        scope: &Scope,
        actor: &Actor,
        change: Change,
        rationale: &str,
    ) -> Result<Proposal> {
        check_names(scope, &[change.id().unwrap_or_default()])?;
        let (kinds, actor) = (Arc::clone(Transact::kinds(self)), actor.clone());
        let rationale = rationale.to_owned();
        self.transact(scope, move |tx| {
            engine::propose(tx, &kinds, &actor, &change, &rationale)
        })
        .await
    }

    async fn apply_proposal(&self, scope: &Scope, actor: &Actor, id: u64) -> Result<Committed> {
        check_names(scope, &[])?;
        let (kinds, actor) = (Arc::clone(Transact::kinds(self)), actor.clone());
        self.transact(scope, move |tx| {
            engine::apply_proposal(tx, &kinds, &actor, id)
        })
        .await
    }

    async fn reject_proposal(
        &self,
        scope: &Scope,
        actor: &Actor,
        id: u64,
        reason: Option<&str>,
    ) -> Result<Proposal> {
        check_names(scope, &[])?;
        let (actor, reason) = (actor.clone(), reason.map(str::to_owned));
        self.transact(scope, move |tx| {
            engine::reject_proposal(tx, &actor, id, reason.as_deref())
        })
        .await
    }

    async fn get(&self, scope: &Scope, id: &str) -> Result<Versioned> {
        check_names(scope, &[id])?;
        let id = id.to_owned();
        self.transact(scope, move |tx| tx.head(&id)?.ok_or_else(|| missing(&id)))
            .await
    }

    async fn revision(&self, scope: &Scope, id: &str, version: u64) -> Result<Revision> {
        check_names(scope, &[id])?;
        let id = id.to_owned();
        self.transact(scope, move |tx| {
            if tx.head(&id)?.is_none() {
                return Err(missing(&id));
            }
            tx.revision(&id, version)?.ok_or_else(|| {
                ArtifactError::not_found(format!("{} has no version {version}.", clip(&id, 100)))
            })
        })
        .await
    }

    async fn history(&self, scope: &Scope, id: &str) -> Result<Vec<Revision>> {
        check_names(scope, &[id])?;
        let id = id.to_owned();
        self.transact(scope, move |tx| {
            if tx.head(&id)?.is_none() {
                return Err(missing(&id));
            }
            tx.revisions_after(&id, 0)
        })
        .await
    }

    async fn list(
        &self,
        scope: &Scope,
        kind: Option<&str>,
        include_archived: bool,
    ) -> Result<Vec<Versioned>> {
        check_names(scope, &[kind.unwrap_or_default()])?;
        let kind = kind.map(str::to_owned);
        self.transact(scope, move |tx| {
            Ok(tx
                .heads()?
                .into_iter()
                .filter(|h| kind.as_ref().is_none_or(|k| *k == h.kind))
                .filter(|h| include_archived || !h.archived)
                .collect())
        })
        .await
    }

    async fn proposal(&self, scope: &Scope, id: u64) -> Result<Proposal> {
        check_names(scope, &[])?;
        self.transact(scope, move |tx| {
            tx.proposal(id)?
                .ok_or_else(|| ArtifactError::not_found(format!("there is no proposal {id}.")))
        })
        .await
    }

    async fn proposals(&self, scope: &Scope, pending_only: bool) -> Result<Vec<Proposal>> {
        check_names(scope, &[])?;
        self.transact(scope, move |tx| {
            Ok(tx
                .proposals()?
                .into_iter()
                .filter(|p| !pending_only || p.status == ProposalStatus::Pending)
                .collect())
        })
        .await
    }

    async fn events(&self, scope: &Scope, after: u64, limit: usize) -> Result<Vec<Event>> {
        check_names(scope, &[])?;
        let limit = limit.min(MAX_EVENTS_PAGE);
        self.transact(scope, move |tx| tx.events_after(after, limit))
            .await
    }
}

/// InvalidArgument when the workspace's names or `ids` hold a NUL character
/// (PostgreSQL text cannot hold one, so no store takes one).
fn check_names(scope: &Scope, ids: &[&str]) -> Result<()> {
    let nul = [scope.tenant.as_str(), scope.workspace.as_str()]
        .iter()
        .chain(ids)
        .any(|s| s.contains('\0'));
    if nul {
        return Err(ArtifactError::invalid_argument(
            "a tenant, workspace or artifact id holds a NUL character, which no store takes.",
        ));
    }
    Ok(())
}

fn missing(id: &str) -> ArtifactError {
    ArtifactError::not_found(format!("there is no artifact {}.", clip(id, 100)))
}
