//! The file reads as SQL on one read transaction: read, ls, glob and grep, each an indexed lookup or range scan.

use burrow_backend::text::read_window;
use burrow_backend::{
    CompiledGrep, Error, FileInfo, Glob, GlobResult, GrepCollector, GrepQuery, GrepResult,
    LineWindow, Listing, Result, VPath, grep_file,
};
use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::db::sql;
use crate::queries;
use crate::tree::{Settings, file_meta, is_dir, missing_file};

/// The exact bytes of the file at `path`.
pub(crate) fn read_bytes(
    conn: &Connection,
    settings: &Settings,
    tenant: &str,
    path: &VPath,
) -> Result<Vec<u8>> {
    let mut stmt = conn.prepare_cached(queries::FILE_CONTENT).map_err(sql)?;
    let max = settings.limits.max_file_size;
    let row = stmt
        .query_row(params![tenant, path.as_str(), max_param(max)], |row| {
            let size: i64 = row.get(1)?;
            let size = u64::try_from(size).unwrap_or(0);
            if size > max {
                // The query left the blob of a refused file unread (NULL).
                return Ok(Err(size));
            }
            Ok(Ok(content(row, 2)?))
        })
        .optional()
        .map_err(sql)?;
    match row {
        Some(Ok(bytes)) => Ok(bytes),
        Some(Err(size)) => Err(Error::too_large(path, size, settings.limits.max_file_size)),
        None => Err(missing_file(conn, tenant, path)?),
    }
}

/// A window of lines of the text file at `path`.
pub(crate) fn read(
    conn: &Connection,
    settings: &Settings,
    tenant: &str,
    path: &VPath,
    offset: usize,
    limit: usize,
) -> Result<LineWindow> {
    let bytes = read_bytes(conn, settings, tenant, path)?;
    read_window(path, &bytes, offset, limit)
}

/// The entries directly beneath `dir`: two index range scans (subdirectories, files) merged by name.
pub(crate) fn ls(
    conn: &Connection,
    settings: &Settings,
    tenant: &str,
    dir: &VPath,
    limit: usize,
) -> Result<Listing> {
    if !is_dir(conn, tenant, dir)? {
        return Err(if file_meta(conn, tenant, dir)?.is_some() {
            Error::not_a_directory(dir)
        } else {
            Error::not_found(dir)
        });
    }
    let limit = settings.limits.results(limit);
    let fetch = i64::try_from(limit).unwrap_or(i64::MAX).saturating_add(1);
    let dirs: Vec<String> = conn
        .prepare_cached(queries::LS_DIRS)
        .map_err(sql)?
        .query_map(params![tenant, dir.as_str(), fetch], |row| row.get(0))
        .map_err(sql)?
        .collect::<rusqlite::Result<_>>()
        .map_err(sql)?;
    let files: Vec<(String, i64, String)> = conn
        .prepare_cached(queries::LS_FILES)
        .map_err(sql)?
        .query_map(params![tenant, dir.as_str(), fetch], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?))
        })
        .map_err(sql)?
        .collect::<rusqlite::Result<_>>()
        .map_err(sql)?;
    let truncated = dirs.len() + files.len() > limit;
    let mut entries = Vec::with_capacity(limit.min(dirs.len() + files.len()));
    let (mut dirs, mut files) = (dirs.into_iter().peekable(), files.into_iter().peekable());
    while entries.len() < limit {
        let take_dir = match (dirs.peek(), files.peek()) {
            (Some(d), Some(f)) => d.as_bytes() < f.0.as_bytes(),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        let entry = if take_dir {
            let Some(name) = dirs.next() else { break };
            FileInfo {
                path: child_path(dir, &name),
                name,
                is_dir: true,
                size: None,
                modified_at: None,
            }
        } else {
            let Some((name, size, modified_at)) = files.next() else {
                break;
            };
            FileInfo {
                path: child_path(dir, &name),
                name,
                is_dir: false,
                size: Some(u64::try_from(size).unwrap_or(0)),
                modified_at: Some(modified_at),
            }
        };
        entries.push(entry);
    }
    Ok(Listing { entries, truncated })
}

/// Files beneath `under` whose relative path matches `pattern`: one index range scan.
pub(crate) fn glob(
    conn: &Connection,
    settings: &Settings,
    tenant: &str,
    pattern: &str,
    under: &VPath,
    limit: usize,
) -> Result<GlobResult> {
    let glob = Glob::new(pattern)?;
    let limit = settings.limits.results(limit);
    if !is_dir(conn, tenant, under)? {
        if file_meta(conn, tenant, under)?.is_some() {
            return Err(Error::not_a_directory(under));
        }
        return Ok(GlobResult::default());
    }
    let base = child_prefix(under);
    let (low, high) = range(&base, pattern);
    let mut stmt = conn.prepare_cached(queries::RANGE_META).map_err(sql)?;
    let mut rows = stmt.query(params![tenant, low, high]).map_err(sql)?;
    let mut result = GlobResult::default();
    while let Some(row) = rows.next().map_err(sql)? {
        let path: String = row.get(0).map_err(sql)?;
        let Some(relative) = path.get(base.len()..) else {
            continue;
        };
        if !glob.is_match(relative) {
            continue;
        }
        if result.files.len() == limit {
            result.truncated = true;
            break;
        }
        let size: i64 = row.get(1).map_err(sql)?;
        result.files.push(FileInfo {
            name: name_of(&path).to_owned(),
            path,
            is_dir: false,
            size: Some(u64::try_from(size).unwrap_or(0)),
            modified_at: Some(row.get(2).map_err(sql)?),
        });
    }
    Ok(result)
}

