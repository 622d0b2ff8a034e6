//! `MemoryArtifactStore`: the artifact store in the process, one mutex over every workspace (a transaction holds it from its first read to its last write).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use burrow_runtime::session::Scope;

use super::engine::{Transact, Tx};
use super::types::{Event, Proposal, Revision, Versioned};
use crate::error::Result;
use crate::kind::Kinds;

#[derive(Debug, Default)]
struct Workspace {
    heads: BTreeMap<String, Versioned>,
    revisions: HashMap<String, Vec<Revision>>,
    events: Vec<Event>,
    proposals: BTreeMap<u64, Proposal>,
}

/// The artifact store in this process: for tests and single-process use.
///
/// Clones share the same data (a clone is a second handle, as a second
/// connection is to a file).
#[derive(Debug, Clone)]
pub struct MemoryArtifactStore {
    kinds: Arc<Kinds>,
    state: Arc<Mutex<HashMap<Scope, Workspace>>>,
}

impl MemoryArtifactStore {
    /// An empty store accepting `kinds`.
    pub fn new(kinds: impl Into<Arc<Kinds>>) -> Self {
        Self {
            kinds: kinds.into(),
            state: Arc::default(),
        }
    }
}

impl Transact for MemoryArtifactStore {
    fn kinds(&self) -> &Arc<Kinds> {
        &self.kinds
    }

    async fn transact<T, F>(&self, scope: &Scope, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut dyn Tx) -> Result<T> + Send + 'static,
    {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let workspace = state.entry(scope.clone()).or_default();
        // The engine decides before it writes, and these writes cannot fail,
        // so a refusal leaves the workspace as it was.
        f(&mut MemTx(workspace))
    }
}

struct MemTx<'a>(&'a mut Workspace);

impl Tx for MemTx<'_> {
    fn head(&mut self, id: &str) -> Result<Option<Versioned>> {
        Ok(self.0.heads.get(id).cloned())
    }

    fn heads(&mut self) -> Result<Vec<Versioned>> {
        Ok(self.0.heads.values().cloned().collect())
    }

    fn revisions_after(&mut self, id: &str, after: u64) -> Result<Vec<Revision>> {
        Ok(self
            .0
            .revisions
            .get(id)
            .map(|r| r.iter().filter(|r| r.version > after).cloned().collect())
            .unwrap_or_default())
    }

    fn revision(&mut self, id: &str, version: u64) -> Result<Option<Revision>> {
        Ok(self
            .0
            .revisions
            .get(id)
            .and_then(|r| r.iter().find(|r| r.version == version).cloned()))
    }

    fn last_seq(&mut self) -> Result<u64> {
        Ok(self.0.events.last().map_or(0, |e| e.seq))
    }

    fn events_after(&mut self, after: u64, limit: usize) -> Result<Vec<Event>> {
        Ok(self
            .0
            .events
            .iter()
            .filter(|e| e.seq > after)
            .take(limit)
            .cloned()
            .collect())
    }

    fn last_proposal(&mut self) -> Result<u64> {
        Ok(self.0.proposals.keys().next_back().copied().unwrap_or(0))
    }

    fn proposal(&mut self, id: u64) -> Result<Option<Proposal>> {
        Ok(self.0.proposals.get(&id).cloned())
    }

    fn proposals(&mut self) -> Result<Vec<Proposal>> {
        Ok(self.0.proposals.values().cloned().collect())
    }

    fn put_head(&mut self, head: &Versioned) -> Result<()> {
        self.0.heads.insert(head.id.clone(), head.clone());
        Ok(())
    }

    fn put_revision(&mut self, id: &str, revision: &Revision) -> Result<()> {
        self.0
            .revisions
            .entry(id.to_owned())
            .or_default()
            .push(revision.clone());
        Ok(())
    }

    fn put_event(&mut self, event: &Event) -> Result<()> {
        self.0.events.push(event.clone());
        Ok(())
    }

    fn put_proposal(&mut self, proposal: &Proposal) -> Result<()> {
        self.0.proposals.insert(proposal.id, proposal.clone());
        Ok(())
    }
}
