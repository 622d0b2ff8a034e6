//! `subagent::Tasks` over a memory store: a `task` call run a second time (as the runner re-runs it after a crash) finds its child's ended run instead of starting another, and the child's events name its run and its parent's; a call dropped with its parent's run stops its child (its call in flight cancelled, no model request after); at most the concurrency bound of children run at once.

use std::sync::{Arc, Mutex};

use burrow_runtime::model::{ScriptedModel, ScriptedResponse};
use burrow_runtime::session::RunStatus;
use burrow_runtime::session::{MemoryStore, Scope, SessionStore};
use burrow_runtime::subagent::{SubAgent, TaskEvent, Tasks};
use burrow_runtime::tool::{CallContext, FnTool, ToolOutput, ToolRegistry};
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

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

/// A tool `hold` whose calls tell `entered` and then wait until `release` has
/// a permit (one permit per call).
fn hold(
    entered: Arc<tokio::sync::Semaphore>,
    release: Arc<tokio::sync::Semaphore>,
) -> ToolRegistry {
    let mut tools = ToolRegistry::new();
    tools.add(FnTool::new("hold", "Waits.", move |_: NoArgs, _cx| {
        let entered = entered.clone();
        let release = release.clone();
        async move {
            entered.add_permits(1);
            release
                .acquire()
                .await
                .map_err(|_| burrow_backend::Error::failure_msg("closed"))?
                .forget();
            Ok(ToolOutput::ok("held"))
        }
    }));
    tools
}

fn cx(call: &str) -> CallContext {
    CallContext {
        run_id: Arc::from("run_parent"),
        call_id: call.to_owned(),
    }
}

/// The parent's run is stopped (the call's future dropped, as a stopped
/// batch drops it) while its child waits in a tool call: the child's run
/// ends stopped, its call cancelled, and its model gets no further request.
#[tokio::test]
async fn a_call_dropped_with_its_parent_stops_its_child_and_aclose_waits_for_its_end() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let scope = Scope::new("tenant", "default");
    let child = Arc::new(ScriptedModel::from_responses(vec![
        ScriptedResponse::calls().call("c1", "hold", json!({})),
        ScriptedResponse::text("never said"),
    ]));
    let entered = Arc::new(tokio::sync::Semaphore::new(0));
    let release = Arc::new(tokio::sync::Semaphore::new(0));
    let tasks = Tasks::new(
        vec![
            SubAgent::new(SubAgentConfig::new("scout", "Looks.", "You look."))
                .with_model(child.clone()),
        ],
        Arc::new(ScriptedModel::from_responses(Vec::new())),
        store.clone(),
        scope.clone(),
    )
    .with_tools(hold(entered.clone(), release.clone()));
    let tool = tasks.tool();
    let args = json!({"description": "look", "prompt": "Look.", "subagent_type": "scout"});
    let call = tokio::spawn(async move { tool.call(&cx("t1"), args).await });
    entered.acquire().await.unwrap().forget();
    call.abort();
    assert!(call.await.unwrap_err().is_cancelled());
    tasks.aclose().await;

    let thread = scope.thread("run_parent/task-t1");
    let runs = store.runs(&thread).await.unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, RunStatus::Stopped, "{runs:?}");
    let history = store.history(&thread, 0).await.unwrap();
    let result = history
        .iter()
        .find_map(|e| match &e.message {
            burrow_runtime::message::Message::ToolResult(r) if r.call_id == "c1" => Some(r.clone()),
            _ => None,
        })
        .expect("the held call has a result");
    assert!(
        result.is_error && result.content.contains("cancelled"),
        "{result:?}"
    );
    release.add_permits(1);
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    assert_eq!(child.requests(), 1);
}

