//! `cargo xtask setup`: install and start what the tests need, idempotently.
//!
//! Setup is a list of small step functions ([`STEPS`]). Each checks whether its thing is
//! already there, does the least it must, says what it did, and may hand environment
//! variables to the test run (an S3 endpoint, a Python interpreter) through
//! [`Setup::export`]. `cargo xtask test` runs setup first and passes those variables on,
//! so a test finds what setup started without guessing.
//!
//! To add a step (an S3-compatible server on 127.0.0.1, a Docker test image, Python
//! packages for MCP tests): write `fn my_step(setup: &mut Setup) -> anyhow::Result<()>`
//! and list it in [`STEPS`]. A step that cannot apply on this machine (no pip, no
//! Docker daemon) prints a note and returns `Ok` without exporting its variable;
//! `cargo xtask test` then reports the tests of that part as skipped, or, under
//! `CI=true`, fails naming the part and this step (see `parts.rs`). A step that should
//! work but does not returns an error, which fails the run.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::bail;

use crate::cmd::{Cmd, Env};

/// One setup step.
pub type Step = fn(&mut Setup) -> anyhow::Result<()>;

/// The steps, in order: `(what it sets up, the function)`.
pub const STEPS: &[(&str, Step)] = &[
    ("cargo-nextest", cargo_nextest),
    ("cargo-deny (licenses, bans, sources)", |setup| {
        crate::deny::ensure_installed(setup.root())
    }),
    ("Python packages for interop and MCP tests", python_packages),
    ("ripgrep (Debian's package)", ripgrep),
    ("headless Chromium (Debian's package)", chromium),
    ("S3-compatible test server (moto) on 127.0.0.1", s3_server),
    (
        "PostgreSQL server on 127.0.0.1 (Debian's packages)",
        crate::postgres::postgres_server,
    ),
    (
        "Docker test image (busybox)",
        crate::docker_images::busybox_image,
    ),
    (
        "Docker test image with python3 (debootstrap)",
        crate::docker_images::python_image,
    ),
    (
        "Docker images earlier test runs left",
        crate::docker_images::prune_leftovers,
    ),
];

/// A server this setup started (not one it found running): stopped when the test run
/// ends unless `BURROW_KEEP_PARTS=1`.
pub enum Started {
    /// The S3 test server, in a process group of its own.
    S3(std::process::Child),
    /// PostgreSQL: `pg_ctl -D data stop`, as [`crate::postgres`]'s user when `as_pg_user`.
    Postgres {
        bin: PathBuf,
        data: PathBuf,
        as_pg_user: bool,
    },
}

impl Started {
    fn name(&self) -> &'static str {
        match self {
            Started::S3(_) => "the S3 test server",
            Started::Postgres { .. } => "PostgreSQL",
        }
    }
}

/// True when `BURROW_KEEP_PARTS=1`: the servers setup started keep running after the run.
pub fn keep_parts() -> bool {
    std::env::var("BURROW_KEEP_PARTS").is_ok_and(|v| v == "1")
}

/// Python packages the tests import, pinned: `(name, version)`.
const PYTHON_PACKAGES: &[(&str, &str)] = &[
    // The Python StateBackend whose FileData documents burrow-types must read and write.
    ("pydantic-ai-backend", "0.2.37"),
    // The official MCP SDK: the client that drives `burrow mcp` end to end
    // (crates/burrow-cli/tests/all/mcp.rs). 2.3.0 supports Python 3.10+.
    ("mcp", "2.3.0"),
    // The official Anthropic SDK: the peer of burrow-models' anthropic_stream bench.
    ("anthropic", "2.10.0"),
    // The official OpenAI SDK: the peer of burrow-models' openai_stream bench.
    ("openai", "3.51.0"),
];

/// The state the steps share and the result of setup.
pub struct Setup {
    root: PathBuf,
    env: Env,
    nextest: bool,
    failed: Vec<String>,
    started: Vec<Started>,
}

