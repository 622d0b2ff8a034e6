//! `SqliteStore`: the session store in one SQLite file (WAL), one `BEGIN IMMEDIATE` transaction per commit, its blocking calls run in place when the file is free or on the store's own thread.
//!
//! # Semantics
//! - **One file, many processes.** Every process opens the same file; SQLite's
//!   write lock serialises commits and claim changes across them, and
//!   `BEGIN IMMEDIATE` takes it up front, so the rows a commit read cannot
//!   change before it writes (fencing, cursors and command keys are checked
//!   and saved under that lock).
//! - **Durability.** WAL with `synchronous=NORMAL` by default: a commit
//!   survives the process dying at any point; a power loss may drop the last
//!   commits (not corrupt the file). [`SqliteStore::open_with`] with
//!   `durable_fsync` syncs every commit (`synchronous=FULL`). ADR 0171.
//! - **Blocking.** The connection has a thread of its own (`burrow-sqlite`),
//!   started when the store is opened and ended when its last clone is
//!   dropped. A call made on a multi-threaded tokio runtime while the
//!   connection is free and no call waits runs in
//!   `tokio::task::block_in_place` (the worker lends its other tasks to
//!   another thread while it blocks; ADR 0195); any other call is queued for
//!   the store's thread and awaited as a task, so callers that come at once
//!   wait in order without a thread each (ADR 0400). A busy file is waited
//!   for up to 5 s (SQLite's busy handler), then a `Storage` error.
//! - **Cancellation.** A queued call whose caller stopped waiting before the
//!   store's thread reached it is not run; once started, a call runs to its
//!   end (a commit is in or not, never half).

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, TryLockError, mpsc};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::clock::{Clock, SystemClock};
use super::error::{StoreError, StoreResult};
use super::rules::{self, Changes, ClaimRow, Snapshot};
use super::types::{
    Checkpoint, Claim, ClaimAttempt, CommandKey, Commit, Committed, Event, HistoryEntry,
    HistoryItem, PostedMessage, Pruned, RunRecord, Scope, ThreadInfo, ThreadKey, ToolCallRecord,
};
use super::{MAX_PAGE, SessionStore};

mod team;

