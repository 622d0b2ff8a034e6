//! `burrow run`: scripted agent runs end to end through the binary, over state:, fs: and sqlite:, with command hooks from a settings file.
//!
//! The `--json` event streams are compared with golden files in
//! tests/fixtures/run (`*.golden.jsonl`, run ids masked as `<run_id>`);
//! `BURROW_BLESS=1` rewrites them from the binary's output.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::support::{Run, Workspace, burrow_in, burrow_in_env};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/run")
        .join(name)
}

fn fixture_str(name: &str) -> String {
    fixture(name).display().to_string()
}

fn scripted(name: &str) -> String {
    format!("scripted:{}", fixture_str(name))
}

/// Runs `burrow --backend SPEC ARGS...` in `dir`.
fn burrow(dir: &Path, spec: &str, args: &[&str]) -> Run {
    let mut all = vec!["--backend", spec];
    all.extend_from_slice(args);
    burrow_in(dir, &all, b"")
}

/// `line` with its run id (if any) replaced by `<run_id>`.
fn mask_run_id(line: &str) -> String {
    const KEY: &str = "\"run_id\":\"";
    match line.find(KEY) {
        Some(at) => {
            let start = at + KEY.len();
            let end = start + line[start..].find('"').unwrap();
            assert!(line[start..end].starts_with("run_"), "{line}");
            format!("{}<run_id>{}", &line[..start], &line[end..])
        }
        None => line.to_owned(),
    }
}

/// stdout as JSON lines, each run id replaced by `<run_id>`.
fn events(run: &Run) -> Vec<Value> {
    run.out()
        .lines()
        .map(|line| {
            serde_json::from_str(&mask_run_id(line))
                .unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"))
        })
        .collect()
}

/// Compares the events `run` printed with the golden file `name`, as JSON
/// values (or rewrites the file from stdout under BURROW_BLESS=1).
fn assert_golden(name: &str, run: &Run) {
    let path = fixture(name);
    let masked: String = run
        .out()
        .lines()
        .map(|l| format!("{}\n", mask_run_id(l)))
        .collect();
    if std::env::var_os("BURROW_BLESS").is_some() {
        std::fs::write(&path, &masked).unwrap();
    }
    let golden = std::fs::read_to_string(&path).unwrap();
    let expected: Vec<Value> = golden
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        events(run),
        expected,
        "events differ from {name}:\n{masked}"
    );
}

fn types(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

/// The notes script with the hooks settings, `--json`, over `spec`; checks the golden stream.
fn notes_run(dir: &Path, spec: &str) {
    let settings = fixture_str("hooks.json");
    let model = scripted("notes.jsonl");
    let run = burrow(
        dir,
        spec,
        &[
            "--json",
            "run",
            "Make the note say two.",
            "--model",
            &model,
            "--settings",
            &settings,
        ],
    );
    run.assert_code(0);
    assert_golden("notes.golden.jsonl", &run);
    let events = events(&run);
    // Every event is one of DESIGN §7's, the "type" field first.
    for line in run.out().lines() {
        assert!(line.starts_with("{\"type\":"), "{line}");
    }
    // Each result answers its call, in call order.
    let calls: Vec<&Value> = events.iter().filter(|e| e["type"] == "tool_call").collect();
    let results: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool_result")
        .collect();
    assert_eq!(calls.len(), results.len());
    for (call, result) in calls.iter().zip(&results) {
        assert_eq!(call["id"], result["id"]);
        assert_eq!(call["name"], result["name"]);
    }
    // The PreToolUse hook denied /protected.txt (exit 2, stderr is the reason).
    let denied = results.iter().find(|r| r["id"] == "w2").unwrap();
    assert_eq!(denied["is_error"], true);
    assert!(
        denied["content"]
            .as_str()
            .unwrap()
            .contains("/protected.txt is read-only"),
        "{denied}"
    );
    // The PostToolUse hook's context reached the read's result.
    let read = results.iter().find(|r| r["id"] == "r1").unwrap();
    assert!(
        read["content"]
            .as_str()
            .unwrap()
            .ends_with("post hook: the read was checked"),
        "{read}"
    );
}

#[test]
fn json_run_over_a_state_file_with_hooks() {
    let ws = Workspace::new();
    notes_run(ws.dir(), &ws.spec());
    let doc: Value = serde_json::from_slice(&std::fs::read(&ws.state).unwrap()).unwrap();
    let files = doc.as_object().unwrap();
    let paths: Vec<&String> = files.keys().collect();
    assert_eq!(paths, ["/notes.md"], "{doc}");
    assert_eq!(ws.run(&["cat", "/notes.md"]).out(), "two\n");
}

#[cfg(feature = "fs")]
#[test]
fn json_run_over_a_folder_with_hooks() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    notes_run(dir.path(), &format!("fs:{}", work.display()));
    assert_eq!(
        std::fs::read_to_string(work.join("notes.md")).unwrap(),
        "two\n"
    );
    assert!(!work.join("protected.txt").exists());
}

