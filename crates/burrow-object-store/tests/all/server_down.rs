//! A stopped S3 server: every operation ends in a failure (never a refusal, never a hang) whose message says what happened and names no host.

use std::time::Duration;

use burrow_backend::{Backend, FileContext, GrepQuery, VPath};
use burrow_object_store::ObjectStoreOptions;

use super::common::{PrivateServer, s3_backend, s3_endpoint};

/// The tests that need the S3 test server (`burrow_testkit::Part::S3`).
mod s3 {
    use super::*;

    /// Far beyond the S3 client's own bounds (15 s of retries, 30 s per request): only a hang reaches it.
    const HANG_GUARD: Duration = Duration::from_secs(240);

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stopped_server_gives_clear_failures_not_hangs() {
        s3_endpoint();
        let mut server = tokio::task::spawn_blocking(PrivateServer::start)
            .await
            .expect("start");
        let endpoint = server.endpoint.clone();
        let backend = tokio::task::spawn_blocking(move || {
            s3_backend(&endpoint, "down", ObjectStoreOptions::default())
        })
        .await
        .expect("setup");
        let ctx = FileContext::for_tenant("t");
        let path = VPath::parse("/dir/file.txt").expect("p");
        backend
            .write(&ctx, &path, "before\n")
            .await
            .expect("write while the server runs");
        tokio::task::spawn_blocking(move || {
            server.kill();
            server
        })
        .await
        .expect("kill");
        let dir = VPath::parse("/dir").expect("p");
        let grep = GrepQuery::fixed("before");
        let results = [
            (
                "read",
                tokio::time::timeout(HANG_GUARD, backend.read(&ctx, &path, 0, 10))
                    .await
                    .map(|r| r.map(|_| ())),
            ),
            (
                "write",
                tokio::time::timeout(HANG_GUARD, backend.write(&ctx, &path, "after\n"))
                    .await
                    .map(|r| r.map(|_| ())),
            ),
            (
                "edit",
                tokio::time::timeout(HANG_GUARD, backend.edit(&ctx, &path, "before", "x", false))
                    .await
                    .map(|r| r.map(|_| ())),
            ),
            (
                "ls",
                tokio::time::timeout(HANG_GUARD, backend.ls(&ctx, &dir, 10))
                    .await
                    .map(|r| r.map(|_| ())),
            ),
            (
                "grep",
                tokio::time::timeout(HANG_GUARD, backend.grep(&ctx, &grep, &dir, 10))
                    .await
                    .map(|r| r.map(|_| ())),
            ),
            (
                "delete",
                tokio::time::timeout(HANG_GUARD, backend.delete(&ctx, &path))
                    .await
                    .map(|r| r.map(|_| ())),
            ),
        ];
        for (op, result) in results {
            let err = result
                .unwrap_or_else(|_| panic!("{op} hung with the server stopped"))
                .expect_err("the server is gone");
            assert!(
                !err.is_refusal(),
                "{op}: a failure, not a refusal: {}",
                err.message()
            );
            let message = err.message();
            assert!(
                message.contains("/dir"),
                "{op}: names the virtual path: {message}"
            );
            assert!(
                message.contains("connect") || message.contains("refused"),
                "{op}: says the server is unreachable: {message}"
            );
            assert!(
                !message.contains("127.0.0.1") && !message.contains("http"),
                "{op}: no host in the message: {message}"
            );
        }
    }
}
