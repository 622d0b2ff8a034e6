//! `burrow serve` through the binary: `serve token add` prints a token once and appends its line; a server on a SQLite session answers that token through reqwest, shares its threads with `burrow thread show`, and shuts down on SIGTERM; `--pg-pool` is refused when 0 or no number, and a server on the real PostgreSQL with it answers; two servers on one PostgreSQL: a run posted to one is watched live on the other, and a SIGKILLed holder's thread is taken over by the other, whose watcher sees the run end abandoned and the next run.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::support::{burrow_in, script, session_spec};

#[test]
fn token_add_prints_a_token_once_and_appends_its_hash_line() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    let tokens_arg = tokens.to_str().unwrap();
    let first = burrow_in(
        dir.path(),
        &[
            "serve", "token", "add", "--tokens", tokens_arg, "--tenant", "acme", "--name", "alice",
        ],
        b"",
    );
    first.assert_code(0);
    let token = first.out().trim().to_owned();
    assert!(token.starts_with("bt_") && token.len() == 67, "{token}");
    let second = burrow_in(
        dir.path(),
        &[
            "--json", "serve", "token", "add", "--tokens", tokens_arg, "--tenant", "beta",
            "--name", "bob",
        ],
        b"",
    );
    second.assert_code(0);
    assert_eq!(second.json()["tenant"], "beta");
    let text = std::fs::read_to_string(&tokens).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(lines[0].ends_with(" acme alice"));
    assert_eq!(lines[0].split(' ').next().unwrap().len(), 64);
    // The token itself is never written down.
    assert!(!text.contains(&token[3..]));
    let bad = burrow_in(
        dir.path(),
        &[
            "serve", "token", "add", "--tokens", tokens_arg, "--tenant", "a b", "--name", "x",
        ],
        b"",
    );
    bad.assert_code(2);
    assert_eq!(std::fs::read_to_string(&tokens).unwrap(), text);
}

#[test]
fn serve_without_tokens_or_session_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let model = script(dir.path(), "m.jsonl", &[json!({"text": "hi"})]);
    let run = burrow_in(
        dir.path(),
        &[
            "serve",
            "--model",
            &model,
            "--session",
            &session_spec(dir.path()),
        ],
        b"",
    );
    run.assert_code(2);
    let empty = dir.path().join("tokens");
    std::fs::write(&empty, "").unwrap();
    let run = burrow_in(
        dir.path(),
        &[
            "serve",
            "--model",
            &model,
            "--session",
            &session_spec(dir.path()),
            "--tokens",
            empty.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ],
        b"",
    );
    run.assert_code(2);
}

#[test]
fn a_pg_pool_of_zero_or_no_number_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let model = script(dir.path(), "m.jsonl", &[json!({"text": "hi"})]);
    let tokens = dir.path().join("tokens");
    for bad in ["0", "many", "-3"] {
        let run = burrow_in(
            dir.path(),
            &[
                "serve",
                "--model",
                &model,
                "--session",
                &session_spec(dir.path()),
                "--tokens",
                tokens.to_str().unwrap(),
                "--listen",
                "127.0.0.1:0",
                &format!("--pg-pool={bad}"),
            ],
            b"",
        );
        run.assert_code(2);
        let first = run.stderr.lines().next().unwrap_or_default();
        assert!(first.starts_with("burrow: "), "{bad}: {}", run.stderr);
        assert!(first.contains("--pg-pool"), "{bad}: {}", run.stderr);
        // Refused before anything was opened.
        assert!(!dir.path().join("session.db").exists(), "{bad}");
    }
}

#[test]
fn a_served_thread_runs_is_shown_by_the_cli_and_sigterm_ends_the_server() {
    let dir = tempfile::tempdir().unwrap();
    served_thread_runs(dir.path(), &session_spec(dir.path()), &[]);
}

/// Needs the real PostgreSQL server (BURROW_POSTGRES_URL) and the `postgres` feature.
#[cfg(feature = "postgres")]
mod postgres {
    use burrow_testkit::{Part, require};

    #[test]
    fn a_server_on_postgresql_with_a_pg_pool_answers() {
        let url = require(Part::Postgres);
        let dir = tempfile::tempdir().unwrap();
        super::served_thread_runs(dir.path(), &url, &["--pg-pool", "8"]);
    }

