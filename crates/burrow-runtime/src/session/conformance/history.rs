//! Scenarios: the history holds each text once (posted messages and tool results by reference), resolves references when read, and checkpoints mark positions in it.

use super::tools::{finished, started};
use super::{Outcome, Pass, claim, ensure, expect_kind, post, start, thread};
use crate::message::{AssistantPart, Message, ToolCall, ToolResult};
use crate::session::types::{Commit, HistoryItem, Write};
use crate::session::{StoreErrorKind, load_history};

fn call_message(call: &str) -> Message {
    Message::Assistant {
        parts: vec![AssistantPart::ToolCall(ToolCall {
            id: call.into(),
            name: "write_file".into(),
            arguments: serde_json::json!({ "path": "/a.txt", "content": "x" }),
        })],
    }
}

/// Posted and tool-result references read back as the user message and the tool result; positions count from 0.
pub async fn history_references_resolve_to_messages(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    s.commit(&t, Commit::new().write(post("m1", "alice", "write a.txt")))
        .await?;
    let c = claim(&*s, &t, "h1").await?;
    let f = c.fence();
    let done = s
        .commit(
            &t,
            Commit::new()
                .fenced(f.clone())
                .write(start("r1", &["m1"]))
                .write(Write::AppendHistory {
                    run_id: Some("r1".into()),
                    items: vec![
                        HistoryItem::Posted {
                            message_id: "m1".into(),
                        },
                        HistoryItem::Message {
                            message: call_message("c1"),
                        },
                    ],
                })
                .write(started("r1", "c1", Some("k1")))
                .write(finished("r1", "c1", "wrote /a.txt"))
                .write(Write::AppendHistory {
                    run_id: Some("r1".into()),
                    items: vec![
                        HistoryItem::ToolResult {
                            call_id: "c1".into(),
                        },
                        HistoryItem::Message {
                            message: Message::assistant_text("Done."),
                        },
                    ],
                }),
        )
        .await?;
    ensure(done.history_len == 4, || {
        format!("history length {}", done.history_len)
    })?;
    let want = vec![
        Message::user("write a.txt"),
        call_message("c1"),
        Message::ToolResult(ToolResult {
            call_id: "c1".into(),
            name: "write_file".into(),
            content: "wrote /a.txt".into(),
            is_error: false,
        }),
        Message::assistant_text("Done."),
    ];
    let got = load_history(&*s, &t).await?;
    ensure(got == want, || format!("history {got:?}"))?;
    let tail = s.history(&t, 2).await?;
    let positions: Vec<u64> = tail.iter().map(|e| e.pos).collect();
    ensure(
        positions == [2, 3] && tail.iter().all(|e| e.run_id.as_deref() == Some("r1")),
        || format!("history from 2: {tail:?}"),
    )?;
    Ok(Pass::Passed)
}

/// A posted message and a tool result are stored once: the history keeps references, not copies.
pub async fn history_keeps_each_text_once(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    s.commit(&t, Commit::new().write(post("m1", "alice", "hello")))
        .await?;
    let c = claim(&*s, &t, "h1").await?;
    s.commit(
        &t,
        Commit::new()
            .fenced(c.fence())
            .write(start("r1", &["m1"]))
            .write(Write::AppendHistory {
                run_id: Some("r1".into()),
                items: vec![HistoryItem::Posted {
                    message_id: "m1".into(),
                }],
            }),
    )
    .await?;
    let entries = s.history(&t, 0).await?;
    ensure(
        entries.len() == 1
            && entries[0].item
                == HistoryItem::Posted {
                    message_id: "m1".into(),
                },
        || format!("the history copied the message instead of referring to it: {entries:?}"),
    )?;
    Ok(Pass::Passed)
}

/// References to a message of another thread, an unknown message or an unfinished call are refused.
pub async fn history_refuses_dangling_references(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    s.commit(
        &thread("t2"),
        Commit::new().write(post("other", "bob", "x")),
    )
    .await?;
    let c = claim(&*s, &t, "h1").await?;
    let f = c.fence();
    s.commit(
        &t,
        Commit::new()
            .fenced(f.clone())
            .write(start("r1", &[]))
            .write(started("r1", "c1", None)),
    )
    .await?;
    let append = |items: Vec<HistoryItem>| Write::AppendHistory {
        run_id: Some("r1".into()),
        items,
    };
    for (what, item) in [
        (
            "a message of another thread",
            HistoryItem::Posted {
                message_id: "other".into(),
            },
        ),
        (
            "an unknown message",
            HistoryItem::Posted {
                message_id: "nope".into(),
            },
        ),
        (
            "an unfinished call's result",
            HistoryItem::ToolResult {
                call_id: "c1".into(),
            },
        ),
    ] {
        expect_kind(
            s.commit(
                &t,
                Commit::new().fenced(f.clone()).write(append(vec![item])),
            )
            .await,
            StoreErrorKind::NotFound,
            what,
        )?;
    }
    ensure(s.history(&t, 0).await?.is_empty(), || {
        "a refused history write left entries".into()
    })?;
    Ok(Pass::Passed)
}

/// A checkpoint records the history length at its commit; its id is used once per thread.
pub async fn checkpoints_mark_history_positions(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    let c = claim(&*s, &t, "h1").await?;
    let f = c.fence();
    let add = |text: &str| Write::AppendHistory {
        run_id: None,
        items: vec![HistoryItem::Message {
            message: Message::system(text),
        }],
    };
    s.commit(
        &t,
        Commit::new()
            .fenced(f.clone())
            .write(add("one"))
            .write(Write::save_checkpoint("k1", Some("after one".into())))
            .write(add("two"))
            .write(Write::save_checkpoint("k2", None)),
    )
    .await?;
    expect_kind(
        s.commit(
            &t,
            Commit::new()
                .fenced(f)
                .write(Write::save_checkpoint("k1", None)),
        )
        .await,
        StoreErrorKind::IdInUse,
        "reusing checkpoint id k1",
    )?;
    let ks: Vec<(String, u64, u64)> = s
        .checkpoints(&t)
        .await?
        .into_iter()
        .map(|k| (k.id, k.history_len, k.seq))
        .collect();
    ensure(
        ks == vec![("k1".to_string(), 1, 2), ("k2".to_string(), 2, 4)],
        || format!("checkpoints: {ks:?}"),
    )?;
    let upto: Vec<Message> = s
        .history(&t, 0)
        .await?
        .into_iter()
        .take(1)
        .map(|e| e.message)
        .collect();
    ensure(upto == vec![Message::system("one")], || {
        format!("history up to k1: {upto:?}")
    })?;
    Ok(Pass::Passed)
}
