//! Teams through the agent loop: the lead adds blocked items and broadcasts with the team tools, members claim and complete, and the broadcast reaches every other member's history once (memory and SQLite stores); an older SQLite file gains the team tables; a member's delivery cursor keeps a message its history no longer shows from coming twice.

use std::sync::Arc;

use burrow_runtime::agent::{Agent, Outcome};
use burrow_runtime::message::Message;
use burrow_runtime::model::{ScriptedModel, ScriptedResponse};
use burrow_runtime::session::{MemoryStore, Scope, SessionStore, SqliteStore};
use burrow_runtime::team::{TeamContext, TeamInbox, TeamKey, team_tools};
use burrow_runtime::tool::ToolRegistry;
use burrow_types::TodoStatus;
use serde_json::json;

fn member(store: &Arc<dyn SessionStore>, name: &str) -> TeamContext {
    TeamContext {
        store: Arc::clone(store),
        team: TeamKey::new(Scope::new("t", "w"), "crew"),
        member: name.into(),
    }
}

fn agent(cx: &TeamContext, script: Vec<ScriptedResponse>) -> Agent {
    let mut tools = ToolRegistry::new();
    for tool in team_tools(cx.clone()) {
        tools.add_arc(tool);
    }
    Agent::new(Arc::new(ScriptedModel::from_responses(script)))
        .with_tools(tools)
        .with_capability(Arc::new(TeamInbox::new(cx.clone())))
}

fn results(history: &[Message]) -> Vec<(String, bool, String)> {
    history
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult(r) => Some((r.name.clone(), r.is_error, r.content.clone())),
            _ => None,
        })
        .collect()
}

fn team_messages(history: &[Message]) -> Vec<String> {
    history
        .iter()
        .filter_map(|m| match m {
            Message::User { text } if text.starts_with("<team-message") => Some(text.clone()),
            _ => None,
        })
        .collect()
}

async fn a_team_works_through_its_tools(store: Arc<dyn SessionStore>) {
    let lead = member(&store, "lead");
    let script = vec![
        ScriptedResponse::calls().call(
            "c1",
            "team_todos",
            json!({"add": [
                {"id": "write", "content": "Write the parser"},
                {"id": "review", "content": "Review the parser", "blocked_by": ["write"]}
            ]}),
        ),
        ScriptedResponse::calls().call(
            "c2",
            "send_message",
            json!({"content": "Plan is up: take an item."}),
        ),
        ScriptedResponse::calls().call(
            "c3",
            "send_message",
            json!({"to": "bob", "content": "bob: you review."}),
        ),
        ScriptedResponse::text("Delegated."),
    ];
    let mut lead_history = Vec::new();
    let r = agent(&lead, script)
        .run(&mut lead_history, "split the work")
        .await;
    assert_eq!(r.outcome, Outcome::Completed);
    let lead_results = results(&lead_history);
    assert!(
        lead_results.iter().all(|(_, err, _)| !err),
        "{lead_results:?}"
    );
    assert!(
        lead_results[0].2.contains("blocked by write"),
        "{lead_results:?}"
    );
    assert!(
        team_messages(&lead_history).is_empty(),
        "the lead got its own broadcast"
    );

    let alice = member(&store, "alice");
    let script = vec![
        ScriptedResponse::calls().call("a1", "claim_todo", json!({"id": "review"})),
        ScriptedResponse::calls().call("a2", "claim_todo", json!({"id": "write"})),
        ScriptedResponse::calls().call("a3", "complete_todo", json!({"id": "write"})),
        ScriptedResponse::text("Wrote it."),
    ];
    let mut alice_history = Vec::new();
    let r = agent(&alice, script).run(&mut alice_history, "work").await;
    assert_eq!(r.outcome, Outcome::Completed);
    let got = results(&alice_history);
    assert!(
        got[0].1 && got[0].2.contains("blocked by unfinished items: write"),
        "{got:?}"
    );
    assert!(!got[1].1 && !got[2].1, "{got:?}");
    let inbox = team_messages(&alice_history);
    assert_eq!(inbox.len(), 1, "{inbox:?}");
    assert!(inbox[0].contains("from=\"lead\" to=\"everyone\"") && inbox[0].contains("Plan is up"));
    assert!(
        matches!(alice_history.get(1), Some(Message::User { text }) if text == &inbox[0]),
        "the broadcast is not right after the prompt, before the first request"
    );

    let bob = member(&store, "bob");
    let script = vec![
        ScriptedResponse::calls().call("b1", "claim_todo", json!({"id": "review"})),
        ScriptedResponse::calls().call("b2", "claim_todo", json!({"id": "write"})),
        ScriptedResponse::text("Reviewing."),
    ];
    let mut bob_history = Vec::new();
    let r = agent(&bob, script).run(&mut bob_history, "work").await;
    assert_eq!(r.outcome, Outcome::Completed);
    let got = results(&bob_history);
    assert!(!got[0].1, "{got:?}");
    assert!(
        got[1].1 && got[1].2.contains("already completed"),
        "{got:?}"
    );
    let inbox = team_messages(&bob_history);
    assert_eq!(inbox.len(), 2, "{inbox:?}");
    assert!(inbox[1].contains("to=\"bob\"") && inbox[1].contains("you review"));

    // A second run of bob's thread, by a new inbox (a new process): nothing is delivered twice.
    let r = agent(&bob, vec![ScriptedResponse::text("Still reviewing.")])
        .run(&mut bob_history, "go on")
        .await;
    assert_eq!(r.outcome, Outcome::Completed);
    assert_eq!(team_messages(&bob_history).len(), 2);

    let Some(teams) = store.teams() else {
        panic!("the store keeps teams")
    };
    let items = teams.team_todos(&lead.team).await.unwrap();
    let states: Vec<(&str, TodoStatus, Option<&str>, Option<&str>)> = items
        .iter()
        .map(|i| {
            (
                i.id.as_str(),
                i.status,
                i.assigned_to.as_deref(),
                i.created_by.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        states,
        [
            ("write", TodoStatus::Completed, Some("alice"), Some("lead")),
            ("review", TodoStatus::InProgress, Some("bob"), Some("lead")),
        ]
    );
}

#[tokio::test]
async fn a_team_works_through_its_tools_on_memory() {
    a_team_works_through_its_tools(Arc::new(MemoryStore::new())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_team_works_through_its_tools_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("s.db")).unwrap();
    a_team_works_through_its_tools(Arc::new(store)).await;
}

/// A file of schema 3 (before teams) gains the empty team tables when opened.
#[tokio::test]
async fn an_older_sqlite_file_gains_the_team_tables() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    drop(SqliteStore::open(&path).unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "DROP TABLE session_team_todos; DROP TABLE session_team_messages; DROP TABLE session_team_cursors; PRAGMA user_version = 3;",
    )
    .unwrap();
    drop(conn);
    let store: Arc<dyn SessionStore> = Arc::new(SqliteStore::open(&path).unwrap());
    let version: i64 = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, 4);
    let cx = member(&store, "lead");
    let teams = store.teams().unwrap();
    assert!(teams.team_todos(&cx.team).await.unwrap().is_empty());
    assert_eq!(teams.delivered(&cx.team, "lead").await.unwrap(), 0);
    let mut history = Vec::new();
    let script = vec![
        ScriptedResponse::calls().call(
            "c1",
            "team_todos",
            json!({"add": [{"content": "Anything"}]}),
        ),
        ScriptedResponse::text("ok"),
    ];
    agent(&cx, script).run(&mut history, "plan").await;
    let items = teams.team_todos(&cx.team).await.unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(
        items[0].id.len(),
        8,
        "a made-up id is 8 hex digits: {}",
        items[0].id
    );
}