    #[test]
    fn a_run_posted_to_one_server_is_watched_live_on_the_other() {
        let url = require(Part::Postgres);
        super::cluster::posted_to_one_watched_on_the_other(&url);
    }

    #[test]
    fn sigkill_of_the_server_holding_a_run_the_other_takes_the_thread_over() {
        let url = require(Part::Postgres);
        super::cluster::sigkill_the_holder(&url);
    }

    #[test]
    fn sigterm_to_the_server_holding_a_run_hands_it_to_the_other() {
        let url = require(Part::Postgres);
        super::handback::sigterm_the_holder(&url);
    }
}

/// Two `burrow serve` processes on one session store: a hook holds the first
/// server's run (it touches `started`, then waits for the file `go`) while the
/// test watches it through the second.
#[cfg(feature = "postgres")]
mod cluster {
    use std::io::{BufRead, BufReader};
    use std::path::{Path, PathBuf};
    use std::process::{Child, Command, Stdio};
    use std::time::{Duration, Instant};

    use serde_json::{Value, json};

    use super::super::support::{burrow_in, script};

    /// How long the test waits for another process before it fails.
    pub(super) const PATIENCE: Duration = Duration::from_secs(60);

    /// A PreToolUse hook on `ls` that holds its run until `go` exists.
    const HOLD: &str = "touch started; while [ ! -e go ]; do sleep 0.01; done";

    /// A `burrow serve` child, killed when dropped.
    pub(super) struct Served {
        pub(super) child: Child,
        pub(super) base: String,
        pub(super) dir: PathBuf,
    }

    impl Drop for Served {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    /// One live-event stream, read line by line.
    pub(super) struct Events {
        reader: BufReader<reqwest::blocking::Response>,
    }

    #[derive(Debug)]
    pub(super) struct Frame {
        pub(super) event: String,
        pub(super) id: Option<String>,
        pub(super) data: Value,
    }

    impl Events {
        pub(super) fn next(&mut self) -> Option<Frame> {
            let (mut event, mut id, mut data) = (None, None, String::new());
            loop {
                let mut line = String::new();
                if self.reader.read_line(&mut line).unwrap() == 0 {
                    return None;
                }
                let line = line.trim_end_matches(['\r', '\n']);
                if line.is_empty() {
                    if let Some(event) = event.take() {
                        let data = serde_json::from_str(&data).unwrap();
                        return Some(Frame { event, id, data });
                    }
                    continue;
                }
                if let Some(v) = line.strip_prefix("event:") {
                    event = Some(v.trim().to_owned());
                } else if let Some(v) = line.strip_prefix("id:") {
                    id = Some(v.trim().to_owned());
                } else if let Some(v) = line.strip_prefix("data:") {
                    data.push_str(v.trim_start());
                }
            }
        }

        pub(super) fn until(&mut self, name: &str) -> Vec<Frame> {
            let mut seen = Vec::new();
            while let Some(f) = self.next() {
                let done = f.event == name;
                seen.push(f);
                if done {
                    return seen;
                }
            }
            panic!("the stream ended before {name}: {seen:?}");
        }
    }

    /// A test's tenant, its token, a thread name and the tokens file.
    pub(super) struct Cluster {
        dir: tempfile::TempDir,
        url: String,
        token: String,
        thread: String,
        client: reqwest::blocking::Client,
    }

