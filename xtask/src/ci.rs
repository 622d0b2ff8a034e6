//! `cargo xtask ci` and `cargo xtask test`: the whole check, in the order that fails fastest.
//!
//! `ci`: rustfmt, tidy, the changelog, clippy, the facade's features each alone,
//! cargo-deny (bans, licenses, sources), the docs with warnings denied, the MSRV check,
//! the CLI's features each alone, the release dry run (every publishable crate packaged
//! and built from its tarball), then setup, the doc tests and the tests.
//!
//! Steps keep going after a failure so one run reports every problem, and end with a
//! summary that names the failed steps. The servers setup started for the run (not
//! those it found running) are stopped at the end unless `BURROW_KEEP_PARTS=1`. Doc tests run before the main test run so the
//! log closes on nextest's (or cargo test's) own summary of the tests it ran.

use std::fs;
use std::path::Path;

use anyhow::{Context, bail};

use crate::cmd::{Cmd, Steps};
use crate::manifest::Manifest;
use crate::{changelog, deny, parts, release, setup, tidy};

/// The facade whose every feature must build alone: its package name and its folder
/// under `crates/` (the folder kept its old name, docs/adr/0210).
pub const FACADE: (&str, &str) = ("burrow-agent", "burrow");
/// The binary that must build without its default features: package and folder.
pub const CLI: (&str, &str) = ("burrow-agent-cli", "burrow-cli");

/// `cargo xtask ci`: format, tidy, changelog, clippy, deny, docs, MSRV, feature builds,
/// the release dry run, then the tests.
pub fn ci(root: &Path) -> anyhow::Result<bool> {
    let mut steps = Steps::new("ci");
    steps.step("rustfmt", || {
        Cmd::cargo(root, &["fmt", "--all", "--", "--check"]).run()
    });
    steps.step("tidy", || match tidy::run(root)? {
        true => Ok(()),
        false => anyhow::bail!("tidy found violations (listed above)"),
    });
    steps.step("changelog", || match changelog::run(root)? {
        true => Ok(()),
        false => bail!("CHANGELOG.md needs attention (said above)"),
    });
    steps.step("clippy", || {
        Cmd::cargo(
            root,
            &[
                "clippy",
                "--workspace",
                "--all-targets",
                "--all-features",
                "--",
                "-D",
                "warnings",
            ],
        )
        .run()
    });
    let (facade, cli) = (FACADE.0, CLI.0);
    match crate_features(root, FACADE.1) {
        Ok(features) => {
            steps.step(&format!("{facade} with no features"), || {
                Cmd::cargo(root, &["check", "-p", facade, "--no-default-features"]).run()
            });
            for feature in &features {
                steps.step(&format!("{facade} with only `{feature}`"), || {
                    Cmd::cargo(
                        root,
                        &[
                            "check",
                            "-p",
                            facade,
                            "--no-default-features",
                            "--features",
                            feature,
                        ],
                    )
                    .run()
                });
            }
        }
        Err(err) => {
            steps.step("facade features", || Err(err));
        }
    }
    steps.step(
        "cargo deny (bans, licenses, sources)",
        || match deny::run(root)? {
            true => Ok(()),
            false => bail!("cargo deny found problems (listed above)"),
        },
    );
    steps.step("docs (cargo doc --no-deps, warnings denied)", || {
        let env = vec![("RUSTDOCFLAGS".to_string(), "-D warnings".to_string())];
        // The facade's library is `burrow_agent` and the CLI's binary `burrow`: their
        // docs no longer share a folder (rust-lang/cargo#6313), so one run documents both.
        Cmd::cargo(root, &["doc", "--workspace", "--no-deps", "--all-features"])
            .envs(&env)
            .run()
    });
    steps.step("MSRV (rust-version)", || msrv(root));
    steps.step(&format!("{cli} with no default features"), || {
        Cmd::cargo(root, &["check", "-p", cli, "--no-default-features"]).run()
    });
    match crate_features(root, CLI.1) {
        Ok(features) => {
            for feature in &features {
                steps.step(&format!("{cli} with only `{feature}`"), || {
                    Cmd::cargo(
                        root,
                        &[
                            "check",
                            "-p",
                            cli,
                            "--no-default-features",
                            "--features",
                            feature,
                        ],
                    )
                    .run()
                });
            }
        }
        Err(err) => {
            steps.step("cli features", || Err(err));
        }
    }
    steps.step(
        "release dry run (cargo xtask release --dry-run)",
        || match release::run(root, &["--dry-run".to_string()])? {
            true => Ok(()),
            false => bail!("the release dry run failed (said above)"),
        },
    );
    run_tests(root, &mut steps, true);
    Ok(steps.finish())
}

/// `cargo xtask test`: setup, then doc tests and every test; strict about missing
/// parts only under `CI=true`.
pub fn test(root: &Path) -> anyhow::Result<bool> {
    let mut steps = Steps::new("test");
    run_tests(root, &mut steps, parts::ci_env());
    Ok(steps.finish())
}

