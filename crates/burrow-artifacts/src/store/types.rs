//! The records a store keeps: `Versioned` heads, append-only `Revision`s, `Proposal`s, the workspace's `Event` log, and who acted (`Actor`).

use std::fmt;

use json_patch::Patch;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::change::Change;

/// Who made a change: a person, or an agent's run.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Actor {
    /// A person, by name (the CLI's `--as`).
    Person {
        /// Their name.
        name: String,
    },
    /// An agent, in one run.
    Agent {
        /// The agent's name.
        name: String,
        /// The run it acted in.
        run_id: String,
    },
}

impl Actor {
    /// The person `name`.
    pub fn person(name: impl Into<String>) -> Self {
        Actor::Person { name: name.into() }
    }

    /// The agent `name` in the run `run_id`.
    pub fn agent(name: impl Into<String>, run_id: impl Into<String>) -> Self {
        Actor::Agent {
            name: name.into(),
            run_id: run_id.into(),
        }
    }
}

impl fmt::Display for Actor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Actor::Person { name } => write!(f, "{name}"),
            Actor::Agent { name, run_id } => write!(f, "{name} (run {run_id})"),
        }
    }
}

/// An artifact at its head version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Versioned {
    /// Its id in the workspace (`KIND-SEQ`, given by the store).
    pub id: String,
    /// Its kind.
    pub kind: String,
    /// Its head version (1 after the create; only increases).
    pub version: u64,
    /// Its snapshot at that version.
    pub snapshot: Value,
    /// Who created it.
    pub created_by: Actor,
    /// Who made the head version.
    pub updated_by: Actor,
    /// Archived: readable, takes no more changes.
    pub archived: bool,
}

/// One committed version of an artifact: never changed once written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Revision {
    /// The version it made.
    pub version: u64,
    /// The change it came from (`create`, `patch`, `edit_text`, `archive`, `revert`).
    pub op: String,
    /// The JSON Patch from the previous version's snapshot to this one's.
    pub patch: Patch,
    /// The snapshot at this version.
    pub snapshot: Value,
    /// Who made it.
    pub actor: Actor,
    /// The proposal it applied, if it came from one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposal: Option<u64>,
    /// The change's summary, if it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

/// Where a proposal stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ProposalStatus {
    /// Waiting for a person to apply or reject it.
    Pending,
    /// Applied by `by`, making `version` of `artifact`.
    Applied {
        /// Who applied it.
        by: Actor,
        /// The artifact it changed (or created).
        artifact: String,
        /// The version it made.
        version: u64,
    },
    /// Rejected by `by`.
    Rejected {
        /// Who rejected it.
        by: Actor,
        /// Why, if they said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
}

/// A change submitted for a person's decision: it changes nothing until applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Proposal {
    /// Its number in the workspace (1, 2, ...).
    pub id: u64,
    /// The change it proposes.
    pub change: Change,
    /// Why, in the proposer's words.
    pub rationale: String,
    /// Who proposed it.
    pub actor: Actor,
    /// Where it stands.
    pub status: ProposalStatus,
}

/// What an event of the workspace's log records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum EventKind {
    /// An artifact's new version was committed (its create, edit, archive or revert).
    Changed {
        /// The artifact.
        artifact: String,
        /// Its kind.
        kind: String,
        /// The version made.
        version: u64,
        /// The change's op (`create`, `patch`, ...).
        op: String,
        /// The proposal it applied, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        proposal: Option<u64>,
    },
    /// A change was proposed.
    Proposed {
        /// The proposal.
        proposal: u64,
    },
    /// A proposal was rejected.
    Rejected {
        /// The proposal.
        proposal: u64,
    },
}

/// One event of a workspace's log: numbered 1, 2, ... without gaps, written
/// in the same transaction as what it records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// Its number in the workspace's log.
    pub seq: u64,
    /// Who acted.
    pub actor: Actor,
    /// When, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
}

/// What a committed change made: the new head, its revision, its event's seq.
#[derive(Debug, Clone, PartialEq)]
pub struct Committed {
    /// The artifact at its new version.
    pub artifact: Versioned,
    /// The revision written.
    pub revision: Revision,
    /// The seq of the change's event.
    pub seq: u64,
}
