//! `burrow thread checkpoint|checkpoints|rewind|fork`: checkpoints of a session thread, a rewind of its files (through --backend) and conversation, and a fork from one (ADR 0295).

use std::io::{self, Write as _};
use std::sync::OnceLock;

use burrow::FileContext;
use burrow_runtime::checkpoint::{
    self, CheckpointError, CheckpointErrorKind, Checkpointer, RewindMode, RewindOptions,
};
use serde_json::{Value, json};

use crate::cli::{Cli, Command, ThreadCommand};
use crate::display;
use crate::output::Exit;
use crate::session::{Refused, open_store, scope};
use crate::spec;

impl From<CheckpointError> for Refused {
    fn from(e: CheckpointError) -> Self {
        match e.kind() {
            CheckpointErrorKind::Store => {
                Refused::failure(format!("the session store failed: {}", e.message()))
            }
            CheckpointErrorKind::Backend => Refused::failure(format!(
                "the workspace's files could not be read or restored: {}",
                e.message()
            )),
            kind => Refused::not_allowed(kind.as_str(), e.message().to_owned()),
        }
    }
}

/// The checkpointer of this process's session runs: set by `burrow run
/// --session`, `burrow thread answer` and `burrow serve` over their backend
/// (a server's runs, whatever their tenant, work on its one backend in its
/// `--tenant`, ADR 0340, so that is where their files are read).
static RUNS: OnceLock<Checkpointer> = OnceLock::new();

/// Makes the session runs of `command` (a run, an answer or a server's runs)
/// take a checkpoint before every batch that changes files, through `opened`.
pub fn checkpoint_runs(command: &Command, opened: &spec::Opened, ctx: &FileContext) {
    if matches!(
        command,
        Command::Run { .. } | Command::Thread(ThreadCommand::Answer { .. })
    ) || serves(command)
    {
        let _ = RUNS.set(Checkpointer::new(opened.backend.clone(), ctx.clone()));
    }
}

/// True for `burrow serve` (not `serve token add`).
fn serves(command: &Command) -> bool {
    #[cfg(feature = "serve")]
    if let Command::Serve { action: None, .. } = command {
        return true;
    }
    let _ = command;
    false
}

/// The checkpointer [`checkpoint_runs`] set, if it did.
pub fn checkpointer() -> Option<Checkpointer> {
    RUNS.get().cloned()
}

fn print(value: &Value) -> io::Result<()> {
    let mut out = io::stdout().lock();
    writeln!(out, "{value}")?;
    out.flush()
}

