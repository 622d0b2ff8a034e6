//! The API's request and response bodies as types, and the OpenAPI document (`/v1/openapi.json`) utoipa generates from them and from the handlers' `#[utoipa::path]` attributes.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{IntoParams, Modify, OpenApi, ToSchema};

/// The query of `GET /v1/threads`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct Page {
    /// List the threads after this id.
    pub(crate) after: Option<String>,
    /// How many threads at most (1 to 10,000; 100 by default).
    pub(crate) limit: Option<usize>,
}

/// `GET /v1/threads`: a page of the tenant's threads by id.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ThreadList {
    /// The threads (the session store's `ThreadInfo`: thread, status, active_run, ...).
    #[schema(value_type = Vec<Object>)]
    pub(crate) threads: Vec<Value>,
    /// The `after` of the next page, when this one is full.
    pub(crate) next: Option<String>,
}

/// A request a paused run waits for.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Pending {
    pub(crate) run_id: String,
    pub(crate) request_id: String,
    pub(crate) call_id: String,
    /// `question` or `approval`.
    pub(crate) kind: &'static str,
    pub(crate) tool_name: String,
    /// For an approval, the arguments the call runs with when a hook replaced the model's.
    #[schema(value_type = Option<Object>)]
    pub(crate) arguments: Option<Value>,
}

/// A subagent's thread under another (`PARENT/task-CALL`, nested as deep as
/// tasks nest), with the outcome of its last run.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Child {
    /// The child's thread (`PARENT/task-CALL`).
    pub(crate) thread: String,
    /// The thread it is a child of: the viewed thread, or another child.
    pub(crate) parent: String,
    /// `idle`, `running` or `paused`.
    #[schema(value_type = String)]
    pub(crate) status: Value,
    /// The subagent it runs (`general-purpose`, an agent file's name).
    pub(crate) subagent: Option<String>,
    /// The parent's run whose `task` call started it.
    pub(crate) parent_run_id: Option<String>,
    /// The parent's `task` call.
    pub(crate) call_id: Option<String>,
    /// Its last run.
    pub(crate) run_id: Option<String>,
    /// Its last run's status: `running`, `paused`, `completed`, `failed` or `stopped`.
    #[schema(value_type = Option<String>)]
    pub(crate) outcome: Option<Value>,
    /// Why, when the run failed or was stopped.
    pub(crate) reason: Option<String>,
}

/// `GET /v1/threads/{thread}`: the thread, its history, runs, pending requests,
/// todos, followed artifacts and children.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ThreadView {
    /// The session store's `ThreadInfo`.
    #[schema(value_type = Object)]
    pub(crate) thread: Value,
    /// `{pos, run_id, message}` per entry; `message` as the runtime's `Message` JSON.
    #[schema(value_type = Vec<Object>)]
    pub(crate) history: Vec<Value>,
    /// The session store's `RunRecord`s, oldest first.
    #[schema(value_type = Vec<Object>)]
    pub(crate) runs: Vec<Value>,
    pub(crate) pending: Vec<Pending>,
    /// The todo list the thread's last `write_todos` set.
    #[schema(value_type = Vec<Object>)]
    pub(crate) todos: Vec<Value>,
    /// The artifacts the thread's agent (`thread:ID` in the workspace) follows,
    /// at their heads, each with its `rendered` text; none without an artifact
    /// workspace.
    #[schema(value_type = Vec<Object>)]
    pub(crate) artifacts: Vec<Value>,
    /// The subagent threads under this one, by id (a child's children follow it).
    pub(crate) children: Vec<Child>,
}

/// `POST /v1/threads/{thread}/messages`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct MessageBody {
    /// The message's text.
    pub(crate) content: String,
    /// Carry the message out once per id: a repeat returns the remembered result.
    #[serde(default)]
    pub(crate) command_id: Option<String>,
}

/// What a message or an answer did.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Action {
    /// The message started a run in an idle thread.
    Started,
    /// The message goes into the running run.
    Steered,
    /// The message or answer answered the paused run.
    Answered,
    /// The command id was carried out before: nothing was done now.
    Remembered,
}

/// The response of `POST /v1/threads/{thread}/messages`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct MessageResponse {
    pub(crate) action: Action,
    pub(crate) thread: Option<String>,
    /// The posted message (the first delivery's, for a repeat).
    pub(crate) message_id: Option<String>,
    /// The run that carries it out, when one runs or is paused.
    pub(crate) run_id: Option<String>,
    pub(crate) command_id: Option<String>,
    /// For a repeat of a command of another kind: what it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub(crate) result: Option<Value>,
}

/// `POST /v1/threads/{thread}/answers`: `text` answers a question; `approve` (and
/// `text` as the reason) an approval.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AnswerBody {
    /// The request (`pending[].request_id` of the thread).
    pub(crate) request: String,
    #[serde(default)]
    pub(crate) text: Option<String>,
    #[serde(default)]
    pub(crate) approve: Option<bool>,
    #[serde(default)]
    pub(crate) command_id: Option<String>,
}

/// The response of `POST /v1/threads/{thread}/answers`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct AnswerResponse {
    pub(crate) action: Action,
    pub(crate) thread: Option<String>,
    pub(crate) run_id: Option<String>,
    pub(crate) request_id: Option<String>,
    /// True when it was the run's last open request, so the run resumed.
    pub(crate) resumed: Option<bool>,
    pub(crate) command_id: Option<String>,
    /// For a repeat: what the command did the first time.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub(crate) result: Option<Value>,
}

/// The response of `POST /v1/threads/{thread}/stop`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct StopResponse {
    pub(crate) thread: String,
    /// The run asked to stop; none when the thread was idle.
    pub(crate) run_id: Option<String>,
    /// True when the run ran in this process and was stopped.
    pub(crate) stopped: bool,
    /// True when there was a run to stop (here or in another process).
    pub(crate) requested: bool,
}

/// An RFC 9457 problem (`application/problem+json`).
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Problem {
    /// `urn:burrow:problem:KIND`.
    #[serde(rename = "type")]
    pub(crate) kind_uri: String,
    pub(crate) title: String,
    pub(crate) status: u16,
    /// One sentence saying what is wrong.
    pub(crate) detail: String,
    /// burrow's error kind: unauthorized, not_found, invalid_argument, invalid_state,
    /// id_in_use, too_large, unavailable, store; for artifacts also conflict,
    /// validation, unknown_kind, edit, patch.
    pub(crate) kind: String,
    /// A conflict's head version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) head: Option<u64>,
    /// A conflict's changes after the change's base version, oldest first.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<Object>>)]
    pub(crate) changes_since: Option<Vec<Value>>,
    /// A validation's failing JSON paths (`""` for the whole document).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) paths: Option<Vec<String>>,
}

struct Bearer;

impl Modify for Bearer {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)),
        );
    }
}

/// The API's OpenAPI document.
#[derive(OpenApi)]
#[openapi(
    info(title = "burrow serve", description = "Session threads of the burrow runner over HTTP."),
    paths(
        crate::api::list_threads,
        crate::api::show_thread,
        crate::api::post_message,
        crate::api::post_answer,
        crate::api::post_stop,
        crate::events::run_events,
    ),
    components(schemas(Problem, Action)),
    modifiers(&Bearer),
    security(("bearer" = []))
)]
pub(crate) struct ApiDoc;
