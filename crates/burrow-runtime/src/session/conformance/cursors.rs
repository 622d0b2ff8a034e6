//! Scenarios: named cursors move forward only, in the transaction of the write that consumes, never past the head.

use super::{Outcome, Pass, claim, ensure, expect_kind, post, start, thread};
use crate::session::types::Commit;
use crate::session::{Scope, StoreErrorKind};

/// A cursor moves to the larger of where it stands and the move; a lower move leaves it.
pub async fn cursors_only_move_forward(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    ensure(s.cursor(&t, "asked").await? == 0, || {
        "a cursor never moved is not 0".into()
    })?;
    s.commit(
        &t,
        Commit::new()
            .write(post("m1", "a", "1"))
            .write(post("m2", "a", "2"))
            .write(post("m3", "a", "3"))
            .cursor("asked", 3),
    )
    .await?;
    s.commit(&t, Commit::new().cursor("asked", 1)).await?;
    ensure(s.cursor(&t, "asked").await? == 3, || {
        "a cursor moved back".into()
    })?;
    s.commit(&t, Commit::new().cursor("taken", 2).cursor("taken", 1))
        .await?;
    ensure(s.cursor(&t, "taken").await? == 2, || {
        "two moves in one commit did not keep the larger".into()
    })?;
    Ok(Pass::Passed)
}

/// A cursor saved with a write moves only if the write commits.
pub async fn a_cursor_moves_with_its_write_or_not_at_all(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    s.commit(
        &t,
        Commit::new()
            .write(post("m1", "alice", "go"))
            .cursor("asked", 1),
    )
    .await?;
    let c = claim(&*s, &t, "h1").await?;
    s.commit(
        &t,
        Commit::new()
            .fenced(c.fence())
            .write(start("r1", &["m1"]))
            .cursor("taken", 1),
    )
    .await?;
    ensure(s.cursor(&t, "taken").await? == 1, || {
        "the cursor did not move with the run's start".into()
    })?;
    s.commit(
        &t,
        Commit::new()
            .write(post("m2", "alice", "more"))
            .cursor("asked", 3),
    )
    .await?;
    expect_kind(
        s.commit(
            &t,
            Commit::new()
                .fenced(c.fence())
                .write(start("r2", &["m2"]))
                .cursor("taken", 3),
        )
        .await,
        StoreErrorKind::InvalidState,
        "starting a second run while r1 runs",
    )?;
    ensure(s.cursor(&t, "taken").await? == 1, || {
        "the cursor moved although its write was refused".into()
    })?;
    Ok(Pass::Passed)
}

/// A cursor cannot move past the thread's head after the commit.
pub async fn a_cursor_cannot_pass_the_head(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    expect_kind(
        s.commit(
            &t,
            Commit::new().write(post("m1", "a", "x")).cursor("asked", 2),
        )
        .await,
        StoreErrorKind::InvalidArgument,
        "moving a cursor past the head",
    )?;
    s.commit(
        &t,
        Commit::new().write(post("m1", "a", "x")).cursor("asked", 1),
    )
    .await?;
    ensure(s.cursor(&t, "asked").await? == 1, || {
        "cursor not at 1".into()
    })?;
    Ok(Pass::Passed)
}

/// With an expected position the move is a compare-and-set.
pub async fn an_expected_cursor_is_compare_and_set(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    s.commit(
        &t,
        Commit::new()
            .write(post("m1", "a", "1"))
            .write(post("m2", "a", "2")),
    )
    .await?;
    s.commit(&t, Commit::new().cursor_from("taken", 0, 1))
        .await?;
    let err = expect_kind(
        s.commit(&t, Commit::new().cursor_from("taken", 0, 2)).await,
        StoreErrorKind::Conflict,
        "moving from 0 when the cursor stands at 1",
    )?;
    ensure(err.message().contains("1"), || {
        format!("the conflict does not say where the cursor stands: {err}")
    })?;
    s.commit(&t, Commit::new().cursor_from("taken", 1, 2))
        .await?;
    ensure(s.cursor(&t, "taken").await? == 2, || {
        "cursor not at 2".into()
    })?;
    Ok(Pass::Passed)
}

/// Threads whose `asked` stands past `taken` are listed (every workspace), the others not.
pub async fn lagging_threads_are_listed(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let other = Scope::new("tenant-b", "workspace-9").thread("t9");
    for (t, taken) in [(thread("t1"), 1), (thread("t2"), 0), (other.clone(), 0)] {
        let id = format!("m-{}", t.thread);
        s.commit(
            &t,
            Commit::new()
                .write(post(&id, "a", "x"))
                .cursor("asked", 1)
                .cursor("taken", taken),
        )
        .await?;
    }
    let lagging = s.lagging_threads("asked", "taken", 10).await?;
    let want = vec![thread("t2"), other];
    ensure(lagging == want, || format!("lagging: {lagging:?}"))?;
    let one = s.lagging_threads("asked", "taken", 1).await?;
    ensure(one.len() == 1, || format!("limit 1 gave {}", one.len()))?;
    Ok(Pass::Passed)
}

/// `cursor_to_head` moves the cursor to the commit's own last seq, whatever commits came before.
pub async fn a_cursor_can_move_to_the_commits_head(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    s.commit(&t, Commit::new().write(post("m1", "a", "1")))
        .await?;
    let done = s
        .commit(
            &t,
            Commit::new()
                .write(post("m2", "b", "2"))
                .cursor_to_head("asked"),
        )
        .await?;
    ensure(done.seqs == vec![2], || format!("seqs {:?}", done.seqs))?;
    ensure(s.cursor(&t, "asked").await? == 2, || {
        "the cursor is not at the commit's seq".into()
    })?;
    Ok(Pass::Passed)
}
