//! The session-store contract as plain async scenarios over `&dyn SessionStore`, run by every store's tests (and by third-party stores) from one table.
//!
//! # Key design decision: plain functions, one table, a pinned list
//!
//! Each sentence under `# Behavior` in [`SessionStore`] is one or more
//! scenarios: `pub async fn name(fx: &Fixture) -> Outcome`, no framework, so a
//! failing one reads like a test and can be called on its own. All are listed
//! once in [`SCENARIOS`] (the `__for_each_session_scenario!` list), from which
//! [`session_conformance_suite!`](crate::session_conformance_suite) generates
//! one `#[test]` per scenario in a store's test binary. `scenarios.txt`
//! pins the names: the generated `session_table_complete` test fails when a
//! scenario is dropped or renamed without changing the pinned list.
//!
//! # Hooks
//! A [`Fixture`] lends the scenarios an empty store on a [`ManualClock`]
//! (claims lapse by moving the clock, never by sleeping) and, when the store
//! has them: `reopen` (close and open the same data again), `sibling` (a second
//! connection to the same data) and `child` (a locator that a second process
//! opens: the test binary re-runs itself on the same test with
//! [`CHILD_VAR`] set, and the child opens the store with the suite's `child`
//! function). A scenario whose hook is missing skips, and a store's suite must
//! declare each skip with its reason.
//!
//! # Using the suite for your own store
//!
//! ```ignore
//! async fn make() -> Fixture {
//!     let clock = Arc::new(ManualClock::default());
//!     Fixture::new(Arc::new(MyStore::new(clock.clone())), clock)
//! }
//! burrow_runtime::session_conformance_suite!(make, skips = {
//!     reopen_keeps_everything: "MyStore keeps nothing past the process",
//!     second_process_claims_and_commits: "MyStore lives in one process",
//!     second_process_command_once: "MyStore lives in one process",
//! });
//! ```

mod checkpoints;
mod child;
mod claims;
mod commands;
mod commits;
mod cursors;
mod history;
mod hooks;
mod retention;
mod runs;
mod teams;
mod tools;

use std::any::Any;
use std::collections::BTreeSet;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;

use super::SessionStore;
use super::clock::ManualClock;
use super::error::{StoreError, StoreErrorKind, StoreResult};
use super::types::{Claim, ClaimAttempt, MessageKind, Scope, ThreadKey, Trigger, Write};

pub use child::{CHILD_VAR, ChildOp, run_child_role};

/// Opens a store over the fixture's data (again, or a second connection).
pub type OpenFn =
    Arc<dyn Fn() -> BoxFuture<'static, StoreResult<Arc<dyn SessionStore>>> + Send + Sync>;

/// Opens, in a child process, the store a locator names, on a clock set by the parent.
pub type OpenChild =
    fn(String, Arc<ManualClock>) -> BoxFuture<'static, StoreResult<Arc<dyn SessionStore>>>;

/// What a scenario is given: an empty store, its clock, and the hooks the store has.
pub struct Fixture {
    store: Mutex<Arc<dyn SessionStore>>,
    clock: Arc<ManualClock>,
    reopen: Option<OpenFn>,
    sibling: Option<OpenFn>,
    child: Option<String>,
    test: Option<String>,
    _guard: Option<Box<dyn Any + Send + Sync>>,
}

impl fmt::Debug for Fixture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fixture")
            .field("reopen", &self.reopen.is_some())
            .field("sibling", &self.sibling.is_some())
            .field("child", &self.child)
            .finish_non_exhaustive()
    }
}

impl Fixture {
    /// An empty `store` that reads time from `clock`.
    pub fn new(store: Arc<dyn SessionStore>, clock: Arc<ManualClock>) -> Self {
        Self {
            store: Mutex::new(store),
            clock,
            reopen: None,
            sibling: None,
            child: None,
            test: None,
            _guard: None,
        }
    }

    /// Lends the reopen hook: `open` opens the same data afresh (the old handle is dropped first).
    pub fn with_reopen(mut self, open: OpenFn) -> Self {
        self.reopen = Some(open);
        self
    }

    /// Lends a second connection to the same data.
    pub fn with_sibling(mut self, open: OpenFn) -> Self {
        self.sibling = Some(open);
        self
    }

    /// Lends a second process: `locator` is what the suite's `child` function opens there.
    pub fn with_child(mut self, locator: impl Into<String>) -> Self {
        self.child = Some(locator.into());
        self
    }

    /// Keeps `guard` (a temporary folder) alive as long as the fixture.
    pub fn with_guard(mut self, guard: impl Any + Send + Sync) -> Self {
        self._guard = Some(Box::new(guard));
        self
    }