/// A member's delivery cursor (ADR 0356): once a completed run delivered
/// two messages, a new inbox over a history that no longer shows them (a
/// compacted or rewound view, a new process) delivers neither again, and
/// only what came after.
async fn a_delivered_message_is_not_delivered_again_without_its_history(
    store: Arc<dyn SessionStore>,
) {
    let lead = member(&store, "lead");
    let bob = member(&store, "bob");
    let teams = store.teams().unwrap();
    for (id, text) in [("m1", "first"), ("m2", "second")] {
        let message = burrow_types::TeamMessage {
            id: id.into(),
            sender: lead.member.clone(),
            receiver: "bob".into(),
            content: text.into(),
            timestamp: "2026-12-07T19:00:00Z".into(),
        };
        teams.send_message(&lead.team, message).await.unwrap();
    }
    let mut history = Vec::new();
    let run = agent(&bob, vec![ScriptedResponse::text("read")])
        .run(&mut history, "go")
        .await;
    assert_eq!(run.outcome, Outcome::Completed);
    assert_eq!(team_messages(&history).len(), 2);
    assert_eq!(teams.delivered(&bob.team, "bob").await.unwrap(), 2);
    let mut forgotten = Vec::new();
    agent(&bob, vec![ScriptedResponse::text("nothing new")])
        .run(&mut forgotten, "again")
        .await;
    assert!(
        team_messages(&forgotten).is_empty(),
        "delivered again: {forgotten:?}"
    );
    let third = burrow_types::TeamMessage {
        id: "m3".into(),
        sender: "lead".into(),
        receiver: String::new(),
        content: "third".into(),
        timestamp: "2026-12-07T19:01:00Z".into(),
    };
    teams.send_message(&lead.team, third).await.unwrap();
    let mut later = Vec::new();
    agent(&bob, vec![ScriptedResponse::text("got it")])
        .run(&mut later, "once more")
        .await;
    let got = team_messages(&later);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].starts_with("<team-message seq=\"3\" from=\"lead\" to=\"everyone\">"));
    assert_eq!(teams.delivered(&bob.team, "bob").await.unwrap(), 3);
}

#[tokio::test]
async fn a_delivered_message_is_not_delivered_again_on_memory() {
    a_delivered_message_is_not_delivered_again_without_its_history(Arc::new(MemoryStore::new()))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivered_message_is_not_delivered_again_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("s.db")).unwrap();
    a_delivered_message_is_not_delivered_again_without_its_history(Arc::new(store)).await;
}
