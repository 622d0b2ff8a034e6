//! `PostgresStore`: the session store in PostgreSQL (tokio-postgres), for runners on several machines; each commit and claim change is one transaction holding the thread's advisory lock.
//!
//! # Semantics
//! - **One writer per thread at a time.** A commit or claim change first takes
//!   `pg_advisory_xact_lock` on the thread's key (a 64-bit hash of tenant,
//!   workspace and thread), then reads and writes under it, so fencing,
//!   cursors and the thread's seq are checked and saved in the same
//!   transaction; the lock is released at commit or rollback. Two threads
//!   commit in parallel. Ids unique per workspace across threads (messages,
//!   runs) and command keys are primary keys: a concurrent duplicate fails
//!   its insert and is reported `IdInUse` or `DuplicateCommand`.
//! - **Text, not JSONB.** Records are stored as JSON text, which may hold any
//!   character (JSONB refuses `\u0000`); names holding NUL are refused.
//! - **Connections.** A small pool, connected on demand; a connection whose
//!   call was cancelled or failed is closed rather than reused (an open
//!   transaction dies with it). `schema` puts every table in one schema
//!   (created if missing), so several stores can share a database.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::sync::Mutex;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Config, GenericClient, NoTls};

use super::clock::{Clock, SystemClock};
use super::error::{StoreError, StoreErrorKind, StoreResult};
use super::rules::{self, Changes, ClaimRow, Snapshot};
use super::types::{
    Checkpoint, Claim, ClaimAttempt, CommandKey, Commit, Committed, Event, HistoryEntry,
    HistoryItem, PostedMessage, RunRecord, Scope, ThreadInfo, ThreadKey, ToolCallRecord,
};
use super::{MAX_PAGE, SessionStore};

const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS session_threads (
        tenant TEXT NOT NULL, workspace TEXT NOT NULL, thread TEXT NOT NULL, doc TEXT NOT NULL,
        PRIMARY KEY (tenant, workspace, thread))",
    "CREATE TABLE IF NOT EXISTS session_claims (
        tenant TEXT NOT NULL, workspace TEXT NOT NULL, thread TEXT NOT NULL,
        holder TEXT, token BIGINT NOT NULL, expires_at_ms BIGINT NOT NULL,
        PRIMARY KEY (tenant, workspace, thread))",
    "CREATE TABLE IF NOT EXISTS session_events (
        tenant TEXT NOT NULL, workspace TEXT NOT NULL, thread TEXT NOT NULL, seq BIGINT NOT NULL,
        doc TEXT NOT NULL,
        PRIMARY KEY (tenant, workspace, thread, seq))",
    "CREATE TABLE IF NOT EXISTS session_messages (
        tenant TEXT NOT NULL, workspace TEXT NOT NULL, id TEXT NOT NULL, thread TEXT NOT NULL,
        seq BIGINT NOT NULL, doc TEXT NOT NULL,
        CONSTRAINT session_messages_pkey PRIMARY KEY (tenant, workspace, id))",
    "CREATE INDEX IF NOT EXISTS session_messages_by_thread
        ON session_messages (tenant, workspace, thread, seq)",
    "CREATE TABLE IF NOT EXISTS session_history (
        tenant TEXT NOT NULL, workspace TEXT NOT NULL, thread TEXT NOT NULL, pos BIGINT NOT NULL,
        run_id TEXT, message_ref TEXT, call_ref TEXT, item TEXT NOT NULL,
        PRIMARY KEY (tenant, workspace, thread, pos))",
    "CREATE TABLE IF NOT EXISTS session_runs (
        tenant TEXT NOT NULL, workspace TEXT NOT NULL, run_id TEXT NOT NULL, thread TEXT NOT NULL,
        started_seq BIGINT NOT NULL, doc TEXT NOT NULL,
        CONSTRAINT session_runs_pkey PRIMARY KEY (tenant, workspace, run_id))",
    "CREATE INDEX IF NOT EXISTS session_runs_by_thread
        ON session_runs (tenant, workspace, thread, started_seq)",
    "CREATE TABLE IF NOT EXISTS session_tool_calls (
        tenant TEXT NOT NULL, workspace TEXT NOT NULL, run_id TEXT NOT NULL, call_id TEXT NOT NULL,
        started_seq BIGINT NOT NULL, doc TEXT NOT NULL,
        PRIMARY KEY (tenant, workspace, run_id, call_id))",
    "CREATE TABLE IF NOT EXISTS session_cursors (
        tenant TEXT NOT NULL, workspace TEXT NOT NULL, thread TEXT NOT NULL, name TEXT NOT NULL,
        value BIGINT NOT NULL,
        PRIMARY KEY (tenant, workspace, thread, name))",
    "CREATE TABLE IF NOT EXISTS session_checkpoints (
        tenant TEXT NOT NULL, workspace TEXT NOT NULL, thread TEXT NOT NULL, id TEXT NOT NULL,
        seq BIGINT NOT NULL, doc TEXT NOT NULL,
        PRIMARY KEY (tenant, workspace, thread, id))",
    "CREATE TABLE IF NOT EXISTS session_commands (
        tenant TEXT NOT NULL, workspace TEXT NOT NULL, sender TEXT NOT NULL, command_id TEXT NOT NULL,
        result TEXT NOT NULL,
        CONSTRAINT session_commands_pkey PRIMARY KEY (tenant, workspace, sender, command_id))",
];

