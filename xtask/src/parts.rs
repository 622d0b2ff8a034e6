//! The real parts tests need, as `cargo xtask test` sees them: which setup step provides each, which tests need it (a nextest filter), and whether setup provided it.
//!
//! The policy (docs/adr/0051-setup-steps-hand-env-to-tests.md): a test that needs a
//! part calls `burrow_testkit::require`, and lives in the part's module so that
//! [`Part::filter`] selects it exactly. When setup did not provide a part and `CI` is
//! not `true`, its tests are excluded with `-E 'not (...)'` and nextest reports them as
//! skipped; under `CI=true` a missing part is a failure named before the tests run. At
//! the end the run prints, per part, how many tests ran or were skipped.

use std::path::Path;

use anyhow::Context;
use burrow_testkit::Part;

use crate::cmd::{Cmd, Env};

/// The setup step (its name in `setup::STEPS`) that provides each part, or why none does.
pub const PROVIDERS: &[(Part, &str)] = &[
    (Part::S3, "S3-compatible test server (moto) on 127.0.0.1"),
    (Part::Docker, "Docker test image (busybox)"),
    (
        Part::DockerPython,
        "Docker test image with python3 (debootstrap)",
    ),
    (
        Part::PythonInterop,
        "Python packages for interop and MCP tests",
    ),
    (Part::McpClient, "Python packages for interop and MCP tests"),
    (Part::Ripgrep, "ripgrep (Debian's package)"),
    (
        Part::Postgres,
        "PostgreSQL server on 127.0.0.1 (Debian's packages)",
    ),
    (Part::Chromium, "headless Chromium (Debian's package)"),
];

/// The setup step that provides `part`.
pub fn provider(part: Part) -> &'static str {
    PROVIDERS
        .iter()
        .find(|(p, _)| *p == part)
        .map_or("none", |(_, step)| step)
}

/// What the test run knows of one part.
pub struct PartState {
    pub part: Part,
    /// The value setup exported (or the caller's environment already had).
    pub value: Option<String>,
    /// How many tests need it, from `cargo nextest list` with its filter (`None`: unknown).
    pub tests: Option<usize>,
}

impl PartState {
    /// True when no test needs the part.
    pub fn unused(&self) -> bool {
        self.tests == Some(0)
    }

    /// One line for the report: the part and what it is.
    pub fn missing_sentence(&self) -> String {
        format!(
            "{} is missing: {} needs {} and {} is not set; the setup step \"{}\" provides it (run `cargo xtask setup` and read its notes)",
            self.part,
            self.count_words(),
            self.part.describe(),
            self.part.env_var(),
            provider(self.part)
        )
    }

    fn count_words(&self) -> String {
        match self.tests {
            Some(1) => "1 test".to_string(),
            Some(n) => format!("{n} tests"),
            None => "its tests".to_string(),
        }
    }
}

/// The parts named in `BURROW_WITHOUT_PARTS` (tags, comma-separated): treated as
/// missing even when setup provided them, to see what a machine without them gets.
pub fn withheld() -> Vec<Part> {
    let list = std::env::var("BURROW_WITHOUT_PARTS").unwrap_or_default();
    Part::ALL
        .iter()
        .copied()
        .filter(|p| list.split(',').any(|t| t.trim() == p.tag()))
        .collect()
}

/// Whether `CI` is `true` (CI's environment; `cargo xtask ci` behaves as CI either way).
pub fn ci_env() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// The state of every part: provided when setup exported its variable (or it was set
/// already), unless [`withheld`].
pub fn states(env: &Env) -> Vec<PartState> {
    let withheld = withheld();
    Part::ALL
        .iter()
        .map(|&part| {
            if withheld.contains(&part) {
                return PartState {
                    part,
                    value: None,
                    tests: None,
                };
            }
            let exported = env
                .iter()
                .find(|(k, _)| k == part.env_var())
                .map(|(_, v)| v.clone())
                .filter(|v| !v.is_empty());
            PartState {
                part,
                value: exported.or_else(|| part.find()),
                tests: None,
            }
        })
        .collect()
}

/// Counts each part's tests with `cargo nextest list -E FILTER` (builds the tests first)
/// and prints one line per part: its tag, how many tests need it, the variable.
pub fn count_tests(root: &Path, env: &Env, states: &mut [PartState]) {
    for state in states {
        let filter = state.part.filter();
        let listed = Cmd::cargo(
            root,
            &[
                "nextest",
                "list",
                "--workspace",
                "--all-features",
                "--message-format",
                "oneline",
                "-E",
                &filter,
            ],
        )
        .envs(env)
        .output_quietly();
        state.tests = listed.map(|out| out.lines().filter(|l| !l.trim().is_empty()).count());
        let count = match state.tests {
            Some(0) => "no test".to_string(),
            _ => state.count_words(),
        };
        println!(
            "  {:<15} {count} ({}, {})",
            state.part.tag(),
            state.part.describe(),
            state.part.env_var()
        );
    }
}

