//! `burrow serve` and `burrow serve token add`: session threads over HTTP through burrow-serve, each thread run by the runner `burrow run --session` uses (docs/adr/0340).

use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use burrow_runtime::agent::Agent;
use burrow_runtime::runner::{AgentForThread, FanoutChannel, LiveChannel, LiveEvent, LiveFrame};
use burrow_runtime::session::{SessionStore, ThreadKey};
use burrow_runtime::subagent::{TaskEvent, TaskEventSink};
use burrow_serve::{Limits, Server, Tokens, Wake};
use serde_json::json;

use crate::agent::Served;
use crate::cli::ServeArgs;
use crate::output::Exit;
use crate::session::{self, Refused, SessionArgs};

/// `burrow serve token add --tokens FILE --tenant T --name N`: prints the new token once.
pub fn token_add(path: &Path, tenant: &str, name: &str, json: bool) -> io::Result<Exit> {
    match burrow_serve::add_token(path, tenant, name) {
        Ok(token) => {
            let mut out = io::stdout().lock();
            if json {
                writeln!(
                    out,
                    "{}",
                    json!({"token": token, "tenant": tenant, "name": name})
                )?;
            } else {
                writeln!(out, "{token}")?;
            }
            out.flush()?;
            Ok(Exit::Success)
        }
        Err(e) => Refused::usage(e.message().to_owned()).report(json),
    }
}

/// `burrow serve`: serves until SIGTERM or SIGINT, then shuts down gracefully.
/// Each thread's runs get `served`'s agent made for the thread: `task`
/// (`--agents`), its children's doings in the run's live frames, and the
/// thread's place in the artifact workspace (`--artifacts`), as `burrow run`
/// gives them (ADR 0405).
pub async fn serve(
    served: Arc<Served>,
    store: Arc<dyn SessionStore>,
    args: &SessionArgs,
    serve: &ServeArgs,
    json: bool,
) -> Result<Exit, Refused> {
    let Some(path) = &serve.tokens else {
        return Err(Refused::usage("burrow serve needs --tokens FILE"));
    };
    let tokens = Tokens::load(path).map_err(|e| Refused::usage(e.message().to_owned()))?;
    if tokens.is_empty() {
        return Err(Refused::usage(
            "the tokens file holds no token: make one with `burrow serve token add`",
        ));
    }
    // A bad kinds folder or an artifact store that cannot open: refused before listening.
    #[cfg(feature = "artifacts")]
    let artifacts = match &serve.artifacts {
        Some(dir) => {
            let kinds = crate::artifact::read_kinds(dir).map_err(Refused::usage)?;
            Some(
                crate::artifact::open(&args.spec, kinds)
                    .await
                    .map_err(Refused::usage)?,
            )
        }
        None => None,
    };
    // The agents' artifact tools work behind the settings' Read/Edit deny
    // rules, as `burrow run`'s do (ADR 0395); a person's operations over HTTP
    // are not an agent's tool calls and are not under them.
    #[cfg(feature = "artifacts")]
    let agents_artifacts = match &artifacts {
        Some(store) => {
            let rules = crate::permissions::path_rules(&serve.settings).map_err(Refused::usage)?;
            Some((
                burrow_artifacts::PermissionArtifactStore::guard(Arc::clone(store), rules),
                !serve.no_notices,
            ))
        }
        None => None,
    };
    let live = Arc::new(FanoutChannel::new(crate::agent::LIVE_FRAMES));
    #[cfg(feature = "artifacts")]
    let agent_for = agent_for_thread(&served, &store, &live, agents_artifacts);
    #[cfg(not(feature = "artifacts"))]
    let agent_for = agent_for_thread(&served, &store, &live);
    let runner = session::runner_with_live(served.agent(), store, args, live, agent_for);
    let listener = tokio::net::TcpListener::bind(serve.listen)
        .await
        .map_err(|e| {
            Refused::failure(format!("cannot listen on {} ({})", serve.listen, e.kind()))
        })?;
    let addr = listener
        .local_addr()
        .map_err(|e| Refused::failure(format!("cannot read the bound address ({})", e.kind())))?;
    // Threads a process that died left asked and untaken are taken up here.
    runner.recover().await?;
    let limits = Limits {
        body_bytes: serve.max_body,
        watchers: serve.max_watchers,
        header_timeout: Duration::from_secs(serve.header_timeout),
        ..Limits::default()
    };
    let server = Server::with_wake(runner, tokens, session::WORKSPACE, limits, wake(&args.spec));
    #[cfg(feature = "artifacts")]
    let server = match artifacts {
        Some(store) => server.with_artifacts(store),
        None => server,
    };
    {
        let mut err = io::stderr().lock();
        if json {
            let mut out = io::stdout().lock();
            writeln!(
                out,
                "{}",
                json!({"type": "listening", "url": format!("http://{addr}")})
            )?;
            out.flush()?;
        } else {
            writeln!(err, "burrow: serving on http://{addr}")?;
        }
    }
    server
        .serve(listener, shutdown_signal())
        .await
        .map_err(|e| Refused::failure(e.message().to_owned()))?;
    Ok(Exit::Success)
}

