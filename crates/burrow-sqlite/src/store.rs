//! `SqliteStore`: the open database file, and the namespaced key/value long-term store on it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use burrow_backend::{Error, ErrorKind, Result};
use rusqlite::{Connection, OptionalExtension, Row, params};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::backend::{StoreBackend, now};
use crate::db::{Database, blocking, sql};
use crate::namespace::{self, upper_bound};
use crate::options::{SqliteOptions, Synchronous};
use crate::tree::Settings;

/// The largest value `put` accepts, as JSON text: 1 MiB.
pub const MAX_VALUE_BYTES: usize = 1024 * 1024;

/// One stored item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    /// The namespace it lives in, as segments.
    pub namespace: Vec<String>,
    /// Its key within the namespace.
    pub key: String,
    /// Its value.
    pub value: Value,
    /// When it was first put (RFC 3339).
    pub created_at: String,
    /// When it was last put (RFC 3339).
    pub updated_at: String,
}

/// A bounded list of items.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Page {
    /// Items in (namespace, key) order.
    pub items: Vec<Item>,
    /// True when more items matched than were returned.
    pub truncated: bool,
}

/// Which namespaces a listing covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Depth {
    /// The namespace itself only (the default): its sub-namespaces stay unseen.
    #[default]
    Exact,
    /// The namespace and every namespace beneath it.
    Nested,
}

/// One SQLite database file: a key/value long-term store, and the files of [`StoreBackend`].
///
/// Items are addressed by (tenant, namespace, key) and hold JSON values.
/// The tenant is a column of its own, so no namespace or key a caller
/// chooses can reach another tenant's items. A namespace is a path of
/// segments (`&["memories", "user"]`); listing it shows only its own items
/// unless [`Depth::Nested`] is asked for.
///
/// Cloning is cheap and shares the connections. Opening blocks (it creates
/// and migrates the file); every other method runs on tokio's blocking pool.
#[derive(Clone)]
pub struct SqliteStore {
    db: Arc<Database>,
    location: Arc<str>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("options", self.db.options())
            .finish_non_exhaustive()
    }
}

/// Opens a [`SqliteStore`] with non-default options.
#[derive(Debug, Clone)]
pub struct SqliteStoreBuilder {
    path: PathBuf,
    options: SqliteOptions,
}

impl SqliteStoreBuilder {
    /// `PRAGMA synchronous` (default [`Synchronous::Normal`]).
    pub fn synchronous(mut self, synchronous: Synchronous) -> Self {
        self.options.synchronous = synchronous;
        self
    }

    /// How long to wait for another writer's lock (default 5 s; at most
    /// [`crate::MAX_BUSY_TIMEOUT`], longer is clamped).
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.options.busy_timeout = timeout.min(crate::MAX_BUSY_TIMEOUT);
        self
    }

    /// How many idle read connections to keep (default 4).
    pub fn read_connections(mut self, n: usize) -> Self {
        self.options.read_connections = n;
        self
    }

    /// How much of the file each connection may memory-map (default 256 MiB; 0 turns it off).
    pub fn mmap_size(mut self, bytes: u64) -> Self {
        self.options.mmap_size = bytes;
        self
    }

    /// Opens (creating if missing) and migrates the database.
    pub fn open(self) -> Result<SqliteStore> {
        let db = Database::open(&self.path, self.options)?;
        let location = std::fs::canonicalize(&self.path).unwrap_or(self.path);
        Ok(SqliteStore {
            db: Arc::new(db),
            location: Arc::from(location.to_string_lossy()),
        })
    }
}

impl SqliteStore {
    /// Opens (creating if missing) the database at `path` with default options.
    pub fn open(path: impl AsRef<Path>) -> Result<SqliteStore> {
        Self::builder(path).open()
    }

    /// A builder for the database at `path`.
    pub fn builder(path: impl AsRef<Path>) -> SqliteStoreBuilder {
        SqliteStoreBuilder {
            path: path.as_ref().to_owned(),
            options: SqliteOptions::default(),
        }
    }

    /// The options the database was opened with.
    pub fn options(&self) -> &SqliteOptions {
        self.db.options()
    }

    /// The file backend on this database, with default limits and no quota.
    pub fn files(&self) -> StoreBackend {
        StoreBackend::with_settings(self, Settings::default())
    }

    pub(crate) fn database(&self) -> &Arc<Database> {
        &self.db
    }

