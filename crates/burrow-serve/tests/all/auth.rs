//! Bearer tokens and the tenant wall: 401 without or with a wrong token, another tenant's thread and run are 404.

use serde_json::{Value, json};

use super::support::{Setup, Sse, problem, start};

#[tokio::test]
async fn no_token_or_a_wrong_one_is_401_problem_json_and_the_page_needs_none() {
    let s = start(Setup::default()).await;
    let none = s.client.get(s.url("/v1/threads")).send().await.unwrap();
    assert_eq!(none.headers()["www-authenticate"], "Bearer");
    assert_eq!(problem(none, 401).await["kind"], "unauthorized");
    let wrong = s
        .client
        .get(s.url("/v1/threads"))
        .bearer_auth(format!("{}x", s.token))
        .send()
        .await
        .unwrap();
    let body = problem(wrong, 401).await;
    assert_eq!(body["kind"], "unauthorized");
    // The token is never echoed.
    assert!(!body.to_string().contains(&s.token));
    let basic = s
        .client
        .post(s.url("/v1/threads/t1/messages"))
        .basic_auth("acme", Some(&s.token))
        .json(&json!({"content": "hi"}))
        .send()
        .await
        .unwrap();
    problem(basic, 401).await;
    // Nothing was posted by the refused request.
    let list: Value = s
        .get("/v1/threads")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list["threads"], json!([]));
    let page = s.client.get(s.url("/")).send().await.unwrap();
    assert_eq!(page.status().as_u16(), 200);
    assert!(page.text().await.unwrap().contains("<html"));
}

#[tokio::test]
async fn another_tenants_thread_and_run_are_not_found() {
    let s = start(Setup::default()).await;
    let posted: Value = s.message("t1", json!({"content": "hi"})).await;
    let run = posted["run_id"].as_str().unwrap().to_owned();
    assert_eq!(s.settled("t1").await, "completed");
    let as_other = |method: reqwest::Method, path: &str| {
        s.client.request(method, s.url(path)).bearer_auth(&s.other)
    };
    for (method, path) in [
        (reqwest::Method::GET, "/v1/threads/t1".to_owned()),
        (reqwest::Method::POST, "/v1/threads/t1/stop".to_owned()),
        (reqwest::Method::GET, format!("/v1/runs/{run}/events")),
    ] {
        let r = as_other(method, &path).send().await.unwrap();
        assert_eq!(problem(r, 404).await["kind"], "not_found", "{path}");
    }
    let r = as_other(reqwest::Method::POST, "/v1/threads/t1/answers")
        .json(&json!({"request": "q", "text": "x"}))
        .send()
        .await
        .unwrap();
    problem(r, 404).await;
    let list: Value = as_other(reqwest::Method::GET, "/v1/threads")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list["threads"], json!([]));
    // The owner still sees it, and its ended run's events replay it from the log (ADR 0344).
    let mine: Value = s
        .get("/v1/threads")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(mine["threads"][0]["thread"], "t1");
    let mut sse = Sse::new(
        s.get(&format!("/v1/runs/{run}/events"))
            .send()
            .await
            .unwrap(),
    );
    let events = sse.rest().await;
    assert_eq!(events[0].event, "run_started", "{events:?}");
    assert!(
        events
            .iter()
            .any(|e| e.data == json!({"type": "text_delta", "text": "hello from the model"}))
    );
    let end = events.last().unwrap();
    assert_eq!(end.event, "end");
    assert_eq!(end.data["outcome"], "completed");
}

#[tokio::test]
async fn the_page_loads_nothing_from_elsewhere_and_calls_only_the_public_api() {
    let s = start(Setup::default()).await;
    let r = s.client.get(s.url("/")).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    let csp = r.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(csp.starts_with("default-src 'none'"), "{csp}");
    assert!(csp.contains("connect-src 'self'"));
    let page = r.text().await.unwrap();
    assert!(
        !page.contains("http://") && !page.contains("https://"),
        "an external URL"
    );
    assert!(
        !page.contains("<script src") && !page.contains("<link"),
        "an external file"
    );
    // Every request it makes is to /v1/.
    for (at, _) in page.match_indices("fetch(") {
        let call = &page[at + 6..at + 40];
        assert!(
            call.starts_with("path") || call.starts_with("\"/v1/"),
            "{call}"
        );
    }
    for (at, _) in page.match_indices("api(\"") {
        let call = &page[at..at + 30];
        assert!(call.contains("\"/v1/"), "{call}");
    }
    assert!(page.contains("name=\"viewport\""));
}
