//! `burrow run --settings` with `mcpServers`: the official Python SDK's server (burrow-runtime's fixture) offered as `mcp__SERVER__TOOL` tools, under the permission rules, stopped after the run; a server that fails is a warning, or with `--strict-mcp` exit 2 before anything runs.
//!
//! Needs Python with the `mcp` package (`burrow_testkit::Part::McpClient`);
//! the tests are in `mcp_client` so a missing SDK is reported as skipped.

mod mcp_client {
    use std::path::{Path, PathBuf};

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
            let script = self.dir().join("script.jsonl");
            let text: String = answers.iter().map(|a| format!("{a}\n")).collect();
            std::fs::write(&script, text).unwrap();
            let path = self.dir().join("settings.json");
            std::fs::write(&path, settings.to_string()).unwrap();
            let backend = format!("fs:{}", self.dir().join("ws").display());
            let model = format!("scripted:{}", script.display());
            let mut args = vec![
                "--backend",
                &backend,
                "--json",
                "run",
                "go",
                "--model",
                &model,
                "--settings",
                path.to_str().unwrap(),
            ];
            args.extend_from_slice(extra);
            burrow_in(self.dir(), &args, b"")
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
            json!({"text": "done"}),
        ];
        let settings = json!({"mcpServers": {"fx": s.fixture_server()}});
        let started = std::time::Instant::now();
        let run = s.run(&answers, settings, &["--mcp-timeout", "1"]);
        run.assert_code(0);
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
        let events = events(&run);
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
}
