//! The `burrow` binary: drives any burrow backend from the shell.
//!
//! # Key design decision: one operation type under every front end
//!
//! A subcommand (`burrow --json read /a.txt`) and a batch line
//! (`{"op": "read", "path": "/a.txt"}`) both become one [`op::Op`], run by
//! one function and printed by one [`output::Output`]. So a batch line
//! prints byte for byte what `--json` prints for the same operation, and a
//! new operation cannot exist in one front end and not the other.
//!
//! The exit code says who is at fault: 0 success, 1 a refusal (the contract
//! does not allow what was asked: the caller can fix the request), 2 a
//! failure (the storage or an input broke) or bad usage (clap's own exit
//! code for a malformed command line). See docs/adr/0040.

// A build with no backend feature has nothing to open: the spec plumbing
// is then unused, and that is fine.
#![cfg_attr(
    not(any(
        feature = "state",
        feature = "fs",
        feature = "sqlite",
        feature = "s3",
        feature = "docker"
    )),
    allow(dead_code, unused_imports, unused_variables)
)]

#[cfg(feature = "run")]
mod agent;
#[cfg(feature = "artifacts")]
mod artifact;
mod batch;
mod cli;
mod display;
#[cfg(feature = "docker")]
mod docker;
mod log;
#[cfg(feature = "mcp")]
mod mcp;
#[cfg(feature = "mcp")]
mod mcp_hooks;
#[cfg(feature = "mcp")]
mod mcp_permissions;
#[cfg(feature = "run")]
mod mcp_signals;
#[cfg(feature = "composite")]
mod mounts;
mod op;
mod output;
#[cfg(any(feature = "run", feature = "mcp"))]
mod permissions;
#[cfg(feature = "run")]
mod pipe;
#[cfg(feature = "artifacts")]
mod run_artifacts;
#[cfg(feature = "serve")]
mod serve;
#[cfg(feature = "run")]
mod session;
#[cfg(any(feature = "run", feature = "mcp"))]
mod settings_files;
mod spec;
#[cfg(feature = "state")]
mod state_file;
#[cfg(feature = "run")]
mod subagents;
#[cfg(feature = "run")]
mod team;
#[cfg(feature = "run")]
mod thread_checkpoint;

use std::io::{self, Write};
use std::process::ExitCode;

use burrow::{Error, FileContext};
use clap::CommandFactory;

use crate::cli::Cli;
use crate::op::Op;
use crate::output::{Exit, error_json, error_text};

fn main() -> ExitCode {
    // Only `run --skills` adds to the command line.
    #[cfg_attr(not(feature = "run"), allow(unused_mut))]
    let mut cli = cli::parse();
    log::install();
    #[cfg(feature = "run")]
    if let Err(message) = mount_skills(&mut cli) {
        cli::exit_usage(Cli::command().error(clap::error::ErrorKind::ValueValidation, message));
    }
    if let Err(message) = spec::check(&cli.backends) {
        cli::exit_usage(Cli::command().error(clap::error::ErrorKind::ArgumentConflict, message));
    }
    let json = cli.json;
    // Two workers: a run, its claim renewal and its printer never share one
    // thread's time with a blocked write (docs/adr/0262). A file operation
    // or batch on in-memory and state-file backends runs on this thread
    // alone (docs/adr/0246): no worker to start, wake or join.
    let mut builder = if one_thread_suffices(&cli) {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder.worker_threads(2);
        builder
    };
    let runtime = match builder.enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => return fail(&Error::failure("cannot start the async runtime", e), json),
    };
    let outcome = runtime.block_on(run(cli));
    // A caught signal ends the process from its guard thread, with 128+signal.
    #[cfg(feature = "docker")]
    docker::settle();
    match outcome {
        Ok(exit) => exit.code(),
        // stdout closed early (`burrow cat big | head`): not an error.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            let _ = writeln!(io::stderr(), "burrow: cannot write output: {e}");
            Exit::Failed.code()
        }
    }
}

