//! Scenarios that need a hook: reopening the store, a second connection, and a second process.

use std::time::Duration;

use serde_json::json;

use super::child::ChildOp;
use super::{
    Outcome, Pass, ScenarioError, TTL, claim, ensure, expect_kind, post, scope, start, thread,
};
use crate::session::types::{Claim, ClaimAttempt, CommandKey, Commit, Committed, Write};
use crate::session::{RunEnd, RunStatus, StoreErrorKind, ThreadStatus};

/// After a reopen every record is there: thread, events, messages, runs, calls, claim, cursors, commands.
pub async fn reopen_keeps_everything(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    let k = CommandKey {
        scope: scope(),
        sender: "alice".into(),
        command_id: "c1".into(),
    };
    s.commit(
        &t,
        Commit::new()
            .write(post("m1", "alice", "hello"))
            .cursor("asked", 1)
            .command(k.clone(), json!("posted")),
    )
    .await?;
    let c = claim(&*s, &t, "h1").await?;
    s.commit(
        &t,
        Commit::new()
            .fenced(c.fence())
            .write(start("r1", &["m1"]))
            .write(super::tools::started("r1", "c1", Some("k1")))
            .cursor("taken", 1),
    )
    .await?;
    drop(s);
    let Some(reopened) = fx.reopen().await else {
        return Ok(Pass::Skipped("the fixture lends no reopen hook".into()));
    };
    let s = reopened?;
    let info = s.thread(&t).await?;
    ensure(
        info.as_ref()
            .is_some_and(|i| i.head_seq == 3 && i.status == ThreadStatus::Running),
        || format!("thread after reopen: {info:?}"),
    )?;
    ensure(s.events(&t, 0, 10).await?.len() == 3, || {
        "events lost".into()
    })?;
    ensure(
        s.message(&scope(), "m1")
            .await?
            .is_some_and(|m| m.text == "hello"),
        || "message lost".into(),
    )?;
    ensure(
        s.run(&scope(), "r1")
            .await?
            .is_some_and(|r| r.status == RunStatus::Running),
        || "run lost".into(),
    )?;
    ensure(s.tool_calls(&scope(), "r1").await?.len() == 1, || {
        "call record lost".into()
    })?;
    ensure(s.claim(&t).await?.as_ref() == Some(&c), || {
        "claim lost".into()
    })?;
    ensure(
        s.cursor(&t, "asked").await? == 1 && s.cursor(&t, "taken").await? == 1,
        || "cursors lost".into(),
    )?;
    ensure(s.command_result(&k).await? == Some(json!("posted")), || {
        "command lost".into()
    })?;
    // And the fence still holds across the reopen.
    s.commit(
        &t,
        Commit::new().fenced(c.fence()).write(Write::EndRun {
            run_id: "r1".into(),
            end: RunEnd::Completed,
        }),
    )
    .await?;
    Ok(Pass::Passed)
}

/// A second connection sees the first one's commits and claims, and continues its seqs.
pub async fn a_second_connection_sees_commits_and_claims(fx: &super::Fixture) -> Outcome {
    let a = fx.store();
    let Some(b) = fx.sibling().await else {
        return Ok(Pass::Skipped(
            "the fixture lends no second connection".into(),
        ));
    };
    let b = b?;
    let t = thread("t1");
    a.commit(&t, Commit::new().write(post("m1", "alice", "x")))
        .await?;
    let c = claim(&*a, &t, "h-a").await?;
    ensure(
        matches!(b.acquire_claim(&t, "h-b", TTL).await?, ClaimAttempt::Busy(held) if held == c),
        || "the second connection was granted a claim the first holds".into(),
    )?;
    let done = b
        .commit(&t, Commit::new().write(post("m2", "bob", "y")))
        .await?;
    ensure(done.seqs == vec![2], || {
        format!("second connection's seq: {:?}", done.seqs)
    })?;
    expect_kind(
        b.commit(&t, Commit::new().write(post("m1", "bob", "z")))
            .await,
        StoreErrorKind::IdInUse,
        "reusing m1 through the second connection",
    )?;
    fx.clock().advance(Duration::from_secs(31));
    let taken = claim(&*b, &t, "h-b").await?;
    expect_kind(
        a.commit(&t, Commit::new().fenced(c.fence()).write(start("r1", &[])))
            .await,
        StoreErrorKind::StaleClaim,
        "the first connection's commit after the second took over",
    )?;
    ensure(taken.token == c.token + 1, || "takeover token".into())?;
    Ok(Pass::Passed)
}

