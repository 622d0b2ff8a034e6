//! Compaction in the agent loop and across runs of a session thread: the summary request, the compacted view of the next request, the entries kept in the store (memory, SQLite, PostgreSQL), a second compaction over the first, and a model whose summaries keep failing.

use std::sync::{Arc, Mutex};

use burrow_runtime::agent::{Agent, AgentEvent, Outcome, RunOptions};
use burrow_runtime::compaction::{CompactionConfig, SUMMARY_INSTRUCTIONS};
use burrow_runtime::message::Message;
use burrow_runtime::model::{ModelError, ModelErrorKind, ScriptedModel, ScriptedResponse};
use burrow_runtime::runner::Runner;
use burrow_runtime::session::{Scope, load_history};
use burrow_runtime::tool::{FnTool, ToolOutput, ToolRegistry};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

#[cfg(feature = "postgres")]
use super::runner::postgres;
use super::runner::{Fixture, memory, sqlite};

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

/// What the model was asked: each request's system prompt and messages.
type Asked = Arc<Mutex<Vec<(String, Vec<Message>)>>>;

/// An agent whose model calls `big` (2,000 characters back) on its first
/// `calls` main requests and answers `done` to the others, and answers a
/// summary request with `SUMMARY-n` (or a failure when `summaries_fail`);
/// compacting past 200 tokens, keeping 2 messages.
fn agent(asked: &Asked, calls: usize, summaries_fail: bool) -> Agent {
    let log = asked.clone();
    let model = ScriptedModel::new(move |request| {
        let mut log = log.lock().unwrap();
        log.push((request.system.to_owned(), request.messages.to_vec()));
        let summaries = log
            .iter()
            .filter(|(s, _)| s == SUMMARY_INSTRUCTIONS)
            .count();
        if request.system == SUMMARY_INSTRUCTIONS {
            if summaries_fail {
                return Err(ModelError::new(ModelErrorKind::Server, "the summary broke"));
            }
            return Ok(ScriptedResponse::text(format!("SUMMARY-{}", summaries - 1)));
        }
        let main = log.len() - summaries;
        if main <= calls {
            return Ok(ScriptedResponse::calls().call(format!("c{main}"), "big", json!({})));
        }
        Ok(ScriptedResponse::text("done"))
    });
    let mut tools = ToolRegistry::new();
    tools.add(FnTool::new("big", "Returns a lot.", |_: NoArgs, _| async {
        Ok(ToolOutput::ok("x".repeat(2_000)))
    }));
    Agent::new(Arc::new(model))
        .with_tools(tools)
        .with_compaction(
            CompactionConfig::default()
                .with_threshold(200)
                .with_keep_messages(2),
        )
}

fn is_summary(asked: &(String, Vec<Message>)) -> bool {
    asked.0 == SUMMARY_INSTRUCTIONS
}

#[tokio::test]
async fn the_request_after_a_compaction_reads_the_summary_and_the_kept_pair() {
    let asked = Asked::default();
    let agent = agent(&asked, 1, false);
    let mut history = Vec::new();
    let mut events = Vec::new();
    let result = agent
        .run_with(
            &mut history,
            Some("task one".into()),
            RunOptions::default(),
            &mut |e| events.push(e),
        )
        .await;
    assert_eq!(result.outcome, Outcome::Completed);
    let asked = asked.lock().unwrap();
    assert_eq!(asked.len(), 3, "a request, the summary, the next request");
    assert!(is_summary(&asked[1]));
    // The summary request read the prompt, then burrow's closing instruction.
    assert_eq!(asked[1].1[0], Message::user("task one"));
    assert_eq!(asked[1].1.len(), 2);
    let next = &asked[2].1;
    let Message::User { text } = &next[0] else {
        panic!("the view starts with the compaction's text: {next:?}");
    };
    assert!(
        text.contains("SUMMARY-0") && text.contains("task one"),
        "{text}"
    );
    assert_eq!(next[1].tool_calls().next().unwrap().id, "c1");
    assert!(matches!(&next[2], Message::ToolResult(r) if r.call_id == "c1"));
    assert_eq!(next.len(), 3);
    // The history keeps everything, the compaction as an entry before the answer.
    assert_eq!(history.len(), 5);
    assert_eq!(history[0], Message::user("task one"));
    let Message::Compaction(c) = &history[3] else {
        panic!("the compaction is an entry: {history:?}");
    };
    assert_eq!((c.kept, c.summarised, c.trigger.as_str()), (2, 1, "auto"));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::Compacted { kept: 2, .. }))
    );
}

