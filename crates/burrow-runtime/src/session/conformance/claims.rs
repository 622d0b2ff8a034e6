//! Scenarios: one live claim per thread, a fencing token that only grows, renewal, release, and takeover of a lapsed claim, all on the fixture's clock.

use std::time::Duration;

use super::{Outcome, Pass, ScenarioError, TTL, claim, ensure, expect_kind, post, start, thread};
use crate::session::types::{ClaimAttempt, Commit};
use crate::session::{RunStatus, StoreErrorKind};

/// The first claimant is granted token 1; a second holder is busy and told whose claim it is.
pub async fn a_claim_is_granted_once_and_busy_for_others(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    let a = claim(&*s, &t, "alice-1").await?;
    let now = s.now_ms();
    ensure(
        a.token == 1 && a.holder == "alice-1" && a.expires_at_ms == now + 30_000,
        || format!("first claim: {a:?} (now {now})"),
    )?;
    match s.acquire_claim(&t, "bob-1", TTL).await? {
        ClaimAttempt::Busy(held) => ensure(held == a, || {
            format!("busy answer names {held:?}, not {a:?}")
        })?,
        ClaimAttempt::Granted(c) => {
            return Err(ScenarioError::new(format!(
                "a second holder was granted a live claim: {c:?}"
            )));
        }
    }
    let current = s.claim(&t).await?;
    ensure(current.as_ref() == Some(&a), || {
        format!("claim(): {current:?}")
    })?;
    // Another thread's claim is independent.
    let other = claim(&*s, &thread("t2"), "bob-1").await?;
    ensure(other.token == 1, || {
        format!("t2's first token: {}", other.token)
    })?;
    Ok(Pass::Passed)
}

/// After a release the next holder is granted a greater token; the same holder too.
pub async fn a_released_claim_goes_to_the_next_with_a_greater_token(
    fx: &super::Fixture,
) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    let a = claim(&*s, &t, "alice-1").await?;
    ensure(s.release_claim(&t, &a).await?, || {
        "releasing a current claim said false".into()
    })?;
    ensure(s.claim(&t).await?.is_none(), || {
        "a released claim is still reported".into()
    })?;
    let b = claim(&*s, &t, "bob-1").await?;
    ensure(b.token > a.token, || {
        format!("token did not grow: {} then {}", a.token, b.token)
    })?;
    ensure(s.release_claim(&t, &b).await?, || {
        "release said false".into()
    })?;
    let a2 = claim(&*s, &t, "alice-1").await?;
    ensure(a2.token > b.token, || {
        format!(
            "token did not grow for a returning holder: {} then {}",
            b.token, a2.token
        )
    })?;
    Ok(Pass::Passed)
}

/// Once a claim lapses another holder takes it over; the old holder's fenced commit and renewal are refused and leave nothing.
pub async fn a_lapsed_claim_is_taken_over_and_fences_out_the_old_holder(
    fx: &super::Fixture,
) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    let a = claim(&*s, &t, "alice-1").await?;
    s.commit(&t, Commit::new().fenced(a.fence()).write(start("r1", &[])))
        .await?;
    fx.clock().advance(Duration::from_millis(29_999));
    ensure(
        matches!(
            s.acquire_claim(&t, "bob-1", TTL).await?,
            ClaimAttempt::Busy(_)
        ),
        || "the claim was taken 1 ms before it lapsed".into(),
    )?;
    fx.clock().advance(Duration::from_millis(1));
    let b = claim(&*s, &t, "bob-1").await?;
    ensure(b.token == a.token + 1, || {
        format!("takeover token {} after {}", b.token, a.token)
    })?;
    let head = s.thread(&t).await?.map_or(0, |i| i.head_seq);
    expect_kind(
        s.commit(
            &t,
            Commit::new()
                .fenced(a.fence())
                .write(post("late", "alice", "late"))
                .write(crate::session::Write::EndRun {
                    run_id: "r1".into(),
                    end: crate::session::RunEnd::Completed,
                }),
        )
        .await,
        StoreErrorKind::StaleClaim,
        "the old holder's commit after a takeover",
    )?;
    expect_kind(
        s.renew_claim(&t, &a, TTL).await,
        StoreErrorKind::StaleClaim,
        "the old holder renewing after a takeover",
    )?;
    ensure(
        s.thread(&t).await?.map_or(0, |i| i.head_seq) == head
            && s.message(&t.scope, "late").await?.is_none(),
        || "the refused commit left something".into(),
    )?;
    // The new holder records the run left behind as abandoned.
    s.commit(
        &t,
        Commit::new()
            .fenced(b.fence())
            .write(crate::session::Write::EndRun {
                run_id: "r1".into(),
                end: crate::session::RunEnd::Failed {
                    reason: crate::agent::FailureReason::Abandoned,
                    message: "its claim lapsed".into(),
                },
            }),
    )
    .await?;
    let r = s.run(&t.scope, "r1").await?;
    ensure(
        r.as_ref().is_some_and(|r| {
            r.status == RunStatus::Failed && r.reason.as_deref() == Some("abandoned")
        }),
        || format!("the abandoned run: {r:?}"),
    )?;
    Ok(Pass::Passed)
}

