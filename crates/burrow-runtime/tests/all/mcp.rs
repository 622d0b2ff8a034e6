//! The MCP server in process: raw JSON-RPC lines over an in-memory pipe, checking how tools, refusals and failures map to MCP.

use std::sync::Arc;

use burrow_backend::Backend;
use burrow_runtime::mcp;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};

use super::support::{Mode, Wrapped, content, ctx, p, state_with, toolset};

/// A client speaking newline-delimited JSON-RPC to an in-process server.
struct Client {
    to_server: DuplexStream,
    from_server: Lines<BufReader<DuplexStream>>,
    next_id: u64,
    server: tokio::task::JoinHandle<Result<(), burrow_backend::Error>>,
}

impl Client {
    async fn start(backend: Arc<dyn Backend>) -> Client {
        let (client_out, server_in) = tokio::io::duplex(1 << 20);
        let (server_out, client_in) = tokio::io::duplex(1 << 20);
        let tools = toolset(backend).registry();
        let server = tokio::spawn(mcp::serve(tools, server_in, server_out));
        let mut client = Client {
            to_server: client_out,
            from_server: BufReader::new(client_in).lines(),
            next_id: 0,
            server,
        };
        let init = client
            .request(
                "initialize",
                json!({
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "test", "version": "0"}
                }),
            )
            .await;
        assert_eq!(init["result"]["serverInfo"]["name"], "burrow", "{init}");
        assert!(
            init["result"]["capabilities"]["tools"].is_object(),
            "{init}"
        );
        client
            .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        client
    }

    async fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.to_server.write_all(line.as_bytes()).await.unwrap();
    }

    async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = json!(self.next_id);
        self.request_as(id, method, params).await
    }

    /// A request with the id `id` (a retry sends the same id again).
    async fn request_as(&mut self, id: Value, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let line = self
                .from_server
                .next_line()
                .await
                .unwrap()
                .expect("the server hung up");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }

    async fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": arguments}))
            .await
    }

    async fn finish(self) {
        drop(self.to_server);
        self.server.await.unwrap().unwrap();
    }
}

fn text_of(response: &Value) -> &str {
    response["result"]["content"][0]["text"].as_str().unwrap()
}

#[tokio::test]
async fn tools_are_listed_with_their_schemas_and_hints() {
    let backend = Arc::new(state_with(&[]).await);
    let mut client = Client::start(backend).await;
    let list = client.request("tools/list", json!({})).await;
    let tools = list["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "ls",
            "read_file",
            "write_file",
            "edit_file",
            "delete_path",
            "glob",
            "grep"
        ]
    );
    for tool in tools {
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
        assert!(tool["description"].as_str().unwrap().len() > 80);
    }
    let read = &tools[1];
    assert_eq!(read["inputSchema"]["required"], json!(["file_path"]));
    assert_eq!(read["annotations"]["readOnlyHint"], true);
    assert_eq!(tools[3]["annotations"]["destructiveHint"], true);
    // Every hint comes from the tool: the file tools are closed-world.
    for tool in tools {
        assert_eq!(tool["annotations"]["openWorldHint"], false, "{tool}");
    }
    assert_eq!(read["annotations"]["idempotentHint"], true);
    assert_eq!(
        tools[3]["annotations"]["idempotentHint"], false,
        "edit_file"
    );
    assert_eq!(
        tools[2]["annotations"]["idempotentHint"], true,
        "write_file"
    );
    // ls, glob and grep may save a large result: not read-only, not destructive.
    for i in [0, 5, 6] {
        let hints = &tools[i]["annotations"];
        assert_eq!(hints["readOnlyHint"], false, "{}", tools[i]);
        assert_eq!(hints["destructiveHint"], false, "{}", tools[i]);
    }
    client.finish().await;
}