    /// The store.
    pub fn store(&self) -> Arc<dyn SessionStore> {
        Arc::clone(&self.store.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The clock.
    pub fn clock(&self) -> &ManualClock {
        &self.clock
    }

    /// Closes the store and opens the same data again; `None` without the hook.
    pub async fn reopen(&self) -> Option<StoreResult<Arc<dyn SessionStore>>> {
        let open = self.reopen.as_ref()?;
        {
            // Drop the fixture's handle first, so the store is really closed
            // when nothing else holds it.
            let mut guard = self.store.lock().unwrap_or_else(|e| e.into_inner());
            *guard = Arc::new(super::MemoryStore::new());
        }
        let opened = open().await;
        if let Ok(store) = &opened {
            *self.store.lock().unwrap_or_else(|e| e.into_inner()) = Arc::clone(store);
        }
        Some(opened)
    }

    /// A second connection to the same data; `None` without the hook.
    pub async fn sibling(&self) -> Option<StoreResult<Arc<dyn SessionStore>>> {
        let open = self.sibling.as_ref()?;
        Some(open().await)
    }

    /// Runs `ops` in a second process and returns each op's answer; `None` without the hook.
    pub fn in_child(
        &self,
        ops: &[ChildOp],
    ) -> Option<Result<Vec<child::ChildAnswer>, ScenarioError>> {
        let locator = self.child.as_ref()?;
        let Some(test) = &self.test else {
            return Some(Err(ScenarioError::new(
                "the second-process hook needs the test's name: run the scenario through run_scenario",
            )));
        };
        Some(child::run_in_child(
            test,
            locator,
            super::Clock::now_ms(&*self.clock),
            ops,
        ))
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

impl From<StoreError> for ScenarioError {
    fn from(e: StoreError) -> Self {
        Self(format!("unexpected store error: {e}"))
    }
}

/// How a scenario went when it did not fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pass {
    /// It ran and held.
    Passed,
    /// It could not run on this fixture (a hook is missing), for this reason.
    Skipped(String),
}

/// A scenario's result.
pub type Outcome = Result<Pass, ScenarioError>;

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

/// The list of scenarios, as `module::function` under this module.
#[doc(hidden)]
#[macro_export]
macro_rules! __for_each_session_scenario {
    ($mode:ident $($args:tt)*) => {
        $crate::__session_scenario_items! { $mode [$($args)*]
            commits::first_commit_creates_the_thread
            commits::each_write_records_one_event_with_the_next_seq
            commits::a_failed_commit_writes_nothing
            commits::message_ids_are_used_once_per_workspace
            commits::empty_and_nul_names_are_refused
            commits::threads_are_listed_by_id_in_pages
            commits::messages_are_read_after_a_seq
            commits::events_are_content_free
            runs::a_run_starts_and_ends
            runs::a_thread_has_one_unfinished_run
            runs::run_ids_are_used_once_per_workspace
            runs::an_ended_run_never_changes
            runs::a_run_pauses_is_answered_and_resumes
            runs::answers_follow_the_request_kind
            runs::a_run_of_another_thread_is_not_found
            runs::usage_adds_up_and_unknown_stays_unknown
            runs::writes_to_a_run_need_a_fence
            runs::a_run_keeps_its_labels
            tools::a_tool_call_is_recorded_started_then_finished
            tools::a_finished_call_is_never_started_again
            tools::an_unfinished_call_can_be_restarted
            tools::finishing_an_unstarted_call_is_not_found
            history::history_references_resolve_to_messages
            history::history_keeps_each_text_once
            history::history_refuses_dangling_references
            history::checkpoints_mark_history_positions
            checkpoints::checkpoint_files_are_kept_byte_for_byte
            checkpoints::checkpoint_retention_keeps_the_newest
            checkpoints::a_rewind_is_begun_then_finished
            checkpoints::a_rewind_of_a_running_thread_is_refused
            claims::a_claim_is_granted_once_and_busy_for_others
            claims::a_released_claim_goes_to_the_next_with_a_greater_token
            claims::a_lapsed_claim_is_taken_over_and_fences_out_the_old_holder
            claims::a_lapsed_claim_nobody_took_still_renews_and_fences
            claims::the_same_holder_reacquiring_renews
            claims::releasing_a_stale_claim_is_a_no_op
            claims::a_zero_ttl_is_refused
            cursors::cursors_only_move_forward
            cursors::a_cursor_moves_with_its_write_or_not_at_all
            cursors::a_cursor_cannot_pass_the_head
            cursors::an_expected_cursor_is_compare_and_set
            cursors::a_cursor_can_move_to_the_commits_head
            cursors::lagging_threads_are_listed
            commands::a_command_is_carried_out_once
            commands::command_keys_are_per_sender_and_workspace
            commands::record_command_inserts_only_if_absent
            commands::concurrent_deliveries_of_one_command_commit_once
            retention::prune_forgets_command_results_recorded_before_the_cutoff
            retention::prune_keeps_what_an_unfinished_run_needs
            retention::prune_keeps_the_records_the_next_run_repairs_from
            hooks::reopen_keeps_everything
            hooks::a_second_connection_sees_commits_and_claims
            hooks::two_connections_commit_concurrently_without_gaps
            hooks::second_process_claims_and_commits
            hooks::second_process_command_once
            teams::team_todos_are_added_claimed_and_completed
            teams::a_blocked_team_todo_cannot_be_started
            teams::two_members_claiming_one_todo_at_once_exactly_one_wins
            teams::team_messages_reach_their_receivers_and_broadcasts_reach_everyone
            teams::a_members_delivery_cursor_only_moves_forward
        }
    };
}

/// Expands the scenario list as the table, as tests, or as names.
#[doc(hidden)]
#[macro_export]
macro_rules! __session_scenario_items {
    (table [] $($module:ident :: $name:ident)*) => {
        /// Every scenario, in table order.
        pub static SCENARIOS: &[Scenario] = &[
            $(
                Scenario {
                    name: ::core::stringify!($name),
                    run: |fx| ::std::boxed::Box::pin($module::$name(fx)),
                },
            )*
        ];
    };
    (tests [$test:ident] $($module:ident :: $name:ident)*) => {
        $( $test! { $name } )*
    };
    (names [] $($module:ident :: $name:ident)*) => {
        [$(::core::stringify!($name)),*]
    };
}

crate::__for_each_session_scenario! { table }

/// The scenario named `name`.
pub fn find(name: &str) -> Option<&'static Scenario> {
    SCENARIOS.iter().find(|s| s.name == name)
}

const PINNED: &str = include_str!("scenarios.txt");

/// The pinned names (one a line; `#` comments and blank lines ignored).
pub fn pinned() -> Vec<&'static str> {
    PINNED
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect()
}

/// Fails unless `generated` (a store's test names), [`SCENARIOS`] and `scenarios.txt` hold the same names, each once.
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
        for n in names.iter() {
            if !seen.insert(*n) {
                problems.push(format!("{n} appears twice in {what}"));
            }
        }
    }
    let t: BTreeSet<&str> = table.iter().copied().collect();
    let g: BTreeSet<&str> = generated.iter().copied().collect();
    let p: BTreeSet<&str> = pinned.iter().copied().collect();
    for gone in p.difference(&t) {
        problems.push(format!(
            "{gone} is pinned in session/conformance/scenarios.txt but is no longer a scenario: a removed or renamed scenario must leave that list in the same change"
        ));
    }
    for new in t.difference(&p) {
        problems.push(format!(
            "{new} is a scenario but is not pinned in session/conformance/scenarios.txt: add it"
        ));
    }
    for m in t.difference(&g) {
        problems.push(format!("{m} has no generated test"));
    }
    for e in g.difference(&t) {
        problems.push(format!("{e} has a generated test but is not a scenario"));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(ScenarioError(problems.join("\n")))
    }
}

