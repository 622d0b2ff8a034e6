//! The one integration-test binary of burrow-cli: modules only, in `tests/all/`; each test runs the real `burrow` executable.

// `cfg(test)` so clippy treats the helper functions as test code too; every
// test works on `state:FILE.json`, so a build without `state` runs none.
#[cfg(test)]
#[cfg(feature = "state")]
mod all {
    mod batch;
    mod commands;
    mod exit_codes;
    mod json;
    #[cfg(feature = "mcp")]
    mod mcp;
    mod state_file;
    mod support;
}
