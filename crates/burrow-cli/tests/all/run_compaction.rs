//! Context compaction through the binary against the local OpenAI and Anthropic wire servers: the summary request, the compacted next request (summary, todos, last instruction, no orphan tool result), PreCompact blocking, a failing summary request, a resumed session run and `burrow thread compact`.

#![allow(dead_code)]

use std::path::Path;

use burrow_testkit::http::{ReplayServer, Reply};
use serde_json::{Value, json};

use super::run_providers::{Answer, KEY, Out, body, burrow};

const PROMPT: &str = "read the big file and take notes PROMPT-XYZ";
const SUMMARY: &str = "SUMMARY-TEXT: the user wants the big file read; /notes.md was written.";

/// The conversation up to the request that is due for compaction: a todo
/// list, a write, and a read of a file of about 1,500 tokens.
fn before(answer: Answer) -> Vec<Reply> {
    vec![
        answer(
            Some("Planning."),
            Some((
                "call_t",
                "write_todos",
                json!({"todos": [{"content": "Read the big file", "status": "in_progress", "activeForm": "Reading the big file"}]}),
            )),
        ),
        answer(
            None,
            Some((
                "call_w",
                "write_file",
                json!({"file_path": "/notes.md", "content": "one\n"}),
            )),
        ),
        answer(
            None,
            Some(("call_r", "read_file", json!({"file_path": "/big.txt"}))),
        ),
    ]
}

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("work")).unwrap();
    let big: String = (0..100)
        .map(|i| format!("line {i:03} of the big file, with some words to fill it up\n"))
        .collect();
    std::fs::write(dir.path().join("work/big.txt"), big).unwrap();
    dir
}

fn run(dir: &Path, server: &ReplayServer, model: &str, extra: &[&str]) -> Out {
    let mut args = vec![
        "--json",
        "run",
        PROMPT,
        "--model",
        model,
        "--todos",
        "--compact-at",
        "800",
        "--compact-keep",
        "2",
    ];
    args.extend_from_slice(extra);
    burrow(dir, server, Some(KEY), &args)
}

