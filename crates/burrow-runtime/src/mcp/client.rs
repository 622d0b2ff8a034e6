//! MCP servers as a tool source: each stdio server of `mcpServers` started in its own process group (each streamable HTTP one connected to), initialised with rmcp's client, its tools offered as `mcp__SERVER__TOOL`.
//!
//! - [`McpServers::start`] starts (or connects to) every server, initialises it and lists
//!   its tools; a server that fails to start, to initialise or to list is a
//!   [`McpServerFailure`] naming it, and the others are offered all the same
//!   (docs/adr/0313).
//! - A call is one `tools/call`: text content is the result's text; an
//!   image or audio block is a line naming its MIME type and size; an
//!   embedded resource is its text (or a line naming a binary one); a
//!   resource link is its URI. An MCP error, a server that is gone and
//!   `isError: true` are refusals (the model reads them, the run goes on);
//!   a call past its timeout (default 60 s) is abandoned (rmcp sends
//!   `notifications/cancelled`) and refused.
//! - A tool is not idempotent unless its annotations say `idempotentHint`
//!   (a resumed run never calls it twice silently).
//! - The servers are stopped (their process groups killed) by
//!   [`McpServers::close`] and when the source is dropped; [`kill_all`]
//!   kills every stdio server's group at once, for a process about to end
//!   on a signal (docs/adr/0314).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use burrow_backend::Error;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{Peer, RunningService};
use rmcp::{RoleClient, ServiceExt};
use serde::Deserialize;
use serde_json::Value;
use tokio::process::Command;

use crate::tool::{CallContext, Tool, ToolAnnotations, ToolOutput};

/// How long one call waits for its server by default.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// How long starting and initialising one server (and listing its tools) may take.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Longest tool result taken from a server (characters); the rest is cut with a note.
const MAX_RESULT_CHARS: usize = 400_000;

/// One stdio server as `mcpServers` (and `.mcp.json`) write it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServerConfig {
    /// The program to start.
    pub command: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Variables set for it, over this process's environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// One streamable HTTP server as `mcpServers` writes it
/// (`{"type": "http", "url", "headers"}`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct McpHttpConfig {
    /// The server's MCP endpoint (`http://` or `https://`).
    pub url: String,
    /// Headers sent with every request (an `Authorization` among them).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
}

/// One server of `mcpServers`: a program over stdio, or a streamable HTTP endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpServerSpec {
    /// Started here, spoken to over its stdin and stdout.
    Stdio(McpServerConfig),
    /// Running elsewhere, spoken to over streamable HTTP.
    Http(McpHttpConfig),
}

impl From<McpServerConfig> for McpServerSpec {
    fn from(config: McpServerConfig) -> Self {
        McpServerSpec::Stdio(config)
    }
}

impl From<McpHttpConfig> for McpServerSpec {
    fn from(config: McpHttpConfig) -> Self {
        McpServerSpec::Http(config)
    }
}

/// Servers by name, in the order to start them.
pub type NamedServers = Vec<(String, McpServerSpec)>;

/// The `mcpServers` object of a settings file: each server by name, in
/// name order. Entries of a type burrow does not speak (`"sse"`) are
/// returned apart, by name, with why they are not used; an `Err` is one
/// sentence fragment naming what cannot be read.
pub fn servers_from_settings(
    settings: &Value,
) -> Result<(NamedServers, Vec<McpServerFailure>), String> {
    let Some(servers) = settings.get("mcpServers") else {
        return Ok((Vec::new(), Vec::new()));
    };
    let Some(servers) = servers.as_object() else {
        return Err("mcpServers is not an object of servers by name".to_owned());
    };
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    for (name, entry) in servers {
        let kind = entry.get("type").and_then(Value::as_str).unwrap_or("stdio");
        match kind {
            "stdio" => {
                let config: McpServerConfig =
                    serde_json::from_value(entry.clone()).map_err(|e| {
                        format!(
                            "the MCP server \"{name}\" is not {{\"command\", \"args\", \"env\"}}: {e}"
                        )
                    })?;
                out.push((name.clone(), McpServerSpec::Stdio(config)));
            }
            "http" | "streamable-http" => {
                let config: McpHttpConfig =
                    serde_json::from_value(entry.clone()).map_err(|e| {
                        format!(
                            "the MCP server \"{name}\" is not {{\"type\": \"http\", \"url\", \"headers\"}}: {e}"
                        )
                    })?;
                if !(config.url.starts_with("http://") || config.url.starts_with("https://")) {
                    return Err(format!(
                        "the MCP server \"{name}\" has a url that is not http:// or https://"
                    ));
                }
                out.push((name.clone(), McpServerSpec::Http(config)));
            }
            _ => skipped.push(McpServerFailure {
                server: name.clone(),
                reason: format!(
                    "its type \"{}\" is not supported (only stdio and http servers are)",
                    kind.chars().take(40).collect::<String>()
                ),
            }),
        }
    }
    Ok((out, skipped))
}

