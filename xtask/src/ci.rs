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
use crate::{setup, tidy};

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
    run_tests(root, &mut steps);
    Ok(steps.finish())
}

/// `cargo xtask test`: setup, then doc tests and every test.
pub fn test(root: &Path) -> anyhow::Result<bool> {
    let mut steps = Steps::new("test");
    run_tests(root, &mut steps);
    Ok(steps.finish())
}

fn run_tests(root: &Path, steps: &mut Steps) {
    crate::cmd::heading("setup");
    let setup = setup::run(root);
    for failed in setup.failed() {
        steps.record_failure(&format!("setup: {failed}"));
    }
    let env = setup.env().clone();
    steps.step("doc tests", || {
        Cmd::cargo(root, &["test", "--workspace", "--all-features", "--doc"])
            .envs(&env)
            .run()
    });
    if setup.nextest() {
        steps.step("tests (nextest)", || {
            Cmd::cargo(
                root,
                &[
                    "nextest",
                    "run",
                    "--workspace",
                    "--all-features",
                    "--no-fail-fast",
                ],
            )
            .envs(&env)
            .run()
        });
    } else {
        steps.step("tests (cargo test; cargo-nextest is missing)", || {
            Cmd::cargo(
                root,
                &["test", "--workspace", "--all-features", "--no-fail-fast"],
            )
            .envs(&env)
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
