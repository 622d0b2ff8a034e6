//! `GET /v1/runs/{run}/events`: one SSE event per live frame with its `id:`, heartbeats, `Last-Event-ID` resume, a `gap` event for a late watcher and for one that stops reading, and the `end` event.

use std::time::Duration;

use burrow_runtime::model::ScriptedResponse;
use burrow_serve::Limits;
use serde_json::{Value, json};

use super::support::{Served, Setup, Sse, SseEvent, start};

async fn post(s: &Served, thread: &str) -> String {
    let v: Value = s
        .post(
            &format!("/v1/threads/{thread}/messages"),
            json!({"content": "go"}),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    v["run_id"].as_str().unwrap().to_owned()
}

async fn watch(s: &Served, run: &str, last: Option<&str>) -> Sse {
    let mut req = s.get(&format!("/v1/runs/{run}/events"));
    if let Some(last) = last {
        req = req.header("last-event-id", last);
    }
    Sse::new(req.send().await.unwrap())
}

/// Each event's name is its data's `type` (`end` carries `run_ended`).
fn check_names(events: &[SseEvent]) {
    for e in events {
        let ty = e.data["type"].as_str().unwrap();
        if e.event == "end" {
            assert_eq!(ty, "run_ended");
        } else {
            assert_eq!(e.event, ty, "{e:?}");
        }
    }
}

async fn wait_requests(s: &Served, n: usize) {
    for _ in 0..400 {
        if s.requests.load(std::sync::atomic::Ordering::SeqCst) >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the model was not asked {n} times");
}

#[tokio::test]
async fn a_watcher_gets_each_frame_numbered_heartbeats_and_the_end() {
    let s = start(Setup {
        gated: true,
        script: vec![ScriptedResponse::text("streamed answer")],
        limits: Limits {
            heartbeat: Duration::from_millis(100),
            ..Limits::default()
        },
        ..Setup::default()
    })
    .await;
    let run = post(&s, "t1").await;
    let mut sse = watch(&s, &run, None).await;
    tokio::time::sleep(Duration::from_millis(450)).await;
    s.gate.add_permits(1);
    let events = sse.rest().await;
    assert!(sse.comments >= 1, "no heartbeat in 450 ms");
    check_names(&events);
    let (end, frames) = events.split_last().unwrap();
    assert_eq!(end.event, "end");
    assert_eq!(end.data["outcome"], "completed");
    assert_eq!(end.id, None);
    assert_eq!(frames[0].event, "run_started");
    assert_eq!(frames[0].data["run_id"], run.as_str());
    assert_eq!(frames[0].data["thread_id"], "t1");
    for (n, f) in frames.iter().enumerate() {
        assert_eq!(f.id.as_deref(), Some(n.to_string().as_str()), "{frames:?}");
    }
    let text: Vec<&SseEvent> = frames.iter().filter(|f| f.event == "text_delta").collect();
    assert_eq!(
        text[0].data,
        json!({"type": "text_delta", "text": "streamed answer"})
    );
}

#[tokio::test]
async fn a_reconnect_with_last_event_id_resumes_after_it() {
    let s = start(Setup {
        gated: true,
        script: vec![
            ScriptedResponse::text("part one").call("c1", "no_such_tool", json!({"x": 1})),
            ScriptedResponse::text("part two"),
        ],
        ..Setup::default()
    })
    .await;
    let run = post(&s, "t1").await;
    let mut first = watch(&s, &run, None).await;
    s.gate.add_permits(1);
    let mut seen = Vec::new();
    while let Some(e) = first.next().await {
        let done = e.event == "tool_result";
        seen.push(e);
        if done {
            break;
        }
    }
    drop(first);
    wait_requests(&s, 2).await;
    let last = seen.last().unwrap().id.clone().unwrap();
    let tool_call = seen.iter().find(|e| e.event == "tool_call").unwrap();
    assert_eq!(tool_call.data["name"], "no_such_tool");
    assert_eq!(tool_call.data["arguments"], json!({"x": 1}));
    let mut second = watch(&s, &run, Some(&last)).await;
    s.gate.add_permits(1);
    let rest = second.rest().await;
    check_names(&rest);
    let first_id: u64 = rest[0].id.as_ref().unwrap().parse().unwrap();
    assert_eq!(first_id, last.parse::<u64>().unwrap() + 1, "{rest:?}");
    assert!(rest.iter().all(|e| e.event != "gap"));
    assert!(
        rest.iter()
            .any(|e| e.data == json!({"type": "text_delta", "text": "part two"}))
    );
    assert!(
        !rest
            .iter()
            .any(|e| e.data == json!({"type": "text_delta", "text": "part one"}))
    );
    assert_eq!(rest.last().unwrap().event, "end");
    let bad = s
        .get(&format!("/v1/runs/{run}/events"))
        .header("last-event-id", "not-a-number")
        .send()
        .await
        .unwrap();
    super::support::problem(bad, 400).await;
}

#[tokio::test]
async fn a_late_watcher_whose_frames_were_dropped_gets_a_gap_first() {
    let s = start(Setup {
        gated: true,
        live_buffer: 2,
        script: vec![
            ScriptedResponse::text("a").call("c1", "no_such_tool", json!({})),
            ScriptedResponse::text("b").call("c2", "no_such_tool", json!({})),
            ScriptedResponse::text("c"),
        ],
        ..Setup::default()
    })
    .await;
    let run = post(&s, "t1").await;
    s.gate.add_permits(2);
    wait_requests(&s, 3).await;
    let mut sse = watch(&s, &run, None).await;
    let gap = sse.next().await.unwrap();
    assert_eq!(gap.event, "gap");
    let missed = gap.data["missed"].as_u64().unwrap();
    assert!(missed > 0);
    let next = sse.next().await.unwrap();
    assert_eq!(next.id, Some(missed.to_string()));
    s.gate.add_permits(1);
    let rest = sse.rest().await;
    assert_eq!(rest.last().unwrap().event, "end");
}

#[tokio::test]
async fn a_watcher_that_stops_reading_is_given_a_gap_not_the_runs_time() {
    let big = "x".repeat(256 * 1024);
    let script: Vec<ScriptedResponse> = (0..40)
        .map(|i| {
            let mut r = ScriptedResponse::text(big.clone()).call(
                format!("c{i}"),
                "no_such_tool",
                json!({}),
            );
            r.thinking = Some(big.clone());
            r
        })
        .chain([ScriptedResponse::text("the end")])
        .collect();
    let s = start(Setup {
        gated: true,
        live_buffer: 4,
        script,
        // Forty turns of 512 KiB each: on a loaded machine a 5 s claim can
        // lapse between renewals, and the run would end claim_lost.
        claim_ttl: burrow_runtime::runner::DEFAULT_CLAIM_TTL,
        ..Setup::default()
    })
    .await;
    let run = post(&s, "t1").await;
    let mut sse = watch(&s, &run, None).await;
    s.gate.add_permits(1000);
    let first = sse.next().await.unwrap();
    assert_eq!(first.event, "run_started");
    // The run goes on to its end while this watcher reads nothing.
    assert_eq!(s.settled("t1").await, "completed");
    let rest = sse.rest().await;
    let gaps: u64 = rest
        .iter()
        .filter(|e| e.event == "gap")
        .map(|e| e.data["missed"].as_u64().unwrap())
        .sum();
    assert!(gaps > 0, "no gap in {} events", rest.len());
    let frames = rest.iter().filter(|e| e.id.is_some()).count() as u64;
    let last: u64 = rest
        .iter()
        .rev()
        .find_map(|e| e.id.as_ref())
        .unwrap()
        .parse()
        .unwrap();
    // Every frame is either delivered or counted missed.
    assert_eq!(frames + gaps, last, "first frame is id 0, read before");
    assert_eq!(rest.last().unwrap().event, "end");
}
