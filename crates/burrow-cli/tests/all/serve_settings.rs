//! `burrow serve --settings` and `burrow thread compact --settings` through the binary: several files layered in order as for `burrow run` (ADR 0318); `burrow serve` starts the settings' MCP servers once, offers their tools to every run under the same hooks and rules, a dead server's calls fail, SIGTERM stops them and SIGHUP kills them (ADR 0366); `--strict-mcp` exits 2 before serving.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::support::{burrow_in, script, session_spec, show_thread};

/// A `burrow serve` child on the folder's SQLite session, killed when dropped.
struct Served {
    child: Child,
    base: String,
    token: String,
    dir: PathBuf,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Served {
    /// Starts `burrow serve` in `dir` with `model` and `extra` flags, once it listens.
    fn start(dir: &Path, model: &str, extra: &[&str]) -> Served {
        let tokens = dir.join("tokens");
        let add = burrow_in(
            dir,
            &[
                "serve",
                "token",
                "add",
                "--tokens",
                tokens.to_str().unwrap(),
                "--name",
                "alice",
            ],
            b"",
        );
        add.assert_code(0);
        let token = add.out().trim().to_owned();
        let mut child = Command::new(env!("CARGO_BIN_EXE_burrow"))
            .args([
                "serve",
                "--session",
                &session_spec(dir),
                "--model",
                model,
                "--tokens",
                tokens.to_str().unwrap(),
                "--listen",
                "127.0.0.1:0",
            ])
            .args(extra)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut base = None;
        let mut seen = String::new();
        while base.is_none() {
            let mut line = String::new();
            if stderr.read_line(&mut line).unwrap() == 0 {
                panic!("burrow serve ended before listening: {seen}");
            }
            seen.push_str(&line);
            base = line
                .trim()
                .strip_prefix("burrow: serving on ")
                .map(str::to_owned);
        }
        Served {
            child,
            base: base.unwrap(),
            token,
            dir: dir.to_path_buf(),
        }
    }

    /// Posts `content` to `thread` and waits until its last run has ended; the thread's history.
    fn run(&self, thread: &str, content: &str) -> Vec<Value> {
        let client = reqwest::blocking::Client::new();
        let posted: Value = client
            .post(format!("{}/v1/threads/{thread}/messages", self.base))
            .bearer_auth(&self.token)
            .json(&json!({ "content": content }))
            .send()
            .unwrap()
            .json()
            .unwrap();
        assert_eq!(posted["action"], "started", "{posted}");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let view: Value = client
                .get(format!("{}/v1/threads/{thread}", self.base))
                .bearer_auth(&self.token)
                .send()
                .unwrap()
                .json()
                .unwrap();
            let runs = view["runs"].as_array().cloned().unwrap_or_default();
            if runs
                .last()
                .is_some_and(|r| r["status"] != "running" && r["status"] != "pending")
            {
                assert_eq!(runs.last().unwrap()["status"], "completed", "{view}");
                break;
            }
            assert!(Instant::now() < deadline, "{view}");
            std::thread::sleep(Duration::from_millis(50));
        }
        show_thread(&self.dir, thread)["history"]
            .as_array()
            .unwrap()
            .clone()
    }

    /// Sends SIGTERM and returns the exit code.
    fn terminate(self) -> Option<i32> {
        self.signal("-TERM")
    }

    /// Sends `signal` (`-TERM`, `-HUP`) and returns the exit code.
    fn signal(mut self, signal: &str) -> Option<i32> {
        let sent = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        self.child.wait().unwrap().code()
    }
}

/// The result of the call `id` in `history`.
fn result_of<'a>(history: &'a [Value], id: &str) -> &'a Value {
    history
        .iter()
        .map(|e| &e["message"])
        .find(|m| m["role"] == "tool_result" && m["call_id"] == id)
        .unwrap_or_else(|| panic!("no result of {id}: {history:?}"))
}

fn write(dir: &Path, name: &str, value: &Value) -> String {
    let path = dir.join(name);
    std::fs::write(&path, value.to_string()).unwrap();
    path.display().to_string()
}

