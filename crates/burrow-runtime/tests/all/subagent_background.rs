//! Background `task` calls (ADR 0275) over a memory store: the call answers at once while the child works on, the child's report is delivered into the parent's history before the parent's next model request (once), `task_status` shows the handle, `task_cancel` stops the child, and a stopped parent's run cancels its background child.

use std::sync::Arc;

use burrow_runtime::agent::{Agent, CancelToken, Outcome, RunOptions};
use burrow_runtime::message::Message;
use burrow_runtime::model::{ScriptedModel, ScriptedResponse};
use burrow_runtime::session::{MemoryStore, RunStatus, Scope, SessionStore};
use burrow_runtime::subagent::{SubAgent, TaskEvent, Tasks};
use burrow_runtime::tool::{FnTool, ToolOutput, ToolRegistry};
use burrow_types::SubAgentConfig;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

/// A tool `name` that runs `f` once per call.
fn tool<F, Fut>(name: &str, f: F) -> FnTool<NoArgs>
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ToolOutput> + Send + 'static,
{
    let f = Arc::new(f);
    FnTool::new(name, "A test tool.", move |_: NoArgs, _cx| {
        let f = f.clone();
        async move { Ok(f().await) }
    })
}

/// The child's `hold`: tells `entered`, then waits for a permit of `release`.
fn hold(entered: Arc<Semaphore>, release: Arc<Semaphore>) -> ToolRegistry {
    let mut tools = ToolRegistry::new();
    tools.add(tool("hold", move || {
        let entered = entered.clone();
        let release = release.clone();
        async move {
            entered.add_permits(1);
            match release.acquire().await {
                Ok(permit) => permit.forget(),
                Err(_) => return ToolOutput::refused("closed"),
            }
            ToolOutput::ok("held")
        }
    }));
    tools
}

fn background(id: &str) -> ScriptedResponse {
    ScriptedResponse::calls().call(
        id,
        "task",
        json!({"description": "look", "prompt": "Look.", "subagent_type": "scout", "run_in_background": true}),
    )
}

