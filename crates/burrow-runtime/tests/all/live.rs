//! Live output: the fan-out channel's rules (catch-up, gap markers, the end marker, ended runs), the null channel, and drafts that reach watchers but never the history.

use std::sync::Arc;

use burrow_runtime::agent::Agent;
use burrow_runtime::message::Message;
use burrow_runtime::model::{ScriptedModel, ScriptedResponse};
use burrow_runtime::runner::{
    FanoutChannel, LiveChannel, LiveEvent, LiveFrame, NullChannel, emit_draft, with_live,
};
use burrow_runtime::tool::{ToolOutput, ToolRegistry};
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

fn text(run: &str, t: &str) -> LiveFrame {
    LiveFrame {
        run_id: run.to_owned(),
        event: LiveEvent::TextDelta { text: t.to_owned() },
    }
}

fn end() -> LiveEvent {
    LiveEvent::End {
        outcome: Some("completed".to_owned()),
        reason: None,
    }
}

/// What a frame shows, compactly: the text, `gap N` or `end OUTCOME`.
fn show(frame: &LiveFrame) -> String {
    match &frame.event {
        LiveEvent::TextDelta { text } => text.clone(),
        LiveEvent::Gap { missed } => format!("gap {missed}"),
        LiveEvent::End { outcome, .. } => format!("end {}", outcome.as_deref().unwrap_or("?")),
        LiveEvent::Draft { kind, snapshot, .. } => format!("draft {kind} {snapshot}"),
        other => format!("{other:?}"),
    }
}

/// Every frame the watcher has ready now, without waiting; `None` marks the stream's end.
fn ready(stream: &mut BoxStream<'static, LiveFrame>) -> Vec<Option<String>> {
    let mut out = Vec::new();
    while let Some(next) = stream.next().now_or_never() {
        let done = next.is_none();
        out.push(next.as_ref().map(show));
        if done {
            break;
        }
    }
    out
}

fn some(items: &[&str]) -> Vec<Option<String>> {
    items.iter().map(|s| Some((*s).to_owned())).collect()
}

#[test]
fn a_late_watcher_catches_up_then_follows_live_frames_until_the_end() {
    let live = FanoutChannel::new(16);
    live.open("r1");
    live.send(text("r1", "a"));
    live.send(text("r1", "b"));
    let mut w = live.watch("r1").unwrap();
    assert_eq!(ready(&mut w), some(&["a", "b"]));
    live.send(text("r1", "c"));
    assert_eq!(ready(&mut w), some(&["c"]));
    live.close("r1", end());
    let mut rest = some(&["end completed"]);
    rest.push(None);
    assert_eq!(ready(&mut w), rest);
}

#[test]
fn a_watcher_with_nothing_new_waits_rather_than_ending() {
    let live = FanoutChannel::new(4);
    live.open("r1");
    let mut w = live.watch("r1").unwrap();
    assert!(ready(&mut w).is_empty());
    live.send(text("r1", "x"));
    assert_eq!(ready(&mut w), some(&["x"]));
    assert!(ready(&mut w).is_empty());
}

#[test]
fn a_slow_watcher_loses_its_oldest_frames_and_gets_a_gap_marker_with_the_count() {
    let live = FanoutChannel::new(4);
    live.open("r1");
    let mut slow = live.watch("r1").unwrap();
    let mut fast = live.watch("r1").unwrap();
    // The run sends ten frames while the slow watcher reads none: no send waits for it.
    for i in 0..10 {
        live.send(text("r1", &i.to_string()));
        if i < 6 {
            assert_eq!(ready(&mut fast), some(&[&i.to_string()]));
        }
    }
    assert_eq!(ready(&mut slow), some(&["gap 6", "6", "7", "8", "9"]));
    // The fast watcher fell behind by four frames, within the buffer: no gap.
    assert_eq!(ready(&mut fast), some(&["6", "7", "8", "9"]));
    live.close("r1", end());
    assert_eq!(
        ready(&mut slow),
        vec![Some("end completed".to_owned()), None]
    );
}

#[test]
fn a_late_watcher_of_a_run_that_dropped_frames_is_told_how_many() {
    let live = FanoutChannel::new(2);
    live.open("r1");
    for t in ["a", "b", "c"] {
        live.send(text("r1", t));
    }
    let mut w = live.watch("r1").unwrap();
    live.send(text("r1", "d"));
    assert_eq!(ready(&mut w), some(&["gap 2", "c", "d"]));
}

#[test]
fn the_end_marker_arrives_after_a_full_buffer_and_after_a_gap() {
    let live = FanoutChannel::new(3);
    live.open("r1");
    let mut w = live.watch("r1").unwrap();
    for i in 0..8 {
        live.send(text("r1", &i.to_string()));
    }
    live.close("r1", end());
    let mut want = some(&["gap 5", "5", "6", "7", "end completed"]);
    want.push(None);
    assert_eq!(ready(&mut w), want);
}

#[test]
fn watching_an_ended_run_ends_at_once_however_many_runs_ended_since() {
    let live = FanoutChannel::new(8);
    live.open("first");
    live.send(text("first", "a"));
    live.close("first", end());
    // Far more ended runs than any remembered set would hold: none is kept.
    for i in 0..20_000 {
        let run = format!("r{i}");
        live.open(&run);
        live.send(text(&run, "x"));
        live.close(&run, end());
    }
    assert!(live.open_runs().is_empty());
    assert!(live.watch("first").is_none());
    assert!(live.watch("never-ran").is_none());
}