/// The advisory lock key that serialises creating the tables.
const DDL_LOCK: i64 = 0x6275_7272_6f77_0001;

/// Options of a [`PostgresStore`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PostgresOptions {
    /// The schema the tables live in (created if missing); `None`: the connection's default.
    pub schema: Option<String>,
    /// At most this many idle connections are kept (4).
    pub pool: usize,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        Self {
            schema: None,
            pool: 4,
        }
    }
}

impl PostgresOptions {
    /// The same options with the tables in `schema`.
    pub fn with_schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = Some(schema.into());
        self
    }
}

/// A session store in PostgreSQL, shared safely by processes on many machines.
#[derive(Debug, Clone)]
pub struct PostgresStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: Config,
    schema: Option<String>,
    idle: Mutex<Vec<Client>>,
    pool: usize,
    clock: Arc<dyn Clock>,
}

fn pg(e: tokio_postgres::Error) -> StoreError {
    if let Some(db) = e.as_db_error()
        && *db.code() == SqlState::UNIQUE_VIOLATION
    {
        match db.constraint() {
            Some("session_messages_pkey") => {
                return StoreError::new(
                    StoreErrorKind::IdInUse,
                    "the message id is already used in this workspace",
                );
            }
            Some("session_runs_pkey") => {
                return StoreError::new(
                    StoreErrorKind::IdInUse,
                    "the run id is already used in this workspace",
                );
            }
            Some("session_commands_pkey") => {
                return StoreError::new(
                    StoreErrorKind::DuplicateCommand,
                    "this command was carried out already",
                );
            }
            _ => {}
        }
    }
    StoreError::storage("the PostgreSQL session store failed", e)
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

/// The thread's advisory lock key: 8 bytes of SHA-256 over the length-prefixed key.
fn lock_key(key: &ThreadKey) -> i64 {
    let mut h = Sha256::new();
    for field in [&key.scope.tenant, &key.scope.workspace, &key.thread] {
        h.update((field.len() as u64).to_be_bytes());
        h.update(field.as_bytes());
    }
    let digest = h.finalize();
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    i64::from_be_bytes(bytes)
}

fn check_schema(schema: &str) -> StoreResult<()> {
    let ok = !schema.is_empty()
        && schema.len() <= 63
        && schema
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !schema.starts_with(|c: char| c.is_ascii_digit());
    if ok {
        Ok(())
    } else {
        Err(StoreError::invalid_argument(
            "a PostgreSQL schema name must be 1 to 63 lowercase letters, digits or underscores, not starting with a digit",
        ))
    }
}

/// A connection taken from the pool; returned only by [`Pooled::give_back`].
struct Pooled {
    client: Client,
}

impl PostgresStore {
    /// Connects to the database at `url` (`postgres://user@host:port/db`), tables in the default schema.
    pub async fn connect(url: &str) -> StoreResult<Self> {
        Self::connect_with(url, Arc::new(SystemClock), PostgresOptions::default()).await
    }

    /// Connects to `url` reading time from `clock`, with `options`; creates the tables if missing.
    pub async fn connect_with(
        url: &str,
        clock: Arc<dyn Clock>,
        options: PostgresOptions,
    ) -> StoreResult<Self> {
        let config: Config = url.parse().map_err(|_| {
            StoreError::invalid_argument(
                "the PostgreSQL session store's address is not a valid connection string or URL",
            )
        })?;
        if let Some(s) = &options.schema {
            check_schema(s)?;
        }
        let store = Self {
            inner: Arc::new(Inner {
                config,
                schema: options.schema,
                idle: Mutex::new(Vec::new()),
                pool: options.pool.max(1),
                clock,
            }),
        };
        let mut conn = store.take().await?;
        {
            let tx = conn.client.transaction().await.map_err(pg)?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&DDL_LOCK])
                .await
                .map_err(pg)?;
            if let Some(schema) = &store.inner.schema {
                tx.batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS \"{schema}\""))
                    .await
                    .map_err(pg)?;
            }
            for ddl in SCHEMA {
                tx.batch_execute(ddl).await.map_err(pg)?;
            }
            tx.commit().await.map_err(pg)?;
        }
        store.give_back(conn).await;
        Ok(store)
    }

    async fn take(&self) -> StoreResult<Pooled> {
        loop {
            let Some(client) = self.inner.idle.lock().await.pop() else {
                break;
            };
            if !client.is_closed() {
                return Ok(Pooled { client });
            }
        }
        let (client, connection) = self.inner.config.connect(NoTls).await.map_err(pg)?;
        tokio::spawn(async move {
            // The connection ends when its client is dropped; an error here is
            // seen by the client's next call.
            let _ = connection.await;
        });
        if let Some(schema) = &self.inner.schema {
            client
                .batch_execute(&format!("SET search_path TO \"{schema}\""))
                .await
                .map_err(pg)?;
        }
        Ok(Pooled { client })
    }

    async fn give_back(&self, conn: Pooled) {
        let mut idle = self.inner.idle.lock().await;
        if idle.len() < self.inner.pool && !conn.client.is_closed() {
            idle.push(conn.client);
        }
    }

    fn now(&self) -> i64 {
        self.inner.clock.now_ms()
    }

    /// The call's result once its transaction ended: the connection goes back
    /// to the pool only when the transaction ended cleanly (committed, or
    /// rolled back after a refusal); otherwise it is closed.
    async fn settle<T>(
        &self,
        conn: Pooled,
        result: StoreResult<T>,
        ended: Result<(), tokio_postgres::Error>,
    ) -> StoreResult<T> {
        match ended {
            Ok(()) => {
                self.give_back(conn).await;
                result
            }
            Err(e) => result.and(Err(pg(e))),
        }
    }
}

