//! `cargo xtask ci` and `cargo xtask test`: the whole check, in the order that fails fastest.
//!
//! Steps keep going after a failure so one run reports every problem, and end with a
//! summary that names the failed steps. Doc tests run before the main test run so the
//! log closes on nextest's (or cargo test's) own summary of the tests it ran.

use std::fs;
use std::path::Path;

use anyhow::Context;

use crate::cmd::{Cmd, Steps};
use crate::manifest::Manifest;
use crate::{parts, setup, tidy};

/// The facade whose every feature must build alone.
const FACADE: &str = "burrow";
/// The binary that must build without its default features.
const CLI: &str = "burrow-cli";

/// `cargo xtask ci`: format, tidy, clippy, feature builds, then the tests.
pub fn ci(root: &Path) -> anyhow::Result<bool> {
    let mut steps = Steps::new("ci");
    steps.step("rustfmt", || {
        Cmd::cargo(root, &["fmt", "--all", "--", "--check"]).run()
    });
    steps.step("tidy", || match tidy::run(root)? {
        true => Ok(()),
        false => anyhow::bail!("tidy found violations (listed above)"),
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
    match facade_features(root) {
        Ok(features) => {
            steps.step(&format!("{FACADE} with no features"), || {
                Cmd::cargo(root, &["check", "-p", FACADE, "--no-default-features"]).run()
            });
            for feature in &features {
                steps.step(&format!("{FACADE} with only `{feature}`"), || {
                    Cmd::cargo(
                        root,
                        &[
                            "check",
                            "-p",
                            FACADE,
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
    steps.step(&format!("{CLI} with no default features"), || {
        Cmd::cargo(root, &["check", "-p", CLI, "--no-default-features"]).run()
    });
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
    let setup = setup::run(root);
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
        parts::report(&states, exclusion.is_some());
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
}

/// The facade's features as listed in its `[features]` table, `default` excluded.
fn facade_features(root: &Path) -> anyhow::Result<Vec<String>> {
    let path = root.join("crates").join(FACADE).join("Cargo.toml");
    let text = fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    Ok(Manifest::parse(&text).features())
}