    impl Cluster {
        pub(super) fn new(url: &str) -> Self {
            let dir = tempfile::tempdir().unwrap();
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos();
            let tenant = format!("cluster{}x{nanos}", std::process::id());
            let tokens = dir.path().join("tokens");
            let add = burrow_in(
                dir.path(),
                &[
                    "--tenant",
                    &tenant,
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
            Cluster {
                token: add.out().trim().to_owned(),
                dir,
                url: url.to_owned(),
                thread: format!("t{nanos}"),
                client: reqwest::blocking::Client::builder()
                    .timeout(Duration::from_secs(120))
                    .build()
                    .unwrap(),
            }
        }

        /// A server in the folder `name` answering with `answers`, its hook holding `ls`
        /// calls when `hold`.
        pub(super) fn serve(&self, name: &str, answers: &[Value], hold: bool, ttl: &str) -> Served {
            let dir = self.dir.path().join(name);
            std::fs::create_dir_all(&dir).unwrap();
            let model = script(&dir, "m.jsonl", answers);
            let hooks = if hold {
                json!({"PreToolUse": [{"matcher": "ls", "hooks": [{"type": "command", "command": HOLD}]}]})
            } else {
                json!({})
            };
            let settings = dir.join("settings.json");
            std::fs::write(&settings, json!({ "hooks": hooks }).to_string()).unwrap();
            let mut child = Command::new(env!("CARGO_BIN_EXE_burrow"))
                .args([
                    "serve",
                    "--session",
                    &self.url,
                    "--model",
                    &model,
                    "--settings",
                    settings.to_str().unwrap(),
                    "--tokens",
                    self.dir.path().join("tokens").to_str().unwrap(),
                    "--listen",
                    "127.0.0.1:0",
                    "--claim-ttl",
                    ttl,
                ])
                .current_dir(&dir)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let mut stderr = BufReader::new(child.stderr.take().unwrap());
            let mut line = String::new();
            stderr.read_line(&mut line).unwrap();
            // The rest of its stderr is drained, so the server never blocks on it.
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut stderr, &mut std::io::sink());
            });
            let base = line
                .trim()
                .strip_prefix("burrow: serving on ")
                .unwrap_or_else(|| panic!("{line}"))
                .to_owned();
            Served { child, base, dir }
        }

        pub(super) fn post(&self, s: &Served, content: &str) -> Value {
            self.client
                .post(format!("{}/v1/threads/{}/messages", s.base, self.thread))
                .bearer_auth(&self.token)
                .json(&json!({ "content": content }))
                .send()
                .unwrap()
                .json()
                .unwrap()
        }

        pub(super) fn view(&self, s: &Served) -> Value {
            self.client
                .get(format!("{}/v1/threads/{}", s.base, self.thread))
                .bearer_auth(&self.token)
                .send()
                .unwrap()
                .json()
                .unwrap()
        }

        pub(super) fn watch(&self, s: &Served, run: &str, last: Option<&str>) -> Events {
            let mut req = self
                .client
                .get(format!("{}/v1/runs/{run}/events", s.base))
                .bearer_auth(&self.token);
            if let Some(last) = last {
                req = req.header("last-event-id", last);
            }
            let response = req.send().unwrap();
            assert_eq!(response.status().as_u16(), 200);
            Events {
                reader: BufReader::new(response),
            }
        }
    }