#[cfg(feature = "sqlite")]
#[test]
fn json_run_over_sqlite_with_hooks() {
    let dir = tempfile::tempdir().unwrap();
    let spec = format!("sqlite:{}", dir.path().join("agent.db").display());
    notes_run(dir.path(), &spec);
    let cat = burrow(dir.path(), &spec, &["cat", "/notes.md"]);
    cat.assert_code(0);
    assert_eq!(cat.out(), "two\n");
    burrow(dir.path(), &spec, &["cat", "/protected.txt"]).assert_code(1);
}

#[test]
fn a_state_file_is_saved_before_the_tool_result_is_given() {
    let ws = Workspace::new();
    // The PostToolUse hook runs after the call and before its result goes
    // back: a copy of the state file and its journal made then must hold
    // the write (the journal does until the document is compacted).
    let settings = ws.dir().join("settings.json");
    std::fs::write(
        &settings,
        r#"{"hooks": {"PostToolUse": [{"matcher": "write_file", "hooks": [{"type": "command", "command": "mkdir -p seen && cp state.json.journal seen/ && { cp state.json seen/ 2>/dev/null || true; }"}]}]}}"#,
    )
    .unwrap();
    let model = scripted("notes.jsonl");
    let run = ws.run(&[
        "run",
        "go",
        "--model",
        &model,
        "--settings",
        settings.to_str().unwrap(),
    ]);
    run.assert_code(0);
    let seen = super::support::burrow_in(
        ws.dir(),
        &["--backend", "state:seen/state.json", "cat", "/notes.md"],
        b"",
    );
    seen.assert_code(0);
    assert!(!seen.stdout.is_empty());
    // Without the PreToolUse hook /protected.txt was written too.
    assert_eq!(ws.run(&["cat", "/protected.txt"]).out(), "secret\n");
    // No group lock is left behind: a one-shot command can change the file at once.
    ws.put("/after.txt", "later\n");
}

#[test]
fn human_output_streams_text_and_one_progress_line_per_call() {
    let ws = Workspace::new();
    let settings = fixture_str("hooks.json");
    let model = scripted("notes.jsonl");
    let run = ws.run(&[
        "run",
        "Make the note say two.",
        "--model",
        &model,
        "--settings",
        &settings,
    ]);
    run.assert_code(0);
    assert_eq!(run.out(), "Writing two files.\nDone: /notes.md says two.\n");
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(
        lines,
        [
            "burrow: tool write_file /notes.md: ok",
            "burrow: tool write_file /protected.txt: refused: The call was denied by a hook: /protected.txt is read-only",
            "burrow: tool read_file /notes.md: ok",
            "burrow: tool edit_file /notes.md: ok",
            "burrow: run completed: 4 turns, 4 tool calls, usage: 40 input, 12 output, 4 cache read tokens",
        ],
        "{}",
        run.stderr
    );
}

