//! The artifact workspace over HTTP (`/v1/artifacts`, `/v1/proposals`): what `burrow artifact` does for a person, in the token's tenant, each change attributed to the token's name; refusals as problems carrying what a caller needs to act (a conflict's head, a validation's paths).

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Extension, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use burrow_artifacts::tools::ArtifactWorkspace;
use burrow_artifacts::{
    Actor, ArtifactError, ArtifactErrorKind, ArtifactStore, Change, Committed, Versioned,
};
use burrow_runtime::message::Message;
use burrow_runtime::session::Scope;
use serde_json::{Value, json};

use crate::api::{body, scope};
use crate::artifact_types::{
    ArchiveBody, ArtifactList, ArtifactQuery, ArtifactView, CommittedView, CreateBody, EditBody,
    ProposalList, ProposalQuery, ProposalView, RejectBody, RevisionList, ShowQuery,
};
use crate::error::{ServeError, ServeErrorKind, ServeResult};
use crate::server::Shared;
use crate::tokens::Principal;

/// The artifact routes (behind the bearer check with the rest of `/v1`).
pub(crate) fn routes() -> Router<Shared> {
    Router::new()
        .route("/v1/artifacts", get(list_artifacts).post(create_artifact))
        .route("/v1/artifacts/{id}", get(show_artifact))
        .route("/v1/artifacts/{id}/history", get(artifact_history))
        .route("/v1/artifacts/{id}/edits", post(edit_artifact))
        .route("/v1/artifacts/{id}/archive", post(archive_artifact))
        .route("/v1/proposals", get(list_proposals))
        .route("/v1/proposals/{proposal}/apply", post(apply_proposal))
        .route("/v1/proposals/{proposal}/reject", post(reject_proposal))
}

impl From<ArtifactError> for ServeError {
    fn from(e: ArtifactError) -> Self {
        let message = e.message().to_owned();
        match e.kind() {
            ArtifactErrorKind::Conflict {
                head,
                changes_since,
            } => ServeError::new(ServeErrorKind::Conflict, message)
                .with_member("head", json!(head))
                .with_member("changes_since", json!(changes_since)),
            ArtifactErrorKind::Validation { paths } => {
                ServeError::new(ServeErrorKind::Validation, message)
                    .with_member("paths", json!(paths))
            }
            ArtifactErrorKind::Edit { occurrences } => {
                ServeError::new(ServeErrorKind::Edit, message)
                    .with_member("occurrences", json!(occurrences))
            }
            ArtifactErrorKind::TooLarge { size, limit } => {
                ServeError::new(ServeErrorKind::TooLarge, message)
                    .with_member("size", json!(size))
                    .with_member("limit", json!(limit))
            }
            ArtifactErrorKind::UnknownKind => ServeError::new(ServeErrorKind::UnknownKind, message),
            ArtifactErrorKind::Patch => ServeError::new(ServeErrorKind::Patch, message),
            ArtifactErrorKind::NotFound => ServeError::new(ServeErrorKind::NotFound, message),
            ArtifactErrorKind::InvalidState => {
                ServeError::new(ServeErrorKind::InvalidState, message)
            }
            ArtifactErrorKind::InvalidArgument => {
                ServeError::new(ServeErrorKind::InvalidArgument, message)
            }
            // A store failure (or a backend's, which this server does not use): the
            // cause goes to the log, never to the client.
            _ => {
                tracing::error!(error = %e, "the artifact store failed");
                ServeError::new(
                    ServeErrorKind::Store,
                    "the artifact store failed; the server's log has the cause",
                )
            }
        }
    }
}

/// The artifact store, or NotFound when the server has none.
fn store(state: &Shared) -> ServeResult<&Arc<dyn ArtifactStore>> {
    state.artifacts.get().ok_or_else(|| {
        ServeError::new(
            ServeErrorKind::NotFound,
            "this server has no artifact workspace (it was started without --artifacts)",
        )
    })
}

/// The person a change is attributed to: the token's name.
fn person(principal: &Principal) -> Actor {
    Actor::person(principal.name.clone())
}

fn query<T>(given: Result<Query<T>, QueryRejection>, takes: &str) -> ServeResult<T> {
    given.map(|Query(q)| q).map_err(|_| {
        ServeError::new(
            ServeErrorKind::InvalidArgument,
            format!("the query takes {takes} only"),
        )
    })
}

