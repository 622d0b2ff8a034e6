//! The MCP server's own framing: JSON-RPC lines read and bounded here, so every bad line gets an answer.
//!
//! rmcp's line transport drops what it cannot parse without a word (the
//! client then waits forever) and answers a `tools/call` whose params do
//! not fit with "method not found". This transport stands in front of
//! rmcp's service loop and answers for it:
//!
//! - A line longer than [`MAX_LINE_BYTES`] is skipped (never held whole in
//!   memory) and answered with a parse error (-32700).
//! - A line that is not UTF-8, not JSON, holds two values, a number JSON
//!   cannot represent as f64 (`1e400`) or nests deeper than serde_json's
//!   limit (128): a parse error (-32700), `id` null.
//! - JSON that is not a JSON-RPC 2.0 message (not an object, an array
//!   batch, no `"jsonrpc": "2.0"`): invalid request (-32600).
//! - A message whose `id` is there but neither a string nor an integer
//!   (`null`, a boolean, an object, an array, `1.5`): invalid request
//!   (-32600) with `id` null, since no answer can name it; only a message
//!   with no `id` at all is a notification (no answer).
//! - A request of a known method whose `params` do not fit (a `tools/call`
//!   without a `name`, `arguments` that are not an object ...): invalid
//!   params (-32602), with the request's `id`.
//! - Blank lines are skipped. Everything else goes to rmcp as it is.
//!
//! Answers written here and rmcp's own share one writer under a lock, so
//! lines never interleave.

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{
    CallToolRequestParams, ClientJsonRpcMessage, InitializeRequestParams, PaginatedRequestParams,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

/// The longest line read (rmcp's own limit, 16 MiB).
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const INVALID_PARAMS: i64 = -32602;

/// A JSON-RPC line transport over a byte stream pair that answers bad lines itself.
pub struct FramedTransport<R, W> {
    read: BufReader<R>,
    write: Arc<Mutex<W>>,
    line: Vec<u8>,
    discarding: bool,
    max_line: usize,
}

impl<R, W> FramedTransport<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    /// A transport reading requests from `read` and writing answers to `write`.
    pub fn new(read: R, write: W) -> Self {
        Self {
            read: BufReader::new(read),
            write: Arc::new(Mutex::new(write)),
            line: Vec::new(),
            discarding: false,
            max_line: MAX_LINE_BYTES,
        }
    }

    /// The same transport with another line limit (for tests).
    pub fn with_max_line(mut self, max_line: usize) -> Self {
        self.max_line = max_line;
        self
    }

    /// Reads one line into `self.line`, never holding more than the limit:
    /// `Ok(Some(true))` a line, `Ok(Some(false))` an oversized one (skipped
    /// to its end), `Ok(None)` the end of input.
    async fn read_line(&mut self) -> std::io::Result<Option<bool>> {
        self.line.clear();
        loop {
            let available = self.read.fill_buf().await?;
            if available.is_empty() {
                // A last line without "\n" still counts, unless it was too long.
                return Ok(match (self.discarding, self.line.is_empty()) {
                    (true, _) => {
                        self.discarding = false;
                        Some(false)
                    }
                    (false, true) => None,
                    (false, false) => Some(true),
                });
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            if !self.discarding && self.line.len().saturating_add(take) > self.max_line + 1 {
                self.discarding = true;
                self.line.clear();
            }
            if !self.discarding {
                self.line.extend_from_slice(&available[..take]);
            }
            self.read.consume(take);
            if newline.is_some() {
                if self.discarding {
                    self.discarding = false;
                    return Ok(Some(false));
                }
                return Ok(Some(true));
            }
        }
    }
}

/// Writes one error answer on `write`.
async fn answer<W: AsyncWrite + Unpin>(write: &Mutex<W>, id: Value, code: i64, message: String) {
    let mut line = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": code, "message": message},
    })
    .to_string();
    line.push('\n');
    let mut write = write.lock().await;
    // A client that stopped reading gets nothing more; the read side ends the session.
    let _ = write.write_all(line.as_bytes()).await;
    let _ = write.flush().await;
}