#[tokio::test]
async fn results_and_refusals_are_tool_results() {
    let backend = Arc::new(state_with(&[]).await);
    let mut client = Client::start(backend.clone()).await;

    let wrote = client
        .call(
            "write_file",
            json!({"file_path": "/a.txt", "content": "hello\n"}),
        )
        .await;
    assert_eq!(wrote["result"]["isError"], false, "{wrote}");
    assert_eq!(text_of(&wrote), "Created /a.txt (1 line, 6 bytes).");
    assert_eq!(content(backend.as_ref(), "/a.txt").await, "hello\n");

    let read = client
        .call("read_file", json!({"file_path": "/a.txt"}))
        .await;
    assert_eq!(text_of(&read), "     1\thello");

    for (tool, args, says) in [
        (
            "read_file",
            json!({"file_path": "../etc/passwd"}),
            "climbs above the root",
        ),
        ("read_file", json!({}), "missing field `file_path`"),
        ("nope", json!({}), "no tool named"),
        (
            "read_file",
            json!({"file_path": "/missing"}),
            "does not exist",
        ),
    ] {
        let refused = client.call(tool, args).await;
        assert!(refused.get("error").is_none(), "{refused}");
        assert_eq!(refused["result"]["isError"], true, "{refused}");
        assert!(text_of(&refused).contains(says), "{refused}");
    }
    client.finish().await;
}

#[tokio::test]
async fn a_failure_is_a_protocol_error() {
    let backend = Arc::new(Wrapped::new(state_with(&[]).await, Mode::Broken, false));
    let mut client = Client::start(backend).await;
    let failed = client.call("ls", json!({})).await;
    assert!(failed.get("result").is_none(), "{failed}");
    assert_eq!(failed["error"]["code"], -32603, "{failed}");
    let message = failed["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("storage failure: the store is unreachable"),
        "{message}"
    );
    // The session survives a failure.
    let again = client.call("read_file", json!({})).await;
    assert_eq!(again["result"]["isError"], true, "{again}");
    client.finish().await;
}

/// The next line from the server, as JSON.
async fn next_answer(client: &mut Client) -> Value {
    let line = client
        .from_server
        .next_line()
        .await
        .unwrap()
        .expect("the server hung up");
    serde_json::from_str(&line).unwrap()
}

#[tokio::test]
async fn every_bad_line_gets_an_answer_and_the_session_goes_on() {
    let backend = Arc::new(state_with(&[]).await);
    let mut client = Client::start(backend).await;
    let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
    let cases: Vec<(String, Value, i64)> = vec![
        ("not json".into(), Value::Null, -32700),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}{"jsonrpc":"2.0","id":2,"method":"ping"}"#
                .into(),
            Value::Null,
            -32700,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1e400,"method":"ping"}"#.into(),
            Value::Null,
            -32700,
        ),
        (deep, Value::Null, -32700),
        ("[]".into(), Value::Null, -32600),
        (
            r#"{"jsonrpc":"2.0","id":41,"method":"tools/call"}"#.into(),
            json!(41),
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":["ls"]}}"#.into(),
            json!("s"),
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":43,"method":"tools/call","params":{"name":"ls","arguments":"/"}}"#
                .into(),
            json!(43),
            -32602,
        ),
    ];
    for (line, id, code) in cases {
        client
            .to_server
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        let answer = next_answer(&mut client).await;
        let shown: String = line.chars().take(80).collect();
        assert_eq!(answer["id"], id, "{shown}: {answer}");
        assert_eq!(answer["error"]["code"], code, "{shown}: {answer}");
        assert!(answer["error"]["message"].as_str().unwrap().len() > 10);
    }
    // The session is still up.
    let listed = client.call("ls", json!({})).await;
    assert_eq!(listed["result"]["isError"], false, "{listed}");
    client.finish().await;
}

#[tokio::test]
async fn a_line_over_the_limit_is_skipped_with_an_error_never_held() {
    let (mut to_server, server_in) = tokio::io::duplex(1 << 16);
    let (server_out, from_server) = tokio::io::duplex(1 << 16);
    let transport = mcp::FramedTransport::new(server_in, server_out).with_max_line(1000);
    let backend: Arc<dyn Backend> = Arc::new(state_with(&[]).await);
    let server = tokio::spawn(async move {
        use rmcp::ServiceExt;
        let running = mcp::McpServer::new(toolset(backend).registry())
            .serve(transport)
            .await
            .unwrap();
        running.waiting().await.unwrap();
    });
    let mut lines = BufReader::new(from_server).lines();
    to_server.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}\n").await.unwrap();
    let init: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(init["id"], 0);
    let long = format!("{{\"pad\":\"{}\"}}\n", "x".repeat(5000));
    to_server.write_all(long.as_bytes()).await.unwrap();
    let answer: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("longer than 1000 bytes"),
        "{answer}"
    );
    // The next line is read as usual.
    to_server
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n")
        .await
        .unwrap();
    let pong: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(pong["id"], 2, "{pong}");
    drop(to_server);
    server.await.unwrap();
}