fn result_text(history: &[Message], call: &str) -> (String, bool) {
    history
        .iter()
        .find_map(|m| match m {
            Message::ToolResult(r) if r.call_id == call => Some((r.content.clone(), r.is_error)),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no result of {call} in {history:?}"))
}

fn position(history: &[Message], f: impl Fn(&Message) -> bool) -> Vec<usize> {
    history
        .iter()
        .enumerate()
        .filter(|(_, m)| f(m))
        .map(|(i, _)| i)
        .collect()
}

fn reports(history: &[Message]) -> Vec<usize> {
    position(
        history,
        |m| matches!(m, Message::User { text } if text.starts_with("[background task ")),
    )
}

fn options(run_id: &str, cancel: CancelToken) -> RunOptions {
    RunOptions {
        run_id: Some(run_id.to_owned()),
        cancel,
        ..RunOptions::default()
    }
}

/// The parent goes on while its background child holds a call (its `go`
/// releases the child and waits for its end); the child's report is in the
/// parent's history right before its third request, once, and `task_status`
/// shows the handle completed with the report.
#[tokio::test]
async fn a_background_task_answers_at_once_and_its_report_reaches_the_parents_next_request() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let scope = Scope::new("tenant", "default");
    let entered = Arc::new(Semaphore::new(0));
    let release = Arc::new(Semaphore::new(0));
    let ended = Arc::new(Semaphore::new(0));
    let child = Arc::new(ScriptedModel::from_responses(vec![
        ScriptedResponse::calls().call("c1", "hold", json!({})),
        ScriptedResponse::text("the report"),
    ]));
    let on_end = ended.clone();
    let tasks = Tasks::new(
        vec![
            SubAgent::new(SubAgentConfig::new("scout", "Looks.", "You look."))
                .with_model(child.clone()),
        ],
        Arc::new(ScriptedModel::from_responses(Vec::new())),
        store.clone(),
        scope.clone(),
    )
    .with_tools(hold(entered.clone(), release.clone()))
    .with_events(Arc::new(move |e| {
        if matches!(e, TaskEvent::Ended { .. }) {
            on_end.add_permits(1);
        }
    }));
    let parent_model = Arc::new(ScriptedModel::from_responses(vec![
        background("t1"),
        ScriptedResponse::calls().call("g1", "go", json!({})),
        ScriptedResponse::calls().call(
            "s1",
            "task_status",
            json!({"task_id": "run_parent/task-t1"}),
        ),
        ScriptedResponse::calls().call("g2", "go_on", json!({})),
        ScriptedResponse::text("done"),
    ]));
    let mut parent_tools = ToolRegistry::new();
    let (e, r, d) = (entered.clone(), release.clone(), ended.clone());
    parent_tools.add(tool("go", move || {
        let (entered, release, ended) = (e.clone(), r.clone(), d.clone());
        async move {
            // The child is in its call while the parent runs this one.
            entered.acquire().await.map(|p| p.forget()).ok();
            release.add_permits(1);
            ended.acquire().await.map(|p| p.forget()).ok();
            ToolOutput::ok("went")
        }
    }));
    parent_tools.add(tool("go_on", || async { ToolOutput::ok("on") }));
    let parent = tasks.install(Agent::new(parent_model.clone()).with_tools(parent_tools));

    let mut history = Vec::new();
    let result = parent
        .run_with(
            &mut history,
            Some("Start it.".to_owned()),
            options("run_parent", CancelToken::new()),
            &mut |_| {},
        )
        .await;
    assert!(
        matches!(result.outcome, Outcome::Completed),
        "{:?}",
        result.outcome
    );
    let (started, is_error) = result_text(&history, "t1");
    assert!(!is_error, "{started}");
    assert!(
        started.starts_with("Started the background task run_parent/task-t1 (subagent scout)."),
        "{started}"
    );
    let delivered = reports(&history);
    assert_eq!(delivered.len(), 1, "delivered once: {history:?}");
    let Message::User { text } = &history[delivered[0]] else {
        unreachable!()
    };
    assert!(
        text.starts_with("[background task run_parent/task-t1 (scout: look) completed]\n\nthe report\n\n[subagent scout completed: 2 turns, 1 tool call"),
        "{text}"
    );
    // Right after the `go` call's result, before the answer calling task_status.
    let go = position(
        &history,
        |m| matches!(m, Message::ToolResult(r) if r.call_id == "g1"),
    );
    let asked = position(&history, |m| m.tool_calls().any(|c| c.id == "s1"));
    assert_eq!(go[0] + 1, delivered[0]);
    assert_eq!(delivered[0] + 1, asked[0]);

    let (status, is_error) = result_text(&history, "s1");
    assert!(!is_error, "{status}");
    let handle: Value = serde_json::from_str(&status).unwrap();
    assert_eq!(handle["task_id"], "run_parent/task-t1");
    assert_eq!(handle["subagent_name"], "scout");
    assert_eq!(handle["status"], "completed");
    assert!(
        handle["result"].as_str().unwrap().starts_with("the report"),
        "{handle}"
    );
    assert!(handle["error"].is_null() && handle["pending_question"].is_null());
    assert!(handle["started_at"].is_string() && handle["completed_at"].is_string());

    let runs = store
        .runs(&scope.thread("run_parent/task-t1"))
        .await
        .unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, RunStatus::Completed);
    assert_eq!(child.requests(), 2);
    assert_eq!(parent_model.requests(), 5);
}

/// `task_cancel` on a child holding a call: the child's run ends stopped,
/// its call cancelled, the handle `cancelled`, no report is delivered and
/// the child's model gets no request after.
#[tokio::test]
async fn task_cancel_stops_the_child_and_its_handle_says_cancelled() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let scope = Scope::new("tenant", "default");
    let entered = Arc::new(Semaphore::new(0));
    let release = Arc::new(Semaphore::new(0));
    let child = Arc::new(ScriptedModel::from_responses(vec![
        ScriptedResponse::calls().call("c1", "hold", json!({})),
        ScriptedResponse::text("never said"),
    ]));
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
    let parent_model = Arc::new(ScriptedModel::from_responses(vec![
        background("t1"),
        ScriptedResponse::calls().call("w1", "wait", json!({})),
        ScriptedResponse::calls().call(
            "x1",
            "task_cancel",
            json!({"task_id": "run_parent/task-t1"}),
        ),
        ScriptedResponse::calls().call(
            "x2",
            "task_cancel",
            json!({"task_id": "run_parent/task-t1"}),
        ),
        ScriptedResponse::calls().call(
            "x3",
            "task_status",
            json!({"task_id": "elsewhere/task-t9"}),
        ),
        ScriptedResponse::text("done"),
    ]));
    let mut parent_tools = ToolRegistry::new();
    let e = entered.clone();
    parent_tools.add(tool("wait", move || {
        let entered = e.clone();
        async move {
            entered.acquire().await.map(|p| p.forget()).ok();
            ToolOutput::ok("the child is in its call")
        }
    }));
    let parent = tasks.install(Agent::new(parent_model).with_tools(parent_tools));
    let mut history = Vec::new();
    let result = parent
        .run_with(
            &mut history,
            Some("Start it.".to_owned()),
            options("run_parent", CancelToken::new()),
            &mut |_| {},
        )
        .await;
    assert!(
        matches!(result.outcome, Outcome::Completed),
        "{:?}",
        result.outcome
    );
    let (cancelled, is_error) = result_text(&history, "x1");
    assert!(!is_error, "{cancelled}");
    let handle: Value = serde_json::from_str(&cancelled).unwrap();
    assert_eq!(handle["status"], "cancelled", "{handle}");
    assert!(handle["result"].is_null());
    let (again, is_error) = result_text(&history, "x2");
    assert!(is_error, "{again}");
    assert_eq!(
        again,
        "The background task run_parent/task-t1 already ended (cancelled); there is nothing to cancel."
    );
    let (unknown, is_error) = result_text(&history, "x3");
    assert!(
        is_error
            && unknown
                .starts_with("There is no background task elsewhere/task-t9 in this conversation"),
        "{unknown}"
    );
    assert!(reports(&history).is_empty(), "{history:?}");

    let thread = scope.thread("run_parent/task-t1");
    let runs = store.runs(&thread).await.unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, RunStatus::Stopped, "{runs:?}");
    let child_history = store.history(&thread, 0).await.unwrap();
    let held = child_history
        .iter()
        .find_map(|e| match &e.message {
            Message::ToolResult(r) if r.call_id == "c1" => Some(r.clone()),
            _ => None,
        })
        .expect("the held call has a result");
    assert!(
        held.is_error && held.content.contains("cancelled"),
        "{held:?}"
    );
    release.add_permits(1);
    tokio::task::yield_now().await;
    assert_eq!(child.requests(), 1);
}

