//! `ObjectStoreBackend::from_s3_url` takes the endpoint, region and credentials from the AWS environment variables.
//!
//! The variables are set for a child process (this test binary again,
//! running only the ignored `from_s3_url_child`), since a test must not
//! change its own process's environment.

use std::process::Command;

use burrow_backend::{Backend, FileContext, VPath};
use burrow_object_store::ObjectStoreBackend;

use super::common::{fresh_bucket, s3_endpoint};

/// The tests that need the S3 test server (`burrow_testkit::Part::S3`).
mod s3 {
    use super::*;

    #[test]
    fn from_s3_url_reads_the_aws_environment() {
        let endpoint = s3_endpoint();
        let url = format!("s3://{}/env", fresh_bucket(&endpoint));
        let exe = std::env::current_exe().expect("this test binary");
        let out = Command::new(exe)
            .args([
                "all::s3_env::s3::from_s3_url_child",
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("BURROW_TEST_S3_URL", &url)
            .env("AWS_ENDPOINT_URL", &endpoint)
            .env("AWS_ALLOW_HTTP", "true")
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ACCESS_KEY_ID", "burrow-test")
            .env("AWS_SECRET_ACCESS_KEY", "burrow-test")
            .output()
            .expect("run the child");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "the child failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Run by `from_s3_url_reads_the_aws_environment` in a child process with the variables set.
    #[tokio::test]
    #[ignore = "runs as a child of from_s3_url_reads_the_aws_environment, which sets its environment"]
    async fn from_s3_url_child() {
        let url = std::env::var("BURROW_TEST_S3_URL").expect("set by the parent test");
        let backend = ObjectStoreBackend::from_s3_url(&url).expect("backend from the environment");
        assert_eq!(
            backend.options().root,
            url.rsplit('/').next().expect("prefix")
        );
        let ctx = FileContext::for_tenant("t");
        let path = VPath::parse("/hello.txt").expect("p");
        backend.write(&ctx, &path, "hello\n").await.expect("write");
        assert_eq!(
            backend.read_bytes(&ctx, &path).await.expect("read"),
            b"hello\n"
        );
    }
}
