//! The schema and its migrations, run on open and tracked by `PRAGMA user_version`.
//!
//! Each migration takes the database from version `n` to `n + 1` inside the
//! same `BEGIN IMMEDIATE` transaction that bumps `user_version`, so an old
//! file opened by a newer burrow is upgraded once, by one process, atomically;
//! the other processes opening it at the same moment wait, then see the new
//! version and skip. A file written by a *newer* burrow is refused, never
//! downgraded. See ADR 0074.

use std::collections::BTreeMap;

use burrow_backend::{Error, Result, VPath};
use rusqlite::{Connection, TransactionBehavior, params};

use crate::db::sql;

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = 4;

/// Version 1: key/value items, files (with their parent directory for
/// indexed listings), and recorded effect outcomes.
const V1: &str = "
CREATE TABLE kv (
    tenant     TEXT NOT NULL,
    namespace  TEXT NOT NULL,
    key        TEXT NOT NULL,
    value      TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (tenant, namespace, key)
) WITHOUT ROWID;

CREATE TABLE files (
    id          INTEGER PRIMARY KEY,
    tenant      TEXT NOT NULL,
    path        TEXT NOT NULL,
    parent      TEXT NOT NULL,
    name        TEXT NOT NULL,
    size        INTEGER NOT NULL,
    created_at  TEXT NOT NULL,
    modified_at TEXT NOT NULL,
    content     BLOB NOT NULL,
    UNIQUE (tenant, path)
);
CREATE INDEX files_by_parent ON files (tenant, parent, name, size, modified_at);

CREATE TABLE effects (
    tenant     TEXT NOT NULL,
    effect_key TEXT NOT NULL,
    op         TEXT NOT NULL,
    outcome    TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (tenant, effect_key)
) WITHOUT ROWID;
";

/// Version 2: implicit directories kept as rows with a count of their direct
/// entries (ADR 0071), and per-tenant usage for quotas (ADR 0072).
const V2: &str = "
CREATE TABLE dirs (
    tenant  TEXT NOT NULL,
    path    TEXT NOT NULL,
    parent  TEXT NOT NULL,
    name    TEXT NOT NULL,
    entries INTEGER NOT NULL,
    PRIMARY KEY (tenant, path)
) WITHOUT ROWID;
CREATE INDEX dirs_by_parent ON dirs (tenant, parent, name);

CREATE TABLE usage (
    tenant TEXT NOT NULL PRIMARY KEY,
    bytes  INTEGER NOT NULL,
    files  INTEGER NOT NULL
) WITHOUT ROWID;

INSERT INTO usage (tenant, bytes, files)
    SELECT tenant, SUM(size), COUNT(*) FROM files GROUP BY tenant;
";

/// Version 3: each effect record names the path(s) it changed, so a key
/// replays only for the same operation on the same path, and carries its time
/// as an integer (Unix milliseconds) under an index, so pruning is an index
/// range (ADRs 0072, 0074). Records of version 2 get the path their success
/// outcome names (write, edit), or "" (unknown: they match on the operation
/// alone, as before), and their time from `created_at`.
const V3: &str = "
ALTER TABLE effects ADD COLUMN path TEXT NOT NULL DEFAULT '';
ALTER TABLE effects ADD COLUMN created_ms INTEGER NOT NULL DEFAULT 0;
UPDATE effects SET
    path = CASE
        WHEN op IN ('write', 'edit') AND json_valid(outcome)
            THEN coalesce(json_extract(outcome, '$.ok.path'), '')
        ELSE ''
    END,
    created_ms = coalesce(CAST(round((julianday(created_at) - 2440587.5) * 86400000.0) AS INTEGER), 0);
CREATE INDEX effects_by_time ON effects (created_ms);
";

/// Version 4: a directory row can be *made* (`make_dir`): it stays, with no
/// entries, until it is deleted, where an implicit one goes with its last
/// entry (ADR 0221). Every row of version 3 is implicit.
const V4: &str = "
ALTER TABLE dirs ADD COLUMN made INTEGER NOT NULL DEFAULT 0;
";

/// Brings the database to [`SCHEMA_VERSION`], one migration per transaction.
pub(crate) fn migrate(conn: &mut Connection) -> Result<()> {
    loop {
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql)?;
        let version: i64 = tx
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .map_err(sql)?;
        match version {
            SCHEMA_VERSION => return Ok(()),
            0 => tx.execute_batch(V1).map_err(sql)?,
            1 => {
                tx.execute_batch(V2).map_err(sql)?;
                backfill_dirs(&tx)?;
            }
            2 => tx.execute_batch(V3).map_err(sql)?,
            3 => tx.execute_batch(V4).map_err(sql)?,
            newer if newer > SCHEMA_VERSION => {
                return Err(Error::failure_msg(format!(
                    "the SQLite database has schema version {newer}, newer than this burrow understands ({SCHEMA_VERSION}); upgrade burrow to open it."
                )));
            }
            other => {
                return Err(Error::failure_msg(format!(
                    "the SQLite database has an unknown schema version {other}; it was not written by burrow."
                )));
            }
        }
        tx.pragma_update(None, "user_version", version + 1)
            .map_err(sql)?;
        tx.commit().map_err(sql)?;
    }
}

/// Fills `dirs` from the files of a version 1 database.
fn backfill_dirs(conn: &Connection) -> Result<()> {
    // (tenant, dir path) -> number of direct entries.
    let mut entries: BTreeMap<(String, VPath), i64> = BTreeMap::new();
    let mut stmt = conn
        .prepare("SELECT tenant, path FROM files ORDER BY tenant, path")
        .map_err(sql)?;
    let mut rows = stmt.query([]).map_err(sql)?;
    while let Some(row) = rows.next().map_err(sql)? {
        let tenant: String = row.get(0).map_err(sql)?;
        let path: String = row.get(1).map_err(sql)?;
        let path = VPath::parse(&path)
            .map_err(|e| Error::failure("the SQLite database holds a malformed file path", e))?;
        // The file counts in its parent; each directory newly seen counts in its own parent.
        let mut child = path;
        while let Some(parent) = child.parent() {
            if parent.is_root() {
                break;
            }
            let key = (tenant.clone(), parent.clone());
            let seen = entries.contains_key(&key);
            *entries.entry(key).or_insert(0) += 1;
            if seen {
                break;
            }
            child = parent;
        }
    }
    let mut insert = conn
        .prepare(
            "INSERT INTO dirs (tenant, path, parent, name, entries) VALUES (?1, ?2, ?3, ?4, ?5)",
        )
        .map_err(sql)?;
    for ((tenant, dir), count) in &entries {
        let parent = dir.parent().unwrap_or_else(VPath::root);
        insert
            .execute(params![
                tenant,
                dir.as_str(),
                parent.as_str(),
                dir.name(),
                count
            ])
            .map_err(sql)?;
    }
    Ok(())
}
