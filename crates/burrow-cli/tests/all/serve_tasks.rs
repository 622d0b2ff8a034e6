//! `burrow serve --agents DIR` and `--artifacts DIR` through the binary and a real HTTP client (ADR 0405): a served run's `task` child runs in the thread `THREAD/task-CALL` of the token's tenant, answers, and is among the thread view's children, its doings in the run's event stream with `run_id` and `parent_run_id`; stopping the served run stops its child and no model request follows; the served agent edits an artifact of its tenant's workspace, attributed to `thread:ID`, and behind the settings' deny rules.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

#[cfg(feature = "openai")]
use super::run_tasks::chat;
use super::run_tasks::{agent, task_call};
use super::serve::spawn_serve_env;
use super::support::{burrow_in, script, session_spec};

/// How long a test waits for the server before it fails.
const PATIENCE: Duration = Duration::from_secs(60);

/// A `burrow serve` child with a token of the tenant `acme`, killed when dropped.
struct Served {
    child: Child,
    base: String,
    token: String,
    client: reqwest::blocking::Client,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Served {
    /// `burrow serve` on the folder's SQLite session with `model` and `extra` flags.
    fn start(dir: &Path, model: &str, extra: &[&str], envs: &[(&str, &str)]) -> Served {
        let tokens = dir.join("tokens");
        let add = burrow_in(
            dir,
            &[
                "--tenant",
                "acme",
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
        let session = session_spec(dir);
        let mut args = vec![
            "serve",
            "--session",
            session.as_str(),
            "--model",
            model,
            "--tokens",
            tokens.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ];
        args.extend_from_slice(extra);
        let (child, base) = spawn_serve_env(dir, &args, envs);
        Served {
            child,
            base,
            token: add.out().trim().to_owned(),
            client: reqwest::blocking::Client::builder()
                .timeout(Duration::from_secs(120))
                .build()
                .unwrap(),
        }
    }

    fn get(&self, path: &str) -> Value {
        let response = self
            .client
            .get(format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .send()
            .unwrap();
        assert_eq!(response.status().as_u16(), 200, "GET {path}");
        response.json().unwrap()
    }

    fn post(&self, path: &str, body: Value) -> Value {
        let response = self
            .client
            .post(format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .json(&body)
            .send()
            .unwrap();
        assert!(
            response.status().is_success(),
            "POST {path}: {}",
            response.status()
        );
        response.json().unwrap()
    }

    /// The thread's view once `done` says it is, else a failure after the patience.
    fn view_when(&self, thread: &str, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let view = self.get(&format!("/v1/threads/{}", encode(thread)));
            if done(&view) {
                return view;
            }
            assert!(Instant::now() < deadline, "{view}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A thread that reads the run's live events (`event` name and JSON data), up
    /// to and with `end`, once attached.
    fn watch(&self, run: &str) -> std::thread::JoinHandle<Vec<(String, Value)>> {
        let request = self
            .client
            .get(format!("{}/v1/runs/{run}/events", self.base))
            .bearer_auth(&self.token);
        let response = request.send().unwrap();
        std::thread::spawn(move || events(response))
    }
}

/// The live events of `response` (`event` name and JSON data), up to and with `end`.
fn events(response: reqwest::blocking::Response) -> Vec<(String, Value)> {
    assert_eq!(response.status().as_u16(), 200);
    let mut reader = BufReader::new(response);
    let mut seen = Vec::new();
    let (mut name, mut data) = (None::<String>, String::new());
    loop {
        let mut line = String::new();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "the stream ended before its end event: {seen:?}"
        );
        let line = line.trim_end_matches(['\r', '\n']);
        if let Some(v) = line.strip_prefix("event:") {
            name = Some(v.trim().to_owned());
        } else if let Some(v) = line.strip_prefix("data:") {
            data.push_str(v.trim_start());
        } else if line.is_empty()
            && let Some(name) = name.take()
        {
            let value: Value = serde_json::from_str(&std::mem::take(&mut data)).unwrap();
            let end = name == "end";
            seen.push((name, value));
            if end {
                return seen;
            }
        }
    }
}

/// A thread id as a path segment (a child's holds a `/`).
fn encode(thread: &str) -> String {
    thread.replace('/', "%2F")
}

/// `DIR/agents/scout.md`, its model the script `DIR/agents/scout.jsonl` of `answers`;
/// the folder's path.
fn scout(dir: &Path, answers: &[Value]) -> String {
    agent(dir, "scout", "", "You look around.", answers);
    dir.join("agents").display().to_string()
}

/// Settings whose PreToolUse hook holds calls of `tool` until the file `go` exists
/// (touching `started` first).
fn hold(dir: &Path, tool: &str) -> String {
    let settings = dir.join("hold.json");
    let hook = json!({"hooks": {"PreToolUse": [{"matcher": tool, "hooks": [
        {"type": "command", "command": "touch started; while [ ! -e go ]; do sleep 0.01; done"}
    ]}]}});
    std::fs::write(&settings, hook.to_string()).unwrap();
    settings.display().to_string()
}

fn held(dir: &Path) {
    let deadline = Instant::now() + PATIENCE;
    while !dir.join("started").exists() {
        assert!(Instant::now() < deadline, "the hook never held a call");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_served_task_s_child_answers_in_its_thread_and_is_among_the_children() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let agents = scout(d, &[json!({"text": "child report"})]);
    let model = script(
        d,
        "parent.jsonl",
        &[
            json!({"tool_calls": [task_call("t1", "scout", "Look.")]}),
            json!({"text": "parent done"}),
        ],
    );
    // The parent's task call waits for `go`, so the test watches the run from its start.
    let settings = hold(d, "task");
    let s = Served::start(
        d,
        &model,
        &["--agents", &agents, "--settings", &settings],
        &[],
    );
    let posted = s.post("/v1/threads/p/messages", json!({"content": "go"}));
    assert_eq!(posted["action"], "started", "{posted}");
    let run = posted["run_id"].as_str().unwrap().to_owned();
    held(d);
    // The watcher is attached (its response's headers came) before the call goes on.
    let watcher = s.watch(&run);
    std::fs::write(d.join("go"), b"").unwrap();
    let events = watcher.join().unwrap();

    let (_, end) = events.last().unwrap();
    assert_eq!(end["outcome"], "completed", "{events:?}");
    let started = events
        .iter()
        .find(|(name, _)| name == "task_started")
        .unwrap_or_else(|| panic!("no task_started: {events:?}"));
    let child_run = started.1["run_id"].as_str().unwrap().to_owned();
    assert_eq!(started.1["type"], "task_started");
    assert_eq!(started.1["parent_run_id"], run.as_str());
    assert_eq!(started.1["thread_id"], "p/task-t1");
    assert_eq!(started.1["subagent_type"], "scout");
    // The child's own frames: its run id, the parent's, as `burrow run --json` has them.
    let text: String = events
        .iter()
        .filter(|(name, data)| name == "task_frame" && data["type"] == "text_delta")
        .inspect(|(_, data)| {
            assert_eq!(data["run_id"], child_run.as_str());
            assert_eq!(data["parent_run_id"], run.as_str());
        })
        .map(|(_, data)| data["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(text, "child report", "{events:?}");
    let ended = events
        .iter()
        .find(|(name, _)| name == "task_ended")
        .unwrap_or_else(|| panic!("no task_ended: {events:?}"));
    assert_eq!(ended.1["outcome"], "completed");
    assert_eq!(ended.1["run_id"], child_run.as_str());
    // The parent's text is its own; the task's result is the child's report.
    let parent_text: String = events
        .iter()
        .filter(|(name, _)| name == "text_delta")
        .map(|(_, data)| data["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(parent_text, "parent done");
    let result = events
        .iter()
        .find(|(name, data)| name == "tool_result" && data["id"] == "t1")
        .unwrap_or_else(|| panic!("no result of t1: {events:?}"));
    assert_eq!(result.1["is_error"], false);
    assert!(
        result.1["content"]
            .as_str()
            .unwrap()
            .starts_with("child report"),
        "{result:?}"
    );

    // The thread view lists the child, in the token's tenant.
    let view = s.view_when("p", |v| v["runs"][0]["status"] == "completed");
    let children = view["children"].as_array().unwrap();
    assert_eq!(children.len(), 1, "{view}");
    assert_eq!(children[0]["thread"], "p/task-t1");
    assert_eq!(children[0]["parent"], "p");
    assert_eq!(children[0]["subagent"], "scout");
    assert_eq!(children[0]["call_id"], "t1");
    assert_eq!(children[0]["parent_run_id"], run.as_str());
    assert_eq!(children[0]["run_id"], child_run.as_str());
    assert_eq!(children[0]["outcome"], "completed");
    let child = s.get("/v1/threads/p%2Ftask-t1");
    let history = child["history"].to_string();
    assert!(history.contains("Look."), "{child}");
    assert!(history.contains("child report"), "{child}");
    assert!(
        !history.contains("\"go\""),
        "the child saw the parent's conversation: {child}"
    );
    // The child is acme's, not the default tenant's.
    let session = session_spec(d);
    let other = burrow_in(
        d,
        &[
            "--json",
            "thread",
            "show",
            "p/task-t1",
            "--session",
            &session,
        ],
        b"",
    );
    other.assert_code(1);
    let acme = burrow_in(
        d,
        &[
            "--json",
            "--tenant",
            "acme",
            "thread",
            "show",
            "p/task-t1",
            "--session",
            &session,
        ],
        b"",
    );
    acme.assert_code(0);
}

/// `POST /v1/threads/p/stop` while the served run's child is in a tool call its
/// PreToolUse hook holds: the parent and the child both end stopped, the child's call
/// ends cancelled, and the model server (parent and child share it) gets no request after.
#[cfg(feature = "openai")]
#[test]
fn stopping_a_served_run_stops_its_child_and_no_model_request_follows() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let server = burrow_testkit::http::ReplayServer::start([
        chat(
            None,
            Some((
                "t1",
                "task",
                task_call("t1", "scout", "Look.")["arguments"].clone(),
            )),
        ),
        chat(None, Some(("c1", "ls", json!({"path": "/"})))),
        chat(Some("child never says this"), None),
        chat(Some("parent never says this"), None),
    ]);
    let agents = d.join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("scout.md"),
        "---\nname: scout\ndescription: The scout.\n---\nLook.\n",
    )
    .unwrap();
    let settings = hold(d, "ls");
    let url = server.url();
    let s = Served::start(
        d,
        "openai:gpt-test",
        &[
            "--agents",
            agents.to_str().unwrap(),
            "--settings",
            &settings,
        ],
        &[
            ("OPENAI_BASE_URL", url.as_str()),
            ("OPENAI_API_KEY", "sk-test"),
        ],
    );
    let posted = s.post("/v1/threads/p/messages", json!({"content": "go"}));
    assert_eq!(posted["action"], "started", "{posted}");
    held(d);
    assert_eq!(server.request_count(), 2);
    let stopped = s.post("/v1/threads/p/stop", json!({}));
    assert_eq!(stopped["stopped"], true, "{stopped}");
    let parent = s.view_when("p", |v| {
        v["runs"][0]["status"] == "stopped" && v["children"][0]["outcome"] == "stopped"
    });
    // Let a hook process that outlived its call end before the folder goes.
    std::fs::write(d.join("go"), b"").unwrap();
    assert_eq!(parent["children"][0]["thread"], "p/task-t1", "{parent}");
    let child = s.view_when("p/task-t1", |v| v["runs"][0]["status"] == "stopped");
    assert_eq!(child["runs"].as_array().unwrap().len(), 1, "{child}");
    let ls = child["history"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["message"]["role"] == "tool_result" && e["message"]["call_id"] == "c1")
        .unwrap_or_else(|| panic!("no result of c1: {child}"));
    assert_eq!(ls["message"]["is_error"], true, "{ls}");
    assert!(
        ls["message"]["content"]
            .as_str()
            .unwrap()
            .contains("cancelled"),
        "{ls}"
    );
    // Nothing came after the stop, even a while later.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        server.request_count(),
        2,
        "a model request followed the stop"
    );
}

#[cfg(feature = "artifacts")]
/// A kinds folder `d/kinds` with the kind `plan` and one plan ("paint it
/// green") made by alice in the tenant `acme`: the folder and the plan's id.
fn plan_by_alice(d: &Path) -> (std::path::PathBuf, String) {
    let kinds = d.join("kinds");
    std::fs::create_dir(&kinds).unwrap();
    std::fs::write(
        kinds.join("plan.schema.json"),
        json!({"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}})
            .to_string(),
    )
    .unwrap();
    std::fs::write(
        d.join("plan.json"),
        json!({"text": "paint it green"}).to_string(),
    )
    .unwrap();
    let session = session_spec(d);
    let created = burrow_in(
        d,
        &[
            "--json",
            "--tenant",
            "acme",
            "artifact",
            "create",
            "plan",
            "plan.json",
            "--session",
            &session,
            "--artifacts",
            kinds.to_str().unwrap(),
            "--as",
            "alice",
        ],
        b"",
    );
    created.assert_code(0);
    let id = created.json()["artifact"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    (kinds, id)
}

/// `burrow serve --artifacts DIR`: the served agent has the artifact tools in its token's
/// tenant; its edit of a person's artifact is attributed to `thread:p`, and the thread's
/// view lists the artifact it follows.
#[cfg(feature = "artifacts")]
#[test]
fn a_served_agent_edits_an_artifact_as_its_thread() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (kinds, id) = plan_by_alice(d);
    let model = script(
        d,
        "m.jsonl",
        &[
            json!({"tool_calls": [{"id": "e1", "name": "edit_artifact", "arguments": {
                "id": id, "base_version": 1, "old": "green", "new": "blue"}}]}),
            json!({"text": "painted"}),
        ],
    );
    let s = Served::start(d, &model, &["--artifacts", kinds.to_str().unwrap()], &[]);
    let posted = s.post("/v1/threads/p/messages", json!({"content": "make it blue"}));
    assert_eq!(posted["action"], "started", "{posted}");
    let view = s.view_when("p", |v| v["runs"][0]["status"] == "completed");
    let result = view["history"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["message"]["role"] == "tool_result" && e["message"]["call_id"] == "e1")
        .unwrap_or_else(|| panic!("no result of e1: {view}"));
    assert_eq!(result["message"]["is_error"], false, "{result}");
    let shown = s.get(&format!("/v1/artifacts/{id}"));
    assert_eq!(shown["artifact"]["version"], 2, "{shown}");
    assert_eq!(shown["artifact"]["snapshot"]["text"], "paint it blue");
    assert_eq!(
        shown["artifact"]["updated_by"]["name"], "thread:p",
        "{shown}"
    );
    assert_eq!(shown["artifact"]["created_by"]["name"], "alice", "{shown}");
    let followed = view["artifacts"].as_array().unwrap();
    assert_eq!(followed.len(), 1, "{view}");
    assert_eq!(followed[0]["id"], id.as_str());
    assert_eq!(followed[0]["version"], 2);
}

/// `burrow serve --artifacts DIR --settings S`: the served agent's artifact tools work
/// behind the settings' deny rules, as `burrow run`'s do (ADR 0395): an `Edit` deny over
/// the kind refuses the agent's edit naming the rule, and the artifact is unchanged.
#[cfg(feature = "artifacts")]
#[test]
fn the_served_agents_artifact_tools_are_under_the_settings_deny_rules() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (kinds, id) = plan_by_alice(d);
    let settings = d.join("settings.json");
    std::fs::write(
        &settings,
        json!({"permissions": {"deny": ["Edit(/artifacts/plan/**)"]}}).to_string(),
    )
    .unwrap();
    let model = script(
        d,
        "m.jsonl",
        &[
            json!({"tool_calls": [{"id": "e1", "name": "edit_artifact", "arguments": {
                "id": id, "base_version": 1, "old": "green", "new": "blue"}}]}),
            json!({"text": "could not"}),
        ],
    );
    let s = Served::start(
        d,
        &model,
        &[
            "--artifacts",
            kinds.to_str().unwrap(),
            "--settings",
            settings.to_str().unwrap(),
        ],
        &[],
    );
    let posted = s.post("/v1/threads/p/messages", json!({"content": "make it blue"}));
    assert_eq!(posted["action"], "started", "{posted}");
    let view = s.view_when("p", |v| v["runs"][0]["status"] == "completed");
    let result = view["history"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["message"]["role"] == "tool_result" && e["message"]["call_id"] == "e1")
        .unwrap_or_else(|| panic!("no result of e1: {view}"));
    assert_eq!(result["message"]["is_error"], true, "{result}");
    let text = result["message"]["content"].to_string();
    assert!(text.contains("Edit(/artifacts/plan/**)"), "{result}");
    assert!(!text.contains(d.to_str().unwrap()), "{result}");
    let shown = s.get(&format!("/v1/artifacts/{id}"));
    assert_eq!(shown["artifact"]["version"], 1, "{shown}");
    assert_eq!(shown["artifact"]["snapshot"]["text"], "paint it green");
}