    /// Waits until the hook of the server in `dir` holds its run.
    pub(super) fn held(dir: &Path) {
        let deadline = Instant::now() + PATIENCE;
        while !dir.join("started").exists() {
            assert!(Instant::now() < deadline, "the holder's hook never started");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub(super) fn ls_then(text: &str) -> Vec<Value> {
        vec![
            json!({"text": "looking", "tool_calls": [{"id": "c1", "name": "ls", "arguments": {"path": "/"}}]}),
            json!({ "text": text }),
        ]
    }

    pub(super) fn posted_to_one_watched_on_the_other(url: &str) {
        let c = Cluster::new(url);
        let a = c.serve("a", &ls_then("watched from b"), true, "30");
        let b = c.serve("b", &[json!({"text": "unused"})], false, "30");
        let posted = c.post(&a, "go");
        assert_eq!(posted["action"], "started", "{posted}");
        let run = posted["run_id"].as_str().unwrap().to_owned();
        held(&a.dir);
        // a holds the run in its hook; b follows it from the store's log.
        let mut events = c.watch(&b, &run, None);
        let seen = events.until("tool_call");
        let names: Vec<&str> = seen.iter().map(|f| f.event.as_str()).collect();
        assert_eq!(
            names,
            ["run_started", "text_delta", "tool_call"],
            "{seen:?}"
        );
        assert_eq!(seen[1].data["text"], "looking");
        assert_eq!(seen[2].data["name"], "ls");
        assert!(
            seen.iter()
                .all(|f| f.id.as_deref().is_some_and(|id| id.starts_with('s')))
        );
        assert_eq!(c.view(&b)["runs"][0]["status"], "running");
        std::fs::write(a.dir.join("go"), b"").unwrap();
        let mut rest = Vec::new();
        while let Some(f) = events.next() {
            rest.push(f);
        }
        let end = rest.pop().unwrap();
        assert_eq!(end.event, "end");
        assert_eq!(end.data["outcome"], "completed");
        let names: Vec<&str> = rest.iter().map(|f| f.event.as_str()).collect();
        assert_eq!(names[0], "tool_result", "{rest:?}");
        assert!(
            rest.iter()
                .any(|f| f.event == "text_delta" && f.data["text"] == "watched from b"),
            "{rest:?}"
        );
        // A reconnect to a with b's last id before the result resumes there.
        let after = seen[2].id.clone().unwrap();
        let resumed = c.watch(&a, &run, Some(&after)).until("end");
        assert_eq!(resumed[0].event, "tool_result", "{resumed:?}");
        assert_eq!(resumed[0].id, rest[0].id);
    }

    pub(super) fn sigkill_the_holder(url: &str) {
        let c = Cluster::new(url);
        let mut a = c.serve("a", &ls_then("never said"), true, "2");
        let b = c.serve("b", &[json!({"text": "taken over"})], false, "2");
        let posted = c.post(&a, "first");
        let run = posted["run_id"].as_str().unwrap().to_owned();
        held(&a.dir);
        let mut events = c.watch(&b, &run, None);
        events.until("tool_call");
        // A message for the thread while a holds it: the run a holds is to take it.
        let second = c.post(&b, "second");
        assert_eq!(second["run_id"], run.as_str(), "{second}");
        a.child.kill().unwrap();
        a.child.wait().unwrap();
        // The killed server's hook shell still waits: let it go.
        std::fs::write(a.dir.join("go"), b"").unwrap();
        let mut rest = Vec::new();
        while let Some(f) = events.next() {
            rest.push(f);
        }
        let end = rest.last().unwrap();
        assert_eq!(end.event, "end", "{rest:?}");
        assert_eq!(end.data["outcome"], "failed");
        assert_eq!(end.data["reason"], "abandoned");
        // b carries the untaken message out in the next run, and it can be watched.
        let deadline = Instant::now() + PATIENCE;
        let next = loop {
            let view = c.view(&b);
            let runs = view["runs"].as_array().unwrap().clone();
            if runs.len() == 2 && runs[1]["status"] == "completed" {
                assert_eq!(runs[0]["status"], "failed");
                assert_eq!(runs[0]["reason"], "abandoned");
                assert!(view["history"].to_string().contains("taken over"));
                break runs[1]["run_id"].as_str().unwrap().to_owned();
            }
            assert!(Instant::now() < deadline, "{view}");
            std::thread::sleep(Duration::from_millis(50));
        };
        let frames = c.watch(&b, &next, None).until("end");
        assert_eq!(frames[0].event, "run_started");
        assert!(
            frames
                .iter()
                .any(|f| f.event == "text_delta" && f.data["text"] == "taken over"),
            "{frames:?}"
        );
        assert_eq!(frames.last().unwrap().data["outcome"], "completed");
    }
}

#[cfg(feature = "postgres")]
mod handback {
    use std::process::Command;
    use std::time::Instant;

    use serde_json::{Value, json};

    use super::cluster::{Cluster, PATIENCE, held, ls_then};

    /// SIGTERM to the server holding a run in a held tool call: its watcher gets
    /// `end` `handed_over`, the other server takes the thread over without waiting
    /// for the claim TTL (300 s, longer than the test's patience), records the run
    /// abandoned and carries it on; the held call gets one result, nothing runs twice.
    pub(super) fn sigterm_the_holder(url: &str) {
        let c = Cluster::new(url);
        let mut a = c.serve("a", &ls_then("never said"), true, "300");
        let b = c.serve("b", &[json!({"text": "carried on"})], false, "300");
        let posted = c.post(&a, "first");
        let run = posted["run_id"].as_str().unwrap().to_owned();
        held(&a.dir);
        let mut on_a = c.watch(&a, &run, None);
        on_a.until("tool_call");
        let mut on_b = c.watch(&b, &run, None);
        on_b.until("tool_call");
        let sent = Command::new("kill")
            .args(["-TERM", &a.child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let end = on_a.until("end").pop().unwrap();
        assert_eq!(end.data["outcome"], "handed_over", "{end:?}");
        assert!(a.child.wait().unwrap().success());
        let end = on_b.until("end").pop().unwrap();
        assert_eq!(end.data["outcome"], "failed", "{end:?}");
        assert_eq!(end.data["reason"], "abandoned", "{end:?}");
        let deadline = Instant::now() + PATIENCE;
        let next = loop {
            let view = c.view(&b);
            let runs = view["runs"].as_array().unwrap().clone();
            if runs.len() == 2 && runs[1]["status"] == "completed" {
                assert_eq!(runs[0]["run_id"], run.as_str());
                assert_eq!(runs[0]["status"], "failed");
                assert_eq!(runs[0]["reason"], "abandoned");
                let history = view["history"].as_array().unwrap();
                // The held call has one result: the holder's hook never let it run, and
                // its cancellation is the result the carried-on run sees (ADR 0345).
                let results: Vec<&Value> = history
                    .iter()
                    .filter(|h| h["message"]["call_id"] == "c1")
                    .collect();
                assert_eq!(results.len(), 1, "one result for the held call: {view}");
                assert!(view["history"].to_string().contains("carried on"), "{view}");
                assert!(
                    !view["history"].to_string().contains("never said"),
                    "{view}"
                );
                break runs[1]["run_id"].as_str().unwrap().to_owned();
            }
            assert!(Instant::now() < deadline, "{view}");
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        let frames = c.watch(&b, &next, None).until("end");
        assert_eq!(frames.last().unwrap().data["outcome"], "completed");
    }
}

/// Serves `session` with `extra` options, runs thread t1 through the API as a fresh
/// tenant's token, checks `burrow thread show` sees it under that tenant only, and ends the
/// server with SIGTERM.
/// `burrow ARGS` started in `dir`, and the base URL its first stderr line says it serves
/// on (the rest of its stderr drained, so it never blocks on it).
pub(super) fn spawn_serve(dir: &std::path::Path, args: &[&str]) -> (std::process::Child, String) {
    spawn_serve_env(dir, args, &[])
}

/// [`spawn_serve`] with `envs` set in the server's environment.
pub(super) fn spawn_serve_env(
    dir: &std::path::Path,
    args: &[&str],
    envs: &[(&str, &str)],
) -> (std::process::Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_burrow"))
        .args(args)
        .envs(envs.iter().copied())
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let base = line
        .trim()
        .strip_prefix("burrow: serving on ")
        .unwrap_or_else(|| panic!("{line}"))
        .to_owned();
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut stderr, &mut std::io::sink());
    });
    (child, base)
}

fn served_thread_runs(dir: &std::path::Path, session: &str, extra: &[&str]) {
    // Unique on a PostgreSQL other tests share.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let tenant = format!("acme{}x{nanos}", std::process::id());
    let tenant = tenant.as_str();
    let thread = format!("t{nanos}");
    let thread = thread.as_str();
    let tokens = dir.join("tokens");
    let add = burrow_in(
        dir,
        &[
            "--tenant",
            tenant,
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
    let model = script(dir, "m.jsonl", &[json!({"text": "served hello"})]);
    let mut args = vec![
        "serve",
        "--session",
        session,
        "--model",
        model.as_str(),
        "--tokens",
        tokens.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
    ];
    args.extend_from_slice(extra);
    let (mut child, base) = spawn_serve(dir, &args);
    let client = reqwest::blocking::Client::new();
    let unauthorized = client.get(format!("{base}/v1/threads")).send().unwrap();
    assert_eq!(unauthorized.status().as_u16(), 401);
    let posted: Value = client
        .post(format!("{base}/v1/threads/{thread}/messages"))
        .bearer_auth(&token)
        .json(&json!({"content": "hello there"}))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(posted["action"], "started");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let view: Value = client
            .get(format!("{base}/v1/threads/{thread}"))
            .bearer_auth(&token)
            .send()
            .unwrap()
            .json()
            .unwrap();
        if view["runs"][0]["status"] == "completed" {
            break;
        }
        assert!(Instant::now() < deadline, "{view}");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The CLI sees the server's thread under the token's tenant.
    let shown = {
        let run = burrow_in(
            dir,
            &[
                "--json",
                "--tenant",
                tenant,
                "thread",
                "show",
                thread,
                "--session",
                session,
            ],
            b"",
        );
        run.assert_code(0);
        run.json()
    };
    assert!(shown["history"].to_string().contains("served hello"));
    // Not under another tenant's.
    let other = burrow_in(
        dir,
        &["--json", "thread", "show", thread, "--session", session],
        b"",
    );
    other.assert_code(1);
    let sent = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
}

/// `burrow serve --artifacts DIR`: a person's artifact made over HTTP is the one
/// `burrow artifact` reads from the same session file (attributed to the token's name,
/// in the token's tenant); a stale edit is a 409 problem naming the head; a folder with
/// no kind is refused before the server listens.
#[cfg(feature = "artifacts")]
#[test]
fn a_served_artifact_workspace_is_the_session_s() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    let kinds = path.join("kinds");
    std::fs::create_dir(&kinds).unwrap();
    std::fs::write(
        kinds.join("plan.schema.json"),
        json!({"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}})
            .to_string(),
    )
    .unwrap();
    let tokens = path.join("tokens");
    let add = burrow_in(
        path,
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
    let token = add.out().trim().to_owned();
    let model = script(path, "m.jsonl", &[json!({"text": "hi"})]);
    let session = session_spec(path);
    let serve_args = |folder: &std::path::Path| {
        vec![
            "serve".to_owned(),
            "--session".to_owned(),
            session.clone(),
            "--model".to_owned(),
            model.clone(),
            "--tokens".to_owned(),
            tokens.to_str().unwrap().to_owned(),
            "--listen".to_owned(),
            "127.0.0.1:0".to_owned(),
            "--artifacts".to_owned(),
            folder.to_str().unwrap().to_owned(),
        ]
    };
    // A folder with no KIND.schema.json: exit 2, nothing served.
    let empty = path.join("empty");
    std::fs::create_dir(&empty).unwrap();
    let args = serve_args(&empty);
    let refused = burrow_in(
        path,
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
        b"",
    );
    refused.assert_code(2);
    assert!(
        refused.stderr.contains("KIND.schema.json"),
        "{}",
        refused.stderr
    );

    let args = serve_args(&kinds);
    let (mut child, base) = spawn_serve(path, &args.iter().map(String::as_str).collect::<Vec<_>>());
    let client = reqwest::blocking::Client::new();
    let created = client
        .post(format!("{base}/v1/artifacts"))
        .bearer_auth(&token)
        .json(&json!({"kind": "plan", "snapshot": {"text": "paint it green"}}))
        .send()
        .unwrap();
    assert_eq!(created.status().as_u16(), 201);
    let created: Value = created.json().unwrap();
    let id = created["artifact"]["id"].as_str().unwrap().to_owned();
    let edited = client
        .post(format!("{base}/v1/artifacts/{id}/edits"))
        .bearer_auth(&token)
        .json(&json!({"base": 1, "old": "green", "new": "blue"}))
        .send()
        .unwrap();
    assert_eq!(edited.status().as_u16(), 200);
    let stale = client
        .post(format!("{base}/v1/artifacts/{id}/edits"))
        .bearer_auth(&token)
        .json(&json!({"base": 1, "old": "paint", "new": "stain"}))
        .send()
        .unwrap();
    assert_eq!(stale.status().as_u16(), 409);
    assert_eq!(
        stale.headers()["content-type"].to_str().unwrap(),
        "application/problem+json"
    );
    let stale: Value = stale.json().unwrap();
    assert_eq!(stale["kind"], "conflict");
    assert_eq!(stale["head"], 2);

    // The CLI reads the same workspace: the tenant's, version 2, made by alice.
    let listed = burrow_in(
        path,
        &[
            "--json",
            "--tenant",
            "acme",
            "artifact",
            "list",
            "--session",
            &session,
            "--artifacts",
            kinds.to_str().unwrap(),
        ],
        b"",
    );
    listed.assert_code(0);
    let listed = listed.json();
    assert_eq!(listed["artifacts"].as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed["artifacts"][0]["version"], 2);
    assert_eq!(listed["artifacts"][0]["updated_by"]["name"], "alice");
    assert_eq!(listed["artifacts"][0]["snapshot"]["text"], "paint it blue");
    let sent = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    assert_eq!(child.wait().unwrap().code(), Some(0));
}