/// Takes the thread's advisory lock for the rest of the transaction.
async fn lock_thread(tx: &tokio_postgres::Transaction<'_>, thread: &ThreadKey) -> StoreResult<()> {
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&lock_key(thread)])
        .await
        .map_err(pg)?;
    Ok(())
}

/// Commits the transaction when `ok`, else rolls it back (awaited, so no
/// transaction stays open on the server while the connection waits in the pool).
async fn end(tx: tokio_postgres::Transaction<'_>, ok: bool) -> Result<(), tokio_postgres::Error> {
    if ok {
        tx.commit().await
    } else {
        tx.rollback().await
    }
}

async fn doc<T: DeserializeOwned>(
    c: &impl GenericClient,
    query: &str,
    args: &[&(dyn ToSql + Sync)],
) -> StoreResult<Option<T>> {
    let row = c.query_opt(query, args).await.map_err(pg)?;
    row.map(|r| from_json(&r.get::<_, String>(0))).transpose()
}

async fn docs<T: DeserializeOwned>(
    c: &impl GenericClient,
    query: &str,
    args: &[&(dyn ToSql + Sync)],
) -> StoreResult<Vec<T>> {
    c.query(query, args)
        .await
        .map_err(pg)?
        .iter()
        .map(|r| from_json(&r.get::<_, String>(0)))
        .collect()
}

