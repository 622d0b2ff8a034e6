//! `burrow run --artifacts DIR`: the agent's artifact workspace, in the session's store (in memory without `--session`), with the tools, the followed artifacts in every request and change notes (ADR 0332), behind the settings' `Read`/`Edit` deny rules (ADR 0395).

use std::path::Path;
use std::sync::Arc;

use burrow_artifacts::tools::ArtifactWorkspace;
use burrow_artifacts::{ArtifactStore, MemoryArtifactStore, PermissionArtifactStore};

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
    /// Others' changes after this seq are noted (`--watch-after`); `None`:
    /// where the thread's earlier runs with the workspace started, else the
    /// log's head now (ADR 0363).
    pub watch_after: Option<u64>,
    /// The settings' `Read`/`Edit` deny rules, enforced over the store
    /// (each artifact is `/artifacts/KIND/ID` to them, ADR 0395).
    pub rules: burrow::permissions::PathRules,
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
    let store = PermissionArtifactStore::guard(store, args.rules.clone());
    let scope = burrow_runtime::session::Scope::new(args.tenant, crate::artifact::WORKSPACE);
    let workspace =
        ArtifactWorkspace::new(store, scope, agent_name(args.thread)).with_notices(args.notices);
    let watch_after = match args.watch_after {
        Some(seq) => seq,
        None => watch_after(args, &workspace).await?,
    };
    Ok(Arc::new(workspace.with_watch_after(watch_after)))
}

/// Where a run with no `--watch-after` starts noting (ADR 0363): where the
/// thread's earlier runs with the workspace started (0 for runs recorded
/// before that was kept), else, for a thread new to the workspace, the log's
/// head now: it hears of nothing that came before it.
async fn watch_after(
    args: &RunArtifacts<'_>,
    workspace: &ArtifactWorkspace,
) -> Result<u64, String> {
    if let (Some(spec), Some(thread)) = (args.session, args.thread) {
        let session = crate::session::SessionArgs {
            spec: spec.to_owned(),
            tenant: args.tenant.to_owned(),
            claim_ttl: 30,
            setup: crate::session::Setup::default(),
        };
        match crate::session::recorded_watch_after(&session, thread).await {
            Ok(Some(seq)) => return Ok(seq),
            Ok(None) => {}
            Err(refused) => return Err(refused.message().to_owned()),
        }
    }
    workspace
        .head_seq()
        .await
        .map_err(|e| format!("the artifact store failed: {}", e.message()))
}

/// The workspace of `burrow run --artifacts DIR`, and of `burrow thread
/// answer` resuming a run that was started with one (the folder, the
/// notices choice and where it watches from are in the run's recorded
/// setup, ADR 0337); `None` without a folder or for another command; an
/// `Err` is one sentence. `setup` gets the seq the workspace watches after,
/// so the run records it.
pub async fn for_run(
    cli: &crate::cli::Cli,
    setup: &mut crate::session::Setup,
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
        watch_after: setup.watch_after,
        rules: crate::permissions::path_rules(&setup.settings)?,
    };
    let workspace = open(&args).await?;
    setup.watch_after = Some(workspace.watch_after());
    Ok(Some(workspace))
}
