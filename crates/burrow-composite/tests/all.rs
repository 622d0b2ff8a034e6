//! The one integration-test binary of burrow-composite: it only declares the modules under `tests/all/`.

// Helpers outside `#[test]` functions unwrap too: a failed step is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "all/support.rs"]
mod support;

#[path = "all/conformance.rs"]
mod conformance;
#[path = "all/model.rs"]
mod model;
#[path = "all/resolver.rs"]
mod resolver;
#[path = "all/routing.rs"]
mod routing;
#[path = "all/search.rs"]
mod search;
#[path = "all/shadowing.rs"]
mod shadowing;
