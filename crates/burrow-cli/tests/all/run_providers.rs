//! `burrow run --model openai:NAME|openai-responses:NAME|anthropic:NAME` through the binary against a local server speaking each wire, over an fs backend: the agent writes, reads back and edits a file, then ends with text.

// Each provider's answer builder is unused in a build without its feature.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

use burrow_testkit::http::{ReplayServer, Reply};
use serde_json::{Value, json};

pub(super) const KEY: &str = "sk-cli-test-key";

/// One model answer on a wire: optional text, optional tool call (id, name, arguments).
pub(super) type Answer = fn(Option<&str>, Option<(&str, &str, Value)>) -> Reply;

/// One chat-completions answer: optional text, optional tool call (arguments in two fragments).
pub(super) fn chat(text: Option<&str>, call: Option<(&str, &str, Value)>) -> Reply {
    let chunk = |delta: Value, finish: Value| {
        let c = json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], "usage": null});
        format!("data: {c}\n\n")
    };
    let mut body = chunk(json!({"role": "assistant", "content": ""}), Value::Null);
    if let Some(text) = text {
        body += &chunk(json!({"content": text}), Value::Null);
    }
    let finish = if let Some((id, name, args)) = &call {
        let args = args.to_string();
        let (a, b) = args.split_at(args.len() / 2);
        body += &chunk(
            json!({"tool_calls": [{"index": 0, "id": id, "type": "function", "function": {"name": name, "arguments": a}}]}),
            Value::Null,
        );
        body += &chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": b}}]}),
            Value::Null,
        );
        "tool_calls"
    } else {
        "stop"
    };
    body += &chunk(json!({}), json!(finish));
    body += &format!(
        "data: {}\n\ndata: [DONE]\n\n",
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
    );
    Reply::sse(body)
}

/// One Responses answer: optional text, optional function call.
fn responses(text: Option<&str>, call: Option<(&str, &str, Value)>) -> Reply {
    let mut body = String::new();
    let mut ev =
        |v: Value| body += &format!("event: {}\ndata: {v}\n\n", v["type"].as_str().unwrap());
    ev(
        json!({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}}),
    );
    let mut index = 0;
    if let Some(text) = text {
        ev(
            json!({"type": "response.output_item.added", "output_index": index, "item": {"id": "msg_1", "type": "message", "role": "assistant", "content": []}}),
        );
        ev(
            json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": index, "content_index": 0, "delta": text}),
        );
        ev(
            json!({"type": "response.output_item.done", "output_index": index, "item": {"id": "msg_1", "type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}}),
        );
        index += 1;
    }
    if let Some((id, name, args)) = &call {
        let args = args.to_string();
        ev(
            json!({"type": "response.output_item.added", "output_index": index, "item": {"id": "fc_1", "type": "function_call", "call_id": id, "name": name, "arguments": ""}}),
        );
        ev(
            json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": index, "delta": args}),
        );
        ev(
            json!({"type": "response.output_item.done", "output_index": index, "item": {"id": "fc_1", "type": "function_call", "call_id": id, "name": name, "arguments": args}}),
        );
    }
    ev(
        json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "usage": {"input_tokens": 10, "output_tokens": 5}}}),
    );
    Reply::sse(body)
}

