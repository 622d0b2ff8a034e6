//! Scenarios: `prune` forgets command results, events and tool-call records from before its cutoff, and never what an unfinished run or the next run's repair needs (ADR 0255).

use std::time::Duration;

use serde_json::json;

use super::tools::{finished, started};
use super::{Outcome, Pass, ScenarioError, claim, ensure, post, scope, start, thread};
use crate::message::{AssistantPart, Message, ToolCall};
use crate::session::types::{
    CommandKey, Commit, HistoryItem, Pruned, RunEnd, ThreadKey, ToolCallStatus, Write,
};
use crate::session::{Fence, Scope, SessionStore, StoreErrorKind};

/// An hour: how far the clock moves between the old records and the new.
const HOUR: Duration = Duration::from_secs(3600);

fn call_message(call: &str) -> Message {
    Message::Assistant {
        parts: vec![AssistantPart::ToolCall(ToolCall {
            id: call.into(),
            name: "write_file".into(),
            arguments: json!({ "path": "/a.txt", "content": "x" }),
        })],
    }
}

fn append(run: &str, items: Vec<HistoryItem>) -> Write {
    Write::AppendHistory {
        run_id: Some(run.into()),
        items,
    }
}

fn key(scope: Scope, id: &str) -> CommandKey {
    CommandKey {
        scope,
        sender: "alice".into(),
        command_id: id.into(),
    }
}

/// A whole run `run` in `t` under `f`: the posted message `message`, an
/// assistant call `call` that finished, its result by reference, an answer;
/// ended completed.
async fn finished_run(
    s: &dyn SessionStore,
    t: &ThreadKey,
    f: &Fence,
    run: &str,
    message: &str,
    call: &str,
) -> Result<(), ScenarioError> {
    s.commit(
        t,
        Commit::new().write(post(message, "alice", "write a.txt")),
    )
    .await?;
    s.commit(
        t,
        Commit::new()
            .fenced(f.clone())
            .write(start(run, &[message]))
            .write(append(
                run,
                vec![
                    HistoryItem::Posted {
                        message_id: message.into(),
                    },
                    HistoryItem::Message {
                        message: call_message(call),
                    },
                ],
            ))
            .write(started(run, call, Some("k1")))
            .write(finished(run, call, "wrote /a.txt"))
            .write(append(
                run,
                vec![
                    HistoryItem::ToolResult {
                        call_id: call.into(),
                    },
                    HistoryItem::Message {
                        message: Message::assistant_text("Done."),
                    },
                ],
            ))
            .write(Write::EndRun {
                run_id: run.into(),
                end: RunEnd::Completed,
            }),
    )
    .await?;
    Ok(())
}

/// Command results recorded before the cutoff are forgotten (a repeat is
/// carried out like a new command); later ones and other workspaces' stay.
pub async fn prune_forgets_command_results_recorded_before_the_cutoff(
    fx: &super::Fixture,
) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    let other = Scope::new("tenant-a", "workspace-2");
    s.record_command(&key(scope(), "old-1"), json!({"n": 1}))
        .await?;
    s.commit(
        &t,
        Commit::new()
            .write(post("m1", "alice", "hi"))
            .command(key(scope(), "old-2"), json!({"n": 2})),
    )
    .await?;
    s.record_command(&key(other.clone(), "old-1"), json!({"n": 3}))
        .await?;
    fx.clock().advance(HOUR);
    let cutoff = s.now_ms();
    s.record_command(&key(scope(), "new-1"), json!({"n": 4}))
        .await?;
    let nothing = s.prune(&scope(), cutoff - 2 * 3_600_000).await?;
    ensure(nothing == Pruned::default(), || {
        format!("a prune before every record deleted {nothing:?}")
    })?;
    let pruned = s.prune(&scope(), cutoff).await?;
    ensure(pruned.commands == 2, || {
        format!("expected the 2 old command results deleted, got {pruned:?}")
    })?;
    for (k, kept) in [
        (key(scope(), "old-1"), false),
        (key(scope(), "old-2"), false),
        (key(scope(), "new-1"), true),
        (key(other, "old-1"), true),
    ] {
        let found = s.command_result(&k).await?;
        ensure(found.is_some() == kept, || {
            format!(
                "command {} of {}: kept {} after the prune, expected {kept}",
                k.command_id,
                k.scope.workspace,
                found.is_some()
            )
        })?;
    }
    // A forgotten command is carried out again, like a new one.
    let again = s
        .record_command(&key(scope(), "old-1"), json!({"n": 5}))
        .await?;
    ensure(again.is_none(), || {
        format!("a forgotten command was still remembered: {again:?}")
    })?;
    s.commit(
        &t,
        Commit::new()
            .write(post("m2", "alice", "hi again"))
            .command(key(scope(), "old-2"), json!({"n": 6})),
    )
    .await?;
    let dup = s
        .commit(
            &t,
            Commit::new()
                .write(post("m3", "alice", "hi"))
                .command(key(scope(), "new-1"), json!({})),
        )
        .await;
    ensure(
        dup.as_ref()
            .is_err_and(|e| e.kind() == StoreErrorKind::DuplicateCommand),
        || format!("a kept command was not a duplicate: {dup:?}"),
    )?;
    Ok(Pass::Passed)
}