async fn load_claim(c: &impl GenericClient, key: &ThreadKey) -> StoreResult<Option<ClaimRow>> {
    let row = c
        .query_opt(
            "SELECT holder, token, expires_at_ms FROM session_claims
             WHERE tenant = $1 AND workspace = $2 AND thread = $3",
            &[&key.scope.tenant, &key.scope.workspace, &key.thread],
        )
        .await
        .map_err(pg)?;
    Ok(row.map(|r| ClaimRow {
        holder: r.get(0),
        token: uint(r.get(1)),
        expires_at_ms: r.get(2),
    }))
}

async fn save_claim(c: &impl GenericClient, key: &ThreadKey, row: &ClaimRow) -> StoreResult<()> {
    c.execute(
        "INSERT INTO session_claims (tenant, workspace, thread, holder, token, expires_at_ms)
         VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (tenant, workspace, thread)
         DO UPDATE SET holder = EXCLUDED.holder, token = EXCLUDED.token, expires_at_ms = EXCLUDED.expires_at_ms",
        &[
            &key.scope.tenant,
            &key.scope.workspace,
            &key.thread,
            &row.holder,
            &int(row.token),
            &row.expires_at_ms,
        ],
    )
    .await
    .map_err(pg)?;
    Ok(())
}

async fn command(c: &impl GenericClient, key: &CommandKey) -> StoreResult<Option<Value>> {
    doc(
        c,
        "SELECT result FROM session_commands
         WHERE tenant = $1 AND workspace = $2 AND sender = $3 AND command_id = $4",
        &[
            &key.scope.tenant,
            &key.scope.workspace,
            &key.sender,
            &key.command_id,
        ],
    )
    .await
}

async fn insert_command(
    c: &impl GenericClient,
    key: &CommandKey,
    result: &Value,
) -> StoreResult<()> {
    c.execute(
        "INSERT INTO session_commands (tenant, workspace, sender, command_id, result)
         VALUES ($1, $2, $3, $4, $5)",
        &[
            &key.scope.tenant,
            &key.scope.workspace,
            &key.sender,
            &key.command_id,
            &to_json(result)?,
        ],
    )
    .await
    .map_err(pg)?;
    Ok(())
}

async fn load(c: &impl GenericClient, key: &ThreadKey, commit: &Commit) -> StoreResult<Snapshot> {
    let needs = rules::needs(commit);
    let (t, w, th) = (&key.scope.tenant, &key.scope.workspace, &key.thread);
    let mut snap = Snapshot {
        thread: doc(
            c,
            "SELECT doc FROM session_threads WHERE tenant = $1 AND workspace = $2 AND thread = $3",
            &[t, w, th],
        )
        .await?,
        claim: load_claim(c, key).await?,
        ..Snapshot::default()
    };
    for run in needs.runs {
        let found: Option<RunRecord> = doc(
            c,
            "SELECT doc FROM session_runs WHERE tenant = $1 AND workspace = $2 AND run_id = $3",
            &[t, w, &run],
        )
        .await?;
        if let Some(r) = found {
            snap.runs.insert(run, r);
        }
    }
    for (run, call) in needs.calls {
        let found: Option<ToolCallRecord> = doc(
            c,
            "SELECT doc FROM session_tool_calls
             WHERE tenant = $1 AND workspace = $2 AND run_id = $3 AND call_id = $4",
            &[t, w, &run, &call],
        )
        .await?;
        if let Some(f) = found {
            snap.calls.insert((run, call), f);
        }
    }
    for id in needs.messages {
        let row = c
            .query_opt(
                "SELECT thread FROM session_messages WHERE tenant = $1 AND workspace = $2 AND id = $3",
                &[t, w, &id],
            )
            .await
            .map_err(pg)?;
        if let Some(r) = row {
            snap.messages.insert(id, r.get(0));
        }
    }
    for name in needs.cursors {
        let row = c
            .query_opt(
                "SELECT value FROM session_cursors
                 WHERE tenant = $1 AND workspace = $2 AND thread = $3 AND name = $4",
                &[t, w, th, &name],
            )
            .await
            .map_err(pg)?;
        if let Some(r) = row {
            snap.cursors.insert(name, uint(r.get(0)));
        }
    }
    for id in needs.checkpoints {
        let row = c
            .query_opt(
                "SELECT 1 FROM session_checkpoints
                 WHERE tenant = $1 AND workspace = $2 AND thread = $3 AND id = $4",
                &[t, w, th, &id],
            )
            .await
            .map_err(pg)?;
        if row.is_some() {
            snap.checkpoints.insert(id);
        }
    }
    if let Some(cmd) = &commit.command {
        snap.command_exists = command(c, &cmd.key).await?.is_some();
    }
    Ok(snap)
}

