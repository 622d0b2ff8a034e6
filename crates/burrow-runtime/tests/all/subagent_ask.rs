//! A synchronous task's `ask_parent` (ADR 0385) under a runner, on memory and SQLite: the child's question pauses the child and the parent's run with a request naming the subagent, the parent's sibling call runs once, the answer reaches the child, which goes on to its report, and the parent's next request reads that report; past `max_questions` the child's question is an error; a run of another runner (a new process) takes the answer. And the token bound (ADR 0386): an agent past `max_run_tokens` makes no more requests, a child past `Tasks::with_child_max_tokens` is an error result naming the bound.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use burrow_runtime::agent::{Agent, FailureReason, Outcome};
use burrow_runtime::message::{Message, Usage};
use burrow_runtime::model::{ModelError, ScriptedModel, ScriptedResponse};
use burrow_runtime::runner::Runner;
use burrow_runtime::session::{Answer, MemoryStore, RunStatus, Scope, SessionStore, SqliteStore};
use burrow_runtime::subagent::{ASKED_PARENT, SubAgent, Tasks};
use burrow_runtime::tool::{CallContext, FnTool, ToolOutput, ToolRegistry};
use burrow_types::SubAgentConfig;
use serde_json::json;

use super::support::start_run;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

/// A model answering with `answers` in order, keeping the last message of
/// each request it was sent (as text) in `seen`.
fn recording(answers: Vec<ScriptedResponse>, seen: Arc<Mutex<Vec<String>>>) -> ScriptedModel {
    let n = AtomicUsize::new(0);
    ScriptedModel::new(move |request| {
        let last = request.messages.last().map(last_text).unwrap_or_default();
        seen.lock().unwrap().push(last);
        let i = n.fetch_add(1, Ordering::SeqCst);
        answers.get(i).cloned().ok_or_else(|| {
            ModelError::new(
                burrow_runtime::model::ModelErrorKind::Exhausted,
                "no more answers",
            )
        })
    })
}

fn last_text(m: &Message) -> String {
    match m {
        Message::User { text } => text.clone(),
        Message::ToolResult(r) => r.content.clone(),
        other => format!("{other:?}"),
    }
}

/// A tool `tick` counting its calls.
fn ticker(count: Arc<AtomicUsize>) -> ToolRegistry {
    let mut tools = ToolRegistry::new();
    tools.add(FnTool::new("tick", "Counts.", move |_: NoArgs, _cx| {
        let count = count.clone();
        async move {
            count.fetch_add(1, Ordering::SeqCst);
            Ok(ToolOutput::ok("ticked"))
        }
    }));
    tools
}

fn asker(max: u32) -> SubAgentConfig {
    let mut config = SubAgentConfig::new("scout", "Looks.", "You look.");
    config.can_ask_questions = Some(true);
    config.max_questions = Some(max);
    config
}

