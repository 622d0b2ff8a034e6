//! The one integration-test binary of burrow-docker: modules only, in `tests/all/`. Every test talks to a real Docker engine.

// Helpers outside `#[test]` functions (fixtures, cleanup guards) are test code too:
// a failed setup step should abort the test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod all {
    mod bounds;
    mod conformance;
    mod dockerfile;
    mod extremes;
    mod faults;
    mod links;
    mod manager;
    mod orphans;
    mod runtime;
    mod sandbox;
    mod support;
    mod traffic;
}