/// What one line is: a message for rmcp, or the error answer it gets
/// (`None` for a notification, which gets no answer).
fn check(line: &[u8]) -> Result<ClientJsonRpcMessage, Option<(Value, i64, String)>> {
    let parse_error = |why: String| Some((Value::Null, PARSE_ERROR, why));
    let text = std::str::from_utf8(line)
        .map_err(|_| parse_error("Parse error: the line is not UTF-8 text.".to_owned()))?;
    let value: Value = serde_json::from_str(text).map_err(|e| {
        parse_error(format!(
            "Parse error: the line is not one JSON value ({e})."
        ))
    })?;
    let Value::Object(object) = &value else {
        let why = if value.is_array() {
            "Invalid request: batches (JSON arrays) are not supported; send one message a line."
        } else {
            "Invalid request: a message must be a JSON object."
        };
        return Err(Some((Value::Null, INVALID_REQUEST, why.to_owned())));
    };
    let id = match object.get("id") {
        Some(id @ Value::String(_)) => Some(id.clone()),
        Some(id @ Value::Number(n)) if n.is_i64() => Some(id.clone()),
        // A request whose id is null, a boolean, an object, an array, a
        // fraction or past i64 can carry no answer to it: refused with id null.
        Some(_) => {
            return Err(Some((
                Value::Null,
                INVALID_REQUEST,
                "Invalid request: \"id\" must be a string or an integer.".to_owned(),
            )));
        }
        None => None,
    };
    let refuse = |code: i64, why: String| match &id {
        Some(id) => Some((id.clone(), code, why)),
        // A notification gets no answer, however wrong.
        None if object.contains_key("method") => None,
        None => Some((Value::Null, code, why)),
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(refuse(
            INVALID_REQUEST,
            "Invalid request: \"jsonrpc\" must be \"2.0\".".to_owned(),
        ));
    }
    if let Some(method) = object.get("method").and_then(Value::as_str) {
        let params = object.get("params").cloned();
        let fits = match method {
            "tools/call" => fits::<CallToolRequestParams>(params, true),
            "initialize" => fits::<InitializeRequestParams>(params, true),
            "tools/list" => fits::<PaginatedRequestParams>(params, false),
            _ => Ok(()),
        };
        if let Err(why) = fits {
            return Err(refuse(
                INVALID_PARAMS,
                format!("Invalid params for {method}: {why}."),
            ));
        }
    }
    serde_json::from_value::<ClientJsonRpcMessage>(value.clone()).map_err(|e| {
        refuse(
            INVALID_REQUEST,
            format!("Invalid request: not a JSON-RPC message this server takes ({e})."),
        )
    })
}

/// Whether `params` deserialize as `T` (absent params fit unless `required`).
fn fits<T: DeserializeOwned>(params: Option<Value>, required: bool) -> Result<(), String> {
    match params {
        None | Some(Value::Null) if !required => Ok(()),
        None | Some(Value::Null) => Err("params are missing".to_owned()),
        Some(params) => serde_json::from_value::<T>(params)
            .map(drop)
            .map_err(|e| e.to_string()),
    }
}

impl<R, W> Transport<RoleServer> for FramedTransport<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    fn name() -> Cow<'static, str> {
        "burrow-framed-stdio".into()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let write = Arc::clone(&self.write);
        async move {
            let mut line = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            line.push(b'\n');
            let mut write = write.lock().await;
            write.write_all(&line).await?;
            write.flush().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            match self.read_line().await {
                Ok(None) => return None,
                Err(e) => {
                    eprintln!("burrow mcp: cannot read the client's input: {e}");
                    return None;
                }
                Ok(Some(false)) => {
                    let why = format!(
                        "Parse error: the line is longer than {} bytes and was skipped.",
                        self.max_line
                    );
                    answer(&self.write, Value::Null, PARSE_ERROR, why).await;
                }
                Ok(Some(true)) => {
                    let line = trim(&self.line);
                    if line.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    match check(line) {
                        Ok(message) => return Some(message),
                        Err(Some((id, code, why))) => {
                            answer(&self.write, id, code, why).await;
                        }
                        Err(None) => {}
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.write.lock().await.flush().await
    }
}

/// `line` without its "\n" or "\r\n".
fn trim(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(line: &str) -> Option<i64> {
        match check(line.as_bytes()) {
            Ok(_) => None,
            Err(Some((_, code, _))) => Some(code),
            Err(None) => Some(0),
        }
    }

    #[test]
    fn bad_lines_get_the_right_code() {
        assert_eq!(code("not json"), Some(PARSE_ERROR));
        assert_eq!(code("{} {}"), Some(PARSE_ERROR));
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":1e400}}"#),
            Some(PARSE_ERROR)
        );
        assert_eq!(
            code(&format!("{}{}", "[".repeat(5000), "]".repeat(5000))),
            Some(PARSE_ERROR)
        );
        assert_eq!(code("[]"), Some(INVALID_REQUEST));
        assert_eq!(code("5"), Some(INVALID_REQUEST));
        assert_eq!(code(r#"{"id":1,"method":"ping"}"#), Some(INVALID_REQUEST));
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#),
            Some(INVALID_PARAMS)
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}"#),
            Some(INVALID_PARAMS)
        );
        assert_eq!(
            code(
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ls","arguments":[]}}"#
            ),
            Some(INVALID_PARAMS)
        );
        // A notification gets no answer.
        assert_eq!(code(r#"{"jsonrpc":"2.0","method":"tools/call"}"#), Some(0));
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ls"}}"#),
            None
        );
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#), None);
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#), None);
    }

    #[test]
    fn an_invalid_id_is_an_invalid_request_answered_with_id_null() {
        for id in [
            "null",
            "true",
            "false",
            "{}",
            r#"{"a":1}"#,
            "[1]",
            "1.5",
            "18446744073709551615",
        ] {
            let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
            match check(line.as_bytes()) {
                Err(Some((answer_id, code, why))) => {
                    assert_eq!(answer_id, Value::Null, "{id}");
                    assert_eq!(code, INVALID_REQUEST, "{id}");
                    assert!(why.contains("\"id\" must be"), "{why}");
                }
                other => panic!("{id}: {other:?}"),
            }
        }
        // Even on a line that would be a notification otherwise.
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":null,"method":"notifications/initialized"}"#),
            Some(INVALID_REQUEST)
        );
    }
}
