//! `cargo xtask release [--dry-run] [--version X.Y.Z]`: package and publish every
//! publishable crate, in order, after checks a maintainer can trust.
//!
//! The order and the checks come from the workspace graph (`cargo metadata`), computed
//! by [`plan`]; this file runs the steps: the changelog and semver checks, `cargo
//! package` (each crate built from its own tarball), `cargo publish --dry-run`, and,
//! without `--dry-run`, on a clean `main` only, `cargo publish` crate by crate, waiting
//! until crates.io serves each before the next. A failure names the crate and the step.
//! See docs/adr/0160-release-metadata-and-order.md and 0161-release-steps.md.

mod plan;
#[cfg(test)]
mod tests;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::changelog;
use crate::cmd::{Cmd, heading};
pub use plan::{Plan, Workspace, not_a_version};

/// Removes what an earlier `cargo package` unpacked of these crates from its
/// local registry (`$CARGO_HOME/registry/src/-HASH/NAME-VERSION`): cargo reuses an
/// unpacked `NAME-VERSION` without looking at the new tarball, so a second run on the
/// same machine would verify each crate against the first run's sources of the
/// crates it depends on.
fn forget_unpacked_tarballs(names: &[String]) {
    let home = std::env::var_os("CARGO_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")));
    let Some(src) = home.map(|h| h.join("registry").join("src")) else {
        return;
    };
    let Ok(registries) = std::fs::read_dir(&src) else {
        return;
    };
    for registry in registries.flatten() {
        // crates.io's own sources are named `index.crates.io-HASH`; the local
        // registries `cargo package` makes have no name, only `-HASH`.
        if !registry.file_name().to_string_lossy().starts_with('-') {
            continue;
        }
        let Ok(unpacked) = std::fs::read_dir(registry.path()) else {
            continue;
        };
        for krate in unpacked.flatten() {
            let file_name = krate.file_name();
            let file_name = file_name.to_string_lossy();
            let ours = names.iter().any(|name| {
                file_name
                    .strip_prefix(name.as_str())
                    .and_then(|rest| rest.strip_prefix('-'))
                    .is_some_and(|version| version.starts_with(|c: char| c.is_ascii_digit()))
            });
            if ours && let Err(err) = std::fs::remove_dir_all(krate.path()) {
                println!("release: could not remove an earlier unpacked {file_name}: {err}");
            }
        }
    }
}

/// The branch a real release is made from.
const MAIN: &str = "main";
/// How long to wait for crates.io to serve a crate just published.
const VISIBLE_TIMEOUT: Duration = Duration::from_secs(600);
const VISIBLE_POLL: Duration = Duration::from_secs(10);

const USAGE: &str = "usage: cargo xtask release [--dry-run] [--version X.Y.Z]";

/// The command line of `release`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Args {
    pub dry_run: bool,
    pub version: Option<String>,
}

impl Args {
    pub fn parse(args: &[String]) -> anyhow::Result<Args> {
        let mut out = Args {
            dry_run: false,
            version: None,
        };
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            match arg.as_str() {
                "--dry-run" => out.dry_run = true,
                "--version" => match it.next() {
                    Some(v) => out.version = Some(v.clone()),
                    None => bail!("`--version` needs a value, X.Y.Z\n{USAGE}"),
                },
                other => match other.strip_prefix("--version=") {
                    Some(v) => out.version = Some(v.to_string()),
                    None => bail!("`release` does not take `{other}`\n{USAGE}"),
                },
            }
        }
        if let Some(bad) = out.version.as_deref().and_then(not_a_version) {
            bail!("{bad}\n{USAGE}");
        }
        Ok(out)
    }
}

