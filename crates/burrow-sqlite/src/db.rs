//! One open database file: the writer connection, a small read pool, BEGIN IMMEDIATE with lock waits, and error mapping.

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use burrow_backend::{Error, Result};
use rusqlite::{Connection, ErrorCode, OpenFlags, TransactionBehavior};

use crate::options::SqliteOptions;
use crate::schema;

/// An open database file shared by a [`crate::SqliteStore`] and its [`crate::StoreBackend`]s.
///
/// Mutations go through the one writer connection, each in its own
/// `BEGIN IMMEDIATE` transaction: the write lock is taken up front, so two
/// writers (threads or processes) queue on SQLite's busy handler instead of
/// deadlocking on a read-to-write upgrade. Reads take a connection from the
/// pool and see one WAL snapshot, never blocked by the writer.
pub(crate) struct Database {
    writer: Mutex<Connection>,
    readers: Mutex<Vec<Connection>>,
    path: std::path::PathBuf,
    options: SqliteOptions,
}

impl Database {
    /// Opens (creating if missing) the database at `path` and migrates it to the current schema.
    pub(crate) fn open(path: &Path, options: SqliteOptions) -> Result<Database> {
        let options = options.clamped();
        check_path(path)?;
        let deadline = deadline(options.busy_timeout);
        let mut writer = retry_busy(deadline, || open_connection(path, &options, false))?;
        retry_busy(deadline, || {
            let mode: String = writer
                .query_row("PRAGMA journal_mode=WAL", [], |row| row.get(0))
                .map_err(sql)?;
            if mode.eq_ignore_ascii_case("wal") {
                Ok(())
            } else {
                Err(Error::failure_msg(
                    "the SQLite database could not be switched to WAL mode; is it on a file system that supports shared memory?",
                ))
            }
        })?;
        retry_busy(deadline, || schema::migrate(&mut writer))?;
        Ok(Database {
            writer: Mutex::new(writer),
            readers: Mutex::new(Vec::new()),
            path: path.to_owned(),
            options,
        })
    }

    /// The options this database was opened with.
    pub(crate) fn options(&self) -> &SqliteOptions {
        &self.options
    }

    /// Runs `f` in one `BEGIN IMMEDIATE` transaction and commits it if `f` succeeds.
    ///
    /// An `Err` from `f` rolls everything back. A busy database is waited
    /// for (SQLite's busy handler, then retries of the whole transaction)
    /// until the busy timeout, then reported as a failure.
    pub(crate) fn write<T>(&self, mut f: impl FnMut(&Connection) -> Result<T>) -> Result<T> {
        let mut conn = lock(&self.writer)?;
        let deadline = deadline(self.options.busy_timeout);
        retry_busy(deadline, || {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(sql)?;
            let value = f(&tx)?;
            tx.commit().map_err(sql)?;
            Ok(value)
        })
    }

    /// Runs `f` on a pooled read connection, inside one read transaction (one snapshot).
    pub(crate) fn read<T>(&self, mut f: impl FnMut(&Connection) -> Result<T>) -> Result<T> {
        let mut conn = match lock(&self.readers)?.pop() {
            Some(conn) => conn,
            None => {
                let deadline = deadline(self.options.busy_timeout);
                retry_busy(deadline, || {
                    open_connection(&self.path, &self.options, true)
                })?
            }
        };
        let deadline = deadline(self.options.busy_timeout);
        let result = retry_busy(deadline, || {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Deferred)
                .map_err(sql)?;
            let value = f(&tx)?;
            tx.commit().map_err(sql)?;
            Ok(value)
        });
        // A refusal leaves the connection as good as new; a failure may not.
        if result.as_ref().map_or_else(Error::is_refusal, |_| true) {
            let mut pool = lock(&self.readers)?;
            if pool.len() < self.options.read_connections {
                pool.push(conn);
            }
        }
        result
    }
}

/// The instant `timeout` from now (far in the future if that is past what the clock holds).
fn deadline(timeout: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(timeout)
        .or_else(|| now.checked_add(crate::MAX_BUSY_TIMEOUT))
        .unwrap_or(now)
}

/// Refuses, up front, a path that exists but is not a regular file (a
/// directory, `/dev/null` or another device, a pipe, a socket): SQLite would
/// fail on it late and with a misleading message (a lock wait, then "locked
/// by another writer"). A missing file is fine: it is created.
fn check_path(path: &Path) -> Result<()> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    if meta.is_file() {
        return Ok(());
    }
    let what = if meta.is_dir() {
        "a directory"
    } else {
        "a device, pipe or socket"
    };
    Err(Error::invalid_argument(format!(
        "the SQLite database path names {what}, not a regular file, so it cannot be a database; give the path of a database file, or of one to create."
    )))
}

/// Runs the blocking `f` on tokio's blocking pool.
pub(crate) async fn blocking<T, F>(db: &Arc<Database>, f: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce(&Database) -> Result<T> + Send + 'static,
{
    let db = Arc::clone(db);
    tokio::task::spawn_blocking(move || f(&db))
        .await
        .map_err(|e| Error::failure("a SQLite task stopped before it finished", e))?
}

fn lock<T>(mutex: &Mutex<T>) -> Result<MutexGuard<'_, T>> {
    // A panic while holding the lock leaves no half-done SQL behind (the
    // transaction is rolled back when dropped), so the connection is still good.
    Ok(mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner))
}