/// `artifact`'s text through its kind's template, else its snapshot as pretty JSON.
fn rendered(store: &dyn ArtifactStore, kind: &str, snapshot: &Value) -> String {
    store
        .kinds()
        .get(kind)
        .map(|k| k.render(snapshot).0)
        .unwrap_or_else(|_| serde_json::to_string_pretty(snapshot).unwrap_or_default())
}

/// A head as JSON with its `rendered` text.
fn with_rendering(store: &dyn ArtifactStore, head: &Versioned) -> Value {
    let mut value = serde_json::to_value(head).unwrap_or(Value::Null);
    value["rendered"] = json!(rendered(store, &head.kind, &head.snapshot));
    value
}

/// The artifacts the thread's agent (`thread:ID`, the name `burrow run
/// --artifacts` gives a thread's agent) follows: those it made, and those
/// its history's calls read, edited or archived; at their heads, rendered.
pub(crate) async fn followed(
    store: &Arc<dyn ArtifactStore>,
    scope: Scope,
    thread: &str,
    history: &[Message],
) -> ServeResult<Vec<Value>> {
    let agent = ArtifactWorkspace::new(Arc::clone(store), scope, format!("thread:{thread}"));
    let heads = agent.followed_heads(history).await?;
    Ok(heads
        .iter()
        .map(|head| with_rendering(&**store, head))
        .collect())
}

fn committed(status: StatusCode, committed: &Committed) -> Response {
    let value = CommittedView {
        artifact: serde_json::to_value(&committed.artifact).unwrap_or(Value::Null),
        revision: serde_json::to_value(&committed.revision).unwrap_or(Value::Null),
        seq: committed.seq,
    };
    (status, axum::Json(value)).into_response()
}

/// `GET /v1/artifacts?kind=K&all=true`: the workspace's artifacts at their heads, by id.
#[utoipa::path(get, path = "/v1/artifacts", params(ArtifactQuery),
    responses((status = 200, body = ArtifactList),
              (status = 400, body = crate::types::Problem, content_type = "application/problem+json"),
              (status = 401, body = crate::types::Problem, content_type = "application/problem+json"),
              (status = 404, description = "The server has no artifact workspace",
               body = crate::types::Problem, content_type = "application/problem+json")))]
pub(crate) async fn list_artifacts(
    State(state): State<Shared>,
    Extension(principal): Extension<Principal>,
    given: Result<Query<ArtifactQuery>, QueryRejection>,
) -> ServeResult<axum::Json<ArtifactList>> {
    let store = store(&state)?;
    let q = query(given, "kind=KIND and all=true|false")?;
    let heads = store
        .list(
            &scope(&state, &principal),
            q.kind.as_deref(),
            q.all.unwrap_or(false),
        )
        .await?;
    let artifacts = heads.iter().map(|h| with_rendering(&**store, h)).collect();
    Ok(axum::Json(ArtifactList { artifacts }))
}

/// `GET /v1/artifacts/{id}?version=N`: the artifact at its head (or at version N), rendered.
#[utoipa::path(get, path = "/v1/artifacts/{id}", params(("id" = String, Path), ShowQuery),
    responses((status = 200, body = ArtifactView),
              (status = 401, body = crate::types::Problem, content_type = "application/problem+json"),
              (status = 404, body = crate::types::Problem, content_type = "application/problem+json")))]
pub(crate) async fn show_artifact(
    State(state): State<Shared>,
    Extension(principal): Extension<Principal>,
    Path(id): Path<String>,
    given: Result<Query<ShowQuery>, QueryRejection>,
) -> ServeResult<axum::Json<ArtifactView>> {
    let store = store(&state)?;
    let q = query(given, "version=N")?;
    let scope = scope(&state, &principal);
    let head = store.get(&scope, &id).await?;
    let (version, snapshot) = match q.version {
        Some(v) => (v, store.revision(&scope, &id, v).await?.snapshot),
        None => (head.version, head.snapshot.clone()),
    };
    let mut artifact = serde_json::to_value(&head).unwrap_or(Value::Null);
    artifact["version"] = json!(version);
    artifact["snapshot"] = snapshot.clone();
    Ok(axum::Json(ArtifactView {
        rendered: rendered(&**store, &head.kind, &snapshot),
        head_version: head.version,
        artifact,
    }))
}

/// `GET /v1/artifacts/{id}/history`: the artifact's revisions, oldest first.
#[utoipa::path(get, path = "/v1/artifacts/{id}/history", params(("id" = String, Path)),
    responses((status = 200, body = RevisionList),
              (status = 401, body = crate::types::Problem, content_type = "application/problem+json"),
              (status = 404, body = crate::types::Problem, content_type = "application/problem+json")))]