fn edit_a(meta: Option<Value>) -> Value {
    let mut params = json!({
        "name": "edit_file",
        "arguments": {"file_path": "/a.txt", "old_string": "a", "new_string": "ab"},
    });
    if let Some(meta) = meta {
        params["_meta"] = meta;
    }
    params
}

#[tokio::test]
async fn a_retried_call_is_replayed_by_a_durable_backend_not_applied_twice() {
    let dir = tempfile::tempdir().unwrap();
    let backend = Arc::new(burrow_sqlite::StoreBackend::open(dir.path().join("w.db")).unwrap());
    backend.write(&ctx(), &p("/a.txt"), "a\n").await.unwrap();
    let mut client = Client::start(backend.clone()).await;
    client
        .call("read_file", json!({"file_path": "/a.txt"}))
        .await;

    // The same JSON-RPC request id again in this session is the same call.
    let first = client
        .request_as(json!(100), "tools/call", edit_a(None))
        .await;
    assert_eq!(first["result"]["isError"], false, "{first}");
    assert_eq!(content(backend.as_ref(), "/a.txt").await, "ab\n");
    let again = client
        .request_as(json!(100), "tools/call", edit_a(None))
        .await;
    assert_eq!(again["result"]["isError"], false, "{again}");
    assert_eq!(text_of(&again), text_of(&first));
    assert_eq!(content(backend.as_ref(), "/a.txt").await, "ab\n");
    // The string id "100" is another request, so another call.
    client
        .call("read_file", json!({"file_path": "/a.txt"}))
        .await;
    let other = client
        .request_as(json!("100"), "tools/call", edit_a(None))
        .await;
    assert_eq!(other["result"]["isError"], false, "{other}");
    assert_eq!(content(backend.as_ref(), "/a.txt").await, "abb\n");

    // A client's idempotency key makes one call of requests with other ids.
    client
        .call("read_file", json!({"file_path": "/a.txt"}))
        .await;
    let key = json!({"burrow/idempotencyKey": "edit-once"});
    let keyed = client
        .request_as(json!(200), "tools/call", edit_a(Some(key.clone())))
        .await;
    assert_eq!(keyed["result"]["isError"], false, "{keyed}");
    assert_eq!(content(backend.as_ref(), "/a.txt").await, "abbb\n");
    let retried = client
        .request_as(json!(201), "tools/call", edit_a(Some(key.clone())))
        .await;
    assert_eq!(retried["result"]["isError"], false, "{retried}");
    assert_eq!(content(backend.as_ref(), "/a.txt").await, "abbb\n");
    // A bad key is a refusal, and nothing is written.
    let bad = client
        .request_as(
            json!(202),
            "tools/call",
            edit_a(Some(json!({"burrow/idempotencyKey": 7}))),
        )
        .await;
    assert_eq!(bad["result"]["isError"], true, "{bad}");
    assert!(text_of(&bad).contains("burrow/idempotencyKey"), "{bad}");
    client.finish().await;

    // ... and also in a later session over the same workspace (a client
    // that reconnected after losing the answer).
    let mut client = Client::start(backend.clone()).await;
    client
        .call("read_file", json!({"file_path": "/a.txt"}))
        .await;
    let reconnected = client
        .request_as(json!(1), "tools/call", edit_a(Some(key)))
        .await;
    assert_eq!(reconnected["result"]["isError"], false, "{reconnected}");
    assert_eq!(content(backend.as_ref(), "/a.txt").await, "abbb\n");
    // Without a key, request id 100 of a new session is a new call.
    client
        .call("read_file", json!({"file_path": "/a.txt"}))
        .await;
    let fresh = client
        .request_as(json!(100), "tools/call", edit_a(None))
        .await;
    assert_eq!(fresh["result"]["isError"], false, "{fresh}");
    assert_eq!(content(backend.as_ref(), "/a.txt").await, "abbbb\n");
    client.finish().await;
}