/// Runs `cargo xtask release`; true when every step succeeded.
pub fn run(root: &Path, args: &[String]) -> anyhow::Result<bool> {
    let args = Args::parse(args)?;
    if !args.dry_run
        && let Err(refusal) = clean_main(root)
    {
        println!("release: refused: {refusal} (`--dry-run` rehearses the release anywhere)");
        return Ok(false);
    }
    let plan = match make_plan(root, args.version.as_deref())? {
        Ok(plan) => plan,
        Err(refusals) => {
            for refusal in &refusals {
                println!("release: refused: {refusal}");
            }
            println!(
                "release: {} problem(s); nothing was packaged or published",
                refusals.len()
            );
            return Ok(false);
        }
    };
    let mut notes = Vec::new();
    match changelog_note(root, &plan.version, args.dry_run) {
        Ok(note) => notes.push(note),
        Err(refusal) => {
            println!("release: refused: {refusal}");
            return Ok(false);
        }
    }
    match semver(root, &plan) {
        Ok(note) => notes.push(note),
        Err(refusal) => {
            println!("release: refused: {refusal}");
            return Ok(false);
        }
    }
    let (name_lines, taken) = name_notes(&names_on_crates_io(&plan));
    if !args.dry_run && !taken.is_empty() {
        for name in &taken {
            println!("release: refused: {name}");
        }
        return Ok(false);
    }
    notes.extend(name_lines);
    print!("{}", plan.render(args.dry_run, &notes));

    let mut package_args = vec!["package", "--locked"];
    let mut publish_args = vec!["publish", "--dry-run", "--no-verify", "--locked"];
    if args.dry_run {
        // A rehearsal may run on a work in progress; the real release refused a dirty tree.
        package_args.push("--allow-dirty");
        publish_args.push("--allow-dirty");
    }
    for name in &plan.order {
        package_args.extend(["-p", name.as_str()]);
        publish_args.extend(["-p", name.as_str()]);
    }
    heading("release: cargo package (each crate built from its own tarball)");
    forget_unpacked_tarballs(&plan.order);
    let start = Instant::now();
    if let Err(err) = cargo_tracked(root, "cargo package", &package_args) {
        println!("release: FAILED: {err:#}");
        return Ok(false);
    }
    println!(
        "release: cargo package: ok, {} crates ({} s)",
        plan.order.len(),
        start.elapsed().as_secs()
    );
    heading("release: cargo publish --dry-run");
    let start = Instant::now();
    if let Err(err) = cargo_tracked(root, "cargo publish --dry-run", &publish_args) {
        println!("release: FAILED: {err:#}");
        return Ok(false);
    }
    println!(
        "release: cargo publish --dry-run: ok ({} s)",
        start.elapsed().as_secs()
    );
    if args.dry_run {
        println!(
            "release: dry run done: {} crates at {} package and would publish",
            plan.order.len(),
            plan.version
        );
        return Ok(true);
    }
    for (i, name) in plan.order.iter().enumerate() {
        heading(&format!(
            "release: publishing {name} {} ({}/{})",
            plan.version,
            i + 1,
            plan.order.len()
        ));
        if on_crates_io(name, &plan.version) {
            // A rerun after a partial release resumes here.
            println!(
                "release: {name} {} is already on crates.io: skipped",
                plan.version
            );
            continue;
        }
        let step = format!("cargo publish -p {name}");
        // Verified by `cargo package` above from the same sources.
        let args = ["publish", "--locked", "--no-verify", "-p", name.as_str()];
        if let Err(err) = cargo_tracked(root, &step, &args) {
            println!(
                "release: FAILED: {err:#}; published before it: {}",
                published_list(&plan.order[..i])
            );
            return Ok(false);
        }
        if let Err(err) = wait_visible(name, &plan.version) {
            println!(
                "release: FAILED at {name}, step `wait until crates.io serves it`: {err:#}; \
                 rerun once it shows: crates already on crates.io are skipped"
            );
            return Ok(false);
        }
    }
    let tag = format!("v{}", plan.version);
    let message = format!("burrow {}", plan.version);
    if let Err(err) = Cmd::new(root, "git", &["tag", "-a", &tag, "-m", &message]).run() {
        println!("release: every crate is published, but step `git tag {tag}` failed: {err:#}");
        return Ok(false);
    }
    println!(
        "release: {} {} published; push the tag with `git push origin {tag}`",
        plan.order.len(),
        plan.version
    );
    Ok(true)
}

