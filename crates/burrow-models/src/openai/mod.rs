//! OpenAI's two wires: chat completions (`openai:NAME`, which every OpenAI-compatible server speaks) and Responses (`openai-responses:NAME`), with what they share (keys, error bodies, tool definitions).

mod chat;
mod responses;

use burrow_runtime::model::{ModelError, ModelErrorKind, ToolChoice, ToolDefinition};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::http::{self, ClientConfig, Failure, JsonRequest};

pub use chat::OpenAiChat;
pub use responses::OpenAiResponses;

/// OpenAI's API, when `OPENAI_BASE_URL` names no other.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// The variable that holds the key.
pub const API_KEY_VAR: &str = "OPENAI_API_KEY";
/// The variable that names another endpoint (vLLM, llama.cpp, Ollama, LiteLLM, ...).
pub const BASE_URL_VAR: &str = "OPENAI_BASE_URL";

/// A configuration from `OPENAI_API_KEY` and `OPENAI_BASE_URL`.
///
/// # Behavior
/// A missing or empty key is an `Authentication` error naming the variable.
pub fn config_from_env() -> Result<ClientConfig, ModelError> {
    http::config_from_env(API_KEY_VAR, BASE_URL_VAR, DEFAULT_BASE_URL)
}

/// `{"error": {"message", "type", "code"}}`, as OpenAI and the compatible servers send it.
#[derive(Debug, Default, Deserialize)]
struct ErrorBody {
    #[serde(default)]
    error: Option<ErrorInfo>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct ErrorInfo {
    #[serde(default)]
    pub(crate) message: Option<String>,
    #[serde(default, rename = "type")]
    pub(crate) kind: Option<String>,
    #[serde(default)]
    pub(crate) code: Option<Value>,
}

impl ErrorInfo {
    fn code(&self) -> Option<String> {
        match &self.code {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => None,
        }
    }

    /// The kind the body names, if it names one.
    fn named_kind(&self) -> Option<ModelErrorKind> {
        let message = self.message.as_deref().unwrap_or("");
        let code = self.code();
        if code.as_deref() == Some("context_length_exceeded")
            || http::says_context_too_long(message)
        {
            return Some(ModelErrorKind::ContextTooLong);
        }
        code.as_deref()
            .and_then(http::code_kind)
            .or_else(|| self.kind.as_deref().and_then(http::code_kind))
    }

    /// True when retrying cannot help (a spent quota comes as a 429 too).
    fn is_final(&self) -> bool {
        let says = |s: Option<&str>| s.is_some_and(|s| s == "insufficient_quota");
        says(self.code().as_deref()) || says(self.kind.as_deref())
    }
}

/// The failure an error status with this body means (OpenAI's body shape).
pub(crate) fn status_failure(status: u16, body: &[u8]) -> Failure {
    let info = serde_json::from_slice::<ErrorBody>(body)
        .ok()
        .and_then(|b| b.error)
        .unwrap_or_default();
    let kind = match (status, info.named_kind()) {
        (401 | 403, _) => ModelErrorKind::Authentication,
        (_, Some(ModelErrorKind::ContextTooLong)) => ModelErrorKind::ContextTooLong,
        (200..=299, Some(kind)) => kind,
        (200..=299, None) => ModelErrorKind::InvalidStream,
        _ => http::status_kind(status),
    };
    let message = if (200..300).contains(&status) {
        match info.message.as_deref() {
            Some(m) => format!(
                "the model provider answered with JSON, not an event stream: {}",
                http::one_line(m)
            ),
            None => "the model provider answered with JSON, not an event stream".to_owned(),
        }
    } else {
        http::status_message(status, info.message.as_deref())
    };
    let failure = Failure::for_status(status, ModelError::new(kind, message));
    if info.is_final() {
        failure.no_retry()
    } else {
        failure
    }
}

/// The failure an error sent inside a stream means.
pub(crate) fn stream_failure(info: &ErrorInfo) -> Failure {
    let kind = info.named_kind().unwrap_or(ModelErrorKind::Server);
    let name = info
        .code()
        .or_else(|| info.kind.clone())
        .map(|c| format!(" ({})", http::one_line(&c)))
        .unwrap_or_default();
    let message = match info.message.as_deref().map(http::one_line) {
        Some(m) if !m.is_empty() => {
            format!("the model provider sent an error inside its stream{name}: {m}")
        }
        _ => format!("the model provider sent an error inside its stream{name}"),
    };
    let failure = Failure::new(ModelError::new(kind, message));
    if info.is_final() {
        failure.no_retry()
    } else {
        failure
    }
}

/// A request to `path` with the bearer key.
pub(crate) fn bearer_request(
    path: &str,
    body: &Value,
    config: &ClientConfig,
) -> Result<JsonRequest, ModelError> {
    JsonRequest::json(path, body)?.secret_header(
        "authorization",
        &format!("Bearer {}", config.api_key.expose()),
    )
}

/// A temperature as JSON, without the binary noise of `f32 -> f64`.
pub(crate) fn temperature(t: f32) -> Value {
    format!("{t}")
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(Value::Null, Value::Number)
}

/// A tool call's arguments as the text the wire carries: the object as
/// JSON, or the model's own text when it did not parse (kept as a string).
pub(crate) fn arguments_text(arguments: &Value) -> String {
    match arguments {
        Value::String(raw) => raw.clone(),
        other => other.to_string(),
    }
}

/// `tool_choice` as chat completions spells it.
pub(crate) fn chat_tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
    }
}

/// `tool_choice` as Responses spells it.
pub(crate) fn responses_tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Tool(name) => json!({"type": "function", "name": name}),
    }
}

/// Chat completions' tool definitions.
pub(crate) fn chat_tools(tools: &[ToolDefinition]) -> Value {
    tools
        .iter()
        .map(|t| {
            json!({
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.input_schema,
                }
            })
        })
        .collect()
}

/// Responses' tool definitions (`strict: false`: Responses defaults to
/// strict schemas, which ordinary JSON Schemas do not meet).
pub(crate) fn responses_tools(tools: &[ToolDefinition]) -> Value {
    tools
        .iter()
        .map(|t| {
            json!({
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": t.input_schema,
                "strict": false,
            })
        })
        .collect()
}