/// True when the command needs no thread but this one: a file operation,
/// a batch or `state compact` (not `run`, `thread`, `mcp` or `docker gc`)
/// on `memory:` and `state:` backends only, which never spawn a task, wait
/// on another thread or block in place (docs/adr/0246).
fn one_thread_suffices(cli: &Cli) -> bool {
    use cli::Command as C;
    let file_operation = matches!(
        cli.command,
        C::Ls { .. }
            | C::Read { .. }
            | C::Cat { .. }
            | C::Write { .. }
            | C::Edit { .. }
            | C::Rm { .. }
            | C::Mkdir { .. }
            | C::Glob { .. }
            | C::Grep { .. }
            | C::Exec { .. }
            | C::Batch
    );
    #[cfg(feature = "state")]
    let state_compact = matches!(cli.command, C::State(_));
    #[cfg(not(feature = "state"))]
    let state_compact = false;
    (file_operation || state_compact) && cli.backends.iter().all(|b| in_process(&b.spec))
}

/// A backend that lives in this process and the host's files only.
fn in_process(spec: &spec::Spec) -> bool {
    #[cfg(feature = "state")]
    if matches!(spec, spec::Spec::Memory | spec::Spec::State(_)) {
        return true;
    }
    let _ = spec;
    false
}

/// Runs the command; an `Err` only when stdout or stderr cannot be written.
///
/// Whatever the command's outcome, what the backends started (a `docker:`
/// container) is shut down before burrow ends; a failed shutdown goes to
/// stderr and makes the exit code 2.
async fn run(cli: Cli) -> io::Result<Exit> {
    let json = cli.json;
    // `burrow docker gc` opens no backend.
    #[cfg(feature = "docker")]
    if let cli::Command::Docker(cli::DockerCommand::Gc) = cli.command {
        return docker::gc(json).await;
    }
    // `burrow state compact FILE` opens no backend.
    #[cfg(feature = "state")]
    if let cli::Command::State(cli::StateCommand::Compact { file }) = &cli.command {
        return state_compact(file, json);
    }
    // `burrow serve token add` writes the tokens file only.
    #[cfg(feature = "serve")]
    if let cli::Command::Serve {
        action: Some(cli::ServeCommand::Token(cli::TokenCommand::Add { tokens, name })),
        ..
    } = &cli.command
    {
        return serve::token_add(tokens, &cli.tenant, name, json);
    }
    // `burrow artifact ...` opens the session's artifact store, no backend.
    #[cfg(feature = "artifacts")]
    if let cli::Command::Artifact(command) = &cli.command {
        return artifact::run(command, &cli.tenant, json).await;
    }
    // `burrow thread list|show|stop` open a session store, no backend.
    #[cfg(feature = "run")]
    if let Some(exit) = thread_command(&cli).await? {
        return Ok(exit);
    }
    // `burrow run` checks its configuration before any backend is opened:
    // a bad one runs nothing (no container is started, no file created).
    #[cfg(feature = "run")]
    let run_config = match run_setup(&cli).await? {
        Ok(Some(setup)) => match setup
            .load(request_timeout(&cli))
            .and_then(|config| config.with_permissions(&setup.settings, permission_mode(&cli)))
        {
            Ok(config) => Some((config, setup)),
            Err(message) => {
                writeln!(io::stderr(), "burrow: {message}")?;
                return Ok(Exit::Failed);
            }
        },
        Ok(None) => None,
        Err(exit) => return Ok(exit),
    };
    // The settings' MCP servers are started before any backend is opened:
    // with --strict-mcp, one that fails runs nothing. A resumed run gets them
    // too (ADR 0316), under the run's recorded --mcp-timeout and --strict-mcp
    // (ADR 0320); `burrow serve` starts them once, for every run it serves (ADR 0366).
    #[cfg(feature = "run")]
    let run_config = match run_config {
        Some((config, setup)) => {
            let timeout = setup.mcp_timeout.map_or(
                burrow_runtime::mcp::client::DEFAULT_CALL_TIMEOUT,
                std::time::Duration::from_secs,
            );
            match config
                .with_mcp(&setup.settings, setup.strict_mcp, timeout, mcp_guard(&cli))
                .await
            {
                Ok(config) => Some((config, setup)),
                Err(message) => {
                    writeln!(io::stderr(), "burrow: {message}")?;
                    return Ok(Exit::Failed);
                }
            }
        }
        None => None,
    };
    // The permission rules of `run`'s (or a resumed run's) and `mcp`'s settings, read
    // before any backend is opened: a bad rule runs nothing.
    #[cfg(any(feature = "run", feature = "mcp"))]
    let path_rules = {
        let mut files: Vec<std::path::PathBuf> = Vec::new();
        #[cfg(feature = "run")]
        if let Some((_, setup)) = &run_config {
            files.extend(setup.settings.clone());
        }
        #[cfg(feature = "mcp")]
        if let cli::Command::Mcp { settings } = &cli.command {
            files.extend(settings.iter().cloned());
        }
        match permissions::path_rules(&files)
            .and_then(|rules| permissions::refuse_sandbox(&cli.backends, &rules).map(|()| rules))
        {
            Ok(rules) => rules,
            Err(message) => {
                writeln!(io::stderr(), "burrow: {message}")?;
                return Ok(Exit::Failed);
            }
        }
    };
    #[cfg_attr(not(any(feature = "run", feature = "mcp")), allow(unused_mut))]
    let mut opened = match spec::open(&cli.backends).await {
        Ok(opened) => opened,
        Err(e) => return report(&e, json),
    };
    #[cfg(any(feature = "run", feature = "mcp"))]
    permissions::guard(&mut opened, path_rules);
    let closer = opened.closer();
    #[cfg(feature = "run")]
    if let Some((config, setup)) = run_config {
        let outcome = run_agent(config, setup, cli, &opened).await;
        return close(closer, outcome).await;
    }
    let outcome = run_on(cli, opened).await;
    close(closer, outcome).await
}