pub(crate) async fn artifact_history(
    State(state): State<Shared>,
    Extension(principal): Extension<Principal>,
    Path(id): Path<String>,
) -> ServeResult<axum::Json<RevisionList>> {
    let store = store(&state)?;
    let revisions = store.history(&scope(&state, &principal), &id).await?;
    let revisions = revisions
        .iter()
        .map(|r| serde_json::to_value(r).unwrap_or(Value::Null))
        .collect();
    Ok(axum::Json(RevisionList { revisions }))
}

/// `POST /v1/artifacts` `{"kind", "snapshot"}`: creates an artifact at version 1.
#[utoipa::path(post, path = "/v1/artifacts", request_body = CreateBody,
    responses((status = 201, body = CommittedView),
              (status = 400, body = crate::types::Problem, content_type = "application/problem+json"),
              (status = 401, body = crate::types::Problem, content_type = "application/problem+json"),
              (status = 413, body = crate::types::Problem, content_type = "application/problem+json"),
              (status = 422, description = "Validation (with paths) or an unknown kind",
               body = crate::types::Problem, content_type = "application/problem+json")))]
pub(crate) async fn create_artifact(
    State(state): State<Shared>,
    Extension(principal): Extension<Principal>,
    raw: Result<Bytes, BytesRejection>,
) -> ServeResult<Response> {
    let store = store(&state)?;
    let request: CreateBody = body(raw)?;
    let change = Change::Create {
        kind: request.kind,
        snapshot: request.snapshot,
    };
    let done = store
        .submit(&scope(&state, &principal), &person(&principal), change)
        .await?;
    Ok(committed(StatusCode::CREATED, &done))
}

/// `POST /v1/artifacts/{id}/edits` `{"base", "patch" | "old"+"new" (+"field"), "summary"?}`:
/// an RFC 6902 JSON Patch or an anchored text edit, made against version `base`.
#[utoipa::path(post, path = "/v1/artifacts/{id}/edits", params(("id" = String, Path)),
    request_body = EditBody,
    responses((status = 200, body = CommittedView),
              (status = 400, body = crate::types::Problem, content_type = "application/problem+json"),
              (status = 401, body = crate::types::Problem, content_type = "application/problem+json"),
              (status = 404, body = crate::types::Problem, content_type = "application/problem+json"),
              (status = 409, description = "A conflict with the head version (head, changes_since), or an archived artifact",
               body = crate::types::Problem, content_type = "application/problem+json"),
              (status = 422, description = "Validation (paths), a patch that cannot apply, an anchor not found once",
               body = crate::types::Problem, content_type = "application/problem+json")))]
pub(crate) async fn edit_artifact(
    State(state): State<Shared>,
    Extension(principal): Extension<Principal>,
    Path(id): Path<String>,
    raw: Result<Bytes, BytesRejection>,
) -> ServeResult<Response> {
    let store = store(&state)?;
    let request: EditBody = body(raw)?;
    let change = match (request.patch, request.old, request.new) {
        (Some(patch), None, None) => {
            let patch = serde_json::from_value(patch).map_err(|e| {
                ServeError::new(
                    ServeErrorKind::InvalidArgument,
                    format!("patch is not an RFC 6902 JSON Patch: {e}"),
                )
            })?;
            Change::Patch {
                id,
                base_version: request.base,
                patch,
                summary: request.summary,
            }
        }
        (None, Some(old), Some(new)) => Change::EditText {
            id,
            base_version: request.base,
            field: request.field.unwrap_or_else(|| "/text".to_owned()),
            old,
            new,
            summary: request.summary,
        },
        _ => {
            return Err(ServeError::new(
                ServeErrorKind::InvalidArgument,
                "give either patch or both old and new",
            ));
        }
    };
    let done = store
        .submit(&scope(&state, &principal), &person(&principal), change)
        .await?;
    Ok(committed(StatusCode::OK, &done))
}

/// `POST /v1/artifacts/{id}/archive` `{"base"}`: archives the artifact (readable, no more changes).
#[utoipa::path(post, path = "/v1/artifacts/{id}/archive", params(("id" = String, Path)),
    request_body = ArchiveBody,
    responses((status = 200, body = CommittedView),
              (status = 400, body = crate::types::Problem, content_type = "application/problem+json"),
              (status = 401, body = crate::types::Problem, content_type = "application/problem+json"),
              (status = 404, body = crate::types::Problem, content_type = "application/problem+json"),
              (status = 409, body = crate::types::Problem, content_type = "application/problem+json")))]
