//! The `/v1` handlers: bearer auth to a tenant, threads, messages, answers and stops, each a runner call; problem+json for every refusal.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Extension, Path, Query, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use burrow_runtime::message::Message;
use burrow_runtime::runner::{Command, CommandResult, StopRequest};
use burrow_runtime::session::{CommandKey, MAX_PAGE, RequestKind, RunStatus, Scope, ThreadStatus};
use burrow_runtime::subagent::{PARENT_RUN_LABEL, SUBAGENT_LABEL, TASK_CALL_LABEL};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tower_http::timeout::RequestBodyTimeoutLayer;

use crate::IDEMPOTENT_REPLAYED;
use crate::error::{ServeError, ServeErrorKind, ServeResult};
use crate::server::Shared;
use crate::tokens::Principal;
use crate::types::{
    Action, AnswerBody, AnswerResponse, Child, MessageBody, MessageResponse, Page, Pending,
    Problem, StopResponse, ThreadList, ThreadView,
};

/// The author every message and answer is recorded under: the one
/// `burrow run --session` uses, so both surfaces steer the same runs.
pub(crate) const AUTHOR: &str = "user";

/// The page at `/`: one file, no build step, no external request.
const PAGE: &str = include_str!("page.html");

pub(crate) fn router(state: Shared) -> Router {
    let body_bytes = state.limits.body_bytes;
    let body_timeout = state.limits.body_timeout;
    let api = Router::new()
        .route("/v1/threads", get(list_threads))
        .route("/v1/threads/{thread}", get(show_thread))
        .route("/v1/threads/{thread}/messages", post(post_message))
        .route("/v1/threads/{thread}/answers", post(post_answer))
        .route("/v1/threads/{thread}/stop", post(post_stop))
        .route("/v1/runs/{run}/events", get(crate::events::run_events));
    #[cfg(feature = "artifacts")]
    let api = api.merge(crate::artifacts::routes());
    let api = api.route_layer(middleware::from_fn_with_state(state.clone(), authenticate));
    Router::new()
        .route("/", get(page))
        .route("/v1/openapi.json", get(openapi))
        .merge(api)
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(body_bytes))
        .layer(RequestBodyTimeoutLayer::new(body_timeout))
        .with_state(state)
}

async fn page() -> Response {
    let mut response = Html(PAGE).into_response();
    // The page loads nothing from anywhere: say so to the browser too.
    response.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:",
        ),
    );
    response
}

/// `GET /v1/openapi.json`: the API's OpenAPI document (no token needed).
async fn openapi() -> Response {
    use utoipa::OpenApi as _;
    #[cfg_attr(not(feature = "artifacts"), allow(unused_mut))]
    let mut doc = crate::types::ApiDoc::openapi();
    #[cfg(feature = "artifacts")]
    doc.merge(crate::artifact_types::ArtifactDoc::openapi());
    Json(doc).into_response()
}

async fn not_found() -> ServeError {
    ServeError::new(ServeErrorKind::NotFound, "there is no such endpoint")
}

/// Finds the tenant of the request's bearer token; 401 without one.
async fn authenticate(State(state): State<Shared>, mut request: Request, next: Next) -> Response {
    let token = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim);
    let Some(token) = token.filter(|t| !t.is_empty()) else {
        return ServeError::new(
            ServeErrorKind::Unauthorized,
            "the request has no bearer token: send Authorization: Bearer TOKEN",
        )
        .into_response();
    };
    let Some(principal) = state.tokens.verify(token).cloned() else {
        return ServeError::new(
            ServeErrorKind::Unauthorized,
            "the bearer token is not one this server accepts",
        )
        .into_response();
    };
    request.extensions_mut().insert(principal);
    next.run(request).await
}

/// The workspace of the session store the principal's threads live in.
pub(crate) fn scope(state: &Shared, principal: &Principal) -> Scope {
    Scope::new(principal.tenant.clone(), state.workspace.clone())
}

