//! The PostgreSQL test server: Debian's packages, a data folder owned by an unprivileged user, started on 127.0.0.1 on a fixed port.
//!
//! The session stores' PostgreSQL tests (`crates/burrow-runtime/tests/all/session.rs`,
//! module `postgres`) need a real server. This step, idempotently:
//! 1. installs Debian's `postgresql` when no `/usr/lib/postgresql/*/bin/postgres` exists;
//! 2. as root, creates the system user [`PG_USER`] when it is missing (PostgreSQL
//!    refuses to run as root); as another user, runs the server as that user;
//! 3. `initdb`s `target/postgres/data` (as root: `$TMPDIR/burrow-postgres/data`, which
//!    the unprivileged user can reach wherever the clone is) (trust authentication, C locale, superuser
//!    [`PG_ROLE`]) unless it holds a cluster already;
//! 4. starts it on 127.0.0.1:[`PG_PORT`] (no Unix socket) unless a server accepts
//!    connections there already, and waits until it does;
//! 5. creates the database [`PG_DATABASE`] if missing, and exports
//!    `BURROW_POSTGRES_URL=postgres://burrow@127.0.0.1:54329/burrow_test`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::cmd::Cmd;
use crate::setup::Setup;

/// The unprivileged system user the server runs as when setup runs as root.
const PG_USER: &str = "burrow-pg";
/// The server's superuser role (trust authentication on 127.0.0.1 only).
const PG_ROLE: &str = "burrow";
/// Where the server listens.
const PG_PORT: u16 = 54329;
/// The database the tests use (each test works in a schema of its own).
const PG_DATABASE: &str = "burrow_test";

