//! `PermissionArtifactStore`: the `Read(...)` and `Edit(...)` deny path rules enforced over any `ArtifactStore`, each artifact named `/artifacts/KIND/ID` (ADR 0395).
//!
//! As `burrow_permissions::PermissionBackend` does for files, the rules
//! hold below the tools: whichever tool, subagent or command asks this
//! store, an artifact a `Read` rule covers is refused to every call (kind
//! PermissionDenied, one sentence naming the rule) and left out of every
//! listing, proposal list and event page; one an `Edit` (or `Write`) rule
//! covers takes no change, no proposal and no proposal applied to it, and
//! stays readable. A create is checked at `/artifacts/KIND/KIND-*`
//! ([`burrow_permissions::artifacts`]).

use std::sync::Arc;

use async_trait::async_trait;
use burrow_backend::VPath;
use burrow_permissions::PathRules;
use burrow_permissions::artifacts::{artifact_path, kind_path, new_artifact_path};
use burrow_runtime::session::Scope;

use crate::change::Change;
use crate::error::{ArtifactError, ArtifactErrorKind, Result};
use crate::kind::{Kinds, clip};
use crate::store::{
    Actor, ArtifactStore, Committed, Event, EventKind, MAX_EVENTS_PAGE, Proposal, Revision,
    Versioned,
};

/// An `ArtifactStore` behind the deny path rules; see the module docs.
pub struct PermissionArtifactStore {
    inner: Arc<dyn ArtifactStore>,
    rules: PathRules,
}

impl std::fmt::Debug for PermissionArtifactStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PermissionArtifactStore")
            .field("rules", &self.rules)
            .finish_non_exhaustive()
    }
}

impl PermissionArtifactStore {
    /// `inner` behind `rules`.
    pub fn new(inner: Arc<dyn ArtifactStore>, rules: PathRules) -> Self {
        Self { inner, rules }
    }

    /// `inner` behind `rules`, or `inner` itself when there are none.
    pub fn guard(inner: Arc<dyn ArtifactStore>, rules: PathRules) -> Arc<dyn ArtifactStore> {
        if rules.is_empty() {
            inner
        } else {
            Arc::new(Self::new(inner, rules))
        }
    }

    /// True when a `Read` rule hides the artifact `id`.
    fn hides(&self, id: &str) -> bool {
        artifact_path(id).is_some_and(|path| self.rules.hides(&path))
    }

    /// PermissionDenied when a `Read` rule hides the artifact `id`.
    fn check_read(&self, id: &str) -> Result<()> {
        match artifact_path(id).and_then(|path| self.rules.hidden_by(&path).map(str::to_owned)) {
            Some(rule) => Err(denied(id, &rule)),
            None => Ok(()),
        }
    }

    /// PermissionDenied when a rule refuses `change`: its artifact (a
    /// create's new one) hidden by a `Read` rule or locked by an `Edit` rule.
    fn check_change(&self, change: &Change) -> Result<()> {
        let (path, what): (Option<VPath>, String) = match change {
            Change::Create { kind, .. } => (
                new_artifact_path(kind),
                format!("a new {} artifact", clip(kind, 100)),
            ),
            other => {
                let id = other.id().unwrap_or_default();
                (artifact_path(id), format!("the artifact {}", clip(id, 100)))
            }
        };
        match path.and_then(|path| self.rules.locked_by(&path).map(str::to_owned)) {
            Some(rule) => Err(ArtifactError::new(
                ArtifactErrorKind::PermissionDenied,
                format!("{what} is denied by the permission rule {rule}; leave it alone."),
            )),
            None => Ok(()),
        }
    }

    /// The `Read` rule hiding the artifact `change` works on (for a create,
    /// every new artifact of its kind), if one does.
    fn change_hidden_by(&self, change: &Change) -> Option<&str> {
        let path = match change {
            Change::Create { kind, .. } => new_artifact_path(kind),
            other => other.id().and_then(artifact_path),
        };
        path.and_then(|path| self.rules.hidden_by(&path))
    }

    /// True when a `Read` rule hides the artifact `change` works on.
    fn hides_change(&self, change: &Change) -> bool {
        self.change_hidden_by(change).is_some()
    }

    /// True when `event` is about an artifact a `Read` rule hides (a
    /// proposal's event: the artifact its change works on).
    async fn hides_event(&self, scope: &Scope, event: &Event) -> Result<bool> {
        match &event.kind {
            EventKind::Changed { artifact, .. } => Ok(self.hides(artifact)),
            EventKind::Proposed { proposal } | EventKind::Rejected { proposal } => {
                match self.inner.proposal(scope, *proposal).await {
                    Ok(p) => Ok(self.hides_change(&p.change)),
                    Err(e) if matches!(e.kind(), ArtifactErrorKind::NotFound) => Ok(false),
                    Err(e) => Err(e),
                }
            }
        }
    }
}