/// The JSON body, or a refusal saying what is wrong with it.
pub(crate) fn body<T: DeserializeOwned>(body: Result<Bytes, BytesRejection>) -> ServeResult<T> {
    let bytes = body.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ServeError::new(
                ServeErrorKind::TooLarge,
                "the request body is larger than this server accepts",
            )
        } else {
            ServeError::new(
                ServeErrorKind::InvalidArgument,
                "the request body was not received whole in time",
            )
        }
    })?;
    serde_json::from_slice(&bytes).map_err(|e| {
        ServeError::new(
            ServeErrorKind::InvalidArgument,
            format!("the request body is not the JSON this endpoint takes: {e}"),
        )
    })
}

fn no_thread(thread: &str) -> ServeError {
    ServeError::new(
        ServeErrorKind::NotFound,
        format!("there is no thread {}", quoted(thread)),
    )
}

/// A name as a message shows it: quoted, control characters escaped, cut at 100 characters.
pub(crate) fn quoted(name: &str) -> String {
    let cut: String = name.chars().take(100).collect();
    format!("{cut:?}")
}

/// `GET /v1/threads?after=T&limit=N`: the tenant's threads by id, a page at a time.
#[utoipa::path(get, path = "/v1/threads", params(Page),
    responses((status = 200, body = ThreadList),
              (status = 400, body = Problem, content_type = "application/problem+json"),
              (status = 401, body = Problem, content_type = "application/problem+json")))]
pub(crate) async fn list_threads(
    State(state): State<Shared>,
    Extension(principal): Extension<Principal>,
    page: Result<Query<Page>, axum::extract::rejection::QueryRejection>,
) -> ServeResult<Json<ThreadList>> {
    let Query(page) = page.map_err(|_| {
        ServeError::new(
            ServeErrorKind::InvalidArgument,
            "the query takes after=THREAD and limit=N only",
        )
    })?;
    let (after, limit) = (page.after, page.limit.unwrap_or(100));
    if limit == 0 || limit > MAX_PAGE {
        return Err(ServeError::new(
            ServeErrorKind::InvalidArgument,
            format!("limit must be between 1 and {MAX_PAGE}"),
        ));
    }
    let scope = scope(&state, &principal);
    let threads = state
        .runner
        .store()
        .threads(&scope, after.as_deref(), limit)
        .await?;
    let next = (threads.len() == limit)
        .then(|| threads.last().map(|t| t.thread.clone()))
        .flatten();
    let threads = threads
        .iter()
        .map(|t| serde_json::to_value(t).unwrap_or(Value::Null))
        .collect();
    Ok(Json(ThreadList { threads, next }))
}

/// `GET /v1/threads/{thread}`: the thread, its history, runs, pending requests,
/// todos, followed artifacts and children (subagent threads with their outcomes).
#[utoipa::path(get, path = "/v1/threads/{thread}", params(("thread" = String, Path)),
    responses((status = 200, body = ThreadView),
              (status = 401, body = Problem, content_type = "application/problem+json"),
              (status = 404, body = Problem, content_type = "application/problem+json")))]
pub(crate) async fn show_thread(
    State(state): State<Shared>,
    Extension(principal): Extension<Principal>,
    Path(thread): Path<String>,
) -> ServeResult<Json<ThreadView>> {
    let store = state.runner.store();
    let key = scope(&state, &principal).thread(thread.clone());
    let Some(info) = store.thread(&key).await? else {
        return Err(no_thread(&thread));
    };
    let history = store.history(&key, 0).await?;
    let runs = store.runs(&key).await?;
    let pending: Vec<Pending> = runs
        .iter()
        .filter(|r| r.status == RunStatus::Paused)
        .flat_map(|r| {
            r.requests
                .iter()
                .filter(|q| q.answer.is_none())
                .map(|q| Pending {
                    run_id: r.run_id.clone(),
                    request_id: q.spec.id.clone(),
                    call_id: q.spec.call_id.clone(),
                    kind: kind_name(q.spec.kind),
                    tool_name: q.spec.tool_name.clone(),
                    arguments: q.spec.arguments.clone(),
                })
        })
        .collect();
    let messages: Vec<Message> = history.iter().map(|e| e.message.clone()).collect();
    let todos = burrow_runtime::todos::current(&messages).unwrap_or_default();
    let children = children(&state, &principal, &thread).await?;
    let artifacts = followed(&state, &principal, &thread, &messages).await?;
    let history: Vec<Value> = history
        .iter()
        .map(|e| json!({"pos": e.pos, "run_id": e.run_id, "message": e.message}))
        .collect();
    Ok(Json(ThreadView {
        thread: to_json(&info),
        history,
        runs: runs.iter().map(to_json).collect(),
        pending,
        todos: todos.iter().map(to_json).collect(),
        artifacts,
        children,
    }))
}

