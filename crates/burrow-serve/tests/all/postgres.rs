//! Two servers on one PostgreSQL session store (the real server at BURROW_POSTGRES_URL): one service for the API, a command id posted through both carried out once, a thread run by one steered through the other; a thread view's children.

use std::sync::Arc;

use burrow_runtime::model::ScriptedResponse;
use burrow_runtime::session::{PostgresStore, SessionStore};
use burrow_testkit::{Part, require};
use serde_json::{Value, json};

use super::support::{Served, Setup, start};

/// Two servers on one PostgreSQL store, for a tenant of this test alone.
async fn two(gated: bool) -> (Served, Served) {
    let url = require(Part::Postgres);
    let tenant = format!("serve-{}", uuid::Uuid::now_v7().simple());
    let mut pair = Vec::new();
    for _ in 0..2 {
        let store: Arc<dyn SessionStore> = Arc::new(PostgresStore::connect(&url).await.unwrap());
        pair.push(
            start(Setup {
                store: Some(store),
                tenant: tenant.clone(),
                gated,
                script: vec![
                    ScriptedResponse::text("from postgres"),
                    ScriptedResponse::text("again"),
                ],
                ..Setup::default()
            })
            .await,
        );
    }
    let b = pair.pop().unwrap();
    let a = pair.pop().unwrap();
    (a, b)
}

#[tokio::test]
async fn one_command_id_through_two_servers_on_one_postgres_is_carried_out_once() {
    let (a, b) = two(false).await;
    let sends = (0..4).map(|i| {
        let s = if i % 2 == 0 { &a } else { &b };
        let req = s.post(
            "/v1/threads/t1/messages",
            json!({"content": "once", "command_id": "pg-1"}),
        );
        async move {
            let r = req.send().await.unwrap();
            let replayed = r.headers().get("idempotent-replayed").is_some();
            let body: Value = r.json().await.unwrap();
            (replayed, body)
        }
    });
    let results = futures::future::join_all(sends).await;
    assert_eq!(results.iter().filter(|(r, _)| !r).count(), 1, "{results:?}");
    let ids: Vec<&Value> = results.iter().map(|(_, b)| &b["message_id"]).collect();
    assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
    // Either server shows the one run, completed.
    assert_eq!(a.settled("t1").await, "completed");
    let view: Value = b
        .get("/v1/threads/t1")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(view["runs"].as_array().unwrap().len(), 1);
    assert!(view["history"].to_string().contains("from postgres"));
    let list: Value = b
        .get("/v1/threads")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list["threads"][0]["thread"], "t1");
}

#[tokio::test]
async fn a_message_through_the_other_server_steers_the_run_one_holds() {
    let (a, b) = two(true).await;
    let started: Value = a.message("t1", json!({"content": "start here"})).await;
    assert_eq!(started["action"], "started");
    let steered: Value = b.message("t1", json!({"content": "steer from b"})).await;
    assert_eq!(steered["action"], "steered");
    assert_eq!(steered["run_id"], started["run_id"]);
    a.gate.add_permits(10);
    b.gate.add_permits(10);
    let view = b.until_history("t1", "steer from b").await;
    assert_eq!(
        view["runs"].as_array().unwrap().last().unwrap()["status"],
        "completed"
    );
    // Stopping through b an idle thread: nothing to stop.
    let stop: Value = b
        .post("/v1/threads/t1/stop", json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(stop["requested"], false);
}

/// A watcher on the server that does not hold the run is woken by the store's
/// notifications (LISTEN/NOTIFY): its poll is an hour, so only a notification
/// can bring it the run's answer and end.
#[cfg(feature = "postgres")]
#[tokio::test]
async fn a_watcher_on_the_other_server_is_woken_by_notify_not_by_its_poll() {
    use std::time::Duration;

    use burrow_serve::Wake;

    use super::support::Sse;

    let url = require(Part::Postgres);
    let tenant = format!("serve-{}", uuid::Uuid::now_v7().simple());
    let mut pair = Vec::new();
    for wake in [
        Wake::default(),
        Wake::postgres(&url, Duration::from_secs(3600)),
    ] {
        let store: Arc<dyn SessionStore> = Arc::new(PostgresStore::connect(&url).await.unwrap());
        pair.push(
            start(Setup {
                store: Some(store),
                tenant: tenant.clone(),
                gated: true,
                script: vec![ScriptedResponse::text("woken by notify")],
                wake,
                ..Setup::default()
            })
            .await,
        );
    }
    let b = pair.pop().unwrap();
    let a = pair.pop().unwrap();
    let posted: Value = a.message("t1", json!({"content": "go"})).await;
    let run = posted["run_id"].as_str().unwrap();
    let mut sse = Sse::new(
        b.get(&format!("/v1/runs/{run}/events"))
            .send()
            .await
            .unwrap(),
    );
    let first = sse.next().await.unwrap();
    assert_eq!(first.event, "run_started");
    a.gate.add_permits(1);
    // Heartbeats keep the stream open: without a notification it would wait an hour.
    let rest = tokio::time::timeout(Duration::from_secs(60), sse.rest())
        .await
        .expect("no notification woke the watcher");
    assert!(
        rest.iter()
            .any(|e| e.data == json!({"type": "text_delta", "text": "woken by notify"})),
        "{rest:?}"
    );
    let end = rest.last().unwrap();
    assert_eq!(end.event, "end");
    assert_eq!(end.data["outcome"], "completed");
}

/// A thread's children are found by the store's id order on PostgreSQL too (`COLLATE
/// "C"`), in a tenant of this test alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_view_on_postgresql_holds_its_todos_and_children() {
    let url = require(Part::Postgres);
    let store: Arc<dyn SessionStore> = Arc::new(PostgresStore::connect(&url).await.unwrap());
    let setup = Setup {
        store: Some(store),
        tenant: format!("view-{}", uuid::Uuid::now_v7().simple()),
        ..Setup::default()
    };
    // The other tenant is shared with other tests on this server: no wall check here.
    super::thread_view::todos_and_children(setup, false).await;
}
