//! The shared conformance suite, run against a fresh, empty StateBackend per scenario.

use std::sync::Arc;

use burrow_backend::Limits;
use burrow_conformance::Fixture;
use burrow_state::StateBackend;

/// A store whose max_results is low enough for the suite to exceed it, so
/// `limits_max_results_caps_every_listing` runs instead of skipping.
async fn make_fixture() -> Fixture {
    let limits = Limits {
        max_results: 200,
        ..Limits::default()
    };
    Fixture::new(Arc::new(StateBackend::with_limits(limits)))
}

burrow_conformance::conformance_suite!(make_fixture);