#[tokio::test]
async fn summaries_that_keep_failing_are_tried_three_times_and_the_run_goes_on() {
    let asked = Asked::default();
    // Five answers call `big`: five requests past the threshold after the first.
    let agent = agent(&asked, 5, true);
    let mut history = Vec::new();
    let mut failed = Vec::new();
    let result = agent
        .run_with(
            &mut history,
            Some("one".into()),
            RunOptions::default(),
            &mut |e| {
                if let AgentEvent::CompactionFailed { reason, message } = e {
                    failed.push((reason, message));
                }
            },
        )
        .await;
    assert_eq!(result.outcome, Outcome::Completed);
    assert_eq!(failed.len(), 3, "{failed:?}");
    assert_eq!(failed[0].0, "model_failed");
    assert_eq!(
        failed[0].1,
        "the summary request failed: the summary broke (server)"
    );
    assert!(!history.iter().any(|m| matches!(m, Message::Compaction(_))));
    let asked = asked.lock().unwrap();
    assert_eq!(asked.iter().filter(|a| is_summary(a)).count(), 3);
    assert_eq!(asked.len(), 6 + 3);
    let last = &asked.last().unwrap().1;
    assert_eq!(last[0], Message::user("one"), "the run went on uncompacted");
    assert_eq!(last.len(), history.len() - 1);
}

async fn a_thread_keeps_its_compactions_and_its_next_run_reads_the_view(fx: Fixture) {
    let asked = Asked::default();
    let runner = Runner::new(agent(&asked, 1, false), fx.store.clone());
    let t = Scope::new("acme", "ws").thread("t1");
    for (i, text) in ["task one", "task two"].into_iter().enumerate() {
        let sent = runner
            .send(&t, "alice", text, Some(&format!("m{i}")))
            .await
            .unwrap();
        assert_eq!(sent.run.unwrap().wait().await.outcome, Outcome::Completed);
    }
    runner.drain().await;
    let history = load_history(fx.store.as_ref(), &t).await.unwrap();
    let compactions: Vec<usize> = history
        .iter()
        .enumerate()
        .filter(|(_, m)| matches!(m, Message::Compaction(_)))
        .map(|(i, _)| i)
        .collect();
    // [task one, call, result, C1, done, task two, C2, done]: nothing deleted.
    assert_eq!(compactions, vec![3, 6], "{history:?}");
    assert_eq!(history.len(), 8);
    assert_eq!(history[0], Message::user("task one"));
    assert_eq!(history[5], Message::user("task two"));
    let asked = asked.lock().unwrap();
    let summaries: Vec<&(String, Vec<Message>)> = asked.iter().filter(|a| is_summary(a)).collect();
    assert_eq!(summaries.len(), 2);
    // The second summary read the first one's text, not the messages it replaced.
    let Message::User { text } = &summaries[1].1[0] else {
        panic!("{:?}", summaries[1].1);
    };
    assert!(text.contains("SUMMARY-0"));
    assert!(!summaries[1].1.contains(&Message::user("task one")));
    // The second run's last request: the second summary, then the kept messages.
    let last = &asked.last().unwrap().1;
    let Message::User { text } = &last[0] else {
        panic!("{last:?}");
    };
    assert!(text.contains("SUMMARY-1"), "{text}");
    assert_eq!(
        last[1..],
        [Message::assistant_text("done"), Message::user("task two")]
    );
}

super::runner::on_every_store!(a_thread_keeps_its_compactions_and_its_next_run_reads_the_view);

/// A model that reports 1,000 input and 10 output tokens for its first
/// answer (a call of `small`, 400 characters back), then answers `done`;
/// summaries are `S`.
fn reporting_agent(threshold: u64) -> Agent {
    use burrow_runtime::message::Usage;
    let model = ScriptedModel::new(move |request| {
        if request.system == SUMMARY_INSTRUCTIONS {
            return Ok(ScriptedResponse::text("S"));
        }
        if request.messages.len() == 1 {
            let mut answer = ScriptedResponse::calls().call("c1", "small", json!({}));
            answer.usage = Some(Usage {
                input_tokens: Some(1_000),
                output_tokens: Some(10),
                ..Usage::UNKNOWN
            });
            return Ok(answer);
        }
        Ok(ScriptedResponse::text("done"))
    });
    let mut tools = ToolRegistry::new();
    tools.add(FnTool::new(
        "small",
        "Returns a little.",
        |_: NoArgs, _| async { Ok(ToolOutput::ok("y".repeat(400))) },
    ));
    Agent::new(Arc::new(model))
        .with_tools(tools)
        .with_compaction(
            CompactionConfig::default()
                .with_threshold(threshold)
                .with_keep_messages(2),
        )
}

#[tokio::test]
async fn the_estimate_is_the_last_reported_usage_plus_what_came_since() {
    // 1,000 + 10 reported, plus the result since: (400 + "small" + "c1") / 4, rounded up.
    let expected = 1_010 + (400u64 + 5 + 2).div_ceil(4);
    for (threshold, compacts) in [(expected - 1, true), (expected, false)] {
        let mut history = Vec::new();
        let mut before = Vec::new();
        let result = reporting_agent(threshold)
            .run_with(
                &mut history,
                Some("go".into()),
                RunOptions::default(),
                &mut |e| {
                    if let AgentEvent::Compacted { tokens_before, .. } = e {
                        before.push(tokens_before);
                    }
                },
            )
            .await;
        assert_eq!(result.outcome, Outcome::Completed);
        if compacts {
            assert_eq!(before, vec![Some(expected)], "threshold {threshold}");
        } else {
            assert!(before.is_empty(), "threshold {threshold}: {before:?}");
        }
    }
}
