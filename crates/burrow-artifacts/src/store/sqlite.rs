//! `SqliteArtifactStore`: the artifact store in one SQLite file (WAL), one `BEGIN IMMEDIATE` transaction per call, its blocking calls lent a worker thread or run on tokio's blocking pool.
//!
//! # Semantics
//! - **One file, many processes.** Every process (or connection) opens the
//!   same file; `BEGIN IMMEDIATE` takes SQLite's write lock before the first
//!   read, so the head a change was checked against cannot move before it
//!   writes: of two changes from one base, the second sees the first's head
//!   and is a Conflict.
//! - **Blocking.** As burrow-runtime's `SqliteStore` (ADR 0195): on a
//!   multi-threaded tokio runtime each call runs in `block_in_place`, on a
//!   current-thread one on `spawn_blocking`. A busy file is waited for up to
//!   the busy timeout (5 s by default), then a Store error.
//! - **Durability.** WAL with `synchronous=NORMAL`: a commit survives the
//!   process dying at any point.
//! - **Kept heads.** A connection keeps the heads it wrote decoded (up to
//!   64), so the next change to one does not parse its snapshot again; it
//!   trusts them only while `PRAGMA data_version` says no other connection
//!   has committed since its own last commit, and drops them all otherwise.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use burrow_runtime::session::Scope;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::engine::{Transact, Tx};
use super::types::{Event, Proposal, Revision, Versioned};
use crate::error::{ArtifactError, Result};
use crate::kind::Kinds;

const SCHEMA_VERSION: i64 = 1;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS artifact_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS artifact_heads (
    tenant TEXT NOT NULL, workspace TEXT NOT NULL, id TEXT NOT NULL, kind TEXT NOT NULL,
    archived INTEGER NOT NULL, doc TEXT NOT NULL,
    PRIMARY KEY (tenant, workspace, id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS artifact_revisions (
    tenant TEXT NOT NULL, workspace TEXT NOT NULL, id TEXT NOT NULL, version INTEGER NOT NULL,
    doc TEXT NOT NULL,
    PRIMARY KEY (tenant, workspace, id, version));
CREATE TABLE IF NOT EXISTS artifact_events (
    tenant TEXT NOT NULL, workspace TEXT NOT NULL, seq INTEGER NOT NULL, doc TEXT NOT NULL,
    PRIMARY KEY (tenant, workspace, seq)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS artifact_proposals (
    tenant TEXT NOT NULL, workspace TEXT NOT NULL, id INTEGER NOT NULL, doc TEXT NOT NULL,
    PRIMARY KEY (tenant, workspace, id)) WITHOUT ROWID;
";

/// Options of a [`SqliteArtifactStore`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SqliteArtifactOptions {
    /// How long a call waits for another writer's lock (5 s).
    pub busy_timeout: Duration,
    /// Run each call in `block_in_place` on a multi-threaded runtime (on);
    /// off sends every call to the blocking pool.
    pub in_place: bool,
}

impl Default for SqliteArtifactOptions {
    fn default() -> Self {
        Self {
            busy_timeout: Duration::from_secs(5),
            in_place: true,
        }
    }
}

/// An artifact store in one SQLite file, shared safely by threads and processes.
#[derive(Debug, Clone)]
pub struct SqliteArtifactStore {
    kinds: Arc<Kinds>,
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    conn: Mutex<Conn>,
    path: PathBuf,
    in_place: bool,
}

/// The connection and the heads this connection last wrote, kept decoded so
/// that the next change to one does not parse its snapshot again.
///
/// The cache is trusted only while `PRAGMA data_version` is what it was at
/// this connection's last commit: any other connection's commit (another
/// process, another handle) changes it, and the whole cache is dropped. A
/// head is taken out of the cache when read and put back only once the
/// transaction that wrote it has committed.
struct Conn {
    conn: Connection,
    heads: HashMap<HeadKey, Versioned>,
    data_version: i64,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn")
            .field("conn", &self.conn)
            .field("kept_heads", &self.heads.len())
            .field("data_version", &self.data_version)
            .finish()
    }
}

/// A head's tenant, workspace and id.
type HeadKey = (String, String, String);

/// The most heads a connection keeps decoded.
const MAX_CACHED_HEADS: usize = 64;

fn sql(e: rusqlite::Error) -> ArtifactError {
    ArtifactError::store("the SQLite artifact store failed", e)
}

fn to_json<T: Serialize>(value: &T) -> Result<String> {
    serde_json::to_string(value)
        .map_err(|e| ArtifactError::corrupt(format!("a record could not be encoded: {e}")))
}

fn from_json<T: DeserializeOwned>(text: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| {
        ArtifactError::corrupt(format!(
            "a stored artifact record could not be decoded: {e}"
        ))
    })
}

