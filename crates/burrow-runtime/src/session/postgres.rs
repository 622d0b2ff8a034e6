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
//! - **Two round trips a change** (ADR 0196). The requests are pipelined on
//!   the connection: `BEGIN`, the lock and every row the change reads go out
//!   together (the server runs them in order, so the reads run under the
//!   lock); once the rules have decided, every write and then `COMMIT` go out
//!   together. `COMMIT` is sent only after every write has been sent, and a
//!   write the server refuses aborts the transaction, so the `COMMIT` behind
//!   it rolls back: nothing is committed unless every write is.
//! - **Prepared once.** Every statement is prepared when a connection opens
//!   (in one round trip) and kept with the connection in the pool.
//! - **Text, not JSONB.** Records are stored as JSON text, which may hold any
//!   character (JSONB refuses `\u0000`); names holding NUL are refused.
//! - **Connections.** A small pool, connected on demand; a connection whose
//!   call was cancelled or failed is closed rather than reused (an open
//!   transaction dies with it). `schema` puts every table in one schema
//!   (created if missing), so several stores can share a database.

use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::future::{MaybeDone, join_all, maybe_done, try_join_all};
use futures::{poll, try_join};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::sync::Mutex;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Config, NoTls, Statement};

use super::clock::{Clock, SystemClock};
use super::error::{StoreError, StoreErrorKind, StoreResult};
use super::rules::{self, Changes, ClaimRow, Snapshot};
use super::types::{
    Checkpoint, Claim, ClaimAttempt, CommandKey, Commit, Committed, Event, HistoryEntry,
    HistoryItem, PostedMessage, Pruned, RunRecord, Scope, ThreadInfo, ThreadKey, ToolCallRecord,
};
use super::{MAX_PAGE, SessionStore};

mod team;

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
    // Checkpoints' file pre-images (ADR 0295): a database made before them gains the
    // empty table when opened, its checkpoints holding no files.
    "CREATE TABLE IF NOT EXISTS session_checkpoint_files (
        tenant TEXT NOT NULL, workspace TEXT NOT NULL, thread TEXT NOT NULL,
        checkpoint_id TEXT NOT NULL, ord BIGINT NOT NULL, path TEXT NOT NULL, bytes BYTEA,
        PRIMARY KEY (tenant, workspace, thread, checkpoint_id, ord))",
    "CREATE TABLE IF NOT EXISTS session_commands (
        tenant TEXT NOT NULL, workspace TEXT NOT NULL, sender TEXT NOT NULL, command_id TEXT NOT NULL,
        result TEXT NOT NULL, at_ms BIGINT NOT NULL,
        CONSTRAINT session_commands_pkey PRIMARY KEY (tenant, workspace, sender, command_id))",
];

/// The advisory lock key that serialises creating the tables.
const DDL_LOCK: i64 = 0x6275_7272_6f77_0001;