/// Old events and an ended run's tool-call records go, the history reads
/// the same (results inlined); the unfinished run's events and records all
/// stay, and seqs go on from the same head.
pub async fn prune_keeps_what_an_unfinished_run_needs(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    let f = claim(&*s, &t, "h1").await?.fence();
    finished_run(&*s, &t, &f, "r1", "m1", "c1").await?;
    fx.clock().advance(HOUR);
    s.commit(&t, Commit::new().write(post("m2", "alice", "and b.txt")))
        .await?;
    let r2 = s
        .commit(
            &t,
            Commit::new()
                .fenced(f.clone())
                .write(start("r2", &["m2"]))
                .write(append(
                    "r2",
                    vec![
                        HistoryItem::Posted {
                            message_id: "m2".into(),
                        },
                        HistoryItem::Message {
                            message: call_message("c2"),
                        },
                    ],
                ))
                .write(started("r2", "c2", Some("k2"))),
        )
        .await?;
    let r2_started = r2.seqs[0];
    let history_before = s.history(&t, 0).await?;
    let head = s.thread(&t).await?.map(|i| i.head_seq).unwrap_or(0);
    let events_before = s.events(&t, 0, usize::MAX).await?;
    // Every event is older than a cutoff an hour on: only the unfinished run keeps its own.
    fx.clock().advance(HOUR);
    let pruned = s.prune(&scope(), s.now_ms()).await?;
    let expected_events = events_before.iter().filter(|e| e.seq < r2_started).count() as u64;
    ensure(
        pruned.events == expected_events && pruned.tool_calls == 1 && pruned.commands == 0,
        || format!("expected {expected_events} events and r1's one call deleted, got {pruned:?}"),
    )?;
    let events_after = s.events(&t, 0, usize::MAX).await?;
    let kept: Vec<u64> = events_after.iter().map(|e| e.seq).collect();
    let want: Vec<u64> = (r2_started..=head).collect();
    ensure(kept == want, || {
        format!("events kept {kept:?}, expected r2's {want:?}")
    })?;
    let page = s.events(&t, r2_started, 1).await?;
    ensure(page.first().map(|e| e.seq) == Some(r2_started + 1), || {
        format!("events after seq {r2_started}: {page:?}")
    })?;
    let history_after = s.history(&t, 0).await?;
    let messages = |h: &[crate::session::HistoryEntry]| {
        h.iter().map(|e| e.message.clone()).collect::<Vec<_>>()
    };
    ensure(
        messages(&history_before) == messages(&history_after),
        || format!("the history changed: {history_before:?} then {history_after:?}"),
    )?;
    ensure(
        history_after
            .iter()
            .all(|e| !matches!(e.item, HistoryItem::ToolResult { .. })),
        || "r1's result is still a reference to a deleted record".to_string(),
    )?;
    ensure(s.tool_calls(&scope(), "r1").await?.is_empty(), || {
        "r1's tool-call records survived".to_string()
    })?;
    let r2_calls = s.tool_calls(&scope(), "r2").await?;
    ensure(
        r2_calls.len() == 1
            && r2_calls[0].status == ToolCallStatus::Started
            && r2_calls[0].effect_key.as_deref() == Some("k2"),
        || format!("r2's unfinished call record changed: {r2_calls:?}"),
    )?;
    ensure(
        s.run(&scope(), "r1").await?.is_some() && s.message(&scope(), "m1").await?.is_some(),
        || "the prune deleted a run or a posted message".to_string(),
    )?;
    // The thread goes on: the unfinished call finishes, the next seq follows the head.
    let next = s
        .commit(
            &t,
            Commit::new()
                .fenced(f)
                .write(finished("r2", "c2", "wrote /b.txt")),
        )
        .await?;
    ensure(next.seqs == [head + 1], || {
        format!(
            "the commit after the prune got seqs {:?}, head was {head}",
            next.seqs
        )
    })?;
    Ok(Pass::Passed)
}

/// The records of the run whose assistant message is the history's last stay
/// (the next run answers its unanswered calls from them), however old.
pub async fn prune_keeps_the_records_the_next_run_repairs_from(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    let f = claim(&*s, &t, "h1").await?.fence();
    finished_run(&*s, &t, &f, "r1", "m1", "c1").await?;
    // r2 ends failed after its call finished but before its result reached the history.
    s.commit(&t, Commit::new().write(post("m2", "alice", "and b.txt")))
        .await?;
    s.commit(
        &t,
        Commit::new()
            .fenced(f.clone())
            .write(start("r2", &["m2"]))
            .write(append(
                "r2",
                vec![
                    HistoryItem::Posted {
                        message_id: "m2".into(),
                    },
                    HistoryItem::Message {
                        message: call_message("c2"),
                    },
                ],
            ))
            .write(started("r2", "c2", Some("k2")))
            .write(finished("r2", "c2", "wrote /b.txt"))
            .write(Write::EndRun {
                run_id: "r2".into(),
                end: RunEnd::Failed {
                    reason: crate::agent::FailureReason::StoreFailed,
                    message: "The session store failed.".into(),
                },
            }),
    )
    .await?;
    fx.clock().advance(HOUR);
    let pruned = s.prune(&scope(), s.now_ms()).await?;
    let head = s.thread(&t).await?.map(|i| i.head_seq).unwrap_or(0);
    ensure(pruned.tool_calls == 1 && pruned.events == head, || {
        format!("expected r1's call and all {head} events deleted, got {pruned:?}")
    })?;
    let r2_calls = s.tool_calls(&scope(), "r2").await?;
    ensure(
        r2_calls.len() == 1
            && r2_calls[0]
                .result
                .as_ref()
                .is_some_and(|r| r.content == "wrote /b.txt"),
        || format!("r2's records, which the next run repairs from, went: {r2_calls:?}"),
    )?;
    ensure(s.events(&t, 0, 10).await?.is_empty(), || {
        "an idle thread kept old events".to_string()
    })?;
    Ok(Pass::Passed)
}