/// A server that is not offered, and why (one sentence fragment).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerFailure {
    /// The server's name in `mcpServers`.
    pub server: String,
    /// Why it is not offered.
    pub reason: String,
}

impl std::fmt::Display for McpServerFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the MCP server \"{}\" is not used: {}",
            self.server, self.reason
        )
    }
}

/// The running servers and their tools.
pub struct McpServers {
    servers: Vec<Arc<Server>>,
    tools: Vec<Arc<dyn Tool>>,
    failures: Vec<McpServerFailure>,
}

impl std::fmt::Debug for McpServers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServers")
            .field(
                "tools",
                &self.tools.iter().map(|t| t.name()).collect::<Vec<_>>(),
            )
            .field("failures", &self.failures)
            .finish()
    }
}

/// One running server: its client, and the process group to kill.
struct Server {
    name: String,
    service: Mutex<Option<RunningService<RoleClient, ()>>>,
    group: Group,
}

/// A process group, killed once (on close or drop, or by [`kill_all`]).
struct Group {
    pid: Option<u32>,
    killed: AtomicBool,
}

/// The process groups of the stdio servers of this process that are not
/// killed yet: what [`kill_all`] kills.
static LIVE_GROUPS: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());

fn live_groups() -> std::sync::MutexGuard<'static, BTreeSet<u32>> {
    LIVE_GROUPS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Kills the process group of every stdio MCP server of this process that
/// is still running, at once (SIGKILL), without waiting for anything: for
/// a signal handler that ends the process next (a second Ctrl-C, SIGTERM,
/// SIGHUP), where no `close` or `Drop` will run.
///
/// # Behavior
/// Safe to call at any time and more than once; a server killed so is a
/// server gone to its tools (their calls are refusals).
pub fn kill_all() {
    let groups = std::mem::take(&mut *live_groups());
    for pid in groups {
        crate::process_group::kill_group(pid);
    }
}

impl Group {
    fn new(pid: Option<u32>) -> Group {
        if let Some(pid) = pid {
            live_groups().insert(pid);
        }
        Group {
            pid,
            killed: AtomicBool::new(false),
        }
    }