async fn question_pauses_both_runs_and_the_answer_resumes_them(store: Arc<dyn SessionStore>) {
    let scope = Scope::new("tenant", "default");
    let child_seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let child = Arc::new(recording(
        vec![
            ScriptedResponse::calls().call(
                "q1",
                "ask_parent",
                json!({"question": "Which folder?"}),
            ),
            ScriptedResponse::calls().call("q2", "ask_parent", json!({"question": "And then?"})),
            ScriptedResponse::text("looked in docs"),
        ],
        child_seen.clone(),
    ));
    let parent_seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let parent_model = Arc::new(recording(
        vec![
            ScriptedResponse::calls()
                .call(
                    "t1",
                    "task",
                    json!({"description": "look", "prompt": "Look.", "subagent_type": "scout"}),
                )
                .call("k1", "tick", json!({})),
            ScriptedResponse::text("parent done"),
        ],
        parent_seen.clone(),
    ));
    let ticks = Arc::new(AtomicUsize::new(0));
    let tasks = Tasks::new(
        vec![SubAgent::new(asker(1)).with_model(child.clone())],
        parent_model.clone(),
        store.clone(),
        scope.clone(),
    );
    let agent = tasks.install(Agent::new(parent_model.clone()).with_tools(ticker(ticks.clone())));
    let thread = scope.thread("p");
    let runner = Runner::new(agent.clone(), store.clone());
    let paused = start_run(&runner, &thread, "user", "Start.")
        .await
        .wait()
        .await;
    assert!(
        matches!(paused.outcome, Outcome::Paused { .. }),
        "{:?}",
        paused.outcome
    );
    runner.aclose().await;
    assert_eq!(ticks.load(Ordering::SeqCst), 1);
    let runs = store.runs(&thread).await.unwrap();
    let run = runs.last().unwrap();
    assert_eq!(run.status, RunStatus::Paused);
    assert_eq!(run.requests.len(), 1, "{run:?}");
    let spec = &run.requests[0].spec;
    assert_eq!(spec.id, "t1/q1");
    assert_eq!(spec.call_id, "t1");
    assert_eq!(spec.tool_name, "task");
    let args = spec.arguments.as_ref().unwrap();
    assert_eq!(args["subagent"], "scout");
    assert_eq!(args["question"], "Which folder?");
    assert_eq!(args["task_id"], "p/task-t1");
    let child_thread = scope.thread("p/task-t1");
    let child_runs = store.runs(&child_thread).await.unwrap();
    assert_eq!(child_runs.last().unwrap().status, RunStatus::Paused);
    // The parent's task call says what the subagent asks.
    let history = store.history(&thread, 0).await.unwrap();
    let told = history
        .iter()
        .find_map(|e| match &e.message {
            Message::ToolResult(r) if r.call_id == "t1" => Some(r.clone()),
            _ => None,
        })
        .unwrap();
    assert!(!told.is_error, "{}", told.content);
    assert!(
        told.content
            .starts_with("The subagent scout (task p/task-t1) asks: Which folder?"),
        "{}",
        told.content
    );
    assert_eq!(child_seen.lock().unwrap().len(), 1);

    // Another runner (as a new process would) takes the answer.
    let runner = Runner::new(agent, store.clone());
    let answer = Answer {
        author: "user".to_owned(),
        approved: None,
        text: Some("docs".to_owned()),
        message_id: None,
    };
    let sent = runner
        .answer(&thread, &run.run_id, "t1/q1", answer)
        .await
        .unwrap();
    let done = sent.run.expect("the answer resumes the run").wait().await;
    runner.aclose().await;
    assert!(
        matches!(done.outcome, Outcome::Completed),
        "{:?}",
        done.outcome
    );
    // No sibling ran twice; the child's model read the answer, its second
    // question was refused (max_questions 1), and the parent read its report.
    assert_eq!(ticks.load(Ordering::SeqCst), 1);
    let child_seen = child_seen.lock().unwrap().clone();
    assert_eq!(child_seen.len(), 3, "{child_seen:?}");
    assert_eq!(child_seen[1], "docs");
    assert!(
        child_seen[2].contains("asked the 1 questions you may"),
        "{child_seen:?}"
    );
    let parent_seen = parent_seen.lock().unwrap().clone();
    assert_eq!(parent_seen.len(), 2, "{parent_seen:?}");
    assert!(
        parent_seen[1].starts_with("I answered the question of the call t1 (task). What came of it:\nlooked in docs\n\n[subagent scout completed"),
        "{parent_seen:?}"
    );
    let child_history = store.history(&child_thread, 0).await.unwrap();
    let asked = child_history
        .iter()
        .find_map(|e| match &e.message {
            Message::ToolResult(r) if r.call_id == "q1" => Some(r.content.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(asked, ASKED_PARENT);
    let runs = store.runs(&thread).await.unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, RunStatus::Completed);
    assert_eq!(
        store
            .runs(&child_thread)
            .await
            .unwrap()
            .last()
            .unwrap()
            .status,
        RunStatus::Completed
    );
}

#[tokio::test]
async fn a_synchronous_childs_question_pauses_the_parent_and_the_answer_resumes_both_memory() {
    question_pauses_both_runs_and_the_answer_resumes_them(Arc::new(MemoryStore::new())).await;
}

#[tokio::test]
async fn a_synchronous_childs_question_pauses_the_parent_and_the_answer_resumes_both_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("sessions.db")).unwrap();
    question_pauses_both_runs_and_the_answer_resumes_them(Arc::new(store)).await;
}