/// The prefix `--skills DIR` number `n` (from 1) is mounted at.
#[cfg(feature = "run")]
fn host_skills_prefix(n: usize) -> String {
    format!("/.burrow/skills/host-{n}")
}

/// Mounts each `--skills DIR` of `burrow run` as an `fs:` backend, so its
/// skills are read, and their resources opened, through the workspace.
#[cfg(feature = "run")]
fn mount_skills(cli: &mut Cli) -> Result<(), String> {
    let cli::Command::Run { skills, .. } = &cli.command else {
        return Ok(());
    };
    for (i, dir) in skills.iter().enumerate() {
        if !dir.is_dir() {
            return Err(format!(
                "--skills {} is not a folder on this machine",
                dir.display()
            ));
        }
        #[cfg(all(feature = "fs", feature = "composite"))]
        cli.backends.push(spec::BackendArg {
            mount: Some(host_skills_prefix(i + 1)),
            spec: spec::Spec::Fs(dir.clone()),
        });
        #[cfg(not(all(feature = "fs", feature = "composite")))]
        return Err(format!(
            "--skills needs the `fs` and `composite` features, which this burrow was built without (skill folder {})",
            i + 1
        ));
    }
    Ok(())
}

/// The files of `burrow run --upload`, stored in `opened` as `/uploads/NAME`
/// before the run starts; the first that cannot be read or is refused ends
/// burrow before anything runs.
#[cfg(feature = "run")]
async fn upload_files(
    cli: &Cli,
    opened: &spec::Opened,
    ctx: &FileContext,
) -> io::Result<Result<Option<burrow_runtime::uploads::Uploads>, Exit>> {
    // A run going on with a thread lists what `/uploads` holds already (ADR 0296).
    let (files, resumed): (&[std::path::PathBuf], bool) = match &cli.command {
        cli::Command::Run {
            uploads, thread, ..
        } => (uploads, thread.is_some()),
        cli::Command::Thread(cli::ThreadCommand::Answer { .. }) => (&[], true),
        _ => return Ok(Ok(None)),
    };
    if files.is_empty() && !resumed {
        return Ok(Ok(None));
    }
    // Every file is read and checked before the first is stored: a refusal
    // leaves the workspace as it was.
    let mut read = Vec::with_capacity(files.len());
    for file in files {
        let name = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let refused = burrow_runtime::uploads::safe_name(&name).err();
        let bytes = match (refused, std::fs::read(file)) {
            (Some(e), _) => return upload_refused(&e),
            (None, Err(e)) => {
                writeln!(
                    io::stderr(),
                    "burrow: the upload {name:?} cannot be read: {}",
                    e.kind()
                )?;
                return Ok(Err(Exit::Failed));
            }
            (None, Ok(bytes)) => bytes,
        };
        if let Err(e) = burrow_runtime::uploads::check(opened.backend.as_ref(), &name, bytes.len())
        {
            return upload_refused(&e);
        }
        read.push((name, bytes));
    }
    let uploads = match resumed {
        true => match burrow_runtime::uploads::Uploads::from_folder(opened.backend.as_ref(), ctx)
            .await
        {
            Ok(uploads) => uploads,
            Err(e) => return upload_refused(&e),
        },
        false => burrow_runtime::uploads::Uploads::new(),
    };
    for (name, bytes) in read {
        match uploads
            .upload(opened.backend.as_ref(), ctx, &name, &bytes)
            .await
        {
            Ok(uploaded) => {
                if cli.json {
                    let mut line = serde_json::json!({"type": "upload"});
                    if let (Some(line), serde_json::Value::Object(fields)) =
                        (line.as_object_mut(), serde_json::json!(uploaded))
                    {
                        line.extend(fields);
                    }
                    writeln!(io::stdout(), "{line}")?;
                }
            }
            Err(e) => return upload_refused(&e),
        }
    }
    Ok(Ok(Some(uploads)))
}

