//! Runs one scenario as a test (a fresh fixture, a two-worker runtime, a skip checked against the declared ones) and checks the generated tests against the table.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::fixture::Fixture;
use crate::outcome::{Pass, ScenarioError};
use crate::table::{SCENARIOS, find};

/// A scenario still running after this long is reported as hung.
pub const SCENARIO_GUARD: Duration = Duration::from_secs(300);

/// The runtime every generated test uses: multi-threaded, two workers, every driver on.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, ScenarioError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| ScenarioError::new(format!("could not start a tokio runtime: {e}")))
}

/// What a backend's `conformance_suite!` invocation says of one scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// The scenario runs and must pass.
    Run,
    /// The scenario is declared as skipped (its test is `#[ignore]`d): it must skip.
    Skip,
}

/// Runs the scenario `name` on a fixture from `make` and holds it to `expect`.
///
/// A scenario that skips at run time without being declared fails, naming the
/// reason and how to declare it; a declared one that runs fails too.
pub fn run_scenario<F, Fut>(name: &str, expect: Expect, make: F) -> Result<(), ScenarioError>
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Fixture>,
{
    match (run_one(name, make)?, expect) {
        (Pass::Passed, Expect::Run) => Ok(()),
        (Pass::Skipped(reason), Expect::Skip) => {
            eprintln!("{name} skipped as declared: {reason}");
            Ok(())
        }
        (Pass::Skipped(reason), Expect::Run) => Err(ScenarioError::new(format!(
            "{name} skipped ({reason}) but this backend's conformance_suite! does not declare \
             it: add `{name}: \"{reason}\"` to its `skips = {{ .. }}`, or give the fixture \
             what it lacks"
        ))),
        (Pass::Passed, Expect::Skip) => Err(ScenarioError::new(format!(
            "{name} is declared as skipped in this backend's conformance_suite! but it ran \
             and passed: remove it from `skips`"
        ))),
    }
}

/// Runs every scenario of `declared` (the skips a `conformance_suite!` declares) and
/// fails unless each is a scenario of the table that skips on this backend.
pub fn check_declared_skips<F, Fut>(declared: &[&str], make: F) -> Result<(), ScenarioError>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Fixture>,
{
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for name in declared {
        if !seen.insert(*name) {
            problems.push(format!("{name} is declared twice"));
        } else if find(name).is_none() {
            problems.push(format!("{name} is declared as skipped but is no scenario"));
        } else if let Pass::Passed = run_one(name, &make)? {
            problems.push(format!(
                "{name} is declared as skipped but ran and passed: remove it from `skips`"
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(ScenarioError::new(problems.join("; ")))
    }
}

/// Runs the scenario `name` on a fresh fixture from `make`.
fn run_one<F, Fut>(name: &str, make: F) -> Result<Pass, ScenarioError>
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Fixture>,
{
    let scenario = find(name).ok_or_else(|| {
        ScenarioError::new(format!(
            "no scenario named {name} in burrow_conformance::SCENARIOS"
        ))
    })?;
    let rt = runtime()?;
    let outcome = rt.block_on(async {
        let fixture = make().await;
        let cx = fixture.ctx();
        let run = (scenario.run)(fixture.backend().as_ref(), &cx);
        match tokio::time::timeout(SCENARIO_GUARD, run).await {
            Ok(outcome) => outcome,
            Err(_) => Err(ScenarioError::new(format!(
                "{name} did not finish within {} s",
                SCENARIO_GUARD.as_secs()
            ))),
        }
    });
    // A blocking task stuck on a special file must not hang the test after it failed.
    rt.shutdown_timeout(Duration::from_secs(5));
    outcome
}

/// The checked-in list of scenario names (`scenarios.txt`), one a line, `#` comments.
const PINNED: &str = include_str!("../scenarios.txt");

/// The names of [`PINNED`].
pub(crate) fn pinned() -> Vec<&'static str> {
    PINNED
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect()
}

/// Fails unless `generated` (the test names a backend's binary got), [`SCENARIOS`]
/// and the pinned list `scenarios.txt` hold the same names, each once.
///
/// The pinned list is what makes removing a scenario visible: deleting it from the
/// table (and its function) fails here until `scenarios.txt` changes too.
pub fn check_table(generated: &[&str]) -> Result<(), ScenarioError> {
    let mut problems = Vec::new();
    let table: Vec<&str> = SCENARIOS.iter().map(|s| s.name).collect();
    let pinned = pinned();
    for (what, names) in [
        ("SCENARIOS", &table),
        ("the generated tests", &generated.to_vec()),
        ("scenarios.txt", &pinned),
    ] {
        let mut seen = BTreeSet::new();
        for name in names.iter() {
            if !seen.insert(*name) {
                problems.push(format!("{name} appears twice in {what}"));
            }
        }
    }
    let table_set: BTreeSet<&str> = table.iter().copied().collect();
    let generated_set: BTreeSet<&str> = generated.iter().copied().collect();
    let pinned_set: BTreeSet<&str> = pinned.iter().copied().collect();
    for gone in pinned_set.difference(&table_set) {
        problems.push(format!(
            "{gone} is pinned in burrow-conformance/scenarios.txt but is no longer a scenario: \
             a removed or renamed scenario must leave that list in the same change"
        ));
    }
    for new in table_set.difference(&pinned_set) {
        problems.push(format!(
            "{new} is a scenario but is not pinned in burrow-conformance/scenarios.txt: add it"
        ));
    }
    for missing in table_set.difference(&generated_set) {
        problems.push(format!(
            "{missing} is in SCENARIOS but has no generated test"
        ));
    }
    for extra in generated_set.difference(&table_set) {
        problems.push(format!(
            "{extra} has a generated test but is not in SCENARIOS"
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(ScenarioError::new(problems.join("; ")))
    }
}
