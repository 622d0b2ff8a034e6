//! The one integration-test binary of burrow-sqlite: modules only, in `tests/all/`.

// Helpers outside `#[test]` functions (fixtures, the worker roles) are test
// code too: a failed setup step should abort the test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod all {
    mod common;
    mod conformance;
    mod dirs;
    mod files;
    mod kv;
    mod plan;
    mod processes;
    mod quota;
    mod replay;
    mod schema;
    mod tenants;
}
