//! The burrow file contract as async scenarios over `&dyn Backend`, run by every backend's tests and by third-party backends.
//!
//! # Key design decision: scenarios are plain functions in one table
//!
//! burrow's promise is that every backend behaves the same. The contract is
//! written once, under `# Behavior` in `burrow_backend::Backend`; this crate
//! turns each of those sentences into one or more **scenarios**: plain
//! `pub async fn name(b: &dyn Backend, cx: &Ctx) -> Outcome` functions, no
//! framework, so a failing one can be read, stepped through and called on its
//! own (as `object_store`'s integration functions are).
//!
//! All scenarios are listed once, in one table ([`SCENARIOS`]), and that
//! same list generates one `#[test]` per scenario in each backend's test
//! binary ([`conformance_suite!`]). A backend's test run therefore names
//! every scenario it passed; a scenario the backend cannot run (it lacks a
//! capability: `exec`, `empty_dirs`, `tenants`, `effect_keys`,
//! `modified_at`, `symlinks`) passes with `SKIP <name>: <reason>` on
//! stderr, and nothing else may skip. A test in every binary
//! (`conformance_table_complete`) and a self-test here (every `pub async fn`
//! under `src/scenarios/` is listed) fail when the table drifts.
//!
//! Beside the fixed scenarios, [`check_against_model`] runs random operation
//! sequences on the backend and on `burrow_state::StateBackend` (the model)
//! and compares every answer; the macro adds it as the `model_equivalence` test.
//!
//! # Using the suite for your own backend
//!
//! In your crate's `tests/all.rs` (or a module of it named `conformance`):
//!
//! ```
//! use std::sync::Arc;
//! use burrow_conformance::Fixture;
//! # use burrow_state::StateBackend;
//! # struct MyBackend;
//! # impl MyBackend {
//! #     async fn open(_dir: &std::path::Path) -> std::io::Result<StateBackend> { Ok(StateBackend::new()) }
//! # }
//!
//! async fn make_fixture() -> Fixture {
//!     let dir = tempfile::tempdir().expect("a temporary folder");
//!     let backend = MyBackend::open(dir.path()).await.expect("open the backend");
//!     Fixture::with_guard(Arc::new(backend), dir) // the folder lives as long as the scenario
//! }
//!
//! burrow_conformance::conformance_suite!(make_fixture);
//! # fn main() {}
//! ```
//!
//! `make_fixture` is called once per scenario and must return an **empty**
//! backend. Lowering its limits makes more scenarios run rather than skip
//! (`max_results` at most 1000, `max_file_size` at most 64 MiB), but keep
//! `max_results` at 100 or more: some scenarios list 64 files at once. Optional: `.with_root(path)` to work beneath a directory (a
//! mount), `.with_ctx(..)` / `.with_other_tenant(..)` to choose tenants,
//! `.with_host(..)` to lend a real file system for the symlink and FIFO
//! scenarios, `.with_store(..)` ([`StoreAccess`]) to plant a file past the max
//! file size and show a file's created_at. Run `cargo nextest run --no-capture` to see the skips. The
//! tests need no tokio dev-dependency: each builds its own runtime (multi
//! thread, two workers).

mod fixture;
mod model;
mod outcome;
pub mod processes;
mod run;
pub mod scenarios;
pub mod support;
mod table;

pub use fixture::{Ctx, Fixture, HostAccess, OTHER_TENANT, StoreAccess, TENANT};
pub use model::{MODEL_CASES, check_against_model};
pub use outcome::{
    Outcome, Pass, ScenarioError, expect_kind, expect_refusal, passed, show, skipped,
};
pub use run::SCENARIO_GUARD;
pub use table::{SCENARIOS, Scenario, find};

/// Re-exported so the generated tests need nothing from the caller's dependencies.
#[doc(hidden)]
pub use tokio;

/// What the macros expand to; not a stable API.
#[doc(hidden)]
pub mod __private {
    pub use crate::run::{Expect, check_declared_skips, check_table, run_scenario};
}

