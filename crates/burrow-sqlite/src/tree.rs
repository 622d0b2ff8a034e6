//! The file mutations as SQL on one open transaction: write, edit, delete, and the directory rows they keep.
//!
//! Directories are implicit: a row of `dirs` exists exactly while some file
//! lies beneath it, and carries the count of its direct entries (files and
//! subdirectories). Creating a file adds one entry to its parent, creating the
//! parent (and so on upwards) when it is new; deleting the last entry of a
//! directory removes it and one entry from its parent. See ADR 0071.
//!
//! A directory made with `make_dir` is a row marked `made`: it counts as an
//! entry of its parent like any directory, but stays when its count falls to
//! zero, until it is deleted (ADR 0221). `delete_tree` removes a subtree with
//! three statements over one index range each, in the caller's transaction.

use burrow_backend::text::{apply_edit, check_size, edit_result};
use burrow_backend::{EditResult, Error, Limits, Result, VPath, WriteResult};
use rusqlite::{Connection, OptionalExtension, params};

use crate::db::sql;
use crate::queries;
use crate::quota::{Quota, add_usage, to_i64};

/// The bounds a file backend applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Settings {
    pub(crate) limits: Limits,
    pub(crate) quota: Quota,
}

/// The stored facts about one file, without its content.
pub(crate) struct FileMeta {
    pub(crate) id: i64,
    pub(crate) size: i64,
}

pub(crate) fn file_meta(conn: &Connection, tenant: &str, path: &VPath) -> Result<Option<FileMeta>> {
    conn.prepare_cached(queries::FILE_META)
        .map_err(sql)?
        .query_row(params![tenant, path.as_str()], |row| {
            Ok(FileMeta {
                id: row.get(0)?,
                size: row.get(1)?,
            })
        })
        .optional()
        .map_err(sql)
}

/// True when `path` is a directory of `tenant` ("/" always is).
pub(crate) fn is_dir(conn: &Connection, tenant: &str, path: &VPath) -> Result<bool> {
    if path.is_root() {
        return Ok(true);
    }
    conn.prepare_cached(queries::DIR_EXISTS)
        .map_err(sql)?
        .exists(params![tenant, path.as_str()])
        .map_err(sql)
}

/// Creates or replaces the file at `path`.
pub(crate) fn write_file(
    conn: &Connection,
    settings: &Settings,
    tenant: &str,
    path: &VPath,
    bytes: &[u8],
    now: &str,
) -> Result<WriteResult> {
    if path.is_root() {
        return Err(Error::is_a_directory(path));
    }
    let len = bytes.len() as u64;
    check_size(path, len, settings.limits.max_file_size)?;
    let size = to_i64(len);
    match file_meta(conn, tenant, path)? {
        Some(meta) => {
            settings
                .quota
                .check(conn, tenant, path, size - meta.size, 0)?;
            update_content(conn, meta.id, bytes, now)?;
            add_usage(conn, tenant, size - meta.size, 0)?;
        }
        None => {
            if is_dir(conn, tenant, path)? {
                return Err(Error::is_a_directory(path));
            }
            let parent = path.parent().unwrap_or_else(VPath::root);
            check_parents(conn, tenant, &parent)?;
            settings.quota.check(conn, tenant, path, size, 1)?;
            conn.prepare_cached(queries::FILE_INSERT)
                .map_err(sql)?
                .execute(params![
                    tenant,
                    path.as_str(),
                    parent.as_str(),
                    path.name(),
                    size,
                    now,
                    bytes
                ])
                .map_err(sql)?;
            add_entry(conn, tenant, &parent)?;
            add_usage(conn, tenant, size, 1)?;
        }
    }
    Ok(WriteResult::written(path.as_str()))
}

