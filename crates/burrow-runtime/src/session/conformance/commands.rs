//! Scenarios: a command key is checked and recorded in the transaction of the commit that carries the command out, so a repeat (even a concurrent one) does nothing.

use serde_json::json;

use super::{Outcome, Pass, ensure, expect_kind, post, scope, thread};
use crate::session::types::{CommandKey, Commit};
use crate::session::{Scope, StoreErrorKind};

fn key(sender: &str, id: &str) -> CommandKey {
    CommandKey {
        scope: scope(),
        sender: sender.into(),
        command_id: id.into(),
    }
}

/// The first commit with a key is carried out and remembered; a repeat, whatever it carries, writes nothing.
pub async fn a_command_is_carried_out_once(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    let k = key("alice", "cmd-1");
    s.commit(
        &t,
        Commit::new()
            .write(post("m1", "alice", "first"))
            .command(k.clone(), json!({ "message_id": "m1" })),
    )
    .await?;
    expect_kind(
        s.commit(
            &t,
            Commit::new()
                .write(post("m2", "alice", "DIFFERENT"))
                .command(k.clone(), json!({ "message_id": "m2" })),
        )
        .await,
        StoreErrorKind::DuplicateCommand,
        "repeating command cmd-1",
    )?;
    ensure(s.message(&scope(), "m2").await?.is_none(), || {
        "the repeated command's message was posted".into()
    })?;
    let remembered = s.command_result(&k).await?;
    ensure(remembered == Some(json!({ "message_id": "m1" })), || {
        format!("remembered: {remembered:?}")
    })?;
    ensure(
        s.command_result(&key("alice", "cmd-2")).await?.is_none(),
        || "an unknown command has a result".into(),
    )?;
    Ok(Pass::Passed)
}

/// Two senders, or two workspaces, may use the same command id.
pub async fn command_keys_are_per_sender_and_workspace(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    s.commit(
        &thread("t1"),
        Commit::new()
            .write(post("m1", "alice", "a"))
            .command(key("alice", "c1"), json!(1)),
    )
    .await?;
    s.commit(
        &thread("t1"),
        Commit::new()
            .write(post("m2", "bob", "b"))
            .command(key("bob", "c1"), json!(2)),
    )
    .await?;
    let elsewhere = Scope::new("tenant-a", "workspace-2");
    s.commit(
        &elsewhere.thread("t1"),
        Commit::new().write(post("m1", "alice", "c")).command(
            CommandKey {
                scope: elsewhere.clone(),
                sender: "alice".into(),
                command_id: "c1".into(),
            },
            json!(3),
        ),
    )
    .await?;
    expect_kind(
        s.commit(
            &thread("t1"),
            Commit::new().command(
                CommandKey {
                    scope: elsewhere,
                    sender: "alice".into(),
                    command_id: "c9".into(),
                },
                json!(4),
            ),
        )
        .await,
        StoreErrorKind::InvalidArgument,
        "recording a command of another workspace in this thread's commit",
    )?;
    ensure(
        s.command_result(&key("bob", "c1")).await? == Some(json!(2)),
        || "bob's result is not his own".into(),
    )?;
    Ok(Pass::Passed)
}

/// `record_command` inserts a result only when none is recorded, and returns the recorded one.
pub async fn record_command_inserts_only_if_absent(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let k = key("alice", "stop-1");
    let first = s.record_command(&k, json!({ "stopped": true })).await?;
    ensure(first.is_none(), || {
        format!("first record returned {first:?}")
    })?;
    let second = s.record_command(&k, json!({ "stopped": false })).await?;
    ensure(second == Some(json!({ "stopped": true })), || {
        format!("second record returned {second:?}")
    })?;
    expect_kind(
        s.commit(
            &thread("t1"),
            Commit::new()
                .write(post("m1", "a", "x"))
                .command(k, json!(0)),
        )
        .await,
        StoreErrorKind::DuplicateCommand,
        "a commit carrying a key record_command recorded",
    )?;
    Ok(Pass::Passed)
}

/// Eight concurrent deliveries of one command (on two connections when the store has them): exactly one commits.
pub async fn concurrent_deliveries_of_one_command_commit_once(fx: &super::Fixture) -> Outcome {
    let a = fx.store();
    let b = match fx.sibling().await {
        Some(opened) => opened?,
        None => fx.store(),
    };
    let k = key("alice", "cmd-race");
    let mut tasks = Vec::new();
    for i in 0..8 {
        let store = if i % 2 == 0 { a.clone() } else { b.clone() };
        let k = k.clone();
        tasks.push(tokio::spawn(async move {
            store
                .commit(
                    &thread(&format!("t{}", i % 3)),
                    Commit::new()
                        .write(post(&format!("m{i}"), "alice", "x"))
                        .command(k, json!(i)),
                )
                .await
        }));
    }
    let mut ok = 0;
    for task in tasks {
        match task.await {
            Ok(Ok(_)) => ok += 1,
            Ok(Err(e)) if e.kind() == StoreErrorKind::DuplicateCommand => {}
            Ok(Err(e)) => return Err(e.into()),
            Err(e) => return Err(super::ScenarioError::new(format!("a task failed: {e}"))),
        }
    }
    ensure(ok == 1, || format!("{ok} deliveries committed, not 1"))?;
    let mut posted = 0;
    for i in 0..8 {
        if a.message(&scope(), &format!("m{i}")).await?.is_some() {
            posted += 1;
        }
    }
    ensure(posted == 1, || {
        format!("{posted} messages were posted, not 1")
    })?;
    Ok(Pass::Passed)
}
