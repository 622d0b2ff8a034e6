//! The one integration-test binary of burrow-permissions: it only declares the modules under `tests/all/`.

// Helpers outside `#[test]` functions unwrap too: a failed step is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "all/conformance.rs"]
mod conformance;
#[path = "all/property.rs"]
mod property;
#[path = "all/rules.rs"]
mod rules;
#[path = "all/scenarios.rs"]
mod scenarios;
#[path = "all/settings.rs"]
mod settings;