/// Setup, then the tests. `strict`: a part setup did not provide is a failure (CI);
/// otherwise its tests are left out and nextest reports them as skipped.
fn run_tests(root: &Path, steps: &mut Steps, strict: bool) {
    crate::cmd::heading("setup");
    let mut setup = setup::run(root);
    for failed in setup.failed() {
        steps.record_failure(&format!("setup: {failed}"));
    }
    let withheld: Vec<String> = parts::withheld()
        .iter()
        .map(|p| p.env_var().to_string())
        .collect();
    let env: crate::cmd::Env = setup
        .env()
        .iter()
        .filter(|(k, _)| !withheld.contains(k))
        .cloned()
        .collect();
    let mut states = parts::states(&env);
    if setup.nextest() {
        crate::cmd::heading("which tests need which real part");
        parts::count_tests(root, &env, &mut states);
    }
    for state in states.iter().filter(|s| s.value.is_none() && !s.unused()) {
        if strict {
            println!("FAILED: {}", state.missing_sentence());
            steps.record_failure(&format!("real part {}", state.part));
        } else {
            println!(
                "note: {}; its tests are reported as skipped (CI=true makes this a failure)",
                state.missing_sentence()
            );
        }
    }
    let exclusion = if strict {
        None
    } else {
        parts::exclusion(&states)
    };
    steps.step("doc tests", || {
        Cmd::cargo(root, &["test", "--workspace", "--all-features", "--doc"])
            .envs(&env)
            .without(&withheld)
            .run()
    });
    if setup.nextest() {
        steps.step("tests (nextest)", || {
            let mut args = vec![
                "nextest",
                "run",
                "--workspace",
                "--all-features",
                "--no-fail-fast",
            ];
            if let Some(filter) = &exclusion {
                args.extend(["-E", filter.as_str()]);
            }
            Cmd::cargo(root, &args).envs(&env).without(&withheld).run()
        });
        let declared = parts::declared_skips(root, &env);
        parts::report(&states, exclusion.is_some(), &declared);
    } else {
        steps.step("tests (cargo test; cargo-nextest is missing)", || {
            Cmd::cargo(
                root,
                &["test", "--workspace", "--all-features", "--no-fail-fast"],
            )
            .envs(&env)
            .without(&withheld)
            .run()
        });
    }
    let stopped = setup.stop_started(setup::keep_parts());
    if !stopped.is_empty() {
        crate::cmd::heading("the servers setup started");
        for line in stopped {
            println!("  {line}");
        }
    }
}

/// The features of the crate in `crates/DIR` as listed in its `[features]` table,
/// `default` excluded.
fn crate_features(root: &Path, dir: &str) -> anyhow::Result<Vec<String>> {
    let path = root.join("crates").join(dir).join("Cargo.toml");
    let text = fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    Ok(Manifest::parse(&text).features())
}

/// The MSRV check: every crate is checked by the toolchain of the workspace's
/// `rust-version`, which is the pinned one when they agree; otherwise by `cargo
/// +RUST_VERSION` when that toolchain is installed (docs/adr/0162-ci-release-checks.md).
fn msrv(root: &Path) -> anyhow::Result<()> {
    let path = root.join("Cargo.toml");
    let text = fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let manifest = Manifest::parse(&text);
    let Some(rust_version) = manifest
        .section("workspace.package")
        .and_then(|s| s.get_str("rust-version"))
    else {
        bail!("[workspace.package] has no rust-version");
    };
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let active = Cmd::new(root, &rustc, &["--version"])
        .output_quietly()
        .context("`rustc --version` failed")?;
    // "rustc 1.95.0 (59807616e 2026-04-14)" -> "1.95.0"
    let active = active
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_string();
    let args = ["check", "--workspace", "--all-features", "--locked"];
    if same_release(&active, rust_version) {
        println!(
            "msrv: the pinned toolchain, rustc {active}, is the workspace's rust-version              {rust_version}: checking every crate with it"
        );
        return Cmd::cargo(root, &args).run();
    }
    let toolchains = Cmd::new(root, "rustup", &["toolchain", "list"])
        .output_quietly()
        .unwrap_or_default();
    let Some(toolchain) = toolchains
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .find(|t| same_release(t.split('-').next().unwrap_or_default(), rust_version))
    else {
        bail!(
            "rustc {active} is not the workspace's rust-version {rust_version}, and no              {rust_version} toolchain is installed (`rustup toolchain install {rust_version}`)"
        );
    };
    println!(
        "msrv: rustc {active} is newer than rust-version {rust_version}: checking with {toolchain}"
    );
    let plus = format!("+{toolchain}");
    let mut with_plus = vec![plus.as_str()];
    with_plus.extend(args);
    // The rustup proxy on PATH, not $CARGO (which is the pinned toolchain's own cargo);
    // a target dir of its own so the two toolchains do not rebuild each other's files.
    let target = root.join("target").join("msrv");
    let env = vec![("CARGO_TARGET_DIR".to_string(), target.display().to_string())];
    Cmd::new(root, "cargo", &with_plus).envs(&env).run()
}

/// True when version `a` (`1.95.0`) is release `b` (`1.95` or `1.95.0`).
fn same_release(a: &str, b: &str) -> bool {
    let parts = |v: &str| -> Vec<String> { v.split('.').map(String::from).collect() };
    let (a, b) = (parts(a), parts(b));
    let n = b.len().min(a.len());
    n >= 2 && a[..n] == b[..n]
}

#[cfg(test)]
mod tests {
    use super::same_release;

    #[test]
    fn rust_versions_compare_by_what_they_name() {
        assert!(same_release("1.95.0", "1.95"));
        assert!(same_release("1.95.0", "1.95.0"));
        assert!(!same_release("1.96.0", "1.95"));
        assert!(!same_release("1.95.1", "1.95.0"));
        assert!(!same_release("", "1.95"));
    }
}