/// Generates the conformance tests for one backend: one `#[test]` per
/// scenario (named after it), `conformance_table_complete`,
/// `conformance_declared_skips_skip`, and `model_equivalence`.
///
/// `$make` is a path to an `async fn() -> Fixture`, called once per test.
/// Invoke it once per test binary, in a module of its own (the tests are
/// plain items named after the scenarios).
///
/// A scenario the backend cannot run (it lacks a capability, the fixture lends
/// no host, its limits are too high) must be declared, with the reason. The
/// scenarios a capability's value rules out are declared as one group, whose
/// reason this crate states once (the groups:
/// `exec_off`, `empty_dirs_off`, `empty_dirs_on`, `make_dir_off`, `tenants_off`,
/// `effect_keys_off`, `symlinks_off`); any other skip is named with its own reason:
///
/// ```ignore
/// burrow_conformance::conformance_suite!(make_fixture,
///     capability_skips = [exec_off, tenants_off],
///     skips = {
///         host_fifo_is_never_opened: "the fixture lends no host access to make a FIFO",
///     },
/// );
/// ```
///
/// Each declared test is then `#[ignore = "reason"]`, which the test runner
/// reports as skipped; a scenario that skips without being declared fails, and
/// so does a declared one that runs (`conformance_declared_skips_skip` runs
/// them all), so a group declared for a capability the backend has fails too.
#[macro_export]
macro_rules! conformance_suite {
    ($make:path $(,)?) => {
        $crate::__conformance_suite! { ($) $make [] model }
    };
    ($make:path, skips = { $($skip:ident : $reason:literal),* $(,)? } $(,)?) => {
        $crate::__conformance_suite! { ($) $make [$($skip : $reason),*] model }
    };
    // For the model itself (`StateBackend`), which cannot be compared with itself:
    // its crate writes its own `model_equivalence` against an independent reference.
    ($make:path, skips = { $($skip:ident : $reason:literal),* $(,)? }, no_model_check $(,)?) => {
        $crate::__conformance_suite! { ($) $make [$($skip : $reason),*] no_model }
    };
    ($make:path, capability_skips = [$($group:ident),* $(,)?]
        $(, skips = { $($skip:ident : $reason:literal),* $(,)? })? $(,)?) => {
        $crate::__capability_skips! { ($) $make [model] [$($($skip : $reason,)*)?] $($group)* }
    };
    ($make:path, capability_skips = [$($group:ident),* $(,)?]
        $(, skips = { $($skip:ident : $reason:literal),* $(,)? })?, no_model_check $(,)?) => {
        $crate::__capability_skips! { ($) $make [no_model] [$($($skip : $reason,)*)?] $($group)* }
    };
}

/// The scenarios each capability's value rules out, with the one reason said
/// for all of them: `conformance_suite!`'s `capability_skips = [..]` adds each
/// named group to the declared skips.
///
/// - `exec_off`: the sandbox scenarios (the backend runs no commands).
/// - `empty_dirs_off`: the scenarios of directories that exist on their own.
/// - `empty_dirs_on`: the scenario of implicit directories going with their last file.
/// - `make_dir_off`: the scenarios of directories made with `make_dir`.
/// - `tenants_off`: the tenant isolation scenarios.
/// - `effect_keys_off`: the replay scenarios.
/// - `symlinks_off`: the scenarios of symbolic links made beneath the backend.
#[doc(hidden)]
#[macro_export]
macro_rules! __capability_skips {
    // One group: each of its scenarios, with the group's reason.
    (@add ($d:tt) $make:path [$mode:ident] [$($acc:tt)*] $reason:literal [$($name:ident)*] $($rest:ident)*) => {
        $crate::__capability_skips! { ($d) $make [$mode] [$($acc)* $($name : $reason,)*] $($rest)* }
    };
    (($d:tt) $make:path [$mode:ident] [$($acc:tt)*]) => {
        $crate::__conformance_suite! { ($d) $make [$($acc)*] $mode }
    };
    (($d:tt) $make:path [$mode:ident] [$($acc:tt)*] exec_off $($rest:ident)*) => {
        $crate::__capability_skips! { @add ($d) $make [$mode] [$($acc)*]
            "the backend does not run commands (capability exec is off)"
            [
            sandbox_command_files_are_visible
            sandbox_cwd_is_the_workspace
            sandbox_exit_codes
            sandbox_fifo_is_never_opened
            sandbox_flood_stays_bounded
            sandbox_output_interleaves_stderr
            sandbox_output_is_capped
            sandbox_timeout_exits_124_with_note
            sandbox_timeout_kills_background_children
            ] $($rest)* }
    };
    (($d:tt) $make:path [$mode:ident] [$($acc:tt)*] empty_dirs_off $($rest:ident)*) => {
        $crate::__capability_skips! { @add ($d) $make [$mode] [$($acc)*]
            "directories are implicit here (capability empty_dirs is off)"
            [
            delete_empty_directory_still_blocks_files
            delete_last_file_keeps_empty_directory
            ] $($rest)* }
    };
    (($d:tt) $make:path [$mode:ident] [$($acc:tt)*] empty_dirs_on $($rest:ident)*) => {
        $crate::__capability_skips! { @add ($d) $make [$mode] [$($acc)*]
            "the backend keeps empty directories (capability empty_dirs is on)"
            [
            delete_last_file_removes_implicit_directories
            ] $($rest)* }
    };
    (($d:tt) $make:path [$mode:ident] [$($acc:tt)*] make_dir_off $($rest:ident)*) => {
        $crate::__capability_skips! { @add ($d) $make [$mode] [$($acc)*]
            "the backend cannot make directories (capability make_dir is off)"
            [
            delete_tree_removes_made_directories
            make_dir_is_listed_and_stays
            make_dir_over_a_file_is_refused
            make_dir_parents
            ] $($rest)* }
    };
    (($d:tt) $make:path [$mode:ident] [$($acc:tt)*] tenants_off $($rest:ident)*) => {
        $crate::__capability_skips! { @add ($d) $make [$mode] [$($acc)*]
            "the backend does not scope files by tenant (capability tenants is off)"
            [
            tenants_glob_and_grep_see_nothing
            tenants_ls_looks_missing
            tenants_mutations_look_missing
            tenants_read_looks_missing
            tenants_same_path_is_independent
            ] $($rest)* }
    };
    (($d:tt) $make:path [$mode:ident] [$($acc:tt)*] effect_keys_off $($rest:ident)*) => {
        $crate::__capability_skips! { @add ($d) $make [$mode] [$($acc)*]
            "the backend does not record effect keys (capability effect_keys is off; the runtime guards retries)"
            [
            replay_delete_returns_recorded_outcome
            replay_different_key_applies_again
            replay_edit_returns_recorded_outcome
            replay_keys_are_per_tenant
            replay_write_same_key_applies_once
            ] $($rest)* }
    };
    (($d:tt) $make:path [$mode:ident] [$($acc:tt)*] symlinks_off $($rest:ident)*) => {
        $crate::__capability_skips! { @add ($d) $make [$mode] [$($acc)*]
            "the backend cannot hold symbolic links (capability symlinks is off)"
            [
            symlinks_climbing_relative_link_is_refused
            symlinks_leading_out_are_refused
            ] $($rest)* }
    };
    (($d:tt) $make:path [$mode:ident] [$($acc:tt)*] $other:ident $($rest:ident)*) => {
        ::core::compile_error!(::core::concat!(
            "no capability skip group `", ::core::stringify!($other), "`: the groups are exec_off, ",
            "empty_dirs_off, empty_dirs_on, make_dir_off, tenants_off, effect_keys_off and symlinks_off"
        ));
    };
}