impl Setup {
    /// The workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Hands `key=value` to the test run (and prints it).
    pub fn export(&mut self, key: &str, value: &str) {
        println!("  export {key}={value}");
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.to_string(), value.to_string()));
    }

    /// Environment variables for the test run.
    pub fn env(&self) -> &Env {
        &self.env
    }

    /// Whether `cargo nextest` is available.
    pub fn nextest(&self) -> bool {
        self.nextest
    }

    /// The steps that failed.
    pub fn failed(&self) -> &[String] {
        &self.failed
    }

    /// Records a server this setup started, for [`Setup::stop_started`].
    pub fn started(&mut self, server: Started) {
        self.started.push(server);
    }

    /// At the end of a test run: stops every server this setup started, unless `keep`
    /// (`BURROW_KEEP_PARTS=1`); one it found running is never touched. Returns a line
    /// per server saying what became of it.
    pub fn stop_started(&mut self, keep: bool) -> Vec<String> {
        let started = std::mem::take(&mut self.started);
        if keep {
            return started
                .iter()
                .map(|s| format!("{} keeps running (BURROW_KEEP_PARTS=1)", s.name()))
                .collect();
        }
        started
            .into_iter()
            .map(|server| {
                let name = server.name();
                match stop(&self.root, server) {
                    Ok(()) => format!("stopped {name}, which setup started"),
                    Err(err) => format!("could not stop {name}: {err:#}"),
                }
            })
            .collect()
    }
}

