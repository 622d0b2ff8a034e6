//! Engine faults a real engine cannot be made to produce, on a fake engine (wiremock): unreachable, silent, and failing mid-operation.

use std::time::{Duration, Instant};

use base64::Engine as _;
use burrow_backend::{Backend, FileContext, VPath};
use burrow_docker::{Docker, DockerOptions, DockerSandbox};
use wiremock::matchers::{method, path_regex, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::support::IMAGE;

fn http(addr: &str) -> Docker {
    Docker::connect_with_http(addr, 5, bollard::API_DEFAULT_VERSION).unwrap()
}

fn options() -> DockerOptions {
    DockerOptions::default().with_connect_timeout(Duration::from_secs(2))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_engine_fails_fast_and_clearly() {
    // Nothing listens on port 1.
    let started = Instant::now();
    let err = DockerSandbox::start_on(http("http://127.0.0.1:1"), IMAGE, options())
        .await
        .unwrap_err();
    assert!(!err.is_refusal());
    assert!(err.message().contains("not reachable"), "{}", err.message());
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    // A socket that does not exist: the message does not show its host path.
    let err = burrow_docker::connect_to("unix:///nonexistent/burrow-test/docker.sock", &options())
        .await
        .unwrap_err();
    assert!(!err.is_refusal());
    assert!(!err.message().contains("/nonexistent"), "{}", err.message());
    assert!(err.message().contains("not reachable"), "{}", err.message());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_engine_fails_within_the_connect_timeout() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path_regex("/version$"))
        .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(60)))
        .mount(&server)
        .await;
    let started = Instant::now();
    let err = DockerSandbox::start_on(http(&server.uri()), IMAGE, options())
        .await
        .unwrap_err();
    assert!(!err.is_refusal());
    assert!(
        err.message().contains("did not answer within 2 s"),
        "{}",
        err.message()
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
}

/// The engine's stat header for a directory.
fn dir_stat() -> String {
    let stat = serde_json::json!({
        "name": "workspace", "size": 4096, "mode": 2_147_484_141u32,
        "mtime": "2026-11-30T08:00:00Z", "linkTarget": ""
    });
    base64::engine::general_purpose::STANDARD.encode(stat.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_errors_mid_operation_are_failures_without_host_paths() {
    let server = MockServer::start().await;
    let ok_json = |body: serde_json::Value| ResponseTemplate::new(200).set_body_json(body);
    for (verb, path, response) in [
        (
            "GET",
            "/version$",
            ok_json(serde_json::json!({"ApiVersion": "1.41", "Version": "20.10.24"})),
        ),
        (
            "GET",
            "/images/.*/json$",
            ok_json(serde_json::json!({"Id": "sha256:feed"})),
        ),
        (
            "POST",
            "/containers/create$",
            ResponseTemplate::new(201)
                .set_body_json(serde_json::json!({"Id": "fake", "Warnings": []})),
        ),
        (
            "POST",
            "/containers/fake/start$",
            ResponseTemplate::new(204),
        ),
        (
            "GET",
            "/containers/fake/json$",
            ok_json(serde_json::json!({"Id": "fake", "State": {"Running": true}})),
        ),
        ("DELETE", "/containers/fake$", ResponseTemplate::new(204)),
    ] {
        Mock::given(method(verb))
            .and(path_regex(path))
            .respond_with(response)
            .mount(&server)
            .await;
    }
    Mock::given(method("HEAD"))
        .and(path_regex("/containers/fake/archive$"))
        .and(query_param("path", "/workspace"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("X-Docker-Container-Path-Stat", dir_stat().as_str()),
        )
        .mount(&server)
        .await;
    Mock::given(method("HEAD"))
        .and(path_regex("/containers/fake/archive$"))
        .respond_with(
            ResponseTemplate::new(404)
                .set_body_json(serde_json::json!({"message": "Could not find the file"})),
        )
        .mount(&server)
        .await;
    let host_path = "/var/lib/docker/overlay2/0123abcd/merged/workspace/a.txt";
    Mock::given(method("PUT"))
        .and(path_regex("/containers/fake/archive$"))
        .respond_with(ResponseTemplate::new(500).set_body_json(serde_json::json!({
            "message": format!("Error processing tar file(exit status 1): open {host_path}: no space left on device")
        })))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path_regex("/containers/fake/archive$"))
        .respond_with(ResponseTemplate::new(500).set_body_json(
            serde_json::json!({"message": "lstat /var/lib/docker/x: input/output error"}),
        ))
        .mount(&server)
        .await;

    let sandbox = DockerSandbox::start_on(http(&server.uri()), IMAGE, options())
        .await
        .unwrap();
    let ctx = FileContext::default();
    let err = sandbox
        .write(&ctx, &VPath::parse("/a.txt").unwrap(), "x")
        .await
        .unwrap_err();
    assert!(!err.is_refusal());
    assert!(
        err.message().contains("no space left on device"),
        "{}",
        err.message()
    );
    assert!(
        !err.message().contains("/var/lib/docker"),
        "{}",
        err.message()
    );
    // A pattern with no required literal is answered from the subtree's
    // archive (a literal would first run `grep -F` in the sandbox).
    let err = sandbox
        .grep(
            &ctx,
            &burrow_backend::GrepQuery::regex("[a-z]+x"),
            &VPath::root(),
            10,
        )
        .await
        .unwrap_err();
    assert!(!err.is_refusal());
    assert!(
        err.message().contains("input/output error"),
        "{}",
        err.message()
    );
    assert!(
        !err.message().contains("/var/lib/docker"),
        "{}",
        err.message()
    );
    // A missing file is a refusal, not a failure.
    let err = sandbox
        .read(&ctx, &VPath::parse("/missing.txt").unwrap(), 0, 1)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), burrow_backend::ErrorKind::NotFound);
    sandbox.close().await.unwrap();
}
