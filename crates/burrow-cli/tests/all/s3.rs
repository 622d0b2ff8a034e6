//! `--backend s3://BUCKET/PREFIX`: a smoke test against the S3-compatible server `cargo xtask setup` starts (`burrow_testkit::Part::S3`; this module is named `s3` so `cargo xtask test` can skip it).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::json;

use super::spec_support::{On, paths};

/// The bucket `cargo xtask setup` creates (and this test makes sure of).
const BUCKET: &str = "burrow-tests";

/// `burrow --backend s3://burrow-tests/cli-<unique>` with the AWS variables
/// pointing at the test server; the test fails, naming the part, without one.
fn on_bucket() -> On {
    let endpoint = burrow_testkit::require(burrow_testkit::Part::S3);
    ensure_bucket(&endpoint);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let spec = format!("s3://{BUCKET}/cli-{}-{nanos}", std::process::id());
    On::new(&[spec.as_str()])
        .with_env("AWS_ENDPOINT_URL", &endpoint)
        .with_env("AWS_ALLOW_HTTP", "true")
        .with_env("AWS_REGION", "us-east-1")
        .with_env("AWS_ACCESS_KEY_ID", "burrow-test")
        .with_env("AWS_SECRET_ACCESS_KEY", "burrow-test")
}

/// Creates the bucket (an unsigned `PUT /bucket` is enough for the test
/// server; an existing bucket answers 200 or 409).
fn ensure_bucket(endpoint: &str) {
    let authority = endpoint.trim_start_matches("http://").trim_end_matches('/');
    let mut stream = TcpStream::connect(authority).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "PUT /{BUCKET} HTTP/1.1\r\nHost: {authority}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer.split_whitespace().nth(1).unwrap_or_default();
    assert!(status == "200" || status == "409", "{answer}");
}

#[test]
fn every_command_works_on_a_bucket_prefix() {
    let on = on_bucket();
    on.put("/src/main.rs", "fn main() {}\n");
    on.put("/README.md", "# demo\nsee src\n");
    // Each command is a new process: the objects are in the bucket.
    assert_eq!(on.ls("/"), ["/README.md", "/src"]);
    assert_eq!(on.cat("/src/main.rs"), b"fn main() {}\n");
    on.run(&["edit", "/README.md", "--old", "src", "--new", "/src"])
        .assert_code(0);
    assert_eq!(
        on.run(&["read", "/README.md", "--offset", "1"]).out(),
        "     2\tsee /src\n"
    );
    assert_eq!(
        on.json_ok(&["grep", "fn \\w+"]),
        json!({"matches": [{"path": "/src/main.rs", "line_number": 1, "line": "fn main() {}"}], "truncated": false})
    );
    assert_eq!(paths(&on.json_ok(&["glob", "**/*.rs"])), ["/src/main.rs"]);
    on.run(&["rm", "/src/main.rs"]).assert_code(0);
    assert_eq!(on.ls("/"), ["/README.md"]);
    // Tenants are key prefixes: another tenant sees nothing.
    assert!(on.as_tenant("other").ls("/").is_empty());
}

#[test]
fn a_server_that_does_not_answer_is_a_failure() {
    let on = on_bucket();
    // Port 9 (discard) on loopback: nothing listens there.
    let on = on.with_env("AWS_ENDPOINT_URL", "http://127.0.0.1:9");
    let run = on.run(&["--json", "ls"]);
    run.assert_json_error(2, "failure");
}
