//! `subagent::Tasks` over a memory store: a `task` call run a second time (as the runner re-runs it after a crash) finds its child's ended run instead of starting another, and the child's events name its run and its parent's.

use std::sync::{Arc, Mutex};

use burrow_runtime::model::{ScriptedModel, ScriptedResponse};
use burrow_runtime::session::{MemoryStore, Scope, SessionStore};
use burrow_runtime::subagent::{SubAgent, TaskEvent, Tasks};
use burrow_runtime::tool::CallContext;
use burrow_types::SubAgentConfig;
use serde_json::json;

#[tokio::test]
async fn a_task_call_run_again_finds_its_child_and_never_starts_it_twice() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let scope = Scope::new("tenant", "default");
    // The child has one answer: a second run of it would fail for want of a script.
    let child = Arc::new(ScriptedModel::from_responses(vec![ScriptedResponse::text(
        "the report",
    )]));
    let parent = Arc::new(ScriptedModel::from_responses(Vec::new()));
    let seen: Arc<Mutex<Vec<TaskEvent>>> = Arc::default();
    let sink = seen.clone();
    let tasks = Tasks::new(
        vec![SubAgent::new(SubAgentConfig::new("scout", "Looks.", "You look.")).with_model(child)],
        parent,
        store.clone(),
        scope.clone(),
    )
    .with_events(Arc::new(move |e| sink.lock().unwrap().push(e)));
    let tool = tasks.tool();
    let cx = CallContext {
        run_id: Arc::from("run_parent"),
        call_id: "t1".to_owned(),
    };
    let args = json!({"description": "look", "prompt": "Look.", "subagent_type": "scout"});

    let first = tool.call(&cx, args.clone()).await.unwrap();
    assert!(!first.is_error, "{}", first.text);
    assert_eq!(
        first.text,
        "the report\n\n[subagent scout completed: 1 turn, 0 tool calls, usage unknown; thread run_parent/task-t1]"
    );
    let again = tool.call(&cx, args).await.unwrap();
    assert!(!again.is_error, "{}", again.text);
    assert_eq!(
        again.text,
        "the report\n\n[subagent scout completed: usage unknown; thread run_parent/task-t1]"
    );
    let runs = store
        .runs(&scope.thread("run_parent/task-t1"))
        .await
        .unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].labels["burrow.parent_run"], "run_parent");
    assert_eq!(runs[0].labels["burrow.task_call"], "t1");

    let seen = seen.lock().unwrap();
    let started: Vec<&TaskEvent> = seen
        .iter()
        .filter(|e| matches!(e, TaskEvent::Started { .. }))
        .collect();
    assert_eq!(started.len(), 1, "{seen:?}");
    let TaskEvent::Started {
        run_id,
        parent_run_id,
        thread_id,
        ..
    } = started[0]
    else {
        unreachable!()
    };
    assert_eq!(run_id, &runs[0].run_id);
    assert_eq!(parent_run_id, "run_parent");
    assert_eq!(thread_id, "run_parent/task-t1");
    let ends = seen
        .iter()
        .filter(|e| matches!(e, TaskEvent::Ended { outcome, .. } if outcome == "completed"))
        .count();
    assert_eq!(ends, 2);
}

#[tokio::test]
async fn definitions_naming_tools_the_children_cannot_get_are_refused() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let model = Arc::new(ScriptedModel::from_responses(Vec::new()));
    let tasks = Tasks::new(
        vec![SubAgent::new(SubAgentConfig::new("a", "d", "i")).with_tools(vec!["fly".to_owned()])],
        model.clone(),
        store.clone(),
        Scope::new("t", "w"),
    );
    let why = tasks.check().unwrap_err();
    assert!(
        why.contains("the subagent a names the tool fly, which subagents cannot get"),
        "{why}"
    );
    let twice = Tasks::new(
        vec![
            SubAgent::new(SubAgentConfig::new("a", "d", "i")),
            SubAgent::new(SubAgentConfig::new("a", "d", "i")),
        ],
        model,
        store,
        Scope::new("t", "w"),
    );
    assert!(
        twice
            .check()
            .unwrap_err()
            .contains("two subagents are named a")
    );
}
