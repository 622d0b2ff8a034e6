//! The one integration-test binary of burrow-types: modules only, in `tests/all/`.

// `cfg(test)` so clippy treats the helper functions as test code too.
#[cfg(test)]
mod all {
    mod document_errors;
    mod golden_types;
    mod python_interop;
    mod roundtrip;
    mod support;
}