pub(crate) async fn archive_artifact(
    State(state): State<Shared>,
    Extension(principal): Extension<Principal>,
    Path(id): Path<String>,
    raw: Result<Bytes, BytesRejection>,
) -> ServeResult<Response> {
    let store = store(&state)?;
    let request: ArchiveBody = body(raw)?;
    let change = Change::Archive {
        id,
        base_version: request.base,
    };
    let done = store
        .submit(&scope(&state, &principal), &person(&principal), change)
        .await?;
    Ok(committed(StatusCode::OK, &done))
}

/// `GET /v1/proposals?all=true`: the pending proposals (every one with `all`), by id.
#[utoipa::path(get, path = "/v1/proposals", params(ProposalQuery),
    responses((status = 200, body = ProposalList),
              (status = 401, body = crate::types::Problem, content_type = "application/problem+json"),
              (status = 404, body = crate::types::Problem, content_type = "application/problem+json")))]
pub(crate) async fn list_proposals(
    State(state): State<Shared>,
    Extension(principal): Extension<Principal>,
    given: Result<Query<ProposalQuery>, QueryRejection>,
) -> ServeResult<axum::Json<ProposalList>> {
    let store = store(&state)?;
    let q = query(given, "all=true|false")?;
    let proposals = store
        .proposals(&scope(&state, &principal), !q.all.unwrap_or(false))
        .await?;
    let proposals = proposals
        .iter()
        .map(|p| serde_json::to_value(p).unwrap_or(Value::Null))
        .collect();
    Ok(axum::Json(ProposalList { proposals }))
}

/// `POST /v1/proposals/{proposal}/apply`: applies a pending proposal, checked against the head now.
#[utoipa::path(post, path = "/v1/proposals/{proposal}/apply", params(("proposal" = u64, Path)),
    responses((status = 200, body = CommittedView),
              (status = 401, body = crate::types::Problem, content_type = "application/problem+json"),
              (status = 404, body = crate::types::Problem, content_type = "application/problem+json"),
              (status = 409, description = "The head moved since the proposal (it stays pending), or it was decided",
               body = crate::types::Problem, content_type = "application/problem+json")))]
pub(crate) async fn apply_proposal(
    State(state): State<Shared>,
    Extension(principal): Extension<Principal>,
    Path(proposal): Path<String>,
) -> ServeResult<Response> {
    let store = store(&state)?;
    let id = proposal_id(&proposal)?;
    let done = store
        .apply_proposal(&scope(&state, &principal), &person(&principal), id)
        .await?;
    Ok(committed(StatusCode::OK, &done))
}

/// `POST /v1/proposals/{proposal}/reject` `{"reason"?}`: rejects a pending proposal.
#[utoipa::path(post, path = "/v1/proposals/{proposal}/reject", params(("proposal" = u64, Path)),
    request_body = RejectBody,
    responses((status = 200, body = ProposalView),
              (status = 400, body = crate::types::Problem, content_type = "application/problem+json"),
              (status = 401, body = crate::types::Problem, content_type = "application/problem+json"),
              (status = 404, body = crate::types::Problem, content_type = "application/problem+json"),
              (status = 409, body = crate::types::Problem, content_type = "application/problem+json")))]
pub(crate) async fn reject_proposal(
    State(state): State<Shared>,
    Extension(principal): Extension<Principal>,
    Path(proposal): Path<String>,
    raw: Result<Bytes, BytesRejection>,
) -> ServeResult<Response> {
    let store = store(&state)?;
    let id = proposal_id(&proposal)?;
    // An empty body is a rejection without a reason.
    let request: RejectBody = match &raw {
        Ok(bytes) if bytes.is_empty() => RejectBody { reason: None },
        _ => body(raw)?,
    };
    let decided = store
        .reject_proposal(
            &scope(&state, &principal),
            &person(&principal),
            id,
            request.reason.as_deref(),
        )
        .await?;
    let proposal = serde_json::to_value(&decided).unwrap_or(Value::Null);
    Ok(axum::Json(ProposalView { proposal }).into_response())
}

/// A proposal id from the path, or a refusal.
fn proposal_id(given: &str) -> ServeResult<u64> {
    given.parse().map_err(|_| {
        ServeError::new(
            ServeErrorKind::InvalidArgument,
            format!(
                "{} is not a proposal id: give its number",
                crate::api::quoted(given)
            ),
        )
    })
}
