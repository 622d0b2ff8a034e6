//! A thread's claim: acquired when free or lapsed (with a greater token), renewed and released only by its holder.

use std::time::Duration;

use super::{ClaimRow, check_name};
use crate::session::clock::duration_ms;
use crate::session::error::{StoreError, StoreErrorKind, StoreResult};
use crate::session::types::{Claim, ClaimAttempt};

fn check_ttl(ttl: Duration) -> StoreResult<i64> {
    let ms = duration_ms(ttl);
    if ms <= 0 {
        return Err(StoreError::invalid_argument(
            "a claim's TTL must be at least one millisecond",
        ));
    }
    Ok(ms)
}

/// Acquiring a claim: the attempt's answer and the row to save, if it changes.
pub(crate) fn acquire(
    row: Option<&ClaimRow>,
    holder: &str,
    now: i64,
    ttl: Duration,
) -> StoreResult<(ClaimAttempt, Option<ClaimRow>)> {
    check_name("claim holder", holder)?;
    let ttl = check_ttl(ttl)?;
    let expires_at_ms = now.saturating_add(ttl);
    let last_token = row.map_or(0, |r| r.token);
    match row.and_then(ClaimRow::current) {
        Some(live) if live.holder == holder => {
            let claim = Claim {
                expires_at_ms,
                ..live
            };
            let row = ClaimRow {
                holder: Some(claim.holder.clone()),
                token: claim.token,
                expires_at_ms,
            };
            Ok((ClaimAttempt::Granted(claim), Some(row)))
        }
        Some(live) if now < live.expires_at_ms => Ok((ClaimAttempt::Busy(live), None)),
        _ => {
            let claim = Claim {
                holder: holder.to_string(),
                token: last_token + 1,
                expires_at_ms,
            };
            let row = ClaimRow {
                holder: Some(claim.holder.clone()),
                token: claim.token,
                expires_at_ms,
            };
            Ok((ClaimAttempt::Granted(claim), Some(row)))
        }
    }
}

fn is_current(row: Option<&ClaimRow>, claim: &Claim) -> bool {
    row.and_then(ClaimRow::current)
        .is_some_and(|c| c.holder == claim.holder && c.token == claim.token)
}

/// Renewing a claim: the renewed claim and the row to save.
pub(crate) fn renew(
    row: Option<&ClaimRow>,
    claim: &Claim,
    now: i64,
    ttl: Duration,
) -> StoreResult<(Claim, ClaimRow)> {
    let ttl = check_ttl(ttl)?;
    if !is_current(row, claim) {
        return Err(StoreError::new(
            StoreErrorKind::StaleClaim,
            format!(
                "the claim with token {} was released or taken over",
                claim.token
            ),
        ));
    }
    let renewed = Claim {
        expires_at_ms: now.saturating_add(ttl),
        ..claim.clone()
    };
    let row = ClaimRow {
        holder: Some(renewed.holder.clone()),
        token: renewed.token,
        expires_at_ms: renewed.expires_at_ms,
    };
    Ok((renewed, row))
}

/// Releasing a claim: the row to save when it was current.
pub(crate) fn release(row: Option<&ClaimRow>, claim: &Claim) -> Option<ClaimRow> {
    if is_current(row, claim) {
        Some(ClaimRow {
            holder: None,
            token: claim.token,
            expires_at_ms: claim.expires_at_ms,
        })
    } else {
        None
    }
}
