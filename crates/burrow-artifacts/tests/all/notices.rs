//! Change notes and the followed artifacts through a real `Runner` (a SQLite artifact store, the memory session store): a decision on the agent's proposals and another agent's change reach its next run as one note (summaries clipped to `max_summary_chars`), a person's change made while it runs reaches its next request, notes are kept in the history and never given twice (a fresh workspace, as a new process, included), `watch_after` and watching from the first look (a `task` child's way) leave out what came before, `head_seq` pages the whole log, and the instructions render the head clipped to `max_render_chars`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use burrow_artifacts::tools::ArtifactWorkspace;
use burrow_artifacts::{Actor, ArtifactStore, Change, SqliteArtifactStore};
use burrow_runtime::agent::{Agent, Outcome};
use burrow_runtime::message::Message;
use burrow_runtime::model::{ScriptedModel, ScriptedResponse};
use burrow_runtime::runner::{Runner, RunnerConfig};
use burrow_runtime::session::{MemoryStore, Scope, SessionStore, load_history};
use burrow_runtime::tool::{FnTool, ToolOutput, ToolRegistry};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::support::{kinds, plan};

fn scope() -> Scope {
    Scope::new("acme", "notes")
}

/// What one model request was sent: its instructions and its user messages.
#[derive(Debug, Clone)]
struct Sent {
    system: String,
    users: Vec<String>,
}

impl Sent {
    fn notes(&self) -> Vec<&str> {
        self.users
            .iter()
            .map(String::as_str)
            .filter(|u| u.starts_with("<workspace-changes"))
            .collect()
    }
}

type Log = Arc<Mutex<Vec<Sent>>>;

/// A model answering `script` in order, logging every request into `log`.
fn model(script: Vec<ScriptedResponse>, log: &Log) -> ScriptedModel {
    let script = Mutex::new(VecDeque::from(script));
    let log = Arc::clone(log);
    ScriptedModel::new(move |request| {
        log.lock().unwrap().push(Sent {
            system: request.system.to_owned(),
            users: request
                .messages
                .iter()
                .filter_map(|m| match m {
                    Message::User { text } => Some(text.clone()),
                    _ => None,
                })
                .collect(),
        });
        Ok(script
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| ScriptedResponse::text("(script ended)")))
    })
}

#[derive(Deserialize, JsonSchema)]
struct Nothing {}

/// `ws` installed on an agent over `script`, with `person_edits`: bo
/// changes the plan's notes while the run runs.
fn agent(
    ws: &Arc<ArtifactWorkspace>,
    store: &Arc<dyn ArtifactStore>,
    script: Vec<ScriptedResponse>,
    log: &Log,
) -> Agent {
    let mut tools = ToolRegistry::new();
    let store = Arc::clone(store);
    tools.add_arc(Arc::new(FnTool::new(
        "person_edits",
        "Lets a person change the plan meanwhile.",
        move |_: Nothing, _cx| {
            let store = Arc::clone(&store);
            async move {
                let head = store.get(&scope(), "plan-1").await.unwrap();
                let patch = serde_json::from_value(
                    json!([{"op": "replace", "path": "/notes", "value": "from bo"}]),
                )
                .unwrap();
                let change = Change::Patch {
                    id: "plan-1".into(),
                    base_version: head.version,
                    patch,
                    summary: None,
                };
                store
                    .submit(&scope(), &Actor::person("bo"), change)
                    .await
                    .unwrap();
                Ok(ToolOutput::ok("bo changed it"))
            }
        },
    )));
    ws.install(Agent::new(Arc::new(model(script, log))).with_tools(tools))
}