/// The parent's run is stopped while its background child holds a call:
/// by the time the parent's run has ended, the child's run has ended
/// stopped, and its model got no request after.
#[tokio::test]
async fn a_stopped_parent_cancels_its_background_child_before_its_run_ends() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let scope = Scope::new("tenant", "default");
    let entered = Arc::new(Semaphore::new(0));
    let release = Arc::new(Semaphore::new(0));
    let child = Arc::new(ScriptedModel::from_responses(vec![
        ScriptedResponse::calls().call("c1", "hold", json!({})),
        ScriptedResponse::text("never said"),
    ]));
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
    let parent_model = Arc::new(ScriptedModel::from_responses(vec![
        background("t1"),
        ScriptedResponse::calls().call("w1", "stop_me", json!({})),
        ScriptedResponse::text("never said"),
    ]));
    let cancel = CancelToken::new();
    let mut parent_tools = ToolRegistry::new();
    let (e, c) = (entered.clone(), cancel.clone());
    parent_tools.add(tool("stop_me", move || {
        let (entered, cancel) = (e.clone(), c.clone());
        async move {
            entered.acquire().await.map(|p| p.forget()).ok();
            // Ctrl-C on the parent while its child is in its call.
            cancel.cancel();
            std::future::pending::<()>().await;
            ToolOutput::ok("never")
        }
    }));
    let parent = tasks.install(Agent::new(parent_model.clone()).with_tools(parent_tools));
    let mut history = Vec::new();
    let result = parent
        .run_with(
            &mut history,
            Some("Start it.".to_owned()),
            options("run_parent", cancel),
            &mut |_| {},
        )
        .await;
    assert!(
        matches!(result.outcome, Outcome::Stopped { .. }),
        "{:?}",
        result.outcome
    );
    let runs = store
        .runs(&scope.thread("run_parent/task-t1"))
        .await
        .unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, RunStatus::Stopped, "{runs:?}");
    release.add_permits(1);
    tokio::task::yield_now().await;
    assert_eq!(child.requests(), 1);
    assert_eq!(parent_model.requests(), 2);
}