fn events(out: &Out) -> Vec<Value> {
    out.stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// The tool call ids and result ids of a request body, in order, on either
/// wire: `("call", id)` or `("result", id)`.
fn calls_and_results(value: &Value, out: &mut Vec<(&'static str, String)>) {
    match value {
        Value::Object(map) => {
            if map.get("type") == Some(&json!("tool_use")) {
                out.push(("call", map["id"].as_str().unwrap().to_owned()));
            }
            if let Some(id) = map.get("tool_use_id").and_then(Value::as_str) {
                out.push(("result", id.to_owned()));
            }
            if let Some(calls) = map.get("tool_calls").and_then(Value::as_array) {
                for c in calls {
                    out.push(("call", c["id"].as_str().unwrap().to_owned()));
                }
            }
            if let Some(id) = map.get("tool_call_id").and_then(Value::as_str) {
                out.push(("result", id.to_owned()));
            }
            for (k, v) in map {
                if k != "tool_calls" {
                    calls_and_results(v, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| calls_and_results(v, out)),
        _ => {}
    }
}

/// Every tool result of `body`'s messages answers a call before it, and every call has a result.
fn assert_paired(body: &Value) {
    let mut seen = Vec::new();
    calls_and_results(&body["messages"], &mut seen);
    let mut open = Vec::new();
    for (what, id) in &seen {
        match *what {
            "call" => open.push(id.clone()),
            _ => {
                let at = open.iter().position(|c| c == id).unwrap_or_else(|| {
                    panic!("the result of {id} has no call before it: {body:#}")
                });
                open.remove(at);
            }
        }
    }
    assert!(open.is_empty(), "calls without results {open:?}: {body:#}");
}

fn tool_choice_none(body: &Value) -> bool {
    body["tool_choice"] == json!("none") || body["tool_choice"]["type"] == json!("none")
}

fn compacts_and_sends_the_summary(model: &str, answer: Answer) {
    let dir = workspace();
    let mut replies = before(answer);
    replies.push(answer(Some(SUMMARY), None));
    replies.push(answer(Some("Done.\n"), None));
    let server = ReplayServer::start(replies);
    let out = run(dir.path(), &server, model, &[]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(server.request_count(), 5);

    // The summary request: burrow's instructions, the older messages, no tool to call.
    let summary = body(&server, 3);
    let text = summary.to_string();
    assert!(text.contains("handover notes"), "{summary:#}");
    assert!(
        text.contains("call_w") && !text.contains("call_r"),
        "{summary:#}"
    );
    assert!(tool_choice_none(&summary), "{summary:#}");
    assert_paired(&summary);

    // The next request: the summary, the todos and the prompt verbatim, then the kept pair.
    let next = body(&server, 4);
    let text = next["messages"].to_string();
    assert!(text.contains("SUMMARY-TEXT"), "{next:#}");
    assert!(text.contains("[*] Read the big file"), "{next:#}");
    assert!(text.contains(PROMPT), "{next:#}");
    assert!(
        !text.contains("call_t") && !text.contains("call_w"),
        "{next:#}"
    );
    assert!(text.contains("call_r"), "{next:#}");
    assert_paired(&next);
    assert!(!tool_choice_none(&next));

    let events = events(&out);
    let compacted = of_type(&events, "compacted");
    assert_eq!(compacted.len(), 1, "{events:#?}");
    assert_eq!(compacted[0]["trigger"], "auto");
    assert_eq!(compacted[0]["summarised"], 5);
    assert_eq!(compacted[0]["kept"], 2);
    assert_eq!(compacted[0]["summary"], SUMMARY);
    assert!(compacted[0]["tokens_before"].as_u64().unwrap() > 800);
    assert_eq!(of_type(&events, "run_ended")[0]["outcome"], "completed");
}

#[cfg(feature = "anthropic")]
#[test]
fn anthropic_compacts_past_the_threshold() {
    compacts_and_sends_the_summary("anthropic:claude-test", super::run_providers::anthropic);
}

#[cfg(feature = "openai")]
#[test]
fn openai_chat_compacts_past_the_threshold() {
    compacts_and_sends_the_summary("openai:gpt-test", super::run_providers::chat);
}

#[cfg(feature = "anthropic")]
#[test]
fn a_pre_compact_hook_that_exits_2_blocks_the_compaction() {
    let answer: Answer = super::run_providers::anthropic;
    let dir = workspace();
    let mut replies = before(answer);
    replies.push(answer(Some("Done.\n"), None));
    let server = ReplayServer::start(replies);
    let told = dir.path().join("told.json");
    let settings = dir.path().join("settings.json");
    let command = format!("cat > '{}'; echo keep it all >&2; exit 2", told.display());
    std::fs::write(
        &settings,
        json!({"hooks": {"PreCompact": [{"matcher": "auto", "hooks": [{"type": "command", "command": command}]}]}})
            .to_string(),
    )
    .unwrap();
    let out = run(
        dir.path(),
        &server,
        "anthropic:claude-test",
        &["--settings", settings.to_str().unwrap()],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    // No summary request: the fourth request is the run's, uncompacted.
    assert_eq!(server.request_count(), 4);
    let last = body(&server, 3);
    assert!(last["messages"].to_string().contains("call_t"), "{last:#}");
    assert!(!last.to_string().contains("handover notes"));
    let events = events(&out);
    let blocked = of_type(&events, "compaction_blocked");
    assert_eq!(blocked.len(), 1, "{events:#?}");
    assert_eq!(blocked[0]["reason"], "keep it all");
    assert!(of_type(&events, "compacted").is_empty());
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&told).unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "PreCompact");
    assert_eq!(input["trigger"], "auto");
    assert_eq!(input["custom_instructions"], "");
}

#[cfg(feature = "openai")]
#[test]
fn a_failing_summary_request_leaves_the_run_uncompacted() {
    let answer: Answer = super::run_providers::chat;
    let dir = workspace();
    let mut replies = before(answer);
    replies.push(Reply::json(
        400,
        json!({"error": {"message": "the summary was refused", "type": "invalid_request_error", "code": null}})
            .to_string(),
    ));
    replies.push(answer(Some("Done.\n"), None));
    let server = ReplayServer::start(replies);
    let out = run(dir.path(), &server, "openai:gpt-test", &[]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(server.request_count(), 5);
    let last = body(&server, 4);
    let text = last["messages"].to_string();
    assert!(text.contains("call_t") && text.contains("call_w") && text.contains("call_r"));
    assert!(!text.contains("handover notes"));
    assert_paired(&last);
    let events = events(&out);
    let failed = of_type(&events, "compaction_failed");
    assert_eq!(failed.len(), 1, "{events:#?}");
    assert_eq!(failed[0]["reason"], "model_failed");
    assert!(
        failed[0]["message"]
            .as_str()
            .unwrap()
            .starts_with("the summary request failed"),
        "{failed:?}"
    );
    assert!(of_type(&events, "compacted").is_empty());
    assert_eq!(of_type(&events, "run_ended")[0]["outcome"], "completed");
}

#[cfg(feature = "anthropic")]
#[test]
fn a_resumed_session_run_reads_the_compacted_view_and_thread_compact_compacts_by_hand() {
    let answer: Answer = super::run_providers::anthropic;
    let model = "anthropic:claude-test";
    let dir = workspace();
    let spec = format!("sqlite:{}", dir.path().join("s.db").display());
    let session = ["--session", spec.as_str(), "--thread", "t1"];
    let mut replies = before(answer);
    replies.push(answer(Some(SUMMARY), None));
    replies.push(answer(Some("Done.\n"), None));
    let server = ReplayServer::start(replies);
    let out = run(dir.path(), &server, model, &session);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(server.request_count(), 5);
    assert_eq!(
        of_type(&events(&out), "compacted").len(),
        1,
        "{}",
        out.stdout
    );

    // A second run of the thread, in another process: it reads the compacted view.
    let second = ReplayServer::start(vec![answer(Some("Again.\n"), None)]);
    let out = burrow(
        dir.path(),
        &second,
        Some(KEY),
        &[
            "run",
            "and now PROMPT-2",
            "--model",
            model,
            "--todos",
            "--session",
            &spec,
            "--thread",
            "t1",
        ],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let resumed = body(&second, 0);
    let text = resumed["messages"].to_string();
    assert!(
        text.contains("SUMMARY-TEXT") && text.contains("PROMPT-2"),
        "{resumed:#}"
    );
    assert!(
        text.contains("call_r") && !text.contains("call_w"),
        "{resumed:#}"
    );
    assert_paired(&resumed);

    // The store kept every message, and shows the compaction.
    let show = burrow(
        dir.path(),
        &second,
        None,
        &["thread", "show", "t1", "--session", &spec],
    );
    assert_eq!(show.code, 0, "{}", show.stderr);
    assert!(
        show.stdout.contains("[calls write_file]"),
        "{}",
        show.stdout
    );
    assert!(
        show.stdout.contains(
            "compaction (auto): 5 messages summarised, the last 2 kept; summary: SUMMARY-TEXT"
        ),
        "{}",
        show.stdout
    );

    // By hand, with instructions; the model is the one the thread's runs recorded.
    let third = ReplayServer::start(vec![answer(Some("SECOND-SUMMARY"), None)]);
    let out = burrow(
        dir.path(),
        &third,
        Some(KEY),
        &[
            "--json",
            "thread",
            "compact",
            "t1",
            "--session",
            &spec,
            "--keep",
            "2",
            "--instructions",
            "STRESS-THIS",
        ],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let asked = body(&third, 0);
    let text = asked.to_string();
    assert!(
        text.contains("STRESS-THIS") && text.contains("SUMMARY-TEXT"),
        "{asked:#}"
    );
    assert!(text.contains("handover notes"));
    assert_paired(&asked);
    let said: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(said["type"], "compacted");
    assert_eq!(said["trigger"], "manual");
    assert_eq!(said["summary"], "SECOND-SUMMARY");
    assert_eq!(said["kept"], 2);

    let show = burrow(
        dir.path(),
        &third,
        None,
        &["--json", "thread", "show", "t1", "--session", &spec],
    );
    let shown: Value = serde_json::from_str(&show.stdout).unwrap();
    let history = shown["history"].as_array().unwrap();
    let compactions: Vec<&Value> = history
        .iter()
        .filter(|e| e["message"]["role"] == "compaction")
        .collect();
    assert_eq!(compactions.len(), 2, "{shown:#}");
    assert_eq!(compactions[1]["message"]["trigger"], "manual");
    assert!(history.len() >= 12, "nothing was deleted: {shown:#}");
}

#[cfg(feature = "anthropic")]
#[test]
fn thread_compact_of_a_missing_thread_is_refused() {
    let dir = workspace();
    let spec = format!("sqlite:{}", dir.path().join("s.db").display());
    let server = ReplayServer::start(Vec::new());
    let out = burrow(
        dir.path(),
        &server,
        Some(KEY),
        &["--json", "thread", "compact", "nope", "--session", &spec],
    );
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let said: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(said["error"]["kind"], "not_found");
    assert_eq!(server.request_count(), 0);
}

#[cfg(feature = "openai")]
#[test]
fn large_result_tokens_is_the_one_spilling_setting() {
    let answer: Answer = super::run_providers::chat;
    let grep = json!({"pattern": "line", "path": "/big.txt", "output_mode": "content"});
    let spilled = |tokens: &str| {
        let dir = workspace();
        let server = ReplayServer::start(vec![
            answer(None, Some(("call_g", "grep", grep.clone()))),
            answer(Some("Done.\n"), None),
        ]);
        let out = burrow(
            dir.path(),
            &server,
            Some(KEY),
            &[
                "--json",
                "run",
                "grep",
                "--model",
                "openai:gpt-test",
                "--large-result-tokens",
                tokens,
            ],
        );
        assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
        let result = of_type(&events(&out), "tool_result")[0]["content"]
            .as_str()
            .unwrap()
            .to_owned();
        let saved = std::fs::read_dir(dir.path().join("work/.burrow/large_results"))
            .map(|d| d.count())
            .unwrap_or(0);
        (result, saved)
    };
    // About 6,000 characters of matching lines: past 1,000 tokens (4,000 characters), not past 20,000.
    let (result, saved) = spilled("1000");
    assert!(result.contains("/.burrow/large_results/grep-"), "{result}");
    assert_eq!(saved, 1);
    let (result, saved) = spilled("20000");
    assert!(!result.contains("large_results"), "{result}");
    assert_eq!(saved, 0);
}

#[cfg(feature = "anthropic")]
#[test]
fn a_short_thread_has_nothing_to_compact_and_stays_as_it_was() {
    let answer: Answer = super::run_providers::anthropic;
    let dir = workspace();
    let spec = format!("sqlite:{}", dir.path().join("s.db").display());
    let server = ReplayServer::start(vec![answer(Some("Hello.\n"), None)]);
    let out = burrow(
        dir.path(),
        &server,
        Some(KEY),
        &[
            "run",
            "hi",
            "--model",
            "anthropic:claude-test",
            "--session",
            &spec,
            "--thread",
            "t1",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let show = |dir: &Path| {
        burrow(
            dir,
            &server,
            None,
            &["--json", "thread", "show", "t1", "--session", &spec],
        )
        .stdout
    };
    let before = show(dir.path());
    let out = burrow(
        dir.path(),
        &server,
        Some(KEY),
        &["--json", "thread", "compact", "t1", "--session", &spec],
    );
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let said: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(said["error"]["kind"], "nothing_to_compact");
    assert_eq!(server.request_count(), 1, "no summary request");
    assert_eq!(show(dir.path()), before);
}

#[cfg(feature = "openai")]
#[test]
fn human_output_says_the_history_was_compacted() {
    let answer: Answer = super::run_providers::chat;
    let dir = workspace();
    let mut replies = before(answer);
    replies.push(answer(Some(SUMMARY), None));
    replies.push(answer(Some("Done.\n"), None));
    let server = ReplayServer::start(replies);
    let out = burrow(
        dir.path(),
        &server,
        Some(KEY),
        &[
            "run",
            PROMPT,
            "--model",
            "openai:gpt-test",
            "--todos",
            "--compact-at",
            "800",
            "--compact-keep",
            "2",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.lines().any(|l| l
            == "burrow: compacted the history: 5 messages summarised, the last 2 messages kept"),
        "{}",
        out.stderr
    );
    assert_eq!(out.stdout, "Planning.\nDone.\n");
}