#[test]
fn progress_lines_quote_control_characters() {
    let ws = Workspace::new();
    let script = ws.dir().join("script.jsonl");
    std::fs::write(
        &script,
        concat!(
            r#"{"tool_calls": [{"id": "c1", "name": "write_file", "arguments": {"file_path": "/a\nb\u001b[31m", "content": "x"}}]}"#,
            "\n",
            r#"{"text": "ok"}"#,
            "\n"
        ),
    )
    .unwrap();
    let model = format!("scripted:{}", script.display());
    let run = ws.run(&["run", "go", "--model", &model]);
    run.assert_code(0);
    let first = run.stderr.lines().next().unwrap();
    assert_eq!(
        first, "burrow: tool write_file \"/a\\nb\\u{1b}[31m\": ok",
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains('\u{1b}'));
}

#[test]
fn unknown_usage_is_printed_as_unknown() {
    let ws = Workspace::new();
    let script = ws.dir().join("script.jsonl");
    std::fs::write(&script, "{\"text\": \"hello\"}\n").unwrap();
    let model = format!("scripted:{}", script.display());
    let run = ws.run(&["run", "hi", "--model", &model]);
    run.assert_code(0);
    assert_eq!(run.out(), "hello\n");
    assert_eq!(
        run.stderr,
        "burrow: run completed: 1 turn, 0 tool calls, usage unknown\n"
    );
    let json = ws.run(&["--json", "run", "hi", "--model", &model]);
    let events = events(&json);
    assert_eq!(
        types(&events),
        ["run_started", "text_delta", "usage", "run_ended"]
    );
    // Unknown counts are left out, never printed as 0.
    assert_eq!(events[2]["usage"], serde_json::json!({}));
    assert_eq!(events[3]["usage"], serde_json::json!({}));
    assert_eq!(events[0]["thread_id"], Value::Null);
}

#[test]
fn running_out_of_script_lines_fails_with_exit_2() {
    let ws = Workspace::new();
    let script = ws.dir().join("script.jsonl");
    std::fs::write(
        &script,
        r#"{"tool_calls": [{"id": "c1", "name": "ls", "arguments": {"path": "/"}}]}"#,
    )
    .unwrap();
    let model = format!("scripted:{}", script.display());
    let run = ws.run(&["--json", "run", "go", "--model", &model]);
    run.assert_code(2);
    let events = events(&run);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "run_ended");
    assert_eq!(last["outcome"], "failed");
    assert_eq!(last["reason"], "model_error");
    assert!(
        last["message"].as_str().unwrap().contains("no answer left"),
        "{last}"
    );
    let human = ws.run(&["run", "go", "--model", &model]);
    human.assert_code(2);
    assert!(
        human
            .stderr
            .ends_with("): 2 turns, 1 tool call, usage unknown\n"),
        "{}",
        human.stderr
    );
    assert!(
        human.stderr.contains("run failed (model_error: "),
        "{}",
        human.stderr
    );
}

#[test]
fn max_turns_fails_with_exit_2() {
    let ws = Workspace::new();
    let model = scripted("notes.jsonl");
    let run = ws.run(&["--json", "run", "go", "--model", &model, "--max-turns", "2"]);
    run.assert_code(2);
    let events = events(&run);
    let last = events.last().unwrap();
    assert_eq!(last["outcome"], "failed");
    assert_eq!(last["reason"], "max_turns");
    // Two requests were made, and their calls all answered.
    assert_eq!(types(&events).iter().filter(|t| **t == "usage").count(), 2);
    // --max-turns 0 is a usage error.
    ws.run(&["run", "go", "--model", &model, "--max-turns", "0"])
        .assert_code(2);
}