/// Prints why an upload was refused (or failed) and the exit it gets.
#[cfg(feature = "run")]
fn upload_refused<T>(e: &Error) -> io::Result<Result<T, Exit>> {
    writeln!(io::stderr(), "{}", error_text(e))?;
    Ok(Err(if e.is_refusal() {
        Exit::Refused
    } else {
        Exit::Failed
    }))
}

/// The skill directories of `burrow run` (host folders first, as mounted,
/// then the workspace's), discovered through `opened`; each warning printed.
#[cfg(feature = "run")]
async fn discover_skills(
    cli: &Cli,
    opened: &spec::Opened,
    ctx: &FileContext,
) -> io::Result<Result<Option<std::sync::Arc<burrow_runtime::skills::Skills>>, Exit>> {
    use burrow_runtime::skills::{SkillSource, Skills};
    let cli::Command::Run {
        skills,
        workspace_skills,
        skill_listing_chars,
        ..
    } = &cli.command
    else {
        return Ok(Ok(None));
    };
    if skills.is_empty() && workspace_skills.is_empty() {
        return Ok(Ok(None));
    }
    let dirs = (1..=skills.len())
        .map(host_skills_prefix)
        .chain(workspace_skills.iter().cloned());
    let sources = dirs
        .map(|path| {
            SkillSource::new(
                opened.backend.clone(),
                ctx.clone(),
                burrow::types::SkillDirectory {
                    path,
                    recursive: None,
                },
            )
        })
        .collect();
    let (found, warnings) = match Skills::discover(sources).await {
        Ok(found) => found,
        Err(e) => {
            writeln!(io::stderr(), "{}", error_text(&e))?;
            return Ok(Err(Exit::Failed));
        }
    };
    for warning in &warnings {
        writeln!(io::stderr(), "burrow: warning: {warning}")?;
        if cli.json {
            let line = serde_json::json!({
                "type": "skill_error",
                "file": warning.file,
                "rule": warning.rule.kind(),
                "message": warning.to_string(),
            });
            writeln!(io::stdout(), "{line}")?;
        }
    }
    Ok(Ok(Some(std::sync::Arc::new(
        found.with_max_listing_chars(*skill_listing_chars),
    ))))
}

/// The signals that kill the MCP servers and end burrow at once: `burrow
/// serve` keeps SIGTERM as its graceful shutdown, which stops them (ADR 0366).
#[cfg(feature = "run")]
fn mcp_guard(cli: &Cli) -> mcp_signals::Guard {
    match &cli.command {
        #[cfg(feature = "serve")]
        cli::Command::Serve { .. } => mcp_signals::Guard::Hangup,
        _ => mcp_signals::Guard::TermAndHangup,
    }
}

