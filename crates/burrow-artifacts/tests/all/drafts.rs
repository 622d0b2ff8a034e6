//! Drafts and `ask_user` through a real `Runner` (a SQLite artifact store, the memory session store): a tool's `ArtifactDraft` reaches a live watcher with the artifact's kind and id and is stored nowhere; with `ask`, `ask_user` pauses the run until a person answers, and the answer shapes the artifact.

use std::sync::Arc;

use burrow_artifacts::tools::{ArtifactDraft, ArtifactWorkspace, Outcome as Submitted};
use burrow_artifacts::{ArtifactStore, Change, SqliteArtifactStore};
use burrow_runtime::agent::{Agent, Outcome};
use burrow_runtime::message::Message;
use burrow_runtime::model::{ScriptedModel, ScriptedResponse};
use burrow_runtime::runner::{FanoutChannel, LiveChannel, LiveEvent, Runner, RunnerConfig};
use burrow_runtime::session::{
    MemoryStore, RequestKind, RunStatus, Scope, SessionStore, load_history,
};
use burrow_runtime::tool::{CallContext, FnTool, ToolOutput, ToolRegistry};
use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tokio::sync::Notify;

use super::support::{kinds, plan};

const CANARY: &str = "DRAFT-ONLY-CANARY";

fn scope() -> Scope {
    Scope::new("acme", "ws")
}

#[derive(Deserialize, JsonSchema)]
struct WritePlan {
    goal: String,
}

/// Every byte of the SQLite files in `dir` (the databases and their WAL files).
fn bytes_in(dir: &std::path::Path) -> Vec<u8> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            all.extend(std::fs::read(path).unwrap());
        }
    }
    all
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draft_reaches_a_live_watcher_with_its_kind_and_id_and_is_stored_nowhere() {
    let dir = tempfile::tempdir().unwrap();
    let artifacts: Arc<dyn ArtifactStore> =
        Arc::new(SqliteArtifactStore::open(dir.path().join("artifacts.db"), kinds()).unwrap());
    let sessions: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let ws = Arc::new(ArtifactWorkspace::new(
        Arc::clone(&artifacts),
        scope(),
        "assistant",
    ));
    let mut tools = ToolRegistry::new();
    ws.add_to(&mut tools);
    // The tool creates the plan, streams an unfinished next version of it
    // as a draft, then waits until the test watches the run.
    let watching = Arc::new(Notify::new());
    let (tool_ws, tool_watching) = (Arc::clone(&ws), Arc::clone(&watching));
    tools.add_arc(Arc::new(FnTool::new(
        "write_plan",
        "Writes a plan, streaming drafts as it goes.",
        move |args: WritePlan, cx: CallContext| {
            let (ws, watching) = (Arc::clone(&tool_ws), Arc::clone(&tool_watching));
            async move {
                let mut snapshot = plan();
                snapshot["goal"] = json!(args.goal);
                let created = ws
                    .submit(
                        &cx,
                        Change::Create {
                            kind: "plan".into(),
                            snapshot: snapshot.clone(),
                        },
                        false,
                        None,
                    )
                    .await;
                let Ok(Submitted::Applied(created)) = created else {
                    return Ok(ToolOutput::refused(format!("{created:?}")));
                };
                snapshot["notes"] = json!(CANARY);
                let sent = ArtifactDraft::new("plan", snapshot)
                    .of(created.artifact.id.clone())
                    .emit(&cx);
                watching.notified().await;
                Ok(ToolOutput::ok(format!(
                    "wrote {} (draft live: {sent})",
                    created.artifact.id
                )))
            }
        },
    )));
    let model = ScriptedModel::from_responses(vec![
        ScriptedResponse::calls().call("w1", "write_plan", json!({"goal": "Launch"})),
        ScriptedResponse::text("Done."),
    ]);
    let agent = Agent::new(Arc::new(model)).with_tools(tools);
    let live = FanoutChannel::new(64);
    let channel: Arc<dyn LiveChannel> = Arc::new(live.clone());
    let runner = Runner::with_config(
        agent,
        Arc::clone(&sessions),
        RunnerConfig::default().with_live(channel),
    );
    let thread = scope().thread("t1");
    let run = runner
        .send(&thread, "alice", "write the plan", None)
        .await
        .unwrap()
        .run
        .unwrap();
    let frames = runner.watch(&scope(), run.run_id());
    watching.notify_one();
    let frames: Vec<LiveEvent> = frames.map(|f| f.event).collect().await;
    assert_eq!(run.wait().await.outcome, Outcome::Completed);
    runner.drain().await;

    let drafts: Vec<&LiveEvent> = frames
        .iter()
        .filter(|e| matches!(e, LiveEvent::Draft { .. }))
        .collect();
    assert_eq!(drafts.len(), 1, "{frames:?}");
    let LiveEvent::Draft {
        call_id,
        kind,
        snapshot,
        artifact_id,
    } = drafts[0]
    else {
        unreachable!()
    };
    assert_eq!(call_id.as_deref(), Some("w1"));
    assert_eq!(kind, "plan");
    assert_eq!(artifact_id.as_deref(), Some("plan-1"));
    assert_eq!(snapshot["notes"], CANARY);
    assert_eq!(snapshot["goal"], "Launch");

    // Stored nowhere: not the artifact, its revisions or the workspace's
    // events; not the run's history; not a byte of the database.
    let head = artifacts.get(&scope(), "plan-1").await.unwrap();
    assert_eq!(
        (head.version, head.snapshot["notes"].clone()),
        (1, json!(""))
    );
    let revisions =
        serde_json::to_string(&artifacts.history(&scope(), "plan-1").await.unwrap()).unwrap();
    assert!(!revisions.contains(CANARY));
    let events = format!("{:?}", artifacts.events(&scope(), 0, 100).await.unwrap());
    assert!(!events.contains(CANARY));
    let history = load_history(sessions.as_ref(), &thread).await.unwrap();
    assert!(!serde_json::to_string(&history).unwrap().contains(CANARY));
    assert!(history.iter().any(|m| matches!(m,
        Message::ToolResult(r) if r.content == "wrote plan-1 (draft live: true)")));
    drop((runner, ws, artifacts, sessions));
    assert!(
        !contains(&bytes_in(dir.path()), CANARY),
        "the database holds the draft"
    );
}