/// The tests declared as skipped (`#[ignore = "reason"]`): each test's name and reason.
/// Nextest counts them as skipped on every machine; no part could make them run.
pub struct DeclaredSkip {
    pub test: String,
    pub reason: String,
}

/// Lists the ignored tests (`cargo nextest list --run-ignored only`), then asks each
/// test binary for their reasons: run with the exact names and no `--ignored`, libtest
/// runs nothing and prints `test NAME ... ignored, REASON` for each.
pub fn declared_skips(root: &Path, env: &Env) -> anyhow::Result<Vec<DeclaredSkip>> {
    let listed = Cmd::cargo(
        root,
        &[
            "nextest",
            "list",
            "--workspace",
            "--all-features",
            "--run-ignored",
            "only",
            "--message-format",
            "json",
        ],
    )
    .envs(env)
    .output_quietly()
    .context("`cargo nextest list --run-ignored only` failed")?;
    let listed: serde_json::Value =
        serde_json::from_str(&listed).context("reading nextest's test list")?;
    let mut skips = Vec::new();
    let suites = listed["rust-suites"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    for (binary_id, suite) in &suites {
        let names: Vec<&str> = suite["testcases"]
            .as_object()
            .map(|cases| {
                cases
                    .iter()
                    .filter(|(_, case)| case["ignored"].as_bool() == Some(true))
                    .map(|(name, _)| name.as_str())
                    .collect()
            })
            .unwrap_or_default();
        if names.is_empty() {
            continue;
        }
        let (Some(binary), Some(cwd)) = (suite["binary-path"].as_str(), suite["cwd"].as_str())
        else {
            continue;
        };
        let mut args = vec!["--exact"];
        args.extend(names.iter().copied());
        let out = Cmd::new(Path::new(cwd), binary, &args)
            .envs(env)
            .output_quietly()
            .with_context(|| format!("{binary_id}: listing its ignored tests' reasons"))?;
        let reasons = ignored_reasons(&out);
        for name in names {
            let reason = reasons
                .iter()
                .find(|(n, _)| n == name)
                .map_or("no reason given", |(_, r)| r.as_str());
            skips.push(DeclaredSkip {
                test: format!("{binary_id} {name}"),
                reason: reason.to_string(),
            });
        }
    }
    Ok(skips)
}

/// `(test, reason)` of each `test NAME ... ignored[, REASON]` line libtest printed.
pub fn ignored_reasons(output: &str) -> Vec<(String, String)> {
    output
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("test ")?;
            let (name, outcome) = rest.split_once(" ... ")?;
            let reason = outcome.strip_prefix("ignored")?;
            let reason = reason.strip_prefix(", ").unwrap_or(reason).trim();
            Some((name.to_string(), reason.to_string()))
        })
        .collect()
}

/// What kind of declared skip a reason is.
fn kind_of(skip: &DeclaredSkip) -> &'static str {
    if skip.reason.contains("child") {
        "child halves of tests that run them in a second process"
    } else if skip.test.contains("conformance") {
        "conformance scenarios a backend cannot run (a capability it lacks, a fixture it has not)"
    } else {
        "other declared skips"
    }
}

/// The report's lines on the declared skips: per kind, then per reason, with counts,
/// biggest first.
pub fn declared_lines(skips: &[DeclaredSkip]) -> Vec<String> {
    let mut kinds: Vec<(&str, Vec<&DeclaredSkip>)> = Vec::new();
    for skip in skips {
        let kind = kind_of(skip);
        match kinds.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, list)) => list.push(skip),
            None => kinds.push((kind, vec![skip])),
        }
    }
    kinds.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(b.0)));
    let mut lines = vec![format!(
        "{} declared skips (`#[ignore = \"reason\"]`: they never run, whatever parts the machine has):",
        skips.len()
    )];
    for (kind, list) in kinds {
        lines.push(format!("  {} {kind}:", list.len()));
        let mut reasons: Vec<(&str, usize)> = Vec::new();
        for skip in list {
            match reasons.iter_mut().find(|(r, _)| *r == skip.reason) {
                Some((_, n)) => *n += 1,
                None => reasons.push((skip.reason.as_str(), 1)),
            }
        }
        reasons.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        for (reason, n) in reasons {
            lines.push(format!("    {n:>4}  {reason}"));
        }
    }
    lines
}

/// The nextest filter that leaves out the tests of every missing part, if any is missing.
pub fn exclusion(states: &[PartState]) -> Option<String> {
    let missing: Vec<String> = states
        .iter()
        .filter(|s| s.value.is_none() && !s.unused())
        .map(|s| s.part.filter())
        .collect();
    if missing.is_empty() {
        None
    } else {
        Some(format!("not ({})", missing.join(" | ")))
    }
}