/// The parent answers without calls while its background child still
/// holds a call: the run does not end, it waits for the child, gets its
/// report and makes another request, whose answer ends it.
#[tokio::test]
async fn a_run_that_answers_while_its_task_works_waits_for_the_report_and_goes_on() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let scope = Scope::new("tenant", "default");
    let entered = Arc::new(Semaphore::new(0));
    let release = Arc::new(Semaphore::new(0));
    let child = Arc::new(ScriptedModel::from_responses(vec![
        ScriptedResponse::calls().call("c1", "hold", json!({})),
        ScriptedResponse::text("the report"),
    ]));
    let tasks = Tasks::new(
        vec![SubAgent::new(SubAgentConfig::new("scout", "Looks.", "You look.")).with_model(child)],
        Arc::new(ScriptedModel::from_responses(Vec::new())),
        store,
        scope,
    )
    .with_tools(hold(entered.clone(), release.clone()));
    let parent_model = Arc::new(ScriptedModel::from_responses(vec![
        background("t1"),
        ScriptedResponse::text("started it"),
        ScriptedResponse::text("read the report"),
    ]));
    let parent = tasks.install(Agent::new(parent_model.clone()));
    let run = tokio::spawn(async move {
        let mut history = Vec::new();
        let result = parent
            .run_with(
                &mut history,
                Some("Start it.".to_owned()),
                options("run_parent", CancelToken::new()),
                &mut |_| {},
            )
            .await;
        (result, history)
    });
    entered.acquire().await.unwrap().forget();
    release.add_permits(1);
    let (result, history) = run.await.unwrap();
    assert!(
        matches!(result.outcome, Outcome::Completed),
        "{:?}",
        result.outcome
    );
    let texts: Vec<String> = history
        .iter()
        .filter_map(|m| match m {
            Message::User { text } => Some(format!("user: {}", text.lines().next().unwrap_or(""))),
            Message::Assistant { .. } => {
                let calls = m.tool_calls().count();
                Some(format!("assistant: {} calls", calls))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        texts,
        [
            "user: Start it.",
            "assistant: 1 calls",
            "assistant: 0 calls",
            "user: [background task run_parent/task-t1 (scout: look) completed]",
            "assistant: 0 calls",
        ],
        "{history:?}"
    );
    assert_eq!(parent_model.requests(), 3);
}

/// A background child with `can_ask_questions` (at most one) asks its
/// parent: the parent's run, which answered without calls, gets the
/// question instead of ending; `task_status` shows `waiting_for_answer` with
/// the question; `task_answer` lets the child go on with the answer; its
/// second question is refused; its report then reaches the parent.
#[tokio::test]
async fn a_background_child_asks_its_parent_and_goes_on_with_the_answer() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let scope = Scope::new("tenant", "default");
    let child = Arc::new(ScriptedModel::from_responses(vec![
        ScriptedResponse::calls().call("q1", "ask_parent", json!({"question": "Which folder?"})),
        ScriptedResponse::calls().call("q2", "ask_parent", json!({"question": "And then?"})),
        ScriptedResponse::text("looked in docs"),
    ]));
    let mut config = SubAgentConfig::new("scout", "Looks.", "You look.");
    config.can_ask_questions = Some(true);
    config.max_questions = Some(1);
    let tasks = Tasks::new(
        vec![SubAgent::new(config).with_model(child.clone())],
        Arc::new(ScriptedModel::from_responses(Vec::new())),
        store.clone(),
        scope.clone(),
    );
    let parent_model = Arc::new(ScriptedModel::from_responses(vec![
        background("t1"),
        ScriptedResponse::text("waiting"),
        ScriptedResponse::calls()
            .call(
                "s1",
                "task_status",
                json!({"task_id": "run_parent/task-t1"}),
            )
            .call(
                "a1",
                "task_answer",
                json!({"task_id": "run_parent/task-t1", "answer": "docs"}),
            ),
        ScriptedResponse::text("waiting again"),
        ScriptedResponse::text("done"),
    ]));
    let parent = tasks.install(Agent::new(parent_model.clone()));
    let mut history = Vec::new();
    let result = parent
        .run_with(
            &mut history,
            Some("Start it.".to_owned()),
            options("run_parent", CancelToken::new()),
            &mut |_| {},
        )
        .await;
    assert!(
        matches!(result.outcome, Outcome::Completed),
        "{:?}",
        result.outcome
    );
    let asked = position(
        &history,
        |m| matches!(m, Message::User { text } if text.starts_with("[background task run_parent/task-t1 (scout: look) asks]\n\nWhich folder?")),
    );
    assert_eq!(asked.len(), 1, "{history:?}");
    let (status, _) = result_text(&history, "s1");
    let handle: Value = serde_json::from_str(&status).unwrap();
    assert_eq!(handle["status"], "waiting_for_answer", "{handle}");
    assert_eq!(handle["pending_question"], "Which folder?");
    let (answered, is_error) = result_text(&history, "a1");
    assert!(!is_error, "{answered}");
    let delivered = reports(&history)
        .into_iter()
        .filter(|&i| matches!(&history[i], Message::User { text } if text.contains(") completed]")))
        .collect::<Vec<_>>();
    assert_eq!(delivered.len(), 1, "{history:?}");
    assert!(delivered[0] > asked[0]);

    let child_history = store
        .history(&scope.thread("run_parent/task-t1"), 0)
        .await
        .unwrap();
    let result = |id: &str| {
        child_history
            .iter()
            .find_map(|e| match &e.message {
                Message::ToolResult(r) if r.call_id == id => Some((r.content.clone(), r.is_error)),
                _ => None,
            })
            .unwrap()
    };
    assert_eq!(result("q1"), ("docs".to_owned(), false));
    let (second, is_error) = result("q2");
    assert!(
        is_error && second.contains("asked the 1 questions you may"),
        "{second}"
    );
    assert_eq!(parent_model.requests(), 5);
}
