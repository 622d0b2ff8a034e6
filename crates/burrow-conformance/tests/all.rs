//! The one integration-test binary of burrow-conformance: modules only, in `tests/all/`.

// Test helpers outside #[test] functions may unwrap and panic too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod all {
    mod fuzz;
    mod processes;
    mod table;
    mod teeth;
}
