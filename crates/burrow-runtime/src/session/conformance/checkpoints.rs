//! Scenarios: checkpoints keep their files' pre-images byte for byte and only the newest `keep`; a rewind is an intent committed under the running-thread check, then a finishing commit that appends the rewind entry.

use super::{Outcome, Pass, claim, ensure, expect_kind, post, start, thread};
use crate::checkpoint::{FileImage, view};
use crate::message::Message;
use crate::session::StoreErrorKind;
use crate::session::types::{Commit, HistoryItem, Write};

fn add(text: &str) -> Write {
    Write::AppendHistory {
        run_id: None,
        items: vec![HistoryItem::Message {
            message: Message::system(text),
        }],
    }
}

fn with_files(id: &str, files: Vec<FileImage>, keep: Option<u32>) -> Write {
    let mut metadata = serde_json::Map::new();
    metadata.insert("tools".into(), serde_json::json!(["write_file"]));
    Write::SaveCheckpoint {
        checkpoint_id: id.into(),
        label: Some(format!("label {id}")),
        turn: Some(3),
        metadata,
        files,
        keep,
    }
}

fn images() -> Vec<FileImage> {
    let big: Vec<u8> = (0..(3 << 20)).map(|i: u32| (i % 251) as u8).collect();
    vec![
        FileImage {
            path: "/notes/a.txt".into(),
            bytes: Some(b"line one\r\nline two\n".to_vec()),
        },
        FileImage {
            path: "/bin/all-bytes".into(),
            bytes: Some((0..=255u8).collect()),
        },
        FileImage {
            path: "/empty".into(),
            bytes: Some(Vec::new()),
        },
        FileImage {
            path: "/new.txt".into(),
            bytes: None,
        },
        FileImage {
            path: "/big.bin".into(),
            bytes: Some(big),
        },
    ]
}

/// A checkpoint's files read back exactly as saved (text, every byte value,
/// empty, absent, 3 MiB), in order, with its turn, metadata and paths; an
/// unknown checkpoint has none; they survive a reopen.
pub async fn checkpoint_files_are_kept_byte_for_byte(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    let c = claim(&*s, &t, "h1").await?;
    s.commit(
        &t,
        Commit::new()
            .fenced(c.fence())
            .write(add("one"))
            .write(with_files("k1", images(), None)),
    )
    .await?;
    let back = s.checkpoint_files(&t, "k1").await?;
    ensure(back.as_deref() == Some(&images()[..]), || {
        "the checkpoint's files differ from those saved".into()
    })?;
    ensure(s.checkpoint_files(&t, "k9").await?.is_none(), || {
        "an unknown checkpoint has files".into()
    })?;
    ensure(
        s.checkpoint_files(&thread("t2"), "k1").await?.is_none(),
        || "another thread's checkpoint files are visible".into(),
    )?;
    let ks = s.checkpoints(&t).await?;
    let k = ks.first();
    ensure(
        k.is_some_and(|k| {
            k.turn == Some(3)
                && k.history_len == 1
                && k.label.as_deref() == Some("label k1")
                && k.metadata.get("tools") == Some(&serde_json::json!(["write_file"]))
                && k.paths.len() == 5
                && k.paths[0] == "/notes/a.txt"
        }),
        || format!("checkpoint row: {k:?}"),
    )?;
    drop(s);
    if let Some(reopened) = fx.reopen().await {
        let s = reopened?;
        let back = s.checkpoint_files(&t, "k1").await?;
        ensure(back.as_deref() == Some(&images()[..]), || {
            "the checkpoint's files changed across a reopen".into()
        })?;
    }
    Ok(Pass::Passed)
}

