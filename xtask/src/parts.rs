//! The real parts tests need, as `cargo xtask test` sees them: which setup step provides each, which tests need it (a nextest filter), and whether setup provided it.
//!
//! The policy (docs/adr/0051-setup-steps-hand-env-to-tests.md): a test that needs a
//! part calls `burrow_testkit::require`, and lives in the part's module so that
//! [`Part::filter`] selects it exactly. When setup did not provide a part and `CI` is
//! not `true`, its tests are excluded with `-E 'not (...)'` and nextest reports them as
//! skipped; under `CI=true` a missing part is a failure named before the tests run. At
//! the end the run prints, per part, how many tests ran or were skipped.

use std::path::Path;

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

/// Counts each part's tests with `cargo nextest list -E FILTER` (builds the tests first).
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
    }
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

/// Prints, per part, how many of its tests ran or were skipped, and why.
pub fn report(states: &[PartState], excluded: bool) {
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