async fn save(c: &impl GenericClient, key: &ThreadKey, ch: &Changes) -> StoreResult<()> {
    let (t, w, th) = (&key.scope.tenant, &key.scope.workspace, &key.thread);
    c.execute(
        "INSERT INTO session_threads (tenant, workspace, thread, doc) VALUES ($1, $2, $3, $4)
         ON CONFLICT (tenant, workspace, thread) DO UPDATE SET doc = EXCLUDED.doc",
        &[t, w, th, &to_json(&ch.thread)?],
    )
    .await
    .map_err(pg)?;
    for m in &ch.messages {
        c.execute(
            "INSERT INTO session_messages (tenant, workspace, id, thread, seq, doc)
             VALUES ($1, $2, $3, $4, $5, $6)",
            &[t, w, &m.id, th, &int(m.seq), &to_json(m)?],
        )
        .await
        .map_err(pg)?;
    }
    for h in &ch.history {
        let (message_ref, call_ref) = match &h.item {
            HistoryItem::Posted { message_id } => (Some(message_id.as_str()), None),
            HistoryItem::ToolResult { call_id } => (None, Some(call_id.as_str())),
            HistoryItem::Message { .. } => (None, None),
        };
        c.execute(
            "INSERT INTO session_history (tenant, workspace, thread, pos, run_id, message_ref, call_ref, item)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            &[
                t,
                w,
                th,
                &int(h.pos),
                &h.run_id,
                &message_ref,
                &call_ref,
                &to_json(&h.item)?,
            ],
        )
        .await
        .map_err(pg)?;
    }
    for r in &ch.runs {
        let json = to_json(r)?;
        let seq = int(r.started_seq);
        let args: [&(dyn ToSql + Sync); 6] = [t, w, &r.run_id, th, &seq, &json];
        if ch.new_runs.contains(&r.run_id) {
            c.execute(
                "INSERT INTO session_runs (tenant, workspace, run_id, thread, started_seq, doc)
                 VALUES ($1, $2, $3, $4, $5, $6)",
                &args,
            )
            .await
            .map_err(pg)?;
        } else {
            c.execute(
                "UPDATE session_runs SET doc = $6, thread = $4, started_seq = $5
                 WHERE tenant = $1 AND workspace = $2 AND run_id = $3",
                &args,
            )
            .await
            .map_err(pg)?;
        }
    }
    for call in &ch.calls {
        c.execute(
            "INSERT INTO session_tool_calls (tenant, workspace, run_id, call_id, started_seq, doc)
             VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (tenant, workspace, run_id, call_id) DO UPDATE SET doc = EXCLUDED.doc",
            &[
                t,
                w,
                &call.run_id,
                &call.call_id,
                &int(call.started_seq),
                &to_json(call)?,
            ],
        )
        .await
        .map_err(pg)?;
    }
    for e in &ch.events {
        c.execute(
            "INSERT INTO session_events (tenant, workspace, thread, seq, doc) VALUES ($1, $2, $3, $4, $5)",
            &[t, w, th, &int(e.seq), &to_json(e)?],
        )
        .await
        .map_err(pg)?;
    }
    for (name, value) in &ch.cursors {
        c.execute(
            "INSERT INTO session_cursors (tenant, workspace, thread, name, value) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (tenant, workspace, thread, name) DO UPDATE SET value = EXCLUDED.value",
            &[t, w, th, name, &int(*value)],
        )
        .await
        .map_err(pg)?;
    }
    for k in &ch.checkpoints {
        c.execute(
            "INSERT INTO session_checkpoints (tenant, workspace, thread, id, seq, doc)
             VALUES ($1, $2, $3, $4, $5, $6)",
            &[t, w, th, &k.id, &int(k.seq), &to_json(k)?],
        )
        .await
        .map_err(pg)?;
    }
    if let Some(cmd) = &ch.command {
        insert_command(c, &cmd.key, &cmd.result).await?;
    }
    Ok(())
}