/// Declares [`Statements`]: one field per statement, each prepared from its SQL.
macro_rules! statements {
    ($($(#[doc = $doc:literal])+ $name:ident = $sql:literal;)+) => {
        /// The store's statements, prepared on a connection when it opens (all in
        /// one round trip) and kept with it, so a call never waits for a `Parse`.
        #[derive(Debug)]
        struct Statements {
            $($(#[doc = $doc])+ $name: Statement,)+
        }

        impl Statements {
            async fn prepare(client: &Client) -> Result<Self, tokio_postgres::Error> {
                let ($($name,)+) = try_join!($(client.prepare($sql),)+)?;
                Ok(Self { $($name,)+ })
            }
        }
    };
}

statements! {
    /// Takes the thread's advisory lock (`$1`: [`lock_key`]) until the transaction ends.
    lock = "SELECT pg_advisory_xact_lock($1)";
    /// A thread's row.
    thread = "SELECT doc FROM session_threads WHERE tenant = $1 AND workspace = $2 AND thread = $3";
    /// A thread's claim.
    claim = "SELECT holder, token, expires_at_ms FROM session_claims
             WHERE tenant = $1 AND workspace = $2 AND thread = $3";
    /// A run of the workspace.
    run = "SELECT doc FROM session_runs WHERE tenant = $1 AND workspace = $2 AND run_id = $3";
    /// A tool call of a run.
    call = "SELECT doc FROM session_tool_calls
            WHERE tenant = $1 AND workspace = $2 AND run_id = $3 AND call_id = $4";
    /// The thread a posted message of the workspace belongs to.
    message_thread = "SELECT thread FROM session_messages
                      WHERE tenant = $1 AND workspace = $2 AND id = $3";
    /// A cursor's value.
    cursor = "SELECT value FROM session_cursors
              WHERE tenant = $1 AND workspace = $2 AND thread = $3 AND name = $4";
    /// Whether a checkpoint id of the thread is used.
    checkpoint_exists = "SELECT 1 FROM session_checkpoints
                         WHERE tenant = $1 AND workspace = $2 AND thread = $3 AND id = $4";
    /// A recorded command's result.
    command = "SELECT result FROM session_commands
               WHERE tenant = $1 AND workspace = $2 AND sender = $3 AND command_id = $4";
    /// Saves a thread's row.
    save_thread = "INSERT INTO session_threads (tenant, workspace, thread, doc) VALUES ($1, $2, $3, $4)
                   ON CONFLICT (tenant, workspace, thread) DO UPDATE SET doc = EXCLUDED.doc";
    /// Saves a thread's claim.
    save_claim = "INSERT INTO session_claims (tenant, workspace, thread, holder, token, expires_at_ms)
                  VALUES ($1, $2, $3, $4, $5, $6)
                  ON CONFLICT (tenant, workspace, thread)
                  DO UPDATE SET holder = EXCLUDED.holder, token = EXCLUDED.token,
                                expires_at_ms = EXCLUDED.expires_at_ms";
    /// Inserts a posted message.
    insert_message = "INSERT INTO session_messages (tenant, workspace, id, thread, seq, doc)
                      VALUES ($1, $2, $3, $4, $5, $6)";
    /// Inserts a history row.
    insert_history = "INSERT INTO session_history
                      (tenant, workspace, thread, pos, run_id, message_ref, call_ref, item)
                      VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";
    /// Inserts a run the commit started.
    insert_run = "INSERT INTO session_runs (tenant, workspace, run_id, thread, started_seq, doc)
                  VALUES ($1, $2, $3, $4, $5, $6)";
    /// Replaces a run (the same arguments as `insert_run`).
    update_run = "UPDATE session_runs SET doc = $6, thread = $4, started_seq = $5
                  WHERE tenant = $1 AND workspace = $2 AND run_id = $3";
    /// Saves a tool call.
    save_call = "INSERT INTO session_tool_calls (tenant, workspace, run_id, call_id, started_seq, doc)
                 VALUES ($1, $2, $3, $4, $5, $6)
                 ON CONFLICT (tenant, workspace, run_id, call_id) DO UPDATE SET doc = EXCLUDED.doc";
    /// Inserts an event.
    insert_event = "INSERT INTO session_events (tenant, workspace, thread, seq, doc)
                    VALUES ($1, $2, $3, $4, $5)";
    /// Tells the listeners of [`PostgresStore::EVENTS_CHANNEL`] that a thread's
    /// log grew (`$1`: the JSON `[tenant, workspace, thread]`); sent at commit.
    notify_events = "SELECT pg_notify('burrow_session_events', $1)";
    /// Saves a cursor.
    save_cursor = "INSERT INTO session_cursors (tenant, workspace, thread, name, value)
                   VALUES ($1, $2, $3, $4, $5)
                   ON CONFLICT (tenant, workspace, thread, name) DO UPDATE SET value = EXCLUDED.value";
    /// Inserts a checkpoint.
    insert_checkpoint = "INSERT INTO session_checkpoints (tenant, workspace, thread, id, seq, doc)
                         VALUES ($1, $2, $3, $4, $5, $6)";
    /// Inserts one pre-image of a checkpoint.
    insert_checkpoint_file = "INSERT INTO session_checkpoint_files
                              (tenant, workspace, thread, checkpoint_id, ord, path, bytes)
                              VALUES ($1, $2, $3, $4, $5, $6, $7)";
    /// Keeps the thread's newest `$4` + 1 checkpoints (`$4`: the offset of the oldest kept).
    keep_checkpoints = "DELETE FROM session_checkpoints WHERE tenant = $1 AND workspace = $2 AND thread = $3
                        AND seq < (SELECT seq FROM session_checkpoints
                                   WHERE tenant = $1 AND workspace = $2 AND thread = $3
                                   ORDER BY seq DESC LIMIT 1 OFFSET $4)";
    /// Deletes the pre-images of the thread's checkpoints that are gone.
    drop_checkpoint_files = "DELETE FROM session_checkpoint_files f
                             WHERE f.tenant = $1 AND f.workspace = $2 AND f.thread = $3
                             AND NOT EXISTS (SELECT 1 FROM session_checkpoints k
                                             WHERE k.tenant = $1 AND k.workspace = $2
                                             AND k.thread = $3 AND k.id = f.checkpoint_id)";
    /// A checkpoint's pre-images, in order.
    checkpoint_files = "SELECT path, bytes FROM session_checkpoint_files
                        WHERE tenant = $1 AND workspace = $2 AND thread = $3 AND checkpoint_id = $4
                        ORDER BY ord";
    /// Inserts a command's result (a repeat fails on `session_commands_pkey`).
    insert_command = "INSERT INTO session_commands (tenant, workspace, sender, command_id, result, at_ms)
                      VALUES ($1, $2, $3, $4, $5, $6)";
    /// Records a command's result unless its key is recorded.
    record_command = "INSERT INTO session_commands (tenant, workspace, sender, command_id, result, at_ms)
                      VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING";
    /// A page of a workspace's threads, after a thread id (`NULL`: from the first).
    threads = "SELECT doc FROM session_threads
               WHERE tenant = $1 AND workspace = $2
                 AND ($3::TEXT IS NULL OR thread COLLATE \"C\" > $3::TEXT COLLATE \"C\")
               ORDER BY thread COLLATE \"C\" LIMIT $4";
    /// A page of a thread's events after a seq.
    events = "SELECT doc FROM session_events
              WHERE tenant = $1 AND workspace = $2 AND thread = $3 AND seq > $4
              ORDER BY seq LIMIT $5";
    /// A page of a thread's posted messages after a seq.
    messages = "SELECT doc FROM session_messages
                WHERE tenant = $1 AND workspace = $2 AND thread = $3 AND seq > $4
                ORDER BY seq LIMIT $5";
    /// A posted message of the workspace.
    message = "SELECT doc FROM session_messages WHERE tenant = $1 AND workspace = $2 AND id = $3";
    /// A thread's history from a position, with the posted messages and tool calls it refers to.
    history = "SELECT h.pos, h.run_id, h.item, m.doc, c.doc FROM session_history h
               LEFT JOIN session_messages m
                 ON m.tenant = h.tenant AND m.workspace = h.workspace AND m.id = h.message_ref
               LEFT JOIN session_tool_calls c
                 ON c.tenant = h.tenant AND c.workspace = h.workspace
                AND c.run_id = h.run_id AND c.call_id = h.call_ref
               WHERE h.tenant = $1 AND h.workspace = $2 AND h.thread = $3 AND h.pos >= $4
               ORDER BY h.pos";
    /// A thread's runs, oldest first.
    runs = "SELECT doc FROM session_runs WHERE tenant = $1 AND workspace = $2 AND thread = $3
            ORDER BY started_seq";
    /// A run's tool calls, oldest first.
    tool_calls = "SELECT doc FROM session_tool_calls WHERE tenant = $1 AND workspace = $2 AND run_id = $3
                  ORDER BY started_seq";
    /// A thread's checkpoints, oldest first.
    checkpoints = "SELECT doc FROM session_checkpoints WHERE tenant = $1 AND workspace = $2 AND thread = $3
                   ORDER BY seq";
    /// Threads whose cursor `$1` is ahead of their cursor `$2`.
    lagging_threads = "SELECT a.tenant, a.workspace, a.thread FROM session_cursors a
                       LEFT JOIN session_cursors b
                         ON b.tenant = a.tenant AND b.workspace = a.workspace
                        AND b.thread = a.thread AND b.name = $2
                       WHERE a.name = $1 AND a.value > COALESCE(b.value, 0)
                       ORDER BY a.tenant COLLATE \"C\", a.workspace COLLATE \"C\", a.thread COLLATE \"C\"
                       LIMIT $3";
}

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
    idle: Mutex<Vec<Pooled>>,
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

/// A connection taken from the pool with its prepared statements; returned only by [`PostgresStore::give_back`].
#[derive(Debug)]
struct Pooled {
    client: Client,
    statements: Statements,
}

impl PostgresStore {
    /// Connects to the database at `url` (`postgres://user@host:port/db`), tables in the default schema.
    pub async fn connect(url: &str) -> StoreResult<Self> {
        Self::connect_with(url, Arc::new(SystemClock), PostgresOptions::default()).await
    }

    /// The channel every commit that records events notifies (`LISTEN
    /// burrow_session_events`), its payload the JSON `[tenant, workspace,
    /// thread]` of the thread (empty: any thread), so a process can follow a
    /// thread another process writes without polling alone.
    pub const EVENTS_CHANNEL: &'static str = "burrow_session_events";

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
        let mut client = store.open_client().await?;
        {
            let tx = client.transaction().await.map_err(pg)?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&DDL_LOCK])
                .await
                .map_err(pg)?;
            if let Some(schema) = &store.inner.schema {
                tx.batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS \"{schema}\""))
                    .await
                    .map_err(pg)?;
            }
            for ddl in SCHEMA.iter().chain(team::SCHEMA) {
                tx.batch_execute(ddl).await.map_err(pg)?;
            }
            // Tables made before command results carried their time: the
            // results recorded until now are dated now (kept a whole
            // retention window from the upgrade).
            let dated = tx
                .query_opt(
                    "SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()
                     AND table_name = 'session_commands' AND column_name = 'at_ms'",
                    &[],
                )
                .await
                .map_err(pg)?;
            if dated.is_none() {
                let now = store.now();
                tx.batch_execute(&format!(
                    "ALTER TABLE session_commands ADD COLUMN at_ms BIGINT NOT NULL DEFAULT {now}"
                ))
                .await
                .map_err(pg)?;
            }
            tx.commit().await.map_err(pg)?;
        }
        // The tables exist now, so the statements can be prepared.
        let statements = Statements::prepare(&client).await.map_err(pg)?;
        store.give_back(Pooled { client, statements }).await;
        Ok(store)
    }

    /// A new connection, its `search_path` set to the store's schema.
    async fn open_client(&self) -> StoreResult<Client> {
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
        Ok(client)
    }

    async fn take(&self) -> StoreResult<Pooled> {
        loop {
            let Some(conn) = self.inner.idle.lock().await.pop() else {
                break;
            };
            if !conn.client.is_closed() {
                return Ok(conn);
            }
        }
        let client = self.open_client().await?;
        let statements = Statements::prepare(&client).await.map_err(pg)?;
        Ok(Pooled { client, statements })
    }

    async fn give_back(&self, conn: Pooled) {
        let mut idle = self.inner.idle.lock().await;
        if idle.len() < self.inner.pool && !conn.client.is_closed() {
            idle.push(conn);
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
        ended: StoreResult<()>,
    ) -> StoreResult<T> {
        match ended {
            Ok(()) => {
                self.give_back(conn).await;
                result
            }
            Err(e) => result.and(Err(e)),
        }
    }

    /// One claim change in one transaction: `decide` turns the thread's claim
    /// row into the call's answer and the row to save, if any.
    async fn change_claim<T>(
        &self,
        thread: &ThreadKey,
        decide: impl FnOnce(Option<&ClaimRow>) -> StoreResult<(T, Option<ClaimRow>)>,
    ) -> StoreResult<T> {
        rules::check_thread(thread)?;
        let conn = self.take().await?;
        let (c, prepared) = (&conn.client, &conn.statements);
        let decided = async {
            let row = begin_locked(c, prepared, thread, load_claim(c, prepared, thread)).await?;
            decide(row.as_ref())
        }
        .await;
        let (result, ended) = match decided {
            Err(e) => (Err(e), rollback(c).await),
            Ok((reply, row)) => {
                let writes = row.iter().map(|row| save_claim(c, prepared, thread, row));
                let (written, ended) = write_and_commit(c, writes.collect()).await;
                (written.map(|()| reply), ended)
            }
        };
        self.settle(conn, result, ended).await
    }
}

/// One write of a commit or claim change: a statement with its arguments,
/// answered with the number of rows it changed.
type Request<'a> = Pin<Box<dyn Future<Output = Result<u64, tokio_postgres::Error>> + Send + 'a>>;

/// Sends a request now: tokio-postgres sends a request when its future is
/// first polled, and the server runs a connection's requests in the order they
/// were sent, so every request sent after this one runs after it. A request
/// that cannot be sent (its arguments do not encode, the connection is
/// closed) is answered with its error at once.
async fn send<F: Future>(request: Pin<&mut MaybeDone<F>>) {
    let _ = poll!(request);
}

/// The answer to a request [`send`] sent, once it arrives.
async fn answer<F, T>(mut sent: Pin<&mut MaybeDone<F>>) -> StoreResult<T>
where
    F: Future<Output = Result<T, tokio_postgres::Error>>,
{
    sent.as_mut().await;
    match sent.take_output() {
        Some(answered) => answered.map_err(pg),
        None => Err(StoreError::new(
            StoreErrorKind::Storage,
            "a PostgreSQL request's answer was taken twice",
        )),
    }
}

/// Opens a transaction, takes the thread's advisory lock and runs `reads`,
/// all sent at once (one round trip): `BEGIN` and the lock are sent before
/// `reads` is first polled, so every read runs in the transaction, under the lock.
async fn begin_locked<T>(
    c: &Client,
    prepared: &Statements,
    thread: &ThreadKey,
    reads: impl Future<Output = StoreResult<T>>,
) -> StoreResult<T> {
    let key = lock_key(thread);
    let lock_args: [&(dyn ToSql + Sync); 1] = [&key];
    let mut begin = pin!(maybe_done(c.batch_execute("BEGIN")));
    send(begin.as_mut()).await;
    let mut lock = pin!(maybe_done(c.execute(&prepared.lock, &lock_args)));
    send(lock.as_mut()).await;
    let ((), _, found) = try_join!(answer(begin), answer(lock), reads)?;
    Ok(found)
}

/// Waits for every write's answer; the first refusal, in the order they were sent.
async fn answers(mut writes: Vec<MaybeDone<Request<'_>>>) -> StoreResult<()> {
    join_all(writes.iter_mut()).await;
    let mut first = Ok(());
    for write in &mut writes {
        if let Some(Err(e)) = Pin::new(write).take_output() {
            first = first.and(Err(pg(e)));
        }
    }
    first
}

/// Sends `writes` and then `COMMIT` at once (one round trip) and waits for
/// every answer: the writes' outcome, and how the transaction ended.
///
/// `COMMIT` is sent only once every write has been sent; when one could not
/// be, the transaction is rolled back instead. The server runs the requests
/// in order: a write it refuses aborts the transaction, the writes after it
/// are refused too, and the `COMMIT` behind them ends the aborted
/// transaction by rolling it back (answering `ROLLBACK`). So nothing is
/// committed unless every write is, and the first refusal is the call's error.
async fn write_and_commit(
    c: &Client,
    writes: Vec<Request<'_>>,
) -> (StoreResult<()>, StoreResult<()>) {
    let mut writes: Vec<_> = writes.into_iter().map(maybe_done).collect();
    for write in &mut writes {
        send(Pin::new(write)).await;
    }
    if writes
        .iter()
        .any(|write| matches!(write, MaybeDone::Done(Err(_))))
    {
        let written = answers(writes).await;
        return (written, rollback(c).await);
    }
    let mut commit = pin!(maybe_done(c.batch_execute("COMMIT")));
    send(commit.as_mut()).await;
    let written = answers(writes).await;
    (written, answer(commit).await)
}

/// The payload of a `burrow_session_events` notification for `key`: the JSON
/// `[tenant, workspace, thread]`, or empty ("some thread") when that would
/// pass PostgreSQL's limit of 8000 bytes, so a long name never fails a commit.
fn notify_payload(key: &ThreadKey) -> String {
    let json = serde_json::json!([key.scope.tenant, key.scope.workspace, key.thread]).to_string();
    if json.len() < 7900 {
        json
    } else {
        String::new()
    }
}

/// Rolls the transaction back (awaited, so no transaction stays open on the
/// server while the connection waits in the pool).
async fn rollback(c: &Client) -> StoreResult<()> {
    c.batch_execute("ROLLBACK").await.map_err(pg)
}

async fn doc<T: DeserializeOwned>(
    c: &Client,
    statement: &Statement,
    args: &[&(dyn ToSql + Sync)],
) -> StoreResult<Option<T>> {
    let row = c.query_opt(statement, args).await.map_err(pg)?;
    row.map(|r| from_json(&r.get::<_, String>(0))).transpose()
}

async fn docs<T: DeserializeOwned>(
    c: &Client,
    statement: &Statement,
    args: &[&(dyn ToSql + Sync)],
) -> StoreResult<Vec<T>> {
    c.query(statement, args)
        .await
        .map_err(pg)?
        .iter()
        .map(|r| from_json(&r.get::<_, String>(0)))
        .collect()
}

async fn load_claim(
    c: &Client,
    prepared: &Statements,
    key: &ThreadKey,
) -> StoreResult<Option<ClaimRow>> {
    let row = c
        .query_opt(
            &prepared.claim,
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

fn save_claim<'a>(
    c: &'a Client,
    prepared: &'a Statements,
    key: &'a ThreadKey,
    row: &'a ClaimRow,
) -> Request<'a> {
    let token = int(row.token);
    Box::pin(async move {
        c.execute(
            &prepared.save_claim,
            &[
                &key.scope.tenant,
                &key.scope.workspace,
                &key.thread,
                &row.holder,
                &token,
                &row.expires_at_ms,
            ],
        )
        .await
    })
}

async fn command(
    c: &Client,
    prepared: &Statements,
    key: &CommandKey,
) -> StoreResult<Option<Value>> {
    doc(
        c,
        &prepared.command,
        &[
            &key.scope.tenant,
            &key.scope.workspace,
            &key.sender,
            &key.command_id,
        ],
    )
    .await
}

/// The rows `commit` reads, every read sent at once.
async fn load(
    c: &Client,
    prepared: &Statements,
    key: &ThreadKey,
    commit: &Commit,
) -> StoreResult<Snapshot> {
    let needs = rules::needs(commit);
    let (t, w, th) = (&key.scope.tenant, &key.scope.workspace, &key.thread);
    let thread = async { doc::<ThreadInfo>(c, &prepared.thread, &[t, w, th]).await };
    let runs = try_join_all(needs.runs.into_iter().map(|run| async move {
        let found: Option<RunRecord> = doc(c, &prepared.run, &[t, w, &run]).await?;
        Ok::<_, StoreError>(found.map(|r| (run, r)))
    }));
    let calls = try_join_all(needs.calls.into_iter().map(|(run, call)| async move {
        let found: Option<ToolCallRecord> = doc(c, &prepared.call, &[t, w, &run, &call]).await?;
        Ok::<_, StoreError>(found.map(|f| ((run, call), f)))
    }));
    let messages = try_join_all(needs.messages.into_iter().map(|id| async move {
        let row = c
            .query_opt(&prepared.message_thread, &[t, w, &id])
            .await
            .map_err(pg)?;
        Ok::<_, StoreError>(row.map(|r| (id, r.get::<_, String>(0))))
    }));
    let cursors = try_join_all(needs.cursors.into_iter().map(|name| async move {
        let row = c
            .query_opt(&prepared.cursor, &[t, w, th, &name])
            .await
            .map_err(pg)?;
        Ok::<_, StoreError>(row.map(|r| (name, uint(r.get(0)))))
    }));
    let checkpoints = try_join_all(needs.checkpoints.into_iter().map(|id| async move {
        let row = c
            .query_opt(&prepared.checkpoint_exists, &[t, w, th, &id])
            .await
            .map_err(pg)?;
        Ok::<_, StoreError>(row.map(|_| id))
    }));
    let command_exists = async {
        match &commit.command {
            Some(cmd) => Ok(command(c, prepared, &cmd.key).await?.is_some()),
            None => Ok(false),
        }
    };
    let (thread, claim, runs, calls, messages, cursors, checkpoints, command_exists) = try_join!(
        thread,
        load_claim(c, prepared, key),
        runs,
        calls,
        messages,
        cursors,
        checkpoints,
        command_exists,
    )?;
    Ok(Snapshot {
        thread,
        claim,
        runs: runs.into_iter().flatten().collect(),
        calls: calls.into_iter().flatten().collect(),
        messages: messages.into_iter().flatten().collect(),
        cursors: cursors.into_iter().flatten().collect(),
        checkpoints: checkpoints.into_iter().flatten().collect(),
        command_exists,
    })
}

/// The requests that save `ch`, in the order they are to be sent (every
/// record is encoded here, before anything is sent).
fn save<'a>(
    c: &'a Client,
    prepared: &'a Statements,
    key: &'a ThreadKey,
    ch: &'a Changes,
    now: &'a i64,
) -> StoreResult<Vec<Request<'a>>> {
    let (t, w, th) = (&key.scope.tenant, &key.scope.workspace, &key.thread);
    let mut out: Vec<Request<'a>> = Vec::new();
    let thread = to_json(&ch.thread)?;
    out.push(Box::pin(async move {
        c.execute(&prepared.save_thread, &[t, w, th, &thread]).await
    }));
    for m in &ch.messages {
        let (seq, json) = (int(m.seq), to_json(m)?);
        out.push(Box::pin(async move {
            c.execute(&prepared.insert_message, &[t, w, &m.id, th, &seq, &json])
                .await
        }));
    }
    for h in &ch.history {
        let (message_ref, call_ref) = match &h.item {
            HistoryItem::Posted { message_id } => (Some(message_id.as_str()), None),
            HistoryItem::ToolResult { call_id } => (None, Some(call_id.as_str())),
            HistoryItem::Message { .. } | HistoryItem::Rewind { .. } => (None, None),
        };
        let (pos, item) = (int(h.pos), to_json(&h.item)?);
        out.push(Box::pin(async move {
            c.execute(
                &prepared.insert_history,
                &[t, w, th, &pos, &h.run_id, &message_ref, &call_ref, &item],
            )
            .await
        }));
    }
    for r in &ch.runs {
        let (seq, json) = (int(r.started_seq), to_json(r)?);
        let statement = if ch.new_runs.contains(&r.run_id) {
            &prepared.insert_run
        } else {
            &prepared.update_run
        };
        out.push(Box::pin(async move {
            c.execute(statement, &[t, w, &r.run_id, th, &seq, &json])
                .await
        }));
    }
    for call in &ch.calls {
        let (seq, json) = (int(call.started_seq), to_json(call)?);
        out.push(Box::pin(async move {
            c.execute(
                &prepared.save_call,
                &[t, w, &call.run_id, &call.call_id, &seq, &json],
            )
            .await
        }));
    }
    for e in &ch.events {
        let (seq, json) = (int(e.seq), to_json(e)?);
        out.push(Box::pin(async move {
            c.execute(&prepared.insert_event, &[t, w, th, &seq, &json])
                .await
        }));
    }
    if !ch.events.is_empty() {
        // Watchers in other processes are woken by LISTEN (PostgresStore::EVENTS_CHANNEL).
        let payload = notify_payload(key);
        out.push(Box::pin(async move {
            c.execute(&prepared.notify_events, &[&payload]).await
        }));
    }
    for (name, value) in &ch.cursors {
        let value = int(*value);
        out.push(Box::pin(async move {
            c.execute(&prepared.save_cursor, &[t, w, th, name, &value])
                .await
        }));
    }
    for k in &ch.checkpoints {
        let (seq, json) = (int(k.seq), to_json(k)?);
        out.push(Box::pin(async move {
            c.execute(&prepared.insert_checkpoint, &[t, w, th, &k.id, &seq, &json])
                .await
        }));
    }
    for (id, files) in &ch.checkpoint_files {
        for (ord, f) in files.iter().enumerate() {
            let ord = int(ord as u64);
            out.push(Box::pin(async move {
                c.execute(
                    &prepared.insert_checkpoint_file,
                    &[t, w, th, id, &ord, &f.path, &f.bytes],
                )
                .await
            }));
        }
    }
    if let Some(keep) = ch.checkpoint_keep {
        let offset = int(keep as u64) - 1;
        out.push(Box::pin(async move {
            c.execute(&prepared.keep_checkpoints, &[t, w, th, &offset])
                .await
        }));
        out.push(Box::pin(async move {
            c.execute(&prepared.drop_checkpoint_files, &[t, w, th])
                .await
        }));
    }
    if let Some(cmd) = &ch.command {
        let k = &cmd.key;
        let result = to_json(&cmd.result)?;
        out.push(Box::pin(async move {
            c.execute(
                &prepared.insert_command,
                &[
                    &k.scope.tenant,
                    &k.scope.workspace,
                    &k.sender,
                    &k.command_id,
                    &result,
                    now,
                ],
            )
            .await
        }));
    }
    Ok(out)
}