/// With `keep`, only the newest `keep` checkpoints stay (the others' files
/// gone too); without it, none is dropped; zero keeps one.
pub async fn checkpoint_retention_keeps_the_newest(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    let c = claim(&*s, &t, "h1").await?;
    let one = |n: u8| {
        vec![FileImage {
            path: "/a.txt".into(),
            bytes: Some(vec![n]),
        }]
    };
    for n in 1..=4u8 {
        s.commit(
            &t,
            Commit::new()
                .fenced(c.fence())
                .write(add("x"))
                .write(with_files(&format!("k{n}"), one(n), None)),
        )
        .await?;
    }
    ensure(s.checkpoints(&t).await?.len() == 4, || {
        "a checkpoint without keep dropped others".into()
    })?;
    s.commit(
        &t,
        Commit::new()
            .fenced(c.fence())
            .write(with_files("k5", one(5), Some(3))),
    )
    .await?;
    let ids: Vec<String> = s.checkpoints(&t).await?.into_iter().map(|k| k.id).collect();
    ensure(ids == ["k3", "k4", "k5"], || format!("kept: {ids:?}"))?;
    ensure(s.checkpoint_files(&t, "k1").await?.is_none(), || {
        "a dropped checkpoint's files stay".into()
    })?;
    ensure(s.checkpoint_files(&t, "k3").await? == Some(one(3)), || {
        "a kept checkpoint lost its files".into()
    })?;
    s.commit(
        &t,
        Commit::new()
            .fenced(c.fence())
            .write(with_files("k6", one(6), Some(0))),
    )
    .await?;
    let ids: Vec<String> = s.checkpoints(&t).await?.into_iter().map(|k| k.id).collect();
    ensure(ids == ["k6"], || format!("kept with keep 0: {ids:?}"))?;
    Ok(Pass::Passed)
}

/// A begun rewind stands in the thread (no run starts, no checkpoint is
/// saved, no second rewind begins meanwhile) until its finishing commit
/// appends the rewind entry; the view is then the conversation at the
/// checkpoint and the entries after it stay.
pub async fn a_rewind_is_begun_then_finished(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    s.commit(&t, Commit::new().write(post("m1", "alice", "go")))
        .await?;
    let c = claim(&*s, &t, "h1").await?;
    let f = c.fence();
    s.commit(
        &t,
        Commit::new()
            .fenced(f.clone())
            .write(add("one"))
            .write(Write::save_checkpoint("k1", None))
            .write(add("two"))
            .write(add("three")),
    )
    .await?;
    s.commit(
        &t,
        Commit::new().fenced(f.clone()).write(Write::BeginRewind {
            checkpoint_id: "k1".into(),
            history_len: 1,
            files: true,
            conversation: true,
        }),
    )
    .await?;
    let info = s.thread(&t).await?;
    ensure(
        info.as_ref()
            .and_then(|i| i.rewind.as_ref())
            .is_some_and(|r| r.checkpoint_id == "k1" && r.history_len == 1 && r.files),
        || format!("thread after begin: {info:?}"),
    )?;
    expect_kind(
        s.commit(
            &t,
            Commit::new().fenced(f.clone()).write(start("r1", &["m1"])),
        )
        .await,
        StoreErrorKind::InvalidState,
        "starting a run during a rewind",
    )?;
    expect_kind(
        s.commit(
            &t,
            Commit::new()
                .fenced(f.clone())
                .write(Write::save_checkpoint("k2", None)),
        )
        .await,
        StoreErrorKind::InvalidState,
        "saving a checkpoint during a rewind",
    )?;
    expect_kind(
        s.commit(
            &t,
            Commit::new().fenced(f.clone()).write(Write::BeginRewind {
                checkpoint_id: "k1".into(),
                history_len: 1,
                files: true,
                conversation: true,
            }),
        )
        .await,
        StoreErrorKind::InvalidState,
        "beginning a second rewind",
    )?;
    expect_kind(
        s.commit(
            &t,
            Commit::new().fenced(f.clone()).write(Write::FinishRewind {
                checkpoint_id: "k9".into(),
            }),
        )
        .await,
        StoreErrorKind::InvalidState,
        "finishing a rewind to another checkpoint",
    )?;
    if let Some(reopened) = fx.reopen().await {
        let s = reopened?;
        let info = s.thread(&t).await?;
        ensure(info.is_some_and(|i| i.rewind.is_some()), || {
            "the begun rewind was lost across a reopen".into()
        })?;
    }
    let s = fx.store();
    let done = s
        .commit(
            &t,
            Commit::new().fenced(f.clone()).write(Write::FinishRewind {
                checkpoint_id: "k1".into(),
            }),
        )
        .await?;
    ensure(done.history_len == 4, || {
        format!("history length after the rewind: {}", done.history_len)
    })?;
    let entries = s.history(&t, 0).await?;
    ensure(
        matches!(
            entries.last().map(|e| &e.item),
            Some(HistoryItem::Rewind { checkpoint_id, history_len: 1 }) if checkpoint_id == "k1"
        ),
        || format!("last entry: {:?}", entries.last()),
    )?;
    let seen = view(&entries);
    ensure(seen == vec![Message::system("one")], || {
        format!("view after the rewind: {seen:?}")
    })?;
    ensure(
        s.thread(&t).await?.is_some_and(|i| i.rewind.is_none()),
        || "the rewind's intent stayed".into(),
    )?;
    s.commit(&t, Commit::new().fenced(f).write(start("r1", &["m1"])))
        .await?;
    Ok(Pass::Passed)
}

