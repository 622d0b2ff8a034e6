//! The bodies of the artifact operations (`/v1/artifacts`, `/v1/proposals`) and their part of the OpenAPI document.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, OpenApi, ToSchema};

/// The query of `GET /v1/artifacts`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct ArtifactQuery {
    /// Only artifacts of this kind.
    pub(crate) kind: Option<String>,
    /// Archived artifacts too.
    pub(crate) all: Option<bool>,
}

/// The query of `GET /v1/artifacts/{id}`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct ShowQuery {
    /// The version to show (the head by default).
    pub(crate) version: Option<u64>,
}

/// The query of `GET /v1/proposals`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct ProposalQuery {
    /// Decided proposals too (pending ones only by default).
    pub(crate) all: Option<bool>,
}

/// `GET /v1/artifacts`: the heads, by id, each with its `rendered` text.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ArtifactList {
    /// `{id, kind, version, snapshot, created_by, updated_by, archived, rendered}` each.
    #[schema(value_type = Vec<Object>)]
    pub(crate) artifacts: Vec<Value>,
}

/// `GET /v1/artifacts/{id}`: the artifact at the version asked for.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ArtifactView {
    /// `{id, kind, version, snapshot, created_by, updated_by, archived}` at that version.
    #[schema(value_type = Object)]
    pub(crate) artifact: Value,
    /// Its head version (an edit is made against it).
    pub(crate) head_version: u64,
    /// The snapshot through its kind's template, else as pretty JSON.
    pub(crate) rendered: String,
}

/// `GET /v1/artifacts/{id}/history`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct RevisionList {
    /// `{version, op, patch, snapshot, actor, proposal?, summary?}` each, oldest first.
    #[schema(value_type = Vec<Object>)]
    pub(crate) revisions: Vec<Value>,
}

/// What a committed change made.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct CommittedView {
    /// The artifact at its new head.
    #[schema(value_type = Object)]
    pub(crate) artifact: Value,
    /// The revision written.
    #[schema(value_type = Object)]
    pub(crate) revision: Value,
    /// The seq of the change's event in the workspace's log.
    pub(crate) seq: u64,
}

/// `POST /v1/artifacts`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateBody {
    /// One of the workspace's kinds (`KIND` of `DIR/KIND.schema.json`).
    pub(crate) kind: String,
    /// The first snapshot, valid against the kind's schema.
    #[schema(value_type = Object)]
    pub(crate) snapshot: Value,
}

/// `POST /v1/artifacts/{id}/edits`: `patch`, or `old` and `new` (in the string at
/// `field`, `/text` by default).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct EditBody {
    /// The version the edit was made against.
    pub(crate) base: u64,
    /// An RFC 6902 JSON Patch.
    #[serde(default)]
    #[schema(value_type = Option<Vec<Object>>)]
    pub(crate) patch: Option<Value>,
    /// The anchor: text that occurs exactly once in the field.
    #[serde(default)]
    pub(crate) old: Option<String>,
    /// What replaces it.
    #[serde(default)]
    pub(crate) new: Option<String>,
    /// A JSON Pointer to a string field.
    #[serde(default)]
    pub(crate) field: Option<String>,
    /// What the change does, in a line.
    #[serde(default)]
    pub(crate) summary: Option<String>,
}

/// `POST /v1/artifacts/{id}/archive`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ArchiveBody {
    /// The version the archive was decided against.
    pub(crate) base: u64,
}

/// `POST /v1/proposals/{proposal}/reject` (the body may be empty).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RejectBody {
    /// Why.
    #[serde(default)]
    pub(crate) reason: Option<String>,
}

/// `GET /v1/proposals`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ProposalList {
    /// `{id, change, rationale, actor, status}` each, by id.
    #[schema(value_type = Vec<Object>)]
    pub(crate) proposals: Vec<Value>,
}

/// A decided proposal.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ProposalView {
    #[schema(value_type = Object)]
    pub(crate) proposal: Value,
}

/// The artifact operations' part of the OpenAPI document.
#[derive(OpenApi)]
#[openapi(paths(
    crate::artifacts::list_artifacts,
    crate::artifacts::create_artifact,
    crate::artifacts::show_artifact,
    crate::artifacts::artifact_history,
    crate::artifacts::edit_artifact,
    crate::artifacts::archive_artifact,
    crate::artifacts::list_proposals,
    crate::artifacts::apply_proposal,
    crate::artifacts::reject_proposal,
))]
pub(crate) struct ArtifactDoc;
