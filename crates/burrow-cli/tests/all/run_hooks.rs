//! `burrow run` hooks through the binary: a long deny, a decision over 1 MiB, ignored failures on stderr and as `hook_error` events, async hooks run to their end before exit, and the transcript hooks are pointed at.

use std::path::Path;

use serde_json::{Value, json};

use super::support::{Run, burrow_in_env};

/// A folder with a workspace (`fs:`), a script and settings.
struct Setup {
    dir: tempfile::TempDir,
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

    fn file(&self, name: &str) -> Option<String> {
        std::fs::read_to_string(self.dir().join("ws").join(name)).ok()
    }

    /// Runs `burrow --json run go` with `answers` and `hooks` (a settings `hooks` value).
    fn run(&self, answers: &[Value], hooks: Value, json: bool) -> Run {
        let script = self.dir().join("script.jsonl");
        let text: String = answers.iter().map(|a| format!("{a}\n")).collect();
        std::fs::write(&script, text).unwrap();
        let settings = self.dir().join("settings.json");
        std::fs::write(&settings, json!({ "hooks": hooks }).to_string()).unwrap();
        let backend = format!("fs:{}", self.dir().join("ws").display());
        let model = format!("scripted:{}", script.display());
        let mut args = vec!["--backend", &backend];
        if json {
            args.push("--json");
        }
        args.extend_from_slice(&[
            "run",
            "go",
            "--model",
            &model,
            "--settings",
            settings.to_str().unwrap(),
        ]);
        let transcripts = self.dir().join("transcripts");
        burrow_in_env(
            self.dir(),
            &args,
            b"",
            &[("BURROW_TRANSCRIPT_DIR", transcripts.to_str().unwrap())],
        )
    }
}

fn write_then_done() -> Vec<Value> {
    vec![
        json!({"tool_calls": [{"id": "w", "name": "write_file",
            "arguments": {"file_path": "/a.txt", "content": "original"}}]}),
        json!({"text": "done"}),
    ]
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

fn command(cmd: &str) -> Value {
    json!({"type": "command", "command": cmd, "on_error": "allow"})
}

#[test]
fn a_deny_longer_than_10000_characters_denies_under_on_error_allow_and_the_write_never_runs() {
    let s = Setup::new();
    let reason = "no writes today. ".repeat(1_000);
    assert!(reason.len() > 10_000);
    let decision = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
        "permissionDecision": "deny", "permissionDecisionReason": reason}});
    std::fs::write(s.dir().join("deny.json"), decision.to_string()).unwrap();
    let hooks =
        json!({"PreToolUse": [{"matcher": "write_file", "hooks": [command("cat deny.json")]}]});
    let run = s.run(&write_then_done(), hooks, true);
    run.assert_code(0);
    let events = events(&run);
    let result = result_of(&events, "w");
    assert_eq!(result["is_error"], true);
    assert!(
        result["content"].as_str().unwrap().contains(reason.trim()),
        "the whole reason reaches the model"
    );
    assert_eq!(s.file("a.txt"), None, "the denied write ran");
    assert!(!run.stderr.contains("ignored"), "{}", run.stderr);
}

#[test]
fn a_decision_over_1_mib_is_a_failure_that_denies_by_default() {
    let s = Setup::new();
    let flood = "printf '{\"reason\": \"'; head -c 1100000 /dev/zero | tr '\\0' x; printf '\"}'";
    let hooks = json!({"PreToolUse": [{"matcher": "write_file", "hooks": [
        {"type": "command", "command": flood}]}]});
    let run = s.run(&write_then_done(), hooks, true);
    run.assert_code(0);
    let events = events(&run);
    let result = result_of(&events, "w");
    assert_eq!(result["is_error"], true);
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains("more than 1 MiB"),
        "{result}"
    );
    assert_eq!(s.file("a.txt"), None);
}

#[test]
fn failures_ignored_under_on_error_allow_are_a_stderr_line_and_a_hook_error_event() {
    let s = Setup::new();
    let hooks = json!({
        "PreToolUse": [{"matcher": "write_file", "hooks": [command("echo broken >&2; exit 1")]}],
        "PostToolUse": [{"hooks": [{"type": "command", "command": "exit 7"}]}],
    });
    let run = s.run(&write_then_done(), hooks.clone(), true);
    run.assert_code(0);
    assert_eq!(s.file("a.txt").as_deref(), Some("original"));
    let events = events(&run);
    let errors: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "hook_error")
        .collect();
    assert_eq!(errors.len(), 2, "{events:?}");
    assert_eq!(errors[0]["event"], "PreToolUse");
    assert!(
        errors[0]["message"]
            .as_str()
            .unwrap()
            .contains("exited with code 1: broken")
    );
    assert_eq!(errors[1]["event"], "PostToolUse");
    assert!(errors[1]["message"].as_str().unwrap().contains("code 7"));
    let lines: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("failed and was ignored"))
        .collect();
    assert_eq!(lines.len(), 2, "{}", run.stderr);
    assert!(
        lines[0].starts_with("burrow: a PreToolUse hook"),
        "{}",
        lines[0]
    );

    // Without --json: the stderr lines alone.
    std::fs::remove_file(s.dir().join("ws/a.txt")).unwrap();
    let run = s.run(&write_then_done(), hooks, false);
    run.assert_code(0);
    assert_eq!(
        run.stderr.matches("failed and was ignored").count(),
        2,
        "{}",
        run.stderr
    );
    assert!(!run.out().contains("hook_error"));
}

#[test]
fn an_async_hook_runs_to_its_end_before_burrow_exits() {
    let s = Setup::new();
    let hooks = json!({"Stop": [{"hooks": [
        {"type": "command", "command": "sleep 1; echo ran > async-ran", "async": true}
    ]}]});
    let run = s.run(&[json!({"text": "done"})], hooks, true);
    run.assert_code(0);
    let marker = s.dir().join("async-ran");
    assert_eq!(
        std::fs::read_to_string(&marker).ok().as_deref(),
        Some("ran\n"),
        "the async hook was cut short when burrow exited"
    );
}

#[test]
fn hooks_get_a_transcript_path_whose_file_holds_the_conversation_so_far() {
    let s = Setup::new();
    // The hook keeps its input and a copy of the transcript as it was when it ran.
    let keep = "cat > input.json; \
        t=$(sed -n 's/.*\"transcript_path\":\"\\([^\"]*\\)\".*/\\1/p' input.json); \
        cp \"$t\" transcript-then.jsonl";
    let hooks = json!({"PreToolUse": [{"matcher": "write_file", "hooks": [
        {"type": "command", "command": keep}]}]});
    let run = s.run(&write_then_done(), hooks, true);
    run.assert_code(0);
    let input: Value =
        serde_json::from_str(&std::fs::read_to_string(s.dir().join("input.json")).unwrap())
            .unwrap();
    assert_eq!(input["permission_mode"], "default");
    let path = input["transcript_path"].as_str().unwrap();
    assert!(
        path.starts_with(s.dir().join("transcripts").to_str().unwrap()),
        "{path}"
    );
    let then: Vec<Value> = std::fs::read_to_string(s.dir().join("transcript-then.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = then.iter().map(|l| l["type"].as_str().unwrap()).collect();
    // The prompt, then the call the hook is asked about.
    assert_eq!(kinds, ["user", "assistant"], "{then:?}");
    assert_eq!(then[0]["message"]["text"], "go");
    assert_eq!(then[1]["message"]["parts"][0]["name"], "write_file");
    // After the run, the whole conversation.
    let after: Vec<Value> = std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = after.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["user", "assistant", "tool_result", "assistant"]);
}