#[test]
fn a_hook_that_asks_pauses_the_run_with_exit_3() {
    let ws = Workspace::new();
    let model = scripted("notes.jsonl");
    let settings = fixture_str("ask.json");
    let run = ws.run(&[
        "--json",
        "run",
        "go",
        "--model",
        &model,
        "--settings",
        &settings,
    ]);
    run.assert_code(3);
    let events = events(&run);
    let last = events.last().unwrap();
    assert_eq!(last["outcome"], "paused");
    assert_eq!(last["reason"], "a person must approve writes");
    // Nothing was written: both calls wait for approval.
    assert!(!ws.state.exists());
    let human = ws.run(&["run", "go", "--model", &model, "--settings", &settings]);
    human.assert_code(3);
    assert!(
        human
            .stderr
            .contains("burrow: run paused (waiting for approval: a person must approve writes)"),
        "{}",
        human.stderr
    );
}

#[test]
fn a_hook_that_stops_the_run_exits_2() {
    let ws = Workspace::new();
    let model = scripted("notes.jsonl");
    let settings = fixture_str("stop.json");
    let run = ws.run(&[
        "--json",
        "run",
        "go",
        "--model",
        &model,
        "--settings",
        &settings,
    ]);
    run.assert_code(2);
    let last = events(&run).pop().unwrap();
    assert_eq!(last["outcome"], "stopped");
    assert_eq!(last["reason"], "enough for today");
    // The first batch ran before the stop.
    assert_eq!(ws.run(&["cat", "/notes.md"]).out(), "one\n");
}

/// Expects a bad configuration: exit 2, one sentence on stderr containing
/// `expected`, nothing on stdout, and nothing run (no state file, no hook).
fn assert_bad_config(args: &[&str], expected: &str) {
    let ws = Workspace::new();
    for json in [false, true] {
        let mut all = Vec::new();
        if json {
            all.push("--json");
        }
        all.push("run");
        all.push("Write the note.");
        all.extend_from_slice(args);
        let run = ws.run(&all);
        run.assert_code(2);
        assert_eq!(run.out(), "", "{:?}", run.args);
        let lines: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{}", run.stderr);
        assert!(lines[0].starts_with("burrow: "), "{}", run.stderr);
        assert!(lines[0].contains(expected), "{}", run.stderr);
        assert!(!ws.state.exists(), "a tool ran: {:?}", run.args);
        assert_eq!(ws.dir_entries(), Vec::<String>::new(), "{:?}", run.args);
    }
}

#[test]
fn provider_models_without_a_name_are_refused() {
    // With a name they run (tests/all/run_providers.rs).
    for scheme in ["openai", "openai-responses", "anthropic"] {
        assert_bad_config(&["--model", &format!("{scheme}:")], "names no model");
    }
}

#[test]
fn unknown_model_specs_are_bad_configuration() {
    assert_bad_config(&["--model", ""], "is empty");
    for model in ["gpt-4o", "ollama:llama3", "scripted:"] {
        let expected = if model == "scripted:" {
            "names no file"
        } else {
            "is not a model burrow knows"
        };
        assert_bad_config(&["--model", model], expected);
    }
}

#[test]
fn a_missing_or_invalid_script_is_bad_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let missing = format!("scripted:{}", dir.path().join("nope.jsonl").display());
    assert_bad_config(&["--model", &missing], "the script file cannot be read");
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"text\": \"fine\"}\n{\"txet\": \"typo\"}\n").unwrap();
    let bad = format!("scripted:{}", bad.display());
    assert_bad_config(&["--model", &bad], "line 2 of the script");
}

#[test]
fn unreadable_or_invalid_settings_are_bad_configuration() {
    let model = scripted("notes.jsonl");
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.json");
    assert_bad_config(
        &["--model", &model, "--settings", missing.to_str().unwrap()],
        "cannot be read",
    );
    let not_json = dir.path().join("not.json");
    std::fs::write(&not_json, "{\"hooks\": ").unwrap();
    assert_bad_config(
        &["--model", &model, "--settings", not_json.to_str().unwrap()],
        "not valid JSON",
    );
    let wrong_type = dir.path().join("prompt.json");
    std::fs::write(
        &wrong_type,
        r#"{"hooks": {"PreToolUse": [{"hooks": [{"type": "prompt", "prompt": "?"}]}]}}"#,
    )
    .unwrap();
    assert_bad_config(
        &[
            "--model",
            &model,
            "--settings",
            wrong_type.to_str().unwrap(),
        ],
        "which burrow does not run",
    );
}

