//! The server's limits: a slowloris client is cut off, an oversize body is refused (413) and posts nothing, the watcher bound, and a graceful shutdown that ends watchers with `end`.

use std::time::{Duration, Instant};

use burrow_serve::Limits;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::support::{Setup, Sse, problem, start};

#[tokio::test]
async fn a_client_that_sends_its_headers_slowly_is_cut_off() {
    let s = start(Setup {
        limits: Limits {
            header_timeout: Duration::from_millis(300),
            ..Limits::default()
        },
        ..Setup::default()
    })
    .await;
    let addr = s.base.trim_start_matches("http://").to_owned();
    let mut conn = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let started = Instant::now();
    conn.write_all(b"GET /v1/threads HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    // One header byte every 50 ms: never a whole request.
    let mut cut = false;
    for _ in 0..100 {
        if conn.write_all(b"X").await.is_err() {
            cut = true;
            break;
        }
        let mut buf = [0u8; 256];
        match tokio::time::timeout(Duration::from_millis(50), conn.read(&mut buf)).await {
            Ok(Ok(_)) | Ok(Err(_)) => {
                cut = true;
                break;
            }
            Err(_) => {}
        }
    }
    assert!(cut, "the slow client was never cut off");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    // The server still serves others.
    let r = s.get("/v1/threads").send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
}

#[tokio::test]
async fn an_oversize_body_is_refused_and_posts_nothing() {
    let s = start(Setup {
        limits: Limits {
            body_bytes: 1024,
            ..Limits::default()
        },
        ..Setup::default()
    })
    .await;
    let r = s
        .post(
            "/v1/threads/t1/messages",
            json!({"content": "x".repeat(4096)}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r, 413).await["kind"], "too_large");
    let r = s.get("/v1/threads/t1").send().await.unwrap();
    problem(r, 404).await;
    let ok = s
        .post("/v1/threads/t1/messages", json!({"content": "small"}))
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status().as_u16(), 202);
}

#[tokio::test]
async fn watchers_past_the_bound_are_refused_until_one_leaves() {
    let s = start(Setup {
        gated: true,
        limits: Limits {
            watchers: 1,
            ..Limits::default()
        },
        ..Setup::default()
    })
    .await;
    let v: Value = s.message("t1", json!({"content": "go"})).await;
    let path = format!("/v1/runs/{}/events", v["run_id"].as_str().unwrap());
    let mut first = Sse::new(s.get(&path).send().await.unwrap());
    let second = s.get(&path).send().await.unwrap();
    assert_eq!(problem(second, 503).await["kind"], "unavailable");
    s.gate.add_permits(1);
    first.rest().await;
    // The first watcher's place is free once its stream ended.
    let mut third = None;
    for _ in 0..40 {
        let r = s.get(&path).send().await.unwrap();
        if r.status().as_u16() == 200 {
            third = Some(Sse::new(r));
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let events = third.expect("a place for a new watcher").rest().await;
    assert_eq!(events.last().unwrap().event, "end");
}

#[tokio::test]
async fn shutdown_hands_the_runs_it_holds_back_and_ends_their_watchers_with_handed_over() {
    let mut s = start(Setup {
        gated: true,
        ..Setup::default()
    })
    .await;
    let v: Value = s.message("t1", json!({"content": "go"})).await;
    let run = v["run_id"].as_str().unwrap().to_owned();
    let mut sse = Sse::new(
        s.get(&format!("/v1/runs/{run}/events"))
            .send()
            .await
            .unwrap(),
    );
    assert_eq!(sse.next().await.unwrap().event, "run_started");
    s.shut_down().await;
    let rest = sse.rest().await;
    let end = rest.last().unwrap();
    assert_eq!(end.event, "end");
    assert_eq!(end.data["outcome"], "handed_over", "{rest:?}");
    // Handed back, not ended: the next claimant carries it on (ADR 0345).
    let scope = burrow_runtime::session::Scope::new("acme", "default");
    let record = s.store.run(&scope, &run).await.unwrap().unwrap();
    assert_eq!(record.status, burrow_runtime::session::RunStatus::Running);
    assert!(
        s.store.claim(&scope.thread("t1")).await.unwrap().is_none(),
        "the claim was released"
    );
    // The listener is closed.
    assert!(reqwest::Client::new().get(s.url("/")).send().await.is_err());
}

#[tokio::test]
async fn a_client_that_sends_its_body_slowly_is_refused_and_posts_nothing() {
    let s = start(Setup {
        limits: Limits {
            body_timeout: Duration::from_millis(300),
            ..Limits::default()
        },
        ..Setup::default()
    })
    .await;
    let addr = s.base.trim_start_matches("http://").to_owned();
    let mut conn = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let head = format!(
        "POST /v1/threads/slow/messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"content\":",
        s.token
    );
    conn.write_all(head.as_bytes()).await.unwrap();
    let started = Instant::now();
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), conn.read_to_end(&mut answer)).await;
    assert!(read.is_ok(), "the slow body was never cut off");
    assert!(started.elapsed() < Duration::from_secs(3));
    let text = String::from_utf8_lossy(&answer);
    // Either a 400 problem or a closed connection; never a posted message.
    assert!(
        text.is_empty() || text.starts_with("HTTP/1.1 400"),
        "{text}"
    );
    let r = s.get("/v1/threads/slow").send().await.unwrap();
    problem(r, 404).await;
}

#[tokio::test]
async fn an_idle_kept_alive_connection_is_closed_after_the_header_timeout() {
    let s = start(Setup {
        limits: Limits {
            header_timeout: Duration::from_millis(300),
            ..Limits::default()
        },
        ..Setup::default()
    })
    .await;
    let addr = s.base.trim_start_matches("http://").to_owned();
    let mut conn = tokio::net::TcpStream::connect(&addr).await.unwrap();
    conn.write_all(b"GET /v1/openapi.json HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut first = [0u8; 12];
    conn.read_exact(&mut first).await.unwrap();
    assert_eq!(&first, b"HTTP/1.1 200");
    // Read the rest of the answer, then stay idle: the server closes the connection.
    let started = Instant::now();
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(5), conn.read_to_end(&mut rest)).await;
    assert!(closed.is_ok(), "the idle connection was kept open");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}
