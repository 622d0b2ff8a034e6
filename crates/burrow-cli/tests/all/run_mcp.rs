//! `burrow run --settings` with `mcpServers`: the official Python SDK's server (burrow-runtime's fixture, over stdio and over streamable HTTP) offered as `mcp__SERVER__TOOL` tools, under the permission rules (plan mode runs those annotated read-only), to resumed runs and to subagents, stopped after the run and on Ctrl-C, a second Ctrl-C, SIGTERM and SIGHUP; a server that fails is a warning, or with `--strict-mcp` exit 2 before anything runs; image and embedded-resource content reaches the model as the tool result; no server outlives a SIGKILL of the run's parent shell (its terminal hangs up).
//!
//! Needs Python with the `mcp` package (`burrow_testkit::Part::McpClient`);
//! the tests are in `mcp_client` so a missing SDK is reported as skipped.

mod mcp_client {
    use std::io::{BufRead, BufReader};
    use std::path::{Path, PathBuf};
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    use serde_json::{Value, json};

    use crate::all::support::{Run, burrow_in};

    fn fixture() -> String {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../burrow-runtime/tests/fixtures/mcp/server.py")
            .display()
            .to_string()
    }

    struct Setup {
        dir: tempfile::TempDir,
        python: String,
    }

    impl Setup {
        fn new() -> Self {
            let python = burrow_testkit::require(burrow_testkit::Part::McpClient);
            let dir = tempfile::tempdir().unwrap();
            std::fs::create_dir(dir.path().join("ws")).unwrap();
            Setup { dir, python }
        }

        fn dir(&self) -> &Path {
            self.dir.path()
        }

        fn pidfile(&self) -> PathBuf {
            self.dir().join("pids")
        }

        /// The fixture server as an `mcpServers` entry.
        fn fixture_server(&self) -> Value {
            json!({"command": self.python, "args": [fixture()],
                   "env": {"PIDFILE": self.pidfile().display().to_string()}})
        }

        /// Runs `burrow --json run go` with `answers`, the settings `settings` and `extra` flags.
        fn run(&self, answers: &[Value], settings: Value, extra: &[&str]) -> Run {
            let args = self.run_args(answers, settings, extra);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            burrow_in(self.dir(), &args, b"")
        }

        /// The arguments of [`Setup::run`], its script and settings written.
        fn run_args(&self, answers: &[Value], settings: Value, extra: &[&str]) -> Vec<String> {
            let script = self.dir().join("script.jsonl");
            let text: String = answers.iter().map(|a| format!("{a}\n")).collect();
            std::fs::write(&script, text).unwrap();
            let path = self.dir().join("settings.json");
            std::fs::write(&path, settings.to_string()).unwrap();
            let backend = format!("fs:{}", self.dir().join("ws").display());
            let model = format!("scripted:{}", script.display());
            let mut args: Vec<String> = [
                "--backend",
                &backend,
                "--json",
                "run",
                "go",
                "--model",
                &model,
                "--settings",
                path.to_str().unwrap(),
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            args.extend(extra.iter().map(|s| s.to_string()));
            args
        }

        fn pids(&self) -> Vec<String> {
            std::fs::read_to_string(self.pidfile())
                .unwrap_or_default()
                .lines()
                .map(str::to_owned)
                .collect()
        }
    }

    fn events(run: &Run) -> Vec<Value> {
        run.out()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn result_of<'a>(events: &'a [Value], id: &str) -> &'a Value {
        events
            .iter()
            .find(|e| e["type"] == "tool_result" && e["id"] == id)
            .unwrap_or_else(|| panic!("no result of {id}: {events:?}"))
    }

    fn alive(pid: &str) -> bool {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        !stat.is_empty() && !stat.contains(") Z ")
    }

    /// True when none of `pids` is running, waiting up to 5 s for a killed one to go.
    fn all_gone(pids: &[String]) -> bool {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while pids.iter().any(|p| alive(p)) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        pids.iter().all(|p| !alive(p))
    }

    #[test]
    fn mcp_tools_are_called_under_the_permission_rules_and_no_server_outlives_the_run() {
        let s = Setup::new();
        let answers = [
            json!({"tool_calls": [
                {"id": "e", "name": "mcp__fx__echo", "arguments": {"text": "hi"}},
                {"id": "f", "name": "mcp__fx__fail", "arguments": {"why": "no"}},
                {"id": "d", "name": "mcp__fx__sleep", "arguments": {"seconds": 0}},
                {"id": "c", "name": "mcp__fx__spawn_child", "arguments": {}}]}),
            json!({"text": "done"}),
        ];
        let settings = json!({"mcpServers": {"fx": s.fixture_server()},
                              "permissions": {"deny": ["mcp__fx__sleep"]}});
        let run = s.run(&answers, settings, &[]);
        run.assert_code(0);
        let events = events(&run);
        let echo = result_of(&events, "e");
        assert_eq!(echo["is_error"], false, "{echo}");
        assert_eq!(echo["content"], "echo: hi");
        let fail = result_of(&events, "f");
        assert_eq!(fail["is_error"], true, "{fail}");
        let denied = result_of(&events, "d");
        assert_eq!(denied["is_error"], true, "{denied}");
        assert!(
            denied["content"]
                .as_str()
                .unwrap()
                .contains("mcp__fx__sleep"),
            "{denied}"
        );
        assert_eq!(result_of(&events, "c")["content"], "spawned");
        let pids = s.pids();
        assert_eq!(pids.len(), 2, "the server and its child: {pids:?}");
        assert!(all_gone(&pids), "left running after the run: {pids:?}");
    }