/// The subagent threads under `thread` (`thread/task-CALL`, and theirs), by id:
/// the store lists threads in id order, so they are the threads after
/// `thread/` that start with it.
async fn children(state: &Shared, principal: &Principal, thread: &str) -> ServeResult<Vec<Child>> {
    let store = state.runner.store();
    let scope = scope(state, principal);
    let prefix = format!("{thread}/");
    let mut after = prefix.clone();
    let mut found = Vec::new();
    'pages: loop {
        let page = store.threads(&scope, Some(&after), MAX_PAGE).await?;
        let full = page.len() == MAX_PAGE;
        for info in page {
            let Some(rest) = info.thread.strip_prefix(&prefix) else {
                break 'pages;
            };
            after.clone_from(&info.thread);
            if rest.split('/').all(|segment| segment.starts_with("task-")) {
                found.push(info);
            }
        }
        if !full {
            break;
        }
    }
    let mut children = Vec::with_capacity(found.len());
    for info in found {
        let key = scope.thread(info.thread.clone());
        let last = store.runs(&key).await?.pop();
        let label = |name: &str| last.as_ref().and_then(|r| r.labels.get(name).cloned());
        let parent = info
            .thread
            .rsplit_once('/')
            .map_or_else(|| thread.to_owned(), |(parent, _)| parent.to_owned());
        children.push(Child {
            subagent: label(SUBAGENT_LABEL),
            parent_run_id: label(PARENT_RUN_LABEL),
            call_id: label(TASK_CALL_LABEL),
            run_id: last.as_ref().map(|r| r.run_id.clone()),
            outcome: last.as_ref().map(|r| to_json(&r.status)),
            reason: last.as_ref().and_then(|r| r.reason.clone()),
            status: to_json(&info.status),
            parent,
            thread: info.thread,
        });
    }
    Ok(children)
}

/// The artifacts the thread's agent follows, at their heads, each with its
/// rendering (none without an artifact workspace).
#[cfg(feature = "artifacts")]
async fn followed(
    state: &Shared,
    principal: &Principal,
    thread: &str,
    history: &[Message],
) -> ServeResult<Vec<Value>> {
    let Some(store) = state.artifacts.get() else {
        return Ok(Vec::new());
    };
    crate::artifacts::followed(store, scope(state, principal), thread, history).await
}

#[cfg(not(feature = "artifacts"))]
async fn followed(
    _state: &Shared,
    _principal: &Principal,
    _thread: &str,
    _history: &[Message],
) -> ServeResult<Vec<Value>> {
    Ok(Vec::new())
}

/// A value as JSON (the runtime's types serialise without failing).
fn to_json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

fn kind_name(kind: RequestKind) -> &'static str {
    match kind {
        RequestKind::Question => "question",
        RequestKind::Approval => "approval",
    }
}

/// A JSON response, with `Idempotent-Replayed: true` when it is a repeat's.
fn answer_with(status: StatusCode, value: impl serde::Serialize, replayed: bool) -> Response {
    let mut response = (status, Json(value)).into_response();
    if replayed {
        response
            .headers_mut()
            .insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
    }
    response
}

fn command_id(given: Option<String>) -> ServeResult<(String, bool)> {
    match given {
        Some(id) if id.is_empty() || id.len() > 200 || id.chars().any(char::is_control) => {
            Err(ServeError::new(
                ServeErrorKind::InvalidArgument,
                "command_id must be 1 to 200 characters with no control character",
            ))
        }
        Some(id) => Ok((id, true)),
        None => Ok((format!("http_{}", uuid::Uuid::now_v7().simple()), false)),
    }
}