/// The newest installed server's `bin` folder, `/usr/lib/postgresql/N/bin`.
fn server_bin() -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|e| {
            let version: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("postgres").is_file().then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

fn is_root(root: &Path) -> bool {
    Cmd::new(root, "id", &["-u"])
        .output_quietly()
        .is_some_and(|uid| uid.trim() == "0")
}

/// `program args...`, run as [`PG_USER`] when `as_pg_user` (setup runs as root).
fn as_user(root: &Path, as_pg_user: bool, program: &Path, args: &[&str]) -> Cmd {
    let program = program.to_string_lossy().into_owned();
    if as_pg_user {
        let mut full = vec!["-u", PG_USER, "--", program.as_str()];
        full.extend_from_slice(args);
        Cmd::new(root, "runuser", &full)
    } else {
        Cmd::new(root, &program, args)
    }
}

fn accepting(root: &Path, bin: &Path) -> bool {
    let port = PG_PORT.to_string();
    Cmd::new(
        root,
        &bin.join("pg_isready").to_string_lossy(),
        &["-q", "-h", "127.0.0.1", "-p", &port],
    )
    .succeeds_quietly()
}

/// The setup step: a PostgreSQL server for the session-store tests.
pub fn postgres_server(setup: &mut Setup) -> anyhow::Result<()> {
    let root = setup.root().to_path_buf();
    let bin = match server_bin() {
        Some(bin) => bin,
        None => {
            println!("  no /usr/lib/postgresql/*/bin/postgres: installing Debian's postgresql");
            crate::docker_images::apt_install(&root, "postgresql")?;
            server_bin().context("postgresql is installed but no server binary was found")?
        }
    };
    let root_user = is_root(&root);
    if root_user && !Cmd::new(&root, "id", &["-u", PG_USER]).succeeds_quietly() {
        println!("  creating the system user {PG_USER} to run the server");
        Cmd::new(
            &root,
            "useradd",
            &[
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                PG_USER,
            ],
        )
        .run()?;
    }
    // As root the server runs as PG_USER, who may not be able to enter the
    // clone (CI's clone can sit under a private home): its data lives in the
    // temporary folder then, which every user can reach.
    let base = if root_user {
        std::env::temp_dir().join("burrow-postgres")
    } else {
        root.join("target").join("postgres")
    };
    let data = base.join("data");
    let log = base.join("server.log");
    if accepting(&root, &bin) {
        println!(
            "  a PostgreSQL server already accepts connections on 127.0.0.1:{PG_PORT}: reusing it"
        );
    } else {
        std::fs::create_dir_all(&data)?;
        if root_user {
            let owner = format!("{PG_USER}:{PG_USER}");
            Cmd::new(&root, "chown", &["-R", &owner, &base.to_string_lossy()]).run()?;
            std::fs::set_permissions(&data, std::os::unix::fs::PermissionsExt::from_mode(0o700))?;
            if !as_user(
                &root,
                true,
                Path::new("test"),
                &["-w", &data.to_string_lossy()],
            )
            .succeeds_quietly()
            {
                bail!(
                    "{PG_USER} cannot write {}: a folder above it is not open to other users (give them x permission, or run setup from a clone they can reach)",
                    data.display()
                );
            }
        }
        if !data.join("PG_VERSION").is_file() {
            println!("  initdb {}", data.display());
            let data_arg = data.to_string_lossy().into_owned();
            as_user(
                &root,
                root_user,
                &bin.join("initdb"),
                &[
                    "-D",
                    &data_arg,
                    "-U",
                    PG_ROLE,
                    "--auth=trust",
                    "--encoding=UTF8",
                    "--no-locale",
                    "--no-sync",
                ],
            )
            .run()?;
        }
        let options = format!(
            "-c listen_addresses=127.0.0.1 -c port={PG_PORT} -c unix_socket_directories='' -c fsync=off -c max_connections=200"
        );
        let data_arg = data.to_string_lossy().into_owned();
        let log_arg = log.to_string_lossy().into_owned();
        as_user(
            &root,
            root_user,
            &bin.join("pg_ctl"),
            &[
                "-D", &data_arg, "-l", &log_arg, "-o", &options, "-w", "-t", "60", "start",
            ],
        )
        .run()
        .with_context(|| {
            format!(
                "the PostgreSQL server did not start (see {})",
                log.display()
            )
        })?;
        let deadline = Instant::now() + Duration::from_secs(60);
        while !accepting(&root, &bin) {
            if Instant::now() > deadline {
                bail!(
                    "the PostgreSQL server did not accept connections on 127.0.0.1:{PG_PORT} within 60 s (see {})",
                    log.display()
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        println!(
            "  started PostgreSQL on 127.0.0.1:{PG_PORT}; log: {}",
            log.display()
        );
        setup.started(crate::setup::Started::Postgres {
            bin: bin.clone(),
            data: data.clone(),
            as_pg_user: root_user,
        });
    }
    let port = PG_PORT.to_string();
    let psql = bin.join("psql").to_string_lossy().into_owned();
    let query = format!("SELECT 1 FROM pg_database WHERE datname = '{PG_DATABASE}'");
    let exists = Cmd::new(
        &root,
        &psql,
        &[
            "-h",
            "127.0.0.1",
            "-p",
            &port,
            "-U",
            PG_ROLE,
            "-d",
            "postgres",
            "-tAc",
            &query,
        ],
    )
    .output_quietly()
    .with_context(|| format!("psql could not connect to 127.0.0.1:{PG_PORT} as {PG_ROLE}"))?;
    if exists.trim() != "1" {
        let create = format!("CREATE DATABASE {PG_DATABASE}");
        Cmd::new(
            &root,
            &psql,
            &[
                "-h",
                "127.0.0.1",
                "-p",
                &port,
                "-U",
                PG_ROLE,
                "-d",
                "postgres",
                "-qc",
                &create,
            ],
        )
        .run()?;
    }
    setup.export(
        burrow_testkit::Part::Postgres.env_var(),
        &format!("postgres://{PG_ROLE}@127.0.0.1:{PG_PORT}/{PG_DATABASE}"),
    );
    Ok(())
}

/// Stops the server whose data folder is `data` (`pg_ctl stop -m fast`, waiting).
pub fn stop(root: &Path, bin: &Path, data: &Path, as_pg_user: bool) -> anyhow::Result<()> {
    let data_arg = data.to_string_lossy().into_owned();
    as_user(
        root,
        as_pg_user,
        &bin.join("pg_ctl"),
        &["-D", &data_arg, "-m", "fast", "-w", "-t", "60", "stop"],
    )
    .run()
}
