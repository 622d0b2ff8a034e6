//! `StoreBackend`: burrow files in the SQLite file of a `SqliteStore`, one transaction per mutation.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use burrow_backend::{
    Backend, Capabilities, EditResult, FileContext, GlobResult, GrepQuery, GrepResult, LineWindow,
    Listing, Result, VPath, WriteResult,
};

use crate::db::{Database, blocking, sql};
use crate::quota::Quota;
use crate::replay::guarded;
use crate::store::SqliteStore;
use crate::tree::{self, Settings};
use crate::{queries, query, quota};

/// How many effect records one pruning transaction removes at most.
const PRUNE_BATCH: usize = 1000;

/// burrow's file contract over one SQLite database file.
///
/// # Semantics
///
/// - **Storage.** One row per file in table `files`, keyed by (tenant,
///   path), with the content as a BLOB and its size, created_at and
///   modified_at. Directories are implicit: they exist while a file lies
///   beneath them (`empty_dirs` is false) and are kept as rows of `dirs` with
///   a count of their entries, so `ls` of a small directory is two index
///   range scans whatever the size of the store (ADR 0071). A directory
///   made with `make_dir` is a row marked made: it stays, empty or not,
///   until it is deleted (ADR 0221).
/// - **Trees.** `delete_tree` is one transaction like any mutation: three
///   statements over the subtree's index range (its files, its directory
///   rows, its usage), so a crash leaves all of the tree or none of it.
/// - **Transactions.** Every mutation is one `BEGIN IMMEDIATE` transaction:
///   the checks, the change, the directory counts, the tenant's usage and the
///   effect record commit together or not at all. Writers (threads or other
///   processes on the same file) queue for the lock; a wait past the busy
///   timeout is a failure. Reads run on pooled connections and see one
///   consistent snapshot.
/// - **Replay.** A mutation whose `FileContext` carries an effect key records
///   (tenant, key) -> outcome in its own transaction; the same key again
///   returns the recorded outcome (a success or a refusal) and changes
///   nothing (ADR 0072).
/// - **Tenants.** Every row is scoped by `FileContext::tenant`; another
///   tenant's file looks exactly like a missing one.
/// - **Quotas.** Optional bytes and files per tenant, checked in the
///   mutation's transaction: QuotaExceeded, nothing written.
/// - **Blocking.** Every SQLite call runs in `tokio::task::spawn_blocking`,
///   so the backend needs a tokio runtime.
#[derive(Clone)]
pub struct StoreBackend {
    db: Arc<Database>,
    settings: Settings,
    scope: Arc<str>,
}

impl std::fmt::Debug for StoreBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreBackend")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// Builds a [`StoreBackend`] with limits and quotas.
#[derive(Debug, Clone)]
pub struct StoreBackendBuilder {
    store: SqliteStore,
    settings: Settings,
}

impl StoreBackendBuilder {
    /// Largest file that may be written or read, in bytes.
    pub fn max_file_size(mut self, bytes: u64) -> Self {
        self.settings.limits.max_file_size = bytes;
        self
    }

    /// Most entries one ls, glob or grep returns.
    pub fn max_results(mut self, n: usize) -> Self {
        self.settings.limits.max_results = n;
        self
    }

    /// Most bytes of file content each tenant may store.
    pub fn max_bytes(mut self, bytes: u64) -> Self {
        self.settings.quota.max_bytes = Some(bytes);
        self
    }

    /// Most files each tenant may store.
    pub fn max_files(mut self, files: u64) -> Self {
        self.settings.quota.max_files = Some(files);
        self
    }

    /// The backend.
    pub fn build(self) -> StoreBackend {
        StoreBackend::with_settings(&self.store, self.settings)
    }
}

impl StoreBackend {
    /// Opens (creating if missing) the database at `path` with default options,
    /// and the file backend on it. Blocks while the file is opened and migrated.
    pub fn open(path: impl AsRef<Path>) -> Result<StoreBackend> {
        Ok(SqliteStore::open(path)?.files())
    }

    /// A builder for a file backend on `store`'s database.
    pub fn builder(store: &SqliteStore) -> StoreBackendBuilder {
        StoreBackendBuilder {
            store: store.clone(),
            settings: Settings::default(),
        }
    }

    pub(crate) fn with_settings(store: &SqliteStore, settings: Settings) -> StoreBackend {
        StoreBackend {
            db: Arc::clone(store.database()),
            settings,
            scope: Arc::from(lock_scope(store.location())),
        }
    }

