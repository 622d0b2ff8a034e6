//! The shared conformance suite on the S3-compatible test server, beneath a fresh key prefix per scenario.
//!
//! Without `BURROW_S3_ENDPOINT` (set by `cargo xtask setup`) every test of
//! this module passes with a printed `SKIP` and its reason.

use std::sync::Arc;

use burrow_conformance::Fixture;
use burrow_object_store::ObjectStoreOptions;

use super::common::{ENDPOINT_VAR, s3_backend, s3_endpoint};

async fn make_fixture() -> Fixture {
    let Some(endpoint) = s3_endpoint() else {
        return Fixture::skip(format!(
            "{ENDPOINT_VAR} is not set; run `cargo xtask setup` (or `cargo xtask test`), which starts a local S3 server and sets it"
        ));
    };
    // Blocking setup (the bucket) off the async worker.
    let backend = tokio::task::spawn_blocking(move || {
        s3_backend(
            &endpoint,
            "conformance",
            ObjectStoreOptions::default().with_max_results(200),
        )
    })
    .await
    .expect("S3 fixture setup");
    Fixture::new(Arc::new(backend))
}

burrow_conformance::conformance_suite!(make_fixture);
