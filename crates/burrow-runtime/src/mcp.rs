//! The MCP server: a [`Toolset`] offered to any MCP client over stdio, with the official `rmcp` SDK.
//!
//! The handler is written by hand (`list_tools` / `call_tool`) rather than
//! with rmcp's `#[tool]` macros: the tool list depends on the backend
//! (`execute` only on a sandbox) and the schemas and descriptions already
//! live in [`crate::tools`], so the server only translates.
//!
//! - A tool's result is a `CallToolResult` with one text block; a refusal
//!   has `isError: true` (the model reads it and goes on).
//! - A failure (the storage broke, a state file could not be saved) is a
//!   JSON-RPC error `-32603` whose message starts with "storage failure:",
//!   also written to stderr with its cause chain for the operator
//!   (docs/adr/0112).
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

use crate::tools::{ToolSpec, Toolset};

pub mod framing;

pub use framing::{FramedTransport, MAX_LINE_BYTES};

const INSTRUCTIONS: &str = "These tools work on the files of one burrow workspace. Paths are absolute and start \
at \"/\". Read a file with read_file before you edit it or write over it. Results that are too large are saved \
under /.burrow/large_results/ and can be read from there.";

/// An MCP server handler offering one [`Toolset`].
#[derive(Debug, Clone)]
pub struct McpServer {
    toolset: Arc<Toolset>,
    tools: Arc<Vec<Tool>>,
}

impl McpServer {
    /// A server for `toolset`.
    pub fn new(toolset: Toolset) -> Self {
        let tools = toolset.tools().into_iter().map(to_mcp_tool).collect();
        Self {
            toolset: Arc::new(toolset),
            tools: Arc::new(tools),
        }
    }

    /// The toolset the server calls.
    pub fn toolset(&self) -> &Toolset {
        &self.toolset
    }
}

/// A tool spec as MCP describes it, with hints for clients that ask before changing things.
fn to_mcp_tool(spec: ToolSpec) -> Tool {
    let schema: JsonObject = match spec.input_schema {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    };
    // Only read_file never writes: ls, glob and grep save a result too
    // large to return under /.burrow/large_results/ (docs/adr/0110), so
    // they are not read-only, though they change no file of the agent's.
    let read_only = spec.name == "read_file";
    let annotations = ToolAnnotations::new()
        .read_only(read_only)
        .destructive(matches!(
            spec.name.as_str(),
            "write_file" | "edit_file" | "execute"
        ))
        .open_world(false);
    Tool::new(spec.name, spec.description, Arc::new(schema)).with_annotations(annotations)
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
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.map_or(Value::Null, Value::Object);
        match self.toolset.call(&request.name, args).await {
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

/// Serves `toolset` over this process's stdin and stdout until the client
/// closes the connection.
pub async fn serve_stdio(toolset: Toolset) -> Result<(), Error> {
    let (reader, writer) = rmcp::transport::stdio_pipes();
    serve(toolset, reader, writer).await
}

/// Serves `toolset` over any byte stream pair (stdio, a pipe, an in-memory
/// duplex in tests) until the peer closes it.
pub async fn serve<R, W>(toolset: Toolset, reader: R, writer: W) -> Result<(), Error>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let running = McpServer::new(toolset)
        .serve(FramedTransport::new(reader, writer))
        .await
        .map_err(|e| Error::failure("the MCP session could not start", e))?;
    running
        .waiting()
        .await
        .map_err(|e| Error::failure("the MCP server stopped unexpectedly", e))?;
    Ok(())
}
