//! The one integration-test binary of burrow-backend: modules only, in `tests/all/`.

// Helpers outside `#[test]` functions (fixtures, running rg) are test code too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod all {
    mod ripgrep;
}