/// The `--permission-mode` of `burrow run` (a resumed run decides in its settings' mode).
#[cfg(feature = "run")]
fn permission_mode(cli: &Cli) -> Option<&str> {
    match &cli.command {
        cli::Command::Run {
            permission_mode, ..
        } => permission_mode.as_deref(),
        _ => None,
    }
}

/// The `--request-timeout` of `burrow run` or `burrow thread answer`.
#[cfg(feature = "run")]
fn request_timeout(cli: &Cli) -> std::time::Duration {
    let seconds = match &cli.command {
        cli::Command::Run {
            request_timeout, ..
        }
        | cli::Command::Thread(cli::ThreadCommand::Answer {
            request_timeout, ..
        }) => *request_timeout,
        #[cfg(feature = "serve")]
        cli::Command::Serve { args, .. } => args.request_timeout,
        _ => 600,
    };
    std::time::Duration::from_secs(seconds)
}

/// How `burrow run` or `burrow thread answer` sets its agent up (`None` for
/// other commands): as given, and for an answer what the flags leave out
/// taken from the run's own record; `Err` with the exit once refused.
#[cfg(feature = "run")]
async fn run_setup(cli: &Cli) -> io::Result<Result<Option<session::Setup>, Exit>> {
    match &cli.command {
        cli::Command::Run {
            model,
            settings,
            max_turns,
            todos,
            memory,
            agents,
            max_task_depth,
            task_max_turns,
            task_max_tokens,
            team,
            compact_at,
            compact_keep,
            large_result_tokens,
            mcp_timeout,
            strict_mcp,
            ..
        } => {
            let setup = run_artifacts_setup(
                cli,
                session::Setup::given(model, settings, *max_turns, *todos)
                    .with_memory(*memory)
                    .with_compaction(*compact_at, Some(*compact_keep))
                    .with_large_result_tokens(Some(*large_result_tokens))
                    .with_tasks(agents.as_deref(), *max_task_depth, *task_max_turns)
                    .with_task_max_tokens(*task_max_tokens)
                    .with_team(team.as_deref())
                    .with_mcp(*mcp_timeout, *strict_mcp),
            );
            match continued_run_setup(cli, setup).await {
                Ok(setup) => Ok(Ok(Some(setup))),
                Err(refused) => Ok(Err(refused.report(cli.json)?)),
            }
        }
        cli::Command::Thread(cli::ThreadCommand::Answer {
            id,
            model,
            settings,
            max_turns,
            session: spec,
            ..
        }) => {
            let given = session::Setup {
                model: model.clone(),
                settings: settings.clone(),
                max_turns: *max_turns,
                todos: false,
                memory: false,
                agents: None,
                task_depth: None,
                task_max_turns: None,
                task_max_tokens: None,
                team: None,
                compact_at: None,
                compact_keep: None,
                large_result_tokens: None,
                artifacts: None,
                no_notices: false,
                watch_after: None,
                mcp_timeout: None,
                strict_mcp: false,
                backend: None,
                backend_tenant: None,
            };
            // Always read the run's record: what no flag can say (`--todos`) comes from it.
            let args = session::SessionArgs {
                spec: spec.clone(),
                tenant: cli.tenant.clone(),
                claim_ttl: 30,
                setup: session::Setup::default(),
            };
            match session::recorded_setup(&args, id).await {
                Ok(recorded) => Ok(Ok(Some(given.or(recorded)))),
                Err(refused) => Ok(Err(refused.report(cli.json)?)),
            }
        }
        #[cfg(feature = "serve")]
        cli::Command::Serve { action: None, args } => {
            let (Some(model), Some(_), Some(_)) = (&args.model, &args.session, &args.tokens) else {
                writeln!(
                    io::stderr(),
                    "burrow: burrow serve needs --session SESSION, --model MODEL and --tokens FILE"
                )?;
                return Ok(Err(Exit::Failed));
            };
            let setup =
                session::Setup::given(model, args.settings.as_slice(), args.max_turns, args.todos)
                    .with_tasks(
                        args.agents.as_deref(),
                        args.max_task_depth,
                        args.task_max_turns,
                    )
                    .with_task_max_tokens(args.task_max_tokens)
                    .with_mcp(args.mcp_timeout, args.strict_mcp);
            // Recorded as `burrow run --artifacts` records it, so `burrow thread
            // answer` resumes a served run in the same workspace (ADR 0405).
            #[cfg(feature = "artifacts")]
            let setup = setup.with_artifacts(args.artifacts.as_deref(), args.no_notices, None);
            Ok(Ok(Some(setup)))
        }
        _ => Ok(Ok(None)),
    }
}

