//! The one integration-test binary of burrow-object-store: modules only, in `tests/all/`.

#[cfg(test)]
mod all {
    mod bounds;
    mod common;
    mod concurrency;
    mod conformance_local;
    mod conformance_memory;
    mod conformance_s3;
    mod dirs;
    mod keys;
    mod limits;
    mod listing;
    mod processes;
    mod replay;
    mod s3_env;
    mod server_down;
    mod spy;
    mod tenants;
}