/// What a `task` child does, sent in its parent run's live frames as
/// `burrow run --json` prints it (ADR 0405).
fn task_sink(live: &Arc<FanoutChannel>) -> TaskEventSink {
    let live = Arc::clone(live);
    Arc::new(move |event: TaskEvent| {
        if let Some((parent_run_id, line)) = crate::agent::task_event_json(&event) {
            live.send(LiveFrame {
                run_id: parent_run_id,
                event: LiveEvent::Task { event: line },
            });
        }
    })
}

/// What makes each thread's agent (`None` when no thread needs its own):
/// `task` with `--agents`, and with `--artifacts` the thread's place in
/// the workspace of the thread's tenant, named `thread:ID` as `burrow run
/// --thread ID` names it, hearing of others' changes from its first look
/// (`notices`) (ADR 0405).
#[cfg(feature = "artifacts")]
fn agent_for_thread(
    served: &Arc<Served>,
    store: &Arc<dyn SessionStore>,
    live: &Arc<FanoutChannel>,
    artifacts: Option<(Arc<dyn burrow_artifacts::ArtifactStore>, bool)>,
) -> Option<AgentForThread> {
    if !served.has_tasks() && artifacts.is_none() {
        return None;
    }
    let served = Arc::clone(served);
    let store = Arc::clone(store);
    let sink = task_sink(live);
    Some(Arc::new(move |agent: &Agent, thread: &ThreadKey| {
        let workspace = artifacts.as_ref().map(|(artifacts, notices)| {
            let scope = burrow_runtime::session::Scope::new(
                thread.scope.tenant.clone(),
                crate::artifact::WORKSPACE,
            );
            let name = crate::run_artifacts::agent_name(Some(&thread.thread));
            Arc::new(
                burrow_artifacts::tools::ArtifactWorkspace::new(Arc::clone(artifacts), scope, name)
                    .with_notices(*notices)
                    .with_watch_from_first_look(),
            )
        });
        served.for_thread(agent, thread, Arc::clone(&store), sink.clone(), workspace)
    }))
}

/// What makes each thread's agent (`None` without `--agents`): `task`,
/// its children runs of the thread's tenant (ADR 0405).
#[cfg(not(feature = "artifacts"))]
fn agent_for_thread(
    served: &Arc<Served>,
    store: &Arc<dyn SessionStore>,
    live: &Arc<FanoutChannel>,
) -> Option<AgentForThread> {
    if !served.has_tasks() {
        return None;
    }
    let served = Arc::clone(served);
    let store = Arc::clone(store);
    let sink = task_sink(live);
    Some(Arc::new(move |agent: &Agent, thread: &ThreadKey| {
        served.for_thread(agent, thread, Arc::clone(&store), sink.clone())
    }))
}

/// What wakes watchers of runs another process holds (ADR 0344): PostgreSQL's
/// notifications (with a look every second anyway), else a look every 100 ms.
fn wake(spec: &str) -> Wake {
    #[cfg(feature = "postgres")]
    if spec.starts_with("postgres://") || spec.starts_with("postgresql://") {
        return Wake::postgres(spec, Duration::from_secs(1));
    }
    let _ = spec;
    Wake::poll(Duration::from_millis(100))
}

/// SIGTERM or SIGINT.
async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        // No signal handler: serve until killed.
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}