/// Stops one server setup started, waiting until it has gone.
fn stop(root: &Path, server: Started) -> anyhow::Result<()> {
    match server {
        Started::S3(mut child) => {
            // The whole process group: the launcher and anything it started.
            let group = format!("-{}", child.id());
            let _ = Cmd::new(root, "kill", &["-TERM", "--", &group]).succeeds_quietly();
            let deadline = Instant::now() + Duration::from_secs(10);
            while child.try_wait()?.is_none() {
                if Instant::now() > deadline {
                    child.kill()?;
                    child.wait()?;
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            Ok(())
        }
        Started::Postgres {
            bin,
            data,
            as_pg_user,
        } => crate::postgres::stop(root, &bin, &data, as_pg_user),
    }
}

/// Runs every step, continuing past failures; the caller decides what a failure means.
pub fn run(root: &Path) -> Setup {
    let mut setup = Setup {
        root: root.to_path_buf(),
        env: Env::new(),
        nextest: false,
        failed: Vec::new(),
        started: Vec::new(),
    };
    for (name, step) in STEPS {
        println!("setup: {name}");
        if let Err(err) = step(&mut setup) {
            println!("  FAILED: {err:#}");
            setup.failed.push((*name).to_string());
        }
    }
    setup
}

/// `cargo xtask setup`: runs the steps and prints the environment they produced.
pub fn run_and_report(root: &Path) -> anyhow::Result<bool> {
    let setup = run(root);
    if !setup.env.is_empty() {
        println!("setup: the test run gets these variables (cargo xtask test passes them on):");
        for (key, value) in &setup.env {
            println!("  {key}={value}");
        }
    }
    if setup.failed.is_empty() {
        println!("setup: done");
        Ok(true)
    } else {
        println!("setup: FAILED steps: {}", setup.failed.join(", "));
        Ok(false)
    }
}

/// cargo-nextest runs the tests; without it `test` falls back to `cargo test`.
fn cargo_nextest(setup: &mut Setup) -> anyhow::Result<()> {
    if Cmd::cargo(setup.root(), &["nextest", "--version"]).succeeds_quietly() {
        println!("  cargo-nextest is installed");
        setup.nextest = true;
        return Ok(());
    }
    println!("  cargo-nextest is missing: installing it from crates.io (takes a few minutes)");
    match Cmd::cargo(setup.root(), &["install", "cargo-nextest", "--locked"]).run() {
        Ok(()) => setup.nextest = true,
        Err(err) => println!(
            "  note: could not install cargo-nextest ({err:#}); tests will run with cargo test"
        ),
    }
    Ok(())
}

/// The Python packages of [`PYTHON_PACKAGES`], installed into the first `python3` on
/// PATH; exports `BURROW_PYTHON`, that interpreter's path, for the tests to run.
fn python_packages(setup: &mut Setup) -> anyhow::Result<()> {
    let root = setup.root().to_path_buf();
    let Some(python) = find_python(&root) else {
        println!("  note: no python3 on PATH: the Python interop and MCP parts are missing");
        return Ok(());
    };
    if !Cmd::new(&root, &python, &["-m", "pip", "--version"]).succeeds_quietly() {
        println!("  note: {python} has no pip: the Python interop and MCP parts are missing");
        return Ok(());
    }
    let mut missing = Vec::new();
    for (name, version) in PYTHON_PACKAGES {
        match installed_version(&root, &python, name) {
            Some(v) if v == *version => println!("  {name}=={version} is installed"),
            Some(v) => {
                println!("  {name} {v} is installed, the tests need {version}");
                missing.push(format!("{name}=={version}"));
            }
            None => missing.push(format!("{name}=={version}")),
        }
    }
    if !missing.is_empty() {
        let mut args = vec![
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--quiet",
        ];
        args.extend(missing.iter().map(String::as_str));
        // Root is the normal user on CI machines; pip's warning about it is noise there.
        let quiet_root = vec![("PIP_ROOT_USER_ACTION".to_string(), "ignore".to_string())];
        Cmd::new(&root, &python, &args).envs(&quiet_root).run()?;
        for (name, version) in PYTHON_PACKAGES {
            if installed_version(&root, &python, name).as_deref() != Some(*version) {
                bail!("{name}=={version} is still not installed after pip install");
            }
        }
    }
    setup.export("BURROW_PYTHON", &python);
    // The same interpreter drives the MCP end-to-end test; say so only if it imports.
    if Cmd::new(&root, &python, &["-c", "import mcp"]).succeeds_quietly() {
        setup.export("BURROW_MCP_PYTHON", &python);
    } else {
        bail!("{python} cannot `import mcp` after installing it");
    }
    Ok(())
}

/// ripgrep, the reference the grep comparison tests run: Debian's `ripgrep` when no
/// `rg` is on PATH. Exports `BURROW_RG`, the binary's absolute path.
fn ripgrep(setup: &mut Setup) -> anyhow::Result<()> {
    let root = setup.root().to_path_buf();
    if which("rg").is_none() {
        println!("  no rg on PATH: installing Debian's ripgrep");
        crate::docker_images::apt_install(&root, "ripgrep")?;
    }
    let Some(rg) = which("rg") else {
        bail!("ripgrep is installed but no `rg` is on PATH");
    };
    let rg = rg.to_string_lossy().into_owned();
    if !Cmd::new(&root, &rg, &["--version"]).succeeds_quietly() {
        bail!("{rg} --version failed");
    }
    setup.export("BURROW_RG", &rg);
    Ok(())
}

/// Headless Chromium, which the browser test of `burrow serve`'s page drives (ADR 0341):
/// Debian's `chromium` when no `chromium` is on PATH. Exports `BURROW_CHROMIUM`, the
/// binary's absolute path.
fn chromium(setup: &mut Setup) -> anyhow::Result<()> {
    let root = setup.root().to_path_buf();
    if which("chromium").is_none() {
        println!("  no chromium on PATH: installing Debian's chromium");
        crate::docker_images::apt_install(&root, "chromium")?;
    }
    let Some(chromium) = which("chromium") else {
        bail!("chromium is installed but no `chromium` is on PATH");
    };
    let chromium = chromium.to_string_lossy().into_owned();
    if !Cmd::new(
        &root,
        &chromium,
        &["--headless", "--no-sandbox", "--version"],
    )
    .succeeds_quietly()
    {
        bail!("{chromium} --version failed");
    }
    setup.export("BURROW_CHROMIUM", &chromium);
    Ok(())
}

/// The first executable file named `name` in a folder of PATH.
fn which(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|file| {
            file.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// The absolute path of the first working `python3` (or `python` 3) on PATH.
fn find_python(root: &Path) -> Option<String> {
    let probe = "import sys; assert sys.version_info[0] == 3; print(sys.executable)";
    ["python3", "python"].iter().find_map(|candidate| {
        Cmd::new(root, candidate, &["-c", probe])
            .output_quietly()
            .map(|out| out.trim().to_string())
            .filter(|path| !path.is_empty())
    })
}

fn installed_version(root: &Path, python: &str, package: &str) -> Option<String> {
    let out = Cmd::new(root, python, &["-m", "pip", "show", package]).output_quietly()?;
    out.lines()
        .find_map(|line| line.strip_prefix("Version:"))
        .map(|v| v.trim().to_string())
}

/// moto, pinned, with the extras its server mode needs.
const MOTO: &str = "moto[server]==5.2.1";
/// Where the S3 test server listens (reused when one already answers there).
const S3_PORT: u16 = 9371;
/// The bucket the burrow-object-store tests use.
const S3_BUCKET: &str = "burrow-tests";
/// The launcher: moto's server with requests handled one at a time (ADR 0091).
const S3_LAUNCHER: &str = "crates/burrow-object-store/tests/s3/moto_server.py";

/// An S3-compatible server for burrow-object-store's tests: moto from PyPI, started in
/// the background (its own process group, so it outlives setup) unless one already
/// answers on [`S3_PORT`]; creates [`S3_BUCKET`]. Exports `BURROW_S3_ENDPOINT` and
/// `BURROW_S3_PYTHON` (the interpreter with moto, for tests that start a private server).
fn s3_server(setup: &mut Setup) -> anyhow::Result<()> {
    let root = setup.root().to_path_buf();
    let endpoint = format!("http://127.0.0.1:{S3_PORT}");
    let Some(python) = find_python(&root) else {
        println!("  note: no python3 on PATH: the S3 part is missing");
        return Ok(());
    };
    let probe = "import moto, flask, flask_cors, werkzeug";
    if !Cmd::new(&root, &python, &["-c", probe]).succeeds_quietly() {
        if !Cmd::new(&root, &python, &["-m", "pip", "--version"]).succeeds_quietly() {
            println!("  note: {python} has no pip: the S3 part is missing");
            return Ok(());
        }
        let quiet_root = vec![("PIP_ROOT_USER_ACTION".to_string(), "ignore".to_string())];
        let args = [
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--quiet",
            MOTO,
        ];
        Cmd::new(&root, &python, &args).envs(&quiet_root).run()?;
    }
    if s3_answers(S3_PORT) {
        println!("  an S3 server already answers at {endpoint}: reusing it");
    } else {
        let log = root.join("target").join("s3-test-server.log");
        std::fs::create_dir_all(root.join("target"))?;
        let log_file = std::fs::File::create(&log)?;
        let mut command = std::process::Command::new(&python);
        command
            .args([S3_LAUNCHER, "127.0.0.1", &S3_PORT.to_string()])
            .current_dir(&root)
            .stdin(std::process::Stdio::null())
            .stdout(log_file.try_clone()?)
            .stderr(log_file);
        // Its own process group: the server outlives setup and is not hit by signals
        // sent to setup's group.
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let child = command.spawn()?;
        println!(
            "  started the S3 server (pid {}) at {endpoint}; log: {}",
            child.id(),
            log.display()
        );
        setup.started(Started::S3(child));
        let deadline = Instant::now() + Duration::from_secs(60);
        while !s3_answers(S3_PORT) {
            if Instant::now() > deadline {
                bail!(
                    "the S3 server did not answer at {endpoint} within 60 s (see {})",
                    log.display()
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    let status = http_status(S3_PORT, "PUT", &format!("/{S3_BUCKET}"))?;
    if status != "200" && status != "409" {
        bail!("creating bucket {S3_BUCKET} at {endpoint} answered HTTP {status}");
    }
    setup.export("BURROW_S3_ENDPOINT", &endpoint);
    setup.export("BURROW_S3_PYTHON", &python);
    Ok(())
}

/// True when an S3 server (moto lists its buckets at "/") answers on `port`.
fn s3_answers(port: u16) -> bool {
    http_status(port, "GET", "/").is_ok_and(|status| status == "200")
}

/// The status code of a bodiless request to 127.0.0.1:`port`.
fn http_status(port: u16, method: &str, path: &str) -> anyhow::Result<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    Ok(answer
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_string())
}

#[cfg(test)]
mod tests {
    use super::{Setup, Started};
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};

    fn setup() -> Setup {
        Setup {
            root: std::env::temp_dir(),
            env: Vec::new(),
            nextest: false,
            failed: Vec::new(),
            started: Vec::new(),
        }
    }

    /// A process in a group of its own, as the S3 server is started.
    fn server() -> std::process::Child {
        let mut command = Command::new("sleep");
        command.arg("300").stdin(Stdio::null()).process_group(0);
        command.spawn().unwrap()
    }

    fn alive(pid: u32) -> bool {
        std::path::Path::new(&format!("/proc/{pid}")).exists()
    }

    #[test]
    fn a_server_setup_started_is_stopped_at_the_end_unless_kept() {
        let mut s = setup();
        let child = server();
        let pid = child.id();
        s.started(Started::S3(child));
        assert_eq!(
            s.stop_started(false),
            ["stopped the S3 test server, which setup started"]
        );
        assert!(!alive(pid), "pid {pid} still runs");
        // Nothing is left to stop a second time.
        assert!(s.stop_started(false).is_empty());
    }

    #[test]
    fn burrow_keep_parts_leaves_it_running() {
        let mut s = setup();
        let child = server();
        let pid = child.id();
        s.started(Started::S3(child));
        assert_eq!(
            s.stop_started(true),
            ["the S3 test server keeps running (BURROW_KEEP_PARTS=1)"]
        );
        assert!(alive(pid));
        let _ = Command::new("kill").arg(pid.to_string()).status();
    }
}