/// What `conformance_suite!` expands to: a local macro that makes the test of one
/// scenario (ignored when declared as skipped), then the scenario list through it.
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_suite {
    (($d:tt) $make:path [$($skip:ident : $reason:literal),* $(,)?] model) => {
        $crate::__conformance_suite! { ($d) $make [$($skip : $reason),*] no_model }

        /// Random operation sequences give the same results here as on the model (`StateBackend`).
        #[test]
        fn model_equivalence() -> ::core::result::Result<(), $crate::ScenarioError> {
            $crate::check_against_model(|| $make(), $crate::MODEL_CASES)
        }
    };
    (($d:tt) $make:path [$($skip:ident : $reason:literal),* $(,)?] no_model) => {
        macro_rules! __burrow_conformance_test {
            $(
                ($skip) => {
                    #[test]
                    #[ignore = $reason]
                    fn $skip() -> ::core::result::Result<(), $crate::ScenarioError> {
                        $crate::__private::run_scenario(
                            ::core::stringify!($skip),
                            $crate::__private::Expect::Skip,
                            || $make(),
                        )
                    }
                };
            )*
            ($d name:ident) => {
                #[test]
                fn $d name() -> ::core::result::Result<(), $crate::ScenarioError> {
                    $crate::__private::run_scenario(
                        ::core::stringify!($d name),
                        $crate::__private::Expect::Run,
                        || $make(),
                    )
                }
            };
        }

        $crate::__for_each_scenario! { tests __burrow_conformance_test }

        /// Fails when the generated tests and `SCENARIOS` disagree.
        #[test]
        fn conformance_table_complete() -> ::core::result::Result<(), $crate::ScenarioError> {
            $crate::__private::check_table(&$crate::__for_each_scenario! { names })
        }

        /// Every declared skip is a scenario that does skip on this backend.
        #[test]
        fn conformance_declared_skips_skip() -> ::core::result::Result<(), $crate::ScenarioError> {
            $crate::__private::check_declared_skips(
                &[$(::core::stringify!($skip)),*],
                || $make(),
            )
        }
    };
}
