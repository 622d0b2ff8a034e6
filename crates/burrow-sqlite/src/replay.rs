//! The replay guard: a mutation carrying an effect key records its outcome in its own transaction, and a repeat returns it.
//!
//! The outcome recorded is what the caller saw: the success value, or a
//! refusal's kind and message. A failure records nothing (its transaction is
//! rolled back), so a retry after a failure really runs again. See ADR 0072.
//!
//! A record matches only the same operation on the same path (for a batch,
//! the same paths in the same order): the key of a write to `/a` given to a
//! write to `/b`, or to an edit, is refused and changes nothing, rather than
//! replaying an outcome that belongs to another change.
//!
//! The record layout stays this crate's own rather than
//! `burrow_backend::EffectRecord` (ADR 0014): that record names one path, and
//! a batch names its paths in order; and records of schema 2 and 3, kept in
//! `effects.outcome` as `{"ok": ..}` / `{"refused": ..}`, stay readable as they
//! are. The check is the same: another operation or another path is refused.
//!
//! A record's target (`effects.path`) is its paths in order, one per line,
//! each with `\` and a newline escaped (as `\\` and `\n`), so no two lists
//! of paths share a target; a path with neither (every path before this) is
//! stored as it is.

use std::borrow::Cow;

use burrow_backend::{Error, ErrorKind, Result, VPath, shown};
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
    paths: &[&VPath],
    now: &str,
    f: impl FnOnce(&Connection) -> Result<T>,
) -> Result<Result<T>>
where
    T: Serialize + DeserializeOwned,
{
    let Some(key) = effect_key else {
        return f(conn).map(Ok);
    };
    let target = target(paths);
    if let Some(record) = lookup(conn, tenant, key)? {
        return Ok(replay(key, op, &target, &record));
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
        .execute(params![
            tenant,
            key,
            op,
            outcome,
            now,
            target,
            jiff::Timestamp::now().as_millisecond()
        ])
        .map_err(sql)?;
    Ok(result)
}

/// A stored effect record.
struct Record {
    op: String,
    /// The path(s) it changed; "" for records migrated without one.
    target: String,
    outcome: String,
}

fn lookup(conn: &Connection, tenant: &str, key: &str) -> Result<Option<Record>> {
    conn.prepare_cached(queries::EFFECT_GET)
        .map_err(sql)?
        .query_row(params![tenant, key], |row| {
            Ok(Record {
                op: row.get(0)?,
                target: row.get(1)?,
                outcome: row.get(2)?,
            })
        })
        .optional()
        .map_err(sql)
}

/// The target of a batch of no paths: not a path, and not "" (a record of
/// schema 2 whose path is unknown, which matches any path).
const NO_PATHS: &str = "(no paths)";

/// The target of a record about `paths`: one per line, in order, escaped.
fn target(paths: &[&VPath]) -> String {
    if paths.is_empty() {
        return NO_PATHS.to_owned();
    }
    let escaped: Vec<Cow<'_, str>> = paths.iter().map(|p| escape(p.as_str())).collect();
    escaped.join("\n")
}

/// `path` with `\` and newlines escaped; as it is when it holds neither.
fn escape(path: &str) -> Cow<'_, str> {
    if path.contains(['\\', '\n']) {
        Cow::Owned(path.replace('\\', "\\\\").replace('\n', "\\n"))
    } else {
        Cow::Borrowed(path)
    }
}

/// The path [`escape`] made `line` from.
fn unescape(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// The path(s) a record names, for a message: one path, or a batch's first and count.
fn describe(target: &str) -> String {
    if target == NO_PATHS {
        return target.to_owned();
    }
    let mut lines = target.split('\n');
    let first = unescape(lines.next().unwrap_or_default());
    match lines.count() {
        0 => shown(&first).to_string(),
        more => format!("{} and {more} more", shown(&first)),
    }
}

fn replay<T: DeserializeOwned>(key: &str, op: &str, target: &str, record: &Record) -> Result<T> {
    // A record migrated from schema 2 may not know its path: it matches on the operation.
    let same_target = record.target.is_empty() || record.target == target;
    if record.op != op || !same_target {
        return Err(Error::invalid_argument(format!(
            "the effect key {:#} was already used by a {} of {}, not a {op} of {}; nothing was changed; use a new effect key for a new change.",
            shown(key),
            record.op,
            describe(&record.target),
            describe(target),
        )));
    }
    let recorded: Recorded<T> = serde_json::from_str(&record.outcome)
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