/// One Anthropic messages answer: optional text block, optional tool_use block.
pub(super) fn anthropic(text: Option<&str>, call: Option<(&str, &str, Value)>) -> Reply {
    let mut body = String::new();
    let mut ev =
        |v: Value| body += &format!("event: {}\ndata: {v}\n\n", v["type"].as_str().unwrap());
    ev(
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test", "content": [], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 10, "output_tokens": 1}}}),
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
        ev(
            json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": a}}),
        );
        ev(
            json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": b}}),
        );
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
fn script(answer: Answer) -> Vec<Reply> {
    vec![
        answer(
            Some("Writing."),
            Some((
                "call_w",
                "write_file",
                json!({"file_path": "/notes.md", "content": "one\n"}),
            )),
        ),
        answer(
            None,
            Some(("call_r", "read_file", json!({"file_path": "/notes.md"}))),
        ),
        answer(
            None,
            Some((
                "call_e",
                "edit_file",
                json!({"file_path": "/notes.md", "old_string": "one", "new_string": "two"}),
            )),
        ),
        answer(Some("Done: /notes.md says two.\n"), None),
    ]
}

pub(super) struct Out {
    pub(super) code: i32,
    pub(super) stdout: String,
    pub(super) stderr: String,
}

pub(super) fn burrow(dir: &Path, server: &ReplayServer, key: Option<&str>, args: &[&str]) -> Out {
    burrow_at(dir, &server.url(), key, args)
}

/// [`burrow`] with the providers at `url`.
fn burrow_at(dir: &Path, url: &str, key: Option<&str>, args: &[&str]) -> Out {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_burrow"));
    cmd.current_dir(dir)
        .env("OPENAI_BASE_URL", url)
        .env("ANTHROPIC_BASE_URL", url)
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY");
    if let Some(key) = key {
        cmd.env("OPENAI_API_KEY", key).env("ANTHROPIC_API_KEY", key);
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

pub(super) fn body(server: &ReplayServer, i: usize) -> Value {
    serde_json::from_slice(&server.requests()[i].body).unwrap()
}

fn human_run(model: &str, answer: Answer) -> ReplayServer {
    let dir = tempfile::tempdir().unwrap();
    let server = ReplayServer::start(script(answer));
    let out = burrow(
        dir.path(),
        &server,
        Some(KEY),
        &["run", "make the note say two", "--model", model],
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
    assert_eq!(server.request_count(), 4);
    server
}

fn json_events(model: &str, answer: Answer) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let server = ReplayServer::start(script(answer));
    let out = burrow(
        dir.path(),
        &server,
        Some(KEY),
        &["--json", "run", "go", "--model", model],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.stderr, "",
        "--json prints nothing on stderr for a clean run"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("work/notes.md")).unwrap(),
        "two\n"
    );
    out.stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn assert_events(events: &[Value]) {
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
        json!({"type": "tool_call", "id": "call_w", "name": "write_file", "arguments": {"file_path": "/notes.md", "content": "one\n"}})
    );
    assert_eq!(
        events[4],
        json!({"type": "tool_result", "id": "call_w", "name": "write_file", "content": "Created /notes.md (1 line, 4 bytes).", "is_error": false})
    );
    assert_eq!(events[7]["content"], "     1\tone");
    assert_eq!(
        events[10]["content"],
        "Edited /notes.md: replaced 1 occurrence."
    );
    assert_eq!(events[11]["text"], "Done: /notes.md says two.\n");
    assert_eq!(
        events[13],
        json!({"type": "run_ended", "outcome": "completed", "reason": null, "usage": {"input_tokens": 40, "output_tokens": 20}})
    );
}

fn assert_bearer(server: &ReplayServer) {
    for r in server.requests() {
        assert_eq!(
            r.header("authorization"),
            Some(format!("Bearer {KEY}").as_str())
        );
    }
}

#[cfg(feature = "openai")]
#[test]
fn openai_chat_writes_reads_and_edits_a_file() {
    let server = human_run("openai:gpt-test", chat);
    assert_bearer(&server);
    // The tool results went back as `role: tool` messages answering their calls.
    let second = body(&server, 1);
    assert_eq!(second["model"], "gpt-test");
    let messages = second["messages"].as_array().unwrap();
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "tool");
    assert_eq!(last["tool_call_id"], "call_w");
    assert_eq!(
        messages[messages.len() - 2]["tool_calls"][0]["id"],
        "call_w"
    );
    assert_events(&json_events("openai:gpt-test", chat));
}

#[cfg(feature = "openai")]
#[test]
fn openai_responses_writes_reads_and_edits_a_file() {
    let server = human_run("openai-responses:o4-test", responses);
    assert_bearer(&server);
    assert_eq!(server.requests()[0].path, "/responses");
    let input = body(&server, 1)["input"].clone();
    let last = input.as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["type"], "function_call_output");
    assert_eq!(last["call_id"], "call_w");
    assert_events(&json_events("openai-responses:o4-test", responses));
}

#[cfg(feature = "anthropic")]
#[test]
fn anthropic_writes_reads_and_edits_a_file() {
    let server = human_run("anthropic:claude-test", anthropic);
    let sent = &server.requests()[1];
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some(KEY));
    assert!(sent.header("anthropic-version").is_some());
    let messages = body(&server, 1)["messages"].clone();
    let last = messages.as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["role"], "user");
    assert_eq!(last["content"][0]["type"], "tool_result");
    assert_eq!(last["content"][0]["tool_use_id"], "call_w");
    assert_events(&json_events("anthropic:claude-test", anthropic));
}

#[cfg(all(feature = "openai", feature = "anthropic"))]
#[test]
fn a_missing_key_is_one_sentence_before_any_request() {
    let dir = tempfile::tempdir().unwrap();
    let server = ReplayServer::start(script(chat));
    for (model, var) in [
        ("openai:gpt-test", "OPENAI_API_KEY"),
        ("openai-responses:o4-test", "OPENAI_API_KEY"),
        ("anthropic:claude-test", "ANTHROPIC_API_KEY"),
    ] {
        let out = burrow(dir.path(), &server, None, &["run", "hi", "--model", model]);
        assert_eq!(out.code, 2, "{}", out.stderr);
        assert_eq!(out.stdout, "");
        let lines: Vec<&str> = out.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{}", out.stderr);
        assert!(lines[0].starts_with("burrow: "), "{}", lines[0]);
        assert!(
            lines[0].contains(&format!("{var} is not set")),
            "{}",
            lines[0]
        );
    }
    assert_eq!(server.request_count(), 0);
    assert!(!dir.path().join("work").exists(), "no backend opened");
}

