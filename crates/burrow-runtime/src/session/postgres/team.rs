//! The PostgreSQL store's team part: teams' todo items, message logs and members' delivery cursors in three tables, each change one transaction under an advisory lock on the team (so two members claiming one item on two connections are serialised).

use async_trait::async_trait;
use burrow_types::{SharedTodoItem, TeamMessage};
use tokio_postgres::Client;

use super::{PostgresStore, from_json, int, lock_key, pg, rollback, to_json, uint};
use crate::session::{StoreError, StoreErrorKind, StoreResult, ThreadKey};
use crate::team::{self, Decided, LoggedMessage, TeamKey, TeamStore, TodoChange};

/// The team tables, created when the store connects (an older database gains them empty).
pub(super) const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS session_team_todos (
        tenant TEXT NOT NULL, workspace TEXT NOT NULL, team TEXT NOT NULL, id TEXT NOT NULL,
        ord BIGINT NOT NULL, doc TEXT NOT NULL,
        PRIMARY KEY (tenant, workspace, team, id))",
    "CREATE TABLE IF NOT EXISTS session_team_messages (
        tenant TEXT NOT NULL, workspace TEXT NOT NULL, team TEXT NOT NULL, seq BIGINT NOT NULL,
        id TEXT NOT NULL, receiver TEXT NOT NULL, sender TEXT NOT NULL, doc TEXT NOT NULL,
        PRIMARY KEY (tenant, workspace, team, seq),
        UNIQUE (tenant, workspace, team, id))",
    "CREATE TABLE IF NOT EXISTS session_team_cursors (
        tenant TEXT NOT NULL, workspace TEXT NOT NULL, team TEXT NOT NULL, member TEXT NOT NULL,
        seq BIGINT NOT NULL,
        PRIMARY KEY (tenant, workspace, team, member))",
];

/// The team's advisory lock key: a thread key no thread can have (a NUL in its id).
fn team_lock(team: &TeamKey) -> i64 {
    lock_key(&ThreadKey {
        scope: team.scope.clone(),
        thread: format!("\0team\0{}", team.team),
    })
}

async fn load_todos(c: &Client, team: &TeamKey) -> StoreResult<Vec<SharedTodoItem>> {
    let rows = c
        .query(
            "SELECT doc FROM session_team_todos
             WHERE tenant = $1 AND workspace = $2 AND team = $3 ORDER BY ord",
            &[&team.scope.tenant, &team.scope.workspace, &team.team],
        )
        .await
        .map_err(pg)?;
    rows.iter()
        .map(|r| from_json(r.get::<_, &str>(0)))
        .collect()
}

async fn change_locked(
    c: &Client,
    team: &TeamKey,
    change: &TodoChange,
) -> StoreResult<SharedTodoItem> {
    c.batch_execute("BEGIN").await.map_err(pg)?;
    c.execute("SELECT pg_advisory_xact_lock($1)", &[&team_lock(team)])
        .await
        .map_err(pg)?;
    let items = load_todos(c, team).await?;
    let decided = team::decide(&items, change)?;
    let (t, w, tm) = (&team.scope.tenant, &team.scope.workspace, &team.team);
    match &decided {
        Decided::Insert(item) => {
            let ord = int(items.len() as u64);
            c.execute(
                "INSERT INTO session_team_todos (tenant, workspace, team, id, ord, doc)
                 VALUES ($1, $2, $3, $4, $5, $6)",
                &[t, w, tm, &item.id, &ord, &to_json(item)?],
            )
            .await
            .map_err(pg)?;
        }
        Decided::Update(item) => {
            c.execute(
                "UPDATE session_team_todos SET doc = $5
                 WHERE tenant = $1 AND workspace = $2 AND team = $3 AND id = $4",
                &[t, w, tm, &item.id, &to_json(item)?],
            )
            .await
            .map_err(pg)?;
        }
        Decided::Unchanged(_) => {}
    }
    Ok(decided.item().clone())
}

async fn send_locked(c: &Client, team: &TeamKey, message: &TeamMessage) -> StoreResult<u64> {
    c.batch_execute("BEGIN").await.map_err(pg)?;
    c.execute("SELECT pg_advisory_xact_lock($1)", &[&team_lock(team)])
        .await
        .map_err(pg)?;
    let (t, w, tm) = (&team.scope.tenant, &team.scope.workspace, &team.team);
    let used = c
        .query_opt(
            "SELECT 1 FROM session_team_messages
             WHERE tenant = $1 AND workspace = $2 AND team = $3 AND id = $4",
            &[t, w, tm, &message.id],
        )
        .await
        .map_err(pg)?;
    if used.is_some() {
        return Err(StoreError::new(
            StoreErrorKind::IdInUse,
            "the team message id is already used in the team",
        ));
    }
    let last: i64 = c
        .query_one(
            "SELECT COALESCE(MAX(seq), 0)::BIGINT FROM session_team_messages
             WHERE tenant = $1 AND workspace = $2 AND team = $3",
            &[t, w, tm],
        )
        .await
        .map_err(pg)?
        .get(0);
    let seq = last + 1;
    c.execute(
        "INSERT INTO session_team_messages
         (tenant, workspace, team, seq, id, receiver, sender, doc)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        &[
            t,
            w,
            tm,
            &seq,
            &message.id,
            &message.receiver,
            &message.sender,
            &to_json(message)?,
        ],
    )
    .await
    .map_err(pg)?;
    Ok(uint(seq))
}