/// A rewind of a thread with a running run, to an unknown checkpoint or past
/// the history is refused and writes nothing; a rewind entry cannot be appended.
pub async fn a_rewind_of_a_running_thread_is_refused(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    s.commit(&t, Commit::new().write(post("m1", "alice", "go")))
        .await?;
    let c = claim(&*s, &t, "h1").await?;
    let f = c.fence();
    s.commit(
        &t,
        Commit::new()
            .fenced(f.clone())
            .write(add("one"))
            .write(Write::save_checkpoint("k1", None))
            .write(start("r1", &["m1"])),
    )
    .await?;
    let head = s.thread(&t).await?.map(|i| i.head_seq);
    let begin = |id: &str, len: u64| Write::BeginRewind {
        checkpoint_id: id.into(),
        history_len: len,
        files: true,
        conversation: true,
    };
    expect_kind(
        s.commit(&t, Commit::new().fenced(f.clone()).write(begin("k1", 1)))
            .await,
        StoreErrorKind::InvalidState,
        "rewinding a running thread",
    )?;
    s.commit(
        &t,
        Commit::new().fenced(f.clone()).write(Write::EndRun {
            run_id: "r1".into(),
            end: crate::session::RunEnd::Completed,
        }),
    )
    .await?;
    expect_kind(
        s.commit(&t, Commit::new().fenced(f.clone()).write(begin("k9", 1)))
            .await,
        StoreErrorKind::NotFound,
        "rewinding to an unknown checkpoint",
    )?;
    expect_kind(
        s.commit(&t, Commit::new().fenced(f.clone()).write(begin("k1", 99)))
            .await,
        StoreErrorKind::InvalidArgument,
        "rewinding past the history",
    )?;
    expect_kind(
        s.commit(
            &t,
            Commit::new().fenced(f.clone()).write(Write::AppendHistory {
                run_id: None,
                items: vec![HistoryItem::Rewind {
                    checkpoint_id: "k1".into(),
                    history_len: 1,
                }],
            }),
        )
        .await,
        StoreErrorKind::InvalidArgument,
        "appending a rewind entry",
    )?;
    expect_kind(
        s.commit(&t, Commit::new().write(begin("k1", 1))).await,
        StoreErrorKind::StaleClaim,
        "beginning a rewind without a fence",
    )?;
    let info = s.thread(&t).await?;
    ensure(
        info.as_ref()
            .is_some_and(|i| i.rewind.is_none() && Some(i.head_seq) == head.map(|h| h + 1)),
        || format!("a refused rewind wrote something: {info:?}"),
    )?;
    Ok(Pass::Passed)
}
