//! `burrow run` output never stalls the run: a reader that reads late gets every byte and the run keeps its claim; a reader that goes away ends the command quietly and the run is stopped cleanly, recorded so.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::support::burrow_in;

const PATIENCE: Duration = Duration::from_secs(60);

fn script(dir: &Path, answers: &[Value]) -> String {
    let path = dir.join("script.jsonl");
    let text: String = answers.iter().map(|a| format!("{a}\n")).collect();
    std::fs::write(&path, text).unwrap();
    format!("scripted:{}", path.display())
}

fn settings(dir: &Path, hooks: Value) -> String {
    let path = dir.join("settings.json");
    std::fs::write(&path, json!({ "hooks": hooks }).to_string()).unwrap();
    path.display().to_string()
}

fn spawn(dir: &Path, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_burrow"))
        .env_remove("BURROW_LOG")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for `child` to exit (killing it after [`PATIENCE`]); its code and stderr.
fn finish(mut child: Child) -> (i32, String) {
    let deadline = Instant::now() + PATIENCE;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("burrow did not end");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    (status.code().unwrap_or(-1), stderr)
}

fn show(dir: &Path, spec: &str) -> Value {
    let run = burrow_in(
        dir,
        &["--json", "thread", "show", "t", "--session", spec],
        b"",
    );
    run.assert_code(0);
    run.json()
}

/// 2 MB of answer text (far more than a pipe holds), then a Stop hook that
/// keeps the run going past its 2 s claim while nobody reads.
fn big_answer(dir: &Path) -> (String, String, String) {
    let text: String = (0..40_000)
        .map(|i| format!("line {i:>6} of the answer\n"))
        .collect();
    let text = text.repeat(2);
    let model = script(dir, &[json!({ "text": text })]);
    let settings = settings(
        dir,
        json!({"Stop": [{"hooks": [{"type": "command", "command": "sleep 3"}]}]}),
    );
    (text, model, settings)
}

#[test]
fn a_slow_reader_of_a_session_run_gets_every_byte_and_the_run_keeps_its_claim() {
    let dir = tempfile::tempdir().unwrap();
    let (text, model, settings) = big_answer(dir.path());
    let spec = format!("sqlite:{}", dir.path().join("s.db").display());
    let mut child = spawn(
        dir.path(),
        &[
            "--json",
            "run",
            "go",
            "--model",
            &model,
            "--settings",
            &settings,
            "--session",
            &spec,
            "--thread",
            "t",
            "--claim-ttl",
            "2",
        ],
    );
    // Nobody reads for 5 s: more than two claim TTLs.
    std::thread::sleep(Duration::from_secs(5));
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let (code, stderr) = finish(child);
    assert_eq!(code, 0, "{stderr}");
    let events: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let said: String = events
        .iter()
        .filter(|e| e["type"] == "text_delta")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert!(
        said == text,
        "the text printed is not the answer ({} of {} bytes)",
        said.len(),
        text.len()
    );
    let last = events.last().unwrap();
    assert_eq!(last["type"], "run_ended");
    assert_eq!(last["outcome"], "completed", "{last}");
    assert!(!events.iter().any(|e| e["type"] == "gap"));
    let shown = show(dir.path(), &spec);
    assert_eq!(shown["runs"][0]["status"], "completed", "{shown}");
}

#[test]
fn a_slow_reader_of_a_plain_run_gets_every_byte() {
    let dir = tempfile::tempdir().unwrap();
    let (text, model, settings) = big_answer(dir.path());
    let mut child = spawn(
        dir.path(),
        &[
            "--backend",
            "memory:",
            "run",
            "go",
            "--model",
            &model,
            "--settings",
            &settings,
        ],
    );
    std::thread::sleep(Duration::from_secs(4));
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let (code, stderr) = finish(child);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        out == text,
        "stdout is not the answer ({} of {} bytes)",
        out.len(),
        text.len()
    );
    assert!(stderr.contains("burrow: run completed"), "{stderr}");
}

#[test]
fn a_reader_that_goes_away_ends_burrow_quietly_and_the_run_is_stopped_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // The first `ls` waits for `go`; the second waits for ever (only a stop ends it).
    let hook = "if [ -e started ]; then while true; do sleep 0.05; done; fi; \
        touch started; while [ ! -e go ]; do sleep 0.01; done";
    let settings = settings(
        d,
        json!({"PreToolUse": [{"matcher": "ls", "hooks": [
        {"type": "command", "command": hook}]}]}),
    );
    let ls =
        |id: &str| json!({"tool_calls": [{"id": id, "name": "ls", "arguments": {"path": "/"}}]});
    let model = script(d, &[ls("l1"), ls("l2"), json!({"text": "never"})]);
    let spec = format!("sqlite:{}", d.join("s.db").display());
    let mut child = spawn(
        d,
        &[
            "--json",
            "run",
            "go",
            "--model",
            &model,
            "--settings",
            &settings,
            "--session",
            &spec,
            "--thread",
            "t",
        ],
    );
    let deadline = Instant::now() + PATIENCE;
    while !d.join("started").exists() {
        assert!(Instant::now() < deadline, "the run never reached its hook");
        std::thread::sleep(Duration::from_millis(10));
    }
    // The reader goes away; then the run goes on and prints.
    drop(child.stdout.take());
    std::fs::write(d.join("go"), b"").unwrap();
    let (code, stderr) = finish(child);
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("cannot write"), "{stderr}");
    let shown = show(d, &spec);
    assert_eq!(shown["runs"][0]["status"], "stopped", "{shown}");
    assert_eq!(shown["thread"]["status"], "idle", "{shown}");
    // Every call in the history has its result.
    let history = shown["history"].as_array().unwrap();
    let calls = history
        .iter()
        .filter(|e| e["message"]["role"] == "assistant")
        .flat_map(|e| e["message"]["parts"].as_array().unwrap().clone())
        .filter(|p| p["type"] == "tool_call")
        .count();
    let results = history
        .iter()
        .filter(|e| e["message"]["role"] == "tool_result")
        .count();
    assert_eq!(calls, results, "{history:?}");
}
