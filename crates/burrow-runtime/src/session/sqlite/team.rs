//! The SQLite store's team part: teams' todo items, message logs and members' delivery cursors in three tables, each change one `BEGIN IMMEDIATE` transaction (SQLite's write lock serialises claims across connections and processes).

use async_trait::async_trait;
use burrow_types::{SharedTodoItem, TeamMessage};
use rusqlite::params;

use super::{SqliteStore, docs, from_json, int, sql, to_json, uint};
use crate::session::{StoreError, StoreErrorKind, StoreResult};
use crate::team::{self, Decided, LoggedMessage, TeamKey, TeamStore, TodoChange};

/// The team tables, created when the file is opened (an older file gains them empty).
pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS session_team_todos (
    tenant TEXT NOT NULL, workspace TEXT NOT NULL, team TEXT NOT NULL, id TEXT NOT NULL,
    ord INTEGER NOT NULL, doc TEXT NOT NULL,
    PRIMARY KEY (tenant, workspace, team, id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS session_team_messages (
    tenant TEXT NOT NULL, workspace TEXT NOT NULL, team TEXT NOT NULL, seq INTEGER NOT NULL,
    id TEXT NOT NULL, receiver TEXT NOT NULL, sender TEXT NOT NULL, doc TEXT NOT NULL,
    PRIMARY KEY (tenant, workspace, team, seq),
    UNIQUE (tenant, workspace, team, id));
CREATE TABLE IF NOT EXISTS session_team_cursors (
    tenant TEXT NOT NULL, workspace TEXT NOT NULL, team TEXT NOT NULL, member TEXT NOT NULL,
    seq INTEGER NOT NULL,
    PRIMARY KEY (tenant, workspace, team, member)) WITHOUT ROWID;
";

const TODOS: &str = "SELECT doc FROM session_team_todos
    WHERE tenant = ?1 AND workspace = ?2 AND team = ?3 ORDER BY ord";

#[async_trait]
impl TeamStore for SqliteStore {
    async fn change_todo(&self, team: &TeamKey, change: TodoChange) -> StoreResult<SharedTodoItem> {
        team::check_team(team)?;
        let k = team.clone();
        self.write(move |tx, _| {
            let (t, w, tm) = (&k.scope.tenant, &k.scope.workspace, &k.team);
            let items: Vec<SharedTodoItem> = docs(tx, TODOS, params![t, w, tm])?;
            let decided = team::decide(&items, &change)?;
            match &decided {
                Decided::Insert(item) => {
                    tx.execute(
                        "INSERT INTO session_team_todos (tenant, workspace, team, id, ord, doc)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                        params![t, w, tm, item.id, int(items.len() as u64), to_json(item)?],
                    )
                    .map_err(sql)?;
                }
                Decided::Update(item) => {
                    tx.execute(
                        "UPDATE session_team_todos SET doc = ?5
                         WHERE tenant = ?1 AND workspace = ?2 AND team = ?3 AND id = ?4",
                        params![t, w, tm, item.id, to_json(item)?],
                    )
                    .map_err(sql)?;
                }
                Decided::Unchanged(_) => {}
            }
            Ok(decided.item().clone())
        })
        .await
    }

    async fn team_todos(&self, team: &TeamKey) -> StoreResult<Vec<SharedTodoItem>> {
        team::check_team(team)?;
        let k = team.clone();
        self.blocking(move |conn, _| {
            docs(
                conn,
                TODOS,
                params![k.scope.tenant, k.scope.workspace, k.team],
            )
        })
        .await
    }

    async fn send_message(&self, team: &TeamKey, message: TeamMessage) -> StoreResult<u64> {
        team::check_team(team)?;
        team::check_message(&message)?;
        let k = team.clone();
        self.write(move |tx, _| {
            let (t, w, tm) = (&k.scope.tenant, &k.scope.workspace, &k.team);
            let used: Option<i64> = tx
                .query_row(
                    "SELECT 1 FROM session_team_messages
                     WHERE tenant = ?1 AND workspace = ?2 AND team = ?3 AND id = ?4",
                    params![t, w, tm, message.id],
                    |r| r.get(0),
                )
                .map(Some)
                .or_else(|e| match e {
                    rusqlite::Error::QueryReturnedNoRows => Ok(None),
                    e => Err(sql(e)),
                })?;
            if used.is_some() {
                return Err(StoreError::new(
                    StoreErrorKind::IdInUse,
                    "the team message id is already used in the team",
                ));
            }
            let last: i64 = tx
                .query_row(
                    "SELECT COALESCE(MAX(seq), 0) FROM session_team_messages
                     WHERE tenant = ?1 AND workspace = ?2 AND team = ?3",
                    params![t, w, tm],
                    |r| r.get(0),
                )
                .map_err(sql)?;
            let seq = last + 1;
            tx.execute(
                "INSERT INTO session_team_messages
                 (tenant, workspace, team, seq, id, receiver, sender, doc)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    t,
                    w,
                    tm,
                    seq,
                    message.id,
                    message.receiver,
                    message.sender,
                    to_json(&message)?
                ],
            )
            .map_err(sql)?;
            Ok(uint(seq))
        })
        .await
    }

    async fn messages_for(
        &self,
        team: &TeamKey,
        member: &str,
        after: u64,
    ) -> StoreResult<Vec<LoggedMessage>> {
        team::check_team(team)?;
        let (k, member) = (team.clone(), member.to_owned());
        self.blocking(move |conn, _| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT seq, doc FROM session_team_messages
                     WHERE tenant = ?1 AND workspace = ?2 AND team = ?3 AND seq > ?4
                     AND (receiver = ?5 OR (receiver = '' AND sender <> ?5))
                     ORDER BY seq",
                )
                .map_err(sql)?;
            let rows = stmt
                .query_map(
                    params![
                        k.scope.tenant,
                        k.scope.workspace,
                        k.team,
                        int(after),
                        member
                    ],
                    |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)),
                )
                .map_err(sql)?;
            let mut out = Vec::new();
            for row in rows {
                let (seq, doc) = row.map_err(sql)?;
                out.push(LoggedMessage {
                    seq: uint(seq),
                    message: from_json(&doc)?,
                });
            }
            Ok(out)
        })
        .await
    }

    async fn delivered(&self, team: &TeamKey, member: &str) -> StoreResult<u64> {
        team::check_team(team)?;
        let (k, member) = (team.clone(), member.to_owned());
        self.blocking(move |conn, _| cursor_of(conn, &k, &member))
            .await
    }

    async fn mark_delivered(&self, team: &TeamKey, member: &str, seq: u64) -> StoreResult<u64> {
        team::check_team(team)?;
        let (k, member) = (team.clone(), member.to_owned());
        self.write(move |tx, _| {
            let (t, w, tm) = (&k.scope.tenant, &k.scope.workspace, &k.team);
            let last: i64 = tx
                .query_row(
                    "SELECT COALESCE(MAX(seq), 0) FROM session_team_messages
                     WHERE tenant = ?1 AND workspace = ?2 AND team = ?3",
                    params![t, w, tm],
                    |r| r.get(0),
                )
                .map_err(sql)?;
            team::check_cursor(&member, seq, uint(last))?;
            tx.execute(
                "INSERT INTO session_team_cursors (tenant, workspace, team, member, seq)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (tenant, workspace, team, member)
                 DO UPDATE SET seq = MAX(seq, excluded.seq)",
                params![t, w, tm, member, int(seq)],
            )
            .map_err(sql)?;
            cursor_of(tx, &k, &member)
        })
        .await
    }
}

/// `member`'s delivery cursor in `team` (0 when it has none).
fn cursor_of(conn: &rusqlite::Connection, k: &TeamKey, member: &str) -> StoreResult<u64> {
    conn.query_row(
        "SELECT seq FROM session_team_cursors
         WHERE tenant = ?1 AND workspace = ?2 AND team = ?3 AND member = ?4",
        params![k.scope.tenant, k.scope.workspace, k.team, member],
        |r| r.get::<_, i64>(0),
    )
    .map(uint)
    .or_else(|e| match e {
        rusqlite::Error::QueryReturnedNoRows => Ok(0),
        e => Err(sql(e)),
    })
}