fn int(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl SqliteArtifactStore {
    /// Opens (creating if missing) the store in the file at `path`, accepting `kinds`.
    ///
    /// Blocks briefly (opening the file, creating its tables).
    pub fn open(path: impl AsRef<Path>, kinds: impl Into<Arc<Kinds>>) -> Result<Self> {
        Self::open_with(path, kinds, SqliteArtifactOptions::default())
    }

    /// Opens the store at `path` with `options`.
    pub fn open_with(
        path: impl AsRef<Path>,
        kinds: impl Into<Arc<Kinds>>,
        options: SqliteArtifactOptions,
    ) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        if path.is_dir() {
            return Err(ArtifactError::invalid_argument(
                "the SQLite artifact store's path names a directory, not a database file.",
            ));
        }
        let mut conn = Connection::open(&path).map_err(sql)?;
        conn.busy_timeout(options.busy_timeout).map_err(sql)?;
        switch_to_wal(&conn, options.busy_timeout)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(sql)?;
        conn.set_prepared_statement_cache_capacity(32);
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql)?;
        tx.execute_batch(SCHEMA).map_err(sql)?;
        let version: Option<i64> = tx
            .query_row(
                "SELECT value FROM artifact_meta WHERE key = 'schema'",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(sql)?;
        if let Some(v) = version
            && v > SCHEMA_VERSION
        {
            return Err(ArtifactError::corrupt(format!(
                "the SQLite artifact store was written by a newer burrow (schema {v}; this one knows {SCHEMA_VERSION})."
            )));
        }
        tx.execute(
            "INSERT OR REPLACE INTO artifact_meta (key, value) VALUES ('schema', ?1)",
            params![SCHEMA_VERSION],
        )
        .map_err(sql)?;
        tx.commit().map_err(sql)?;
        Ok(Self {
            kinds: kinds.into(),
            inner: Arc::new(Inner {
                conn: Mutex::new(Conn {
                    conn,
                    heads: HashMap::new(),
                    data_version: -1,
                }),
                path,
                in_place: options.in_place,
            }),
        })
    }

    /// The database file's path.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }
}

impl Transact for SqliteArtifactStore {
    fn kinds(&self) -> &Arc<Kinds> {
        &self.kinds
    }

    async fn transact<T, F>(&self, scope: &Scope, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut dyn Tx) -> Result<T> + Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        let scope = scope.clone();
        let call = move || {
            let mut guard = inner.conn.lock().unwrap_or_else(|e| e.into_inner());
            let Conn {
                conn,
                heads,
                data_version,
            } = &mut *guard;
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(sql)?;
            let version: i64 = tx
                .query_row("PRAGMA data_version", [], |r| r.get(0))
                .map_err(sql)?;
            if version != *data_version {
                heads.clear();
                *data_version = version;
            }
            let mut sql_tx = SqlTx {
                tx: &tx,
                scope: &scope,
                cached: heads,
                written: Vec::new(),
            };
            let value = f(&mut sql_tx)?;
            let written = std::mem::take(&mut sql_tx.written);
            tx.commit().map_err(sql)?;
            if heads.len() + written.len() > MAX_CACHED_HEADS {
                heads.clear();
            }
            for head in written {
                heads.insert(
                    (
                        scope.tenant.clone(),
                        scope.workspace.clone(),
                        head.id.clone(),
                    ),
                    head,
                );
            }
            Ok(value)
        };
        let multi_thread = tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        if multi_thread && self.inner.in_place {
            return tokio::task::block_in_place(call);
        }
        tokio::task::spawn_blocking(call).await.map_err(|e| {
            ArtifactError::store("a SQLite artifact task stopped before it finished", e)
        })?
    }
}