fn published_list(names: &[String]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

/// `cargo metadata` of the workspace, planned.
fn make_plan(root: &Path, version: Option<&str>) -> anyhow::Result<Result<Plan, Vec<String>>> {
    let json = Cmd::cargo(
        root,
        &["metadata", "--format-version", "1", "--no-deps", "--locked"],
    )
    .output_quietly()
    .context("`cargo metadata --no-deps` failed (run it to see why)")?;
    let ws = Workspace::from_metadata(&json)?;
    Ok(plan::plan(&ws, version))
}

/// Refuses unless the tree is clean and `main` is checked out.
fn clean_main(root: &Path) -> Result<(), String> {
    let branch = Cmd::new(root, "git", &["rev-parse", "--abbrev-ref", "HEAD"])
        .output_quietly()
        .ok_or("`git rev-parse` failed: is this a git checkout?")?;
    let branch = branch.trim();
    if branch != MAIN {
        return Err(format!(
            "a release is published from `{MAIN}`, and `{branch}` is checked out"
        ));
    }
    let status = Cmd::new(root, "git", &["status", "--porcelain"])
        .output_quietly()
        .ok_or("`git status` failed")?;
    if !status.trim().is_empty() {
        return Err(
            "the working tree has uncommitted changes or untracked files (`git status`)".into(),
        );
    }
    Ok(())
}

/// The changelog's entry for `version`: a `## [version]` section, or, in a dry run,
/// a non-empty `[Unreleased]` section that the release will rename.
fn changelog_note(root: &Path, version: &str, dry_run: bool) -> Result<String, String> {
    let log = changelog::read(root)?;
    if let Some(release) = log.release(version) {
        if release.entries.is_empty() {
            return Err(format!(
                "{}: the [{version}] section lists no change",
                changelog::FILE
            ));
        }
        return Ok(format!(
            "{}: [{version}] - {} has {} entries",
            changelog::FILE,
            release.date,
            release.entries.len()
        ));
    }
    if dry_run && !log.unreleased.is_empty() {
        return Ok(format!(
            "{}: no [{version}] section yet; before publishing, rename [Unreleased] ({} \
             entries) to `## [{version}] - YYYY-MM-DD`",
            changelog::FILE,
            log.unreleased.len()
        ));
    }
    Err(format!(
        "{} has no `## [{version}] - YYYY-MM-DD` section: move the [Unreleased] entries \
         under one",
        changelog::FILE
    ))
}

/// `cargo semver-checks` against the last released version, or a note that there is none.
fn semver(root: &Path, plan: &Plan) -> Result<String, String> {
    let log = changelog::read(root)?;
    let Some(previous) = log
        .releases
        .iter()
        .find(|r| r.version != plan.version)
        .map(|r| r.version.clone())
    else {
        return Ok(format!(
            "semver: no earlier release in {}, so `cargo semver-checks` is skipped (it \
             compares against the last released version)",
            changelog::FILE
        ));
    };
    if !Cmd::cargo(root, &["semver-checks", "--version"]).succeeds_quietly() {
        return Err(format!(
            "{previous} was released, and `cargo semver-checks` is not installed \
             (`cargo install --locked cargo-semver-checks`)"
        ));
    }
    heading(&format!("release: cargo semver-checks against {previous}"));
    for name in &plan.order {
        let args = [
            "semver-checks",
            "--baseline-version",
            previous.as_str(),
            "-p",
            name.as_str(),
        ];
        if let Err(err) = Cmd::cargo(root, &args).run() {
            return Err(format!(
                "{name}: step `cargo semver-checks` against {previous} failed: {err:#}"
            ));
        }
    }
    Ok(format!(
        "semver: every crate keeps {previous}'s API promises"
    ))
}

/// Runs cargo with its stderr echoed line by line, remembering the last crate cargo
/// named (`Packaging`, `Verifying`, `Uploading`...), so a failure names it.
fn cargo_tracked(root: &Path, step: &str, args: &[&str]) -> anyhow::Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    println!("$ cargo {}", args.join(" "));
    let mut child = Command::new(cargo)
        .args(args)
        .current_dir(root)
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("step `{step}` could not start cargo"))?;
    let mut current: Option<(String, String)> = None;
    if let Some(stderr) = child.stderr.take() {
        for line in BufReader::new(stderr).lines() {
            let line = line.unwrap_or_default();
            eprintln!("{line}");
            if let Some(found) = crate_named(&line) {
                current = Some(found);
            }
        }
    }
    let status = child
        .wait()
        .with_context(|| format!("step `{step}`: waiting for cargo"))?;
    if status.success() {
        return Ok(());
    }
    match current {
        Some((name, doing)) => bail!(
            "{name}: step `{step}` failed while {doing} it ({status}; cargo's error is above)"
        ),
        None => {
            bail!("step `{step}` failed before naming a crate ({status}; cargo's error is above)")
        }
    }
}

/// `(crate, what cargo was doing)` from a cargo status line such as
/// `   Verifying burrow-fs v0.1.0 (/path)`.
fn crate_named(line: &str) -> Option<(String, String)> {
    let mut words = line.split_whitespace();
    let verb = words.next()?;
    let doing = match verb {
        "Packaging" => "packaging",
        "Verifying" => "verifying (building from its tarball)",
        "Uploading" => "uploading",
        "Uploaded" => "waiting for crates.io to serve",
        "Waiting" => "waiting for crates.io to serve",
        _ => return None,
    };
    let name = words.next()?.trim_matches('`');
    let version = words.next()?;
    version
        .strip_prefix('v')
        .filter(|v| not_a_version(v).is_none())?;
    Some((name.to_string(), doing.to_string()))
}

/// What crates.io's index says of one planned crate name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameOnCratesIo {
    /// No crate has the name: publishing creates it.
    Free,
    /// A crate has it, with our repository.
    Ours,
    /// Another project's crate has it (its repository, or "none given").
    Taken(String),
    /// The index could not be asked (offline, an error): the first line cargo said.
    Unchecked(String),
}

