//! The one integration-test binary of burrow-artifacts: modules only, in `tests/all/`.

#[cfg(test)]
mod all {
    mod binary;
    mod drafts;
    mod kinds;
    mod notices;
    mod permissions;
    mod replay;
    mod stores;
    mod support;
    mod tools;
}
