//! Per-tenant quotas (bytes and files), checked inside the mutation's transaction against the `usage` table.

use burrow_backend::{Error, ErrorKind, Result, VPath};
use rusqlite::{Connection, OptionalExtension, params};

use crate::db::sql;
use crate::queries;

/// The most a tenant may store; `None` means no bound.
///
/// Every tenant gets the same quota. A mutation that would take a tenant past
/// it is refused with QuotaExceeded and writes nothing; a mutation that does
/// not grow usage (a shrinking overwrite, an edit that removes text, a
/// delete) is always allowed, even over the quota.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Quota {
    /// Most bytes of file content per tenant.
    pub max_bytes: Option<u64>,
    /// Most files per tenant.
    pub max_files: Option<u64>,
}

impl Quota {
    /// No bounds.
    pub fn unlimited() -> Self {
        Self::default()
    }

    fn is_unlimited(&self) -> bool {
        self.max_bytes.is_none() && self.max_files.is_none()
    }

    /// Refuses a change of `bytes` and `files` for `tenant` that would pass the quota.
    pub(crate) fn check(
        &self,
        conn: &Connection,
        tenant: &str,
        path: &VPath,
        bytes: i64,
        files: i64,
    ) -> Result<()> {
        if self.is_unlimited() || (bytes <= 0 && files <= 0) {
            return Ok(());
        }
        let (used_bytes, used_files) = usage(conn, tenant)?;
        if let Some(max) = self.max_files
            && files > 0
        {
            let after = used_files.saturating_add(files);
            if after > to_i64(max) {
                return Err(Error::refusal_at(
                    ErrorKind::QuotaExceeded,
                    path,
                    "writing ",
                    format!(
                        " would make {after} files, over this workspace's quota of {max} files; delete files you no longer need first."
                    ),
                ));
            }
        }
        if let Some(max) = self.max_bytes
            && bytes > 0
        {
            let after = used_bytes.saturating_add(bytes);
            if after > to_i64(max) {
                return Err(Error::refusal_at(
                    ErrorKind::QuotaExceeded,
                    path,
                    "writing ",
                    format!(
                        " would take this workspace to {after} bytes, over its quota of {max} bytes; delete files you no longer need first."
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// What a tenant stores now: (bytes, files).
pub(crate) fn usage(conn: &Connection, tenant: &str) -> Result<(i64, i64)> {
    let row = conn
        .prepare_cached(queries::USAGE_GET)
        .map_err(sql)?
        .query_row(params![tenant], |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()
        .map_err(sql)?;
    Ok(row.unwrap_or((0, 0)))
}

/// Adds `bytes` and `files` (either may be negative) to a tenant's usage.
pub(crate) fn add_usage(conn: &Connection, tenant: &str, bytes: i64, files: i64) -> Result<()> {
    if bytes == 0 && files == 0 {
        return Ok(());
    }
    conn.prepare_cached(queries::USAGE_ADD)
        .map_err(sql)?
        .execute(params![tenant, bytes, files])
        .map_err(sql)?;
    Ok(())
}

pub(crate) fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