/// Pages the WAL may hold before SQLite checkpoints it into the database file.
const WAL_AUTOCHECKPOINT_PAGES: i64 = 10_000;
/// What the WAL file is cut back to after a checkpoint.
const WAL_SIZE_LIMIT_BYTES: i64 = 64 * 1024 * 1024;
/// 2: command results carry the time they were recorded (`at_ms`, for retention).
/// 3: checkpoints keep their files' pre-images (`session_checkpoint_files`, ADR 0295);
/// an older file gains the empty table when opened, its checkpoints holding no files.
/// 4: teams' shared todo lists and messages (`session_team_todos`,
/// `session_team_messages`, ADR 0265); an older file gains the empty tables when opened.
const SCHEMA_VERSION: i64 = 4;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS session_threads (
    tenant TEXT NOT NULL, workspace TEXT NOT NULL, thread TEXT NOT NULL, doc TEXT NOT NULL,
    PRIMARY KEY (tenant, workspace, thread)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS session_claims (
    tenant TEXT NOT NULL, workspace TEXT NOT NULL, thread TEXT NOT NULL,
    holder TEXT, token INTEGER NOT NULL, expires_at_ms INTEGER NOT NULL,
    PRIMARY KEY (tenant, workspace, thread)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS session_events (
    tenant TEXT NOT NULL, workspace TEXT NOT NULL, thread TEXT NOT NULL, seq INTEGER NOT NULL,
    doc TEXT NOT NULL,
    PRIMARY KEY (tenant, workspace, thread, seq)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS session_messages (
    tenant TEXT NOT NULL, workspace TEXT NOT NULL, id TEXT NOT NULL, thread TEXT NOT NULL,
    seq INTEGER NOT NULL, doc TEXT NOT NULL,
    PRIMARY KEY (tenant, workspace, id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS session_messages_by_thread
    ON session_messages (tenant, workspace, thread, seq);
CREATE TABLE IF NOT EXISTS session_history (
    tenant TEXT NOT NULL, workspace TEXT NOT NULL, thread TEXT NOT NULL, pos INTEGER NOT NULL,
    run_id TEXT, message_ref TEXT, call_ref TEXT, item TEXT NOT NULL,
    PRIMARY KEY (tenant, workspace, thread, pos)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS session_runs (
    tenant TEXT NOT NULL, workspace TEXT NOT NULL, run_id TEXT NOT NULL, thread TEXT NOT NULL,
    started_seq INTEGER NOT NULL, doc TEXT NOT NULL,
    PRIMARY KEY (tenant, workspace, run_id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS session_runs_by_thread
    ON session_runs (tenant, workspace, thread, started_seq);
-- A rowid table: its rows carry whole tool results, too big for a WITHOUT ROWID
-- b-tree (SQLite advises those for rows under a twentieth of a page), whose
-- inserts rebalance neighbouring pages; a finish updates the row in place (ADR 0195).
CREATE TABLE IF NOT EXISTS session_tool_calls (
    tenant TEXT NOT NULL, workspace TEXT NOT NULL, run_id TEXT NOT NULL, call_id TEXT NOT NULL,
    started_seq INTEGER NOT NULL, doc TEXT NOT NULL,
    UNIQUE (tenant, workspace, run_id, call_id));
CREATE TABLE IF NOT EXISTS session_cursors (
    tenant TEXT NOT NULL, workspace TEXT NOT NULL, thread TEXT NOT NULL, name TEXT NOT NULL,
    value INTEGER NOT NULL,
    PRIMARY KEY (tenant, workspace, thread, name)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS session_checkpoints (
    tenant TEXT NOT NULL, workspace TEXT NOT NULL, thread TEXT NOT NULL, id TEXT NOT NULL,
    seq INTEGER NOT NULL, doc TEXT NOT NULL,
    PRIMARY KEY (tenant, workspace, thread, id)) WITHOUT ROWID;
-- A rowid table: a row carries a whole file's bytes (absent: NULL, no file stood there).
CREATE TABLE IF NOT EXISTS session_checkpoint_files (
    tenant TEXT NOT NULL, workspace TEXT NOT NULL, thread TEXT NOT NULL,
    checkpoint_id TEXT NOT NULL, ord INTEGER NOT NULL, path TEXT NOT NULL, bytes BLOB,
    UNIQUE (tenant, workspace, thread, checkpoint_id, ord));
CREATE TABLE IF NOT EXISTS session_commands (
    tenant TEXT NOT NULL, workspace TEXT NOT NULL, sender TEXT NOT NULL, command_id TEXT NOT NULL,
    result TEXT NOT NULL, at_ms INTEGER NOT NULL,
    PRIMARY KEY (tenant, workspace, sender, command_id)) WITHOUT ROWID;
";

/// Options of a [`SqliteStore`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SqliteOptions {
    /// Sync the file on every commit (`synchronous=FULL`), so a power loss
    /// loses no commit. Off by default: WAL's `NORMAL` already survives any
    /// crash of the process.
    pub durable_fsync: bool,
    /// How long a call waits for another writer's lock (5 s).
    pub busy_timeout: Duration,
    /// Run a call in `tokio::task::block_in_place` on a multi-threaded
    /// runtime when the connection is free and no call waits (on; ADR 0195,
    /// ADR 0400); other calls go to the store's own thread. Turn it off to
    /// send every call to the store's thread, when the store is called from a
    /// `LocalSet` task (`spawn_local`), where `block_in_place` is not
    /// supported, or to keep a server's callers off tokio's blocking pool.
    pub in_place: bool,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self {
            durable_fsync: false,
            busy_timeout: Duration::from_secs(5),
            in_place: true,
        }
    }
}

/// A session store in one SQLite file, shared safely by threads and processes.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

/// A call queued for the store's thread.
type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// What a queued call sends back: its result, or the payload of its panic.
type Outcome<T> = Result<StoreResult<T>, Box<dyn Any + Send>>;

#[derive(Debug)]
struct Inner {
    conn: Arc<Mutex<Connection>>,
    /// The store's thread takes the calls sent here in order; it ends when
    /// the last clone of the store drops this sender.
    jobs: mpsc::Sender<Job>,
    /// Calls sent to the store's thread and not yet finished.
    queued: Arc<AtomicUsize>,
    path: PathBuf,
    clock: Arc<dyn Clock>,
    in_place: bool,
}

/// Starts the store's thread: it runs the calls sent to `jobs` one after
/// another on the connection, until every sender is dropped.
fn start_thread(
    conn: Arc<Mutex<Connection>>,
    queued: Arc<AtomicUsize>,
) -> StoreResult<mpsc::Sender<Job>> {
    let (jobs, calls) = mpsc::channel::<Job>();
    std::thread::Builder::new()
        .name("burrow-sqlite".to_string())
        .spawn(move || {
            for job in calls {
                {
                    let mut conn = conn.lock().unwrap_or_else(|e| e.into_inner());
                    job(&mut conn);
                }
                queued.fetch_sub(1, Ordering::AcqRel);
            }
        })
        .map_err(|e| StoreError::storage("the SQLite session store's thread did not start", e))?;
    Ok(jobs)
}

fn sql(e: rusqlite::Error) -> StoreError {
    StoreError::storage("the SQLite session store failed", e)
}

fn to_json<T: Serialize>(value: &T) -> StoreResult<String> {
    serde_json::to_string(value)
        .map_err(|e| StoreError::corrupt(format!("a record could not be encoded: {e}")))
}

fn from_json<T: DeserializeOwned>(text: &str) -> StoreResult<T> {
    serde_json::from_str(text)
        .map_err(|e| StoreError::corrupt(format!("a stored record could not be decoded: {e}")))
}

fn int(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn uint(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

fn page(limit: usize) -> i64 {
    i64::try_from(limit.min(MAX_PAGE)).unwrap_or(0)
}

impl SqliteStore {
    /// Opens (creating if missing) the store in the file at `path`, on the system clock.
    ///
    /// Blocks briefly (opening the file, creating its tables).
    pub fn open(path: impl AsRef<Path>) -> StoreResult<Self> {
        Self::open_with(path, Arc::new(SystemClock), SqliteOptions::default())
    }

    /// Opens the store at `path` reading time from `clock`, with `options`.
    pub fn open_with(
        path: impl AsRef<Path>,
        clock: Arc<dyn Clock>,
        options: SqliteOptions,
    ) -> StoreResult<Self> {
        let path = path.as_ref().to_path_buf();
        if path.is_dir() {
            return Err(StoreError::invalid_argument(
                "the SQLite session store's path names a directory, not a database file",
            ));
        }
        let mut conn = Connection::open(&path).map_err(sql)?;
        conn.busy_timeout(options.busy_timeout).map_err(sql)?;
        conn.pragma_update(None, "page_size", 1024).map_err(sql)?;
        switch_to_wal(&conn, options.busy_timeout)?;
        let sync = if options.durable_fsync {
            "FULL"
        } else {
            "NORMAL"
        };
        conn.pragma_update(None, "synchronous", sync).map_err(sql)?;
        // A turn rewrites the same few pages (the thread's rows and the tails of its
        // indexes); checkpointing every 10,000 pages instead of SQLite's 1,000 folds
        // their many WAL copies into one write and one sync (ADR 0186). The WAL is
        // cut back to 64 MiB after each checkpoint.
        conn.pragma_update(None, "wal_autocheckpoint", WAL_AUTOCHECKPOINT_PAGES)
            .map_err(sql)?;
        conn.pragma_update(None, "journal_size_limit", WAL_SIZE_LIMIT_BYTES)
            .map_err(sql)?;
        conn.set_prepared_statement_cache_capacity(64);
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql)?;
        let version: i64 = tx
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(sql)?;
        if version > SCHEMA_VERSION {
            return Err(StoreError::new(
                super::StoreErrorKind::Storage,
                format!(
                    "the SQLite session store was written by a newer burrow (schema {version}; this one knows {SCHEMA_VERSION})"
                ),
            ));
        }
        tx.execute_batch(SCHEMA).map_err(sql)?;
        tx.execute_batch(team::SCHEMA).map_err(sql)?;
        add_command_times(&tx, clock.now_ms())?;
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)
            .map_err(sql)?;
        tx.commit().map_err(sql)?;
        let conn = Arc::new(Mutex::new(conn));
        let queued = Arc::new(AtomicUsize::new(0));
        let jobs = start_thread(Arc::clone(&conn), Arc::clone(&queued))?;
        Ok(Self {
            inner: Arc::new(Inner {
                conn,
                jobs,
                queued,
                path,
                clock,
                in_place: options.in_place,
            }),
        })
    }

    /// The database file's path.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    async fn blocking<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection, i64) -> StoreResult<T> + Send + 'static,
    {
        // On a multi-threaded runtime a call that finds the connection free
        // and no call waiting runs on this thread, which hands its other tasks
        // to another worker while it blocks: no hop to another thread and back
        // (two thread wake-ups per call), about a fifth of a durable turn (ADR
        // 0195). Each such hand-off starts a thread of tokio's blocking pool,
        // so callers that come at once are queued for the store's thread
        // instead and wait as tasks (ADR 0400).
        let multi_thread = tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        if multi_thread && self.inner.in_place && self.inner.queued.load(Ordering::Acquire) == 0 {
            let free = match self.inner.conn.try_lock() {
                Ok(conn) => Some(conn),
                Err(TryLockError::Poisoned(e)) => Some(e.into_inner()),
                Err(TryLockError::WouldBlock) => None,
            };
            if let Some(mut conn) = free {
                let now = self.inner.clock.now_ms();
                return tokio::task::block_in_place(move || f(&mut conn, now));
            }
        }
        let (tx, rx) = tokio::sync::oneshot::channel::<Outcome<T>>();
        let clock = Arc::clone(&self.inner.clock);
        let job: Job = Box::new(move |conn| {
            // The caller stopped waiting before the call began: not run.
            if tx.is_closed() {
                return;
            }
            let _ = tx.send(std::panic::catch_unwind(AssertUnwindSafe(|| {
                f(conn, clock.now_ms())
            })));
        });
        self.inner.queued.fetch_add(1, Ordering::AcqRel);
        if self.inner.jobs.send(job).is_err() {
            self.inner.queued.fetch_sub(1, Ordering::AcqRel);
            return Err(StoreError::new(
                super::StoreErrorKind::Storage,
                "the SQLite session store's thread has stopped",
            ));
        }
        match rx.await {
            Ok(Ok(result)) => result,
            // A panic inside the call is the caller's, as if it ran in place.
            Ok(Err(panic)) => std::panic::resume_unwind(panic),
            Err(_) => Err(StoreError::new(
                super::StoreErrorKind::Storage,
                "the SQLite session store's thread stopped before the call finished",
            )),
        }
    }

    /// The records `query` selects by the thread's key (`?1`-`?3`), with `extra` bound after it.
    async fn thread_rows<T>(
        &self,
        thread: &ThreadKey,
        query: &'static str,
        extra: Vec<i64>,
    ) -> StoreResult<Vec<T>>
    where
        T: DeserializeOwned + Send + 'static,
    {
        let k = thread.clone();
        self.blocking(move |conn, _| {
            let mut args: Vec<&dyn rusqlite::ToSql> =
                vec![&k.scope.tenant, &k.scope.workspace, &k.thread];
            args.extend(extra.iter().map(|e| e as &dyn rusqlite::ToSql));
            docs(conn, query, args.as_slice())
        })
        .await
    }

    /// The records `query` selects by the scope (`?1`, `?2`) and an id (`?3`).
    async fn scope_rows<T>(
        &self,
        scope: &Scope,
        query: &'static str,
        id: &str,
    ) -> StoreResult<Vec<T>>
    where
        T: DeserializeOwned + Send + 'static,
    {
        let (s, id) = (scope.clone(), id.to_string());
        self.blocking(move |conn, _| docs(conn, query, params![s.tenant, s.workspace, id]))
            .await
    }

    async fn write<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&rusqlite::Transaction<'_>, i64) -> StoreResult<T> + Send + 'static,
    {
        self.blocking(move |conn, now| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(sql)?;
            let value = f(&tx, now)?;
            tx.commit().map_err(sql)?;
            Ok(value)
        })
        .await
    }
}

/// Switches the file to WAL mode, trying again while another connection holds it.
///
/// Two connections opening a new file at once race to switch it to WAL, and
/// SQLite answers the loser's `PRAGMA journal_mode` with SQLITE_BUSY at once,
/// without calling its busy handler; a moment later the file is in WAL mode
/// and the pragma succeeds. So a busy answer is tried again every 10 ms for
/// at most `patience` (the store's busy timeout).
fn switch_to_wal(conn: &Connection, patience: Duration) -> StoreResult<()> {
    let started = Instant::now();
    loop {
        match conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0)) {
            Ok(mode) if mode.eq_ignore_ascii_case("wal") => return Ok(()),
            Ok(_) => {
                return Err(StoreError::new(
                    super::StoreErrorKind::Storage,
                    "the SQLite session store could not switch its file to WAL mode",
                ));
            }
            Err(e)
                if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
                    && started.elapsed() < patience =>
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Err(sql(e)),
        }
    }
}

/// Schema 1 to 2: gives `session_commands` its `at_ms` column, the results
/// recorded before it dated `now` (kept a whole retention window from the upgrade).
fn add_command_times(conn: &Connection, now: i64) -> StoreResult<()> {
    let has: bool = conn
        .query_row(
            "SELECT COUNT(*) FROM pragma_table_info('session_commands') WHERE name = 'at_ms'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .map_err(sql)?
        > 0;
    if !has {
        conn.execute_batch(&format!(
            "ALTER TABLE session_commands ADD COLUMN at_ms INTEGER NOT NULL DEFAULT {now}"
        ))
        .map_err(sql)?;
    }
    Ok(())
}

/// Prunes one thread in the open transaction `tx` (ADR 0255): its events
/// before the cutoff (but the unfinished run's), and the tool-call records
/// of its runs ended before it (their history references inlined).
fn prune_thread(tx: &Connection, key: &ThreadKey, before_ms: i64) -> StoreResult<Pruned> {
    let (t, w, th) = (&key.scope.tenant, &key.scope.workspace, &key.thread);
    let Some(info): Option<ThreadInfo> = doc(
        tx,
        "SELECT doc FROM session_threads WHERE tenant = ?1 AND workspace = ?2 AND thread = ?3",
        params![t, w, th],
    )?
    else {
        return Ok(Pruned::default());
    };
    let runs: Vec<RunRecord> = docs(
        tx,
        "SELECT doc FROM session_runs WHERE tenant = ?1 AND workspace = ?2 AND thread = ?3
         ORDER BY started_seq",
        params![t, w, th],
    )?;
    let last_assistant = {
        let mut stmt = tx
            .prepare_cached(
                "SELECT run_id, item FROM session_history
                 WHERE tenant = ?1 AND workspace = ?2 AND thread = ?3
                   AND message_ref IS NULL AND call_ref IS NULL
                 ORDER BY pos DESC",
            )
            .map_err(sql)?;
        let mut rows = stmt.query(params![t, w, th]).map_err(sql)?;
        let mut found = None;
        while let Some(row) = rows.next().map_err(sql)? {
            let item: HistoryItem = from_json(&row.get::<_, String>(1).map_err(sql)?)?;
            if rules::prune::is_assistant(&item) {
                found = row.get::<_, Option<String>>(0).map_err(sql)?;
                break;
            }
        }
        found
    };
    let plan = rules::prune::plan(&info, &runs, last_assistant.as_deref(), before_ms);
    let events = tx
        .prepare_cached(
            "DELETE FROM session_events
             WHERE tenant = ?1 AND workspace = ?2 AND thread = ?3 AND seq < ?4
               AND json_extract(doc, '$.at_ms') < ?5",
        )
        .map_err(sql)?
        .execute(params![t, w, th, int(plan.events_below_seq), before_ms])
        .map_err(sql)?;
    let mut tool_calls = 0;
    for run in &plan.runs {
        let refs: Vec<(i64, String, Option<String>)> = {
            let mut stmt = tx
                .prepare_cached(
                    "SELECT h.pos, h.item, c.doc FROM session_history h
                     LEFT JOIN session_tool_calls c
                       ON c.tenant = h.tenant AND c.workspace = h.workspace
                      AND c.run_id = h.run_id AND c.call_id = h.call_ref
                     WHERE h.tenant = ?1 AND h.workspace = ?2 AND h.thread = ?3
                       AND h.run_id = ?4 AND h.call_ref IS NOT NULL",
                )
                .map_err(sql)?;
            let rows = stmt
                .query_map(params![t, w, th, run], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })
                .map_err(sql)?;
            rows.collect::<Result<_, _>>().map_err(sql)?
        };
        for (pos, item, call) in refs {
            let item: HistoryItem = from_json(&item)?;
            let call: Option<ToolCallRecord> = call.map(|c| from_json(&c)).transpose()?;
            if let Some(inlined) = rules::prune::inline(&item, call.as_ref()) {
                tx.prepare_cached(
                    "UPDATE session_history SET item = ?5, call_ref = NULL
                     WHERE tenant = ?1 AND workspace = ?2 AND thread = ?3 AND pos = ?4",
                )
                .map_err(sql)?
                .execute(params![t, w, th, pos, to_json(&inlined)?])
                .map_err(sql)?;
            }
        }
        tool_calls += tx
            .prepare_cached(
                "DELETE FROM session_tool_calls WHERE tenant = ?1 AND workspace = ?2 AND run_id = ?3",
            )
            .map_err(sql)?
            .execute(params![t, w, run])
            .map_err(sql)?;
    }
    Ok(Pruned {
        commands: 0,
        events: events as u64,
        tool_calls: tool_calls as u64,
    })
}

fn load_claim(conn: &Connection, key: &ThreadKey) -> StoreResult<Option<ClaimRow>> {
    conn.prepare_cached(
        "SELECT holder, token, expires_at_ms FROM session_claims
         WHERE tenant = ?1 AND workspace = ?2 AND thread = ?3",
    )
    .map_err(sql)?
    .query_row(
        params![key.scope.tenant, key.scope.workspace, key.thread],
        |r| {
            Ok(ClaimRow {
                holder: r.get(0)?,
                token: uint(r.get(1)?),
                expires_at_ms: r.get(2)?,
            })
        },
    )
    .optional()
    .map_err(sql)
}

fn save_claim(conn: &Connection, key: &ThreadKey, row: &ClaimRow) -> StoreResult<()> {
    conn.prepare_cached(
        "INSERT OR REPLACE INTO session_claims (tenant, workspace, thread, holder, token, expires_at_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )
    .map_err(sql)?
    .execute(params![
        key.scope.tenant,
        key.scope.workspace,
        key.thread,
        row.holder,
        int(row.token),
        row.expires_at_ms
    ])
    .map_err(sql)?;
    Ok(())
}

fn doc<T: DeserializeOwned>(
    conn: &Connection,
    query: &str,
    args: impl rusqlite::Params,
) -> StoreResult<Option<T>> {
    let text: Option<String> = conn
        .prepare_cached(query)
        .map_err(sql)?
        .query_row(args, |r| r.get(0))
        .optional()
        .map_err(sql)?;
    text.map(|t| from_json(&t)).transpose()
}

fn docs<T: DeserializeOwned>(
    conn: &Connection,
    query: &str,
    args: impl rusqlite::Params,
) -> StoreResult<Vec<T>> {
    let mut stmt = conn.prepare_cached(query).map_err(sql)?;
    let rows = stmt
        .query_map(args, |r| r.get::<_, String>(0))
        .map_err(sql)?;
    let mut out = Vec::new();
    for row in rows {
        out.push(from_json(&row.map_err(sql)?)?);
    }
    Ok(out)
}

fn load(conn: &Connection, key: &ThreadKey, commit: &Commit) -> StoreResult<Snapshot> {
    let needs = rules::needs(commit);
    let (t, w, th) = (&key.scope.tenant, &key.scope.workspace, &key.thread);
    let mut snap = Snapshot {
        thread: doc(
            conn,
            "SELECT doc FROM session_threads WHERE tenant = ?1 AND workspace = ?2 AND thread = ?3",
            params![t, w, th],
        )?,
        claim: load_claim(conn, key)?,
        ..Snapshot::default()
    };
    for run in needs.runs {
        let found: Option<RunRecord> = doc(
            conn,
            "SELECT doc FROM session_runs WHERE tenant = ?1 AND workspace = ?2 AND run_id = ?3",
            params![t, w, run],
        )?;
        if let Some(r) = found {
            snap.runs.insert(run, r);
        }
    }
    for (run, call) in needs.calls {
        let found: Option<ToolCallRecord> = doc(
            conn,
            "SELECT doc FROM session_tool_calls
             WHERE tenant = ?1 AND workspace = ?2 AND run_id = ?3 AND call_id = ?4",
            params![t, w, run, call],
        )?;
        if let Some(c) = found {
            snap.calls.insert((run, call), c);
        }
    }
    for id in needs.messages {
        let thread: Option<String> = conn
            .prepare_cached(
                "SELECT thread FROM session_messages WHERE tenant = ?1 AND workspace = ?2 AND id = ?3",
            )
            .map_err(sql)?
            .query_row(params![t, w, id], |r| r.get(0))
            .optional()
            .map_err(sql)?;
        if let Some(thread) = thread {
            snap.messages.insert(id, thread);
        }
    }
    for name in needs.cursors {
        let value: Option<i64> = conn
            .prepare_cached(
                "SELECT value FROM session_cursors
                 WHERE tenant = ?1 AND workspace = ?2 AND thread = ?3 AND name = ?4",
            )
            .map_err(sql)?
            .query_row(params![t, w, th, name], |r| r.get(0))
            .optional()
            .map_err(sql)?;
        if let Some(v) = value {
            snap.cursors.insert(name, uint(v));
        }
    }
    for id in needs.checkpoints {
        let exists: Option<i64> = conn
            .prepare_cached(
                "SELECT 1 FROM session_checkpoints
                 WHERE tenant = ?1 AND workspace = ?2 AND thread = ?3 AND id = ?4",
            )
            .map_err(sql)?
            .query_row(params![t, w, th, id], |r| r.get(0))
            .optional()
            .map_err(sql)?;
        if exists.is_some() {
            snap.checkpoints.insert(id);
        }
    }
    if let Some(cmd) = &commit.command {
        snap.command_exists = command(conn, &cmd.key)?.is_some();
    }
    Ok(snap)
}

fn command(conn: &Connection, key: &CommandKey) -> StoreResult<Option<Value>> {
    doc(
        conn,
        "SELECT result FROM session_commands
         WHERE tenant = ?1 AND workspace = ?2 AND sender = ?3 AND command_id = ?4",
        params![
            key.scope.tenant,
            key.scope.workspace,
            key.sender,
            key.command_id
        ],
    )
}

fn insert_command(
    conn: &Connection,
    key: &CommandKey,
    result: &Value,
    now: i64,
) -> StoreResult<()> {
    conn.prepare_cached(
        "INSERT INTO session_commands (tenant, workspace, sender, command_id, result, at_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )
    .map_err(sql)?
    .execute(params![
        key.scope.tenant,
        key.scope.workspace,
        key.sender,
        key.command_id,
        to_json(result)?,
        now
    ])
    .map_err(sql)?;
    Ok(())
}

fn save(conn: &Connection, key: &ThreadKey, ch: &Changes, now: i64) -> StoreResult<()> {
    let (t, w, th) = (&key.scope.tenant, &key.scope.workspace, &key.thread);
    conn.prepare_cached(
        "INSERT OR REPLACE INTO session_threads (tenant, workspace, thread, doc) VALUES (?1, ?2, ?3, ?4)",
    )
    .map_err(sql)?
    .execute(params![t, w, th, to_json(&ch.thread)?])
    .map_err(sql)?;
    for m in &ch.messages {
        conn.prepare_cached(
            "INSERT INTO session_messages (tenant, workspace, id, thread, seq, doc)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .map_err(sql)?
        .execute(params![t, w, m.id, th, int(m.seq), to_json(m)?])
        .map_err(sql)?;
    }
    for h in &ch.history {
        let (message_ref, call_ref) = match &h.item {
            HistoryItem::Posted { message_id } => (Some(message_id.as_str()), None),
            HistoryItem::ToolResult { call_id } => (None, Some(call_id.as_str())),
            HistoryItem::Message { .. } | HistoryItem::Rewind { .. } => (None, None),
        };
        conn.prepare_cached(
            "INSERT INTO session_history (tenant, workspace, thread, pos, run_id, message_ref, call_ref, item)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )
        .map_err(sql)?
        .execute(params![
            t,
            w,
            th,
            int(h.pos),
            h.run_id,
            message_ref,
            call_ref,
            to_json(&h.item)?
        ])
        .map_err(sql)?;
    }
    for r in &ch.runs {
        conn.prepare_cached(
            "INSERT OR REPLACE INTO session_runs (tenant, workspace, run_id, thread, started_seq, doc)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .map_err(sql)?
        .execute(params![t, w, r.run_id, th, int(r.started_seq), to_json(r)?])
        .map_err(sql)?;
    }
    for c in &ch.calls {
        conn.prepare_cached(
            "INSERT INTO session_tool_calls (tenant, workspace, run_id, call_id, started_seq, doc)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT (tenant, workspace, run_id, call_id)
             DO UPDATE SET started_seq = excluded.started_seq, doc = excluded.doc",
        )
        .map_err(sql)?
        .execute(params![
            t,
            w,
            c.run_id,
            c.call_id,
            int(c.started_seq),
            to_json(c)?
        ])
        .map_err(sql)?;
    }
    for e in &ch.events {
        conn.prepare_cached(
            "INSERT INTO session_events (tenant, workspace, thread, seq, doc) VALUES (?1, ?2, ?3, ?4, ?5)",
        )
        .map_err(sql)?
        .execute(params![t, w, th, int(e.seq), to_json(e)?])
        .map_err(sql)?;
    }
    for (name, value) in &ch.cursors {
        conn.prepare_cached(
            "INSERT OR REPLACE INTO session_cursors (tenant, workspace, thread, name, value)
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )
        .map_err(sql)?
        .execute(params![t, w, th, name, int(*value)])
        .map_err(sql)?;
    }
    for c in &ch.checkpoints {
        conn.prepare_cached(
            "INSERT INTO session_checkpoints (tenant, workspace, thread, id, seq, doc)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .map_err(sql)?
        .execute(params![t, w, th, c.id, int(c.seq), to_json(c)?])
        .map_err(sql)?;
    }
    for (id, files) in &ch.checkpoint_files {
        for (ord, f) in files.iter().enumerate() {
            conn.prepare_cached(
                "INSERT INTO session_checkpoint_files
                 (tenant, workspace, thread, checkpoint_id, ord, path, bytes)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .map_err(sql)?
            .execute(params![t, w, th, id, int(ord as u64), f.path, f.bytes])
            .map_err(sql)?;
        }
    }
    if let Some(keep) = ch.checkpoint_keep {
        conn.prepare_cached(
            "DELETE FROM session_checkpoints WHERE tenant = ?1 AND workspace = ?2 AND thread = ?3
             AND seq < (SELECT seq FROM session_checkpoints
                        WHERE tenant = ?1 AND workspace = ?2 AND thread = ?3
                        ORDER BY seq DESC LIMIT 1 OFFSET ?4)",
        )
        .map_err(sql)?
        .execute(params![t, w, th, int(keep as u64) - 1])
        .map_err(sql)?;
        conn.prepare_cached(
            "DELETE FROM session_checkpoint_files WHERE tenant = ?1 AND workspace = ?2 AND thread = ?3
             AND checkpoint_id NOT IN (SELECT id FROM session_checkpoints
                                       WHERE tenant = ?1 AND workspace = ?2 AND thread = ?3)",
        )
        .map_err(sql)?
        .execute(params![t, w, th])
        .map_err(sql)?;
    }
    if let Some(cmd) = &ch.command {
        insert_command(conn, &cmd.key, &cmd.result, now)?;
    }
    Ok(())
}

#[async_trait]
impl SessionStore for SqliteStore {
    async fn commit(&self, thread: &ThreadKey, commit: Commit) -> StoreResult<Committed> {
        rules::precheck(thread, &commit)?;
        let key = thread.clone();
        self.write(move |tx, now| {
            let snap = load(tx, &key, &commit)?;
            let changes = rules::apply(&key, snap, commit, now)?;
            save(tx, &key, &changes, now)?;
            Ok(changes.committed)
        })
        .await
    }

    async fn acquire_claim(
        &self,
        thread: &ThreadKey,
        holder: &str,
        ttl: Duration,
    ) -> StoreResult<ClaimAttempt> {
        rules::check_thread(thread)?;
        let key = thread.clone();
        let holder = holder.to_string();
        self.write(move |tx, now| {
            let row = load_claim(tx, &key)?;
            let (attempt, row) = rules::acquire(row.as_ref(), &holder, now, ttl)?;
            if let Some(row) = row {
                save_claim(tx, &key, &row)?;
            }
            Ok(attempt)
        })
        .await
    }

    async fn renew_claim(
        &self,
        thread: &ThreadKey,
        claim: &Claim,
        ttl: Duration,
    ) -> StoreResult<Claim> {
        rules::check_thread(thread)?;
        let key = thread.clone();
        let claim = claim.clone();
        self.write(move |tx, now| {
            let row = load_claim(tx, &key)?;
            let (claim, row) = rules::renew(row.as_ref(), &claim, now, ttl)?;
            save_claim(tx, &key, &row)?;
            Ok(claim)
        })
        .await
    }

    async fn release_claim(&self, thread: &ThreadKey, claim: &Claim) -> StoreResult<bool> {
        rules::check_thread(thread)?;
        let key = thread.clone();
        let claim = claim.clone();
        self.write(move |tx, _| {
            let row = load_claim(tx, &key)?;
            match rules::release(row.as_ref(), &claim) {
                Some(row) => {
                    save_claim(tx, &key, &row)?;
                    Ok(true)
                }
                None => Ok(false),
            }
        })
        .await
    }

    async fn claim(&self, thread: &ThreadKey) -> StoreResult<Option<Claim>> {
        let key = thread.clone();
        self.blocking(move |conn, _| {
            Ok(load_claim(conn, &key)?.and_then(|row| {
                row.holder.map(|holder| Claim {
                    holder,
                    token: row.token,
                    expires_at_ms: row.expires_at_ms,
                })
            }))
        })
        .await
    }

    async fn thread(&self, thread: &ThreadKey) -> StoreResult<Option<ThreadInfo>> {
        let rows = self
            .thread_rows(
                thread,
                "SELECT doc FROM session_threads WHERE tenant = ?1 AND workspace = ?2 AND thread = ?3",
                Vec::new(),
            )
            .await?;
        Ok(rows.into_iter().next())
    }

    async fn threads(
        &self,
        scope: &Scope,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<ThreadInfo>> {
        let s = scope.clone();
        let after = after.map(str::to_string);
        self.blocking(move |conn, _| {
            docs(
                conn,
                "SELECT doc FROM session_threads
                 WHERE tenant = ?1 AND workspace = ?2 AND (?3 IS NULL OR thread > ?3)
                 ORDER BY thread LIMIT ?4",
                params![s.tenant, s.workspace, after, page(limit)],
            )
        })
        .await
    }

    async fn events(
        &self,
        thread: &ThreadKey,
        after_seq: u64,
        limit: usize,
    ) -> StoreResult<Vec<Event>> {
        self.thread_rows(
            thread,
            "SELECT doc FROM session_events
             WHERE tenant = ?1 AND workspace = ?2 AND thread = ?3 AND seq > ?4
             ORDER BY seq LIMIT ?5",
            vec![int(after_seq), page(limit)],
        )
        .await
    }

    async fn messages(
        &self,
        thread: &ThreadKey,
        after_seq: u64,
        limit: usize,
    ) -> StoreResult<Vec<PostedMessage>> {
        self.thread_rows(
            thread,
            "SELECT doc FROM session_messages
             WHERE tenant = ?1 AND workspace = ?2 AND thread = ?3 AND seq > ?4
             ORDER BY seq LIMIT ?5",
            vec![int(after_seq), page(limit)],
        )
        .await
    }

    async fn message(&self, scope: &Scope, id: &str) -> StoreResult<Option<PostedMessage>> {
        let rows = self
            .scope_rows(
                scope,
                "SELECT doc FROM session_messages WHERE tenant = ?1 AND workspace = ?2 AND id = ?3",
                id,
            )
            .await?;
        Ok(rows.into_iter().next())
    }

    async fn history(&self, thread: &ThreadKey, from_pos: u64) -> StoreResult<Vec<HistoryEntry>> {
        let k = thread.clone();
        self.blocking(move |conn, _| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT h.pos, h.run_id, h.item, m.doc, c.doc FROM session_history h
                     LEFT JOIN session_messages m
                       ON m.tenant = h.tenant AND m.workspace = h.workspace AND m.id = h.message_ref
                     LEFT JOIN session_tool_calls c
                       ON c.tenant = h.tenant AND c.workspace = h.workspace
                      AND c.run_id = h.run_id AND c.call_id = h.call_ref
                     WHERE h.tenant = ?1 AND h.workspace = ?2 AND h.thread = ?3 AND h.pos >= ?4
                     ORDER BY h.pos",
                )
                .map_err(sql)?;
            let rows = stmt
                .query_map(
                    params![k.scope.tenant, k.scope.workspace, k.thread, int(from_pos)],
                    |r| {
                        Ok((
                            r.get::<_, i64>(0)?,
                            r.get::<_, Option<String>>(1)?,
                            r.get::<_, String>(2)?,
                            r.get::<_, Option<String>>(3)?,
                            r.get::<_, Option<String>>(4)?,
                        ))
                    },
                )
                .map_err(sql)?;
            let mut out = Vec::new();
            for row in rows {
                let (pos, run_id, item, posted, call) = row.map_err(sql)?;
                let item: HistoryItem = from_json(&item)?;
                let posted: Option<PostedMessage> = posted.map(|p| from_json(&p)).transpose()?;
                let call: Option<ToolCallRecord> = call.map(|c| from_json(&c)).transpose()?;
                out.push(HistoryEntry {
                    pos: uint(pos),
                    run_id,
                    message: rules::resolve(&item, posted.as_ref(), call.as_ref())?,
                    item,
                });
            }
            Ok(out)
        })
        .await
    }

    async fn run(&self, scope: &Scope, run_id: &str) -> StoreResult<Option<RunRecord>> {
        let rows = self
            .scope_rows(
                scope,
                "SELECT doc FROM session_runs WHERE tenant = ?1 AND workspace = ?2 AND run_id = ?3",
                run_id,
            )
            .await?;
        Ok(rows.into_iter().next())
    }

    async fn runs(&self, thread: &ThreadKey) -> StoreResult<Vec<RunRecord>> {
        self.thread_rows(
            thread,
            "SELECT doc FROM session_runs WHERE tenant = ?1 AND workspace = ?2 AND thread = ?3
             ORDER BY started_seq",
            Vec::new(),
        )
        .await
    }

    async fn tool_calls(&self, scope: &Scope, run_id: &str) -> StoreResult<Vec<ToolCallRecord>> {
        self.scope_rows(
            scope,
            "SELECT doc FROM session_tool_calls WHERE tenant = ?1 AND workspace = ?2 AND run_id = ?3
             ORDER BY started_seq",
            run_id,
        )
        .await
    }

    async fn cursor(&self, thread: &ThreadKey, name: &str) -> StoreResult<u64> {
        let k = thread.clone();
        let name = name.to_string();
        self.blocking(move |conn, _| {
            let v: Option<i64> = conn
                .prepare_cached(
                    "SELECT value FROM session_cursors
                     WHERE tenant = ?1 AND workspace = ?2 AND thread = ?3 AND name = ?4",
                )
                .map_err(sql)?
                .query_row(
                    params![k.scope.tenant, k.scope.workspace, k.thread, name],
                    |r| r.get(0),
                )
                .optional()
                .map_err(sql)?;
            Ok(v.map_or(0, uint))
        })
        .await
    }

    async fn checkpoints(&self, thread: &ThreadKey) -> StoreResult<Vec<Checkpoint>> {
        self.thread_rows(
            thread,
            "SELECT doc FROM session_checkpoints WHERE tenant = ?1 AND workspace = ?2 AND thread = ?3
             ORDER BY seq",
            Vec::new(),
        )
        .await
    }

    async fn checkpoint_files(
        &self,
        thread: &ThreadKey,
        checkpoint_id: &str,
    ) -> StoreResult<Option<Vec<crate::checkpoint::FileImage>>> {
        let (k, id) = (thread.clone(), checkpoint_id.to_owned());
        self.blocking(move |conn, _| {
            let (t, w, th) = (&k.scope.tenant, &k.scope.workspace, &k.thread);
            let known = conn
                .prepare_cached(
                    "SELECT 1 FROM session_checkpoints
                     WHERE tenant = ?1 AND workspace = ?2 AND thread = ?3 AND id = ?4",
                )
                .map_err(sql)?
                .query_row(params![t, w, th, id], |_| Ok(()))
                .optional()
                .map_err(sql)?
                .is_some();
            if !known {
                return Ok(None);
            }
            let mut stmt = conn
                .prepare_cached(
                    "SELECT path, bytes FROM session_checkpoint_files
                     WHERE tenant = ?1 AND workspace = ?2 AND thread = ?3 AND checkpoint_id = ?4
                     ORDER BY ord",
                )
                .map_err(sql)?;
            let rows = stmt
                .query_map(params![t, w, th, id], |r| {
                    Ok(crate::checkpoint::FileImage {
                        path: r.get(0)?,
                        bytes: r.get(1)?,
                    })
                })
                .map_err(sql)?;
            let mut files = Vec::new();
            for row in rows {
                files.push(row.map_err(sql)?);
            }
            Ok(Some(files))
        })
        .await
    }

    async fn command_result(&self, key: &CommandKey) -> StoreResult<Option<Value>> {
        let key = key.clone();
        self.blocking(move |conn, _| command(conn, &key)).await
    }

    async fn record_command(&self, key: &CommandKey, result: Value) -> StoreResult<Option<Value>> {
        rules::check_command(key)?;
        let key = key.clone();
        self.write(move |tx, now| {
            if let Some(existing) = command(tx, &key)? {
                return Ok(Some(existing));
            }
            insert_command(tx, &key, &result, now)?;
            Ok(None)
        })
        .await
    }

    async fn prune(&self, scope: &Scope, before_ms: i64) -> StoreResult<Pruned> {
        let mut pruned = Pruned::default();
        let mut after: Option<String> = None;
        loop {
            let page = self.threads(scope, after.as_deref(), MAX_PAGE).await?;
            let Some(last) = page.last() else {
                break;
            };
            after = Some(last.thread.clone());
            for info in page {
                // One transaction a thread: the write lock is held briefly.
                let key = scope.thread(info.thread);
                let p = self
                    .write(move |tx, _| prune_thread(tx, &key, before_ms))
                    .await?;
                pruned.events += p.events;
                pruned.tool_calls += p.tool_calls;
            }
        }
        let s = scope.clone();
        let commands = self
            .write(move |tx, _| {
                tx.prepare_cached(
                    "DELETE FROM session_commands WHERE tenant = ?1 AND workspace = ?2 AND at_ms < ?3",
                )
                .map_err(sql)?
                .execute(params![s.tenant, s.workspace, before_ms])
                .map_err(sql)
            })
            .await?;
        pruned.commands = commands as u64;
        Ok(pruned)
    }

    async fn lagging_threads(
        &self,
        ahead: &str,
        behind: &str,
        limit: usize,
    ) -> StoreResult<Vec<ThreadKey>> {
        let (ahead, behind) = (ahead.to_string(), behind.to_string());
        self.blocking(move |conn, _| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT a.tenant, a.workspace, a.thread FROM session_cursors a
                     LEFT JOIN session_cursors b
                       ON b.tenant = a.tenant AND b.workspace = a.workspace
                      AND b.thread = a.thread AND b.name = ?2
                     WHERE a.name = ?1 AND a.value > COALESCE(b.value, 0)
                     ORDER BY a.tenant, a.workspace, a.thread LIMIT ?3",
                )
                .map_err(sql)?;
            let rows = stmt
                .query_map(params![ahead, behind, page(limit)], |r| {
                    Ok(ThreadKey {
                        scope: Scope {
                            tenant: r.get(0)?,
                            workspace: r.get(1)?,
                        },
                        thread: r.get(2)?,
                    })
                })
                .map_err(sql)?;
            rows.collect::<Result<Vec<_>, _>>().map_err(sql)
        })
        .await
    }

    fn now_ms(&self) -> i64 {
        self.inner.clock.now_ms()
    }

    fn teams(&self) -> Option<&dyn crate::team::TeamStore> {
        Some(self)
    }
}
