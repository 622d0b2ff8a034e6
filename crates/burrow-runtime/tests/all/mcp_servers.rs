//! MCP servers as tool sources: the official Python SDK's server (a fixture script) started, listed and called through `mcp::client`, over stdio and over streamable HTTP.
//!
//! Needs Python with the `mcp` package (`burrow_testkit::Part::McpClient`);
//! the tests are in `mcp_client` so a missing SDK is reported as skipped.

mod mcp_client {
    use std::path::PathBuf;
    use std::sync::Arc;
    use std::time::Duration;

    use burrow_runtime::mcp::client::{McpHttpConfig, McpServerConfig, McpServers};
    use burrow_runtime::tool::{CallContext, Tool};
    use serde_json::json;

    fn fixture() -> String {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/mcp/server.py")
            .display()
            .to_string()
    }

    fn server(python: &str, pidfile: Option<&std::path::Path>) -> McpServerConfig {
        let mut env = std::collections::BTreeMap::new();
        if let Some(path) = pidfile {
            env.insert("PIDFILE".to_owned(), path.display().to_string());
        }
        McpServerConfig {
            command: python.to_owned(),
            args: vec![fixture()],
            env,
        }
    }

    fn cx() -> CallContext {
        CallContext {
            run_id: Arc::from("run_mcp"),
            call_id: "call_1".to_owned(),
        }
    }