/// `POST /v1/threads/{thread}/messages` `{"content", "command_id"?}`: posts a
/// message, which starts a run in an idle thread, steers a running one and
/// answers a paused one, as `burrow run --session` does.
#[utoipa::path(post, path = "/v1/threads/{thread}/messages", params(("thread" = String, Path)),
    request_body = MessageBody,
    responses((status = 202, description = "Carried out", body = MessageResponse),
              (status = 200, description = "A repeated command id: the remembered result",
               body = MessageResponse, headers(("idempotent-replayed" = String))),
              (status = 400, body = Problem, content_type = "application/problem+json"),
              (status = 401, body = Problem, content_type = "application/problem+json"),
              (status = 413, body = Problem, content_type = "application/problem+json")))]
pub(crate) async fn post_message(
    State(state): State<Shared>,
    Extension(principal): Extension<Principal>,
    Path(thread): Path<String>,
    raw: Result<Bytes, BytesRejection>,
) -> ServeResult<Response> {
    let request: MessageBody = body(raw)?;
    if request.content.trim().is_empty() {
        return Err(ServeError::new(
            ServeErrorKind::InvalidArgument,
            "content is empty: a message needs text",
        ));
    }
    let (command_id, given) = command_id(request.command_id)?;
    let scope = scope(&state, &principal);
    let key = scope.thread(thread.clone());
    let store = state.runner.store();
    let before = store.thread(&key).await?.map(|info| info.status);
    // A fresh message id: a repeat's result names the first delivery's, not this one.
    let message_id = format!("msg_{}", uuid::Uuid::now_v7().simple());
    let command = Command::Send {
        thread: thread.clone(),
        text: request.content,
        message_id: Some(message_id.clone()),
    };
    let result = state
        .runner
        .execute(&scope, AUTHOR, command, &command_id)
        .await?;
    let (posted_id, replayed) = match &result {
        CommandResult::Posted { message_id: m, .. } => (m.clone(), *m != message_id),
        CommandResult::Rejected { kind, message } => {
            return Err(ServeError::of_runner_kind(*kind, message.clone()));
        }
        // The id was used by a command of another kind: say what it did.
        other => {
            let value = MessageResponse {
                action: Action::Remembered,
                thread: None,
                message_id: None,
                run_id: None,
                command_id: Some(command_id),
                result: Some(to_json(other)),
            };
            return Ok(answer_with(StatusCode::OK, value, true));
        }
    };
    let here = state.runner.running(&key).map(|h| h.run_id().to_owned());
    // The run the message started, even when it has ended already (a quick model).
    let started = store
        .runs(&key)
        .await?
        .into_iter()
        .rev()
        .find(|r| r.message_ids.contains(&posted_id))
        .map(|r| r.run_id);
    let run_id = match started.clone().or(here) {
        Some(run) => Some(run),
        None => store.thread(&key).await?.and_then(|info| info.active_run),
    };
    let action = if replayed {
        Action::Remembered
    } else {
        match before {
            Some(ThreadStatus::Paused) => Action::Answered,
            Some(ThreadStatus::Running) => Action::Steered,
            _ if started.is_some() => Action::Started,
            _ => Action::Steered,
        }
    };
    let value = MessageResponse {
        action,
        thread: Some(thread),
        message_id: Some(posted_id),
        run_id,
        command_id: given.then_some(command_id),
        result: None,
    };
    let status = if replayed {
        StatusCode::OK
    } else {
        StatusCode::ACCEPTED
    };
    Ok(answer_with(status, value, replayed))
}

/// `POST /v1/threads/{thread}/answers` `{"request", "text" | "approve"}`:
/// answers a request of the thread's paused run; the run resumes once every
/// request is answered.
#[utoipa::path(post, path = "/v1/threads/{thread}/answers", params(("thread" = String, Path)),
    request_body = AnswerBody,
    responses((status = 200, body = AnswerResponse,
               headers(("idempotent-replayed" = String, description = "true for a repeated command id"))),
              (status = 400, body = Problem, content_type = "application/problem+json"),
              (status = 401, body = Problem, content_type = "application/problem+json"),
              (status = 404, body = Problem, content_type = "application/problem+json"),
              (status = 409, body = Problem, content_type = "application/problem+json")))]