#[cfg(feature = "openai")]
#[test]
fn a_model_failure_ends_the_run_with_exit_2_and_no_key() {
    let dir = tempfile::tempdir().unwrap();
    let server = ReplayServer::start([Reply::json(
        401,
        format!(
            r#"{{"error":{{"message":"Incorrect API key provided: {KEY}","code":"invalid_api_key"}}}}"#
        ),
    )]);
    let out = burrow(
        dir.path(),
        &server,
        Some(KEY),
        &["--json", "run", "hi", "--model", "openai:gpt-test"],
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    let last: Value = serde_json::from_str(out.stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "run_ended");
    assert_eq!(last["outcome"], "failed");
    assert_eq!(last["reason"], "model_error");
    assert!(!out.stdout.contains(KEY) && !out.stderr.contains(KEY));
    assert_eq!(server.request_count(), 1, "a 401 is not retried");
}

/// A server on 127.0.0.1 that accepts every connection, reads its request
/// and never answers. Its base URL and a count of the connections it took.
fn silent_server() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::Read;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = count.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { break };
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut request = [0u8; 16 * 1024];
            let _ = stream.read(&mut request);
            held.push(stream);
        }
    });
    (url, count)
}

#[cfg(feature = "openai")]
#[test]
fn a_server_that_never_answers_fails_the_run_after_one_request_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let (url, connections) = silent_server();
    let out = burrow_at(
        dir.path(),
        &url,
        Some(KEY),
        &[
            "--json",
            "run",
            "hi",
            "--model",
            "openai:gpt-test",
            "--request-timeout",
            "2",
        ],
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    let last: Value = serde_json::from_str(out.stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "run_ended");
    assert_eq!(last["outcome"], "failed");
    assert_eq!(last["reason"], "model_error");
    let message = last["message"].as_str().unwrap();
    assert!(message.contains("did not answer within 2 s"), "{message}");
    assert!(!out.stderr.contains("retrying"), "{}", out.stderr);
    assert_eq!(
        connections.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "a timed-out request is one attempt"
    );
}

#[cfg(feature = "openai")]
#[test]
fn a_retry_is_a_line_on_stderr_and_a_retry_event_with_json() {
    let retry_line = |stderr: &str| {
        let line = stderr
            .lines()
            .find(|l| l.contains("retrying"))
            .unwrap_or_else(|| panic!("no retry line: {stderr}"))
            .to_owned();
        assert!(
            line.starts_with("burrow: model request failed (the model provider answered HTTP 500 (Internal Server Error)); retrying in 0."),
            "{line}"
        );
        assert!(line.ends_with(" s, attempt 2 of 3"), "{line}");
        assert_eq!(stderr.matches("retrying").count(), 1, "{stderr}");
    };
    for json in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let server = ReplayServer::start([Reply::json(500, "{}"), chat(Some("hi"), None)]);
        let mut args = vec!["run", "hi", "--model", "openai:gpt-test"];
        if json {
            args.insert(0, "--json");
        }
        let out = burrow(dir.path(), &server, Some(KEY), &args);
        assert_eq!(out.code, 0, "{}", out.stderr);
        retry_line(&out.stderr);
        assert_eq!(server.request_count(), 2);
        if !json {
            assert_eq!(out.stdout, "hi\n");
            continue;
        }
        let events: Vec<Value> = out
            .stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let retries: Vec<&Value> = events.iter().filter(|e| e["type"] == "retry").collect();
        assert_eq!(retries.len(), 1, "{}", out.stdout);
        let retry = retries[0];
        assert_eq!(retry["attempt"], 2);
        assert_eq!(retry["attempts"], 3);
        assert_eq!(retry["kind"], "server");
        let wait = retry["wait_ms"].as_u64().unwrap();
        assert!((375..=500).contains(&wait), "{wait}");
        assert_eq!(
            retry["reason"],
            "the model provider answered HTTP 500 (Internal Server Error)"
        );
        assert_eq!(events.last().unwrap()["outcome"], "completed");
    }
}