/// A child that asks again after the answer: the parent's run pauses again
/// before any model request, on the second question, and its answer ends it.
#[tokio::test]
async fn a_child_asking_again_pauses_the_parent_again() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let scope = Scope::new("tenant", "default");
    let child_seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let child = Arc::new(recording(
        vec![
            ScriptedResponse::calls().call(
                "q1",
                "ask_parent",
                json!({"question": "Which folder?"}),
            ),
            ScriptedResponse::calls().call("q2", "ask_parent", json!({"question": "Which file?"})),
            ScriptedResponse::text("read docs/a"),
        ],
        child_seen.clone(),
    ));
    let parent_seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let parent_model = Arc::new(recording(
        vec![
            ScriptedResponse::calls().call(
                "t1",
                "task",
                json!({"description": "look", "prompt": "Look.", "subagent_type": "scout"}),
            ),
            ScriptedResponse::text("parent done"),
        ],
        parent_seen.clone(),
    ));
    let tasks = Tasks::new(
        vec![SubAgent::new(asker(2)).with_model(child)],
        parent_model.clone(),
        store.clone(),
        scope.clone(),
    );
    let runner = Runner::new(tasks.install(Agent::new(parent_model)), store.clone());
    let thread = scope.thread("p");
    let first = start_run(&runner, &thread, "user", "Start.")
        .await
        .wait()
        .await;
    assert!(matches!(first.outcome, Outcome::Paused { .. }));
    let answer = |text: &str| Answer {
        author: "user".to_owned(),
        approved: None,
        text: Some(text.to_owned()),
        message_id: None,
    };
    let again = runner
        .answer(&thread, &first.run_id, "t1/q1", answer("docs"))
        .await
        .unwrap()
        .run
        .unwrap()
        .wait()
        .await;
    assert!(
        matches!(again.outcome, Outcome::Paused { .. }),
        "{:?}",
        again.outcome
    );
    assert_eq!(again.turns, 0);
    let run = store.run(&scope, &first.run_id).await.unwrap().unwrap();
    let open: Vec<_> = run.requests.iter().filter(|r| r.answer.is_none()).collect();
    assert_eq!(open.len(), 1, "{run:?}");
    assert_eq!(open[0].spec.id, "t1/q2");
    assert_eq!(
        open[0].spec.arguments.as_ref().unwrap()["question"],
        "Which file?"
    );
    let done = runner
        .answer(&thread, &first.run_id, "t1/q2", answer("a"))
        .await
        .unwrap()
        .run
        .unwrap()
        .wait()
        .await;
    runner.aclose().await;
    assert!(
        matches!(done.outcome, Outcome::Completed),
        "{:?}",
        done.outcome
    );
    assert_eq!(*child_seen.lock().unwrap(), ["Look.", "docs", "a"]);
    let parent_seen = parent_seen.lock().unwrap().clone();
    assert_eq!(parent_seen.len(), 2, "{parent_seen:?}");
    assert!(parent_seen[1].contains("read docs/a"), "{parent_seen:?}");
}

/// A task call outside a runner (its run cannot pause): the child pauses on
/// its question, and the call, which has no run to pause, is an error
/// saying so.
#[tokio::test]
async fn a_question_whose_parent_cannot_pause_makes_the_call_an_error() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let child_seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let child = Arc::new(recording(
        vec![
            ScriptedResponse::calls().call("q1", "ask_parent", json!({"question": "Which?"})),
            ScriptedResponse::text("guessed"),
        ],
        child_seen.clone(),
    ));
    let tasks = Tasks::new(
        vec![SubAgent::new(asker(1)).with_model(child)],
        Arc::new(ScriptedModel::from_responses(Vec::new())),
        store,
        Scope::new("tenant", "default"),
    );
    let cx = CallContext {
        run_id: Arc::from("run_parent"),
        call_id: "t1".to_owned(),
    };
    let out = tasks
        .tool()
        .call(
            &cx,
            json!({"description": "look", "prompt": "Look.", "subagent_type": "scout"}),
        )
        .await
        .unwrap();
    assert!(out.is_error, "{}", out.text);
    assert!(out.text.contains("ended paused"), "{}", out.text);
    assert!(
        out.text.contains("where its parent's run cannot pause"),
        "{}",
        out.text
    );
    assert_eq!(child_seen.lock().unwrap().len(), 1);
}

fn used(input: u64, output: u64) -> Usage {
    Usage {
        input_tokens: Some(input),
        output_tokens: Some(output),
        ..Usage::default()
    }
}

/// An agent with `max_run_tokens` 100 whose requests use 60 tokens each
/// stops before its third request, failed with the reason `max_run_tokens`.
#[tokio::test]
async fn an_agent_past_its_token_bound_makes_no_more_requests() {
    let ticks = Arc::new(AtomicUsize::new(0));
    let mut call = ScriptedResponse::calls().call("k", "tick", json!({}));
    call.usage = Some(used(50, 10));
    let model = Arc::new(ScriptedModel::from_responses(vec![
        call.clone(),
        call.clone(),
        call,
    ]));
    let agent = Agent::new(model.clone())
        .with_tools(ticker(ticks.clone()))
        .with_max_run_tokens(100);
    let mut history = Vec::new();
    let result = agent.run(&mut history, "Go.").await;
    let Outcome::Failed { reason, message } = &result.outcome else {
        panic!("{:?}", result.outcome);
    };
    assert_eq!(*reason, FailureReason::MaxRunTokens);
    assert_eq!(reason.as_str(), "max_run_tokens");
    assert_eq!(
        message,
        "the run used 120 tokens (input and output), past its limit of 100"
    );
    assert_eq!(model.requests(), 2);
    assert_eq!(result.turns, 2);
    assert_eq!(ticks.load(Ordering::SeqCst), 2);

    // At the bound, not past it: the run goes on.
    let mut answer = ScriptedResponse::text("done");
    answer.usage = Some(used(50, 10));
    let mut first = ScriptedResponse::calls().call("k", "tick", json!({}));
    first.usage = Some(used(50, 10));
    let model = Arc::new(ScriptedModel::from_responses(vec![first, answer]));
    let agent = Agent::new(model)
        .with_tools(ticker(ticks))
        .with_max_run_tokens(60);
    let result = agent.run(&mut Vec::new(), "Go.").await;
    assert!(
        matches!(result.outcome, Outcome::Completed),
        "{:?}",
        result.outcome
    );
}

