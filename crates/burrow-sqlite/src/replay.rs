//! The replay guard: a mutation carrying an effect key records its outcome in its own transaction, and a repeat returns it.
//!
//! The outcome recorded is what the caller saw: the success value, or a
//! refusal's kind and message. A failure records nothing (its transaction is
//! rolled back), so a retry after a failure really runs again. See ADR 0072.

use burrow_backend::{Error, ErrorKind, Result};
use rusqlite::{Connection, OptionalExtension, params};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::db::sql;
use crate::queries;

/// An outcome as stored in `effects.outcome` (JSON).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Recorded<T> {
    /// The mutation succeeded with this value.
    Ok(T),
    /// The mutation was refused.
    Refused { kind: String, message: String },
}

/// Runs the mutation `f` on the open write transaction `conn`, at most once per effect key.
///
/// The outer `Result` is for the transaction: `Err` rolls it back. The inner
/// one is the outcome to hand the caller; a refusal under an effect key is an
/// `Ok(Err(..))`, so the record of it is committed while `f`'s changes (rolled
/// back to a savepoint) are not.
pub(crate) fn guarded<T>(
    conn: &Connection,
    tenant: &str,
    effect_key: Option<&str>,
    op: &str,
    now: &str,
    f: impl FnOnce(&Connection) -> Result<T>,
) -> Result<Result<T>>
where
    T: Serialize + DeserializeOwned,
{
    let Some(key) = effect_key else {
        return f(conn).map(Ok);
    };
    if let Some((recorded_op, outcome)) = lookup(conn, tenant, key)? {
        return Ok(replay(key, op, &recorded_op, &outcome));
    }
    conn.execute_batch("SAVEPOINT burrow_effect").map_err(sql)?;
    let result = f(conn);
    let outcome = match &result {
        Ok(value) => serde_json::to_string(&Recorded::Ok(value)),
        Err(err) if err.is_refusal() => {
            conn.execute_batch("ROLLBACK TO burrow_effect")
                .map_err(sql)?;
            serde_json::to_string(&Recorded::<()>::Refused {
                kind: err.kind().as_str().to_owned(),
                message: err.message().to_owned(),
            })
        }
        Err(_) => return result.map(Ok),
    }
    .map_err(|e| Error::failure("the outcome of a change could not be recorded", e))?;
    conn.execute_batch("RELEASE burrow_effect").map_err(sql)?;
    conn.prepare_cached(queries::EFFECT_PUT)
        .map_err(sql)?
        .execute(params![tenant, key, op, outcome, now])
        .map_err(sql)?;
    Ok(result)
}

fn lookup(conn: &Connection, tenant: &str, key: &str) -> Result<Option<(String, String)>> {
    conn.prepare_cached(queries::EFFECT_GET)
        .map_err(sql)?
        .query_row(params![tenant, key], |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()
        .map_err(sql)
}

fn replay<T: DeserializeOwned>(key: &str, op: &str, recorded_op: &str, outcome: &str) -> Result<T> {
    if recorded_op != op {
        return Err(Error::invalid_argument(format!(
            "the effect key \"{key}\" was already used by a {recorded_op}, not a {op}; use a new effect key for a new change."
        )));
    }
    let recorded: Recorded<T> = serde_json::from_str(outcome)
        .map_err(|e| Error::failure("a recorded outcome in the SQLite store is unreadable", e))?;
    match recorded {
        Recorded::Ok(value) => Ok(value),
        Recorded::Refused { kind, message } => match ErrorKind::from_name(&kind) {
            Some(kind) if kind != ErrorKind::Failure => Err(Error::refusal(kind, message)),
            _ => Err(Error::failure_msg(format!(
                "a recorded outcome in the SQLite store has an unknown refusal kind \"{kind}\"."
            ))),
        },
    }
}