    fn tool<'a>(servers: &'a McpServers, name: &str) -> &'a Arc<dyn Tool> {
        servers
            .tools()
            .iter()
            .find(|t| t.name() == name)
            .unwrap_or_else(|| panic!("no tool {name}"))
    }

    fn alive(pid: &str) -> bool {
        // `kill -0` succeeds while the process exists (a zombie counts; check its state).
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        !stat.is_empty() && !stat.contains(") Z ")
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn tools_are_listed_by_their_prefixed_names_with_their_schemas() {
        let python = burrow_testkit::require(burrow_testkit::Part::McpClient);
        let servers = McpServers::start(
            &[("fx".to_owned(), server(&python, None))],
            Duration::from_secs(60),
        )
        .await;
        assert!(servers.failures().is_empty(), "{:?}", servers.failures());
        let mut names: Vec<&str> = servers.tools().iter().map(|t| t.name()).collect();
        names.sort();
        assert_eq!(
            names,
            [
                "mcp__fx__cancelled",
                "mcp__fx__die",
                "mcp__fx__echo",
                "mcp__fx__fail",
                "mcp__fx__header",
                "mcp__fx__hold",
                "mcp__fx__hold_idempotent",
                "mcp__fx__media",
                "mcp__fx__sleep",
                "mcp__fx__spawn_child"
            ]
        );
        let echo = tool(&servers, "mcp__fx__echo");
        assert_eq!(echo.description(), "Says the text back.");
        let schema = echo.input_schema();
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["properties"]["text"]["type"], "string");
        assert_eq!(schema["required"], json!(["text"]));
        assert!(echo.annotations().idempotent);
        assert!(echo.annotations().read_only);
        let fail = tool(&servers, "mcp__fx__fail");
        assert!(
            !fail.annotations().idempotent,
            "not idempotent without idempotentHint"
        );
        assert!(!fail.annotations().read_only);
        servers.close().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_call_returns_the_text_and_an_is_error_result_is_a_refusal() {
        let python = burrow_testkit::require(burrow_testkit::Part::McpClient);
        let servers = McpServers::start(
            &[("fx".to_owned(), server(&python, None))],
            Duration::from_secs(60),
        )
        .await;
        let out = tool(&servers, "mcp__fx__echo")
            .call(&cx(), json!({"text": "hi"}))
            .await
            .unwrap();
        assert!(!out.is_error);
        assert_eq!(out.text, "echo: hi");
        let out = tool(&servers, "mcp__fx__fail")
            .call(&cx(), json!({"why": "the disk is full"}))
            .await
            .unwrap();
        assert!(out.is_error);
        assert!(out.text.contains("fail"), "{}", out.text);
        // Arguments the server's schema refuses: an error result, not a failure.
        let out = tool(&servers, "mcp__fx__echo")
            .call(&cx(), json!({"text": 5, "extra": []}))
            .await
            .unwrap();
        assert!(out.is_error, "{}", out.text);
        servers.close().await;
        // After close, a call is a refusal naming the server.
        let out = tool(&servers, "mcp__fx__echo")
            .call(&cx(), json!({"text": "hi"}))
            .await
            .unwrap();
        assert!(out.is_error);
        assert!(out.text.contains("\"fx\" is stopped"), "{}", out.text);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_call_past_its_timeout_is_cancelled_at_the_server_and_the_server_still_answers() {
        let python = burrow_testkit::require(burrow_testkit::Part::McpClient);
        let servers = McpServers::start(
            &[("fx".to_owned(), server(&python, None))],
            Duration::from_millis(500),
        )
        .await;
        let out = tool(&servers, "mcp__fx__sleep")
            .call(&cx(), json!({"seconds": 30}))
            .await
            .unwrap();
        assert!(out.is_error);
        assert!(
            out.text.contains("did not answer within 0.5 s"),
            "{}",
            out.text
        );
        let out = tool(&servers, "mcp__fx__echo")
            .call(&cx(), json!({"text": "still here"}))
            .await
            .unwrap();
        assert_eq!(out.text, "echo: still here");
        // The server was told: its sleep was cancelled (notifications/cancelled).
        let out = tool(&servers, "mcp__fx__cancelled")
            .call(&cx(), json!({}))
            .await
            .unwrap();
        assert_eq!(out.text, "cancelled: sleep 30");
        servers.close().await;
    }

    /// The fixture serving streamable HTTP on 127.0.0.1, killed when dropped.
    struct HttpServer {
        child: std::process::Child,
        url: String,
        _dir: tempfile::TempDir,
    }

    impl HttpServer {
        fn start(python: &str) -> HttpServer {
            let dir = tempfile::tempdir().unwrap();
            let portfile = dir.path().join("port");
            let mut child = std::process::Command::new(python)
                .arg(fixture())
                .arg("http")
                .arg(&portfile)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap();
            // A bound on a hang, not a timing assertion.
            let deadline = std::time::Instant::now() + Duration::from_secs(120);
            let port = loop {
                if let Ok(text) = std::fs::read_to_string(&portfile)
                    && let Ok(port) = text.trim().parse::<u16>()
                {
                    break port;
                }
                if let Some(status) = child.try_wait().unwrap() {
                    panic!("the HTTP fixture ended before it listened: {status}");
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "the HTTP fixture never listened"
                );
                std::thread::sleep(Duration::from_millis(50));
            };
            HttpServer {
                child,
                url: format!("http://127.0.0.1:{port}/mcp"),
                _dir: dir,
            }
        }
    }

    impl Drop for HttpServer {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_streamable_http_server_is_listed_and_called_with_its_headers() {
        let python = burrow_testkit::require(burrow_testkit::Part::McpClient);
        let http = HttpServer::start(&python);
        let config = McpHttpConfig {
            url: http.url.clone(),
            headers: [("X-Burrow-Test".to_owned(), "yes".to_owned())].into(),
        };
        let servers =
            McpServers::start(&[("web".to_owned(), config)], Duration::from_millis(500)).await;
        assert!(servers.failures().is_empty(), "{:?}", servers.failures());
        assert_eq!(servers.tools().len(), 10);
        let out = tool(&servers, "mcp__web__echo")
            .call(&cx(), json!({"text": "over http"}))
            .await
            .unwrap();
        assert!(!out.is_error, "{}", out.text);
        assert_eq!(out.text, "echo: over http");
        let out = tool(&servers, "mcp__web__header")
            .call(&cx(), json!({"name": "X-Burrow-Test"}))
            .await
            .unwrap();
        assert_eq!(out.text, "X-Burrow-Test: yes");
        let out = tool(&servers, "mcp__web__fail")
            .call(&cx(), json!({"why": "no"}))
            .await
            .unwrap();
        assert!(out.is_error, "{}", out.text);
        // Past the timeout: refused, and the server is told.
        let out = tool(&servers, "mcp__web__sleep")
            .call(&cx(), json!({"seconds": 30}))
            .await
            .unwrap();
        assert!(out.is_error);
        assert!(
            out.text.contains("did not answer within 0.5 s"),
            "{}",
            out.text
        );
        let out = tool(&servers, "mcp__web__cancelled")
            .call(&cx(), json!({}))
            .await
            .unwrap();
        assert_eq!(out.text, "cancelled: sleep 30");
        servers.close().await;
        let out = tool(&servers, "mcp__web__echo")
            .call(&cx(), json!({"text": "hi"}))
            .await
            .unwrap();
        assert!(out.text.contains("\"web\" is stopped"), "{}", out.text);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_http_server_that_is_not_there_is_a_failure() {
        let _python = burrow_testkit::require(burrow_testkit::Part::McpClient);
        // A port nothing listens on: bound, then closed.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let config = McpHttpConfig {
            url: format!("http://127.0.0.1:{port}/mcp"),
            headers: Default::default(),
        };
        let bad_header = McpHttpConfig {
            url: format!("http://127.0.0.1:{port}/mcp"),
            headers: [("Bad Header".to_owned(), "x".to_owned())].into(),
        };
        let servers = McpServers::start(
            &[("down".to_owned(), config), ("bad".to_owned(), bad_header)],
            Duration::from_secs(5),
        )
        .await;
        let failures: Vec<String> = servers.failures().iter().map(|f| f.to_string()).collect();
        assert_eq!(failures.len(), 2, "{failures:?}");
        assert!(
            failures[0].starts_with(
                "the MCP server \"down\" is not used: it did not complete MCP's initialisation"
            ),
            "{failures:?}"
        );
        assert_eq!(
            failures[1],
            "the MCP server \"bad\" is not used: its header \"Bad Header\" is not a valid HTTP header name"
        );
        assert!(servers.tools().is_empty());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_server_that_dies_mid_run_fails_its_calls_and_is_not_restarted() {
        let python = burrow_testkit::require(burrow_testkit::Part::McpClient);
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pids");
        let servers = McpServers::start(
            &[("fx".to_owned(), server(&python, Some(&pidfile)))],
            Duration::from_secs(10),
        )
        .await;
        let out = tool(&servers, "mcp__fx__die")
            .call(&cx(), json!({}))
            .await
            .unwrap();
        assert!(out.is_error, "{}", out.text);
        assert!(
            out.text
                .starts_with("The MCP server \"fx\" answered mcp__fx__die with an error"),
            "{}",
            out.text
        );
        let out = tool(&servers, "mcp__fx__echo")
            .call(&cx(), json!({"text": "hi"}))
            .await
            .unwrap();
        assert!(out.is_error, "{}", out.text);
        // It failed for the server's death, not at the call's timeout.
        assert!(
            !out.text.contains("did not answer within"),
            "failed at the timeout: {}",
            out.text
        );
        assert!(
            out.text.contains("\"fx\""),
            "names the server: {}",
            out.text
        );
        let pids = std::fs::read_to_string(&pidfile).unwrap();
        assert_eq!(pids.lines().count(), 1, "not restarted: {pids}");
        servers.close().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_server_that_fails_to_start_is_a_failure_and_the_others_are_offered() {
        let python = burrow_testkit::require(burrow_testkit::Part::McpClient);
        let missing = McpServerConfig {
            command: "/nonexistent/mcp-server".to_owned(),
            args: Vec::new(),
            env: Default::default(),
        };
        // A program that exits at once: it never initialises.
        let quits = McpServerConfig {
            command: python.clone(),
            args: vec!["-c".to_owned(), "pass".to_owned()],
            env: Default::default(),
        };
        let servers = McpServers::start(
            &[
                ("gone".to_owned(), missing),
                ("quits".to_owned(), quits),
                ("fx".to_owned(), server(&python, None)),
            ],
            Duration::from_secs(60),
        )
        .await;
        let failures: Vec<String> = servers.failures().iter().map(|f| f.to_string()).collect();
        assert_eq!(failures.len(), 2, "{failures:?}");
        assert_eq!(
            failures[0],
            "the MCP server \"gone\" is not used: its command \"/nonexistent/mcp-server\" cannot be started (no such program)"
        );
        assert!(
            failures[1].starts_with(
                "the MCP server \"quits\" is not used: it did not complete MCP's initialisation"
            ),
            "{}",
            failures[1]
        );
        assert_eq!(servers.tools().len(), 10);
        servers.close().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn closing_or_dropping_kills_the_server_and_its_children() {
        let python = burrow_testkit::require(burrow_testkit::Part::McpClient);
        let dir = tempfile::tempdir().unwrap();
        for close in [true, false] {
            let pidfile = dir.path().join(format!("pids-{close}"));
            let servers = McpServers::start(
                &[("fx".to_owned(), server(&python, Some(&pidfile)))],
                Duration::from_secs(60),
            )
            .await;
            let out = tool(&servers, "mcp__fx__spawn_child")
                .call(&cx(), json!({}))
                .await
                .unwrap();
            assert_eq!(out.text, "spawned");
            let pids: Vec<String> = std::fs::read_to_string(&pidfile)
                .unwrap()
                .lines()
                .map(str::to_owned)
                .collect();
            assert_eq!(pids.len(), 2);
            assert!(pids.iter().all(|p| alive(p)));
            if close {
                servers.close().await;
            } else {
                drop(servers);
            }
            let deadline = std::time::Instant::now() + Duration::from_secs(5);
            while pids.iter().any(|p| alive(p)) && std::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            assert!(
                pids.iter().all(|p| !alive(p)),
                "left running: {pids:?} (close: {close})"
            );
        }
    }
}