/// What a generated test expects of its scenario.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// It must pass.
    Run,
    /// It was declared skipped: it must skip.
    Skip,
}

/// How long one scenario may take before it fails (a guard against hangs, not a speed test).
pub const SCENARIO_TIMEOUT: Duration = Duration::from_secs(120);

/// Runs scenario `name` on a fixture from `make`, or plays the child role when this process is one.
#[doc(hidden)]
pub fn run_scenario<F, Fut>(
    name: &str,
    module_path: &str,
    expect: Expect,
    make: F,
    child: Option<OpenChild>,
) -> Result<(), ScenarioError>
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Fixture>,
{
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ScenarioError(format!("cannot build a tokio runtime: {e}")))?;
    // The test's name as the test harness knows it: the module path without the crate.
    let test = match module_path.split_once("::") {
        Some((_, rest)) => format!("{rest}::{name}"),
        None => name.to_string(),
    };
    if let Some(result) = rt.block_on(run_child_role(&test, child)) {
        return result;
    }
    let scenario = find(name).ok_or_else(|| ScenarioError(format!("no scenario {name}")))?;
    rt.block_on(async {
        let mut fx = make().await;
        fx.test = Some(test);
        let fx = fx;
        let outcome = tokio::time::timeout(SCENARIO_TIMEOUT, (scenario.run)(&fx))
            .await
            .map_err(|_| {
                ScenarioError(format!(
                    "{name} did not finish within {} s",
                    SCENARIO_TIMEOUT.as_secs()
                ))
            })??;
        match (outcome, expect) {
            (Pass::Passed, Expect::Run) => Ok(()),
            (Pass::Skipped(why), Expect::Skip) => {
                eprintln!("{name} skipped as declared: {why}");
                Ok(())
            }
            (Pass::Skipped(why), Expect::Run) => Err(ScenarioError(format!(
                "{name} skipped ({why}) but the suite does not declare it skipped: lend the hook or declare the skip with its reason"
            ))),
            (Pass::Passed, Expect::Skip) => Err(ScenarioError(format!(
                "{name} is declared skipped but ran and passed: remove it from the skips"
            ))),
        }
    })
}