#[test]
fn serve_layers_several_settings_files_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let deny = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
        "permissionDecision": "deny", "permissionDecisionReason": "no listing from the first file"}});
    std::fs::write(dir.path().join("deny.json"), deny.to_string()).unwrap();
    let first = write(
        dir.path(),
        "first.json",
        &json!({"hooks": {"PreToolUse": [{"matcher": "ls",
            "hooks": [{"type": "command", "command": "cat deny.json"}]}]}}),
    );
    let second = write(
        dir.path(),
        "second.json",
        &json!({"permissions": {"deny": ["Edit(/locked/**)"]}}),
    );
    let model = script(
        dir.path(),
        "m.jsonl",
        &[
            json!({"tool_calls": [
                {"id": "l", "name": "ls", "arguments": {"path": "/"}},
                {"id": "w", "name": "write_file", "arguments": {"file_path": "/locked/a.txt", "content": "x"}},
                {"id": "o", "name": "write_file", "arguments": {"file_path": "/open.txt", "content": "y"}}]}),
            json!({"text": "done"}),
        ],
    );
    let served = Served::start(
        dir.path(),
        &model,
        &["--settings", &first, "--settings", &second],
    );
    let history = served.run("t1", "go");
    let listed = result_of(&history, "l");
    assert_eq!(listed["is_error"], true, "{listed}");
    assert!(
        listed["content"]
            .as_str()
            .unwrap()
            .contains("no listing from the first file"),
        "{listed}"
    );
    let locked = result_of(&history, "w");
    assert_eq!(locked["is_error"], true, "{locked}");
    assert!(
        locked["content"]
            .as_str()
            .unwrap()
            .contains("Edit(/locked/**)"),
        "{locked}"
    );
    assert_eq!(result_of(&history, "o")["is_error"], false);
    assert_eq!(served.terminate(), Some(0));
}

#[test]
fn serve_with_strict_mcp_exits_2_before_serving_when_a_server_fails() {
    let dir = tempfile::tempdir().unwrap();
    let settings = write(
        dir.path(),
        "settings.json",
        &json!({"mcpServers": {"broken": {"command": dir.path().join("no-such-server").display().to_string()}}}),
    );
    let model = script(dir.path(), "m.jsonl", &[json!({"text": "hi"})]);
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, "").unwrap();
    let run = burrow_in(
        dir.path(),
        &[
            "serve",
            "--session",
            &session_spec(dir.path()),
            "--model",
            &model,
            "--tokens",
            tokens.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
            "--settings",
            &settings,
            "--strict-mcp",
        ],
        b"",
    );
    run.assert_code(2);
    assert!(
        run.stderr.contains("\"broken\"") && run.stderr.contains("--strict-mcp"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("serving on"), "{}", run.stderr);
    // Nothing was opened.
    assert!(!dir.path().join("session.db").exists());
}

#[test]
fn thread_compact_layers_several_settings_files_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let model = script(
        dir.path(),
        "m.jsonl",
        &[json!({"text": "one"}), json!({"text": "two"})],
    );
    let session = session_spec(dir.path());
    for prompt in ["first", "second"] {
        burrow_in(
            dir.path(),
            &[
                "run",
                prompt,
                "--model",
                &model,
                "--session",
                &session,
                "--thread",
                "t1",
            ],
            b"",
        )
        .assert_code(0);
    }
    let first = write(
        dir.path(),
        "first.json",
        &json!({"hooks": {"PreCompact": [{"matcher": "manual",
            "hooks": [{"type": "command", "command": "touch first-ran"}]}]}}),
    );
    let second = write(
        dir.path(),
        "second.json",
        &json!({"hooks": {"PreCompact": [{"matcher": "manual",
            "hooks": [{"type": "command", "command": "echo 'the second file says no' >&2; exit 2"}]}]}}),
    );
    let before = show_thread(dir.path(), "t1");
    let run = burrow_in(
        dir.path(),
        &[
            "--json",
            "thread",
            "compact",
            "t1",
            "--session",
            &session,
            "--keep",
            "1",
            "--settings",
            &first,
            "--settings",
            &second,
        ],
        b"",
    );
    let message = run.assert_json_error(1, "blocked");
    assert!(message.contains("the second file says no"), "{message}");
    assert!(
        dir.path().join("first-ran").exists(),
        "the first file's hook ran"
    );
    // A blocked compaction changed nothing.
    assert_eq!(show_thread(dir.path(), "t1"), before);
}

/// `burrow serve` with the official Python SDK's fixture server as an MCP
/// server (`burrow_testkit::Part::McpClient`).
mod mcp_client {
    use super::*;

    /// burrow-runtime's fixture server as the `mcpServers` entry `fx`, writing
    /// its pid and its children's to `dir/pids`; and that file.
    fn fixture_servers(dir: &Path) -> (Value, PathBuf) {
        let python = burrow_testkit::require(burrow_testkit::Part::McpClient);
        let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../burrow-runtime/tests/fixtures/mcp/server.py");
        let pidfile = dir.join("pids");
        let servers = json!({"fx": {"command": python, "args": [fixture.display().to_string()],
            "env": {"PIDFILE": pidfile.display().to_string()}}});
        (servers, pidfile)
    }

    fn alive(pid: &str) -> bool {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        !stat.is_empty() && !stat.contains(") Z ")
    }