#[test]
fn a_matcher_that_is_not_a_regex_is_bad_configuration() {
    let model = scripted("notes.jsonl");
    let settings = fixture_str("bad_matcher.json");
    assert_bad_config(&["--model", &model, "--settings", &settings], "write_(file");
}

#[test]
fn hooks_burrow_does_not_fire_are_named_in_a_note() {
    let ws = Workspace::new();
    let settings = ws.dir().join("settings.json");
    std::fs::write(
        &settings,
        r#"{"hooks": {"SubagentStop": [{"hooks": [{"type": "command", "command": "true"}]}], "Notification": []}}"#,
    )
    .unwrap();
    let script = ws.dir().join("script.jsonl");
    std::fs::write(&script, "{\"text\": \"hi\"}\n").unwrap();
    let model = format!("scripted:{}", script.display());
    let run = ws.run(&[
        "run",
        "hi",
        "--model",
        &model,
        "--settings",
        settings.to_str().unwrap(),
    ]);
    run.assert_code(0);
    assert!(
        run.stderr
            .contains("burrow: note: the settings name Notification hooks"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("burrow: note: the settings name SubagentStop hooks, which run only for subagents (--agents DIR); they do not run"),
        "{}",
        run.stderr
    );
}

/// Splits a shell command line on spaces, keeping "double-quoted" words whole.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            ' ' if !quoted => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

#[test]
fn the_readme_tour_runs_from_the_repository_root() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let line = readme
        .lines()
        .find(|l| l.starts_with("cargo run -p burrow-agent-cli -- run "))
        .expect("the README's Try it block has a `burrow run` line");
    let command = line.split('#').next().unwrap();
    let words = shell_words(command);
    let args: Vec<&str> = words.iter().skip(5).map(String::as_str).collect();
    assert_eq!(args[0], "run", "{line}");
    let run = burrow_in(&root, &args, b"");
    run.assert_code(0);
    assert!(!run.out().is_empty());
    assert!(
        run.stderr
            .contains(": refused: The call was denied by a hook"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("burrow: run completed: 3 turns"),
        "{}",
        run.stderr
    );
    // With --json the PostToolUse hook's context is in the read's result.
    let mut json = vec!["--json"];
    json.extend_from_slice(&args);
    let events = events(&burrow_in(&root, &json, b""));
    let read = events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["name"] == "read_file")
        .unwrap();
    assert!(
        read["content"].as_str().unwrap().contains("PostToolUse"),
        "{read}"
    );
}

/// True once process `pid` is gone (or a zombie waiting to be reaped).
fn gone(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z')),
    }
}