    /// The fixture's `media` tool answers a text block, a PNG image block (70
    /// bytes) and two embedded resources: what the model's next request holds
    /// as the tool's result is each of them, in order (ADR 0313: the result is
    /// text, an image a line naming its MIME type and size, an embedded text
    /// resource its URI and text, a binary one a line naming it).
    #[cfg(feature = "openai")]
    #[test]
    fn image_and_embedded_resource_content_reaches_the_model_as_the_tool_result() {
        use burrow_testkit::http::ReplayServer;
        let s = Setup::new();
        let chat = crate::all::run_providers::chat;
        let server = ReplayServer::start([
            chat(None, Some(("m", "mcp__fx__media", json!({})))),
            chat(Some("done"), None),
        ]);
        let path = s.dir().join("settings.json");
        let settings = json!({"mcpServers": {"fx": s.fixture_server()}});
        std::fs::write(&path, settings.to_string()).unwrap();
        let backend = format!("fs:{}", s.dir().join("ws").display());
        let url = server.url();
        let run = crate::all::support::burrow_in_env(
            s.dir(),
            &[
                "--backend",
                &backend,
                "--json",
                "run",
                "go",
                "--model",
                "openai:gpt-test",
                "--settings",
                path.to_str().unwrap(),
            ],
            b"",
            &[
                ("OPENAI_BASE_URL", url.as_str()),
                ("OPENAI_API_KEY", crate::all::run_providers::KEY),
            ],
        );
        run.assert_code(0);
        let expected = "media follows\n\
            [image: image/png, 70 bytes]\n\
            [resource: file:///notes/readme.txt]\nthe embedded text\n\
            [resource: file:///data/blob.bin, application/octet-stream, binary]";
        let result = result_of(&events(&run), "m").clone();
        assert_eq!(result["is_error"], false, "{result}");
        assert_eq!(result["content"], expected);
        let requests = server.requests();
        assert_eq!(
            requests.len(),
            2,
            "the model was asked again after the call"
        );
        let body: Value = serde_json::from_slice(&requests[1].body).unwrap();
        let told: Vec<&Value> = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "tool" && m["tool_call_id"] == "m")
            .collect();
        assert_eq!(told.len(), 1, "{body}");
        assert_eq!(told[0]["content"], expected, "{body}");
    }

    #[test]
    fn a_pre_tool_use_hook_matching_mcp_names_decides_their_calls() {
        let s = Setup::new();
        let decision = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
            "permissionDecision": "deny", "permissionDecisionReason": "no echo today"}});
        std::fs::write(s.dir().join("deny.json"), decision.to_string()).unwrap();
        let answers = [
            json!({"tool_calls": [
                {"id": "e", "name": "mcp__fx__echo", "arguments": {"text": "hi"}},
                {"id": "l", "name": "ls", "arguments": {"path": "/"}}]}),
            json!({"text": "done"}),
        ];
        let settings = json!({"mcpServers": {"fx": s.fixture_server()},
            "hooks": {"PreToolUse": [{"matcher": "mcp__fx__.*",
                "hooks": [{"type": "command", "command": "cat deny.json"}]}]}});
        let run = s.run(&answers, settings, &[]);
        run.assert_code(0);
        let events = events(&run);
        let echo = result_of(&events, "e");
        assert_eq!(echo["is_error"], true, "{echo}");
        assert!(
            echo["content"].as_str().unwrap().contains("no echo today"),
            "{echo}"
        );
        assert_eq!(
            result_of(&events, "l")["is_error"],
            false,
            "ls is not matched"
        );
    }

    #[test]
    fn a_server_that_fails_to_start_is_a_warning_and_the_run_goes_on() {
        let s = Setup::new();
        let answers = [
            json!({"tool_calls": [
                {"id": "e", "name": "mcp__fx__echo", "arguments": {"text": "hi"}}]}),
            json!({"text": "done"}),
        ];
        let settings = json!({"mcpServers": {
            "fx": s.fixture_server(),
            "gone": {"command": "/nonexistent/mcp-server"}}});
        let run = s.run(&answers, settings, &[]);
        run.assert_code(0);
        assert!(
            run.stderr.contains(
                "burrow: warning: the MCP server \"gone\" is not used: its command \"/nonexistent/mcp-server\" cannot be started (no such program); the run goes on without it"
            ),
            "{}",
            run.stderr
        );
        assert_eq!(result_of(&events(&run), "e")["content"], "echo: hi");
    }

    #[test]
    fn strict_mcp_exits_2_before_anything_runs() {
        let s = Setup::new();
        let answers = [
            json!({"tool_calls": [{"id": "w", "name": "write_file",
                "arguments": {"file_path": "/a.txt", "content": "x"}}]}),
            json!({"text": "done"}),
        ];
        let settings = json!({"mcpServers": {
            "fx": s.fixture_server(),
            "gone": {"command": "/nonexistent/mcp-server"}}});
        let run = s.run(&answers, settings, &["--strict-mcp"]);
        run.assert_code(2);
        assert!(
            run.stderr.contains("the MCP server \"gone\" is not used")
                && run.stderr.contains("(--strict-mcp)"),
            "{}",
            run.stderr
        );
        assert!(!run.stderr.contains("/tmp"), "no host path: {}", run.stderr);
        assert!(run.out().is_empty(), "nothing ran: {}", run.out());
        assert!(!s.dir().join("ws/a.txt").exists());
        let pids = s.pids();
        assert_eq!(pids.len(), 1, "the server that did start: {pids:?}");
        assert!(all_gone(&pids), "left running: {pids:?}");
    }

    #[test]
    fn a_call_past_mcp_timeout_is_an_error_result() {
        let s = Setup::new();
        let answers = [
            json!({"tool_calls": [
                {"id": "z", "name": "mcp__fx__sleep", "arguments": {"seconds": 30}}]}),
            json!({"tool_calls": [
                {"id": "k", "name": "mcp__fx__cancelled", "arguments": {}}]}),
            json!({"text": "done"}),
        ];
        let settings = json!({"mcpServers": {"fx": s.fixture_server()}});
        let run = s.run(&answers, settings, &["--mcp-timeout", "1"]);
        run.assert_code(0);
        let events = events(&run);
        // The server was told (notifications/cancelled): its sleep was cancelled.
        assert_eq!(result_of(&events, "k")["content"], "cancelled: sleep 30");
        let result = result_of(&events, "z");
        assert_eq!(result["is_error"], true);
        assert!(
            result["content"]
                .as_str()
                .unwrap()
                .contains("did not answer within 1 s"),
            "{result}"
        );
    }

    /// The fixture serving streamable HTTP on 127.0.0.1, killed when dropped.
    struct HttpServer {
        child: std::process::Child,
        url: String,
    }

    impl HttpServer {
        fn start(s: &Setup) -> HttpServer {
            let portfile = s.dir().join("port");
            let mut child = Command::new(&s.python)
                .arg(fixture())
                .arg("http")
                .arg(&portfile)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .spawn()
                .unwrap();
            // A bound on a hang, not a timing assertion.
            let deadline = Instant::now() + Duration::from_secs(120);
            let port = loop {
                if let Ok(text) = std::fs::read_to_string(&portfile)
                    && let Ok(port) = text.trim().parse::<u16>()
                {
                    break port;
                }
                if let Some(status) = child.try_wait().unwrap() {
                    panic!("the HTTP fixture ended before it listened: {status}");
                }
                assert!(Instant::now() < deadline, "the HTTP fixture never listened");
                std::thread::sleep(Duration::from_millis(50));
            };
            HttpServer {
                child,
                url: format!("http://127.0.0.1:{port}/mcp"),
            }
        }
    }

    impl Drop for HttpServer {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    #[test]
    fn a_streamable_http_server_s_tools_are_offered_with_its_headers() {
        let s = Setup::new();
        let http = HttpServer::start(&s);
        let answers = [
            json!({"tool_calls": [
                {"id": "e", "name": "mcp__web__echo", "arguments": {"text": "over http"}},
                {"id": "h", "name": "mcp__web__header", "arguments": {"name": "Authorization"}},
                {"id": "d", "name": "mcp__web__fail", "arguments": {"why": "no"}}]}),
            json!({"text": "done"}),
        ];
        let settings = json!({"mcpServers": {"web": {"type": "http", "url": http.url,
            "headers": {"Authorization": "Bearer t0ken"}}},
            "permissions": {"deny": ["mcp__web__fail"]}});
        let run = s.run(&answers, settings, &[]);
        run.assert_code(0);
        assert!(!run.stderr.contains("warning"), "{}", run.stderr);
        let events = events(&run);
        assert_eq!(result_of(&events, "e")["content"], "echo: over http");
        assert_eq!(
            result_of(&events, "h")["content"],
            "Authorization: Bearer t0ken"
        );
        let denied = result_of(&events, "d");
        assert_eq!(denied["is_error"], true, "{denied}");
        assert!(
            denied["content"]
                .as_str()
                .unwrap()
                .contains("mcp__web__fail"),
            "{denied}"
        );
    }

    #[test]
    fn an_sse_server_is_a_warning_naming_its_type() {
        let s = Setup::new();
        let answers = [json!({"text": "done"})];
        let settings =
            json!({"mcpServers": {"old": {"type": "sse", "url": "http://127.0.0.1:9/sse"}}});
        let run = s.run(&answers, settings, &[]);
        run.assert_code(0);
        assert!(
            run.stderr.contains(
                "burrow: warning: the MCP server \"old\" is not used: its type \"sse\" is not supported (only stdio and http servers are); the run goes on without it"
            ),
            "{}",
            run.stderr
        );
    }

    /// A `burrow run` in the background, its stdout read line by line.
    struct Background {
        child: std::process::Child,
        lines: std::sync::mpsc::Receiver<String>,
        seen: Vec<String>,
    }

    impl Background {
        fn start(s: &Setup, args: &[String]) -> Background {
            let mut command = Command::new(env!("CARGO_BIN_EXE_burrow"));
            command.args(args);
            Background::of(s, command)
        }

        /// `command` run in the test's folder, its stdout read line by line.
        fn of(s: &Setup, mut command: Command) -> Background {
            let mut child = command
                .current_dir(s.dir())
                .env_remove("BURROW_LOG")
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let stdout = child.stdout.take().unwrap();
            let (send, lines) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    if send.send(line).is_err() {
                        break;
                    }
                }
            });
            Background {
                child,
                lines,
                seen: Vec::new(),
            }
        }

        /// Waits for a stdout line holding `text` (a bound on a hang, not a timing assertion).
        fn wait_for(&mut self, text: &str) {
            let deadline = Instant::now() + Duration::from_secs(120);
            while !self.seen.iter().any(|l| l.contains(text)) {
                let left = deadline.saturating_duration_since(Instant::now());
                match self.lines.recv_timeout(left) {
                    Ok(line) => self.seen.push(line),
                    Err(_) => panic!("no line with {text}: {:?}", self.seen),
                }
            }
        }

        fn signal(&self, name: &str) {
            let sent = Command::new("kill")
                .args([name, &self.child.id().to_string()])
                .status()
                .unwrap();
            assert!(sent.success());
        }

        fn wait(mut self) -> i32 {
            let status = self.child.wait().unwrap();
            status.code().unwrap_or(-1)
        }
    }

    /// The run's script: a server child spawned, then a call that holds until signalled.
    fn held_call() -> [Value; 3] {
        [
            json!({"tool_calls": [{"id": "c", "name": "mcp__fx__spawn_child", "arguments": {}}]}),
            json!({"tool_calls": [{"id": "z", "name": "mcp__fx__sleep", "arguments": {"seconds": 300}}]}),
            json!({"text": "never reached"}),
        ]
    }

    #[test]
    fn sigterm_and_sighup_during_a_call_leave_no_server_running() {
        for (signal, code) in [("-TERM", 143), ("-HUP", 129)] {
            let s = Setup::new();
            let settings = json!({"mcpServers": {"fx": s.fixture_server()}});
            let args = s.run_args(&held_call(), settings, &[]);
            let mut run = Background::start(&s, &args);
            run.wait_for("\"mcp__fx__sleep\"");
            let pids = s.pids();
            assert_eq!(pids.len(), 2, "the server and its child: {pids:?}");
            assert!(pids.iter().all(|p| alive(p)), "{pids:?}");
            run.signal(signal);
            assert_eq!(run.wait(), code, "{signal}");
            assert!(all_gone(&pids), "left running after {signal}: {pids:?}");
        }
    }

    /// Runs `shell` with bash as the session leader of a new pseudo-terminal
    /// (its controlling process, as in a terminal window), the terminal's
    /// output copied to stdout after a first line `shell PID`.
    const IN_A_TERMINAL: &str = r#"
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.execvp("bash", ["bash", "-c", sys.argv[1]])
print(f"shell {pid}", flush=True)
while True:
    try:
        data = os.read(fd, 65536)
    except OSError:
        break
    if not data:
        break
    sys.stdout.buffer.write(data)
    sys.stdout.flush()