/// Prints, per part, how many of its tests ran or were skipped, and why; then the
/// declared skips by reason, so that nextest's "skipped" adds up.
pub fn report(states: &[PartState], excluded: bool, declared: &anyhow::Result<Vec<DeclaredSkip>>) {
    crate::cmd::heading("real parts: what ran and what was skipped");
    for state in states {
        let tests = state.count_words();
        let line = if state.unused() {
            "not used (no test needs it)".to_string()
        } else if state.value.is_some() {
            format!(
                "{tests} ran ({}={})",
                state.part.env_var(),
                state.value.as_deref().unwrap_or("")
            )
        } else if excluded {
            format!(
                "{tests} skipped: {} is not set (setup step \"{}\")",
                state.part.env_var(),
                provider(state.part)
            )
        } else {
            format!(
                "{tests} ran without it and failed: {} is not set (setup step \"{}\")",
                state.part.env_var(),
                provider(state.part)
            )
        };
        println!("  {:<15} {line}", state.part.tag());
    }
    let missing: usize = states
        .iter()
        .filter(|s| excluded && s.value.is_none() && !s.unused())
        .filter_map(|s| s.tests)
        .sum();
    crate::cmd::heading("skipped tests: why");
    match declared {
        Ok(skips) => {
            for line in declared_lines(skips) {
                println!("  {line}");
            }
            println!(
                "  {missing} left out because a real part is missing (listed above)\n  \
                 nextest's \"skipped\" is the sum: {}",
                skips.len() + missing
            );
        }
        Err(err) => println!(
            "  the declared skips could not be listed ({err:#}); {missing} tests were left out \
             because a real part is missing"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_part_has_a_provider_that_is_a_setup_step() {
        let steps: Vec<&str> = crate::setup::STEPS.iter().map(|(n, _)| *n).collect();
        for part in Part::ALL {
            let step = provider(part);
            assert!(
                steps.contains(&step),
                "{part}: provider {step:?} is not a setup step"
            );
        }
    }

    #[test]
    fn libtest_lines_give_each_ignored_test_its_reason() {
        let out = "\nrunning 3 tests\n\
                   test conformance::exec_runs ... ignored, the backend has no exec\n\
                   test child_half ... ignored, runs as a child of parent_test\n\
                   test bare ... ignored\n\
                   test ran ... ok\n\n\
                   test result: ok. 0 passed; 0 failed; 3 ignored\n";
        assert_eq!(
            ignored_reasons(out),
            vec![
                (
                    "conformance::exec_runs".to_string(),
                    "the backend has no exec".to_string()
                ),
                (
                    "child_half".to_string(),
                    "runs as a child of parent_test".to_string()
                ),
                ("bare".to_string(), String::new()),
            ]
        );
    }

    #[test]
    fn declared_skips_are_counted_by_kind_then_reason() {
        let skip = |test: &str, reason: &str| DeclaredSkip {
            test: test.to_string(),
            reason: reason.to_string(),
        };
        let skips = vec![
            skip("burrow-fs::all all::conformance::exec_a", "no exec"),
            skip("burrow-fs::all all::conformance::exec_b", "no exec"),
            skip("burrow-sqlite::all all::conformance::tenants", "no tenants"),
            skip(
                "burrow-runtime::all all::runner::child",
                "the child process of x",
            ),
            skip("burrow-fs::all all::other", "slow"),
        ];
        assert_eq!(
            declared_lines(&skips),
            vec![
                "5 declared skips (`#[ignore = \"reason\"]`: they never run, whatever parts the \
                 machine has):",
                "  3 conformance scenarios a backend cannot run (a capability it lacks, a \
                 fixture it has not):",
                "       2  no exec",
                "       1  no tenants",
                "  1 child halves of tests that run them in a second process:",
                "       1  the child process of x",
                "  1 other declared skips:",
                "       1  slow",
            ]
        );
    }

    #[test]
    fn the_exclusion_names_only_missing_parts() {
        let states = vec![
            PartState {
                part: Part::S3,
                value: None,
                tests: Some(3),
            },
            PartState {
                part: Part::Ripgrep,
                value: Some("/usr/bin/rg".into()),
                tests: Some(1),
            },
            PartState {
                part: Part::Docker,
                value: None,
                tests: Some(9),
            },
        ];
        assert_eq!(
            exclusion(&states).as_deref(),
            Some(
                "not ((kind(test) & test(/(^|::)s3::/)) | \
                 (kind(test) & (package(burrow-docker) | test(/(^|::)docker::/))))"
            )
        );
        assert!(exclusion(&states[1..2]).is_none());
        let sentence = states[0].missing_sentence();
        assert!(sentence.contains("BURROW_S3_ENDPOINT"), "{sentence}");
        assert!(sentence.contains("moto"), "{sentence}");
    }
}
