//! Scenarios: commits are all or nothing, number their events without gaps, keep message ids once per workspace, and keep content out of events.

use super::{Outcome, Pass, claim, ensure, expect_kind, post, scope, start, thread};
use crate::message::{AssistantPart, Message, ToolCall, ToolResult};
use crate::session::types::{Commit, EventKind, HistoryItem, MessageKind, Scope, Write};
use crate::session::{StoreErrorKind, ThreadStatus};

/// A thread exists from its first commit on, idle, with its head at that commit's last event.
pub async fn first_commit_creates_the_thread(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    ensure(s.thread(&t).await?.is_none(), || {
        "a thread with no commit exists".into()
    })?;
    let done = s
        .commit(&t, Commit::new().write(post("m1", "alice", "hello")))
        .await?;
    ensure(done.seqs == vec![1] && done.head_seq == 1, || {
        format!("the first write's seq is not 1: {done:?}")
    })?;
    let info = s
        .thread(&t)
        .await?
        .ok_or_else(|| super::ScenarioError::new("the thread is missing after its first commit"))?;
    ensure(
        info.head_seq == 1 && info.status == ThreadStatus::Idle && info.active_run.is_none(),
        || format!("unexpected thread after one message: {info:?}"),
    )?;
    Ok(Pass::Passed)
}

/// Each write of a commit records one event; seqs run on from the head across commits.
pub async fn each_write_records_one_event_with_the_next_seq(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    let a = s
        .commit(
            &t,
            Commit::new()
                .write(post("m1", "alice", "one"))
                .write(post("m2", "alice", "two")),
        )
        .await?;
    let b = s
        .commit(&t, Commit::new().write(post("m3", "bob", "three")))
        .await?;
    ensure(a.seqs == vec![1, 2] && b.seqs == vec![3], || {
        format!("seqs are not consecutive: {a:?} then {b:?}")
    })?;
    let events = s.events(&t, 0, 100).await?;
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    ensure(seqs == vec![1, 2, 3], || format!("event seqs: {seqs:?}"))?;
    ensure(
        matches!(&events[2].kind, EventKind::MessagePosted { message_id, author, kind: MessageKind::Message } if message_id == "m3" && author == "bob"),
        || format!("third event: {:?}", events[2]),
    )?;
    let tail = s.events(&t, 1, 1).await?;
    ensure(tail.len() == 1 && tail[0].seq == 2, || {
        format!("events after 1, limit 1: {tail:?}")
    })?;
    let other = s.events(&thread("t2"), 0, 100).await?;
    ensure(other.is_empty(), || {
        "another thread's log is not empty".into()
    })?;
    Ok(Pass::Passed)
}

/// A commit whose second write is refused writes nothing: no message, no seq used.
pub async fn a_failed_commit_writes_nothing(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    s.commit(&t, Commit::new().write(post("m1", "alice", "first")))
        .await?;
    let c = claim(&*s, &t, "holder-1").await?;
    let bad = Commit::new()
        .fenced(c.fence())
        .write(post("m2", "alice", "second"))
        .write(Write::EndRun {
            run_id: "no-such-run".into(),
            end: crate::session::RunEnd::Completed,
        })
        .cursor("taken", 2);
    expect_kind(
        s.commit(&t, bad).await,
        StoreErrorKind::NotFound,
        "ending a run that does not exist",
    )?;
    ensure(s.message(&scope(), "m2").await?.is_none(), || {
        "the refused commit's message was stored".into()
    })?;
    ensure(s.cursor(&t, "taken").await? == 0, || {
        "the refused commit's cursor moved".into()
    })?;
    let next = s
        .commit(&t, Commit::new().write(post("m2", "alice", "again")))
        .await?;
    ensure(next.seqs == vec![2], || {
        format!("the refused commit used a seq: next is {:?}", next.seqs)
    })?;
    Ok(Pass::Passed)
}

/// A message id is used once per workspace, across threads; another workspace may reuse it.
pub async fn message_ids_are_used_once_per_workspace(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    s.commit(&thread("t1"), Commit::new().write(post("m1", "alice", "a")))
        .await?;
    expect_kind(
        s.commit(&thread("t2"), Commit::new().write(post("m1", "bob", "b")))
            .await,
        StoreErrorKind::IdInUse,
        "reusing message id m1 in another thread of the workspace",
    )?;
    ensure(s.thread(&thread("t2")).await?.is_none(), || {
        "the refused commit created its thread".into()
    })?;
    let other = Scope::new("tenant-a", "workspace-2").thread("t1");
    s.commit(&other, Commit::new().write(post("m1", "alice", "c")))
        .await?;
    let m = s
        .message(&scope(), "m1")
        .await?
        .ok_or_else(|| super::ScenarioError::new("message m1 is missing"))?;
    ensure(m.text == "a" && m.thread == "t1" && m.seq == 1, || {
        format!("message m1 changed: {m:?}")
    })?;
    Ok(Pass::Passed)
}