/// Replaces `old` by `new` in the text file at `path`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn edit_file(
    conn: &Connection,
    settings: &Settings,
    tenant: &str,
    path: &VPath,
    old: &str,
    new: &str,
    replace_all: bool,
    now: &str,
) -> Result<EditResult> {
    let row = conn
        .prepare_cached(queries::FILE_CONTENT)
        .map_err(sql)?
        .query_row(
            params![
                tenant,
                path.as_str(),
                crate::query::max_param(settings.limits.max_file_size)
            ],
            |row| {
                // The content is NULL (unread) for a file past the max size.
                let content = match row.get_ref(2)? {
                    rusqlite::types::ValueRef::Null => None,
                    value => Some(value.as_bytes()?.to_vec()),
                };
                Ok((row.get::<_, i64>(0)?, row.get::<_, i64>(1)?, content))
            },
        )
        .optional()
        .map_err(sql)?;
    let Some((id, size, content)) = row else {
        return Err(missing_file(conn, tenant, path)?);
    };
    check_size(
        path,
        u64::try_from(size).unwrap_or(0),
        settings.limits.max_file_size,
    )?;
    let Some(content) = content else {
        return Err(Error::too_large(
            path,
            u64::try_from(size).unwrap_or(0),
            settings.limits.max_file_size,
        ));
    };
    let (edited, count) = apply_edit(path, &content, old, new, replace_all)?;
    let new_size = to_i64(edited.len() as u64);
    check_size(path, edited.len() as u64, settings.limits.max_file_size)?;
    settings
        .quota
        .check(conn, tenant, path, new_size - size, 0)?;
    update_content(conn, id, &edited, now)?;
    add_usage(conn, tenant, new_size - size, 0)?;
    Ok(edit_result(path, count))
}

/// Deletes the file at `path`; a directory is never empty here, so it is refused.
pub(crate) fn delete_file(conn: &Connection, tenant: &str, path: &VPath) -> Result<()> {
    if path.is_root() {
        return Err(Error::root_cannot_be_deleted());
    }
    match file_meta(conn, tenant, path)? {
        Some(meta) => {
            conn.prepare_cached(queries::FILE_DELETE)
                .map_err(sql)?
                .execute(params![meta.id])
                .map_err(sql)?;
            remove_entry(conn, tenant, &path.parent().unwrap_or_else(VPath::root))?;
            add_usage(conn, tenant, -meta.size, -1)
        }
        // A directory row at zero entries is a made, empty directory.
        None => match dir_state(conn, tenant, path)? {
            Some((0, _)) => {
                conn.prepare_cached(queries::DIR_DELETE)
                    .map_err(sql)?
                    .execute(params![tenant, path.as_str()])
                    .map_err(sql)?;
                remove_entry(conn, tenant, &path.parent().unwrap_or_else(VPath::root))
            }
            Some(_) => Err(Error::directory_not_empty(path)),
            None => Err(Error::not_found(path)),
        },
    }
}

/// Makes the directory `path` (with `parents`, its missing parents too), marked
/// made so that it stays until deleted; see `Backend::make_dir`. Refusals come
/// before any change.
pub(crate) fn make_dir(conn: &Connection, tenant: &str, path: &VPath, parents: bool) -> Result<()> {
    let existing = || {
        if parents {
            Ok(())
        } else {
            Err(Error::already_exists(path))
        }
    };
    if path.is_root() {
        return existing();
    }
    if file_meta(conn, tenant, path)?.is_some() {
        return Err(Error::already_exists(path));
    }
    match dir_state(conn, tenant, path)? {
        Some((_, true)) => return existing(),
        // An implicit directory: `mkdir -p` makes it one that stays.
        Some((_, false)) => {
            existing()?;
            conn.prepare_cached(queries::DIR_MARK_MADE)
                .map_err(sql)?
                .execute(params![tenant, path.as_str()])
                .map_err(sql)?;
            return Ok(());
        }
        None => {}
    }
    let parent = path.parent().unwrap_or_else(VPath::root);
    check_parents(conn, tenant, &parent)?;
    if !parents && !is_dir(conn, tenant, &parent)? {
        return Err(Error::not_found(&parent));
    }
    conn.prepare_cached(queries::DIR_INSERT_MADE)
        .map_err(sql)?
        .execute(params![tenant, path.as_str(), parent.as_str(), path.name()])
        .map_err(sql)?;
    add_entry(conn, tenant, &parent)
}