#[async_trait]
impl SessionStore for PostgresStore {
    async fn commit(&self, thread: &ThreadKey, commit: Commit) -> StoreResult<Committed> {
        rules::precheck(thread, &commit)?;
        let mut conn = self.take().await?;
        let tx = conn.client.transaction().await.map_err(pg)?;
        let result = async {
            lock_thread(&tx, thread).await?;
            let snap = load(&tx, thread, &commit).await?;
            let changes = rules::apply(thread, snap, commit, self.now())?;
            save(&tx, thread, &changes).await?;
            Ok(changes.committed)
        }
        .await;
        let ended = end(tx, result.is_ok()).await;
        self.settle(conn, result, ended).await
    }

    async fn acquire_claim(
        &self,
        thread: &ThreadKey,
        holder: &str,
        ttl: Duration,
    ) -> StoreResult<ClaimAttempt> {
        rules::check_thread(thread)?;
        let mut conn = self.take().await?;
        let tx = conn.client.transaction().await.map_err(pg)?;
        let result = async {
            lock_thread(&tx, thread).await?;
            let row = load_claim(&tx, thread).await?;
            let (attempt, row) = rules::acquire(row.as_ref(), holder, self.now(), ttl)?;
            if let Some(row) = row {
                save_claim(&tx, thread, &row).await?;
            }
            Ok(attempt)
        }
        .await;
        let ended = end(tx, result.is_ok()).await;
        self.settle(conn, result, ended).await
    }

    async fn renew_claim(
        &self,
        thread: &ThreadKey,
        claim: &Claim,
        ttl: Duration,
    ) -> StoreResult<Claim> {
        rules::check_thread(thread)?;
        let mut conn = self.take().await?;
        let tx = conn.client.transaction().await.map_err(pg)?;
        let result = async {
            lock_thread(&tx, thread).await?;
            let row = load_claim(&tx, thread).await?;
            let (renewed, row) = rules::renew(row.as_ref(), claim, self.now(), ttl)?;
            save_claim(&tx, thread, &row).await?;
            Ok(renewed)
        }
        .await;
        let ended = end(tx, result.is_ok()).await;
        self.settle(conn, result, ended).await
    }

    async fn release_claim(&self, thread: &ThreadKey, claim: &Claim) -> StoreResult<bool> {
        rules::check_thread(thread)?;
        let mut conn = self.take().await?;
        let tx = conn.client.transaction().await.map_err(pg)?;
        let result = async {
            lock_thread(&tx, thread).await?;
            let row = load_claim(&tx, thread).await?;
            Ok(match rules::release(row.as_ref(), claim) {
                Some(row) => {
                    save_claim(&tx, thread, &row).await?;
                    true
                }
                None => false,
            })
        }
        .await;
        let ended = end(tx, result.is_ok()).await;
        self.settle(conn, result, ended).await
    }

    async fn claim(&self, thread: &ThreadKey) -> StoreResult<Option<Claim>> {
        let conn = self.take().await?;
        let row = load_claim(&conn.client, thread).await?;
        self.give_back(conn).await;
        Ok(row.and_then(|row| {
            row.holder.map(|holder| Claim {
                holder,
                token: row.token,
                expires_at_ms: row.expires_at_ms,
            })
        }))
    }

    async fn thread(&self, thread: &ThreadKey) -> StoreResult<Option<ThreadInfo>> {
        let conn = self.take().await?;
        let found = doc(
            &conn.client,
            "SELECT doc FROM session_threads WHERE tenant = $1 AND workspace = $2 AND thread = $3",
            &[
                &thread.scope.tenant,
                &thread.scope.workspace,
                &thread.thread,
            ],
        )
        .await?;
        self.give_back(conn).await;
        Ok(found)
    }