pub(crate) async fn post_answer(
    State(state): State<Shared>,
    Extension(principal): Extension<Principal>,
    Path(thread): Path<String>,
    raw: Result<Bytes, BytesRejection>,
) -> ServeResult<Response> {
    let request: AnswerBody = body(raw)?;
    let (command_id, given) = command_id(request.command_id)?;
    let scope = scope(&state, &principal);
    let key = scope.thread(thread.clone());
    if given {
        let command_key = CommandKey {
            scope: scope.clone(),
            sender: AUTHOR.to_owned(),
            command_id: command_id.clone(),
        };
        if let Some(remembered) = state.runner.remembered(&command_key).await? {
            let value = remembered_answer(command_id, to_json(&remembered));
            return Ok(answer_with(StatusCode::OK, value, true));
        }
    }
    let store = state.runner.store();
    let Some(info) = store.thread(&key).await? else {
        return Err(no_thread(&thread));
    };
    let run = match &info.active_run {
        Some(run_id) if info.status == ThreadStatus::Paused => store.run(&scope, run_id).await?,
        _ => None,
    };
    let Some(run) = run else {
        return Err(ServeError::new(
            ServeErrorKind::InvalidState,
            format!("thread {} has no paused run to answer", quoted(&thread)),
        ));
    };
    let Some(asked) = run.requests.iter().find(|r| r.spec.id == request.request) else {
        return Err(ServeError::new(
            ServeErrorKind::NotFound,
            format!(
                "run {} has no request {}",
                run.run_id,
                quoted(&request.request)
            ),
        ));
    };
    let approved = match (asked.spec.kind, request.approve) {
        (RequestKind::Approval, Some(approve)) => Some(approve),
        (RequestKind::Approval, None) => {
            return Err(ServeError::new(
                ServeErrorKind::InvalidArgument,
                "the request is an approval: give approve true or false (and text as the reason)",
            ));
        }
        (RequestKind::Question, _) if request.text.as_deref().is_none_or(str::is_empty) => {
            return Err(ServeError::new(
                ServeErrorKind::InvalidArgument,
                "the request is a question: give its answer as text",
            ));
        }
        (RequestKind::Question, _) => None,
    };
    let command = Command::Answer {
        thread: thread.clone(),
        run_id: run.run_id.clone(),
        request_id: request.request.clone(),
        approved,
        text: request.text,
    };
    let result = state
        .runner
        .execute(&scope, AUTHOR, command, &command_id)
        .await?;
    match result {
        CommandResult::Answered {
            run_id,
            request_id,
            resumed,
        } => Ok(answer_with(
            StatusCode::OK,
            AnswerResponse {
                action: Action::Answered,
                thread: Some(thread),
                run_id: Some(run_id),
                request_id: Some(request_id),
                resumed: Some(resumed),
                command_id: given.then_some(command_id),
                result: None,
            },
            false,
        )),
        CommandResult::Rejected { kind, message } => Err(ServeError::of_runner_kind(kind, message)),
        other => Ok(answer_with(
            StatusCode::OK,
            remembered_answer(command_id, to_json(&other)),
            true,
        )),
    }
}

fn remembered_answer(command_id: String, result: Value) -> AnswerResponse {
    AnswerResponse {
        action: Action::Remembered,
        thread: None,
        run_id: None,
        request_id: None,
        resumed: None,
        command_id: Some(command_id),
        result: Some(result),
    }
}

/// `POST /v1/threads/{thread}/stop`: stops the thread's running or paused run, wherever it runs.
#[utoipa::path(post, path = "/v1/threads/{thread}/stop", params(("thread" = String, Path)),
    responses((status = 200, body = StopResponse),
              (status = 401, body = Problem, content_type = "application/problem+json"),
              (status = 404, body = Problem, content_type = "application/problem+json")))]
pub(crate) async fn post_stop(
    State(state): State<Shared>,
    Extension(principal): Extension<Principal>,
    Path(thread): Path<String>,
) -> ServeResult<Response> {
    let key = scope(&state, &principal).thread(thread.clone());
    if state.runner.store().thread(&key).await?.is_none() {
        return Err(no_thread(&thread));
    }
    let (run_id, stopped, requested) = match state.runner.request_stop(&key).await? {
        StopRequest::Stopped { run_id } => (Some(run_id), true, true),
        StopRequest::Requested { run_id } => (Some(run_id), false, true),
        _ => (None, false, false),
    };
    let value = StopResponse {
        thread,
        run_id,
        stopped,
        requested,
    };
    Ok(answer_with(StatusCode::OK, value, false))
}
