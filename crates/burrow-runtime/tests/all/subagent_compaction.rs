//! Compaction inside subagents (ADR 0296): a child of `Tasks::install` compacts its history under the parent agent's threshold, with a scripted model; a child of an agent that does not compact never asks for a summary.

use std::sync::{Arc, Mutex};

use burrow_runtime::agent::Agent;
use burrow_runtime::compaction::{CompactionConfig, SUMMARY_INSTRUCTIONS};
use burrow_runtime::message::Message;
use burrow_runtime::model::{ScriptedModel, ScriptedResponse};
use burrow_runtime::session::{MemoryStore, Scope, SessionStore, load_history};
use burrow_runtime::subagent::{SubAgent, Tasks};
use burrow_runtime::tool::{CallContext, FnTool, ToolOutput, ToolRegistry};
use burrow_types::SubAgentConfig;
use serde_json::json;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

/// What the child's model was asked: each request's system prompt and messages.
type Asked = Arc<Mutex<Vec<(String, Vec<Message>)>>>;

/// A child model calling `big` (2,000 characters back) on its first two
/// main requests, then answering `the report`; a summary request gets `CHILD-SUMMARY`.
fn child_model(asked: &Asked) -> Arc<ScriptedModel> {
    let log = asked.clone();
    Arc::new(ScriptedModel::new(move |request| {
        let mut log = log.lock().unwrap();
        log.push((request.system.to_owned(), request.messages.to_vec()));
        if request.system == SUMMARY_INSTRUCTIONS {
            return Ok(ScriptedResponse::text("CHILD-SUMMARY"));
        }
        let main = log
            .iter()
            .filter(|(s, _)| s != SUMMARY_INSTRUCTIONS)
            .count();
        if main <= 2 {
            return Ok(ScriptedResponse::calls().call(format!("c{main}"), "big", json!({})));
        }
        Ok(ScriptedResponse::text("the report"))
    }))
}

/// Runs one `task` call of a child on `child_model` under a parent agent
/// built by `parent`, and returns what the child was asked and the child's stored history.
async fn run_child(
    parent: impl FnOnce(Agent) -> Agent,
) -> (Vec<(String, Vec<Message>)>, Vec<Message>) {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let scope = Scope::new("tenant", "default");
    let asked = Asked::default();
    let mut tools = ToolRegistry::new();
    tools.add(FnTool::new("big", "Returns a lot.", |_: NoArgs, _| async {
        Ok(ToolOutput::ok("x".repeat(2_000)))
    }));
    let tasks = Tasks::new(
        vec![
            SubAgent::new(SubAgentConfig::new("scout", "Looks.", "You look."))
                .with_model(child_model(&asked)),
        ],
        Arc::new(ScriptedModel::from_responses(Vec::new())),
        store.clone(),
        scope.clone(),
    )
    .with_tools(tools);
    let agent = tasks.install(parent(Agent::new(Arc::new(ScriptedModel::from_responses(
        Vec::new(),
    )))));
    let task = agent.tools().get("task").unwrap().clone();
    let cx = CallContext {
        run_id: Arc::from("run_parent"),
        call_id: "t1".to_owned(),
    };
    let args = json!({"description": "look", "prompt": "Look hard.", "subagent_type": "scout"});
    let out = task.call(&cx, args).await.unwrap();
    assert!(!out.is_error, "{}", out.text);
    assert!(out.text.starts_with("the report"), "{}", out.text);
    let history = load_history(store.as_ref(), &scope.thread("run_parent/task-t1"))
        .await
        .unwrap();
    let asked = asked.lock().unwrap().clone();
    (asked, history)
}

#[tokio::test]
async fn a_child_compacts_its_history_under_the_parents_threshold() {
    let (asked, history) = run_child(|agent| {
        agent.with_compaction(
            CompactionConfig::default()
                .with_threshold(200)
                .with_keep_messages(2),
        )
    })
    .await;
    let summaries: Vec<usize> = asked
        .iter()
        .enumerate()
        .filter(|(_, (s, _))| s == SUMMARY_INSTRUCTIONS)
        .map(|(i, _)| i)
        .collect();
    assert!(
        !summaries.is_empty(),
        "the child asked for no summary: {asked:?}"
    );
    // The request after the first summary reads the summary and the child's prompt.
    let next = &asked[summaries[0] + 1].1;
    let Message::User { text } = &next[0] else {
        panic!("the child's view starts with the compaction's text: {next:?}");
    };
    assert!(
        text.contains("CHILD-SUMMARY") && text.contains("Look hard."),
        "{text}"
    );
    // No tool result is cut from its call in the child's view.
    let calls: Vec<String> = next
        .iter()
        .flat_map(|m| m.tool_calls().map(|c| c.id.clone()).collect::<Vec<_>>())
        .collect();
    for m in next {
        if let Message::ToolResult(r) = m {
            assert!(
                calls.contains(&r.call_id),
                "orphan result {} in {next:?}",
                r.call_id
            );
        }
    }
    // The child's thread keeps its whole history, the compaction an entry of it.
    assert!(
        history.iter().any(|m| matches!(m, Message::Compaction(_))),
        "{history:?}"
    );
    assert_eq!(history[0], Message::user("Look hard."));
}

#[tokio::test]
async fn a_child_of_an_agent_that_does_not_compact_never_asks_for_a_summary() {
    let (asked, history) = run_child(|agent| agent).await;
    assert!(
        asked.iter().all(|(s, _)| s != SUMMARY_INSTRUCTIONS),
        "{asked:?}"
    );
    assert_eq!(asked.len(), 3);
    assert!(!history.iter().any(|m| matches!(m, Message::Compaction(_))));
}
