//! Runs one scenario as a test (a fresh fixture, a two-worker runtime, skips printed) and checks the generated tests against the table.

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

/// Runs the scenario `name` on a fixture from `make`; a skip prints `SKIP <name>: <reason>` to stderr and passes.
pub fn run_scenario<F, Fut>(name: &str, make: F) -> Result<(), ScenarioError>
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
        if let Some(reason) = fixture.skip_reason() {
            return Ok(Pass::Skipped(reason.to_owned()));
        }
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
    match outcome? {
        Pass::Passed => Ok(()),
        Pass::Skipped(reason) => {
            eprintln!("SKIP {name}: {reason}");
            Ok(())
        }
    }
}

/// Fails unless `generated` (the test names a backend's binary got) and [`SCENARIOS`] hold the same names, each once.
pub fn check_table(generated: &[&str]) -> Result<(), ScenarioError> {
    let mut problems = Vec::new();
    let table: Vec<&str> = SCENARIOS.iter().map(|s| s.name).collect();
    for (what, names) in [
        ("SCENARIOS", &table),
        ("the generated tests", &generated.to_vec()),
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