#[test]
fn frames_for_a_run_that_is_not_open_are_dropped_and_a_reopened_run_starts_afresh() {
    let live = FanoutChannel::new(8);
    live.send(text("r1", "before open"));
    live.open("r1");
    live.send(text("r1", "a"));
    live.close("r1", end());
    live.send(text("r1", "after close"));
    assert!(live.watch("r1").is_none());
    // A paused run resumed: a new segment under the same id.
    live.open("r1");
    live.send(text("r1", "b"));
    let mut w = live.watch("r1").unwrap();
    assert_eq!(ready(&mut w), some(&["b"]));
}

#[test]
fn closing_leaves_other_runs_open() {
    let live = FanoutChannel::new(8);
    live.open("r1");
    live.open("r2");
    let mut w2 = live.watch("r2").unwrap();
    live.close("r1", end());
    live.send(text("r2", "still here"));
    assert_eq!(ready(&mut w2), some(&["still here"]));
    assert_eq!(live.open_runs(), vec!["r2".to_owned()]);
}

#[test]
fn the_null_channel_drops_every_frame_and_has_nothing_to_watch() {
    let live = NullChannel;
    live.open("r1");
    live.send(text("r1", "a"));
    assert!(live.watch("r1").is_none());
    live.close("r1", end());
}

#[test]
fn frames_serialise_flat_with_their_type() {
    let gap = LiveFrame {
        run_id: "r1".to_owned(),
        event: LiveEvent::Gap { missed: 3 },
    };
    assert_eq!(
        serde_json::to_value(&gap).unwrap(),
        json!({"run_id": "r1", "type": "gap", "missed": 3})
    );
    let back: LiveFrame =
        serde_json::from_value(json!({"run_id": "r1", "type": "end", "outcome": "paused"}))
            .unwrap();
    assert_eq!(
        back.event,
        LiveEvent::End {
            outcome: Some("paused".to_owned()),
            reason: None
        }
    );
}

#[derive(Deserialize, JsonSchema)]
struct Draft {
    title: String,
}

#[tokio::test]
async fn a_tools_drafts_reach_watchers_live_and_never_the_history() {
    let mut tools = ToolRegistry::new();
    tools.add_typed("draft_doc", "Drafts a doc.", |d: Draft, cx| async move {
        let sent = emit_draft(
            Some(&cx.call_id),
            "doc",
            json!({"title": d.title, "body": "SECRET-DRAFT-CANARY"}),
            None,
        );
        Ok(ToolOutput::ok(format!("drafted (live: {sent})")))
    });
    let model = ScriptedModel::from_responses(vec![
        ScriptedResponse::calls().call("c1", "draft_doc", json!({"title": "Plan"})),
        ScriptedResponse::text("Done."),
    ]);
    let agent = Agent::new(Arc::new(model)).with_tools(tools);
    let live = FanoutChannel::new(64);
    live.open("run-1");
    let mut w = live.watch("run-1").unwrap();
    let channel: Arc<dyn LiveChannel> = Arc::new(live.clone());
    let mut history = Vec::new();
    let options = burrow_runtime::agent::RunOptions {
        run_id: Some("run-1".to_owned()),
        ..Default::default()
    };
    let forward = channel.clone();
    let result = with_live(
        channel,
        "run-1",
        agent.run_with(&mut history, Some("draft it".into()), options, &mut |e| {
            if let Some(event) = LiveEvent::from_agent(e) {
                forward.send(LiveFrame {
                    run_id: "run-1".to_owned(),
                    event,
                });
            }
        }),
    )
    .await;
    assert_eq!(result.outcome.name(), "completed");
    live.close("run-1", end());
    let frames: Vec<LiveFrame> = w.by_ref().collect().await;
    let drafts: Vec<_> = frames
        .iter()
        .filter(|f| matches!(f.event, LiveEvent::Draft { .. }))
        .collect();
    assert_eq!(drafts.len(), 1);
    assert_eq!(
        drafts[0].event,
        LiveEvent::Draft {
            call_id: Some("c1".to_owned()),
            kind: "doc".to_owned(),
            snapshot: json!({"title": "Plan", "body": "SECRET-DRAFT-CANARY"}),
            artifact_id: None,
        }
    );
    assert!(frames.last().unwrap().event.is_end());
    let stored = serde_json::to_string(&history).unwrap();
    assert!(!stored.contains("SECRET-DRAFT-CANARY"));
    assert!(matches!(&history[2], Message::ToolResult(r) if r.content == "drafted (live: true)"));
}

#[tokio::test]
async fn a_draft_outside_a_live_scope_is_dropped_and_says_so() {
    assert!(!emit_draft(None, "doc", json!({}), None));
}

#[tokio::test]
async fn a_run_keeps_frames_bounded_by_bytes_as_well_as_by_count() {
    let live = FanoutChannel::with_limits(1024, 1_000);
    live.open("r1");
    let big = "x".repeat(300);
    for _ in 0..10 {
        live.send(text("r1", &big));
    }
    let watcher = live.watch("r1").unwrap();
    live.close("r1", end());
    let shown: Vec<String> = watcher.map(|f| show(&f)).collect().await;
    // About 1,000 bytes hold at most three 300-byte frames with their overhead.
    let kept = shown.iter().filter(|s| **s == big).count();
    assert!((1..=3).contains(&kept), "{kept} frames kept");
    assert_eq!(shown[0], format!("gap {}", 10 - kept));
    assert_eq!(shown.last().unwrap(), "end completed");

    // A frame larger than the bound alone is dropped with every frame before it.
    let live = FanoutChannel::with_limits(1024, 1_000);
    live.open("r2");
    live.send(text("r2", "small"));
    live.send(text("r2", &"y".repeat(5_000)));
    live.send(text("r2", "after"));
    let watcher = live.watch("r2").unwrap();
    live.close("r2", end());
    let shown: Vec<String> = watcher.map(|f| show(&f)).collect().await;
    assert_eq!(shown, vec!["gap 2", "after", "end completed"]);
}