/// Two connections posting concurrently to one thread leave seqs 1..=N, each once.
pub async fn two_connections_commit_concurrently_without_gaps(fx: &super::Fixture) -> Outcome {
    let a = fx.store();
    let b = match fx.sibling().await {
        Some(opened) => opened?,
        None => fx.store(),
    };
    let t = thread("t1");
    let mut tasks = Vec::new();
    for i in 0..24 {
        let store = if i % 2 == 0 { a.clone() } else { b.clone() };
        let t = t.clone();
        tasks.push(tokio::spawn(async move {
            store
                .commit(
                    &t,
                    Commit::new().write(post(&format!("m{i}"), "alice", "x")),
                )
                .await
        }));
    }
    let mut seqs = Vec::new();
    for task in tasks {
        let done: Committed = task
            .await
            .map_err(|e| ScenarioError::new(format!("a task failed: {e}")))??;
        seqs.extend(done.seqs);
    }
    seqs.sort_unstable();
    ensure(seqs == (1..=24).collect::<Vec<u64>>(), || {
        format!("seqs: {seqs:?}")
    })?;
    let logged: Vec<u64> = a.events(&t, 0, 100).await?.iter().map(|e| e.seq).collect();
    ensure(logged == (1..=24).collect::<Vec<u64>>(), || {
        format!("log: {logged:?}")
    })?;
    Ok(Pass::Passed)
}

fn claim_of(v: serde_json::Value) -> Result<Claim, ScenarioError> {
    match serde_json::from_value::<ClaimAttempt>(v) {
        Ok(ClaimAttempt::Granted(c)) => Ok(c),
        other => Err(ScenarioError::new(format!(
            "the child was not granted the claim: {other:?}"
        ))),
    }
}

/// A claim taken in another process keeps this one out until it lapses; its commits are seen here; after the takeover its fence is refused there.
pub async fn second_process_claims_and_commits(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    s.commit(&t, Commit::new().write(post("m1", "alice", "go")))
        .await?;
    let Some(answers) = fx.in_child(&[ChildOp::Acquire {
        thread: t.clone(),
        holder: "child-1".into(),
        ttl_ms: 30_000,
    }]) else {
        return Ok(Pass::Skipped("the fixture lends no second process".into()));
    };
    let mut answers = answers?;
    let child_claim = claim_of(answers.remove(0).ok()?)?;
    let mut answers = fx
        .in_child(&[ChildOp::Commit {
            thread: t.clone(),
            commit: Commit::new()
                .fenced(child_claim.fence())
                .write(start("r1", &["m1"]))
                .cursor("taken", 1),
        }])
        .ok_or_else(|| ScenarioError::new("the second-process hook went away"))??;
    answers.remove(0).ok()?;
    match s.acquire_claim(&t, "parent-1", TTL).await? {
        ClaimAttempt::Busy(held) => ensure(held == child_claim, || {
            format!("busy with {held:?}, the child holds {child_claim:?}")
        })?,
        ClaimAttempt::Granted(c) => {
            return Err(ScenarioError::new(format!(
                "this process was granted a claim the child holds: {c:?}"
            )));
        }
    }
    let r = s.run(&scope(), "r1").await?;
    ensure(r.is_some_and(|r| r.status == RunStatus::Running), || {
        "the child's run is not seen here".into()
    })?;
    ensure(s.cursor(&t, "taken").await? == 1, || {
        "the child's cursor is not seen here".into()
    })?;
    fx.clock().advance(Duration::from_secs(30));
    let mine = claim(&*s, &t, "parent-1").await?;
    ensure(mine.token == child_claim.token + 1, || {
        "takeover token".into()
    })?;
    let mut answers = fx
        .in_child(&[ChildOp::Commit {
            thread: t.clone(),
            commit: Commit::new()
                .fenced(child_claim.fence())
                .write(Write::EndRun {
                    run_id: "r1".into(),
                    end: RunEnd::Completed,
                }),
        }])
        .ok_or_else(|| ScenarioError::new("the second-process hook went away"))??;
    let late = answers.remove(0);
    ensure(
        late.err_kind() == Some(StoreErrorKind::StaleClaim.as_str()),
        || format!("the child's late commit: {late:?}"),
    )?;
    s.commit(
        &t,
        Commit::new().fenced(mine.fence()).write(Write::EndRun {
            run_id: "r1".into(),
            end: RunEnd::Failed {
                reason: crate::agent::FailureReason::Abandoned,
                message: "its process stopped renewing".into(),
            },
        }),
    )
    .await?;
    Ok(Pass::Passed)
}

/// A command recorded in another process is not carried out again here.
pub async fn second_process_command_once(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    let k = CommandKey {
        scope: scope(),
        sender: "alice".into(),
        command_id: "c1".into(),
    };
    let Some(answers) = fx.in_child(&[ChildOp::Commit {
        thread: t.clone(),
        commit: Commit::new()
            .write(post("m1", "alice", "x"))
            .command(k.clone(), json!("from child")),
    }]) else {
        return Ok(Pass::Skipped("the fixture lends no second process".into()));
    };
    answers?.remove(0).ok()?;
    expect_kind(
        s.commit(
            &t,
            Commit::new()
                .write(post("m2", "alice", "x"))
                .command(k.clone(), json!("here")),
        )
        .await,
        StoreErrorKind::DuplicateCommand,
        "repeating the child's command here",
    )?;
    ensure(
        s.command_result(&k).await? == Some(json!("from child")),
        || "the remembered result is not the child's".into(),
    )?;
    Ok(Pass::Passed)
}
