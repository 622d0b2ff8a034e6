//! The shared conformance suite on the S3-compatible test server, beneath a fresh key prefix per scenario.
//!
//! The tests live in a module named `s3` and need `BURROW_S3_ENDPOINT` (set by
//! `cargo xtask setup`): without it each fails naming the part, and `cargo xtask test`
//! reports them as skipped.

use std::sync::Arc;

use burrow_conformance::Fixture;
use burrow_object_store::ObjectStoreOptions;

use super::common::{Objects, s3_backend, s3_endpoint};

async fn make_fixture() -> Fixture {
    let endpoint = s3_endpoint();
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
    let backend = Arc::new(backend);
    Fixture::new(backend.clone()).with_store(Objects(backend))
}

/// The generated tests, in a module named `s3` so the part's filter selects them.
mod s3 {
    use super::make_fixture;

    burrow_conformance::conformance_suite!(make_fixture,
        capability_skips = [empty_dirs_off, exec_off, symlinks_off],
        skips = {
            host_fifo_is_never_opened: "an object store holds no special files (the fixture lends no host access)",
            write_replace_keeps_created_at: "objects have no creation time and the backend keeps no created_at (see ObjectStoreBackend)",
        },
    );
}