/// Switches the file to WAL mode, trying again while another connection holds it
/// (SQLite answers a racing `PRAGMA journal_mode` with SQLITE_BUSY at once).
fn switch_to_wal(conn: &Connection, patience: Duration) -> Result<()> {
    let started = Instant::now();
    loop {
        match conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0)) {
            Ok(mode) if mode.eq_ignore_ascii_case("wal") => return Ok(()),
            Ok(_) => {
                return Err(ArtifactError::corrupt(
                    "the SQLite artifact store could not switch its file to WAL mode.",
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

struct SqlTx<'a> {
    tx: &'a rusqlite::Transaction<'a>,
    scope: &'a Scope,
    /// Heads decoded before, valid for this transaction (see [`Conn`]).
    cached: &'a mut HashMap<HeadKey, Versioned>,
    /// The heads this transaction wrote, cached once it commits.
    written: Vec<Versioned>,
}

impl SqlTx<'_> {
    fn docs<T: DeserializeOwned>(
        &self,
        query: &str,
        args: &[&dyn rusqlite::ToSql],
    ) -> Result<Vec<T>> {
        let mut stmt = self.tx.prepare_cached(query).map_err(sql)?;
        let rows = stmt
            .query_map(args, |r| r.get::<_, String>(0))
            .map_err(sql)?;
        let mut out = Vec::new();
        for row in rows {
            out.push(from_json(&row.map_err(sql)?)?);
        }
        Ok(out)
    }

    fn doc<T: DeserializeOwned>(
        &self,
        query: &str,
        args: &[&dyn rusqlite::ToSql],
    ) -> Result<Option<T>> {
        let mut stmt = self.tx.prepare_cached(query).map_err(sql)?;
        let text: Option<String> = stmt.query_row(args, |r| r.get(0)).optional().map_err(sql)?;
        text.map(|t| from_json(&t)).transpose()
    }

    fn max(&self, query: &str) -> Result<u64> {
        let mut stmt = self.tx.prepare_cached(query).map_err(sql)?;
        let v: Option<i64> = stmt
            .query_row(params![self.scope.tenant, self.scope.workspace], |r| {
                r.get(0)
            })
            .map_err(sql)?;
        Ok(v.and_then(|v| u64::try_from(v).ok()).unwrap_or(0))
    }

    fn exec(&self, query: &str, args: &[&dyn rusqlite::ToSql]) -> Result<()> {
        let mut stmt = self.tx.prepare_cached(query).map_err(sql)?;
        stmt.execute(args).map_err(sql)?;
        Ok(())
    }
}

impl Tx for SqlTx<'_> {
    fn head(&mut self, id: &str) -> Result<Option<Versioned>> {
        let s = self.scope;
        let key = (s.tenant.clone(), s.workspace.clone(), id.to_owned());
        if let Some(head) = self.cached.remove(&key) {
            return Ok(Some(head));
        }
        self.doc(
            "SELECT doc FROM artifact_heads WHERE tenant = ?1 AND workspace = ?2 AND id = ?3",
            params![s.tenant, s.workspace, id],
        )
    }

    fn heads(&mut self) -> Result<Vec<Versioned>> {
        let s = self.scope;
        self.docs(
            "SELECT doc FROM artifact_heads WHERE tenant = ?1 AND workspace = ?2 ORDER BY id",
            params![s.tenant, s.workspace],
        )
    }

    fn revisions_after(&mut self, id: &str, after: u64) -> Result<Vec<Revision>> {
        let s = self.scope;
        self.docs(
            "SELECT doc FROM artifact_revisions WHERE tenant = ?1 AND workspace = ?2 AND id = ?3 \
             AND version > ?4 ORDER BY version",
            params![s.tenant, s.workspace, id, int(after)],
        )
    }

    fn revision(&mut self, id: &str, version: u64) -> Result<Option<Revision>> {
        let s = self.scope;
        self.doc(
            "SELECT doc FROM artifact_revisions WHERE tenant = ?1 AND workspace = ?2 AND id = ?3 \
             AND version = ?4",
            params![s.tenant, s.workspace, id, int(version)],
        )
    }

    fn last_seq(&mut self) -> Result<u64> {
        self.max("SELECT MAX(seq) FROM artifact_events WHERE tenant = ?1 AND workspace = ?2")
    }

    fn events_after(&mut self, after: u64, limit: usize) -> Result<Vec<Event>> {
        let s = self.scope;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.docs(
            "SELECT doc FROM artifact_events WHERE tenant = ?1 AND workspace = ?2 AND seq > ?3 \
             ORDER BY seq LIMIT ?4",
            params![s.tenant, s.workspace, int(after), limit],
        )
    }

    fn last_proposal(&mut self) -> Result<u64> {
        self.max("SELECT MAX(id) FROM artifact_proposals WHERE tenant = ?1 AND workspace = ?2")
    }

    fn proposal(&mut self, id: u64) -> Result<Option<Proposal>> {
        let s = self.scope;
        self.doc(
            "SELECT doc FROM artifact_proposals WHERE tenant = ?1 AND workspace = ?2 AND id = ?3",
            params![s.tenant, s.workspace, int(id)],
        )
    }

    fn proposals(&mut self) -> Result<Vec<Proposal>> {
        let s = self.scope;
        self.docs(
            "SELECT doc FROM artifact_proposals WHERE tenant = ?1 AND workspace = ?2 ORDER BY id",
            params![s.tenant, s.workspace],
        )
    }

    fn put_head(&mut self, head: &Versioned) -> Result<()> {
        let s = self.scope;
        let doc = to_json(head)?;
        self.written.retain(|h| h.id != head.id);
        self.written.push(head.clone());
        self.exec(
            "INSERT OR REPLACE INTO artifact_heads (tenant, workspace, id, kind, archived, doc) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                s.tenant,
                s.workspace,
                head.id,
                head.kind,
                head.archived,
                doc
            ],
        )
    }

    fn put_revision(&mut self, id: &str, revision: &Revision) -> Result<()> {
        let s = self.scope;
        let doc = to_json(revision)?;
        // A plain INSERT: a revision is written once, never replaced.
        self.exec(
            "INSERT INTO artifact_revisions (tenant, workspace, id, version, doc) \
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![s.tenant, s.workspace, id, int(revision.version), doc],
        )
    }

    fn put_event(&mut self, event: &Event) -> Result<()> {
        let s = self.scope;
        let doc = to_json(event)?;
        self.exec(
            "INSERT INTO artifact_events (tenant, workspace, seq, doc) VALUES (?1, ?2, ?3, ?4)",
            params![s.tenant, s.workspace, int(event.seq), doc],
        )
    }

    fn put_proposal(&mut self, proposal: &Proposal) -> Result<()> {
        let s = self.scope;
        let doc = to_json(proposal)?;
        self.exec(
            "INSERT OR REPLACE INTO artifact_proposals (tenant, workspace, id, doc) \
             VALUES (?1, ?2, ?3, ?4)",
            params![s.tenant, s.workspace, int(proposal.id), doc],
        )
    }
}