    #[test]
    fn serve_starts_the_mcp_servers_once_for_every_run_and_sigterm_stops_them() {
        let dir = tempfile::tempdir().unwrap();
        let (servers, pidfile) = fixture_servers(dir.path());
        let servers = write(
            dir.path(),
            "servers.json",
            &json!({"mcpServers": servers,
                "hooks": {"PreToolUse": [{"matcher": "mcp__fx__.*",
                    "hooks": [{"type": "command", "command": "cat >> hooked.jsonl; echo >> hooked.jsonl"}]}]}}),
        );
        let rules = write(
            dir.path(),
            "rules.json",
            &json!({"permissions": {"deny": ["mcp__fx__fail"]}}),
        );
        let model = script(
            dir.path(),
            "m.jsonl",
            &[
                // The first run.
                json!({"tool_calls": [
                    {"id": "e1", "name": "mcp__fx__echo", "arguments": {"text": "hi"}},
                    {"id": "f1", "name": "mcp__fx__fail", "arguments": {"why": "no"}}]}),
                json!({"text": "one"}),
                // The second run, on another thread: the same server; then it dies.
                json!({"tool_calls": [
                    {"id": "e2", "name": "mcp__fx__echo", "arguments": {"text": "again"}}]}),
                json!({"tool_calls": [{"id": "d2", "name": "mcp__fx__die", "arguments": {}}]}),
                json!({"tool_calls": [
                    {"id": "x2", "name": "mcp__fx__echo", "arguments": {"text": "gone"}}]}),
                json!({"text": "two"}),
            ],
        );
        let served = Served::start(
            dir.path(),
            &model,
            &["--settings", &servers, "--settings", &rules],
        );
        let history = served.run("t1", "first");
        let echo = result_of(&history, "e1");
        assert_eq!(echo["is_error"], false, "{echo}");
        assert_eq!(echo["content"], "echo: hi");
        // The second file's rule holds for the first file's server.
        let denied = result_of(&history, "f1");
        assert_eq!(denied["is_error"], true, "{denied}");
        assert!(
            denied["content"]
                .as_str()
                .unwrap()
                .contains("permission rule mcp__fx__fail"),
            "{denied}"
        );
        let pids = std::fs::read_to_string(&pidfile).unwrap();
        assert_eq!(pids.lines().count(), 1, "one server: {pids}");
        let pid = pids.trim().to_owned();

        let history = served.run("t2", "second");
        assert_eq!(result_of(&history, "e2")["content"], "echo: again");
        assert_eq!(
            std::fs::read_to_string(&pidfile).unwrap().lines().count(),
            1,
            "started once, not per run"
        );
        assert_eq!(result_of(&history, "d2")["is_error"], true);
        // The dead server's calls fail; it is not restarted.
        let gone = result_of(&history, "x2");
        assert_eq!(gone["is_error"], true, "{gone}");
        assert_eq!(
            std::fs::read_to_string(&pidfile).unwrap().lines().count(),
            1,
            "not restarted"
        );
        // The hook matching mcp__fx__.* saw every call of the server's tools.
        let hooked = std::fs::read_to_string(dir.path().join("hooked.jsonl")).unwrap();
        let names: Vec<String> = hooked
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str::<Value>(l).unwrap()["tool_name"].to_string())
            .collect();
        assert_eq!(
            names,
            [
                "\"mcp__fx__echo\"",
                "\"mcp__fx__echo\"",
                "\"mcp__fx__die\"",
                "\"mcp__fx__echo\""
            ],
            "{hooked}"
        );
        assert!(!alive(&pid), "the server died with its die call");
        assert_eq!(served.terminate(), Some(0));
    }

    #[test]
    fn sigterm_of_serve_stops_its_mcp_servers() {
        stopped_by("-TERM", 0);
    }

    #[test]
    fn sighup_of_serve_kills_its_mcp_servers() {
        stopped_by("-HUP", 129);
    }

    /// Serves one run that makes the fixture server start a child, sends
    /// `signal` and expects `code`, with the server and its child gone.
    fn stopped_by(signal: &str, code: i32) {
        let dir = tempfile::tempdir().unwrap();
        let (servers, pidfile) = fixture_servers(dir.path());
        let servers = write(
            dir.path(),
            "servers.json",
            &json!({ "mcpServers": servers }),
        );
        let model = script(
            dir.path(),
            "m.jsonl",
            &[
                json!({"tool_calls": [{"id": "c", "name": "mcp__fx__spawn_child", "arguments": {}}]}),
                json!({"text": "done"}),
            ],
        );
        let served = Served::start(dir.path(), &model, &["--settings", &servers]);
        let history = served.run("t1", "go");
        assert_eq!(result_of(&history, "c")["content"], "spawned");
        let pids: Vec<String> = std::fs::read_to_string(&pidfile)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect();
        assert_eq!(pids.len(), 2, "the server and its child: {pids:?}");
        assert!(pids.iter().all(|p| alive(p)), "{pids:?}");
        assert_eq!(served.signal(signal), Some(code));
        let deadline = Instant::now() + Duration::from_secs(5);
        while pids.iter().any(|p| alive(p)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(
            pids.iter().all(|p| !alive(p)),
            "left running after {signal}: {pids:?}"
        );
    }
}