    pub(crate) fn location(&self) -> &str {
        &self.location
    }

    /// Stores `value` under (tenant, namespace, key), replacing any value there.
    pub async fn put<S: AsRef<str>>(
        &self,
        tenant: &str,
        namespace: &[S],
        key: &str,
        value: Value,
    ) -> Result<()> {
        let ns = namespace::encode(namespace)?;
        check_key(key)?;
        let text = serde_json::to_string(&value)
            .map_err(|e| Error::failure("a value could not be written as JSON", e))?;
        if text.len() > MAX_VALUE_BYTES {
            return Err(Error::refusal(
                ErrorKind::TooLarge,
                format!(
                    "the value for key \"{key}\" is {} bytes of JSON, more than the limit of {MAX_VALUE_BYTES} bytes.",
                    text.len()
                ),
            ));
        }
        let (tenant, key) = (tenant.to_owned(), key.to_owned());
        blocking(&self.db, move |db| {
            let now = now();
            db.write(|c| {
                c.prepare_cached(
                    "INSERT INTO kv (tenant, namespace, key, value, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?5)
                     ON CONFLICT (tenant, namespace, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                )
                .map_err(sql)?
                .execute(params![tenant, ns, key, text, now])
                .map_err(sql)?;
                Ok(())
            })
        })
        .await
    }

    /// The item under (tenant, namespace, key), if any.
    pub async fn get<S: AsRef<str>>(
        &self,
        tenant: &str,
        namespace: &[S],
        key: &str,
    ) -> Result<Option<Item>> {
        let ns = namespace::encode(namespace)?;
        let (tenant, key) = (tenant.to_owned(), key.to_owned());
        blocking(&self.db, move |db| {
            db.read(|c| {
                c.prepare_cached(
                    "SELECT namespace, key, value, created_at, updated_at FROM kv WHERE tenant = ?1 AND namespace = ?2 AND key = ?3",
                )
                .map_err(sql)?
                .query_row(params![tenant, ns, key], raw_item)
                .optional()
                .map_err(sql)?
                .map(RawItem::decode)
                .transpose()
            })
        })
        .await
    }

    /// Deletes the item under (tenant, namespace, key); true when there was one.
    pub async fn delete<S: AsRef<str>>(
        &self,
        tenant: &str,
        namespace: &[S],
        key: &str,
    ) -> Result<bool> {
        let ns = namespace::encode(namespace)?;
        let (tenant, key) = (tenant.to_owned(), key.to_owned());
        blocking(&self.db, move |db| {
            db.write(|c| {
                let n = c
                    .prepare_cached(
                        "DELETE FROM kv WHERE tenant = ?1 AND namespace = ?2 AND key = ?3",
                    )
                    .map_err(sql)?
                    .execute(params![tenant, ns, key])
                    .map_err(sql)?;
                Ok(n > 0)
            })
        })
        .await
    }

    /// At most `limit` items of `namespace` (and, with [`Depth::Nested`], of
    /// the namespaces beneath it), in (namespace, key) order.
    pub async fn list<S: AsRef<str>>(
        &self,
        tenant: &str,
        namespace: &[S],
        depth: Depth,
        limit: usize,
    ) -> Result<Page> {
        let ns = namespace::encode(namespace)?;
        let tenant = tenant.to_owned();
        blocking(&self.db, move |db| {
            db.read(|c| match depth {
                Depth::Exact => page(
                    c,
                    "SELECT namespace, key, value, created_at, updated_at FROM kv WHERE tenant = ?1 AND namespace = ?2 ORDER BY key LIMIT ?3",
                    params![tenant, ns, fetch(limit)],
                    limit,
                ),
                Depth::Nested => match upper_bound(&ns) {
                    Some(high) => page(
                        c,
                        "SELECT namespace, key, value, created_at, updated_at FROM kv WHERE tenant = ?1 AND namespace >= ?2 AND namespace < ?3 ORDER BY namespace, key LIMIT ?4",
                        params![tenant, ns, high, fetch(limit)],
                        limit,
                    ),
                    None => page(
                        c,
                        "SELECT namespace, key, value, created_at, updated_at FROM kv WHERE tenant = ?1 ORDER BY namespace, key LIMIT ?2",
                        params![tenant, fetch(limit)],
                        limit,
                    ),
                },
            })
        })
        .await
    }

    /// At most `limit` items of exactly `namespace` whose key starts with `key_prefix`, in key order.
    pub async fn search<S: AsRef<str>>(
        &self,
        tenant: &str,
        namespace: &[S],
        key_prefix: &str,
        limit: usize,
    ) -> Result<Page> {
        let ns = namespace::encode(namespace)?;
        let (tenant, low) = (tenant.to_owned(), key_prefix.to_owned());
        blocking(&self.db, move |db| {
            db.read(|c| match upper_bound(&low) {
                Some(high) => page(
                    c,
                    "SELECT namespace, key, value, created_at, updated_at FROM kv WHERE tenant = ?1 AND namespace = ?2 AND key >= ?3 AND key < ?4 ORDER BY key LIMIT ?5",
                    params![tenant, ns, low, high, fetch(limit)],
                    limit,
                ),
                None => page(
                    c,
                    "SELECT namespace, key, value, created_at, updated_at FROM kv WHERE tenant = ?1 AND namespace = ?2 AND key >= ?3 ORDER BY key LIMIT ?4",
                    params![tenant, ns, low, fetch(limit)],
                    limit,
                ),
            })
        })
        .await
    }

    /// At most `limit` namespaces holding items at or beneath `prefix`, in order.
    pub async fn list_namespaces<S: AsRef<str>>(
        &self,
        tenant: &str,
        prefix: &[S],
        limit: usize,
    ) -> Result<Vec<Vec<String>>> {
        let low = namespace::encode(prefix)?;
        let tenant = tenant.to_owned();
        let high = upper_bound(&low);
        blocking(&self.db, move |db| {
            db.read(|c| {
                let found = match &high {
                    Some(high) => c
                        .prepare_cached(
                            "SELECT DISTINCT namespace FROM kv WHERE tenant = ?1 AND namespace >= ?2 AND namespace < ?3 ORDER BY namespace LIMIT ?4",
                        )
                        .map_err(sql)?
                        .query_map(params![tenant, low, high, limit_param(limit)], |row| row.get::<_, String>(0))
                        .map_err(sql)?
                        .collect::<rusqlite::Result<Vec<_>>>(),
                    None => c
                        .prepare_cached(
                            "SELECT DISTINCT namespace FROM kv WHERE tenant = ?1 ORDER BY namespace LIMIT ?2",
                        )
                        .map_err(sql)?
                        .query_map(params![tenant, limit_param(limit)], |row| row.get::<_, String>(0))
                        .map_err(sql)?
                        .collect::<rusqlite::Result<Vec<_>>>(),
                };
                found.map_err(sql)?.iter().map(|ns| namespace::decode(ns)).collect()
            })
        })
        .await
    }
}

fn check_key(key: &str) -> Result<()> {
    if key.is_empty() {
        return Err(Error::invalid_argument(
            "the key is empty; give the item a key.",
        ));
    }
    Ok(())
}

fn limit_param(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

/// One more than `limit`, to learn whether more rows exist.
fn fetch(limit: usize) -> i64 {
    limit_param(limit).saturating_add(1)
}

/// A row of `kv` before its namespace and value are decoded.
struct RawItem {
    namespace: String,
    key: String,
    value: String,
    created_at: String,
    updated_at: String,
}

impl RawItem {
    fn decode(self) -> Result<Item> {
        Ok(Item {
            namespace: namespace::decode(&self.namespace)?,
            key: self.key,
            value: serde_json::from_str(&self.value).map_err(|e| {
                Error::failure("the SQLite store holds a value that is not JSON", e)
            })?,
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }
}

fn raw_item(row: &Row<'_>) -> rusqlite::Result<RawItem> {
    Ok(RawItem {
        namespace: row.get(0)?,
        key: row.get(1)?,
        value: row.get(2)?,
        created_at: row.get(3)?,
        updated_at: row.get(4)?,
    })
}

fn page(
    conn: &Connection,
    sql_text: &str,
    params: impl rusqlite::Params,
    limit: usize,
) -> Result<Page> {
    let mut stmt = conn.prepare_cached(sql_text).map_err(sql)?;
    let raw: Vec<RawItem> = stmt
        .query_map(params, raw_item)
        .map_err(sql)?
        .collect::<rusqlite::Result<_>>()
        .map_err(sql)?;
    let truncated = raw.len() > limit;
    let items = raw
        .into_iter()
        .take(limit)
        .map(RawItem::decode)
        .collect::<Result<_>>()?;
    Ok(Page { items, truncated })
}