/// Runs one of the four commands.
pub async fn command(cli: &Cli, command: &ThreadCommand) -> Result<Exit, Refused> {
    let json = cli.json;
    match command {
        ThreadCommand::Checkpoint { id, label, session } => {
            let store = open_store(session).await?;
            let key = scope(&cli.tenant).thread(id);
            if store.thread(&key).await?.is_none() {
                return Err(no_thread(id));
            }
            let made = checkpoint::take(store.as_ref(), None, &key, label.clone(), &[]).await?;
            if json {
                print(&json!({"checkpoint": {"id": made, "thread": id, "label": label}}))?;
            } else {
                println!("{made}");
            }
            Ok(Exit::Success)
        }
        ThreadCommand::Checkpoints { id, session } => {
            let store = open_store(session).await?;
            let key = scope(&cli.tenant).thread(id);
            if store.thread(&key).await?.is_none() {
                return Err(no_thread(id));
            }
            let list = store.checkpoints(&key).await?;
            if json {
                let rows: Vec<Value> = list
                    .iter()
                    .map(|k| {
                        json!({
                            "id": k.id,
                            "label": k.label,
                            "turn": k.turn,
                            "message_count": k.history_len,
                            "created_at": checkpoint::rfc3339(k.at_ms),
                            "files": k.paths,
                            "metadata": k.metadata,
                        })
                    })
                    .collect();
                print(&json!({"checkpoints": rows}))?;
            } else {
                let mut out = io::stdout().lock();
                for k in &list {
                    writeln!(
                        out,
                        "{} {} {} {} {} {}",
                        k.id,
                        checkpoint::rfc3339(k.at_ms),
                        k.history_len,
                        k.turn.map_or("-".to_owned(), |t| t.to_string()),
                        k.paths.len(),
                        display::name(k.label.as_deref().unwrap_or("-")),
                    )?;
                }
            }
            Ok(Exit::Success)
        }
        ThreadCommand::Rewind {
            id,
            to,
            files_only,
            conversation_only,
            session,
            claim_ttl,
        } => {
            let store = open_store(session).await?;
            let key = scope(&cli.tenant).thread(id);
            if store.thread(&key).await?.is_none() {
                return Err(no_thread(id));
            }
            let mode = match (files_only, conversation_only) {
                (true, _) => RewindMode::FilesOnly,
                (_, true) => RewindMode::ConversationOnly,
                _ => RewindMode::Both,
            };
            let files_tenant = workspace_of(store.as_ref(), &key, id, cli, mode).await?;
            let opened = spec::open(&cli.backends)
                .await
                .map_err(|e| Refused::failure(format!("the backend could not be opened: {e}")))?;
            let ctx = FileContext::for_tenant(files_tenant);
            let options = RewindOptions {
                mode,
                claim_ttl: std::time::Duration::from_secs(*claim_ttl),
                ..RewindOptions::default()
            };
            #[cfg(feature = "failpoints")]
            let options = crash_from_env(options);
            let done = checkpoint::rewind(
                store.as_ref(),
                opened.backend.as_ref(),
                &ctx,
                &key,
                to,
                &options,
            )
            .await;
            let saved = opened.finish();
            let closed = opened.closer().close().await;
            let done = done?;
            if let Err(e) = saved.and(closed) {
                return Err(Refused::failure(format!(
                    "the restored files could not be saved: {e}"
                )));
            }
            if json {
                print(&json!({"rewound": {
                    "thread": id,
                    "checkpoint": done.checkpoint_id,
                    "restored": done.restored,
                    "conversation": done.conversation,
                    "undo_checkpoint": done.undo_checkpoint,
                    "finished_earlier": done.finished_earlier,
                }}))?;
            } else {
                let mut out = io::stdout().lock();
                if let Some(earlier) = &done.finished_earlier
                    && earlier != &done.checkpoint_id
                {
                    writeln!(
                        out,
                        "finished the rewind to {earlier} an earlier process left unfinished"
                    )?;
                }
                writeln!(
                    out,
                    "rewound thread {} to {}: {} file(s) restored{}",
                    display::name(id),
                    done.checkpoint_id,
                    done.restored.len(),
                    if done.conversation {
                        ", conversation moved back"
                    } else {
                        ""
                    }
                )?;
                if let Some(undo) = &done.undo_checkpoint {
                    writeln!(out, "the files as they were are in checkpoint {undo}")?;
                }
            }
            Ok(Exit::Success)
        }
        ThreadCommand::Fork {
            id,
            at,
            new_id,
            session,
        } => {
            let store = open_store(session).await?;
            let scope = scope(&cli.tenant);
            let key = scope.thread(id);
            if store.thread(&key).await?.is_none() {
                return Err(no_thread(id));
            }
            let count = checkpoint::fork(store.as_ref(), &key, at, &scope.thread(new_id)).await?;
            if json {
                print(
                    &json!({"forked": {"thread": new_id, "from": id, "checkpoint": at, "messages": count}}),
                )?;
            } else {
                println!(
                    "thread {} starts from {} at {at} ({count} messages)",
                    display::name(new_id),
                    display::name(id)
                );
            }
            Ok(Exit::Success)
        }
        _ => Ok(Exit::Failed),
    }
}

/// The tenant a rewind of thread `id` restores files as, once the
/// `--backend` of `cli` is the workspace the thread's runs recorded (ADR
/// 0359): another workspace is refused before anything is opened, unless
/// the rewind touches no file (`--conversation-only`). A thread no run of
/// which recorded a workspace is rewound through `--backend` as given.
async fn workspace_of(
    store: &dyn burrow_runtime::session::SessionStore,
    key: &burrow_runtime::session::ThreadKey,
    id: &str,
    cli: &Cli,
    mode: RewindMode,
) -> Result<String, Refused> {
    let Some((recorded, tenant)) = crate::session::recorded_workspace(store, key).await? else {
        return Ok(cli.tenant.clone());
    };
    let given = spec::workspace(&cli.backends);
    if recorded != given && mode != RewindMode::ConversationOnly {
        return Err(Refused::not_allowed(
            "invalid_argument",
            format!(
                "thread {}'s runs changed the files of --backend {recorded}, not of --backend {given}; \
                 give the thread's --backend (or rewind with --conversation-only), nothing was changed",
                display::name(id)
            ),
        ));
    }
    Ok(tenant.unwrap_or_else(|| cli.tenant.clone()))
}

/// `options` stopping for good where `BURROW_FAILPOINT_REWIND` says
/// (`begun` or `restored`), as a process killed there would (feature
/// `failpoints`, for the crash tests through the binary only).
#[cfg(feature = "failpoints")]
fn crash_from_env(mut options: RewindOptions) -> RewindOptions {
    use checkpoint::RewindStep;
    let step = match std::env::var("BURROW_FAILPOINT_REWIND").as_deref() {
        Ok("begun") => RewindStep::Begun,
        Ok("restored") => RewindStep::Restored,
        _ => return options,
    };
    options.crash_at = Some(std::sync::Arc::new(move |at| at == step));
    options
}

fn no_thread(id: &str) -> Refused {
    Refused::not_allowed(
        "not_found",
        format!("the session has no thread {}", display::name(id)),
    )
}