async fn send(runner: &Runner, thread: &str, text: &str) {
    let run = runner
        .send(&scope().thread(thread), "alice", text, None)
        .await
        .unwrap()
        .run
        .unwrap();
    assert_eq!(run.wait().await.outcome, Outcome::Completed);
    runner.drain().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn others_changes_reach_the_agent_once_as_notes_kept_in_its_history() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn ArtifactStore> =
        Arc::new(SqliteArtifactStore::open(dir.path().join("a.db"), kinds()).unwrap());
    let sessions: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let log: Log = Arc::default();
    let ws = Arc::new(ArtifactWorkspace::new(
        Arc::clone(&store),
        scope(),
        "assistant",
    ));
    assert!(ws.notices(), "notices are on by default");

    // Run 1: the agent creates the plan and proposes two changes.
    let propose = |id: &str, path: &str, value: &str, why: &str| {
        ScriptedResponse::calls().call(
            id,
            "edit_artifact",
            json!({"id": "plan-1", "base_version": 1, "patch": [{"op": "replace", "path": path, "value": value}],
                   "propose": true, "rationale": why}),
        )
    };
    let script = vec![
        ScriptedResponse::calls().call(
            "c1",
            "create_artifact",
            json!({"kind": "plan", "snapshot": plan()}),
        ),
        propose("p1", "/goal", "Ship v2", "bigger"),
        propose("p2", "/notes", "x", "note it"),
        ScriptedResponse::text("Proposed."),
    ];
    let runner = Runner::with_config(
        agent(&ws, &store, script, &log),
        Arc::clone(&sessions),
        RunnerConfig::default(),
    );
    send(&runner, "t1", "plan it").await;
    assert!(
        log.lock().unwrap().iter().all(|s| s.notes().is_empty()),
        "its own doings are no news"
    );

    // Meanwhile: ana applies one proposal and rejects the other; another
    // agent changes the plan with a long summary.
    let ana = Actor::person("ana");
    store.apply_proposal(&scope(), &ana, 1).await.unwrap();
    store
        .reject_proposal(&scope(), &ana, 2, Some("not needed"))
        .await
        .unwrap();
    let patch =
        serde_json::from_value(json!([{"op": "replace", "path": "/notes", "value": "reviewed"}]))
            .unwrap();
    store
        .submit(
            &scope(),
            &Actor::agent("reviewer", "r9"),
            Change::Patch {
                id: "plan-1".into(),
                base_version: 2,
                patch,
                summary: Some("y".repeat(300)),
            },
        )
        .await
        .unwrap();

    // Run 2: one note at its start; bo's change during the run, a second before its next request.
    let script = vec![
        ScriptedResponse::calls().call("b1", "person_edits", json!({})),
        ScriptedResponse::text("Seen."),
    ];
    let runner = Runner::with_config(
        agent(&ws, &store, script, &log),
        Arc::clone(&sessions),
        RunnerConfig::default(),
    );
    send(&runner, "t1", "go on").await;
    let sent = log.lock().unwrap().clone();
    assert_eq!(sent.len(), 6);
    let first = sent[4].notes();
    assert_eq!(first.len(), 1, "{first:?}");
    let note = first[0];
    assert!(
        note.starts_with("<workspace-changes through=\"6\">"),
        "{note}"
    );
    assert!(
        note.contains("- ana applied your proposal 1: plan-1 (plan) is now at version 2"),
        "{note}"
    );
    assert!(
        note.contains("- ana rejected your proposal 2: not needed; nothing changed."),
        "{note}"
    );
    let clipped = format!("; summary: {}…;", "y".repeat(199));
    assert!(
        note.contains(&format!(
            "- reviewer (run r9) changed plan-1 (plan): now at version 3{clipped}"
        )),
        "{note}"
    );
    assert!(!note.contains("created"), "{note}");
    assert!(
        sent[4]
            .system
            .contains("<artifact id=\"plan-1\" kind=\"plan\" version=\"3\">\n# Ship v2\n"),
        "{}",
        sent[4].system
    );
    let second = sent[5].notes();
    assert_eq!(second.len(), 2, "{second:?}");
    assert_eq!(second[0], note, "the first note is kept as it was");
    assert!(
        second[1].starts_with(
            "<workspace-changes through=\"7\">\n- bo changed plan-1 (plan): now at version 4"
        ),
        "{}",
        second[1]
    );
    assert!(sent[5].system.contains("version=\"4\""));

    // Kept in the thread's history.
    let history = load_history(sessions.as_ref(), &scope().thread("t1"))
        .await
        .unwrap();
    let kept = history
        .iter()
        .filter(|m| matches!(m, Message::User { text } if text.starts_with("<workspace-changes")))
        .count();
    assert_eq!(kept, 2);

    // Run 3 in a fresh workspace (a new process): no note twice; the
    // rendering clipped to max_render_chars.
    let fresh = Arc::new(
        ArtifactWorkspace::new(Arc::clone(&store), scope(), "assistant").with_max_render_chars(12),
    );
    let runner = Runner::with_config(
        agent(
            &fresh,
            &store,
            vec![ScriptedResponse::text("Nothing new.")],
            &log,
        ),
        Arc::clone(&sessions),
        RunnerConfig::default(),
    );
    send(&runner, "t1", "anything?").await;
    let last = log.lock().unwrap().last().cloned().unwrap();
    assert_eq!(last.notes(), second);
    assert!(
        last.system
            .contains("version=\"4\">\n# Ship v2\n-…\n</artifact>"),
        "{}",
        last.system
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_after_leaves_out_what_came_before_and_notices_off_send_none() {
    let store: Arc<dyn ArtifactStore> =
        Arc::new(burrow_artifacts::MemoryArtifactStore::new(kinds()));
    let sessions: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let ana = Actor::person("ana");
    let created = store
        .submit(
            &scope(),
            &ana,
            Change::Create {
                kind: "plan".into(),
                snapshot: plan(),
            },
        )
        .await
        .unwrap();
    let log: Log = Arc::default();
    let late = Arc::new(
        ArtifactWorkspace::new(Arc::clone(&store), scope(), "late").with_watch_after(created.seq),
    );
    let runner = Runner::with_config(
        agent(
            &late,
            &store,
            vec![
                ScriptedResponse::calls().call("b1", "person_edits", json!({})),
                ScriptedResponse::text("ok"),
            ],
            &log,
        ),
        Arc::clone(&sessions),
        RunnerConfig::default(),
    );
    send(&runner, "t2", "hi").await;
    let sent = log.lock().unwrap().clone();
    assert!(sent[0].notes().is_empty(), "{:?}", sent[0].notes());
    let notes = sent[1].notes();
    assert_eq!(notes.len(), 1);
    assert!(
        notes[0].contains("bo changed plan-1") && !notes[0].contains("ana"),
        "{}",
        notes[0]
    );

    let quiet_log: Log = Arc::default();
    let quiet =
        Arc::new(ArtifactWorkspace::new(Arc::clone(&store), scope(), "quiet").with_notices(false));
    let runner = Runner::with_config(
        agent(
            &quiet,
            &store,
            vec![
                ScriptedResponse::calls().call("b1", "person_edits", json!({})),
                ScriptedResponse::text("ok"),
            ],
            &quiet_log,
        ),
        sessions,
        RunnerConfig::default(),
    );
    send(&runner, "t3", "hi").await;
    assert!(
        quiet_log
            .lock()
            .unwrap()
            .iter()
            .all(|s| s.notes().is_empty())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watching_from_the_first_look_leaves_out_the_past_and_head_seq_pages_the_log() {
    let store: Arc<dyn ArtifactStore> =
        Arc::new(burrow_artifacts::MemoryArtifactStore::new(kinds()));
    let sessions: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let ana = Actor::person("ana");
    // More events than one page of the log.
    let mut last = 0;
    for _ in 0..1001 {
        last = store
            .submit(
                &scope(),
                &ana,
                Change::Create {
                    kind: "plan".into(),
                    snapshot: plan(),
                },
            )
            .await
            .unwrap()
            .seq;
    }
    let ws = ArtifactWorkspace::new(Arc::clone(&store), scope(), "child");
    assert_eq!(ws.head_seq().await.unwrap(), last);
    assert_eq!(last, 1001);

    let log: Log = Arc::default();
    let child = Arc::new(ws.with_watch_from_first_look());
    let runner = Runner::with_config(
        agent(
            &child,
            &store,
            vec![
                ScriptedResponse::calls().call("b1", "person_edits", json!({})),
                ScriptedResponse::text("ok"),
            ],
            &log,
        ),
        sessions,
        RunnerConfig::default(),
    );
    send(&runner, "t4", "hi").await;
    let sent = log.lock().unwrap().clone();
    // Nothing of the 1,001 creates; bo's edit during the run is noted.
    assert!(sent[0].notes().is_empty(), "{:?}", sent[0].notes());
    let notes = sent[1].notes();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains("bo changed plan-1") && !notes[0].contains("ana"),
        "{}",
        notes[0]
    );
}