/// The rows of a page of the thread's assistant-message search, newest first.
const ASSISTANT_PAGE: i64 = 64;

/// Prunes one thread in one transaction under its advisory lock (ADR 0255):
/// its events before the cutoff (but the unfinished run's), and the
/// tool-call records of its runs ended before it (their history references
/// inlined). A failure leaves the transaction to roll back with the
/// connection, which the caller then drops.
async fn prune_thread(client: &mut Client, key: &ThreadKey, before_ms: i64) -> StoreResult<Pruned> {
    let (t, w, th) = (&key.scope.tenant, &key.scope.workspace, &key.thread);
    let tx = client.transaction().await.map_err(pg)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&lock_key(key)])
        .await
        .map_err(pg)?;
    let Some(row) = tx
        .query_opt(
            "SELECT doc FROM session_threads WHERE tenant = $1 AND workspace = $2 AND thread = $3",
            &[t, w, th],
        )
        .await
        .map_err(pg)?
    else {
        tx.commit().await.map_err(pg)?;
        return Ok(Pruned::default());
    };
    let info: ThreadInfo = from_json(&row.get::<_, String>(0))?;
    let runs = tx
        .query(
            "SELECT doc FROM session_runs WHERE tenant = $1 AND workspace = $2 AND thread = $3
             ORDER BY started_seq",
            &[t, w, th],
        )
        .await
        .map_err(pg)?
        .iter()
        .map(|r| from_json(&r.get::<_, String>(0)))
        .collect::<StoreResult<Vec<RunRecord>>>()?;
    let mut last_assistant = None;
    let mut below = i64::MAX;
    'search: loop {
        let rows = tx
            .query(
                "SELECT pos, run_id, item FROM session_history
                 WHERE tenant = $1 AND workspace = $2 AND thread = $3 AND pos < $4
                   AND message_ref IS NULL AND call_ref IS NULL
                 ORDER BY pos DESC LIMIT $5",
                &[t, w, th, &below, &ASSISTANT_PAGE],
            )
            .await
            .map_err(pg)?;
        if rows.is_empty() {
            break;
        }
        for row in &rows {
            below = row.get(0);
            let item: HistoryItem = from_json(&row.get::<_, String>(2))?;
            if rules::prune::is_assistant(&item) {
                last_assistant = row.get::<_, Option<String>>(1);
                break 'search;
            }
        }
    }
    let plan = rules::prune::plan(&info, &runs, last_assistant.as_deref(), before_ms);
    let events = tx
        .execute(
            "DELETE FROM session_events
             WHERE tenant = $1 AND workspace = $2 AND thread = $3 AND seq < $4
               AND ((doc::json) ->> 'at_ms')::BIGINT < $5",
            &[t, w, th, &int(plan.events_below_seq), &before_ms],
        )
        .await
        .map_err(pg)?;
    let mut tool_calls = 0;
    for run in &plan.runs {
        let refs = tx
            .query(
                "SELECT h.pos, h.item, c.doc FROM session_history h
                 LEFT JOIN session_tool_calls c
                   ON c.tenant = h.tenant AND c.workspace = h.workspace
                  AND c.run_id = h.run_id AND c.call_id = h.call_ref
                 WHERE h.tenant = $1 AND h.workspace = $2 AND h.thread = $3
                   AND h.run_id = $4 AND h.call_ref IS NOT NULL",
                &[t, w, th, run],
            )
            .await
            .map_err(pg)?;
        for row in &refs {
            let pos: i64 = row.get(0);
            let item: HistoryItem = from_json(&row.get::<_, String>(1))?;
            let call: Option<ToolCallRecord> = row
                .get::<_, Option<String>>(2)
                .map(|c| from_json(&c))
                .transpose()?;
            if let Some(inlined) = rules::prune::inline(&item, call.as_ref()) {
                tx.execute(
                    "UPDATE session_history SET item = $5, call_ref = NULL
                     WHERE tenant = $1 AND workspace = $2 AND thread = $3 AND pos = $4",
                    &[t, w, th, &pos, &to_json(&inlined)?],
                )
                .await
                .map_err(pg)?;
            }
        }
        tool_calls += tx
            .execute(
                "DELETE FROM session_tool_calls WHERE tenant = $1 AND workspace = $2 AND run_id = $3",
                &[t, w, run],
            )
            .await
            .map_err(pg)?;
    }
    tx.commit().await.map_err(pg)?;
    Ok(Pruned {
        commands: 0,
        events,
        tool_calls,
    })
}

