//! Scenarios: a tool call is recorded started (with its effect key) before it runs and finished (with its result) after; a finished call is replayed, never re-run.

use super::{Outcome, Pass, ScenarioError, claim, ensure, expect_kind, scope, start, thread};
use crate::message::ToolResult;
use crate::session::types::{Commit, ToolCallStatus, Write};
use crate::session::{Fence, SessionStore, StoreErrorKind, ThreadKey};

pub(crate) fn started(run: &str, call: &str, key: Option<&str>) -> Write {
    Write::ToolStarted {
        run_id: run.into(),
        call_id: call.into(),
        name: "write_file".into(),
        effect_key: key.map(str::to_string),
    }
}

pub(crate) fn finished(run: &str, call: &str, content: &str) -> Write {
    Write::ToolFinished {
        run_id: run.into(),
        call_id: call.into(),
        result: ToolResult {
            call_id: call.into(),
            name: "write_file".into(),
            content: content.into(),
            is_error: false,
        },
    }
}

async fn running(s: &dyn SessionStore, t: &ThreadKey) -> Result<Fence, ScenarioError> {
    let c = claim(s, t, "h1").await?;
    s.commit(t, Commit::new().fenced(c.fence()).write(start("r1", &[])))
        .await?;
    Ok(c.fence())
}

/// A call's record holds its name and effect key when started, and its result once finished, in start order.
pub async fn a_tool_call_is_recorded_started_then_finished(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    let f = running(&*s, &t).await?;
    s.commit(
        &t,
        Commit::new()
            .fenced(f.clone())
            .write(started("r1", "c2", Some("key-2")))
            .write(started("r1", "c1", None)),
    )
    .await?;
    let calls = s.tool_calls(&scope(), "r1").await?;
    let ids: Vec<&str> = calls.iter().map(|c| c.call_id.as_str()).collect();
    ensure(ids == ["c2", "c1"], || {
        format!("calls not in start order: {ids:?}")
    })?;
    ensure(
        calls[0].status == ToolCallStatus::Started
            && calls[0].effect_key.as_deref() == Some("key-2")
            && calls[0].attempts == 1
            && calls[0].result.is_none(),
        || format!("started record: {:?}", calls[0]),
    )?;
    s.commit(
        &t,
        Commit::new()
            .fenced(f)
            .write(finished("r1", "c2", "wrote 3 lines")),
    )
    .await?;
    let calls = s.tool_calls(&scope(), "r1").await?;
    ensure(
        calls[0].status == ToolCallStatus::Finished
            && calls[0]
                .result
                .as_ref()
                .is_some_and(|r| r.content == "wrote 3 lines")
            && calls[0].finished_at_ms.is_some()
            && calls[1].status == ToolCallStatus::Started,
        || format!("records after finishing c2: {calls:?}"),
    )?;
    Ok(Pass::Passed)
}

/// Starting or finishing a finished call again is refused; its result stays.
pub async fn a_finished_call_is_never_started_again(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    let f = running(&*s, &t).await?;
    s.commit(
        &t,
        Commit::new()
            .fenced(f.clone())
            .write(started("r1", "c1", Some("k")))
            .write(finished("r1", "c1", "done")),
    )
    .await?;
    expect_kind(
        s.commit(
            &t,
            Commit::new()
                .fenced(f.clone())
                .write(started("r1", "c1", Some("k"))),
        )
        .await,
        StoreErrorKind::InvalidState,
        "starting a finished call again",
    )?;
    expect_kind(
        s.commit(
            &t,
            Commit::new().fenced(f).write(finished("r1", "c1", "other")),
        )
        .await,
        StoreErrorKind::InvalidState,
        "finishing a finished call again",
    )?;
    let calls = s.tool_calls(&scope(), "r1").await?;
    ensure(
        calls.len() == 1
            && calls[0].attempts == 1
            && calls[0]
                .result
                .as_ref()
                .is_some_and(|r| r.content == "done"),
        || format!("the finished call changed: {calls:?}"),
    )?;
    Ok(Pass::Passed)
}

/// A started call that never finished (its process died) can be started again: one more attempt, same effect key.
pub async fn an_unfinished_call_can_be_restarted(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    let f = running(&*s, &t).await?;
    s.commit(
        &t,
        Commit::new()
            .fenced(f.clone())
            .write(started("r1", "c1", Some("k"))),
    )
    .await?;
    s.commit(
        &t,
        Commit::new()
            .fenced(f.clone())
            .write(started("r1", "c1", Some("k"))),
    )
    .await?;
    s.commit(
        &t,
        Commit::new().fenced(f).write(finished("r1", "c1", "ok")),
    )
    .await?;
    let calls = s.tool_calls(&scope(), "r1").await?;
    ensure(
        calls.len() == 1
            && calls[0].attempts == 2
            && calls[0].effect_key.as_deref() == Some("k")
            && calls[0].status == ToolCallStatus::Finished,
        || format!("the restarted call: {calls:?}"),
    )?;
    Ok(Pass::Passed)
}

/// Finishing a call that was never started is refused, and so is a result for another call.
pub async fn finishing_an_unstarted_call_is_not_found(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    let f = running(&*s, &t).await?;
    expect_kind(
        s.commit(
            &t,
            Commit::new()
                .fenced(f.clone())
                .write(finished("r1", "c9", "x")),
        )
        .await,
        StoreErrorKind::NotFound,
        "finishing a call never started",
    )?;
    s.commit(
        &t,
        Commit::new()
            .fenced(f.clone())
            .write(started("r1", "c1", None)),
    )
    .await?;
    let wrong = Write::ToolFinished {
        run_id: "r1".into(),
        call_id: "c1".into(),
        result: ToolResult {
            call_id: "c2".into(),
            name: "write_file".into(),
            content: "x".into(),
            is_error: false,
        },
    };
    expect_kind(
        s.commit(&t, Commit::new().fenced(f).write(wrong)).await,
        StoreErrorKind::InvalidArgument,
        "finishing c1 with c2's result",
    )?;
    Ok(Pass::Passed)
}
