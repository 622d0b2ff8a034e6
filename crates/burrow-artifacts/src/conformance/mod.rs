//! The `ArtifactStore` contract as plain async scenarios over a [`Fixture`], run by every store's tests (and by third-party stores) from one table.
//!
//! # Key design decision: plain functions, one table, a pinned list
//!
//! Each sentence under `# Behavior` in [`ArtifactStore`] is one or more
//! scenarios: `pub async fn name(fx: &Fixture) -> Outcome`, no framework, so a
//! failing one reads like a test. All are listed once (the
//! `__for_each_artifact_scenario!` list), from which [`SCENARIOS`] and
//! [`artifact_conformance_suite!`](crate::artifact_conformance_suite) (one
//! `#[test]` per scenario in a store's test binary) are generated.
//! `scenarios.txt` pins the names: the generated `artifact_table_complete`
//! test fails when a scenario is dropped or renamed without changing it.
//!
//! A store under test is opened with [`kinds`]; a [`Fixture`] may lend a
//! `sibling`, a second handle on the same data (a second connection to the
//! same file), on which the concurrency scenario edits.
//!
//! ```ignore
//! async fn make() -> Fixture {
//!     Fixture::new(Arc::new(MyStore::new(burrow_artifacts::conformance::kinds())))
//! }
//! burrow_artifacts::artifact_conformance_suite!(make);
//! ```

mod scenarios;

use std::any::Any;
use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use burrow_runtime::session::Scope;
use futures::future::BoxFuture;
use serde_json::json;

use crate::error::{ArtifactError, ArtifactErrorKind};
use crate::kind::Kinds;
use crate::store::ArtifactStore;

/// The kinds a store under test is opened with: `note` (title, text, tags),
/// `list` (an object of items keyed by id) and `record` (any object).
pub fn kinds() -> Kinds {
    let note = json!({
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "text": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "count": {"type": "integer"}
        },
        "required": ["title", "text"],
        "additionalProperties": false
    });
    let list = json!({
        "type": "object",
        "properties": {
            "items": {"type": "object", "additionalProperties": {"type": "string"}}
        },
        "required": ["items"]
    });
    let record = json!({"type": "object"});
    // The schemas are literals known to compile; an error here is the suite's own bug.
    Kinds::new()
        .with_schema("note", note)
        .and_then(|k| k.with_schema("list", list))
        .and_then(|k| k.with_schema("record", record))
        .unwrap_or_default()
}

/// What a scenario is given: an empty store opened with [`kinds`], and, when
/// the store has one, a second handle on the same data.
pub struct Fixture {
    store: Arc<dyn ArtifactStore>,
    sibling: Option<Arc<dyn ArtifactStore>>,
    _guard: Option<Box<dyn Any + Send + Sync>>,
}

impl fmt::Debug for Fixture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fixture")
            .field("sibling", &self.sibling.is_some())
            .finish_non_exhaustive()
    }
}

impl Fixture {
    /// A fixture over `store` (empty, opened with [`kinds`]).
    pub fn new(store: Arc<dyn ArtifactStore>) -> Self {
        Self {
            store,
            sibling: None,
            _guard: None,
        }
    }

    /// The same fixture with `sibling`, a second handle on the same data.
    pub fn with_sibling(mut self, sibling: Arc<dyn ArtifactStore>) -> Self {
        self.sibling = Some(sibling);
        self
    }

    /// The same fixture keeping `guard` alive (a temporary directory).
    pub fn with_guard(mut self, guard: impl Any + Send + Sync) -> Self {
        self._guard = Some(Box::new(guard));
        self
    }

    /// The store.
    pub fn store(&self) -> &dyn ArtifactStore {
        &*self.store
    }

    /// The store, shared.
    pub fn shared(&self) -> Arc<dyn ArtifactStore> {
        Arc::clone(&self.store)
    }

    /// The second handle, or the store itself when there is none.
    pub fn sibling(&self) -> Arc<dyn ArtifactStore> {
        self.sibling
            .as_ref()
            .map_or_else(|| Arc::clone(&self.store), Arc::clone)
    }

    /// The workspace scenarios use.
    pub fn scope(&self) -> Scope {
        Scope::new("t", "w")
    }
}

/// Why a scenario failed: one sentence.
pub struct ScenarioError(String);

impl ScenarioError {
    /// A failure saying `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

impl fmt::Debug for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ScenarioError {}

impl From<ArtifactError> for ScenarioError {
    fn from(e: ArtifactError) -> Self {
        Self(format!("unexpected {} error: {e}", e.kind()))
    }
}

/// A scenario's result.
pub type Outcome = Result<(), ScenarioError>;

/// One scenario: its name and function.
#[derive(Clone, Copy)]
pub struct Scenario {
    /// The function's name, which is also the test's.
    pub name: &'static str,
    /// Runs it.
    pub run: for<'a> fn(&'a Fixture) -> BoxFuture<'a, Outcome>,
}

impl fmt::Debug for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Scenario({})", self.name)
    }
}