/// Lines matching `query` in the file `under`, or in the files beneath it (one index range scan).
pub(crate) fn grep(
    conn: &Connection,
    settings: &Settings,
    tenant: &str,
    query: &GrepQuery,
    under: &VPath,
    limit: usize,
) -> Result<GrepResult> {
    let grep = CompiledGrep::new(query)?;
    let limit = settings.limits.results(limit);
    if !is_dir(conn, tenant, under)? {
        // The file is read only when its name passes the include filter.
        if !grep.includes_itself(under) {
            return Ok(GrepResult::default());
        }
        let max = settings.limits.max_file_size;
        let bytes = conn
            .prepare_cached(queries::FILE_CONTENT)
            .map_err(sql)?
            .query_row(params![tenant, under.as_str(), max_param(max)], |row| {
                // NULL for a file past the max size: skipped, as on every backend.
                match row.get_ref(2)? {
                    rusqlite::types::ValueRef::Null => Ok(None),
                    _ => content(row, 2).map(Some),
                }
            })
            .optional()
            .map_err(sql)?
            .flatten();
        return Ok(bytes.map_or_else(GrepResult::default, |bytes| {
            grep_file(&grep, under, &bytes, limit)
        }));
    }
    let mut collector = GrepCollector::new(limit);
    let base = child_prefix(under);
    let (low, high) = match &query.include {
        Some(include) => range(&base, include),
        None => range(&base, ""),
    };
    let mut stmt = conn.prepare_cached(queries::RANGE_CONTENT).map_err(sql)?;
    let max = max_param(settings.limits.max_file_size);
    let mut rows = stmt.query(params![tenant, low, high, max]).map_err(sql)?;
    while let Some(row) = rows.next().map_err(sql)? {
        if collector.is_full() {
            break;
        }
        let path: &str = row.get_ref(0).and_then(|v| Ok(v.as_str()?)).map_err(sql)?;
        let Some(relative) = path.get(base.len()..) else {
            continue;
        };
        if !grep.includes(relative) {
            continue;
        }
        // Borrow the blob in place: no copy of each file's content.
        let bytes = row
            .get_ref(1)
            .and_then(|v| Ok(v.as_bytes()?))
            .map_err(sql)?;
        collector.search(&grep, path, bytes);
    }
    Ok(collector.finish())
}

/// A max file size as an SQL integer (sizes past `i64::MAX` cannot be stored anyway).
pub(crate) fn max_param(max: u64) -> i64 {
    i64::try_from(max).unwrap_or(i64::MAX)
}

/// A content column as bytes (stored as a BLOB; TEXT is accepted too).
fn content(row: &Row<'_>, idx: usize) -> rusqlite::Result<Vec<u8>> {
    Ok(row.get_ref(idx)?.as_bytes()?.to_vec())
}

/// The path of the entry `name` inside `dir`.
fn child_path(dir: &VPath, name: &str) -> String {
    if dir.is_root() {
        format!("/{name}")
    } else {
        format!("{dir}/{name}")
    }
}

/// The prefix every path beneath `dir` starts with: "/" or "/dir/".
pub(crate) fn child_prefix(dir: &VPath) -> String {
    if dir.is_root() {
        "/".to_owned()
    } else {
        format!("{dir}/")
    }
}

fn name_of(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The (exclusive) path range a glob `pattern` can match beneath `base`.
///
/// An anchored pattern ("src/**/*.rs", "/docs/*.md") can only match beneath
/// its leading literal directories, so the scan starts there; any other
/// pattern scans everything beneath `base`. "0" is the byte after "/".
fn range(base: &str, pattern: &str) -> (String, String) {
    let mut low = base.to_owned();
    if pattern.contains('/') {
        let segments: Vec<&str> = pattern
            .trim_start_matches('/')
            .split('/')
            .filter(|s| *s != ".")
            .collect();
        let dirs = &segments[..segments.len().saturating_sub(1)];
        for segment in dirs {
            if segment.is_empty() || segment.contains(['*', '?', '[', ']', '{', '}', '\\']) {
                break;
            }
            low.push_str(segment);
            low.push('/');
        }
    }
    let mut high = low[..low.len() - 1].to_owned();
    high.push('0');
    (low, high)
}

#[cfg(test)]
mod tests {
    use super::range;

    #[test]
    fn glob_ranges_start_at_literal_directories() {
        let cases = [
            ("/", "*.rs", "/", "0"),
            ("/", "src/**/*.rs", "/src/", "/src0"),
            ("/a/", "/docs/x/*.md", "/a/docs/x/", "/a/docs/x0"),
            ("/", "src/*/x/*.rs", "/src/", "/src0"),
            ("/", "{a,b}/*.rs", "/", "0"),
            ("/", "a.txt", "/", "0"),
            ("/", "./src/a.rs", "/src/", "/src0"),
        ];
        for (base, pattern, low, high) in cases {
            assert_eq!(
                range(base, pattern),
                (low.to_owned(), high.to_owned()),
                "{pattern}"
            );
        }
    }
}
