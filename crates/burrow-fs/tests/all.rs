//! The one integration-test binary of burrow-fs: modules only, in `tests/all/`.

// Helpers outside `#[test]` functions (fixtures, the swapper thread, the
// crash child) are test code too: a failed setup step should abort the test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod all {
    mod conformance;
    mod crash;
    mod escapes;
    mod processes;
    mod race;
    mod semantics;
    mod support;
}