/// The list of scenarios, each a function of [`scenarios`].
#[doc(hidden)]
#[macro_export]
macro_rules! __for_each_artifact_scenario {
    ($m:ident) => {
        $m! {
            create_and_read,
            create_refuses_unknown_kinds_and_invalid_snapshots,
            patch_add,
            patch_remove,
            patch_replace,
            patch_move,
            patch_copy,
            patch_test_passes_and_fails,
            a_patch_that_cannot_apply_changes_nothing,
            a_patched_snapshot_is_validated,
            text_edit_replaces_the_one_occurrence,
            text_edit_not_found,
            text_edit_ambiguous,
            text_edit_keeps_crlf,
            text_edit_on_a_non_string_is_refused,
            archive_then_no_more_changes,
            revert_is_a_new_revision,
            a_stale_base_is_a_conflict_and_changes_nothing,
            a_base_ahead_of_the_head_is_refused,
            a_proposal_changes_nothing_until_applied,
            a_proposal_is_rejected,
            a_proposal_against_a_moved_head_conflicts,
            an_invalid_proposal_is_refused,
            the_event_log_is_gap_free,
            concurrent_edits_from_one_base_apply_once,
            list_filters_by_kind_and_archived,
            missing_things_are_not_found,
            workspaces_are_separate,
            history_replays_to_the_head,
            nul_in_names_is_refused,
        }
    };
}

macro_rules! __artifact_table {
    ($($name:ident),* $(,)?) => {
        mod wrapped {
            use super::{scenarios, BoxFuture, Fixture, Outcome};
            $(
                pub(super) fn $name(fx: &Fixture) -> BoxFuture<'_, Outcome> {
                    Box::pin(scenarios::$name(fx))
                }
            )*
        }
        /// Every scenario, in the listed order.
        pub static SCENARIOS: &[Scenario] = &[
            $(Scenario { name: stringify!($name), run: wrapped::$name }),*
        ];
    };
}

__for_each_artifact_scenario!(__artifact_table);

/// The scenario `name`.
pub fn find(name: &str) -> Option<&'static Scenario> {
    SCENARIOS.iter().find(|s| s.name == name)
}

const PINNED: &str = include_str!("scenarios.txt");

/// Fails unless `generated` (a store's test names), [`SCENARIOS`] and
/// `scenarios.txt` hold the same names, each once.
pub fn check_table(generated: &[&str]) -> Outcome {
    let pinned: Vec<&str> = PINNED
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let table: Vec<&str> = SCENARIOS.iter().map(|s| s.name).collect();
    for (what, names) in [
        ("the generated tests", generated),
        ("SCENARIOS", &table),
        ("scenarios.txt", &pinned),
    ] {
        let unique: BTreeSet<&str> = names.iter().copied().collect();
        if unique.len() != names.len() {
            return Err(ScenarioError::new(format!("{what} lists a name twice")));
        }
    }
    let pinned_set: BTreeSet<&str> = pinned.iter().copied().collect();
    let table_set: BTreeSet<&str> = table.iter().copied().collect();
    let generated_set: BTreeSet<&str> = generated.iter().copied().collect();
    if let Some(gone) = pinned_set.difference(&table_set).next() {
        return Err(ScenarioError::new(format!(
            "{gone} is pinned in conformance/scenarios.txt but is no longer a scenario: a removed or renamed scenario must leave that list in the same change"
        )));
    }
    if let Some(new) = table_set.difference(&pinned_set).next() {
        return Err(ScenarioError::new(format!(
            "{new} is a scenario but is not pinned in conformance/scenarios.txt: add it"
        )));
    }
    if generated_set != table_set {
        return Err(ScenarioError::new(
            "the store's generated tests are not the scenario table",
        ));
    }
    Ok(())
}

/// Makes a fixture (an async function of the store's tests).
pub type MakeFn = fn() -> BoxFuture<'static, Fixture>;

/// Runs the scenario `name` on a fixture from `make`, on a multi-threaded runtime.
pub fn run_scenario(name: &str, make: MakeFn) -> Outcome {
    let Some(scenario) = find(name) else {
        return Err(ScenarioError::new(format!("there is no scenario {name}")));
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| ScenarioError::new(format!("no tokio runtime: {e}")))?;
    runtime.block_on(async move {
        let fixture = make().await;
        (scenario.run)(&fixture).await
    })
}

/// Generates one `#[test]` per scenario, run on fixtures from `make`
/// (`async fn() -> Fixture`), and `artifact_table_complete`.
#[macro_export]
macro_rules! artifact_conformance_suite {
    ($make:path $(,)?) => {
        $crate::__artifact_suite! { ($) $make }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __artifact_suite {
    (($d:tt) $make:path) => {
        macro_rules! __burrow_artifact_tests {
            ($d($d name:ident),* $d(,)?) => {
                $d(
                    #[test]
                    fn $d name() -> ::core::result::Result<(), $crate::conformance::ScenarioError> {
                        $crate::conformance::run_scenario(::core::stringify!($d name), || ::std::boxed::Box::pin($make()))
                    }
                )*

                /// The generated tests, the scenario table and the pinned list agree.
                #[test]
                fn artifact_table_complete() -> ::core::result::Result<(), $crate::conformance::ScenarioError> {
                    $crate::conformance::check_table(&[$d(::core::stringify!($d name)),*])
                }
            };
        }
        $crate::__for_each_artifact_scenario!(__burrow_artifact_tests);
    };
}

/// `Err` saying `what` unless `cond`.
fn ensure(cond: bool, what: impl FnOnce() -> String) -> Outcome {
    if cond {
        Ok(())
    } else {
        Err(ScenarioError::new(what()))
    }
}

/// The refusal `r` must be, checked by `want`; `Err` if it succeeded or is another kind.
fn refused<T: fmt::Debug>(
    r: Result<T, ArtifactError>,
    what: &str,
    want: impl FnOnce(&ArtifactErrorKind) -> bool,
) -> Result<ArtifactError, ScenarioError> {
    match r {
        Ok(v) => Err(ScenarioError::new(format!(
            "{what} was accepted ({v:?}), not refused"
        ))),
        Err(e) if want(e.kind()) => Ok(e),
        Err(e) => Err(ScenarioError::new(format!(
            "{what} was refused with the wrong kind: {} ({e})",
            e.kind()
        ))),
    }
}