/// `--memory` with an `anthropic:` model: the request offers Anthropic's own
/// `memory_20250818` tool under its beta, the model's memory call runs on
/// the mount at /memories (a SQLite file here), and its result is the
/// reference's sentence.
#[cfg(feature = "anthropic")]
#[test]
fn anthropic_is_sent_the_native_memory_tool_and_its_calls_land_in_the_mount() {
    let dir = tempfile::tempdir().unwrap();
    let server = ReplayServer::start([
        anthropic(
            None,
            Some((
                "toolu_1",
                "memory",
                json!({"command": "create", "path": "/memories/user.md", "file_text": "likes tea\n"}),
            )),
        ),
        anthropic(Some("Noted."), None),
    ]);
    let mount = format!("/memories=sqlite:{}", dir.path().join("mem.db").display());
    let out = burrow(
        dir.path(),
        &server,
        Some(KEY),
        &[
            "--backend",
            &mount,
            "--json",
            "run",
            "remember I like tea",
            "--memory",
            "--model",
            "anthropic:claude-test",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let first = &server.requests()[0];
    assert_eq!(
        first.header("anthropic-beta"),
        Some("context-management-2025-06-27")
    );
    let tools = body(&server, 0)["tools"].clone();
    let memory: Vec<&Value> = tools
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["name"] == "memory")
        .collect();
    assert_eq!(
        memory,
        [&json!({"type": "memory_20250818", "name": "memory"})]
    );
    let second = body(&server, 1);
    let result = &second["messages"][2]["content"][0];
    assert_eq!(result["type"], "tool_result", "{second}");
    assert_eq!(
        result["content"],
        "File created successfully at: /memories/user.md"
    );
    assert!(
        !dir.path().join("work/memories").exists(),
        "the file went to the mount, not the default backend"
    );
    let check = Command::new(env!("CARGO_BIN_EXE_burrow"))
        .args(["--backend", &mount, "read", "/memories/user.md"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&check.stdout).contains("likes tea"),
        "{check:?}"
    );
}

/// A `--session` run whose provider first answers retryable errors on the
/// OpenAI wire (429 rate limit, then 503 overload, each asking through
/// `retry-after-ms` for 50 ms): each retry is a `retry` event with `--json`
/// and a line on stderr, the run completes, and the thread's history holds
/// the prompt and one assistant answer.
#[cfg(all(feature = "openai", feature = "sqlite"))]
#[test]
fn a_session_run_retries_a_rate_limit_and_an_overload_and_keeps_one_answer() {
    let dir = tempfile::tempdir().unwrap();
    let server = ReplayServer::start([
        Reply::json(
            429,
            r#"{"error": {"message": "Rate limit reached.", "type": "requests", "code": "rate_limit_exceeded"}}"#,
        )
        .header("retry-after-ms", "50"),
        Reply::json(
            503,
            r#"{"error": {"message": "The engine is currently overloaded.", "type": "server_error"}}"#,
        )
        .header("retry-after-ms", "50"),
        chat(Some("hi"), None),
    ]);
    let spec = format!("sqlite:{}", dir.path().join("session.db").display());
    let out = burrow(
        dir.path(),
        &server,
        Some(KEY),
        &[
            "--json",
            "run",
            "hello",
            "--model",
            "openai:gpt-test",
            "--session",
            &spec,
            "--thread",
            "t",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(server.request_count(), 3);
    let events: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let retries: Vec<&Value> = events.iter().filter(|e| e["type"] == "retry").collect();
    assert_eq!(retries.len(), 2, "{}", out.stdout);
    assert_eq!(
        (retries[0]["attempt"].clone(), retries[0]["kind"].clone()),
        (json!(2), json!("rate_limited"))
    );
    assert_eq!(
        (retries[1]["attempt"].clone(), retries[1]["kind"].clone()),
        (json!(3), json!("overloaded"))
    );
    for retry in &retries {
        assert_eq!(retry["attempts"], 3);
        assert_eq!(retry["wait_ms"], 50, "the provider's own wait is kept");
    }
    assert_eq!(
        retries[0]["reason"],
        "the model provider answered HTTP 429 (Too Many Requests): Rate limit reached."
    );
    assert_eq!(
        retries[1]["reason"],
        "the model provider answered HTTP 503 (Service Unavailable): The engine is currently overloaded."
    );
    assert_eq!(
        out.stderr.matches("retrying in").count(),
        2,
        "{}",
        out.stderr
    );
    let last = events.last().unwrap();
    assert_eq!(last["type"], "run_ended", "{}", out.stdout);
    assert_eq!(last["outcome"], "completed");

    let show = burrow(
        dir.path(),
        &server,
        Some(KEY),
        &["--json", "thread", "show", "t", "--session", &spec],
    );
    assert_eq!(show.code, 0, "{}", show.stderr);
    let thread: Value = serde_json::from_str(&show.stdout).unwrap();
    let history: Vec<&Value> = thread["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["message"])
        .collect();
    let roles: Vec<&str> = history
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant"], "{history:?}");
    assert_eq!(history[0]["text"], "hello");
    assert_eq!(history[1]["parts"], json!([{"type": "text", "text": "hi"}]));
    assert_eq!(
        server.request_count(),
        3,
        "showing the thread asks no model"
    );
}
