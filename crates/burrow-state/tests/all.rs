//! The one integration-test binary of burrow-state: modules only, in `tests/all/`.

#[cfg(test)]
mod all {
    mod conformance;
    mod document;
    mod index;
    mod ops;
}
