//! A run held by another server, watched through this one: its frames read from the shared SQLite session file's event log (ids `sSEQ.K`) while it runs, its end, a `Last-Event-ID` resume in either server, and a watch of a run that already ended replaying it.

use std::sync::Arc;
use std::time::Duration;

use burrow_runtime::model::ScriptedResponse;
use burrow_runtime::session::{SessionStore, SqliteStore};
use burrow_serve::Wake;
use serde_json::{Value, json};

use super::support::{Served, Setup, Sse, SseEvent, start};

/// Two servers over one SQLite file, each with a store of its own (as two processes).
async fn two(dir: &std::path::Path) -> (Served, Served) {
    let mut pair = Vec::new();
    for _ in 0..2 {
        let store: Arc<dyn SessionStore> =
            Arc::new(SqliteStore::open(dir.join("shared.db")).unwrap());
        pair.push(
            start(Setup {
                store: Some(store),
                gated: true,
                script: vec![
                    ScriptedResponse::text("looking").call("c1", "no_such_tool", json!({"x": 1})),
                    ScriptedResponse::text("followed answer"),
                ],
                wake: Wake::poll(Duration::from_millis(20)),
                ..Setup::default()
            })
            .await,
        );
    }
    let b = pair.pop().unwrap();
    let a = pair.pop().unwrap();
    (a, b)
}

async fn watch(s: &Served, run: &str, last: Option<&str>) -> Sse {
    let mut req = s.get(&format!("/v1/runs/{run}/events"));
    if let Some(last) = last {
        req = req.header("last-event-id", last);
    }
    Sse::new(req.send().await.unwrap())
}

fn names(events: &[SseEvent]) -> Vec<&str> {
    events.iter().map(|e| e.event.as_str()).collect()
}

#[tokio::test]
async fn a_run_held_by_one_server_is_followed_live_through_the_other() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = two(dir.path()).await;
    let posted: Value = a.message("t1", json!({"content": "go"})).await;
    assert_eq!(posted["action"], "started");
    let run = posted["run_id"].as_str().unwrap().to_owned();
    // b does not hold the run: it reads it from the log while a's model waits.
    let mut sse = watch(&b, &run, None).await;
    let first = sse.next().await.unwrap();
    assert_eq!(first.event, "run_started");
    assert_eq!(first.data["thread_id"], "t1");
    assert_eq!(first.data["run_id"], run.as_str());
    assert!(first.id.as_deref().unwrap().starts_with('s'), "{first:?}");
    a.gate.add_permits(1);
    let mut seen = vec![first];
    while let Some(e) = sse.next().await {
        let done = e.event == "tool_result";
        seen.push(e);
        if done {
            break;
        }
    }
    assert_eq!(
        names(&seen),
        ["run_started", "text_delta", "tool_call", "tool_result"]
    );
    assert_eq!(
        seen[1].data,
        json!({"type": "text_delta", "text": "looking"})
    );
    assert_eq!(seen[2].data["name"], "no_such_tool");
    assert_eq!(seen[2].data["arguments"], json!({"x": 1}));
    assert_eq!(seen[3].data["id"], "c1");
    assert_eq!(seen[3].data["is_error"], true);
    a.gate.add_permits(1);
    let rest = sse.rest().await;
    let (end, frames) = rest.split_last().unwrap();
    assert_eq!(end.event, "end");
    assert_eq!(end.data["outcome"], "completed");
    assert_eq!(end.id, None);
    assert!(
        frames
            .iter()
            .any(|e| e.data == json!({"type": "text_delta", "text": "followed answer"})),
        "{frames:?}"
    );
    // Resumed after the tool call, in either server: the same frames from there on.
    let after = seen[2].id.clone().unwrap();
    for s in [&a, &b] {
        let resumed = watch(s, &run, Some(&after)).await.rest().await;
        assert_eq!(resumed[0].event, "tool_result", "{resumed:?}");
        assert_eq!(resumed[0].id, seen[3].id);
        assert_eq!(resumed.last().unwrap().event, "end");
        assert!(resumed.iter().all(|e| e.event != "run_started"));
    }
    // A watch of the ended run replays it from its start, then its end.
    let replay = watch(&a, &run, None).await.rest().await;
    assert_eq!(names(&replay[..4]), names(&seen));
    assert_eq!(replay.last().unwrap().data["outcome"], "completed");
    let bad = a
        .get(&format!("/v1/runs/{run}/events"))
        .header("last-event-id", "s12")
        .send()
        .await
        .unwrap();
    super::support::problem(bad, 400).await;
}