/// Six calls at once with the bound at 4: four children enter their tool
/// call, the other two wait for a slot and run once one is free; all end
/// completed.
#[tokio::test]
async fn more_children_than_the_bound_wait_for_a_slot() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let scope = Scope::new("tenant", "default");
    let entered = Arc::new(tokio::sync::Semaphore::new(0));
    let release = Arc::new(tokio::sync::Semaphore::new(0));
    let child = Arc::new(ScriptedModel::new(|request| {
        // Each child calls `hold` once, then reports.
        if request
            .messages
            .iter()
            .any(|m| matches!(m, burrow_runtime::message::Message::ToolResult(_)))
        {
            Ok(ScriptedResponse::text("done"))
        } else {
            Ok(ScriptedResponse::calls().call("c1", "hold", json!({})))
        }
    }));
    let tasks = Tasks::new(
        vec![SubAgent::new(SubAgentConfig::new("scout", "Looks.", "You look.")).with_model(child)],
        Arc::new(ScriptedModel::from_responses(Vec::new())),
        store.clone(),
        scope.clone(),
    )
    .with_tools(hold(entered.clone(), release.clone()));
    assert_eq!(burrow_runtime::subagent::DEFAULT_MAX_CONCURRENT, 4);
    let tool = tasks.tool();
    let calls: Vec<_> = (0..6)
        .map(|i| {
            let tool = tool.clone();
            tokio::spawn(async move {
                let args =
                    json!({"description": "look", "prompt": "Look.", "subagent_type": "scout"});
                tool.call(&cx(&format!("t{i}")), args).await
            })
        })
        .collect();
    entered.acquire_many(4).await.unwrap().forget();
    // Let the waiting calls get as far as they can: none reaches its tool.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert_eq!(entered.available_permits(), 0);
    let mut started = 0;
    for i in 0..6 {
        let runs = store
            .runs(&scope.thread(format!("run_parent/task-t{i}")))
            .await
            .unwrap();
        started += usize::from(!runs.is_empty());
    }
    assert_eq!(started, 4, "only four children started");
    release.add_permits(6);
    for call in calls {
        let out = call.await.unwrap().unwrap();
        assert!(
            !out.is_error && out.text.starts_with("done\n\n"),
            "{}",
            out.text
        );
    }
}

/// The tool names of each request a child's model gets, in order.
type SeenTools = Arc<Mutex<Vec<Vec<String>>>>;

fn recording_child(seen: SeenTools) -> Arc<ScriptedModel> {
    Arc::new(ScriptedModel::new(move |request| {
        let names = request.tools.iter().map(|t| t.name.clone()).collect();
        seen.lock().unwrap().push(names);
        Ok(ScriptedResponse::text("done"))
    }))
}

/// Tasks build their children's tools once (ADR 0387): every child still
/// gets the offered tools with their definitions, call after call, and
/// `Tasks` given other tools hands its children those, not the ones built
/// for the first.
#[tokio::test]
async fn every_child_gets_the_offered_tools_and_new_tools_reach_later_children() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let scope = Scope::new("tenant", "default");
    let seen: SeenTools = Arc::default();
    let entered = Arc::new(tokio::sync::Semaphore::new(0));
    let release = Arc::new(tokio::sync::Semaphore::new(0));
    let tasks = Tasks::new(
        vec![
            SubAgent::new(SubAgentConfig::new("scout", "Looks.", "You look."))
                .with_model(recording_child(seen.clone())),
        ],
        Arc::new(ScriptedModel::from_responses(Vec::new())),
        store.clone(),
        scope.clone(),
    )
    .with_tools(hold(entered.clone(), release.clone()));
    let args = json!({"description": "look", "prompt": "Look.", "subagent_type": "scout"});
    let tool = tasks.tool();
    for call in ["t1", "t2", "t3"] {
        let out = tool.call(&cx(call), args.clone()).await.unwrap();
        assert!(!out.is_error, "{}", out.text);
    }
    let mut other = ToolRegistry::new();
    other.add(FnTool::new("peek", "Peeks.", |_: NoArgs, _cx| async {
        Ok(ToolOutput::ok("peeked"))
    }));
    let changed = tasks.clone().with_tools(other);
    let out = changed.tool().call(&cx("t4"), args.clone()).await.unwrap();
    assert!(!out.is_error, "{}", out.text);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 4, "{seen:?}");
    for names in &seen[..3] {
        assert_eq!(names, &["hold"], "{seen:?}");
    }
    assert_eq!(seen[3], ["peek"], "{seen:?}");
}