    async fn threads(
        &self,
        scope: &Scope,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<ThreadInfo>> {
        let conn = self.take().await?;
        let found = docs(
            &conn.client,
            "SELECT doc FROM session_threads
             WHERE tenant = $1 AND workspace = $2
               AND ($3::TEXT IS NULL OR thread COLLATE \"C\" > $3::TEXT COLLATE \"C\")
             ORDER BY thread COLLATE \"C\" LIMIT $4",
            &[&scope.tenant, &scope.workspace, &after, &page(limit)],
        )
        .await?;
        self.give_back(conn).await;
        Ok(found)
    }

    async fn events(
        &self,
        thread: &ThreadKey,
        after_seq: u64,
        limit: usize,
    ) -> StoreResult<Vec<Event>> {
        let conn = self.take().await?;
        let found = docs(
            &conn.client,
            "SELECT doc FROM session_events
             WHERE tenant = $1 AND workspace = $2 AND thread = $3 AND seq > $4
             ORDER BY seq LIMIT $5",
            &[
                &thread.scope.tenant,
                &thread.scope.workspace,
                &thread.thread,
                &int(after_seq),
                &page(limit),
            ],
        )
        .await?;
        self.give_back(conn).await;
        Ok(found)
    }

    async fn messages(
        &self,
        thread: &ThreadKey,
        after_seq: u64,
        limit: usize,
    ) -> StoreResult<Vec<PostedMessage>> {
        let conn = self.take().await?;
        let found = docs(
            &conn.client,
            "SELECT doc FROM session_messages
             WHERE tenant = $1 AND workspace = $2 AND thread = $3 AND seq > $4
             ORDER BY seq LIMIT $5",
            &[
                &thread.scope.tenant,
                &thread.scope.workspace,
                &thread.thread,
                &int(after_seq),
                &page(limit),
            ],
        )
        .await?;
        self.give_back(conn).await;
        Ok(found)
    }

    async fn message(&self, scope: &Scope, id: &str) -> StoreResult<Option<PostedMessage>> {
        let conn = self.take().await?;
        let found = doc(
            &conn.client,
            "SELECT doc FROM session_messages WHERE tenant = $1 AND workspace = $2 AND id = $3",
            &[&scope.tenant, &scope.workspace, &id],
        )
        .await?;
        self.give_back(conn).await;
        Ok(found)
    }

    async fn history(&self, thread: &ThreadKey, from_pos: u64) -> StoreResult<Vec<HistoryEntry>> {
        let conn = self.take().await?;
        let rows = conn
            .client
            .query(
                "SELECT h.pos, h.run_id, h.item, m.doc, c.doc FROM session_history h
                 LEFT JOIN session_messages m
                   ON m.tenant = h.tenant AND m.workspace = h.workspace AND m.id = h.message_ref
                 LEFT JOIN session_tool_calls c
                   ON c.tenant = h.tenant AND c.workspace = h.workspace
                  AND c.run_id = h.run_id AND c.call_id = h.call_ref
                 WHERE h.tenant = $1 AND h.workspace = $2 AND h.thread = $3 AND h.pos >= $4
                 ORDER BY h.pos",
                &[
                    &thread.scope.tenant,
                    &thread.scope.workspace,
                    &thread.thread,
                    &int(from_pos),
                ],
            )
            .await
            .map_err(pg)?;
        self.give_back(conn).await;
        let mut out = Vec::new();
        for r in rows {
            let item: HistoryItem = from_json(&r.get::<_, String>(2))?;
            let posted: Option<PostedMessage> = r
                .get::<_, Option<String>>(3)
                .map(|p| from_json(&p))
                .transpose()?;
            let call: Option<ToolCallRecord> = r
                .get::<_, Option<String>>(4)
                .map(|c| from_json(&c))
                .transpose()?;
            out.push(HistoryEntry {
                pos: uint(r.get(0)),
                run_id: r.get(1),
                message: rules::resolve(&item, posted.as_ref(), call.as_ref())?,
                item,
            });
        }
        Ok(out)
    }

    async fn run(&self, scope: &Scope, run_id: &str) -> StoreResult<Option<RunRecord>> {
        let conn = self.take().await?;
        let found = doc(
            &conn.client,
            "SELECT doc FROM session_runs WHERE tenant = $1 AND workspace = $2 AND run_id = $3",
            &[&scope.tenant, &scope.workspace, &run_id],
        )
        .await?;
        self.give_back(conn).await;
        Ok(found)
    }

    async fn runs(&self, thread: &ThreadKey) -> StoreResult<Vec<RunRecord>> {
        let conn = self.take().await?;
        let found = docs(
            &conn.client,
            "SELECT doc FROM session_runs WHERE tenant = $1 AND workspace = $2 AND thread = $3
             ORDER BY started_seq",
            &[
                &thread.scope.tenant,
                &thread.scope.workspace,
                &thread.thread,
            ],
        )
        .await?;
        self.give_back(conn).await;
        Ok(found)
    }

    async fn tool_calls(&self, scope: &Scope, run_id: &str) -> StoreResult<Vec<ToolCallRecord>> {
        let conn = self.take().await?;
        let found = docs(
            &conn.client,
            "SELECT doc FROM session_tool_calls WHERE tenant = $1 AND workspace = $2 AND run_id = $3
             ORDER BY started_seq",
            &[&scope.tenant, &scope.workspace, &run_id],
        )
        .await?;
        self.give_back(conn).await;
        Ok(found)
    }

    async fn cursor(&self, thread: &ThreadKey, name: &str) -> StoreResult<u64> {
        let conn = self.take().await?;
        let row = conn
            .client
            .query_opt(
                "SELECT value FROM session_cursors
                 WHERE tenant = $1 AND workspace = $2 AND thread = $3 AND name = $4",
                &[
                    &thread.scope.tenant,
                    &thread.scope.workspace,
                    &thread.thread,
                    &name,
                ],
            )
            .await
            .map_err(pg)?;
        self.give_back(conn).await;
        Ok(row.map_or(0, |r| uint(r.get(0))))
    }

    async fn checkpoints(&self, thread: &ThreadKey) -> StoreResult<Vec<Checkpoint>> {
        let conn = self.take().await?;
        let found = docs(
            &conn.client,
            "SELECT doc FROM session_checkpoints WHERE tenant = $1 AND workspace = $2 AND thread = $3
             ORDER BY seq",
            &[&thread.scope.tenant, &thread.scope.workspace, &thread.thread],
        )
        .await?;
        self.give_back(conn).await;
        Ok(found)
    }

    async fn command_result(&self, key: &CommandKey) -> StoreResult<Option<Value>> {
        let conn = self.take().await?;
        let found = command(&conn.client, key).await?;
        self.give_back(conn).await;
        Ok(found)
    }

    async fn record_command(&self, key: &CommandKey, result: Value) -> StoreResult<Option<Value>> {
        rules::check_command(key)?;
        let conn = self.take().await?;
        let inserted = conn
            .client
            .execute(
                "INSERT INTO session_commands (tenant, workspace, sender, command_id, result)
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
                &[
                    &key.scope.tenant,
                    &key.scope.workspace,
                    &key.sender,
                    &key.command_id,
                    &to_json(&result)?,
                ],
            )
            .await
            .map_err(pg)?;
        let existing = if inserted == 1 {
            None
        } else {
            command(&conn.client, key).await?
        };
        self.give_back(conn).await;
        Ok(existing)
    }

    async fn lagging_threads(
        &self,
        ahead: &str,
        behind: &str,
        limit: usize,
    ) -> StoreResult<Vec<ThreadKey>> {
        let conn = self.take().await?;
        let rows = conn
            .client
            .query(
                "SELECT a.tenant, a.workspace, a.thread FROM session_cursors a
                 LEFT JOIN session_cursors b
                   ON b.tenant = a.tenant AND b.workspace = a.workspace
                  AND b.thread = a.thread AND b.name = $2
                 WHERE a.name = $1 AND a.value > COALESCE(b.value, 0)
                 ORDER BY a.tenant COLLATE \"C\", a.workspace COLLATE \"C\", a.thread COLLATE \"C\"
                 LIMIT $3",
                &[&ahead, &behind, &page(limit)],
            )
            .await
            .map_err(pg)?;
        self.give_back(conn).await;
        Ok(rows
            .iter()
            .map(|r| ThreadKey {
                scope: Scope {
                    tenant: r.get(0),
                    workspace: r.get(1),
                },
                thread: r.get(2),
            })
            .collect())
    }

    fn now_ms(&self) -> i64 {
        self.now()
    }
}