#[tokio::test]
async fn a_draft_outside_a_run_is_dropped() {
    let cx = CallContext {
        run_id: "r".into(),
        call_id: "c".into(),
    };
    assert!(!ArtifactDraft::new("plan", plan()).of("plan-1").emit(&cx));
}

/// The agent of the ask test: its first request asks which goal, its next
/// creates the plan with the answer, then it is done. Each request's tool
/// names are kept in `seen`.
fn asking_agent(
    ws: &Arc<ArtifactWorkspace>,
    seen: Arc<std::sync::Mutex<Vec<Vec<String>>>>,
) -> Agent {
    let mut tools = ToolRegistry::new();
    ws.add_to(&mut tools);
    let model = ScriptedModel::new(move |request| {
        seen.lock()
            .unwrap()
            .push(request.tools.iter().map(|t| t.name.clone()).collect());
        let users: Vec<&str> = request
            .messages
            .iter()
            .filter_map(|m| match m {
                Message::User { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        let created = request
            .messages
            .iter()
            .any(|m| matches!(m, Message::ToolResult(r) if r.name == "create_artifact"));
        Ok(match (users.len(), created) {
            (1, _) => ScriptedResponse::calls().call(
                "q1",
                "ask_user",
                json!({"question": "What is the plan's goal?"}),
            ),
            (_, false) => {
                let mut snapshot = plan();
                snapshot["goal"] = json!(users.last().copied().unwrap_or_default());
                ScriptedResponse::calls().call(
                    "c1",
                    "create_artifact",
                    json!({"kind": "plan", "snapshot": snapshot}),
                )
            }
            (_, true) => ScriptedResponse::text("Planned."),
        })
    });
    Agent::new(Arc::new(model)).with_tools(tools)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_ask_the_agent_asks_the_run_pauses_and_the_answer_shapes_the_artifact() {
    let dir = tempfile::tempdir().unwrap();
    let artifacts: Arc<dyn ArtifactStore> =
        Arc::new(SqliteArtifactStore::open(dir.path().join("artifacts.db"), kinds()).unwrap());
    let sessions: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let ws = Arc::new(
        ArtifactWorkspace::new(Arc::clone(&artifacts), scope(), "assistant").with_ask(true),
    );
    assert!(ws.ask());
    assert!(ws.tool_names().contains(&"ask_user"));
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let config = ws.runner_config(RunnerConfig::default());
    let runner = Runner::with_config(
        asking_agent(&ws, Arc::clone(&seen)),
        Arc::clone(&sessions),
        config.clone(),
    );
    let thread = scope().thread("t1");
    let run = runner
        .send(&thread, "alice", "plan the launch", None)
        .await
        .unwrap()
        .run
        .unwrap();
    assert!(matches!(run.wait().await.outcome, Outcome::Paused { .. }));
    runner.drain().await;
    let paused = sessions.run(&scope(), run.run_id()).await.unwrap().unwrap();
    assert_eq!(paused.status, RunStatus::Paused);
    assert_eq!(paused.requests.len(), 1);
    assert_eq!(paused.requests[0].spec.kind, RequestKind::Question);
    assert_eq!(paused.requests[0].spec.tool_name, "ask_user");
    assert!(
        artifacts
            .list(&scope(), None, true)
            .await
            .unwrap()
            .is_empty(),
        "nothing is created while the question waits"
    );

    // A person answers (another runner, as another process would): the same run resumes.
    let other = Runner::with_config(
        asking_agent(&ws, Arc::clone(&seen)),
        Arc::clone(&sessions),
        config,
    );
    let resumed = other
        .send(&thread, "alice", "Ship v2", None)
        .await
        .unwrap()
        .run
        .expect("the answer resumes the run");
    assert_eq!(resumed.run_id(), run.run_id());
    assert_eq!(resumed.wait().await.outcome, Outcome::Completed);
    other.drain().await;
    let head = artifacts.get(&scope(), "plan-1").await.unwrap();
    assert_eq!(head.snapshot["goal"], "Ship v2");
    let seen = seen.lock().unwrap();
    assert!(seen.len() >= 3, "{seen:?}");
    for names in seen.iter() {
        for tool in [
            "list_artifacts",
            "read_artifact",
            "create_artifact",
            "edit_artifact",
            "archive_artifact",
            "ask_user",
        ] {
            assert!(
                names.iter().any(|n| n == tool),
                "{tool} missing from {names:?}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_ask_there_is_no_ask_user() {
    let artifacts: Arc<dyn ArtifactStore> =
        Arc::new(burrow_artifacts::MemoryArtifactStore::new(kinds()));
    let sessions: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let ws = Arc::new(ArtifactWorkspace::new(artifacts, scope(), "assistant"));
    assert!(!ws.ask());
    assert!(!ws.tool_names().contains(&"ask_user"));
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let runner = Runner::with_config(
        asking_agent(&ws, Arc::clone(&seen)),
        sessions,
        ws.runner_config(RunnerConfig::default()),
    );
    let run = runner
        .send(&scope().thread("t1"), "alice", "plan the launch", None)
        .await
        .unwrap()
        .run
        .unwrap();
    // The model calls a tool it was not given: the call is refused and the run goes on.
    let result = run.wait().await;
    runner.drain().await;
    assert_ne!(result.outcome.name(), "paused");
    let seen = seen.lock().unwrap();
    assert!(!seen[0].iter().any(|n| n == "ask_user"), "{:?}", seen[0]);
    assert!(
        seen[0].iter().any(|n| n == "create_artifact"),
        "{:?}",
        seen[0]
    );
}