impl PostgresStore {
    /// Ends a team transaction: commits it, or rolls it back on a refusal; the connection goes back to the pool.
    async fn end_team_transaction<T>(
        &self,
        conn: super::Pooled,
        result: StoreResult<T>,
    ) -> StoreResult<T> {
        let ended = match &result {
            Ok(_) => conn.client.batch_execute("COMMIT").await.map_err(pg),
            Err(_) => rollback(&conn.client).await,
        };
        self.settle(conn, result, ended).await
    }
}

#[async_trait]
impl TeamStore for PostgresStore {
    async fn change_todo(&self, team: &TeamKey, change: TodoChange) -> StoreResult<SharedTodoItem> {
        team::check_team(team)?;
        let conn = self.take().await?;
        let result = change_locked(&conn.client, team, &change).await;
        self.end_team_transaction(conn, result).await
    }

    async fn team_todos(&self, team: &TeamKey) -> StoreResult<Vec<SharedTodoItem>> {
        team::check_team(team)?;
        let conn = self.take().await?;
        let result = load_todos(&conn.client, team).await;
        self.settle(conn, result, Ok(())).await
    }

    async fn send_message(&self, team: &TeamKey, message: TeamMessage) -> StoreResult<u64> {
        team::check_team(team)?;
        team::check_message(&message)?;
        let conn = self.take().await?;
        let result = send_locked(&conn.client, team, &message).await;
        self.end_team_transaction(conn, result).await
    }

    async fn messages_for(
        &self,
        team: &TeamKey,
        member: &str,
        after: u64,
    ) -> StoreResult<Vec<LoggedMessage>> {
        team::check_team(team)?;
        let conn = self.take().await?;
        let result = async {
            let rows = conn
                .client
                .query(
                    "SELECT seq, doc FROM session_team_messages
                     WHERE tenant = $1 AND workspace = $2 AND team = $3 AND seq > $4
                     AND (receiver = $5 OR (receiver = '' AND sender <> $5))
                     ORDER BY seq",
                    &[
                        &team.scope.tenant,
                        &team.scope.workspace,
                        &team.team,
                        &int(after),
                        &member,
                    ],
                )
                .await
                .map_err(pg)?;
            rows.iter()
                .map(|r| {
                    Ok(LoggedMessage {
                        seq: uint(r.get::<_, i64>(0)),
                        message: from_json(r.get::<_, &str>(1))?,
                    })
                })
                .collect::<StoreResult<Vec<_>>>()
        }
        .await;
        self.settle(conn, result, Ok(())).await
    }

    async fn delivered(&self, team: &TeamKey, member: &str) -> StoreResult<u64> {
        team::check_team(team)?;
        let conn = self.take().await?;
        let result = cursor_of(&conn.client, team, member).await;
        self.settle(conn, result, Ok(())).await
    }

    async fn mark_delivered(&self, team: &TeamKey, member: &str, seq: u64) -> StoreResult<u64> {
        team::check_team(team)?;
        let conn = self.take().await?;
        let result = async {
            let c = &conn.client;
            let (t, w, tm) = (&team.scope.tenant, &team.scope.workspace, &team.team);
            let last: i64 = c
                .query_one(
                    "SELECT COALESCE(MAX(seq), 0)::BIGINT FROM session_team_messages
                     WHERE tenant = $1 AND workspace = $2 AND team = $3",
                    &[t, w, tm],
                )
                .await
                .map_err(pg)?
                .get(0);
            team::check_cursor(member, seq, uint(last))?;
            let row = c
                .query_one(
                    "INSERT INTO session_team_cursors (tenant, workspace, team, member, seq)
                     VALUES ($1, $2, $3, $4, $5)
                     ON CONFLICT (tenant, workspace, team, member)
                     DO UPDATE SET seq = GREATEST(session_team_cursors.seq, EXCLUDED.seq)
                     RETURNING seq",
                    &[t, w, tm, &member, &int(seq)],
                )
                .await
                .map_err(pg)?;
            Ok(uint(row.get::<_, i64>(0)))
        }
        .await;
        self.settle(conn, result, Ok(())).await
    }
}

/// `member`'s delivery cursor in `team` (0 when it has none).
async fn cursor_of(c: &Client, team: &TeamKey, member: &str) -> StoreResult<u64> {
    let row = c
        .query_opt(
            "SELECT seq FROM session_team_cursors
             WHERE tenant = $1 AND workspace = $2 AND team = $3 AND member = $4",
            &[
                &team.scope.tenant,
                &team.scope.workspace,
                &team.team,
                &member,
            ],
        )
        .await
        .map_err(pg)?;
    Ok(row.map_or(0, |r| uint(r.get::<_, i64>(0))))
}