/// A lapsed claim that nobody took over still renews and still fences its holder's commits.
pub async fn a_lapsed_claim_nobody_took_still_renews_and_fences(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    let a = claim(&*s, &t, "alice-1").await?;
    fx.clock().advance(Duration::from_secs(45));
    s.commit(&t, Commit::new().fenced(a.fence()).write(start("r1", &[])))
        .await?;
    let renewed = s.renew_claim(&t, &a, TTL).await?;
    let now = s.now_ms();
    ensure(
        renewed.token == a.token && renewed.expires_at_ms == now + 30_000,
        || format!("renewed: {renewed:?} (now {now})"),
    )?;
    ensure(
        matches!(
            s.acquire_claim(&t, "bob-1", TTL).await?,
            ClaimAttempt::Busy(_)
        ),
        || "a renewed claim was taken over".into(),
    )?;
    Ok(Pass::Passed)
}

/// The holder acquiring again renews: same token, later expiry.
pub async fn the_same_holder_reacquiring_renews(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    let a = claim(&*s, &t, "alice-1").await?;
    fx.clock().advance(Duration::from_secs(10));
    let again = claim(&*s, &t, "alice-1").await?;
    ensure(
        again.token == a.token && again.expires_at_ms == a.expires_at_ms + 10_000,
        || format!("re-acquired {again:?} after {a:?}"),
    )?;
    Ok(Pass::Passed)
}

/// Releasing a claim that is not current (taken over, released, someone else's) changes nothing.
pub async fn releasing_a_stale_claim_is_a_no_op(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    let t = thread("t1");
    let a = claim(&*s, &t, "alice-1").await?;
    fx.clock().advance(Duration::from_secs(31));
    let b = claim(&*s, &t, "bob-1").await?;
    ensure(!s.release_claim(&t, &a).await?, || {
        "releasing a taken-over claim said true".into()
    })?;
    ensure(s.claim(&t).await?.as_ref() == Some(&b), || {
        "releasing a stale claim changed the current one".into()
    })?;
    let forged = crate::session::Claim {
        holder: "bob-1".into(),
        token: a.token,
        expires_at_ms: b.expires_at_ms,
    };
    ensure(!s.release_claim(&t, &forged).await?, || {
        "a claim with the right holder and a wrong token was released".into()
    })?;
    ensure(s.release_claim(&t, &b).await?, || {
        "release said false".into()
    })?;
    ensure(!s.release_claim(&t, &b).await?, || {
        "releasing twice said true twice".into()
    })?;
    Ok(Pass::Passed)
}

/// A claim must last at least a millisecond.
pub async fn a_zero_ttl_is_refused(fx: &super::Fixture) -> Outcome {
    let s = fx.store();
    expect_kind(
        s.acquire_claim(&thread("t1"), "alice-1", Duration::ZERO)
            .await,
        StoreErrorKind::InvalidArgument,
        "a zero TTL",
    )?;
    ensure(s.claim(&thread("t1")).await?.is_none(), || {
        "a refused claim was stored".into()
    })?;
    Ok(Pass::Passed)
}