    fn kill(&self) {
        if self.killed.swap(true, Ordering::SeqCst) {
            return;
        }
        if let Some(pid) = self.pid {
            // The server and every process it started (its own group).
            crate::process_group::kill_group(pid);
            live_groups().remove(&pid);
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

impl McpServers {
    /// Starts each of `servers` (a stdio one in its own process group, in
    /// the current directory; an HTTP one is connected to), initialises it
    /// and lists its tools; each call of its tools waits at most `timeout`.
    ///
    /// # Behavior
    /// Never fails as a whole: a server that cannot be started, initialised
    /// or listed within [`START_TIMEOUT`] is killed and is a
    /// [`failure`](Self::failures) naming it; the others are offered.
    pub async fn start<S>(servers: &[(String, S)], timeout: Duration) -> McpServers
    where
        S: Clone + Into<McpServerSpec>,
    {
        let mut out = McpServers {
            servers: Vec::new(),
            tools: Vec::new(),
            failures: Vec::new(),
        };
        for (name, config) in servers {
            if !valid_name(name) {
                out.failures.push(McpServerFailure {
                    server: name.chars().take(100).collect(),
                    reason: "its name is not made of letters, digits, '_' and '-'".to_owned(),
                });
                continue;
            }
            let spec: McpServerSpec = config.clone().into();
            let started = match spec {
                McpServerSpec::Stdio(config) => start_one(name, &config).await,
                McpServerSpec::Http(config) => start_http(name, &config).await,
            };
            match started {
                Ok((server, listed)) => {
                    let server = Arc::new(server);
                    for tool in listed {
                        match McpTool::from_listed(&server, tool, timeout) {
                            Some(tool) => out.tools.push(Arc::new(tool)),
                            None => continue,
                        }
                    }
                    out.servers.push(server);
                }
                Err(reason) => out.failures.push(McpServerFailure {
                    server: name.clone(),
                    reason,
                }),
            }
        }
        out
    }

    /// The servers' tools, server by server in the order given, each
    /// server's in the order it listed them.
    pub fn tools(&self) -> &[Arc<dyn Tool>] {
        &self.tools
    }

    /// The servers that are not offered, and why.
    pub fn failures(&self) -> &[McpServerFailure] {
        &self.failures
    }

    /// Stops every server: closes its client and kills its process group.
    ///
    /// # Behavior
    /// Idempotent; a call of a stopped server's tool is then a refusal.
    pub async fn close(&self) {
        for server in &self.servers {
            let service = server.service.lock().ok().and_then(|mut s| s.take());
            if let Some(service) = service {
                let _ = tokio::time::timeout(Duration::from_secs(2), service.cancel()).await;
            }
            server.group.kill();
        }
    }
}

impl Drop for McpServers {
    fn drop(&mut self) {
        for server in &self.servers {
            server.group.kill();
        }
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

async fn start_one(
    name: &str,
    config: &McpServerConfig,
) -> Result<(Server, Vec<rmcp::model::Tool>), String> {
    let mut command = Command::new(&config.command);
    command
        .args(&config.args)
        .envs(&config.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = command.spawn().map_err(|e| {
        format!(
            "its command \"{}\" cannot be started ({})",
            config.command.chars().take(200).collect::<String>(),
            start_error(&e)
        )
    })?;
    let group = Group::new(child.id());
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err("its standard input and output cannot be opened".to_owned());
    };
    // The child is reaped in the background; the group is killed by `group`.
    tokio::spawn(async move {
        let _ = child.wait().await;
    });
    let (service, tools) = initialise((stdout, stdin)).await?;
    Ok((
        Server {
            name: name.to_owned(),
            service: Mutex::new(Some(service)),
            group,
        },
        tools,
    ))
}

/// Connects to the streamable HTTP server of `config`, initialises it and
/// lists its tools (nothing to kill: it is not burrow's process).
async fn start_http(
    name: &str,
    config: &McpHttpConfig,
) -> Result<(Server, Vec<rmcp::model::Tool>), String> {
    use reqwest::header::{HeaderName, HeaderValue};
    use rmcp::transport::streamable_http_client::{
        StreamableHttpClientTransport, StreamableHttpClientTransportConfig,
    };
    let mut headers = HashMap::new();
    for (key, value) in &config.headers {
        let shown: String = key.chars().take(100).collect();
        let header = HeaderName::from_bytes(key.as_bytes())
            .map_err(|_| format!("its header \"{shown}\" is not a valid HTTP header name"))?;
        let value = HeaderValue::from_str(value).map_err(|_| {
            format!("the value of its header \"{shown}\" is not a valid HTTP header value")
        })?;
        headers.insert(header, value);
    }
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(config.url.as_str()).custom_headers(headers),
    );
    let (service, tools) = initialise(transport).await?;
    Ok((
        Server {
            name: name.to_owned(),
            service: Mutex::new(Some(service)),
            group: Group::new(None),
        },
        tools,
    ))
}

/// MCP's initialisation over `transport`, then every page of `tools/list`,
/// within [`START_TIMEOUT`].
async fn initialise<T, E, A>(
    transport: T,
) -> Result<(RunningService<RoleClient, ()>, Vec<rmcp::model::Tool>), String>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let started = tokio::time::timeout(START_TIMEOUT, async {
        let service = ().serve(transport).await.map_err(|e| {
            format!(
                "it did not complete MCP's initialisation ({})",
                one_line(&e.to_string())
            )
        })?;
        let tools = service
            .peer()
            .list_all_tools()
            .await
            .map_err(|e| format!("it did not list its tools ({})", one_line(&e.to_string())))?;
        Ok::<_, String>((service, tools))
    })
    .await;
    match started {
        Ok(result) => result,
        Err(_) => Err(format!(
            "it did not initialise and list its tools within {} s",
            START_TIMEOUT.as_secs()
        )),
    }
}

fn start_error(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such program".to_owned(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
        _ => one_line(&e.to_string()),
    }
}

fn one_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or("").trim();
    line.chars().take(300).collect()
}

/// One tool of one server.
struct McpTool {
    /// `mcp__SERVER__TOOL`.
    name: String,
    /// The server's own name for it.
    remote: String,
    description: String,
    schema: Value,
    annotations: ToolAnnotations,
    open_world: bool,
    server: Arc<Server>,
    timeout: Duration,
}

impl McpTool {
    fn from_listed(
        server: &Arc<Server>,
        tool: rmcp::model::Tool,
        timeout: Duration,
    ) -> Option<McpTool> {
        let listed = serde_json::to_value(&tool).ok()?;
        let remote = listed.get("name")?.as_str()?.to_owned();
        let hint = |key: &str| {
            listed
                .get("annotations")
                .and_then(|a| a.get(key))
                .and_then(Value::as_bool)
        };
        let read_only = hint("readOnlyHint").unwrap_or(false);
        Some(McpTool {
            name: format!("mcp__{}__{}", server.name, remote),
            description: listed
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
            schema: listed
                .get("inputSchema")
                .cloned()
                .unwrap_or_else(|| serde_json::json!({"type": "object"})),
            annotations: ToolAnnotations {
                read_only,
                // MCP's default: a tool that is not read-only may destroy.
                destructive: !read_only && hint("destructiveHint").unwrap_or(true),
                idempotent: hint("idempotentHint").unwrap_or(false),
            },
            open_world: hint("openWorldHint").unwrap_or(true),
            remote,
            server: server.clone(),
            timeout,
        })
    }

