//! `burrow run --session` killed with SIGKILL at three points of a call, then taken over by the next `burrow run` on the thread: while a PreToolUse hook decides (the call is decided again and a deny holds), after the tool ran and before its result was saved (the write is never made twice), and between turns (nothing is redone). Each time the thread completes its next message and every call has one result.
//!
//! A run is held at a point by a hook that touches `started` and waits for
//! the file `go`; the test kills the holder once `started` exists.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tempfile::TempDir;

use super::support::{Run, burrow_in};

/// How long a test waits for another process to reach a point before it fails.
const PATIENCE: Duration = Duration::from_secs(60);

/// The shell of a hook that holds its run: it touches `started`, then waits for `go`.
const HOLD: &str = "touch started; while [ ! -e go ]; do sleep 0.01; done";

/// A folder with a workspace (`fs:ws`), a SQLite session file, scripts and settings.
struct Setup {
    dir: TempDir,
}

impl Setup {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("ws")).unwrap();
        Setup { dir }
    }

    fn dir(&self) -> &Path {
        self.dir.path()
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir().join(name)
    }

    /// A file of the workspace, if it exists.
    fn file(&self, name: &str) -> Option<String> {
        std::fs::read_to_string(self.dir().join("ws").join(name)).ok()
    }

    /// Writes `hooks` (a settings `hooks` value) and a script of `answers`;
    /// the arguments of `burrow --json run MESSAGE` on thread `t` with them.
    fn args(&self, name: &str, message: &str, answers: &[Value], hooks: &Value) -> Vec<String> {
        let script = self.path(&format!("{name}.jsonl"));
        let text: String = answers.iter().map(|a| format!("{a}\n")).collect();
        std::fs::write(&script, text).unwrap();
        let settings = self.path(&format!("{name}.json"));
        std::fs::write(&settings, json!({ "hooks": hooks }).to_string()).unwrap();
        vec![
            "--backend".to_owned(),
            format!("fs:{}", self.dir().join("ws").display()),
            "--json".to_owned(),
            "run".to_owned(),
            message.to_owned(),
            "--model".to_owned(),
            format!("scripted:{}", script.display()),
            "--settings".to_owned(),
            settings.display().to_string(),
            "--session".to_owned(),
            self.spec(),
            "--thread".to_owned(),
            "t".to_owned(),
            "--claim-ttl".to_owned(),
            "1".to_owned(),
        ]
    }

    fn spec(&self) -> String {
        format!("sqlite:{}", self.path("session.db").display())
    }

    /// Starts the holder, waits until its hook holds it, and kills it (SIGKILL).
    fn kill_at_hold(&self, args: &[String]) {
        let mut holder: Child = Command::new(env!("CARGO_BIN_EXE_burrow"))
            .args(args)
            .current_dir(self.dir())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let started = self.path("started");
        let deadline = Instant::now() + PATIENCE;
        while !started.exists() {
            assert!(Instant::now() < deadline, "the holder's hook never started");
            assert!(
                holder.try_wait().unwrap().is_none(),
                "the holder ended before its hook held it"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        holder.kill().unwrap();
        holder.wait().unwrap();
        // The killed holder's hook shell still waits: let it (and any hook
        // the taker runs) go on; `started` now tells whether a hook ran again.
        std::fs::remove_file(&started).unwrap();
        std::fs::write(self.path("go"), b"").unwrap();
    }

    /// The next `burrow run` on the thread, to its end.
    fn take_over(&self, args: &[String]) -> Run {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = burrow_in(self.dir(), &args, b"");
        run.assert_code(0);
        run
    }

    /// `burrow thread show t --json`.
    fn show(&self) -> Value {
        let spec = self.spec();
        let run = burrow_in(
            self.dir(),
            &["--json", "thread", "show", "t", "--session", &spec],
            b"",
        );
        run.assert_code(0);
        run.json()
    }
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

/// The results of call `id` in a shown thread's history.
fn results_of(shown: &Value, id: &str) -> Vec<String> {
    shown["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["message"]["role"] == "tool_result" && e["message"]["call_id"] == id)
        .map(|e| {
            e["message"]["content"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

/// The last assistant text of a shown thread's history.
fn last_text(shown: &Value) -> String {
    shown["history"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|e| e["message"]["role"] == "assistant")
        .and_then(|e| e["message"]["parts"].as_array().cloned())
        .and_then(|parts| {
            parts
                .iter()
                .find_map(|p| p["text"].as_str().map(str::to_owned))
        })
        .unwrap_or_default()
}

fn taken_over(s: &Setup) {
    let shown = s.show();
    assert_eq!(
        run_statuses(&shown),
        [
            ("failed".to_owned(), Some("abandoned".to_owned())),
            ("completed".to_owned(), None)
        ]
    );
    assert_eq!(last_text(&shown), "taken over");
}

fn write(id: &str, path: &str, content: &str) -> Value {
    json!({"tool_calls": [{"id": id, "name": "write_file",
        "arguments": {"file_path": path, "content": content}}]})
}

#[test]
fn a_write_whose_deny_hook_was_running_at_sigkill_is_decided_again_and_never_runs() {
    let s = Setup::new();
    let deny = json!({"PreToolUse": [{"matcher": "write_file", "hooks": [{"type": "command",
        "command": format!("{HOLD}; echo 'secrets stay out' >&2; exit 2")}]}]});
    let holder = s.args(
        "holder",
        "write it",
        &[
            write("w", "/secret.txt", "leaked"),
            json!({"text": "never"}),
        ],
        &deny,
    );
    s.kill_at_hold(&holder);
    let taker = s.args("taker", "next", &[json!({"text": "taken over"})], &deny);
    s.take_over(&taker);

    assert_eq!(s.file("secret.txt"), None, "the denied write never ran");
    assert!(s.path("started").exists(), "the taker asked the hook again");
    taken_over(&s);
    let results = results_of(&s.show(), "w");
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(results[0].contains("denied"), "{}", results[0]);
    assert!(results[0].contains("secrets stay out"), "{}", results[0]);
}

#[test]
fn a_write_killed_before_its_result_was_saved_is_never_made_twice() {
    let s = Setup::new();
    // The PostToolUse hook holds the run after the write, before its result is saved.
    let hold_after = json!({"PostToolUse": [{"matcher": "write_file", "hooks": [{"type": "command",
        "command": HOLD}]}]});
    let holder = s.args(
        "holder",
        "write it",
        &[write("w", "/a.txt", "first"), json!({"text": "never"})],
        &hold_after,
    );
    s.kill_at_hold(&holder);
    assert_eq!(s.file("a.txt").as_deref(), Some("first"), "the write ran");
    // The file is changed behind the write's back: a write made again (its
    // call replayed) would put "first" back.
    std::fs::write(s.dir().join("ws").join("a.txt"), "changed since").unwrap();
    let taker = s.args(
        "taker",
        "next",
        &[json!({"text": "taken over"})],
        &hold_after,
    );
    s.take_over(&taker);

    assert_eq!(
        s.file("a.txt").as_deref(),
        Some("changed since"),
        "the write took effect once"
    );
    taken_over(&s);
    let results = results_of(&s.show(), "w");
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(
        results[0].starts_with("The outcome of this call is unknown"),
        "{}",
        results[0]
    );
}

#[test]
fn a_run_killed_between_turns_is_taken_over_and_nothing_is_redone() {
    let s = Setup::new();
    // The Stop hook holds the run after its first answer without calls,
    // once the write's turn is saved.
    let hold_stop = json!({"Stop": [{"hooks": [{"type": "command", "command": HOLD}]}]});
    let holder = s.args(
        "holder",
        "write it",
        &[write("w", "/b.txt", "once"), json!({"text": "written"})],
        &hold_stop,
    );
    s.kill_at_hold(&holder);
    assert_eq!(s.file("b.txt").as_deref(), Some("once"));
    std::fs::remove_file(s.dir().join("ws").join("b.txt")).unwrap();
    let taker = s.args(
        "taker",
        "next",
        &[json!({"text": "taken over"})],
        &hold_stop,
    );
    s.take_over(&taker);

    assert_eq!(
        s.file("b.txt"),
        None,
        "the finished write was not made again"
    );
    taken_over(&s);
    let shown = s.show();
    let results = results_of(&shown, "w");
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(results[0].contains("b.txt"), "{}", results[0]);
}

/// The JSON lines of a run's stdout.
fn lines(run: &Run) -> Vec<Value> {
    run.out()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The `run_ended` line of a run's stdout.
fn ended(run: &Run) -> Value {
    lines(run)
        .into_iter()
        .rfind(|l| l["type"] == "run_ended")
        .unwrap_or_else(|| panic!("no run_ended line: {}", run.out()))
}

#[test]
fn a_retried_command_id_whose_run_was_killed_mid_call_carries_the_work_out_and_prints_its_outcome()
{
    let s = Setup::new();
    // The PreToolUse hook holds the write while it decides, then allows it.
    let hold = json!({"PreToolUse": [{"matcher": "write_file", "hooks": [{"type": "command",
        "command": HOLD}]}]});
    let with_id = |mut args: Vec<String>| {
        args.extend(["--command-id".to_owned(), "c1".to_owned()]);
        args
    };
    let holder = with_id(s.args(
        "holder",
        "write it",
        &[write("w", "/c.txt", "carried"), json!({"text": "never"})],
        &hold,
    ));
    s.kill_at_hold(&holder);
    assert_eq!(s.file("c.txt"), None, "the holder died before its write");

    // The retry posts nothing new: it waits for the dead claim to lapse, takes
    // the thread over, carries the write out and lets the model finish.
    let retry = with_id(s.args(
        "retry",
        "write it",
        &[json!({"text": "written at last"})],
        &hold,
    ));
    let run = s.take_over(&retry);
    assert_eq!(
        s.file("c.txt").as_deref(),
        Some("carried"),
        "the work was done"
    );
    assert!(s.path("started").exists(), "the write was decided again");
    let printed = lines(&run);
    assert!(
        printed
            .iter()
            .any(|l| l["type"] == "taken_over" && l["command_id"] == "c1"),
        "{}",
        run.out()
    );
    let end = ended(&run);
    assert_eq!(end["outcome"], "completed", "{end}");
    assert!(run.out().contains("written at last"), "{}", run.out());

    let shown = s.show();
    assert_eq!(
        run_statuses(&shown),
        [
            ("failed".to_owned(), Some("abandoned".to_owned())),
            ("completed".to_owned(), None)
        ]
    );
    assert_eq!(last_text(&shown), "written at last");
    let prompts = shown["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["message"]["role"] == "user")
        .count();
    assert_eq!(prompts, 1, "the message was not posted twice");
    let results = results_of(&shown, "w");
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(results[0].contains("c.txt"), "{}", results[0]);

    // A third delivery does nothing and prints the run that carried it out.
    std::fs::write(s.dir().join("ws").join("c.txt"), "changed since").unwrap();
    let again = s.take_over(&retry);
    assert_eq!(s.file("c.txt").as_deref(), Some("changed since"));
    assert!(
        lines(&again).iter().any(|l| l["type"] == "remembered"),
        "{}",
        again.out()
    );
    assert_eq!(ended(&again)["outcome"], "completed", "{}", again.out());
    assert_eq!(run_statuses(&s.show()).len(), 2, "no run was started again");
}