/// `setup` with `burrow run`'s `--artifacts`, `--no-notices` and `--watch-after` (ADR 0337).
#[cfg(feature = "run")]
fn run_artifacts_setup(cli: &Cli, setup: session::Setup) -> session::Setup {
    #[cfg(feature = "artifacts")]
    if let cli::Command::Run {
        artifacts,
        no_notices,
        watch_after,
        ..
    } = &cli.command
    {
        return setup.with_artifacts(artifacts.as_deref(), *no_notices, *watch_after);
    }
    let _ = cli;
    setup
}

/// `burrow run --session S --thread T`'s `setup`, or, when the prompt
/// continues a run (answers a paused one, steers or takes over a running
/// one, retries the command that started it), that run's artifact
/// workspace in place of this process's `--artifacts` (ADR 0362).
#[cfg(feature = "run")]
async fn continued_run_setup(
    cli: &Cli,
    setup: session::Setup,
) -> Result<session::Setup, session::Refused> {
    let cli::Command::Run {
        session: Some(spec),
        thread: Some(thread),
        command_id,
        ..
    } = &cli.command
    else {
        return Ok(setup);
    };
    let args = session::SessionArgs {
        spec: spec.clone(),
        tenant: cli.tenant.clone(),
        claim_ttl: 30,
        setup: session::Setup::default(),
    };
    let Some(recorded) = session::continued_setup(&args, thread, command_id.as_deref()).await?
    else {
        return Ok(setup);
    };
    if setup.artifacts.is_some() && setup.artifacts != recorded.artifacts {
        writeln!(
            io::stderr(),
            "burrow: this prompt continues a run of thread {}, which keeps the artifact workspace it was started with; --artifacts is not used for it",
            display::name(thread)
        )
        .map_err(session::Refused::from)?;
    }
    Ok(setup.continuing(&recorded))
}

