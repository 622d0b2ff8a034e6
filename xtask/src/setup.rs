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
//! Docker daemon) prints a note and returns `Ok`; the tests that need it skip and say
//! why. A step that should work but does not returns an error, which fails the run.

use std::path::{Path, PathBuf};

use anyhow::bail;

use crate::cmd::{Cmd, Env};

/// One setup step.
pub type Step = fn(&mut Setup) -> anyhow::Result<()>;

/// The steps, in order: `(what it sets up, the function)`.
pub const STEPS: &[(&str, Step)] = &[
    ("cargo-nextest", cargo_nextest),
    ("Python packages for interop tests", python_packages),
];

/// Python packages the tests import, pinned: `(name, version)`.
const PYTHON_PACKAGES: &[(&str, &str)] = &[
    // The Python StateBackend whose FileData documents burrow-types must read and write.
    ("pydantic-ai-backend", "0.2.37"),
];

/// The state the steps share and the result of setup.
pub struct Setup {
    root: PathBuf,
    env: Env,
    nextest: bool,
    failed: Vec<String>,
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
}

/// Runs every step, continuing past failures; the caller decides what a failure means.
pub fn run(root: &Path) -> Setup {
    let mut setup = Setup {
        root: root.to_path_buf(),
        env: Env::new(),
        nextest: false,
        failed: Vec::new(),
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
        println!("  note: no python3 on PATH: skipping; Python interop tests will skip");
        return Ok(());
    };
    if !Cmd::new(&root, &python, &["-m", "pip", "--version"]).succeeds_quietly() {
        println!("  note: {python} has no pip: skipping; Python interop tests will skip");
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
    Ok(())
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
