//! `PostgresArtifactStore` (feature `postgres`): the artifact store in PostgreSQL (tokio-postgres), each call one transaction holding the workspace's advisory lock.
//!
//! # Semantics
//! - **One writer per workspace at a time.** A call's transaction first takes
//!   `pg_advisory_xact_lock` on the workspace's key (`hashtext` of tenant and
//!   workspace), then reads and writes under it (READ COMMITTED: each
//!   statement sees every commit made before it), so of two changes from one
//!   base, from any machine, the second sees the first's head and is a
//!   Conflict. The lock is released at commit or rollback.
//! - **Blocking inside.** The shared write path ([`engine`](super::engine)) is
//!   synchronous, so the transaction runs it in `block_in_place`, each row
//!   access awaited with the runtime's `Handle::block_on`. It therefore needs a
//!   multi-threaded tokio runtime; on a current-thread one a call is a Store error.
//! - **One connection a handle**, behind an async mutex: calls on one handle run
//!   one at a time; open more handles for parallel workspaces.
//! - `schema` puts every table in one schema (created if missing), so several
//!   stores can share a database.

use std::sync::Arc;

use burrow_runtime::session::Scope;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::runtime::Handle;
use tokio::sync::Mutex;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, NoTls, Transaction};

use super::engine::{Transact, Tx};
use super::types::{Event, Proposal, Revision, Versioned};
use crate::error::{ArtifactError, Result};
use crate::kind::Kinds;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS artifact_heads (
    tenant TEXT NOT NULL, workspace TEXT NOT NULL, id TEXT NOT NULL, doc TEXT NOT NULL,
    PRIMARY KEY (tenant, workspace, id));
CREATE TABLE IF NOT EXISTS artifact_revisions (
    tenant TEXT NOT NULL, workspace TEXT NOT NULL, id TEXT NOT NULL, version BIGINT NOT NULL,
    doc TEXT NOT NULL,
    PRIMARY KEY (tenant, workspace, id, version));
CREATE TABLE IF NOT EXISTS artifact_events (
    tenant TEXT NOT NULL, workspace TEXT NOT NULL, seq BIGINT NOT NULL, doc TEXT NOT NULL,
    PRIMARY KEY (tenant, workspace, seq));
CREATE TABLE IF NOT EXISTS artifact_proposals (
    tenant TEXT NOT NULL, workspace TEXT NOT NULL, id BIGINT NOT NULL, doc TEXT NOT NULL,
    PRIMARY KEY (tenant, workspace, id));
";

/// An artifact store in PostgreSQL, shared safely by processes and machines.
#[derive(Clone)]
pub struct PostgresArtifactStore {
    kinds: Arc<Kinds>,
    client: Arc<Mutex<Client>>,
}

impl std::fmt::Debug for PostgresArtifactStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresArtifactStore")
            .finish_non_exhaustive()
    }
}

fn pg(e: tokio_postgres::Error) -> ArtifactError {
    ArtifactError::store("the PostgreSQL artifact store failed", e)
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

impl PostgresArtifactStore {
    /// Connects to `url` (a libpq URL or key=value string), keeping every
    /// table in `schema` (created if missing), accepting `kinds`.
    pub async fn connect(url: &str, schema: &str, kinds: impl Into<Arc<Kinds>>) -> Result<Self> {
        let valid = !schema.is_empty()
            && schema.len() <= 63
            && schema
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(ArtifactError::invalid_argument(
                "the schema name must be 1 to 63 ASCII letters, digits or '_'.",
            ));
        }
        let (client, connection) = tokio_postgres::connect(url, NoTls).await.map_err(pg)?;
        tokio::spawn(async move {
            // The connection ends with the client; its error reaches the client's calls.
            let _ = connection.await;
        });
        client
            .batch_execute(&format!(
                "SELECT pg_advisory_lock(hashtext('burrow-artifacts schema'));
                 CREATE SCHEMA IF NOT EXISTS \"{schema}\";
                 SET search_path TO \"{schema}\";
                 {SCHEMA}
                 SELECT pg_advisory_unlock(hashtext('burrow-artifacts schema'));"
            ))
            .await
            .map_err(pg)?;
        Ok(Self {
            kinds: kinds.into(),
            client: Arc::new(Mutex::new(client)),
        })
    }
}

impl Transact for PostgresArtifactStore {
    fn kinds(&self) -> &Arc<Kinds> {
        &self.kinds
    }

    async fn transact<T, F>(&self, scope: &Scope, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut dyn Tx) -> Result<T> + Send + 'static,
    {
        let handle = Handle::current();
        if handle.runtime_flavor() != tokio::runtime::RuntimeFlavor::MultiThread {
            return Err(ArtifactError::corrupt(
                "the PostgreSQL artifact store needs a multi-threaded tokio runtime.",
            ));
        }
        let mut client = self.client.lock().await;
        let tx = client.transaction().await.map_err(pg)?;
        let key = format!("{}\u{1f}{}", scope.tenant, scope.workspace);
        tx.execute("SELECT pg_advisory_xact_lock(hashtext($1))", &[&key])
            .await
            .map_err(pg)?;
        let value = tokio::task::block_in_place(|| {
            f(&mut PgTx {
                tx: &tx,
                scope,
                handle: &handle,
            })
        })?;
        tx.commit().await.map_err(pg)?;
        Ok(value)
    }
}