/// `burrow run` (with or without a session) and `burrow thread answer`.
#[cfg(feature = "run")]
async fn run_agent(
    config: agent::Config,
    setup: session::Setup,
    cli: Cli,
    opened: &spec::Opened,
) -> io::Result<Exit> {
    let json = cli.json;
    let ctx = FileContext::for_tenant(cli.tenant.clone());
    // The run's record names the files it changes: this process's
    // workspace, also for a resumed run (ADR 0359).
    let setup = setup.with_workspace(&cli.backends, &cli.tenant);
    #[cfg(feature = "artifacts")]
    let mut setup = setup;
    #[cfg(feature = "artifacts")]
    let config = match run_artifacts::for_run(&cli, &mut setup).await {
        Ok(workspace) => config.with_artifacts(workspace),
        Err(message) => {
            writeln!(io::stderr(), "burrow: {message}")?;
            return Ok(Exit::Failed);
        }
    };
    thread_checkpoint::checkpoint_runs(&cli.command, opened, &ctx);
    let config = match discover_skills(&cli, opened, &ctx).await? {
        Ok(skills) => config.with_skills(skills),
        Err(exit) => return Ok(exit),
    };
    let config = match upload_files(&cli, opened, &ctx).await? {
        Ok(uploads) => config.with_uploads(uploads),
        Err(exit) => return Ok(exit),
    };
    let tenant = cli.tenant;
    let outcome = match cli.command {
        cli::Command::Run {
            prompt,
            session: Some(spec),
            thread: Some(thread),
            command_id,
            claim_ttl,
            ..
        } => {
            config.print_notes()?;
            let store = match session::open_store(&spec).await {
                Ok(store) => store,
                Err(refused) => return refused.report(json),
            };
            let scope = session::scope(&tenant);
            let args = session::SessionArgs {
                spec,
                tenant,
                claim_ttl,
                setup,
            };
            let (agent, hooks) = config
                .with_task_claim_ttl(std::time::Duration::from_secs(claim_ttl))
                .agent_for(
                    opened,
                    ctx,
                    json,
                    Some(&thread),
                    Some((store.clone(), scope)),
                );
            let outcome = session::run(
                agent,
                store,
                &args,
                &thread,
                &prompt,
                command_id.as_deref(),
                json,
            )
            .await;
            // Background hooks run to their end before burrow exits.
            hooks.settle().await;
            outcome
        }
        cli::Command::Run { prompt, .. } => {
            return agent::run(config, prompt, opened, ctx, json).await;
        }
        cli::Command::Thread(cli::ThreadCommand::Answer {
            id,
            request,
            text,
            approve,
            session: spec,
            claim_ttl,
            ..
        }) => {
            config.print_notes()?;
            let store = match session::open_store(&spec).await {
                Ok(store) => store,
                Err(refused) => return refused.report(json),
            };
            let scope = session::scope(&tenant);
            let args = session::SessionArgs {
                spec,
                tenant,
                claim_ttl,
                setup,
            };
            let (agent, hooks) = config
                .with_task_claim_ttl(std::time::Duration::from_secs(claim_ttl))
                .agent_for(opened, ctx, json, Some(&id), Some((store.clone(), scope)));
            let outcome =
                session::answer(agent, store, &args, &id, &request, &text, approve, json).await;
            hooks.settle().await;
            outcome
        }
        #[cfg(feature = "serve")]
        cli::Command::Serve {
            action: None,
            args: serve_args,
        } => {
            config.print_notes()?;
            let Some(spec) = serve_args.session.clone() else {
                return Ok(Exit::Failed);
            };
            let pool = usize::try_from(serve_args.pg_pool).ok();
            let store = match session::open_store_pooled(&spec, pool).await {
                Ok(store) => store,
                Err(refused) => return refused.report(json),
            };
            let args = session::SessionArgs {
                spec,
                tenant,
                claim_ttl: serve_args.claim_ttl,
                setup,
            };
            let served = std::sync::Arc::new(
                config
                    .with_task_claim_ttl(std::time::Duration::from_secs(serve_args.claim_ttl))
                    .served(opened, ctx, json),
            );
            let outcome = serve::serve(served.clone(), store, &args, &serve_args, json).await;
            served.settle().settle().await;
            outcome
        }
        _ => return Ok(Exit::Failed),
    };
    let outcome = match outcome {
        Ok(exit) => exit,
        Err(refused) => refused.report(json)?,
    };
    // A run's changes are saved as they are made; this surfaces a save a part still owes.
    if let Err(e) = opened.finish() {
        writeln!(io::stderr(), "{}", error_text(&e))?;
        return Ok(Exit::Failed);
    }
    Ok(outcome)
}

/// `burrow thread list|show|stop|prune`; `None` for every other command.
#[cfg(feature = "run")]
async fn thread_command(cli: &Cli) -> io::Result<Option<Exit>> {
    let cli::Command::Thread(command) = &cli.command else {
        return Ok(None);
    };
    let args = |spec: &str| session::SessionArgs {
        spec: spec.to_owned(),
        tenant: cli.tenant.clone(),
        claim_ttl: 30,
        setup: session::Setup::default(),
    };
    let outcome = match command {
        cli::ThreadCommand::List { session } => session::list(&args(session), cli.json).await,
        cli::ThreadCommand::Show { id, session } => {
            session::show(&args(session), id, cli.json).await
        }
        cli::ThreadCommand::Stop { id, session } => {
            session::stop(agent::idle_agent(), &args(session), id, cli.json).await
        }
        cli::ThreadCommand::Prune { before, session } => {
            session::prune(&args(session), *before, cli.json).await
        }
        cli::ThreadCommand::Compact {
            id,
            instructions,
            session,
            model,
            settings,
            keep,
            request_timeout,
        } => {
            let given = session::Setup {
                model: model.clone(),
                settings: settings.clone(),
                ..session::Setup::default()
            };
            session::compact(
                &args(session),
                id,
                given,
                instructions.as_deref(),
                *keep,
                std::time::Duration::from_secs(*request_timeout),
                cli.json,
            )
            .await
        }
        cli::ThreadCommand::Answer { .. } => return Ok(None),
        cli::ThreadCommand::Checkpoint { .. }
        | cli::ThreadCommand::Checkpoints { .. }
        | cli::ThreadCommand::Rewind { .. }
        | cli::ThreadCommand::Fork { .. } => thread_checkpoint::command(cli, command).await,
    };
    Ok(Some(match outcome {
        Ok(exit) => exit,
        Err(refused) => refused.report(cli.json)?,
    }))
}

