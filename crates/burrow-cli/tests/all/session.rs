//! `burrow run --session ... --thread ID` and `burrow thread ...` through the binary: idle runs, steering a run another process holds, taking over from a killed holder, answering and stopping from another process, deduplicated commands, and the `--json` shapes.
//!
//! A run is kept busy deterministically by a PreToolUse hook on `ls` that
//! touches `started` and then waits for the file `go`: the test sees the
//! holder is inside its run when `started` exists, and lets it go on by
//! creating `go`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tempfile::TempDir;

use super::support::{Run, burrow_in};

/// How long a test waits for another process to reach a point before it fails.
const PATIENCE: Duration = Duration::from_secs(60);

/// A folder with a SQLite session file, scripts and settings.
struct Session {
    dir: TempDir,
}

impl Session {
    fn new() -> Self {
        Session {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn dir(&self) -> &Path {
        self.dir.path()
    }

    fn spec(&self) -> String {
        format!("sqlite:{}", self.dir().join("session.db").display())
    }

    /// A scripted model of these answers, as a `--model` value.
    fn script(&self, name: &str, answers: &[Value]) -> String {
        let path = self.dir().join(name);
        let text: String = answers.iter().map(|a| format!("{a}\n")).collect();
        std::fs::write(&path, text).unwrap();
        format!("scripted:{}", path.display())
    }

    /// Settings whose PreToolUse hook on `ls` touches `started`, then waits for `go`.
    fn blocking_settings(&self) -> String {
        let path = self.dir().join("block.json");
        let settings = json!({"hooks": {"PreToolUse": [{"matcher": "ls", "hooks": [
            {"type": "command", "command": "touch started; while [ ! -e go ]; do sleep 0.01; done"}
        ]}]}});
        std::fs::write(&path, settings.to_string()).unwrap();
        path.display().to_string()
    }

    /// A script whose first answer calls `ls` (held by the blocking hook) and whose second answers `text`.
    fn held_script(&self, name: &str, text: &str) -> String {
        self.script(
            name,
            &[
                json!({"tool_calls": [{"id": "l1", "name": "ls", "arguments": {"path": "/"}}]}),
                json!({"text": text}),
            ],
        )
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir().join(name)
    }

    /// Runs `burrow ARGS...` here and waits for it.
    fn burrow(&self, args: &[&str]) -> Run {
        burrow_in(self.dir(), args, b"")
    }

    /// Starts `burrow ARGS...` here.
    fn spawn(&self, args: &[&str]) -> Child {
        Command::new(env!("CARGO_BIN_EXE_burrow"))
            .args(args)
            .current_dir(self.dir())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// Starts `burrow --json run MESSAGE` on thread `t` whose first tool call is held
    /// by the blocking hook until [`Session::release`] (its second answer is `text`),
    /// with `extra` flags, and waits until the hook holds it.
    fn spawn_holder(&self, message: &str, text: &str, extra: &[&str]) -> Child {
        let settings = self.blocking_settings();
        let held = self.held_script("held.jsonl", text);
        let spec = self.spec();
        let mut args = vec![
            "--json",
            "run",
            message,
            "--model",
            &held,
            "--settings",
            &settings,
            "--session",
            &spec,
            "--thread",
            "t",
        ];
        args.extend_from_slice(extra);
        let child = self.spawn(&args);
        self.wait_for("started");
        child
    }

    /// Waits until the file `name` exists.
    fn wait_for(&self, name: &str) {
        let path = self.path(name);
        let deadline = Instant::now() + PATIENCE;
        while !path.exists() {
            assert!(Instant::now() < deadline, "{name} never appeared");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Lets the held run go on.
    fn release(&self) {
        std::fs::write(self.path("go"), b"").unwrap();
    }

    /// `burrow thread show ID --json`.
    fn show(&self, thread: &str) -> Value {
        let run = self.burrow(&[
            "--json",
            "thread",
            "show",
            thread,
            "--session",
            &self.spec(),
        ]);
        run.assert_code(0);
        run.json()
    }
}

/// The JSON lines a child prints, as they come.
fn lines(stdout: ChildStdout) -> mpsc::Receiver<Value> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            let value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"));
            if tx.send(value).is_err() {
                return;
            }
        }
    });
    rx
}

/// Reads lines until one of type `kind` arrives; returns every line read.
fn read_until(rx: &mpsc::Receiver<Value>, kind: &str) -> Vec<Value> {
    let mut seen = Vec::new();
    loop {
        let line = rx
            .recv_timeout(PATIENCE)
            .unwrap_or_else(|_| panic!("no {kind} line; saw {seen:?}"));
        let done = line["type"] == kind;
        seen.push(line);
        if done {
            return seen;
        }
    }
}

/// Waits for a child and returns its exit code and stderr.
fn finish(child: Child) -> (i32, String) {
    let output = child.wait_with_output().unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The statuses of a shown thread's runs, oldest first, with their reasons.
fn run_statuses(shown: &Value) -> Vec<(String, Option<String>)> {
    shown["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["status"].as_str().unwrap().to_owned(),
                r["reason"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

/// The user texts of a shown thread's history, with the run that appended each.
fn user_texts(shown: &Value) -> Vec<(String, Value)> {
    shown["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["message"]["role"] == "user")
        .map(|e| {
            (
                e["message"]["text"].as_str().unwrap().to_owned(),
                e["run_id"].clone(),
            )
        })
        .collect()
}

fn stdout_lines(run: &Run) -> Vec<Value> {
    run.out()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn an_idle_thread_run_streams_and_is_recorded() {
    let s = Session::new();
    let model = s.script("hello.jsonl", &[json!({"text": "hello there"})]);
    let spec = s.spec();
    let run = s.burrow(&[
        "--json",
        "run",
        "hi",
        "--model",
        &model,
        "--session",
        &spec,
        "--thread",
        "t1",
    ]);
    run.assert_code(0);
    let events = stdout_lines(&run);
    assert_eq!(events[0]["type"], "run_started");
    assert_eq!(events[0]["thread_id"], "t1");
    let run_id = events[0]["run_id"].as_str().unwrap().to_owned();
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "text_delta" && e["text"] == "hello there")
    );
    let last = events.last().unwrap();
    assert_eq!(last["type"], "run_ended");
    assert_eq!(last["outcome"], "completed");

    let shown = s.show("t1");
    assert_eq!(run_statuses(&shown), [("completed".to_owned(), None)]);
    assert_eq!(shown["runs"][0]["run_id"], run_id.as_str());
    assert_eq!(user_texts(&shown), [("hi".to_owned(), json!(run_id))]);
    assert_eq!(shown["thread"]["status"], "idle");

    // Human output: the answer on stdout, the closing line on stderr.
    let again = s.script("again.jsonl", &[json!({"text": "second\n"})]);
    let human = s.burrow(&[
        "run",
        "more",
        "--model",
        &again,
        "--session",
        &spec,
        "--thread",
        "t1",
    ]);
    human.assert_code(0);
    assert_eq!(human.out(), "second\n");
    assert!(
        human.stderr.contains("burrow: run completed"),
        "{}",
        human.stderr
    );
    assert_eq!(run_statuses(&s.show("t1")).len(), 2);
}

#[test]
fn a_second_run_steers_the_run_another_process_holds_and_waits_until_carried_out() {
    let s = Session::new();
    let spec = s.spec();
    let mut holder = s.spawn_holder("first", "done with both", &[]);
    let holder_lines = lines(holder.stdout.take().unwrap());

    let unused = s.script(
        "unused.jsonl",
        &[json!({"text": "the steering process never asks its model"})],
    );
    let mut steerer = s.spawn(&[
        "--json",
        "run",
        "steer me",
        "--model",
        &unused,
        "--session",
        &spec,
        "--thread",
        "t",
    ]);
    let steerer_lines = lines(steerer.stdout.take().unwrap());
    let steering = read_until(&steerer_lines, "steering");
    let holder_run = read_until(&holder_lines, "run_started")[0]["run_id"].clone();
    assert_eq!(steering.last().unwrap()["run_id"], holder_run);

    s.release();
    let holder_end = read_until(&holder_lines, "run_ended");
    assert_eq!(holder_end.last().unwrap()["outcome"], "completed");
    let steerer_end = read_until(&steerer_lines, "run_ended");
    let end = steerer_end.last().unwrap();
    assert_eq!(end["run_id"], holder_run, "{steerer_end:?}");
    assert_eq!(end["outcome"], "completed");
    let (code, stderr) = finish(steerer);
    assert_eq!(code, 0, "{stderr}");
    let (code, stderr) = finish(holder);
    assert_eq!(code, 0, "{stderr}");

    // One run carried out both messages: the steering one went into it.
    let shown = s.show("t");
    assert_eq!(run_statuses(&shown), [("completed".to_owned(), None)]);
    assert_eq!(
        user_texts(&shown),
        [
            ("first".to_owned(), holder_run.clone()),
            ("steer me".to_owned(), holder_run)
        ]
    );
}

#[test]
fn a_killed_holder_is_taken_over_and_its_run_recorded_abandoned() {
    let s = Session::new();
    let spec = s.spec();
    let mut holder = s.spawn_holder("first", "never said", &["--claim-ttl", "1"]);
    let taker_model = s.script("taker.jsonl", &[json!({"text": "taken over"})]);
    let mut taker = s.spawn(&[
        "--json",
        "run",
        "second",
        "--model",
        &taker_model,
        "--session",
        &spec,
        "--thread",
        "t",
        "--claim-ttl",
        "1",
    ]);
    let taker_lines = lines(taker.stdout.take().unwrap());
    read_until(&taker_lines, "steering");
    holder.kill().unwrap();
    holder.wait().unwrap();

    let seen = read_until(&taker_lines, "run_ended");
    assert!(seen.iter().any(|l| l["type"] == "taken_over"), "{seen:?}");
    assert!(
        seen.iter()
            .any(|l| l["type"] == "text_delta" && l["text"] == "taken over")
    );
    assert_eq!(seen.last().unwrap()["outcome"], "completed");
    let (code, stderr) = finish(taker);
    assert_eq!(code, 0, "{stderr}");
    // The killed holder's hook shell is still waiting: let it end.
    s.release();

    let shown = s.show("t");
    assert_eq!(
        run_statuses(&shown),
        [
            ("failed".to_owned(), Some("abandoned".to_owned())),
            ("completed".to_owned(), None)
        ]
    );
    let texts: Vec<String> = user_texts(&shown).into_iter().map(|(t, _)| t).collect();
    assert_eq!(texts, ["first", "second"]);
}

#[test]
fn a_paused_thread_is_answered_from_another_process_and_resumes() {
    let s = Session::new();
    let spec = s.spec();
    let asking = s.script(
        "ask.jsonl",
        &[json!({"tool_calls": [{"id": "q1", "name": "ask_user", "arguments": {"question": "Which colour?"}}]})],
    );
    let paused = s.burrow(&[
        "--json",
        "run",
        "paint it",
        "--model",
        &asking,
        "--session",
        &spec,
        "--thread",
        "t",
    ]);
    paused.assert_code(3);
    let events = stdout_lines(&paused);
    let request = events.iter().find(|e| e["type"] == "request").unwrap();
    assert_eq!(request["kind"], "question");
    let request_id = request["request_id"].as_str().unwrap().to_owned();

    let shown = s.show("t");
    assert_eq!(shown["thread"]["status"], "paused");
    assert_eq!(shown["pending"][0]["request_id"], request_id.as_str());

    let answering = s.script("answer.jsonl", &[json!({"text": "blue it is"})]);
    let answered = s.burrow(&[
        "--json",
        "thread",
        "answer",
        "t",
        "--request",
        &request_id,
        "blue",
        "--session",
        &spec,
        "--model",
        &answering,
    ]);
    assert_completed_saying(&answered, "blue it is");

    let shown = s.show("t");
    assert_eq!(run_statuses(&shown), [("completed".to_owned(), None)]);
    assert_eq!(shown["runs"][0]["segments"], 2);
    assert_eq!(shown["pending"], json!([]));
}

/// The run's `--json` stream says `text` and ends completed (exit 0).
fn assert_completed_saying(run: &Run, text: &str) {
    run.assert_code(0);
    let events = stdout_lines(run);
    assert!(events.iter().any(|e| e["text"] == text), "{events:?}");
    assert_eq!(events.last().unwrap()["outcome"], "completed");
}

/// `burrow thread answer` without `--model`, `--settings` or `--max-turns`
/// resumes the run with what `burrow run` started it with (kept in the run's
/// labels, file paths absolute), from another folder.
#[test]
fn an_answer_without_a_model_resumes_the_run_as_it_was_started() {
    let s = Session::new();
    let spec = s.spec();
    let ask = json!({"tool_calls": [{"id": "q1", "name": "ask_user", "arguments": {"question": "Which colour?"}}]});
    std::fs::write(s.path("ask.jsonl"), format!("{ask}\n")).unwrap();
    let settings = json!({"hooks": {"PreToolUse": [{"matcher": "ls", "hooks": [
        {"type": "command", "command": "touch hooked"}
    ]}]}});
    std::fs::write(s.path("hooks.json"), settings.to_string()).unwrap();
    let paused = s.burrow(&[
        "--json",
        "run",
        "paint it",
        "--model",
        "scripted:ask.jsonl",
        "--settings",
        "hooks.json",
        "--max-turns",
        "7",
        "--session",
        &spec,
        "--thread",
        "t",
    ]);
    paused.assert_code(3);
    let request = stdout_lines(&paused)
        .into_iter()
        .find(|e| e["type"] == "request")
        .unwrap();
    let labels = &s.show("t")["runs"][0]["labels"];
    let script = s.path("ask.jsonl");
    assert_eq!(
        labels["burrow.model"],
        format!("scripted:{}", script.display())
    );
    assert_eq!(
        labels["burrow.settings"],
        s.path("hooks.json").display().to_string()
    );
    assert_eq!(labels["burrow.max_turns"], "7");
    let human = s.burrow(&["thread", "show", "t", "--session", &spec]);
    let model_line = format!("paused (model scripted:{})", script.display());
    assert!(human.out().contains(&model_line), "{}", human.out());

    // The same script file now goes on: an `ls` (which the hook sees), then the answer.
    let next = [
        json!({"tool_calls": [{"id": "l1", "name": "ls", "arguments": {"path": "/"}}]}),
        json!({"text": "blue it is"}),
    ];
    std::fs::write(
        &script,
        next.iter().map(|a| format!("{a}\n")).collect::<String>(),
    )
    .unwrap();
    let elsewhere = s.path("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let answered = burrow_in(
        &elsewhere,
        &[
            "--json",
            "thread",
            "answer",
            "t",
            "--request",
            request["request_id"].as_str().unwrap(),
            "blue",
            "--session",
            &spec,
        ],
        b"",
    );
    assert_completed_saying(&answered, "blue it is");
    assert!(
        elsewhere.join("hooked").exists(),
        "the run's hooks ran on resume"
    );
    assert_eq!(run_statuses(&s.show("t")), [("completed".to_owned(), None)]);
}

/// An answer to a thread with no paused run is refused before any model is set up.
#[test]
fn an_answer_to_a_thread_with_no_paused_run_is_refused() {
    let s = Session::new();
    let spec = s.spec();
    let refused = s.burrow(&[
        "--json",
        "thread",
        "answer",
        "t",
        "--request",
        "q1",
        "blue",
        "--session",
        &spec,
    ]);
    refused.assert_code(1);
    let line = refused.json();
    assert_eq!(line["error"]["kind"], "invalid_state", "{line}");
}

#[test]
fn thread_stop_from_another_process_stops_the_running_run() {
    let s = Session::new();
    let spec = s.spec();
    let holder = s.spawn_holder("work", "never said", &[]);
    let stopped = s.burrow(&["--json", "thread", "stop", "t", "--session", &spec]);
    stopped.assert_code(0);
    let line = stopped.json();
    assert_eq!(line["type"], "stopped");
    assert_eq!(line["stopped"], true, "{line}");
    let (code, stderr) = finish(holder);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.is_empty() || !stderr.contains("panicked"),
        "{stderr}"
    );
    assert_eq!(run_statuses(&s.show("t"))[0].0, "stopped");
    // Stopping an idle thread does nothing, and says so.
    let idle = s.burrow(&["--json", "thread", "stop", "t", "--session", &spec]);
    idle.assert_code(0);
    assert_eq!(idle.json()["stopped"], false);
}

#[test]
fn a_repeated_command_id_prints_the_remembered_result_and_its_runs_outcome_and_does_nothing() {
    let s = Session::new();
    let spec = s.spec();
    let model = s.script("once.jsonl", &[json!({"text": "once"})]);
    let args = [
        "--json",
        "run",
        "do it",
        "--model",
        &model,
        "--session",
        &spec,
        "--thread",
        "t",
        "--command-id",
        "c1",
    ];
    let first = s.burrow(&args);
    first.assert_code(0);
    assert_eq!(stdout_lines(&first).last().unwrap()["outcome"], "completed");
    let repeat = s.burrow(&args);
    repeat.assert_code(0);
    // What the command did the first time, then the outcome of its run.
    let printed = stdout_lines(&repeat);
    assert_eq!(printed.len(), 2, "{}", repeat.out());
    assert_eq!(printed[1]["type"], "run_ended");
    assert_eq!(printed[1]["outcome"], "completed");
    let remembered = &printed[0];
    assert_eq!(remembered["type"], "remembered");
    assert_eq!(remembered["command_id"], "c1");
    assert_eq!(remembered["result"]["type"], "posted");
    assert_eq!(remembered["result"]["thread"], "t");
    let shown = s.show("t");
    assert_eq!(run_statuses(&shown).len(), 1);
    assert_eq!(user_texts(&shown).len(), 1);
    let human = s.burrow(&args[1..]);
    human.assert_code(0);
    assert!(
        human.stderr.contains("carried out already"),
        "{}",
        human.stderr
    );
}

#[test]
fn two_concurrent_runs_never_run_the_thread_at_once() {
    let s = Session::new();
    let spec = s.spec();
    let a = s.script(
        "a.jsonl",
        &[json!({"text": "a"}), json!({"text": "a again"})],
    );
    let b = s.script(
        "b.jsonl",
        &[json!({"text": "b"}), json!({"text": "b again"})],
    );
    let first = s.spawn(&[
        "--json",
        "run",
        "one",
        "--model",
        &a,
        "--session",
        &spec,
        "--thread",
        "t",
    ]);
    let second = s.spawn(&[
        "--json",
        "run",
        "two",
        "--model",
        &b,
        "--session",
        &spec,
        "--thread",
        "t",
    ]);
    let (code, stderr) = finish(first);
    assert_eq!(code, 0, "{stderr}");
    let (code, stderr) = finish(second);
    assert_eq!(code, 0, "{stderr}");
    let shown = s.show("t");
    let runs = shown["runs"].as_array().unwrap();
    assert!(!runs.is_empty());
    for pair in runs.windows(2) {
        assert!(
            pair[0]["ended_at_ms"].as_i64().unwrap() <= pair[1]["started_at_ms"].as_i64().unwrap(),
            "runs overlap: {runs:?}"
        );
    }
    assert!(runs.iter().all(|r| r["status"] == "completed"), "{runs:?}");
    let mut texts: Vec<String> = user_texts(&shown).into_iter().map(|(t, _)| t).collect();
    texts.sort();
    assert_eq!(texts, ["one", "two"]);
}

#[test]
fn thread_list_and_show_print_their_json_shapes() {
    let s = Session::new();
    let spec = s.spec();
    let model = s.script("m.jsonl", &[json!({"text": "ok"})]);
    s.burrow(&[
        "run",
        "hi",
        "--model",
        &model,
        "--session",
        &spec,
        "--thread",
        "t\u{1b}x",
    ])
    .assert_code(0);
    let listed = s.burrow(&["--json", "thread", "list", "--session", &spec]);
    listed.assert_code(0);
    let listed = listed.json();
    let threads = listed["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 1);
    assert_eq!(threads[0]["thread"], "t\u{1b}x");
    assert_eq!(threads[0]["status"], "idle");
    assert_eq!(threads[0]["active_run"], Value::Null);

    let shown = s.show("t\u{1b}x");
    let mut keys: Vec<&str> = shown
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "children", "history", "members", "pending", "runs", "thread", "todos"
        ]
    );
    assert_eq!(shown["todos"], json!([]));
    assert_eq!(shown["children"], json!([]));
    assert_eq!(shown["members"], json!([]));
    let entry = &shown["history"][0];
    assert_eq!(entry["pos"], 0);
    assert_eq!(entry["message"], json!({"role": "user", "text": "hi"}));
    let run = &shown["runs"][0];
    for key in [
        "run_id",
        "status",
        "reason",
        "started_at_ms",
        "ended_at_ms",
        "usage",
    ] {
        assert!(run.get(key).is_some(), "no {key} in {run}");
    }

    // Human output quotes the control character.
    let human = s.burrow(&["thread", "list", "--session", &spec]);
    human.assert_code(0);
    assert!(
        human.out().starts_with("\"t\\u{1b}x\" idle -"),
        "{}",
        human.out()
    );
    let missing = s.burrow(&["--json", "thread", "show", "nope", "--session", &spec]);
    assert_eq!(
        missing.assert_json_error(1, "not_found"),
        "the session has no thread nope"
    );
    let bad = s.burrow(&["thread", "list", "--session", "redis://x"]);
    bad.assert_code(2);
    assert!(
        bad.stderr.contains("not a session burrow knows"),
        "{}",
        bad.stderr
    );
}

#[test]
fn thread_prune_forgets_old_records_keeps_the_history_and_says_what_it_removed() {
    let s = Session::new();
    let spec = s.spec();
    // The first run calls `ls` and carries command c1; the second answers,
    // so the first run's records are no longer what a repair would need.
    let first = s.script(
        "first.jsonl",
        &[
            json!({"tool_calls": [{"id": "l1", "name": "ls", "arguments": {"path": "/"}}]}),
            json!({"text": "listed"}),
        ],
    );
    let run = s.burrow(&[
        "run",
        "list it",
        "--model",
        &first,
        "--session",
        &spec,
        "--thread",
        "t",
        "--command-id",
        "c1",
    ]);
    run.assert_code(0);
    let second = s.script("second.jsonl", &[json!({"text": "still here"})]);
    s.burrow(&[
        "run",
        "and now?",
        "--model",
        &second,
        "--session",
        &spec,
        "--thread",
        "t",
    ])
    .assert_code(0);
    let before = s.show("t");

    // Nothing is older than 30 days.
    let none = s.burrow(&["thread", "prune", "--before", "30d", "--session", &spec]);
    none.assert_code(0);
    assert!(
        none.out()
            .starts_with("pruned 0 command results, 0 events and 0 tool-call records from before "),
        "{}",
        none.out()
    );

    // Everything before now: the command results (c1's and the runner's own
    // commit keys), every event, the first run's call.
    let pruned = s.burrow(&[
        "--json",
        "thread",
        "prune",
        "--before",
        "0s",
        "--session",
        &spec,
    ]);
    pruned.assert_code(0);
    let pruned = pruned.json();
    assert!(pruned["commands"].as_u64().unwrap() > 1, "{pruned}");
    assert_eq!(pruned["tool_calls"], 1, "{pruned}");
    assert!(pruned["events"].as_u64().unwrap() > 5, "{pruned}");
    assert!(
        pruned["before"].as_str().unwrap().ends_with('Z'),
        "{pruned}"
    );
    let after = s.show("t");
    assert_eq!(
        after["history"], before["history"],
        "the history reads the same"
    );
    assert_eq!(after["runs"], before["runs"], "the runs are kept");
    assert_eq!(after["thread"], before["thread"]);

    // The thread goes on after a prune, and a forgotten command id is a new command.
    let third = s.script("third.jsonl", &[json!({"text": "goes on"})]);
    let again = s.burrow(&[
        "--json",
        "run",
        "again",
        "--model",
        &third,
        "--session",
        &spec,
        "--thread",
        "t",
        "--command-id",
        "c1",
    ]);
    again.assert_code(0);
    assert_eq!(stdout_lines(&again).last().unwrap()["outcome"], "completed");
    assert_eq!(run_statuses(&s.show("t")).len(), 3);

    // A time in the future is refused; so is a cutoff burrow cannot read.
    let future = s.burrow(&[
        "--json",
        "thread",
        "prune",
        "--before",
        "2999-01-01T00:00:00Z",
        "--session",
        &spec,
    ]);
    let message = future.assert_json_error(2, "invalid_argument");
    assert!(message.contains("future"), "{message}");
    let date = s.burrow(&[
        "thread",
        "prune",
        "--before",
        "2020-01-31",
        "--session",
        &spec,
    ]);
    date.assert_code(0);
    assert!(
        date.out().ends_with("from before 2020-01-31T00:00:00Z\n"),
        "{}",
        date.out()
    );
    let bad = s.burrow(&[
        "thread",
        "prune",
        "--before",
        "yesterday",
        "--session",
        &spec,
    ]);
    bad.assert_code(2);
    assert!(bad.stderr.contains("ISO-8601"), "{}", bad.stderr);
}

/// PostgreSQL sessions (the `postgres` feature): one run through a server.
#[cfg(feature = "postgres")]
mod postgres {
    use burrow_testkit::{Part, require};
    use serde_json::json;

    use super::Session;

    #[test]
    fn a_run_in_a_postgres_session_is_recorded() {
        let url = require(Part::Postgres);
        let s = Session::new();
        let model = s.script("m.jsonl", &[json!({"text": "from postgres"})]);
        let tenant = format!("cli-{}", std::process::id());
        let thread = format!("t-{}", uuid_like());
        let run = s.burrow(&[
            "--tenant",
            &tenant,
            "--json",
            "run",
            "hi",
            "--model",
            &model,
            "--session",
            &url,
            "--thread",
            &thread,
        ]);
        run.assert_code(0);
        let shown = s.burrow(&[
            "--tenant",
            &tenant,
            "--json",
            "thread",
            "show",
            &thread,
            "--session",
            &url,
        ]);
        shown.assert_code(0);
        let shown = shown.json();
        assert_eq!(shown["runs"][0]["status"], "completed");
        // Pruning this tenant's workspace forgets its events and keeps its history.
        let pruned = s.burrow(&[
            "--tenant",
            &tenant,
            "--json",
            "thread",
            "prune",
            "--before",
            "0s",
            "--session",
            &url,
        ]);
        pruned.assert_code(0);
        assert!(pruned.json()["events"].as_u64().unwrap() > 0);
        let after = s.burrow(&[
            "--tenant",
            &tenant,
            "--json",
            "thread",
            "show",
            &thread,
            "--session",
            &url,
        ]);
        after.assert_code(0);
        assert_eq!(after.json()["history"], shown["history"]);
    }

    fn uuid_like() -> u128 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    }
}

/// Settings whose UserPromptSubmit hook blocks any prompt naming hunter2,
/// with the blocking PreToolUse hook on `ls` of [`Session::blocking_settings`].
fn guarded_settings(s: &Session) -> String {
    let path = s.path("guard.json");
    let settings = json!({"hooks": {
        "UserPromptSubmit": [{"hooks": [{"type": "command",
            "command": "if grep -q hunter2; then echo 'no secrets in prompts' >&2; exit 2; fi"}]}],
        "PreToolUse": [{"matcher": "ls", "hooks": [{"type": "command",
            "command": "touch started; while [ ! -e go ]; do sleep 0.01; done"}]}],
    }});
    std::fs::write(&path, settings.to_string()).unwrap();
    path.display().to_string()
}

#[test]
fn a_blocking_user_prompt_submit_stops_a_session_run_before_the_model_sees_the_prompt() {
    let s = Session::new();
    let settings = guarded_settings(&s);
    let model = s.script("m.jsonl", &[json!({"text": "hello"})]);
    let spec = s.spec();
    let args = |prompt: &'static str| {
        vec![
            "--json".to_owned(),
            "run".to_owned(),
            prompt.to_owned(),
            "--model".to_owned(),
            model.clone(),
            "--settings".to_owned(),
            settings.clone(),
            "--session".to_owned(),
            spec.clone(),
            "--thread".to_owned(),
            "t".to_owned(),
        ]
    };
    let blocked: Vec<String> = args("the password is hunter2");
    let run = s.burrow(&blocked.iter().map(String::as_str).collect::<Vec<_>>());
    run.assert_code(2);
    let events = stdout_lines(&run);
    let last = events.last().unwrap();
    assert_eq!(last["outcome"], "stopped");
    assert!(
        last["reason"].as_str().unwrap().contains("no secrets"),
        "{last}"
    );
    assert!(
        !events.iter().any(|e| e["type"] == "usage"),
        "the model was asked"
    );
    // The thread goes on with the next prompt; the blocked one is in no history.
    let ok: Vec<String> = args("hello");
    let run = s.burrow(&ok.iter().map(String::as_str).collect::<Vec<_>>());
    run.assert_code(0);
    let shown = s.show("t");
    let texts: Vec<String> = user_texts(&shown).into_iter().map(|(t, _)| t).collect();
    assert_eq!(texts, ["hello"]);
    assert!(!shown.to_string().contains("hunter2"), "{shown}");
}

#[test]
fn a_steering_message_a_user_prompt_submit_hook_blocks_never_reaches_the_run() {
    let s = Session::new();
    let settings = guarded_settings(&s);
    let held = s.held_script("held.jsonl", "done");
    let spec = s.spec();
    let mut holder = s.spawn(&[
        "--json",
        "run",
        "first",
        "--model",
        &held,
        "--settings",
        &settings,
        "--session",
        &spec,
        "--thread",
        "t",
    ]);
    let holder_lines = lines(holder.stdout.take().unwrap());
    s.wait_for("started");
    let unused = s.script("unused.jsonl", &[json!({"text": "never asked"})]);
    let steer = |text: &str| {
        let mut child = s.spawn(&[
            "--json",
            "run",
            text,
            "--model",
            &unused,
            "--settings",
            &settings,
            "--session",
            &spec,
            "--thread",
            "t",
        ]);
        let rx = lines(child.stdout.take().unwrap());
        read_until(&rx, "steering");
        (child, rx)
    };
    let (secret, secret_lines) = steer("the password is hunter2");
    let (allowed, allowed_lines) = steer("use tabs");
    s.release();
    assert_eq!(
        read_until(&holder_lines, "run_ended").last().unwrap()["outcome"],
        "completed"
    );
    for (child, rx) in [(secret, secret_lines), (allowed, allowed_lines)] {
        read_until(&rx, "run_ended");
        let (code, stderr) = finish(child);
        assert_eq!(code, 0, "{stderr}");
    }
    let (code, stderr) = finish(holder);
    assert_eq!(code, 0, "{stderr}");
    let shown = s.show("t");
    let texts: Vec<String> = user_texts(&shown).into_iter().map(|(t, _)| t).collect();
    assert_eq!(texts, ["first", "use tabs"], "{shown}");
    assert!(!shown.to_string().contains("hunter2"), "{shown}");
}