#[async_trait]
impl SessionStore for PostgresStore {
    async fn commit(&self, thread: &ThreadKey, commit: Commit) -> StoreResult<Committed> {
        rules::precheck(thread, &commit)?;
        let conn = self.take().await?;
        let (c, prepared) = (&conn.client, &conn.statements);
        let now = self.now();
        let decided = async {
            let snap =
                begin_locked(c, prepared, thread, load(c, prepared, thread, &commit)).await?;
            rules::apply(thread, snap, commit, now)
        }
        .await;
        let (result, ended) = match decided {
            Err(e) => (Err(e), rollback(c).await),
            Ok(changes) => match save(c, prepared, thread, &changes, &now) {
                Err(e) => (Err(e), rollback(c).await),
                Ok(writes) => {
                    let (written, ended) = write_and_commit(c, writes).await;
                    (written.map(|()| changes.committed.clone()), ended)
                }
            },
        };
        self.settle(conn, result, ended).await
    }

    async fn acquire_claim(
        &self,
        thread: &ThreadKey,
        holder: &str,
        ttl: Duration,
    ) -> StoreResult<ClaimAttempt> {
        self.change_claim(thread, |row| rules::acquire(row, holder, self.now(), ttl))
            .await
    }

    async fn renew_claim(
        &self,
        thread: &ThreadKey,
        claim: &Claim,
        ttl: Duration,
    ) -> StoreResult<Claim> {
        self.change_claim(thread, |row| {
            rules::renew(row, claim, self.now(), ttl).map(|(renewed, row)| (renewed, Some(row)))
        })
        .await
    }

