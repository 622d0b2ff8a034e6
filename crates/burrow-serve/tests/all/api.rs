//! The thread endpoints: messages (start, steer, answer, dedupe by command id from 4 clients), a thread's view, answers, stop, and their problem+json refusals.

use burrow_runtime::model::ScriptedResponse;
use burrow_runtime::runner::ASK_USER;
use serde_json::{Value, json};

use super::support::{Setup, problem, start};

#[tokio::test]
async fn a_message_starts_a_run_whose_answer_the_thread_shows() {
    let s = start(Setup::default()).await;
    let r = s
        .post("/v1/threads/t1/messages", json!({"content": "say hello"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 202);
    assert!(r.headers().get("idempotent-replayed").is_none());
    let posted: Value = r.json().await.unwrap();
    assert_eq!(posted["action"], "started");
    assert_eq!(posted["thread"], "t1");
    assert!(posted["message_id"].as_str().unwrap().starts_with("msg_"));
    let run = posted["run_id"].as_str().unwrap();
    assert_eq!(s.settled("t1").await, "completed");
    let view: Value = s
        .get("/v1/threads/t1")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(view["thread"]["thread"], "t1");
    assert_eq!(view["runs"][0]["run_id"], run);
    let texts: Vec<String> = view["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["message"].to_string())
        .collect();
    assert!(texts.iter().any(|t| t.contains("say hello")), "{texts:?}");
    assert!(
        texts.iter().any(|t| t.contains("hello from the model")),
        "{texts:?}"
    );
    assert_eq!(view["pending"], json!([]));
    let list: Value = s
        .get("/v1/threads?limit=1")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list["threads"][0]["thread"], "t1");
    assert_eq!(list["next"], "t1");
    let after: Value = s
        .get("/v1/threads?after=t1")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(after["threads"], json!([]));
    assert_eq!(after["next"], Value::Null);
}

#[tokio::test]
async fn one_command_id_from_four_clients_at_once_is_carried_out_once() {
    let s = start(Setup::default()).await;
    let sends = (0..4).map(|_| {
        let req = s.post(
            "/v1/threads/t1/messages",
            json!({"content": "once only", "command_id": "cmd-1"}),
        );
        async move {
            let r = req.send().await.unwrap();
            let replayed = r
                .headers()
                .get("idempotent-replayed")
                .map(|v| v.to_str().unwrap().to_owned());
            let body: Value = r.json().await.unwrap();
            (replayed, body)
        }
    });
    let results = futures::future::join_all(sends).await;
    let first: Vec<_> = results.iter().filter(|(h, _)| h.is_none()).collect();
    let repeats: Vec<_> = results
        .iter()
        .filter(|(h, _)| h.as_deref() == Some("true"))
        .collect();
    assert_eq!(first.len(), 1, "{results:?}");
    assert_eq!(repeats.len(), 3, "{results:?}");
    let id = &first[0].1["message_id"];
    for (_, body) in &repeats {
        assert_eq!(body["action"], "remembered");
        assert_eq!(&body["message_id"], id);
    }
    assert_eq!(s.settled("t1").await, "completed");
    // Once more, later: remembered, and nothing is posted.
    let again = s
        .post(
            "/v1/threads/t1/messages",
            json!({"content": "once only", "command_id": "cmd-1"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    let view: Value = s
        .get("/v1/threads/t1")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let posted = view["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["message"].to_string().contains("once only"))
        .count();
    assert_eq!(posted, 1);
    assert_eq!(view["runs"].as_array().unwrap().len(), 1);
    assert_eq!(s.requests.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_message_to_a_running_thread_steers_it() {
    let s = start(Setup {
        gated: true,
        script: vec![
            ScriptedResponse::text("first"),
            ScriptedResponse::text("second"),
        ],
        ..Setup::default()
    })
    .await;
    let started: Value = s.message("t1", json!({"content": "go"})).await;
    assert_eq!(started["action"], "started");
    let steered: Value = s.message("t1", json!({"content": "and also this"})).await;
    assert_eq!(steered["action"], "steered");
    assert_eq!(steered["run_id"], started["run_id"]);
    s.gate.add_permits(10);
    let view = s.until_history("t1", "and also this").await;
    assert_eq!(
        view["runs"].as_array().unwrap().last().unwrap()["status"],
        "completed"
    );
}

#[tokio::test]
async fn a_question_pauses_the_run_and_an_answer_resumes_it() {
    let s = start(Setup {
        script: vec![
            ScriptedResponse::calls().call("q1", ASK_USER, json!({"question": "which colour?"})),
            ScriptedResponse::text("blue it is"),
        ],
        ..Setup::default()
    })
    .await;
    let posted: Value = s.message("t1", json!({"content": "paint it"})).await;
    assert_eq!(s.settled("t1").await, "paused");
    let view: Value = s
        .get("/v1/threads/t1")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let pending = &view["pending"][0];
    assert_eq!(pending["kind"], "question");
    assert_eq!(pending["run_id"], posted["run_id"]);
    let request = pending["request_id"].as_str().unwrap().to_owned();
    // A question needs text; an unknown request is not found.
    let r = s
        .post(
            "/v1/threads/t1/answers",
            json!({"request": request, "approve": true}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r, 400).await["kind"], "invalid_argument");
    let r = s
        .post(
            "/v1/threads/t1/answers",
            json!({"request": "nope", "text": "x"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r, 404).await["kind"], "not_found");
    let answered: Value = s
        .post(
            "/v1/threads/t1/answers",
            json!({"request": request, "text": "blue", "command_id": "a1"}),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(answered["action"], "answered");
    assert_eq!(answered["resumed"], true);
    assert_eq!(s.settled("t1").await, "completed");
    let again = s
        .post(
            "/v1/threads/t1/answers",
            json!({"request": request, "text": "blue", "command_id": "a1"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    let again: Value = again.json().await.unwrap();
    assert_eq!(again["result"]["type"], "answered");
    // Nothing is paused now: an answer is refused.
    let r = s
        .post(
            "/v1/threads/t1/answers",
            json!({"request": request, "text": "red"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r, 409).await["kind"], "invalid_state");
    let view: Value = s
        .get("/v1/threads/t1")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(view["history"].to_string().contains("blue it is"));
}

#[tokio::test]
async fn stop_ends_a_running_run_stopped_and_an_idle_thread_has_nothing_to_stop() {
    let s = start(Setup {
        gated: true,
        ..Setup::default()
    })
    .await;
    let posted: Value = s.message("t1", json!({"content": "go"})).await;
    let stopped: Value = s
        .post("/v1/threads/t1/stop", json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(stopped["run_id"], posted["run_id"]);
    assert_eq!(stopped["requested"], true);
    assert_eq!(s.settled("t1").await, "stopped");
    let idle: Value = s
        .post("/v1/threads/t1/stop", json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(idle["requested"], false);
    assert_eq!(idle["run_id"], Value::Null);
    let r = s
        .post("/v1/threads/none/stop", json!({}))
        .send()
        .await
        .unwrap();
    problem(r, 404).await;
}

#[tokio::test]
async fn bad_requests_are_problem_json_and_change_nothing() {
    let s = start(Setup::default()).await;
    let bad_json = s
        .client
        .post(s.url("/v1/threads/t1/messages"))
        .bearer_auth(&s.token)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(problem(bad_json, 400).await["kind"], "invalid_argument");
    for body in [
        json!({}),
        json!({"content": ""}),
        json!({"content": "x", "extra": 1}),
        json!({"content": "x", "command_id": ""}),
    ] {
        let r = s
            .post("/v1/threads/t1/messages", body.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(problem(r, 400).await["kind"], "invalid_argument", "{body}");
    }
    let r = s.get("/v1/threads/missing").send().await.unwrap();
    let p = problem(r, 404).await;
    assert_eq!(p["kind"], "not_found");
    assert!(p["detail"].as_str().unwrap().contains("\"missing\""));
    let r = s.get("/v1/threads?limit=0").send().await.unwrap();
    problem(r, 400).await;
    let r = s.get("/v1/nothing-here").send().await.unwrap();
    problem(r, 404).await;
    let list: Value = s
        .get("/v1/threads")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list["threads"], json!([]));
}

#[tokio::test]
async fn a_run_that_ended_before_the_response_is_still_named_started() {
    // Ungated: the scripted run may well end before the handler looks.
    let s = start(Setup::default()).await;
    for i in 0..20 {
        let thread = format!("quick{i}");
        let posted: Value = s
            .post(
                &format!("/v1/threads/{thread}/messages"),
                json!({"content": "go"}),
            )
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(posted["action"], "started", "{posted}");
        let run = posted["run_id"].as_str().expect("a run id").to_owned();
        s.settled(&thread).await;
        let view: Value = s
            .get(&format!("/v1/threads/{thread}"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(view["runs"][0]["run_id"], run.as_str());
    }
}