os.waitpid(pid, 0)
"#;

    fn shell_quoted(arg: &str) -> String {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }

    #[test]
    fn sigkill_of_the_run_s_parent_shell_leaves_no_burrow_and_no_server_running() {
        let s = Setup::new();
        let settings = json!({"mcpServers": {"fx": s.fixture_server()}});
        let args = s.run_args(&held_call(), settings, &[]);
        let mut line = vec![shell_quoted(env!("CARGO_BIN_EXE_burrow"))];
        line.extend(args.iter().map(|a| shell_quoted(a)));
        // `; true`: bash waits for burrow instead of becoming it.
        let shell = format!("{}; true", line.join(" "));
        let mut command = Command::new(&s.python);
        command.args(["-c", IN_A_TERMINAL, &shell]);
        let mut terminal = Background::of(&s, command);
        terminal.wait_for("shell ");
        let shell_pid = terminal
            .seen
            .iter()
            .find_map(|l| l.trim().strip_prefix("shell "))
            .unwrap()
            .to_owned();
        terminal.wait_for("\"mcp__fx__sleep\"");
        let children =
            std::fs::read_to_string(format!("/proc/{shell_pid}/task/{shell_pid}/children"))
                .unwrap();
        let burrow: Vec<String> = children.split_whitespace().map(str::to_owned).collect();
        assert_eq!(burrow.len(), 1, "the shell runs burrow: {children:?}");
        let pids = s.pids();
        assert_eq!(pids.len(), 2, "the server and its child: {pids:?}");
        assert!(pids.iter().chain(&burrow).all(|p| alive(p)), "{pids:?}");
        let killed = Command::new("kill")
            .args(["-KILL", &shell_pid])
            .status()
            .unwrap();
        assert!(killed.success());
        // The terminal's controlling process is gone: the kernel hangs it up.
        assert!(all_gone(&burrow), "burrow outlived its shell: {burrow:?}");
        assert!(
            all_gone(&pids),
            "left running after the shell was killed: {pids:?}"
        );
        terminal.wait();
    }

    #[test]
    fn ctrl_c_and_a_second_ctrl_c_during_a_call_leave_no_server_running() {
        // One Ctrl-C: the run stops, then closes its servers.
        let s = Setup::new();
        let settings = json!({"mcpServers": {"fx": s.fixture_server()}});
        let args = s.run_args(&held_call(), settings, &[]);
        let mut run = Background::start(&s, &args);
        run.wait_for("\"mcp__fx__sleep\"");
        let pids = s.pids();
        assert_eq!(pids.len(), 2, "{pids:?}");
        run.signal("-INT");
        run.wait_for("\"run_ended\"");
        assert_eq!(run.wait(), 2);
        assert!(all_gone(&pids), "left running after Ctrl-C: {pids:?}");
        // Two: a background hook holds the stopped run's settling, so the
        // second Ctrl-C ends burrow at once, and the servers go first.
        let s = Setup::new();
        let settings = json!({"mcpServers": {"fx": s.fixture_server()},
            "hooks": {"PostToolUse": [{"matcher": "mcp__fx__spawn_child",
                "hooks": [{"type": "command", "command": "sleep 20", "async": true}]}]}});
        let args = s.run_args(&held_call(), settings, &[]);
        let mut run = Background::start(&s, &args);
        run.wait_for("\"mcp__fx__sleep\"");
        let pids = s.pids();
        assert_eq!(pids.len(), 2, "{pids:?}");
        run.signal("-INT");
        // The held call ends "cancelled"; the run then settles (run_ended comes after).
        run.wait_for("cancelled");
        assert!(pids.iter().all(|p| alive(p)), "still settling: {pids:?}");
        run.signal("-INT");
        assert_eq!(run.wait(), 130);
        assert!(all_gone(&pids), "left running after two Ctrl-Cs: {pids:?}");
    }

    #[test]
    fn a_resumed_run_gets_the_mcp_tools_and_the_approved_call_runs() {
        let s = Setup::new();
        let session = crate::all::support::session_spec(s.dir());
        let answers = [
            json!({"tool_calls": [
                {"id": "e", "name": "mcp__fx__echo", "arguments": {"text": "approved"}}]}),
            json!({"text": "never reached here"}),
        ];
        let settings = json!({"mcpServers": {"fx": s.fixture_server()},
            "permissions": {"ask": ["mcp__fx__echo"]}});
        let paused = s.run(
            &answers,
            settings,
            &["--session", &session, "--thread", "t"],
        );
        paused.assert_code(3);
        let paused_events = events(&paused);
        let request = paused_events
            .iter()
            .find(|e| e["type"] == "request")
            .unwrap_or_else(|| panic!("{paused_events:?}"));
        let request_id = request["request_id"].as_str().unwrap();
        // The resumed segment's model answers from here on (a scripted model starts its file anew).
        let script = s.dir().join("script.jsonl");
        let resumed_answers = [
            json!({"tool_calls": [
                {"id": "z", "name": "mcp__fx__sleep", "arguments": {"seconds": 0}}]}),
            json!({"text": "done"}),
        ];
        let text: String = resumed_answers.iter().map(|a| format!("{a}\n")).collect();
        std::fs::write(&script, text).unwrap();
        let backend = format!("fs:{}", s.dir().join("ws").display());
        let answered = burrow_in(
            s.dir(),
            &[
                "--backend",
                &backend,
                "--json",
                "thread",
                "answer",
                "t",
                "--request",
                request_id,
                "yes",
                "--approve",
                "--session",
                &session,
            ],
            b"",
        );
        answered.assert_code(0);
        let events = events(&answered);
        assert_eq!(result_of(&events, "z")["content"], "slept");
        // The approved call ran in the resumed process (the model is told its result).
        let shown = crate::all::support::show_thread(s.dir(), "t");
        let told: Vec<&Value> = shown["history"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["message"]["role"] == "user")
            .map(|e| &e["message"]["text"])
            .collect();
        assert_eq!(
            told,
            [
                &json!("go"),
                &json!(
                    "I approved the call e (mcp__fx__echo); it ran. Its result:\necho: approved"
                )
            ],
            "{shown}"
        );
        let pids = s.pids();
        assert_eq!(pids.len(), 2, "one server for each process: {pids:?}");
        assert!(all_gone(&pids), "left running: {pids:?}");
    }

    #[test]
    fn subagents_get_the_mcp_tools_their_tool_list_names() {
        let s = Setup::new();
        let agents = s.dir().join("agents");
        std::fs::create_dir(&agents).unwrap();
        for (name, tools, id) in [("scout", "ls, mcp__fx__echo", "ce"), ("plain", "ls", "pe")] {
            let answers = [
                json!({"tool_calls": [
                    {"id": id, "name": "mcp__fx__echo", "arguments": {"text": name}}]}),
                json!({"text": format!("{name} done")}),
            ];
            let text: String = answers.iter().map(|a| format!("{a}\n")).collect();
            std::fs::write(agents.join(format!("{name}.jsonl")), text).unwrap();
            std::fs::write(
                agents.join(format!("{name}.md")),
                format!(
                    "---\nname: {name}\ndescription: The {name}.\nmodel: scripted:{name}.jsonl\ntools: {tools}\n---\nYou echo.\n"
                ),
            )
            .unwrap();
        }
        let task = |id: &str, agent: &str| {
            json!({"id": id, "name": "task", "arguments": {
                "description": "echo", "prompt": "Echo.", "subagent_type": agent}})
        };
        let answers = [
            json!({"tool_calls": [task("t1", "scout")]}),
            json!({"tool_calls": [task("t2", "plain")]}),
            json!({"text": "done"}),
        ];
        let settings = json!({"mcpServers": {"fx": s.fixture_server()}});
        let agents = agents.display().to_string();
        let run = s.run(&answers, settings, &["--agents", &agents]);
        run.assert_code(0);
        let events = events(&run);
        let child_result = |id: &str| {
            events
                .iter()
                .find(|e| {
                    e["type"] == "tool_result" && e["id"] == id && e.get("parent_run_id").is_some()
                })
                .unwrap_or_else(|| panic!("no child result of {id}: {events:?}"))
                .clone()
        };
        let scout = child_result("ce");
        assert_eq!(scout["is_error"], false, "{scout}");
        assert_eq!(scout["content"], "echo: scout");
        let plain = child_result("pe");
        assert_eq!(plain["is_error"], true, "not in its list: {plain}");
        assert!(
            plain["content"].as_str().unwrap().contains("mcp__fx__echo"),
            "{plain}"
        );
        assert_eq!(result_of(&events, "t1")["is_error"], false);
    }

    /// Runs `burrow run --session` on thread `t` calling `tool` (a fixture tool that
    /// counts its calls, then holds), SIGKILLs it while the call is held at the
    /// server, lets the held call go, and runs the thread's next run to its end.
    /// Returns the calls the server counted and the results the thread holds for the call.
    fn kill_mid_call_and_take_over(tool: &str) -> (usize, Vec<String>) {
        let s = Setup::new();
        let session = crate::all::support::session_spec(s.dir());
        let counts = s.dir().join("counts");
        let go = s.dir().join("go");
        let call = json!({"tool_calls": [{"id": "h", "name": tool, "arguments": {
            "counts": counts.display().to_string(), "go": go.display().to_string()}}]});
        let settings = json!({"mcpServers": {"fx": s.fixture_server()}});
        let flags = ["--session", &session, "--thread", "t", "--claim-ttl", "1"];
        let args = s.run_args(&[call, json!({"text": "never"})], settings.clone(), &flags);
        let mut holder = Background::start(&s, &args);
        // A bound on a hang, not a timing assertion.
        let deadline = Instant::now() + Duration::from_secs(120);
        while std::fs::read_to_string(&counts)
            .unwrap_or_default()
            .is_empty()
        {
            assert!(
                Instant::now() < deadline,
                "the call never reached the server"
            );
            assert!(
                holder.child.try_wait().unwrap().is_none(),
                "the run ended before its call was held"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        holder.signal("-KILL");
        assert_eq!(holder.wait(), -1, "killed");
        std::fs::write(&go, b"").unwrap();
        // The next run on the thread takes over the killed run's unanswered call.
        let taker = s.run(&[json!({"text": "taken over"})], settings, &flags);
        taker.assert_code(0);
        let count = std::fs::read_to_string(&counts).unwrap().lines().count();
        let shown = crate::all::support::show_thread(s.dir(), "t");
        let results: Vec<String> = shown["history"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["message"]["role"] == "tool_result" && e["message"]["call_id"] == "h")
            .map(|e| {
                e["message"]["content"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect();
        (count, results)
    }

    #[test]
    fn a_non_idempotent_mcp_call_killed_in_flight_is_outcome_unknown_and_never_called_twice() {
        let (count, results) = kill_mid_call_and_take_over("mcp__fx__hold");
        assert_eq!(count, 1, "the server was called once");
        assert_eq!(results.len(), 1, "{results:?}");
        assert!(
            results[0].contains("The outcome of this call is unknown"),
            "{results:?}"
        );
    }

    #[test]
    fn an_idempotent_mcp_call_killed_in_flight_is_replayed_once() {
        let (count, results) = kill_mid_call_and_take_over("mcp__fx__hold_idempotent");
        assert_eq!(count, 2, "the call was replayed once");
        assert_eq!(results.len(), 1, "{results:?}");
        assert!(results[0].contains("held"), "{results:?}");
        assert!(!results[0].contains("unknown"), "{results:?}");
    }

    /// Pauses a run on thread `thread` at an `ask` for `mcp__fx__echo` (run with
    /// `flags`, its server failing to start once the file `broken` exists), writes
    /// `resumed` as the resumed segment's script and approves the call with
    /// `burrow thread answer`, which gets no MCP flag; with `break_server` the
    /// server is broken between the pause and the answer.
    fn pause_then_answer(
        s: &Setup,
        thread: &str,
        flags: &[&str],
        resumed: &[Value],
        break_server: bool,
    ) -> Run {
        let session = crate::all::support::session_spec(s.dir());
        let broken = s.dir().join("broken");
        let server = json!({"command": "sh", "args": [
                "-c", "if [ -e \"$0\" ]; then exit 1; fi; exec \"$1\" \"$2\"",
                broken.display().to_string(), s.python, fixture()],
            "env": {"PIDFILE": s.pidfile().display().to_string()}});
        let settings = json!({"mcpServers": {"fx": server},
            "permissions": {"ask": ["mcp__fx__echo"]}});
        let answers = [
            json!({"tool_calls": [
                {"id": "e", "name": "mcp__fx__echo", "arguments": {"text": "approved"}}]}),
            json!({"text": "never reached here"}),
        ];
        let mut extra = vec!["--session", &session, "--thread", thread];
        extra.extend_from_slice(flags);
        let paused = s.run(&answers, settings, &extra);
        paused.assert_code(3);
        let paused_events = events(&paused);
        let request = paused_events
            .iter()
            .find(|e| e["type"] == "request")
            .unwrap_or_else(|| panic!("{paused_events:?}"));
        let request_id = request["request_id"].as_str().unwrap().to_owned();
        if break_server {
            std::fs::write(&broken, b"").unwrap();
        }
        let text: String = resumed.iter().map(|a| format!("{a}\n")).collect();
        std::fs::write(s.dir().join("script.jsonl"), text).unwrap();
        let backend = format!("fs:{}", s.dir().join("ws").display());
        burrow_in(
            s.dir(),
            &[
                "--backend",
                &backend,
                "--json",
                "thread",
                "answer",
                thread,
                "--request",
                &request_id,
                "yes",
                "--approve",
                "--session",
                &session,
            ],
            b"",
        )
    }

    #[test]
    fn thread_answer_calls_the_mcp_servers_under_the_run_s_mcp_timeout() {
        let s = Setup::new();
        let resumed = [
            json!({"tool_calls": [
                {"id": "z", "name": "mcp__fx__sleep", "arguments": {"seconds": 30}}]}),
            json!({"text": "done"}),
        ];
        let answered = pause_then_answer(&s, "t", &["--mcp-timeout", "1"], &resumed, false);
        answered.assert_code(0);
        let events = events(&answered);
        let result = result_of(&events, "z");
        assert_eq!(result["is_error"], true, "{result}");
        assert!(
            result["content"]
                .as_str()
                .unwrap()
                .contains("did not answer within 1 s"),
            "the run's --mcp-timeout, not the default 60 s: {result}"
        );
    }

    #[test]
    fn thread_answer_of_a_strict_mcp_run_exits_2_when_a_server_fails() {
        let resumed = [json!({"text": "done"})];
        // Without --strict-mcp the resumed run warns and goes on.
        let lenient = Setup::new();
        let answered = pause_then_answer(&lenient, "t", &[], &resumed, true);
        answered.assert_code(0);
        assert!(
            answered
                .stderr
                .contains("the MCP server \"fx\" is not used"),
            "{}",
            answered.stderr
        );
        // With it (recorded by the run, not given again), nothing runs.
        let strict = Setup::new();
        let answered = pause_then_answer(&strict, "t", &["--strict-mcp"], &resumed, true);
        answered.assert_code(2);
        assert!(
            answered
                .stderr
                .contains("the MCP server \"fx\" is not used")
                && answered.stderr.contains("(--strict-mcp)"),
            "{}",
            answered.stderr
        );
        assert!(answered.out().is_empty(), "nothing ran: {}", answered.out());
    }

    #[test]
    fn plan_mode_runs_an_mcp_tool_annotated_read_only_and_withholds_the_others() {
        let s = Setup::new();
        let answers = [
            json!({"tool_calls": [
                {"id": "e", "name": "mcp__fx__echo", "arguments": {"text": "hi"}},
                {"id": "d", "name": "mcp__fx__spawn_child", "arguments": {}}]}),
            json!({"text": "done"}),
        ];
        let settings = json!({"mcpServers": {"fx": s.fixture_server()}});
        let run = s.run(&answers, settings, &["--permission-mode", "plan"]);
        run.assert_code(0);
        let events = events(&run);
        // readOnlyHint: offered, and the plan-mode check lets it run (ADR 0365).
        let echo = result_of(&events, "e");
        assert_eq!(echo["is_error"], false, "{echo}");
        assert_eq!(echo["content"], "echo: hi");
        // No annotation: it may change something, so it is not offered.
        let spawn = result_of(&events, "d");
        assert_eq!(spawn["is_error"], true, "{spawn}");
        assert!(
            spawn["content"].as_str().unwrap().starts_with(
                "There is no tool named \"mcp__fx__spawn_child\" (plan mode offers no tool that changes anything)"
            ),
            "{spawn}"
        );
        let pids = s.pids();
        assert_eq!(pids.len(), 1, "no child was spawned: {pids:?}");
    }

    #[test]
    fn subagents_in_plan_mode_are_not_offered_changing_tools() {
        let s = Setup::new();
        let agents = s.dir().join("agents");
        std::fs::create_dir(&agents).unwrap();
        let counts = s.dir().join("counts").display().to_string();
        let go = s.dir().join("go").display().to_string();
        let answers = [
            json!({"tool_calls": [
                {"id": "cw", "name": "write_file", "arguments": {"file_path": "/a.txt", "content": "x"}},
                {"id": "ch", "name": "mcp__fx__hold", "arguments": {"counts": counts, "go": go}},
                {"id": "cl", "name": "ls", "arguments": {"path": "/"}}]}),
            json!({"text": "child done"}),
        ];
        let text: String = answers.iter().map(|a| format!("{a}\n")).collect();
        std::fs::write(agents.join("planner.jsonl"), text).unwrap();
        std::fs::write(
            agents.join("planner.md"),
            "---\nname: planner\ndescription: The planner.\nmodel: scripted:planner.jsonl\ntools: ls, write_file, mcp__fx__hold\n---\nYou plan.\n",
        )
        .unwrap();
        let answers = [
            json!({"tool_calls": [{"id": "t1", "name": "task", "arguments": {
                "description": "plan", "prompt": "Plan.", "subagent_type": "planner"}}]}),
            json!({"text": "done"}),
        ];
        let settings = json!({"mcpServers": {"fx": s.fixture_server()}});
        let agents = agents.display().to_string();
        let run = s.run(
            &answers,
            settings,
            &["--agents", &agents, "--permission-mode", "plan"],
        );
        run.assert_code(0);
        let events = events(&run);
        let child_result = |id: &str| {
            events
                .iter()
                .find(|e| {
                    e["type"] == "tool_result" && e["id"] == id && e.get("parent_run_id").is_some()
                })
                .unwrap_or_else(|| panic!("no child result of {id}: {events:?}"))
                .clone()
        };
        for (id, name) in [("cw", "write_file"), ("ch", "mcp__fx__hold")] {
            let result = child_result(id);
            assert_eq!(result["is_error"], true, "{result}");
            let text = result["content"].as_str().unwrap();
            assert!(
                text.starts_with(&format!(
                    "There is no tool named \"{name}\" (plan mode offers no tool that changes anything)"
                )),
                "not offered, not refused by a hook: {text}"
            );
        }
        assert_eq!(child_result("cl")["is_error"], false, "reads run");
        assert_eq!(
            result_of(&events, "t1")["is_error"],
            false,
            "task runs in plan mode"
        );
        assert!(!s.dir().join("ws/a.txt").exists());
        assert!(
            !s.dir().join("counts").exists(),
            "the server was never called"
        );
    }

    #[test]
    fn variables_in_mcp_servers_entries_are_expanded_and_an_unset_one_is_a_warning() {
        let s = Setup::new();
        let answers = [
            json!({"tool_calls": [
                {"id": "e", "name": "mcp__fx__echo", "arguments": {"text": "expanded"}}]}),
            json!({"text": "done"}),
        ];
        // No such variables are set: the defaults start the fixture.
        let server = json!({"command": format!("${{BURROW_TEST_NO_SUCH_PYTHON:-{}}}", s.python),
            "args": [format!("${{BURROW_TEST_NO_SUCH_FIXTURE:-{}}}", fixture())],
            "env": {"PIDFILE": s.pidfile().display().to_string(),
                    "TOKEN": "${BURROW_TEST_NO_SUCH_TOKEN}"}});
        let run = s.run(&answers, json!({"mcpServers": {"fx": server}}), &[]);
        run.assert_code(0);
        assert_eq!(result_of(&events(&run), "e")["content"], "echo: expanded");
        assert!(
            run.stderr.contains(
                "burrow: warning: the MCP server \"fx\" names the variable ${BURROW_TEST_NO_SUCH_TOKEN}, which is not set and has no default"
            ),
            "{}",
            run.stderr
        );
    }
}

/// `burrow mcp --backend fs:OTHER` itself as the stdio MCP server of a run: its
/// tools are offered as `mcp__other__read_file` and friends and work on the other
/// workspace, not the run's.
#[test]
fn burrow_mcp_itself_serves_another_workspace_as_mcp_other_tools() {
    use serde_json::json;
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("other");
    let ws = dir.path().join("ws");
    std::fs::create_dir(&other).unwrap();
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(other.join("note.txt"), "from the other workspace\n").unwrap();
    let settings = dir.path().join("settings.json");
    std::fs::write(
        &settings,
        json!({"mcpServers": {"other": {"command": env!("CARGO_BIN_EXE_burrow"),
            "args": ["--backend", format!("fs:{}", other.display()), "mcp"]}}})
        .to_string(),
    )
    .unwrap();
    let model = crate::all::support::script(
        dir.path(),
        "m.jsonl",
        &[
            json!({"tool_calls": [
                {"id": "r", "name": "mcp__other__read_file", "arguments": {"file_path": "/note.txt"}},
                {"id": "l", "name": "mcp__other__ls", "arguments": {"path": "/"}},
                {"id": "w", "name": "mcp__other__write_file",
                 "arguments": {"file_path": "/made.txt", "content": "made\n"}}]}),
            json!({"text": "done"}),
        ],
    );
    let backend = format!("fs:{}", ws.display());
    let run = crate::all::support::burrow_in(
        dir.path(),
        &[
            "--backend",
            &backend,
            "--json",
            "run",
            "go",
            "--model",
            &model,
            "--settings",
            settings.to_str().unwrap(),
        ],
        b"",
    );
    run.assert_code(0);
    let events = crate::all::support::json_lines(&run);
    let result = |id: &str| crate::all::support::tool_result(&events, id);
    let read = result("r");
    assert_eq!(read["is_error"], false, "{read}");
    assert!(
        read["content"]
            .as_str()
            .unwrap()
            .contains("from the other workspace"),
        "{read}"
    );
    let listed = result("l");
    assert_eq!(listed["is_error"], false, "{listed}");
    assert!(listed["content"].as_str().unwrap().contains("note.txt"));
    assert_eq!(result("w")["is_error"], false);
    assert_eq!(
        std::fs::read_to_string(other.join("made.txt")).unwrap(),
        "made\n"
    );
    assert!(
        !ws.join("made.txt").exists(),
        "the run's own workspace is untouched"
    );
}