    /// The per-tenant quota this backend enforces.
    pub fn quota(&self) -> Quota {
        self.settings.quota
    }

    /// What `tenant` stores now: (bytes, files).
    pub async fn usage(&self, tenant: &str) -> Result<(u64, u64)> {
        let tenant = tenant.to_owned();
        let (bytes, files) =
            blocking(&self.db, move |db| db.read(|c| quota::usage(c, &tenant))).await?;
        Ok((
            u64::try_from(bytes).unwrap_or(0),
            u64::try_from(files).unwrap_or(0),
        ))
    }

    /// Forgets the effect records (of every tenant) made before `recorded_before`,
    /// returning how many were removed.
    ///
    /// A record makes a retried mutation with the same effect key return the
    /// first outcome instead of running again (ADR 0072); records are kept
    /// until pruned. Prune with a margin longer than any caller retries: a
    /// retry whose record is gone runs again. Files are not touched.
    pub async fn prune_effects(&self, recorded_before: jiff::Timestamp) -> Result<u64> {
        let before = recorded_before.as_millisecond();
        blocking(&self.db, move |db| {
            // Batches, each its own short transaction, so writers are never
            // kept waiting behind one long delete.
            let mut removed: u64 = 0;
            loop {
                let n = db.write(|c| {
                    c.prepare_cached(queries::EFFECTS_PRUNE)
                        .map_err(sql)?
                        .execute(rusqlite::params![before, PRUNE_BATCH as i64])
                        .map_err(sql)
                })?;
                removed = removed.saturating_add(u64::try_from(n).unwrap_or(0));
                if n < PRUNE_BATCH {
                    return Ok(removed);
                }
            }
        })
        .await
    }

    /// Creates or replaces many files in ONE transaction: all are written, or
    /// (on the first refusal or failure) none is.
    ///
    /// An effect key in `ctx` guards the whole batch. Each file follows
    /// [`Backend::write_bytes`]; a path given twice keeps the last content.
    pub async fn write_many(
        &self,
        ctx: &FileContext,
        files: Vec<(VPath, Vec<u8>)>,
    ) -> Result<Vec<WriteResult>> {
        let (ctx, settings) = (ctx.clone(), self.settings);
        blocking(&self.db, move |db| {
            let now = now();
            db.write(|c| {
                guarded(
                    c,
                    &ctx.tenant,
                    ctx.effect_key.as_deref(),
                    "write_many",
                    &files.iter().map(|(path, _)| path).collect::<Vec<_>>(),
                    &now,
                    |c| {
                        files
                            .iter()
                            .map(|(path, bytes)| {
                                tree::write_file(c, &settings, &ctx.tenant, path, bytes, &now)
                            })
                            .collect()
                    },
                )
            })?
        })
        .await
    }

    /// One mutation of `path` in its own transaction, under the replay guard
    /// (`op` names it for an effect key's record).
    async fn change_at<F>(
        &self,
        ctx: &FileContext,
        path: &VPath,
        op: &'static str,
        f: F,
    ) -> Result<()>
    where
        F: Fn(&rusqlite::Connection, &str, &VPath) -> Result<()> + Send + 'static,
    {
        let (ctx, path) = (ctx.clone(), path.clone());
        blocking(&self.db, move |db| {
            let now = now();
            db.write(|c| {
                guarded(
                    c,
                    &ctx.tenant,
                    ctx.effect_key.as_deref(),
                    op,
                    &[&path],
                    &now,
                    |c| f(c, &ctx.tenant, &path),
                )
            })?
        })
        .await
    }
}

/// A lock scope shared by every backend on one database file, naming no host path.
fn lock_scope(location: &str) -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    location.hash(&mut hasher);
    format!("sqlite:{:016x}", hasher.finish())
}

pub(crate) fn now() -> String {
    jiff::Timestamp::now().to_string()
}

#[async_trait]
impl Backend for StoreBackend {
    fn capabilities(&self) -> Capabilities {
        Capabilities::minimal()
            .with_empty_dirs(false)
            .with_make_dir(true)
            .with_modified_at(true)
            .with_tenants(true)
            .with_effect_keys(true)
            .with_conditional_writes(true)
            .with_limits(self.settings.limits)
    }

    fn lock_scope(&self) -> &str {
        &self.scope
    }

