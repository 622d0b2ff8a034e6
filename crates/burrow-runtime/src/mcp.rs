//! The MCP server: a [`ToolRegistry`] offered to any MCP client over stdio, with the official `rmcp` SDK.
//!
//! The handler is written by hand (`list_tools` / `call_tool`) rather than
//! with rmcp's `#[tool]` macros: the server offers the same registry the
//! agent loop reads (names, descriptions, schemas and annotations all come
//! from each [`crate::tool::Tool`]), so it only translates.
//!
//! - A tool's result is a `CallToolResult` with one text block; a refusal
//!   has `isError: true` (the model reads it and goes on).
//! - A failure (the storage broke, a state file could not be saved) is a
//!   JSON-RPC error `-32603` whose message starts with "storage failure:",
//!   also written to stderr with its cause chain for the operator
//!   (docs/adr/0112).
//! - Each `tools/call` is its own call with its own effect keys
//!   (docs/adr/0135): the call id is the client's idempotency key
//!   (`_meta["burrow/idempotencyKey"]`) when it gives one, else the
//!   JSON-RPC request id within this session; a retried call is replayed by
//!   a durable backend instead of writing twice.
//! - Lines are read by [`framing::FramedTransport`], which answers every
//!   line rmcp would drop (not JSON, too long, not JSON-RPC: -32700 or
//!   -32600) and a `tools/call` whose params do not fit (-32602).

use std::error::Error as _;
use std::sync::Arc;

use burrow_backend::Error;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::tool::{CallContext, ToolRegistry};

pub mod client;
pub mod expand;
pub mod framing;

pub use framing::{FramedTransport, MAX_LINE_BYTES};

/// The `_meta` key under which a client may give a `tools/call` its own
/// idempotency key (a string): calls with the same key are one call, in
/// this session or any later one over the same durable workspace.
pub const IDEMPOTENCY_KEY: &str = "burrow/idempotencyKey";

/// Longest idempotency key taken (characters); a longer one is refused.
pub const MAX_IDEMPOTENCY_KEY_CHARS: usize = 256;

const INSTRUCTIONS: &str = "These tools work on the files of one burrow workspace. Paths are absolute and start \
at \"/\". Read a file with read_file before you edit it or write over it. Results that are too large are saved \
under /.burrow/large_results/ and can be read from there.";

/// An MCP server handler offering one [`ToolRegistry`].
#[derive(Debug, Clone)]
pub struct McpServer {
    tools: Arc<ToolRegistry>,
    listed: Arc<Vec<Tool>>,
    /// This server's session: the run id of calls without an idempotency key.
    session: Arc<str>,
}

impl McpServer {
    /// A server for `tools`, in a session of its own.
    pub fn new(tools: ToolRegistry) -> Self {
        let listed = tools
            .tools()
            .iter()
            .map(|tool| to_mcp_tool(tool.as_ref()))
            .collect();
        Self {
            tools: Arc::new(tools),
            listed: Arc::new(listed),
            session: Arc::from(format!("mcp_{}", uuid::Uuid::now_v7().simple())),
        }
    }

    /// The tools the server calls.
    pub fn tools(&self) -> &ToolRegistry {
        &self.tools
    }

    /// The call a `tools/call` is: its idempotency key, else its request id
    /// in this session (a refusal when the key is not a usable string).
    fn call_context(
        &self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallContext, String> {
        let id = &context.id;
        // rmcp moves the request's `_meta` into the context.
        let key = context.meta.0.0.get(IDEMPOTENCY_KEY).or_else(|| {
            request
                .meta
                .as_ref()
                .and_then(|meta| meta.0.0.get(IDEMPOTENCY_KEY))
        });
        match key {
            None => Ok(CallContext {
                run_id: self.session.clone(),
                // `7` and `"7"` are different ids, and stay different keys.
                call_id: serde_json::to_string(id).unwrap_or_else(|_| format!("{id:?}")),
            }),
            Some(Value::String(key))
                if !key.is_empty() && key.chars().count() <= MAX_IDEMPOTENCY_KEY_CHARS =>
            {
                Ok(CallContext {
                    run_id: Arc::from("mcp"),
                    call_id: key.clone(),
                })
            }
            Some(_) => Err(format!(
                "The _meta \"{IDEMPOTENCY_KEY}\" of a tools/call must be a string of 1 to {MAX_IDEMPOTENCY_KEY_CHARS} characters; send the call again with a valid key or none."
            )),
        }
    }
}

/// A tool as MCP describes it, with the hints the tool itself declares.
fn to_mcp_tool(tool: &dyn crate::tool::Tool) -> Tool {
    let schema: JsonObject = match tool.input_schema() {
        Value::Object(map) => map.clone(),
        _ => JsonObject::new(),
    };
    let hints = tool.annotations();
    let annotations = ToolAnnotations::new()
        .read_only(hints.read_only)
        .destructive(hints.destructive)
        .idempotent(hints.idempotent)
        .open_world(tool.open_world());
    Tool::new(
        tool.name().to_owned(),
        tool.description().to_owned(),
        Arc::new(schema),
    )
    .with_annotations(annotations)
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("burrow", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.listed.as_ref().clone(),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.listed.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let cx = match self.call_context(&request, &context) {
            Ok(cx) => cx,
            Err(refusal) => {
                return Ok(CallToolResult::error(vec![ContentBlock::text(refusal)]).into());
            }
        };
        let args = request.arguments.map_or(Value::Null, Value::Object);
        match self.tools.call(&cx, &request.name, args).await {
            Ok(output) => {
                let content = vec![ContentBlock::text(output.text)];
                Ok(if output.is_error {
                    CallToolResult::error(content)
                } else {
                    CallToolResult::success(content)
                }
                .into())
            }
            Err(failure) => Err(failure_to_protocol(&request.name, &failure)),
        }
    }
}

/// A failure as a JSON-RPC internal error, logged with its causes on stderr.
fn failure_to_protocol(tool: &str, failure: &Error) -> ErrorData {
    let mut log = format!("burrow mcp: {tool} failed: {failure}");
    let mut source = failure.source();
    while let Some(cause) = source {
        log.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    eprintln!("{log}");
    ErrorData::internal_error(format!("storage failure: {}", failure.message()), None)
}

/// Serves `tools` over this process's stdin and stdout until the client
/// closes the connection.
pub async fn serve_stdio(tools: ToolRegistry) -> Result<(), Error> {
    let (reader, writer) = rmcp::transport::stdio_pipes();
    serve(tools, reader, writer).await
}

/// Serves `tools` over any byte stream pair (stdio, a pipe, an in-memory
/// duplex in tests) until the peer closes it.
pub async fn serve<R, W>(tools: ToolRegistry, reader: R, writer: W) -> Result<(), Error>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let running = McpServer::new(tools)
        .serve(FramedTransport::new(reader, writer))
        .await
        .map_err(|e| Error::failure("the MCP session could not start", e))?;
    running
        .waiting()
        .await
        .map_err(|e| Error::failure("the MCP server stopped unexpectedly", e))?;
    Ok(())
}