/// A child past `with_child_max_tokens`: its task's result is an error
/// naming the bound, and the child made no request past it.
#[tokio::test]
async fn a_child_past_its_token_bound_is_an_error_result_naming_it() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let mut call = ScriptedResponse::calls().call("c1", "tick", json!({}));
    call.usage = Some(used(30, 20));
    let child = Arc::new(ScriptedModel::from_responses(vec![
        call.clone(),
        call,
        ScriptedResponse::text("never"),
    ]));
    let tasks = Tasks::new(
        vec![
            SubAgent::new(SubAgentConfig::new("scout", "Looks.", "You look."))
                .with_model(child.clone()),
        ],
        Arc::new(ScriptedModel::from_responses(Vec::new())),
        store,
        Scope::new("tenant", "default"),
    )
    .with_tools(ticker(Arc::default()))
    .with_child_max_tokens(40);
    let cx = CallContext {
        run_id: Arc::from("run_parent"),
        call_id: "t1".to_owned(),
    };
    let out = tasks
        .tool()
        .call(
            &cx,
            json!({"description": "look", "prompt": "Look.", "subagent_type": "scout"}),
        )
        .await
        .unwrap();
    assert!(out.is_error, "{}", out.text);
    assert!(
        out.text.starts_with("The subagent scout did not complete its task: it ended failed (max_run_tokens: the run used 50 tokens (input and output), past its limit of 40)."),
        "{}",
        out.text
    );
    assert_eq!(child.requests(), 1);
}

/// A tool `name` counting its calls.
fn counted(name: &str, count: Arc<AtomicUsize>) -> FnTool<NoArgs> {
    FnTool::new(name, "Counts.", move |_: NoArgs, _cx| {
        let count = count.clone();
        async move {
            count.fetch_add(1, Ordering::SeqCst);
            Ok(ToolOutput::ok("done"))
        }
    })
}