fn open_connection(path: &Path, options: &SqliteOptions, read_only: bool) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(sql)?;
    conn.busy_timeout(options.busy_timeout).map_err(sql)?;
    conn.pragma_update(None, "synchronous", options.synchronous.pragma_value())
        .map_err(sql)?;
    conn.pragma_update(
        None,
        "mmap_size",
        i64::try_from(options.mmap_size).unwrap_or(i64::MAX),
    )
    .map_err(sql)?;
    if read_only {
        conn.pragma_update(None, "query_only", true).map_err(sql)?;
    }
    conn.set_prepared_statement_cache_capacity(32);
    Ok(conn)
}

/// Runs `f` again while it fails because the database is busy, until `deadline`.
fn retry_busy<T>(deadline: Instant, mut f: impl FnMut() -> Result<T>) -> Result<T> {
    let mut pause = Duration::from_millis(1);
    loop {
        match f() {
            Err(err) if is_busy(&err) => {
                let now = Instant::now();
                if now >= deadline {
                    return Err(Error::failure(
                        "the SQLite database stayed locked by another writer past the busy timeout; try again later or raise the busy timeout.",
                        err,
                    ));
                }
                thread::sleep(pause.min(deadline - now));
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            other => return other,
        }
    }
}

fn is_busy(err: &Error) -> bool {
    let Some(source) = std::error::Error::source(err) else {
        return false;
    };
    source.downcast_ref::<rusqlite::Error>().is_some_and(|e| {
        matches!(
            e.sqlite_error_code(),
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
        )
    })
}

/// A SQLite error as a burrow failure, with a message that names no host path.
pub(crate) fn sql(err: rusqlite::Error) -> Error {
    let message = match err.sqlite_error_code() {
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => {
            "the SQLite database is corrupt or is not a database; restore it from a backup."
        }
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
            "the SQLite database is locked by another writer."
        }
        Some(ErrorCode::CannotOpen) => {
            "the SQLite database file could not be opened; check that its folder exists and is writable."
        }
        Some(ErrorCode::ReadOnly | ErrorCode::PermissionDenied) => {
            "the SQLite database file is read-only."
        }
        Some(ErrorCode::DiskFull) => "the disk holding the SQLite database is full.",
        Some(ErrorCode::SystemIoFailure) => "the SQLite database hit an I/O error.",
        _ => "the SQLite store failed.",
    };
    Error::failure(message, err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::{MAX_BUSY_TIMEOUT, Synchronous};

    /// The PRAGMAs of `conn` that the options set, as SQLite reports them.
    fn pragmas(conn: &Connection) -> (String, i64, i64, i64, i64) {
        let get =
            |name: &str| -> i64 { conn.pragma_query_value(None, name, |r| r.get(0)).unwrap() };
        let mode: String = conn
            .pragma_query_value(None, "journal_mode", |r| r.get(0))
            .unwrap();
        (
            mode,
            get("busy_timeout"),
            get("synchronous"),
            get("mmap_size"),
            get("query_only"),
        )
    }

    #[test]
    fn every_connection_carries_the_pragmas_the_options_ask_for() {
        let dir = tempfile::tempdir().unwrap();
        let options = SqliteOptions {
            synchronous: Synchronous::Full,
            busy_timeout: Duration::from_millis(1234),
            read_connections: 1,
            mmap_size: 1 << 20,
        };
        let db = Database::open(&dir.path().join("p.db"), options).unwrap();
        // synchronous: 0 OFF, 1 NORMAL, 2 FULL.
        let writer = pragmas(&lock(&db.writer).unwrap());
        assert_eq!(writer, ("wal".to_owned(), 1234, 2, 1 << 20, 0));
        let reader = db.read(|c| Ok(pragmas(c))).unwrap();
        assert_eq!(reader, ("wal".to_owned(), 1234, 2, 1 << 20, 1));
        // The pooled reader is reused, with the same settings.
        let again = db.read(|c| Ok(pragmas(c))).unwrap();
        assert_eq!(again, reader);

        let defaults = Database::open(&dir.path().join("d.db"), SqliteOptions::default()).unwrap();
        let writer = pragmas(&lock(&defaults.writer).unwrap());
        assert_eq!(writer.0, "wal");
        assert_eq!(writer.1, 5000);
        assert_eq!(writer.2, 1, "synchronous=NORMAL by default");
    }

    #[test]
    fn extreme_busy_timeouts_are_clamped_not_overflowed() {
        let dir = tempfile::tempdir().unwrap();
        for (timeout, want_ms) in [
            (Duration::ZERO, 0),
            (Duration::from_secs(u64::MAX), i64::from(i32::MAX)),
            (Duration::MAX, i64::from(i32::MAX)),
        ] {
            let options = SqliteOptions {
                busy_timeout: timeout,
                ..SqliteOptions::default()
            };
            let db = Database::open(&dir.path().join("x.db"), options).unwrap();
            assert_eq!(db.options().busy_timeout, timeout.min(MAX_BUSY_TIMEOUT));
            let conn = lock(&db.writer).unwrap();
            let ms: i64 = conn
                .pragma_query_value(None, "busy_timeout", |r| r.get(0))
                .unwrap();
            assert_eq!(ms, want_ms, "{timeout:?}");
            drop(conn);
            db.write(|c| {
                c.execute_batch("CREATE TABLE IF NOT EXISTS t (x)")
                    .map_err(sql)
            })
            .unwrap();
            db.read(|c| {
                c.query_row("SELECT count(*) FROM t", [], |r| r.get::<_, i64>(0))
                    .map_err(sql)
            })
            .unwrap();
        }
    }
}