    fn peer(&self) -> Option<Peer<RoleClient>> {
        let service = self.server.service.lock().ok()?;
        service.as_ref().map(|s| s.peer().clone())
    }
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> &Value {
        &self.schema
    }

    fn annotations(&self) -> ToolAnnotations {
        self.annotations
    }

    fn open_world(&self) -> bool {
        self.open_world
    }

    fn validate(&self, args: &Value) -> Result<(), String> {
        // The server checks arguments against its schema; here only the shape.
        match args {
            Value::Object(_) | Value::Null => Ok(()),
            _ => Err(format!(
                "The arguments for {} are not a JSON object.",
                self.name
            )),
        }
    }

    async fn call(&self, _cx: &CallContext, args: Value) -> Result<ToolOutput, Error> {
        let Some(peer) = self.peer() else {
            return Ok(ToolOutput::refused(format!(
                "The MCP server \"{}\" is stopped; {} cannot be called.",
                self.server.name, self.name
            )));
        };
        let mut params = CallToolRequestParams::new(self.remote.clone());
        if let Value::Object(map) = args {
            params.arguments = Some(map);
        }
        let answer = tokio::time::timeout(self.timeout, peer.call_tool(params)).await;
        let result = match answer {
            Err(_) => {
                return Ok(ToolOutput::refused(format!(
                    "The MCP tool {} did not answer within {} s; the call was cancelled.",
                    self.name,
                    self.timeout.as_secs_f64()
                )));
            }
            Ok(Err(e)) => {
                return Ok(ToolOutput::refused(format!(
                    "The MCP server \"{}\" answered {} with an error: {}.",
                    self.server.name,
                    self.name,
                    one_line(&e.to_string()).trim_end_matches('.')
                )));
            }
            Ok(Ok(result)) => result,
        };
        let result = serde_json::to_value(&result).unwrap_or(Value::Null);
        let text = result_text(&result);
        if result.get("isError").and_then(Value::as_bool) == Some(true) {
            let text = if text.is_empty() {
                format!("The MCP tool {} failed and said nothing more.", self.name)
            } else {
                text
            };
            Ok(ToolOutput::refused(text))
        } else {
            Ok(ToolOutput::ok(text))
        }
    }
}

/// The text of a `CallToolResult` (as JSON): its content blocks, one after
/// another; `structuredContent` when there is no content.
fn result_text(result: &Value) -> String {
    let mut parts: Vec<String> = Vec::new();
    for block in result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let str_of = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or("");
        match str_of("type") {
            "text" => parts.push(str_of("text").to_owned()),
            kind @ ("image" | "audio") => parts.push(format!(
                "[{kind}: {}, {} bytes]",
                str_of("mimeType"),
                base64_len(str_of("data"))
            )),
            "resource" => {
                let resource = block.get("resource").cloned().unwrap_or(Value::Null);
                let uri = resource.get("uri").and_then(Value::as_str).unwrap_or("");
                match resource.get("text").and_then(Value::as_str) {
                    Some(text) => parts.push(format!("[resource: {uri}]\n{text}")),
                    None => parts.push(format!(
                        "[resource: {uri}, {}, binary]",
                        resource
                            .get("mimeType")
                            .and_then(Value::as_str)
                            .unwrap_or("application/octet-stream")
                    )),
                }
            }
            "resource_link" => parts.push(format!("[resource link: {}]", str_of("uri"))),
            other => parts.push(format!("[{other} content]")),
        }
    }
    if parts.is_empty()
        && let Some(structured) = result.get("structuredContent")
    {
        parts.push(structured.to_string());
    }
    let mut text = parts.join("\n");
    if text.chars().count() > MAX_RESULT_CHARS {
        text = text.chars().take(MAX_RESULT_CHARS).collect();
        text.push_str("\n[the rest of the result was cut]");
    }
    text
}