/// Reads `cargo info --registry crates-io NAME`'s outcome: `Ok(stdout)` when it
/// succeeded, `Err(stderr)` when it did not.
pub fn name_status(name: &str, ours: &str, outcome: Result<&str, &str>) -> NameOnCratesIo {
    match outcome {
        Ok(info) => {
            let repository = info
                .lines()
                .find_map(|l| l.strip_prefix("repository:"))
                .map(str::trim)
                .unwrap_or("none given");
            if repository == ours {
                NameOnCratesIo::Ours
            } else {
                NameOnCratesIo::Taken(repository.to_string())
            }
        }
        Err(stderr) if stderr.contains(&format!("could not find `{name}`")) => NameOnCratesIo::Free,
        Err(stderr) => {
            let first = stderr
                .lines()
                .map(str::trim)
                .find(|l| l.starts_with("error"))
                .or_else(|| stderr.lines().map(str::trim).find(|l| !l.is_empty()))
                .unwrap_or("cargo info failed and said nothing");
            NameOnCratesIo::Unchecked(first.to_string())
        }
    }
}

/// Asks crates.io's index about every planned name (`cargo info`, run from outside
/// the workspace so the local crate is not what answers).
fn names_on_crates_io(plan: &Plan) -> Vec<(String, NameOnCratesIo)> {
    plan.order
        .iter()
        .map(|name| {
            let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
                .args(["info", "--registry", "crates-io", name])
                .current_dir(std::env::temp_dir())
                .stdin(Stdio::null())
                .output();
            let status = match &out {
                Ok(out) => {
                    let stdout = String::from_utf8_lossy(&out.stdout);
                    let stderr = String::from_utf8_lossy(&out.stderr);
                    let outcome = if out.status.success() {
                        Ok(stdout.as_ref())
                    } else {
                        Err(stderr.as_ref())
                    };
                    name_status(name, &plan.repository, outcome)
                }
                Err(err) => NameOnCratesIo::Unchecked(format!("could not run cargo info: {err}")),
            };
            (name.clone(), status)
        })
        .collect()
}

/// The plan's notes on the names: one line for the free and our own, one per name taken
/// and one for those that could not be checked; and the refusals a real release makes
/// (a name another project has).
pub fn name_notes(names: &[(String, NameOnCratesIo)]) -> (Vec<String>, Vec<String>) {
    let mut notes = Vec::new();
    let mut refusals = Vec::new();
    let pick = |want: fn(&NameOnCratesIo) -> bool| -> Vec<&str> {
        names
            .iter()
            .filter(|(_, s)| want(s))
            .map(|(n, _)| n.as_str())
            .collect()
    };
    let free = pick(|s| *s == NameOnCratesIo::Free);
    let ours = pick(|s| *s == NameOnCratesIo::Ours);
    let mut checked = Vec::new();
    if !free.is_empty() {
        checked.push(format!("free: {}", free.join(", ")));
    }
    if !ours.is_empty() {
        checked.push(format!("ours already: {}", ours.join(", ")));
    }
    if !checked.is_empty() {
        notes.push(format!(
            "names on crates.io's index: {}",
            checked.join("; ")
        ));
    }
    for (name, status) in names {
        if let NameOnCratesIo::Taken(repository) = status {
            let line = format!(
                "the name {name} is taken on crates.io (repository {repository}); publishing it \
                 needs its owners to add ours, or another name"
            );
            notes.push(line.clone());
            refusals.push(line);
        }
    }
    let unchecked: Vec<String> = names
        .iter()
        .filter_map(|(name, status)| match status {
            NameOnCratesIo::Unchecked(why) => Some(format!("{name} ({why})")),
            _ => None,
        })
        .collect();
    if !unchecked.is_empty() {
        notes.push(format!(
            "could not check on crates.io's index: {}",
            unchecked.join(", ")
        ));
    }
    (notes, refusals)
}

/// True when crates.io serves `name` at `version` (`cargo info` run from outside the
/// workspace, so the local crate is not what answers).
fn on_crates_io(name: &str, version: &str) -> bool {
    let spec = format!("{name}@{version}");
    Cmd::cargo(
        &std::env::temp_dir(),
        &["info", "--registry", "crates-io", &spec],
    )
    .succeeds_quietly()
}

/// Waits until crates.io serves `name` at `version` (`cargo info` from outside the
/// workspace, so the local crate is not what answers).
fn wait_visible(name: &str, version: &str) -> anyhow::Result<()> {
    let start = Instant::now();
    let spec = format!("{name}@{version}");
    loop {
        if on_crates_io(name, version) {
            println!(
                "release: crates.io serves {spec} ({} s)",
                start.elapsed().as_secs()
            );
            return Ok(());
        }
        if start.elapsed() > VISIBLE_TIMEOUT {
            bail!(
                "crates.io did not serve {spec} within {} s",
                VISIBLE_TIMEOUT.as_secs()
            );
        }
        std::thread::sleep(VISIBLE_POLL);
    }
}