/// Deletes the file or directory at `path` with everything beneath it; see
/// `Backend::delete_tree`. The caller's transaction makes it all or nothing.
pub(crate) fn delete_tree(conn: &Connection, tenant: &str, path: &VPath) -> Result<()> {
    if path.is_root() {
        return Err(Error::root_cannot_be_deleted());
    }
    if file_meta(conn, tenant, path)?.is_some() {
        return delete_file(conn, tenant, path);
    }
    if dir_state(conn, tenant, path)?.is_none() {
        return Err(Error::not_found(path));
    }
    // Everything beneath "/d" lies in ("/d/", "/d0"): "0" is the byte after "/".
    let (low, high) = (format!("{}/", path.as_str()), format!("{}0", path.as_str()));
    let (files, bytes): (i64, i64) = conn
        .prepare_cached(queries::RANGE_USAGE)
        .map_err(sql)?
        .query_row(params![tenant, low, high], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })
        .map_err(sql)?;
    for statement in [queries::RANGE_DELETE_FILES, queries::RANGE_DELETE_DIRS] {
        conn.prepare_cached(statement)
            .map_err(sql)?
            .execute(params![tenant, low, high])
            .map_err(sql)?;
    }
    conn.prepare_cached(queries::DIR_DELETE)
        .map_err(sql)?
        .execute(params![tenant, path.as_str()])
        .map_err(sql)?;
    remove_entry(conn, tenant, &path.parent().unwrap_or_else(VPath::root))?;
    add_usage(conn, tenant, -bytes, -files)
}

/// The entry count of the directory `path` and whether it was made; `None` when no directory stands there.
fn dir_state(conn: &Connection, tenant: &str, path: &VPath) -> Result<Option<(i64, bool)>> {
    conn.prepare_cached(queries::DIR_STATE)
        .map_err(sql)?
        .query_row(params![tenant, path.as_str()], |row| {
            Ok((row.get(0)?, row.get::<_, i64>(1)? != 0))
        })
        .optional()
        .map_err(sql)
}

/// The refusal for a file operation on a path that holds no file: IsADirectory or NotFound.
pub(crate) fn missing_file(conn: &Connection, tenant: &str, path: &VPath) -> Result<Error> {
    if is_dir(conn, tenant, path)? {
        Ok(Error::is_a_directory(path))
    } else {
        Ok(Error::not_found(path))
    }
}

fn update_content(conn: &Connection, id: i64, bytes: &[u8], now: &str) -> Result<()> {
    conn.prepare_cached(queries::FILE_UPDATE)
        .map_err(sql)?
        .execute(params![id, to_i64(bytes.len() as u64), now, bytes])
        .map_err(sql)?;
    Ok(())
}

/// NotADirectory when `dir` or one of its ancestors is a file.
fn check_parents(conn: &Connection, tenant: &str, dir: &VPath) -> Result<()> {
    let mut cur = dir.clone();
    // A directory row implies every ancestor is a directory too.
    while !is_dir(conn, tenant, &cur)? {
        if file_meta(conn, tenant, &cur)?.is_some() {
            return Err(Error::not_a_directory(&cur));
        }
        cur = cur.parent().unwrap_or_else(VPath::root);
    }
    Ok(())
}

/// Counts a new entry in `dir`, creating it and its missing ancestors.
fn add_entry(conn: &Connection, tenant: &str, dir: &VPath) -> Result<()> {
    let mut cur = dir.clone();
    while !cur.is_root() {
        let changed = conn
            .prepare_cached(queries::DIR_INCREMENT)
            .map_err(sql)?
            .execute(params![tenant, cur.as_str()])
            .map_err(sql)?;
        if changed > 0 {
            return Ok(());
        }
        let parent = cur.parent().unwrap_or_else(VPath::root);
        conn.prepare_cached(queries::DIR_INSERT)
            .map_err(sql)?
            .execute(params![tenant, cur.as_str(), parent.as_str(), cur.name()])
            .map_err(sql)?;
        cur = parent;
    }
    Ok(())
}

/// Counts one entry fewer in `dir`, removing it (and emptied ancestors) at
/// zero, unless it was made.
fn remove_entry(conn: &Connection, tenant: &str, dir: &VPath) -> Result<()> {
    let mut cur = dir.clone();
    while !cur.is_root() {
        let left: Option<(i64, bool)> = conn
            .prepare_cached(queries::DIR_DECREMENT)
            .map_err(sql)?
            .query_row(params![tenant, cur.as_str()], |row| {
                Ok((row.get(0)?, row.get::<_, i64>(1)? != 0))
            })
            .optional()
            .map_err(sql)?;
        match left {
            Some((n, made)) if n > 0 || made => return Ok(()),
            Some(_) => {
                conn.prepare_cached(queries::DIR_DELETE)
                    .map_err(sql)?
                    .execute(params![tenant, cur.as_str()])
                    .map_err(sql)?;
            }
            None => {
                return Err(Error::failure_msg(format!(
                    "the SQLite store has no directory row for {cur}, which holds a file; the database is inconsistent."
                )));
            }
        }
        cur = cur.parent().unwrap_or_else(VPath::root);
    }
    Ok(())
}