#[test]
fn ctrl_c_cancels_the_run_with_cancelled_results_and_exit_2() {
    use std::process::{Command, Stdio};
    let ws = Workspace::new();
    let script = ws.dir().join("script.jsonl");
    std::fs::write(
        &script,
        concat!(
            r#"{"tool_calls": [{"id": "c1", "name": "write_file", "arguments": {"file_path": "/a.txt", "content": "x"}}, {"id": "c2", "name": "ls", "arguments": {}}]}"#,
            "\n",
            r#"{"text": "never reached"}"#,
            "\n"
        ),
    )
    .unwrap();
    let started = ws.dir().join("hook.started");
    let pid_file = ws.dir().join("hook.pid");
    // A PreToolUse hook that hangs, with a child of its own.
    let hook = format!(
        "sleep 300 & echo $! > {}; touch {}; wait",
        pid_file.display(),
        started.display()
    );
    let settings = ws.dir().join("settings.json");
    let value = serde_json::json!({"hooks": {"PreToolUse": [{"matcher": "write_file",
        "hooks": [{"type": "command", "command": hook, "timeout": 600}]}]}});
    std::fs::write(&settings, value.to_string()).unwrap();
    let model = format!("scripted:{}", script.display());
    let spec = ws.spec();
    let child = Command::new(env!("CARGO_BIN_EXE_burrow"))
        .args(["--backend", &spec, "--json", "run", "go", "--model", &model])
        .arg("--settings")
        .arg(&settings)
        .current_dir(ws.dir())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the hook to be running (not a timing assertion: a bound on a hang).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !(started.exists() && pid_file.exists()) {
        assert!(
            std::time::Instant::now() < deadline,
            "the hook never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let interrupted = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(interrupted.success());
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    let events: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "run_started",
            "usage",
            "tool_call",
            "tool_call",
            "tool_result",
            "tool_result",
            "run_ended"
        ],
        "{stdout}"
    );
    // Every call has its result, in call order, each "cancelled".
    for (event, id) in events[4..6].iter().zip(["c1", "c2"]) {
        assert_eq!(event["id"], id, "{event}");
        assert_eq!(event["is_error"], true, "{event}");
        assert!(
            event["content"].as_str().unwrap().contains("cancelled"),
            "{event}"
        );
    }
    assert_eq!(events[6]["outcome"], "stopped");
    assert_eq!(events[6]["reason"], "cancelled");
    // The cancelled write never ran; the hook's child was killed with it.
    ws.run(&["cat", "/a.txt"]).assert_code(1);
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let pid = pid.trim();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !gone(pid) {
        assert!(
            std::time::Instant::now() < deadline,
            "the hook's child {pid} outlived the run"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn the_loops_own_hooks_fire_through_the_binary() {
    let ws = Workspace::new();
    let script = ws.dir().join("script.jsonl");
    std::fs::write(
        &script,
        "{\"text\": \"done\"}\n{\"text\": \"tests pass\"}\n",
    )
    .unwrap();
    let model = format!("scripted:{}", script.display());
    let marker = ws.dir().join("stopped-once");
    // Stop blocks once (a marker file says it did), then lets the run end.
    let stop = format!(
        "if [ -e {m} ]; then exit 0; fi; touch {m}; echo 'run the tests' >&2; exit 2",
        m = marker.display()
    );
    let settings = ws.dir().join("settings.json");
    let value = serde_json::json!({"hooks": {
        "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo context"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": stop}]}]
    }});
    std::fs::write(&settings, value.to_string()).unwrap();
    let settings = settings.to_str().unwrap();
    let run = ws.run(&[
        "--json",
        "run",
        "go",
        "--model",
        &model,
        "--settings",
        settings,
    ]);
    run.assert_code(0);
    let stream = events(&run);
    assert_eq!(types(&stream).iter().filter(|t| **t == "usage").count(), 2);
    assert_eq!(stream.last().unwrap()["outcome"], "completed");
    assert!(!run.stderr.contains("does not fire"), "{}", run.stderr);

    // A UserPromptSubmit hook that exits 2 erases the prompt: no request, exit 2.
    let blocking = ws.dir().join("block.json");
    let value = serde_json::json!({"hooks": {"UserPromptSubmit": [{"hooks": [
        {"type": "command", "command": "echo 'no prompts today' >&2; exit 2"}]}]}});
    std::fs::write(&blocking, value.to_string()).unwrap();
    let run = ws.run(&[
        "--json",
        "run",
        "go",
        "--model",
        &model,
        "--settings",
        blocking.to_str().unwrap(),
    ]);
    run.assert_code(2);
    let events = events(&run);
    assert_eq!(types(&events), ["run_started", "run_ended"]);
    let last = events.last().unwrap();
    assert_eq!(last["outcome"], "stopped");
    assert!(
        last["reason"]
            .as_str()
            .unwrap()
            .contains("no prompts today"),
        "{last}"
    );
}

/// `burrow --backend memory: ARGS...` in a fresh folder, with `env`.
fn memory_run(args: &[&str], env: &[(&str, &str)]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let mut all = vec!["--backend", "memory:"];
    all.extend_from_slice(args);
    burrow_in_env(dir.path(), &all, b"", env)
}

/// A log line of a span closing (`FmtSpan::CLOSE`), as opposed to burrow's own lines.
fn is_span_close(line: &str) -> bool {
    line.contains(" close time.busy=")
}

/// The names of the spans a log line is in, outermost first
/// (`... INFO run{...}:turn{...}: target: message` gives `["run", "turn"]`).
fn span_path(line: &str) -> Vec<&str> {
    let after_level = line.split_once(" INFO ").map_or("", |(_, rest)| rest);
    let path = after_level.split_once("}: ").map_or("", |(path, _)| path);
    path.split("}:")
        .map(|span| span.split_once('{').map_or(span, |(name, _)| name))
        .collect()
}

#[test]
fn burrow_log_prints_the_runs_spans_on_stderr_and_leaves_stdout_as_it_was() {
    let model = scripted("notes.jsonl");
    let args = ["run", "Make the note say two.", "--model", model.as_str()];
    let quiet = memory_run(&args, &[]);
    let logged = memory_run(&args, &[("BURROW_LOG", "burrow_runtime=info")]);
    quiet.assert_code(0);
    logged.assert_code(0);
    assert_eq!(
        logged.stdout, quiet.stdout,
        "stdout is byte for byte the same"
    );
    assert_eq!(
        quiet.out(),
        "Writing two files.\nDone: /notes.md says two.\n"
    );

    // Without BURROW_LOG stderr is burrow's own lines only.
    assert!(
        quiet.stderr.lines().all(|l| l.starts_with("burrow: ")),
        "{}",
        quiet.stderr
    );
    // With it, the same lines and one line per span as it closes.
    let (spans, own): (Vec<&str>, Vec<&str>) =
        logged.stderr.lines().partition(|l| is_span_close(l));
    assert_eq!(own, quiet.stderr.lines().collect::<Vec<_>>());
    let runs: Vec<&&str> = spans.iter().filter(|l| span_path(l) == ["run"]).collect();
    assert_eq!(runs.len(), 1, "{}", logged.stderr);
    assert!(runs[0].contains(" INFO "), "{}", runs[0]);
    assert!(runs[0].contains("outcome=\"completed\""), "{}", runs[0]);
    let count = |path: &[&str]| spans.iter().filter(|l| span_path(l) == path).count();
    assert_eq!(
        count(&["run", "turn"]),
        4,
        "one line per turn: {}",
        logged.stderr
    );
    assert_eq!(
        count(&["run", "turn", "model request"]),
        4,
        "{}",
        logged.stderr
    );
    assert_eq!(count(&["run", "turn", "tool call"]), 4, "{}", logged.stderr);
    assert!(
        spans
            .iter()
            .any(|l| l.contains("gen_ai.tool.name=write_file")),
        "{}",
        logged.stderr
    );
}

#[test]
fn burrow_log_leaves_the_json_stream_as_it_was() {
    let model = scripted("notes.jsonl");
    let args = [
        "--json",
        "run",
        "Make the note say two.",
        "--model",
        model.as_str(),
    ];
    let quiet = memory_run(&args, &[]);
    let logged = memory_run(&args, &[("BURROW_LOG", "trace")]);
    quiet.assert_code(0);
    logged.assert_code(0);
    // The same events, run id aside (each run has its own).
    assert_eq!(events(&logged), events(&quiet));
    assert!(
        logged.stderr.lines().any(is_span_close),
        "{}",
        logged.stderr
    );
}

#[test]
fn a_burrow_log_that_is_not_a_filter_is_a_note_and_warnings_only() {
    let model = scripted("notes.jsonl");
    let args = ["run", "Make the note say two.", "--model", model.as_str()];
    let run = memory_run(&args, &[("BURROW_LOG", "burrow_runtime=loud")]);
    run.assert_code(0);
    assert_eq!(run.out(), "Writing two files.\nDone: /notes.md says two.\n");
    let first = run.stderr.lines().next().unwrap();
    assert!(
        first.starts_with("burrow: note: BURROW_LOG is not a filter ("),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.lines().any(is_span_close), "{}", run.stderr);
}