/// The number of bytes the base64 text `data` decodes to (padding and
/// line breaks not counted).
fn base64_len(data: &str) -> usize {
    let digits = data
        .bytes()
        .filter(|b| !b.is_ascii_whitespace() && *b != b'=')
        .count();
    digits * 3 / 4
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_blocks_become_text() {
        let result = serde_json::json!({"content": [
            {"type": "text", "text": "one"},
            {"type": "image", "mimeType": "image/png", "data": "AAAA"},
            {"type": "resource", "resource": {"uri": "file:///a", "text": "body"}},
            {"type": "resource", "resource": {"uri": "file:///b", "blob": "AAAA", "mimeType": "image/gif"}},
            {"type": "audio", "mimeType": "audio/wav", "data": "AAAAAA=="},
        ]});
        assert_eq!(
            result_text(&result),
            "one\n[image: image/png, 3 bytes]\n[resource: file:///a]\nbody\n[resource: file:///b, image/gif, binary]\n[audio: audio/wav, 4 bytes]"
        );
    }

    #[test]
    fn settings_entries_are_read_and_sse_is_set_apart() {
        let settings = serde_json::json!({"mcpServers": {
            "a": {"command": "x", "args": ["1"], "env": {"K": "V"}},
            "old": {"type": "sse", "url": "https://example.com/sse"},
            "web": {"type": "http", "url": "https://example.com/mcp", "headers": {"X-K": "v"}},
        }});
        let (servers, skipped) = servers_from_settings(&settings).unwrap();
        assert_eq!(servers.len(), 2);
        let McpServerSpec::Stdio(stdio) = &servers[0].1 else {
            panic!("{servers:?}")
        };
        assert_eq!(stdio.args, vec!["1".to_owned()]);
        assert_eq!(
            servers[1].1,
            McpServerSpec::Http(McpHttpConfig {
                url: "https://example.com/mcp".to_owned(),
                headers: [("X-K".to_owned(), "v".to_owned())].into(),
            })
        );
        assert_eq!(skipped[0].server, "old");
        assert!(skipped[0].reason.contains("\"sse\""), "{skipped:?}");
        let bad = serde_json::json!({"mcpServers": {"a": {"args": []}}});
        assert!(servers_from_settings(&bad).unwrap_err().contains("\"a\""));
        let no_url = serde_json::json!({"mcpServers": {"w": {"type": "http"}}});
        assert!(
            servers_from_settings(&no_url)
                .unwrap_err()
                .contains("\"w\"")
        );
        let file = serde_json::json!({"mcpServers": {"w": {"type": "http", "url": "file:///etc"}}});
        assert!(
            servers_from_settings(&file)
                .unwrap_err()
                .contains("not http:// or https://")
        );
    }

    #[test]
    fn kill_all_forgets_the_groups_it_killed() {
        let group = Group::new(Some(u32::MAX));
        assert!(live_groups().contains(&u32::MAX));
        kill_all();
        assert!(!live_groups().contains(&u32::MAX));
        drop(group);
    }
}