    async fn release_claim(&self, thread: &ThreadKey, claim: &Claim) -> StoreResult<bool> {
        self.change_claim(thread, |row| {
            let row = rules::release(row, claim);
            Ok((row.is_some(), row))
        })
        .await
    }

    async fn claim(&self, thread: &ThreadKey) -> StoreResult<Option<Claim>> {
        let conn = self.take().await?;
        let row = load_claim(&conn.client, &conn.statements, thread).await?;
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
            &conn.statements.thread,
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
            &conn.statements.threads,
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
            &conn.statements.events,
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
            &conn.statements.messages,
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
            &conn.statements.message,
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
                &conn.statements.history,
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
            &conn.statements.run,
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
            &conn.statements.runs,
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
            &conn.statements.tool_calls,
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
                &conn.statements.cursor,
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
            &conn.statements.checkpoints,
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

    async fn checkpoint_files(
        &self,
        thread: &ThreadKey,
        checkpoint_id: &str,
    ) -> StoreResult<Option<Vec<crate::checkpoint::FileImage>>> {
        let conn = self.take().await?;
        let (t, w, th) = (
            &thread.scope.tenant,
            &thread.scope.workspace,
            &thread.thread,
        );
        let id = checkpoint_id.to_owned();
        let known = conn
            .client
            .query_opt(&conn.statements.checkpoint_exists, &[t, w, th, &id])
            .await
            .map_err(pg)?
            .is_some();
        let files = if known {
            let rows = conn
                .client
                .query(&conn.statements.checkpoint_files, &[t, w, th, &id])
                .await
                .map_err(pg)?;
            Some(
                rows.iter()
                    .map(|r| crate::checkpoint::FileImage {
                        path: r.get(0),
                        bytes: r.get(1),
                    })
                    .collect(),
            )
        } else {
            None
        };
        self.give_back(conn).await;
        Ok(files)
    }

    async fn command_result(&self, key: &CommandKey) -> StoreResult<Option<Value>> {
        let conn = self.take().await?;
        let found = command(&conn.client, &conn.statements, key).await?;
        self.give_back(conn).await;
        Ok(found)
    }

    async fn record_command(&self, key: &CommandKey, result: Value) -> StoreResult<Option<Value>> {
        rules::check_command(key)?;
        let conn = self.take().await?;
        let inserted = conn
            .client
            .execute(
                &conn.statements.record_command,
                &[
                    &key.scope.tenant,
                    &key.scope.workspace,
                    &key.sender,
                    &key.command_id,
                    &to_json(&result)?,
                    &self.now(),
                ],
            )
            .await
            .map_err(pg)?;
        let existing = if inserted == 1 {
            None
        } else {
            command(&conn.client, &conn.statements, key).await?
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
                &conn.statements.lagging_threads,
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
                let key = scope.thread(info.thread);
                let mut conn = self.take().await?;
                // On an error the connection is dropped (closed), its
                // transaction rolled back by the server.
                let p = prune_thread(&mut conn.client, &key, before_ms).await?;
                self.give_back(conn).await;
                pruned.events += p.events;
                pruned.tool_calls += p.tool_calls;
            }
        }
        let conn = self.take().await?;
        pruned.commands = conn
            .client
            .execute(
                "DELETE FROM session_commands WHERE tenant = $1 AND workspace = $2 AND at_ms < $3",
                &[&scope.tenant, &scope.workspace, &before_ms],
            )
            .await
            .map_err(pg)?;
        self.give_back(conn).await;
        Ok(pruned)
    }

    fn now_ms(&self) -> i64 {
        self.now()
    }

    fn teams(&self) -> Option<&dyn crate::team::TeamStore> {
        Some(self)
    }
}
