//! The one integration-test binary of burrow-docker: modules only, in `tests/all/`. Every test talks to a real Docker engine.

// Helpers outside `#[test]` functions (fixtures, cleanup guards) are test code too:
// a failed setup step should abort the test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod all {
    mod conformance;
    mod dockerfile;
    mod faults;
    mod manager;
    mod runtime;
    mod sandbox;
    mod support;
}