/// Generates one `#[test]` per scenario, plus `session_table_complete`.
///
/// `$make` is an `async fn() -> Fixture` called once per test; `child = f`
/// names an `async fn(String, Arc<ManualClock>) -> StoreResult<Arc<dyn
/// SessionStore>>` that opens a fixture's child locator in a second process.
/// Scenarios that skip (a hook is missing) must be declared with a reason;
/// their tests are `#[ignore = reason]`.
#[macro_export]
macro_rules! session_conformance_suite {
    ($make:path $(, child = $child:path)? $(, skips = { $($skip:ident : $reason:literal),* $(,)? })? $(,)?) => {
        $crate::__session_suite! { ($) $make, [$($child)?] [$($($skip : $reason),*)?] }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __session_suite {
    (($d:tt) $make:path, $child:tt [$($skip:ident : $reason:literal),*]) => {
        macro_rules! __burrow_session_test {
            $(
                ($skip) => {
                    #[test]
                    #[ignore = $reason]
                    fn $skip() -> ::core::result::Result<(), $crate::session::conformance::ScenarioError> {
                        $crate::session::conformance::run_scenario(
                            ::core::stringify!($skip),
                            ::core::module_path!(),
                            $crate::session::conformance::Expect::Skip,
                            || $make(),
                            $crate::__session_child! $child,
                        )
                    }
                };
            )*
            ($d name:ident) => {
                #[test]
                fn $d name() -> ::core::result::Result<(), $crate::session::conformance::ScenarioError> {
                    $crate::session::conformance::run_scenario(
                        ::core::stringify!($d name),
                        ::core::module_path!(),
                        $crate::session::conformance::Expect::Run,
                        || $make(),
                        $crate::__session_child! $child,
                    )
                }
            };
        }
        $crate::__for_each_session_scenario! { tests __burrow_session_test }

        /// The generated tests, the scenario table and the pinned list agree.
        #[test]
        fn session_table_complete() -> ::core::result::Result<(), $crate::session::conformance::ScenarioError> {
            $crate::session::conformance::check_table(&$crate::__for_each_session_scenario! { names })
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __session_child {
    () => {
        ::core::option::Option::None
    };
    ($child:path) => {
        ::core::option::Option::Some(|locator, clock| {
            ::std::boxed::Box::pin($child(locator, clock))
        })
    };
}

// ---- helpers the scenarios share ----

/// The workspace scenarios work in.
pub fn scope() -> Scope {
    Scope::new("tenant-a", "workspace-1")
}

/// A thread of [`scope`].
pub fn thread(id: &str) -> ThreadKey {
    scope().thread(id)
}

/// The claim TTL scenarios use.
pub const TTL: Duration = Duration::from_secs(30);

pub(crate) fn ensure(cond: bool, what: impl FnOnce() -> String) -> Result<(), ScenarioError> {
    if cond {
        Ok(())
    } else {
        Err(ScenarioError(what()))
    }
}

pub(crate) fn expect_kind<T: fmt::Debug>(
    result: StoreResult<T>,
    kind: StoreErrorKind,
    doing: &str,
) -> Result<StoreError, ScenarioError> {
    match result {
        Err(e) if e.kind() == kind => Ok(e),
        Err(e) => Err(ScenarioError(format!(
            "{doing}: expected a {kind} error, got {e}"
        ))),
        Ok(v) => Err(ScenarioError(format!(
            "{doing}: expected a {kind} error, got Ok({v:?})"
        ))),
    }
}

pub(crate) fn post(id: &str, author: &str, text: &str) -> Write {
    Write::PostMessage {
        id: id.into(),
        author: author.into(),
        kind: MessageKind::Message,
        text: text.into(),
    }
}

pub(crate) fn start(run: &str, messages: &[&str]) -> Write {
    Write::StartRun {
        run_id: run.into(),
        trigger: Trigger::Message,
        requested_by: Some("alice".into()),
        message_ids: messages.iter().map(|m| (*m).to_string()).collect(),
        labels: Default::default(),
    }
}

pub(crate) async fn claim(
    store: &dyn SessionStore,
    t: &ThreadKey,
    holder: &str,
) -> Result<Claim, ScenarioError> {
    match store.acquire_claim(t, holder, TTL).await? {
        ClaimAttempt::Granted(c) => Ok(c),
        ClaimAttempt::Busy(c) => Err(ScenarioError(format!(
            "{holder} could not claim {}: {} holds it",
            t.thread, c.holder
        ))),
    }
}