    async fn ls(&self, ctx: &FileContext, dir: &VPath, limit: usize) -> Result<Listing> {
        let (tenant, dir, settings) = (ctx.tenant.clone(), dir.clone(), self.settings);
        blocking(&self.db, move |db| {
            db.read(|c| query::ls(c, &settings, &tenant, &dir, limit))
        })
        .await
    }

    async fn read(
        &self,
        ctx: &FileContext,
        path: &VPath,
        offset: usize,
        limit: usize,
    ) -> Result<LineWindow> {
        let (tenant, path, settings) = (ctx.tenant.clone(), path.clone(), self.settings);
        blocking(&self.db, move |db| {
            db.read(|c| query::read(c, &settings, &tenant, &path, offset, limit))
        })
        .await
    }

    async fn read_bytes(&self, ctx: &FileContext, path: &VPath) -> Result<Vec<u8>> {
        let (tenant, path, settings) = (ctx.tenant.clone(), path.clone(), self.settings);
        blocking(&self.db, move |db| {
            db.read(|c| query::read_bytes(c, &settings, &tenant, &path))
        })
        .await
    }

    async fn write_bytes(
        &self,
        ctx: &FileContext,
        path: &VPath,
        bytes: &[u8],
    ) -> Result<WriteResult> {
        let (ctx, path, settings, bytes) =
            (ctx.clone(), path.clone(), self.settings, bytes.to_vec());
        blocking(&self.db, move |db| {
            let now = now();
            db.write(|c| {
                guarded(
                    c,
                    &ctx.tenant,
                    ctx.effect_key.as_deref(),
                    "write",
                    &[&path],
                    &now,
                    |c| tree::write_file(c, &settings, &ctx.tenant, &path, &bytes, &now),
                )
            })?
        })
        .await
    }

    async fn edit(
        &self,
        ctx: &FileContext,
        path: &VPath,
        old: &str,
        new: &str,
        replace_all: bool,
    ) -> Result<EditResult> {
        let (ctx, path, settings) = (ctx.clone(), path.clone(), self.settings);
        let (old, new) = (old.to_owned(), new.to_owned());
        blocking(&self.db, move |db| {
            let now = now();
            db.write(|c| {
                guarded(
                    c,
                    &ctx.tenant,
                    ctx.effect_key.as_deref(),
                    "edit",
                    &[&path],
                    &now,
                    |c| {
                        tree::edit_file(
                            c,
                            &settings,
                            &ctx.tenant,
                            &path,
                            &old,
                            &new,
                            replace_all,
                            &now,
                        )
                    },
                )
            })?
        })
        .await
    }

    async fn delete(&self, ctx: &FileContext, path: &VPath) -> Result<()> {
        self.change_at(ctx, path, "delete", tree::delete_file).await
    }

    async fn make_dir(&self, ctx: &FileContext, path: &VPath, parents: bool) -> Result<()> {
        self.change_at(ctx, path, "make_dir", move |c, tenant, path| {
            tree::make_dir(c, tenant, path, parents)
        })
        .await
    }

    /// One transaction, as every mutation here: the whole tree goes, or
    /// (on a refusal, a failure or a crash) none of it; an effect key
    /// replays its outcome.
    async fn delete_tree(&self, ctx: &FileContext, path: &VPath) -> Result<()> {
        self.change_at(ctx, path, "delete_tree", tree::delete_tree)
            .await
    }

    async fn glob(
        &self,
        ctx: &FileContext,
        pattern: &str,
        under: &VPath,
        limit: usize,
    ) -> Result<GlobResult> {
        let (tenant, pattern, under, settings) = (
            ctx.tenant.clone(),
            pattern.to_owned(),
            under.clone(),
            self.settings,
        );
        blocking(&self.db, move |db| {
            db.read(|c| query::glob(c, &settings, &tenant, &pattern, &under, limit))
        })
        .await
    }

    async fn grep(
        &self,
        ctx: &FileContext,
        query: &GrepQuery,
        under: &VPath,
        limit: usize,
    ) -> Result<GrepResult> {
        let (tenant, query, under, settings) = (
            ctx.tenant.clone(),
            query.clone(),
            under.clone(),
            self.settings,
        );
        blocking(&self.db, move |db| {
            db.read(|c| query::grep(c, &settings, &tenant, &query, &under, limit))
        })
        .await
    }
}
