//! Running external commands: echo them, run them with no stdin, and report plainly.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, bail};

/// Environment variables handed from one step to the next (e.g. from `setup` to `test`).
pub type Env = Vec<(String, String)>;

/// A command to run from the workspace root.
pub struct Cmd {
    command: Command,
    shown: String,
}

impl Cmd {
    /// `program args...`, run in `root`, with stdin closed (CI has none; nothing we run
    /// may wait for input).
    pub fn new(root: &Path, program: &str, args: &[&str]) -> Self {
        let mut command = Command::new(program);
        command.args(args).current_dir(root).stdin(Stdio::null());
        let mut shown = program.to_string();
        for arg in args {
            shown.push(' ');
            shown.push_str(arg);
        }
        Cmd { command, shown }
    }

    /// `cargo args...` with the cargo that runs xtask (not whatever is first on PATH).
    pub fn cargo(root: &Path, args: &[&str]) -> Self {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
        let mut cmd = Cmd::new(root, &cargo, args);
        cmd.shown = format!("cargo {}", args.join(" "));
        cmd
    }

    /// Adds environment variables, shown in the echoed command line.
    pub fn envs(mut self, env: &Env) -> Self {
        let mut prefix = String::new();
        for (key, value) in env {
            self.command.env(key, value);
            prefix.push_str(&format!("{key}={value} "));
        }
        self.shown = format!("{prefix}{}", self.shown);
        self
    }

    /// Removes environment variables from the command's environment.
    pub fn without(mut self, keys: &[String]) -> Self {
        for key in keys {
            self.command.env_remove(key);
        }
        self
    }

    /// Runs the command with its output going straight to ours; an error if it cannot
    /// start or exits non-zero.
    pub fn run(mut self) -> anyhow::Result<()> {
        println!("$ {}", self.shown);
        let status = self
            .command
            .status()
            .with_context(|| format!("could not start `{}`", self.shown))?;
        if !status.success() {
            bail!("`{}` failed ({status})", self.shown);
        }
        Ok(())
    }

    /// True when the command starts and exits zero; its output is discarded. For probes
    /// such as "is cargo-nextest installed?".
    pub fn succeeds_quietly(mut self) -> bool {
        self.command.stdout(Stdio::null()).stderr(Stdio::null());
        matches!(self.command.status(), Ok(status) if status.success())
    }

    /// The command's stdout when it exits zero, `None` otherwise (its stderr discarded).
    pub fn output_quietly(mut self) -> Option<String> {
        self.command.stderr(Stdio::null());
        match self.command.output() {
            Ok(out) if out.status.success() => Some(String::from_utf8_lossy(&out.stdout).into()),
            _ => None,
        }
    }
}

/// A run of named steps that keeps going after a failure and sums up at the end.
pub struct Steps {
    title: &'static str,
    done: Vec<(String, bool)>,
}

impl Steps {
    pub fn new(title: &'static str) -> Self {
        Steps {
            title,
            done: Vec::new(),
        }
    }

    /// Runs one step under a heading and records whether it succeeded.
    pub fn step(&mut self, name: &str, body: impl FnOnce() -> anyhow::Result<()>) -> bool {
        heading(&format!("{}: {name}", self.title));
        let start = Instant::now();
        let result = body();
        let secs = start.elapsed().as_secs();
        let ok = match result {
            Ok(()) => {
                println!("--- {name}: ok ({secs} s)");
                true
            }
            Err(err) => {
                println!("--- {name}: FAILED ({secs} s): {err:#}");
                false
            }
        };
        self.done.push((name.to_string(), ok));
        ok
    }

    /// Records a step that failed outside `step` (e.g. a part of setup).
    pub fn record_failure(&mut self, name: &str) {
        self.done.push((name.to_string(), false));
    }

    /// Prints the summary; true when every step succeeded. The wording avoids the
    /// "N passed, N failed" shape so it is never mistaken for a test runner's count.
    pub fn finish(self) -> bool {
        let failed: Vec<&str> = self
            .done
            .iter()
            .filter(|(_, ok)| !ok)
            .map(|(name, _)| name.as_str())
            .collect();
        heading(&format!("{} summary", self.title));
        for (name, ok) in &self.done {
            println!("  {}  {name}", if *ok { "ok    " } else { "FAILED" });
        }
        if failed.is_empty() {
            println!(
                "{}: every step succeeded ({} steps)",
                self.title,
                self.done.len()
            );
            true
        } else {
            println!(
                "{}: {} of {} steps FAILED: {}",
                self.title,
                failed.len(),
                self.done.len(),
                failed.join(", ")
            );
            false
        }
    }
}

/// A heading that stands out in a long CI log.
pub fn heading(title: &str) {
    println!();
    println!("==== {title} ====");
}
