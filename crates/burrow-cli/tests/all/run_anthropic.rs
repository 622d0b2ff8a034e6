//! `burrow run --model anthropic:NAME` through the binary against a local server speaking the Messages stream, over an fs backend: the agent writes, reads back and edits a file, then ends with text.

use std::path::Path;
use std::process::Command;

use burrow_testkit::http::{ReplayServer, Reply};
use serde_json::{Value, json};

const KEY: &str = "sk-ant-cli-test-key";

/// One Messages answer: optional text, optional tool call (arguments in two fragments).
fn answer(text: Option<&str>, call: Option<(&str, &str, Value)>) -> Reply {
    let mut body = String::new();
    let mut ev =
        |v: Value| body += &format!("event: {}\ndata: {v}\n\n", v["type"].as_str().unwrap());
    ev(
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
        "model": "claude-test", "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 10, "output_tokens": 1}}}),
    );
    let mut index = 0;
    if let Some(text) = text {
        ev(
            json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
        );
        ev(json!({"type": "ping"}));
        ev(
            json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}}),
        );
        ev(json!({"type": "content_block_stop", "index": index}));
        index += 1;
    }
    let stop = if let Some((id, name, args)) = &call {
        let args = args.to_string();
        let (a, b) = args.split_at(args.len() / 2);
        ev(
            json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
        );
        for part in ["", a, b] {
            ev(
                json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": part}}),
            );
        }
        ev(json!({"type": "content_block_stop", "index": index}));
        "tool_use"
    } else {
        "end_turn"
    };
    ev(
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 5}}),
    );
    ev(json!({"type": "message_stop"}));
    Reply::sse(body)
}

/// The conversation: write, read back, edit, then text.
fn script() -> Vec<Reply> {
    vec![
        answer(
            Some("Writing."),
            Some((
                "toolu_w",
                "write_file",
                json!({"file_path": "/notes.md", "content": "one\n"}),
            )),
        ),
        answer(
            None,
            Some(("toolu_r", "read_file", json!({"file_path": "/notes.md"}))),
        ),
        answer(
            None,
            Some((
                "toolu_e",
                "edit_file",
                json!({"file_path": "/notes.md", "old_string": "one", "new_string": "two"}),
            )),
        ),
        answer(Some("Done: /notes.md says two.\n"), None),
    ]
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn burrow(dir: &Path, server: &ReplayServer, key: Option<&str>, args: &[&str]) -> Out {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_burrow"));
    cmd.current_dir(dir)
        .env("ANTHROPIC_BASE_URL", server.url())
        .env_remove("ANTHROPIC_API_KEY");
    if let Some(key) = key {
        cmd.env("ANTHROPIC_API_KEY", key);
    }
    let work = dir.join("work");
    let spec = format!("fs:{}", work.display());
    let output = cmd.args(["--backend", &spec]).args(args).output().unwrap();
    Out {
        code: output.status.code().unwrap(),
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

#[test]
fn anthropic_writes_reads_and_edits_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let server = ReplayServer::start(script());
    let out = burrow(
        dir.path(),
        &server,
        Some(KEY),
        &[
            "run",
            "make the note say two",
            "--model",
            "anthropic:claude-test",
        ],
    );
    assert_eq!(
        out.code, 0,
        "stdout: {}\nstderr: {}",
        out.stdout, out.stderr
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("work/notes.md")).unwrap(),
        "two\n"
    );
    assert_eq!(out.stdout, "Writing.\nDone: /notes.md says two.\n");
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(
        lines,
        [
            "burrow: tool write_file /notes.md: ok",
            "burrow: tool read_file /notes.md: ok",
            "burrow: tool edit_file /notes.md: ok",
            "burrow: run completed: 4 turns, 3 tool calls, usage: 40 input, 20 output tokens",
        ],
        "{}",
        out.stderr
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    for r in &requests {
        assert_eq!(r.path, "/v1/messages");
        assert_eq!(r.header("x-api-key"), Some(KEY));
        assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    }
    // The tool result went back as a tool_result block answering its tool_use.
    let second: Value = serde_json::from_slice(&requests[1].body).unwrap();
    assert_eq!(second["model"], "claude-test");
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(messages[1]["content"][1]["type"], "tool_use");
    assert_eq!(messages[1]["content"][1]["id"], "toolu_w");
    assert_eq!(messages[2]["content"][0]["type"], "tool_result");
    assert_eq!(messages[2]["content"][0]["tool_use_id"], "toolu_w");
}

#[test]
fn anthropic_json_events() {
    let dir = tempfile::tempdir().unwrap();
    let server = ReplayServer::start(script());
    let out = burrow(
        dir.path(),
        &server,
        Some(KEY),
        &["--json", "run", "go", "--model", "anthropic:claude-test"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.stderr, "",
        "--json prints nothing on stderr for a clean run"
    );
    let events: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "run_started",
            "text_delta",
            "usage",
            "tool_call",
            "tool_result",
            "usage",
            "tool_call",
            "tool_result",
            "usage",
            "tool_call",
            "tool_result",
            "text_delta",
            "usage",
            "run_ended",
        ],
        "{events:#?}"
    );
    assert_eq!(
        events[3],
        json!({"type": "tool_call", "id": "toolu_w", "name": "write_file", "arguments": {"file_path": "/notes.md", "content": "one\n"}})
    );
    assert_eq!(
        events[13],
        json!({"type": "run_ended", "outcome": "completed", "reason": null, "usage": {"input_tokens": 40, "output_tokens": 20}})
    );
}

#[test]
fn a_missing_anthropic_key_is_one_sentence_before_any_request() {
    let dir = tempfile::tempdir().unwrap();
    let server = ReplayServer::start(script());
    let out = burrow(
        dir.path(),
        &server,
        None,
        &["run", "hi", "--model", "anthropic:claude-test"],
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(out.stdout, "");
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", out.stderr);
    assert!(
        lines[0].contains("ANTHROPIC_API_KEY is not set"),
        "{}",
        lines[0]
    );
    assert_eq!(server.request_count(), 0);
    assert!(!dir.path().join("work").exists(), "no backend opened");
}