/// The refusal of the artifact `id` by `rule`: PermissionDenied, one sentence naming the rule.
fn denied(id: &str, rule: &str) -> ArtifactError {
    ArtifactError::new(
        ArtifactErrorKind::PermissionDenied,
        format!(
            "the artifact {} is denied by the permission rule {rule}; leave it alone.",
            clip(id, 100)
        ),
    )
}

#[async_trait]
impl ArtifactStore for PermissionArtifactStore {
    fn kinds(&self) -> &Arc<Kinds> {
        self.inner.kinds()
    }

    async fn submit(&self, scope: &Scope, actor: &Actor, change: Change) -> Result<Committed> {
        self.check_change(&change)?;
        self.inner.submit(scope, actor, change).await
    }

    async fn propose(
        &self,
        scope: &Scope,
        actor: &Actor,
        change: Change,
        rationale: &str,
    ) -> Result<Proposal> {
        self.check_change(&change)?;
        self.inner.propose(scope, actor, change, rationale).await
    }

    async fn apply_proposal(&self, scope: &Scope, actor: &Actor, id: u64) -> Result<Committed> {
        let proposal = self.proposal(scope, id).await?;
        self.check_change(&proposal.change)?;
        self.inner.apply_proposal(scope, actor, id).await
    }

    async fn reject_proposal(
        &self,
        scope: &Scope,
        actor: &Actor,
        id: u64,
        reason: Option<&str>,
    ) -> Result<Proposal> {
        self.proposal(scope, id).await?;
        self.inner.reject_proposal(scope, actor, id, reason).await
    }

    async fn get(&self, scope: &Scope, id: &str) -> Result<Versioned> {
        self.check_read(id)?;
        self.inner.get(scope, id).await
    }

    async fn revision(&self, scope: &Scope, id: &str, version: u64) -> Result<Revision> {
        self.check_read(id)?;
        self.inner.revision(scope, id, version).await
    }

    async fn history(&self, scope: &Scope, id: &str) -> Result<Vec<Revision>> {
        self.check_read(id)?;
        self.inner.history(scope, id).await
    }

    async fn list(
        &self,
        scope: &Scope,
        kind: Option<&str>,
        include_archived: bool,
    ) -> Result<Vec<Versioned>> {
        // A listing of a hidden kind's folder is refused, as `ls` of a hidden folder is.
        if let Some(rule) = kind_path(kind).and_then(|p| self.rules.hidden_by(&p)) {
            return Err(ArtifactError::new(
                ArtifactErrorKind::PermissionDenied,
                format!(
                    "the artifacts of the kind {} are denied by the permission rule {rule}; leave them alone.",
                    clip(kind.unwrap_or_default(), 100)
                ),
            ));
        }
        let mut list = self.inner.list(scope, kind, include_archived).await?;
        list.retain(|a| !self.hides(&a.id));
        Ok(list)
    }

    async fn proposal(&self, scope: &Scope, id: u64) -> Result<Proposal> {
        let proposal = self.inner.proposal(scope, id).await?;
        if let Some(rule) = self.change_hidden_by(&proposal.change) {
            return Err(ArtifactError::new(
                ArtifactErrorKind::PermissionDenied,
                format!(
                    "the proposal {id} is about an artifact denied by the permission rule {rule}; leave it alone."
                ),
            ));
        }
        Ok(proposal)
    }

    async fn proposals(&self, scope: &Scope, pending_only: bool) -> Result<Vec<Proposal>> {
        let mut proposals = self.inner.proposals(scope, pending_only).await?;
        proposals.retain(|p| !self.hides_change(&p.change));
        Ok(proposals)
    }

    /// # Behavior
    /// As the inner store's, without the events about hidden artifacts (so
    /// seqs may skip); a page is filled from further events, so a page
    /// shorter than `limit` still means the log's end.
    async fn events(&self, scope: &Scope, after: u64, limit: usize) -> Result<Vec<Event>> {
        let limit = limit.min(MAX_EVENTS_PAGE);
        let mut out = Vec::new();
        let mut from = after;
        while out.len() < limit {
            let page = self.inner.events(scope, from, limit - out.len()).await?;
            let Some(last) = page.last() else { break };
            from = last.seq;
            let full = page.len() >= limit - out.len();
            for event in page {
                if !self.hides_event(scope, &event).await? {
                    out.push(event);
                }
            }
            if !full {
                break;
            }
        }
        Ok(out)
    }
}