/// `burrow state compact FILE`: folds the journal into the document and
/// says how many records it folded.
#[cfg(feature = "state")]
fn state_compact(file: &std::path::Path, json: bool) -> io::Result<Exit> {
    let records = match state_file::compact(file) {
        Ok(records) => records,
        Err(e) => return report(&e, json),
    };
    let mut out = io::stdout().lock();
    if json {
        writeln!(out, "{}", serde_json::json!({ "records": records }))?;
    } else if records == 0 {
        writeln!(out, "{}: nothing to compact", file.display())?;
    } else {
        let s = if records == 1 { "" } else { "s" };
        writeln!(
            out,
            "{}: folded {records} journal record{s}",
            file.display()
        )?;
    }
    out.flush()?;
    Ok(Exit::Success)
}

/// Shuts down what the backends started, after the command's `outcome`.
async fn close(closer: spec::Closer, outcome: io::Result<Exit>) -> io::Result<Exit> {
    match closer.close().await {
        Ok(()) => outcome,
        Err(e) => {
            writeln!(io::stderr(), "{}", error_text(&e))?;
            Ok(outcome?.max(Exit::Failed))
        }
    }
}

/// Runs the command on the opened backend.
async fn run_on(cli: Cli, opened: spec::Opened) -> io::Result<Exit> {
    let ctx = FileContext::for_tenant(cli.tenant);
    let json = cli.json;
    #[cfg(feature = "mcp")]
    if let cli::Command::Mcp { settings } = &cli.command {
        return mcp::run(opened, ctx, settings).await;
    }
    let max_input = opened.backend.capabilities().limits.max_file_size;
    let op = match Op::from_command(cli.command, max_input) {
        Ok(Some(op)) => op,
        Ok(None) => {
            let mut input = io::BufReader::with_capacity(batch::INPUT_BUFFER, io::stdin());
            let mut out = io::stdout().lock();
            let mut err = io::stderr().lock();
            return batch::run(&opened, &ctx, &mut input, &mut out, &mut err).await;
        }
        Err(e) => return report(&e, json),
    };
    // One operation is a group of one: its change is saved (under the
    // state file's lock) before its result is printed, so a printed success
    // is durable.
    opened.begin();
    let outcome = op.run(opened.backend.as_ref(), &ctx).await;
    let saved = opened.finish();
    let output = match outcome {
        Ok(output) => output,
        Err(e) => return report(&e, json),
    };
    if let Err(e) = saved {
        return report(&e, json);
    }
    let mut out = io::BufWriter::new(io::stdout().lock());
    if json {
        writeln!(out, "{}", output.to_json())?;
    } else {
        output.write_human(&mut out)?;
    }
    out.flush()?;
    if let Some(note) = output.note(json) {
        writeln!(io::stderr(), "burrow: note: {note}")?;
    }
    Ok(Exit::Success)
}

/// Prints a refusal or failure (JSON on stdout, or a sentence on stderr) and
/// returns its exit status.
fn report(error: &Error, json: bool) -> io::Result<Exit> {
    if json {
        let mut out = io::stdout().lock();
        writeln!(out, "{}", error_json(error))?;
        out.flush()?;
    } else {
        writeln!(io::stderr(), "{}", error_text(error))?;
    }
    Ok(Exit::of(error))
}

/// Reports `error` before any output machinery exists.
fn fail(error: &Error, json: bool) -> ExitCode {
    let _ = report(error, json);
    Exit::of(error).code()
}