/// Empty names and names with NUL are refused before anything is written.
pub async fn empty_and_nul_names_are_refused(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    expect_kind(
        s.commit(&thread(""), Commit::new().write(post("m1", "a", "x")))
            .await,
        StoreErrorKind::InvalidArgument,
        "an empty thread id",
    )?;
    expect_kind(
        s.commit(&thread("t1"), Commit::new().write(post("m\0", "a", "x")))
            .await,
        StoreErrorKind::InvalidArgument,
        "a message id with NUL",
    )?;
    expect_kind(
        s.acquire_claim(&thread("t1"), "", super::TTL).await,
        StoreErrorKind::InvalidArgument,
        "an empty claim holder",
    )?;
    expect_kind(
        s.commit(
            &thread("t1"),
            Commit::new().write(post("m1", "a", "x")).cursor("", 1),
        )
        .await,
        StoreErrorKind::InvalidArgument,
        "an empty cursor name",
    )?;
    // Text may hold anything, NUL included: it is content, not a name.
    s.commit(&thread("t1"), Commit::new().write(post("m1", "a", "x\0y")))
        .await?;
    let m = s.message(&scope(), "m1").await?;
    ensure(m.is_some_and(|m| m.text == "x\0y"), || {
        "a text holding NUL did not come back as written".into()
    })?;
    Ok(Pass::Passed)
}

/// Threads are listed by id, a page after a given id, in their workspace only.
pub async fn threads_are_listed_by_id_in_pages(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    for (i, id) in ["c", "a", "b"].iter().enumerate() {
        s.commit(
            &thread(id),
            Commit::new().write(post(&format!("m{i}"), "x", "y")),
        )
        .await?;
    }
    s.commit(
        &Scope::new("tenant-b", "workspace-1").thread("z"),
        Commit::new().write(post("m9", "x", "y")),
    )
    .await?;
    let all: Vec<String> = s
        .threads(&scope(), None, 10)
        .await?
        .into_iter()
        .map(|t| t.thread)
        .collect();
    ensure(all == ["a", "b", "c"], || format!("threads: {all:?}"))?;
    let page: Vec<String> = s
        .threads(&scope(), Some("a"), 1)
        .await?
        .into_iter()
        .map(|t| t.thread)
        .collect();
    ensure(page == ["b"], || format!("page after a: {page:?}"))?;
    Ok(Pass::Passed)
}

/// Posted messages read back in seq order after a seq, notices included with their kind.
pub async fn messages_are_read_after_a_seq(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    s.commit(
        &t,
        Commit::new()
            .write(post("m1", "alice", "one"))
            .write(Write::PostMessage {
                id: "n1".into(),
                author: "ops".into(),
                kind: MessageKind::Notice,
                text: "deploy at noon".into(),
            })
            .write(post("m2", "bob", "two")),
    )
    .await?;
    let after: Vec<(String, MessageKind, u64)> = s
        .messages(&t, 1, 10)
        .await?
        .into_iter()
        .map(|m| (m.id, m.kind, m.seq))
        .collect();
    ensure(
        after
            == vec![
                ("n1".to_string(), MessageKind::Notice, 2),
                ("m2".to_string(), MessageKind::Message, 3),
            ],
        || format!("messages after seq 1: {after:?}"),
    )?;
    Ok(Pass::Passed)
}

const CANARY: &str = "canary-7f3a";

/// No event holds message text, tool arguments or tool output.
pub async fn events_are_content_free(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    s.commit(
        &t,
        Commit::new().write(post("m1", "alice", &format!("prompt {CANARY}"))),
    )
    .await?;
    let c = claim(&*s, &t, "h1").await?;
    let call = ToolCall {
        id: "c1".into(),
        name: "read_file".into(),
        arguments: serde_json::json!({ "path": format!("/{CANARY}.txt") }),
    };
    s.commit(
        &t,
        Commit::new()
            .fenced(c.fence())
            .write(start("r1", &["m1"]))
            .write(Write::AppendHistory {
                run_id: Some("r1".into()),
                items: vec![
                    HistoryItem::Posted {
                        message_id: "m1".into(),
                    },
                    HistoryItem::Message {
                        message: Message::Assistant {
                            parts: vec![
                                AssistantPart::Text {
                                    text: format!("answer {CANARY}"),
                                },
                                AssistantPart::ToolCall(call),
                            ],
                        },
                    },
                ],
            })
            .write(Write::ToolStarted {
                run_id: "r1".into(),
                call_id: "c1".into(),
                name: "read_file".into(),
                effect_key: None,
            }),
    )
    .await?;
    s.commit(
        &t,
        Commit::new()
            .fenced(c.fence())
            .write(Write::ToolFinished {
                run_id: "r1".into(),
                call_id: "c1".into(),
                result: ToolResult {
                    call_id: "c1".into(),
                    name: "read_file".into(),
                    content: format!("file {CANARY}"),
                    is_error: false,
                },
            })
            .write(Write::AppendHistory {
                run_id: Some("r1".into()),
                items: vec![HistoryItem::ToolResult {
                    call_id: "c1".into(),
                }],
            })
            .write(Write::EndRun {
                run_id: "r1".into(),
                end: crate::session::RunEnd::Completed,
            }),
    )
    .await?;
    let events = s.events(&t, 0, 100).await?;
    ensure(events.len() == 7, || {
        format!("expected 7 events, got {}", events.len())
    })?;
    for e in &events {
        let json = serde_json::to_string(e).unwrap_or_default();
        ensure(!json.contains(CANARY), || {
            format!("event {} holds content: {json}", e.seq)
        })?;
    }
    Ok(Pass::Passed)
}
