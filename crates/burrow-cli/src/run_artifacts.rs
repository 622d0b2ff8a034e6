//! `burrow run --artifacts DIR`: the agent's artifact workspace, in the session's store (in memory without `--session`), with the tools, the followed artifacts in every request and change notes (ADR 0332).

use std::path::Path;
use std::sync::Arc;

use burrow_artifacts::tools::ArtifactWorkspace;
use burrow_artifacts::{ArtifactStore, MemoryArtifactStore};

/// What `--artifacts DIR` and its companions say.
pub struct RunArtifacts<'a> {
    /// The kinds folder (`DIR/KIND.schema.json`, optional `DIR/KIND.md`).
    pub dir: &'a Path,
    /// The session spec, if the run is in one.
    pub session: Option<&'a str>,
    /// The session thread, if any: the agent's name in the workspace is `thread:ID`.
    pub thread: Option<&'a str>,
    /// The tenant.
    pub tenant: &'a str,
    /// Change notes (off with `--no-notices`).
    pub notices: bool,
}

/// The agent's name in the workspace: `thread:ID` in a session thread (every
/// run of the thread is the same agent, which is never told of its own
/// changes), else `assistant`.
pub fn agent_name(thread: Option<&str>) -> String {
    thread.map_or_else(|| "assistant".to_owned(), |t| format!("thread:{t}"))
}

/// Opens the workspace; an `Err` is one sentence, and nothing has run.
pub async fn open(args: &RunArtifacts<'_>) -> Result<Arc<ArtifactWorkspace>, String> {
    let kinds = crate::artifact::read_kinds(args.dir)?;
    let store: Arc<dyn ArtifactStore> = match args.session {
        Some(spec) if spec != "memory:" => crate::artifact::open(spec, kinds).await?,
        // `memory:` sessions and runs without one: a store of this process.
        _ => Arc::new(MemoryArtifactStore::new(kinds)),
    };
    let scope = burrow_runtime::session::Scope::new(args.tenant, crate::artifact::WORKSPACE);
    Ok(Arc::new(
        ArtifactWorkspace::new(store, scope, agent_name(args.thread)).with_notices(args.notices),
    ))
}

/// The workspace of `burrow run --artifacts DIR`, and of `burrow thread
/// answer` resuming a run that was started with one (the folder and the
/// notices choice are in the run's recorded setup, ADR 0337); `None` without
/// a folder or for another command; an `Err` is one sentence.
pub async fn for_run(
    cli: &crate::cli::Cli,
    setup: &crate::session::Setup,
) -> Result<Option<Arc<ArtifactWorkspace>>, String> {
    let Some(dir) = &setup.artifacts else {
        return Ok(None);
    };
    let (session, thread) = match &cli.command {
        crate::cli::Command::Run {
            session, thread, ..
        } => (session.as_deref(), thread.as_deref()),
        crate::cli::Command::Thread(crate::cli::ThreadCommand::Answer { id, session, .. }) => {
            (Some(session.as_str()), Some(id.as_str()))
        }
        _ => return Ok(None),
    };
    let args = RunArtifacts {
        dir,
        session,
        thread,
        tenant: &cli.tenant,
        notices: !setup.no_notices,
    };
    open(&args).await.map(Some)
}