struct PgTx<'a> {
    tx: &'a Transaction<'a>,
    scope: &'a Scope,
    handle: &'a Handle,
}

impl PgTx<'_> {
    fn docs<T: DeserializeOwned>(
        &self,
        query: &str,
        extra: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<T>> {
        let mut args: Vec<&(dyn ToSql + Sync)> = vec![&self.scope.tenant, &self.scope.workspace];
        args.extend_from_slice(extra);
        let rows = self
            .handle
            .block_on(self.tx.query(query, &args))
            .map_err(pg)?;
        rows.iter()
            .map(|r| from_json(r.try_get::<_, &str>(0).map_err(pg)?))
            .collect()
    }

    fn doc<T: DeserializeOwned>(
        &self,
        query: &str,
        extra: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<T>> {
        Ok(self.docs(query, extra)?.into_iter().next())
    }

    fn max(&self, query: &str) -> Result<u64> {
        let args: [&(dyn ToSql + Sync); 2] = [&self.scope.tenant, &self.scope.workspace];
        let row = self
            .handle
            .block_on(self.tx.query_one(query, &args))
            .map_err(pg)?;
        let v: Option<i64> = row.try_get(0).map_err(pg)?;
        Ok(v.and_then(|v| u64::try_from(v).ok()).unwrap_or(0))
    }

    fn exec(&self, query: &str, extra: &[&(dyn ToSql + Sync)]) -> Result<()> {
        let mut args: Vec<&(dyn ToSql + Sync)> = vec![&self.scope.tenant, &self.scope.workspace];
        args.extend_from_slice(extra);
        self.handle
            .block_on(self.tx.execute(query, &args))
            .map_err(pg)?;
        Ok(())
    }
}

impl Tx for PgTx<'_> {
    fn head(&mut self, id: &str) -> Result<Option<Versioned>> {
        self.doc(
            "SELECT doc FROM artifact_heads WHERE tenant = $1 AND workspace = $2 AND id = $3",
            &[&id],
        )
    }

    fn heads(&mut self) -> Result<Vec<Versioned>> {
        self.docs(
            "SELECT doc FROM artifact_heads WHERE tenant = $1 AND workspace = $2 ORDER BY id COLLATE \"C\"",
            &[],
        )
    }

    fn revisions_after(&mut self, id: &str, after: u64) -> Result<Vec<Revision>> {
        self.docs(
            "SELECT doc FROM artifact_revisions WHERE tenant = $1 AND workspace = $2 AND id = $3 \
             AND version > $4 ORDER BY version",
            &[&id, &int(after)],
        )
    }

    fn revision(&mut self, id: &str, version: u64) -> Result<Option<Revision>> {
        self.doc(
            "SELECT doc FROM artifact_revisions WHERE tenant = $1 AND workspace = $2 AND id = $3 \
             AND version = $4",
            &[&id, &int(version)],
        )
    }

    fn last_seq(&mut self) -> Result<u64> {
        self.max("SELECT MAX(seq) FROM artifact_events WHERE tenant = $1 AND workspace = $2")
    }

    fn events_after(&mut self, after: u64, limit: usize) -> Result<Vec<Event>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.docs(
            "SELECT doc FROM artifact_events WHERE tenant = $1 AND workspace = $2 AND seq > $3 \
             ORDER BY seq LIMIT $4",
            &[&int(after), &limit],
        )
    }

    fn last_proposal(&mut self) -> Result<u64> {
        self.max("SELECT MAX(id) FROM artifact_proposals WHERE tenant = $1 AND workspace = $2")
    }

    fn proposal(&mut self, id: u64) -> Result<Option<Proposal>> {
        self.doc(
            "SELECT doc FROM artifact_proposals WHERE tenant = $1 AND workspace = $2 AND id = $3",
            &[&int(id)],
        )
    }

    fn proposals(&mut self) -> Result<Vec<Proposal>> {
        self.docs(
            "SELECT doc FROM artifact_proposals WHERE tenant = $1 AND workspace = $2 ORDER BY id",
            &[],
        )
    }

    fn put_head(&mut self, head: &Versioned) -> Result<()> {
        let doc = to_json(head)?;
        self.exec(
            "INSERT INTO artifact_heads (tenant, workspace, id, doc) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (tenant, workspace, id) DO UPDATE SET doc = EXCLUDED.doc",
            &[&head.id, &doc],
        )
    }

    fn put_revision(&mut self, id: &str, revision: &Revision) -> Result<()> {
        let doc = to_json(revision)?;
        self.exec(
            "INSERT INTO artifact_revisions (tenant, workspace, id, version, doc) \
             VALUES ($1, $2, $3, $4, $5)",
            &[&id, &int(revision.version), &doc],
        )
    }

    fn put_event(&mut self, event: &Event) -> Result<()> {
        let doc = to_json(event)?;
        self.exec(
            "INSERT INTO artifact_events (tenant, workspace, seq, doc) VALUES ($1, $2, $3, $4)",
            &[&int(event.seq), &doc],
        )
    }

    fn put_proposal(&mut self, proposal: &Proposal) -> Result<()> {
        let doc = to_json(proposal)?;
        self.exec(
            "INSERT INTO artifact_proposals (tenant, workspace, id, doc) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (tenant, workspace, id) DO UPDATE SET doc = EXCLUDED.doc",
            &[&int(proposal.id), &doc],
        )
    }
}