/// A child whose batch is `tick` and `wipe`, a PreToolUse hook asking for
/// `wipe` (ADR 0392): the child and the parent pause, the parent's request
/// names the subagent and the call; the decision `approved` resumes the
/// child so that `wipe` alone runs (or is refused) and `tick` does not run
/// again; the child reports and the parent completes.
async fn childs_approval_pauses_the_parent_and_resumes_only_that_call(
    store: Arc<dyn SessionStore>,
    approved: bool,
) {
    use burrow_runtime::hooks::{Hook, HookEvent, HookOutput, Hooks};
    let scope = Scope::new("tenant", "default");
    let child_seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let child = Arc::new(recording(
        vec![
            ScriptedResponse::calls()
                .call("k1", "tick", json!({}))
                .call("w1", "wipe", json!({})),
            ScriptedResponse::text("wiped"),
        ],
        child_seen.clone(),
    ));
    let parent_seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let parent_model = Arc::new(recording(
        vec![
            ScriptedResponse::calls().call(
                "t1",
                "task",
                json!({"description": "clean", "prompt": "Clean.", "subagent_type": "cleaner"}),
            ),
            ScriptedResponse::text("parent done"),
        ],
        parent_seen.clone(),
    ));
    let ticks = Arc::new(AtomicUsize::new(0));
    let wipes = Arc::new(AtomicUsize::new(0));
    let mut tools = ToolRegistry::new();
    tools.add(counted("tick", ticks.clone()));
    tools.add(counted("wipe", wipes.clone()));
    let mut hooks = Hooks::new();
    hooks.add(
        Hook::handler(HookEvent::PreToolUse, Some("wipe"), |_| async {
            Ok(HookOutput::ask("wiping needs a human"))
        })
        .unwrap(),
    );
    let tasks = Tasks::new(
        vec![
            SubAgent::new(SubAgentConfig::new("cleaner", "Cleans.", "You clean."))
                .with_tools(vec!["tick".to_owned(), "wipe".to_owned()])
                .with_model(child),
        ],
        parent_model.clone(),
        store.clone(),
        scope.clone(),
    )
    .with_tools(tools)
    .with_hooks(hooks);
    let agent = tasks.install(Agent::new(parent_model));
    let thread = scope.thread("p");
    let runner = Runner::new(agent.clone(), store.clone());
    let paused = start_run(&runner, &thread, "user", "Start.")
        .await
        .wait()
        .await;
    runner.aclose().await;
    assert!(
        matches!(paused.outcome, Outcome::Paused { .. }),
        "{:?}",
        paused.outcome
    );
    assert_eq!(ticks.load(Ordering::SeqCst), 1);
    assert_eq!(wipes.load(Ordering::SeqCst), 0);
    let run = store.runs(&thread).await.unwrap().pop().unwrap();
    assert_eq!(run.status, RunStatus::Paused);
    assert_eq!(run.requests.len(), 1, "{run:?}");
    let spec = &run.requests[0].spec;
    assert_eq!(spec.id, "t1/w1");
    assert_eq!(spec.call_id, "t1");
    assert_eq!(spec.tool_name, "task");
    assert_eq!(spec.kind, burrow_runtime::session::RequestKind::Approval);
    let args = spec.arguments.as_ref().unwrap();
    assert_eq!(args["subagent"], "cleaner");
    assert_eq!(args["tool"], "wipe");
    assert_eq!(args["call_id"], "w1");
    assert_eq!(args["task_id"], "p/task-t1");
    let child_thread = scope.thread("p/task-t1");
    let child_run = store.runs(&child_thread).await.unwrap().pop().unwrap();
    assert_eq!(child_run.status, RunStatus::Paused);

    let runner = Runner::new(agent, store.clone());
    let answer = Answer {
        author: "user".to_owned(),
        approved: Some(approved),
        text: (!approved).then(|| "not now".to_owned()),
        message_id: None,
    };
    let sent = runner
        .answer(&thread, &run.run_id, "t1/w1", answer)
        .await
        .unwrap();
    let done = sent.run.expect("the decision resumes the run").wait().await;
    runner.aclose().await;
    assert!(
        matches!(done.outcome, Outcome::Completed),
        "{:?}",
        done.outcome
    );
    // The sibling ran once; the asked call ran once when approved, never
    // when declined.
    assert_eq!(ticks.load(Ordering::SeqCst), 1);
    assert_eq!(wipes.load(Ordering::SeqCst), usize::from(approved));
    let child_seen = child_seen.lock().unwrap().clone();
    assert_eq!(child_seen.len(), 2, "{child_seen:?}");
    let said = if approved {
        "I approved the call w1 (wipe); it ran. Its result:\ndone"
    } else {
        "I declined the call w1 (wipe): not now"
    };
    assert_eq!(child_seen[1], said, "{child_seen:?}");
    let parent_seen = parent_seen.lock().unwrap().clone();
    assert_eq!(parent_seen.len(), 2, "{parent_seen:?}");
    assert!(
        parent_seen[1].contains("wiped\n\n[subagent cleaner completed"),
        "{parent_seen:?}"
    );
    assert_eq!(
        store
            .runs(&child_thread)
            .await
            .unwrap()
            .pop()
            .unwrap()
            .status,
        RunStatus::Completed
    );
    assert_eq!(
        store.runs(&thread).await.unwrap().pop().unwrap().status,
        RunStatus::Completed
    );
}

#[tokio::test]
async fn a_childs_approval_pauses_the_parent_and_approving_runs_only_that_call_memory() {
    childs_approval_pauses_the_parent_and_resumes_only_that_call(
        Arc::new(MemoryStore::new()),
        true,
    )
    .await;
}

#[tokio::test]
async fn a_childs_approval_pauses_the_parent_and_approving_runs_only_that_call_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("sessions.db")).unwrap();
    childs_approval_pauses_the_parent_and_resumes_only_that_call(Arc::new(store), true).await;
}

#[tokio::test]
async fn a_childs_declined_approval_refuses_only_that_call_memory() {
    childs_approval_pauses_the_parent_and_resumes_only_that_call(
        Arc::new(MemoryStore::new()),
        false,
    )
    .await;
}

#[tokio::test]
async fn a_childs_declined_approval_refuses_only_that_call_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("sessions.db")).unwrap();
    childs_approval_pauses_the_parent_and_resumes_only_that_call(Arc::new(store), false).await;
}
