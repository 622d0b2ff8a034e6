//! The artifact workspace over HTTP against a served runner whose workspace lives in its real SQLite file: list, show, history, create, edit, archive, proposals, apply and reject as the token's person; conflicts and validation as problems naming the head and the paths; a refusal changes nothing; the tenant wall; a server without a workspace; the OpenAPI document.

use burrow_artifacts::{Actor, Change};
use burrow_runtime::session::Scope;
use serde_json::{Value, json};

use super::support::{Served, Setup, problem, start};

async fn served() -> Served {
    start(Setup {
        artifacts: true,
        ..Setup::default()
    })
    .await
}

async fn json_of(r: reqwest::Response, status: u16) -> Value {
    assert_eq!(r.status().as_u16(), status);
    r.json().await.unwrap()
}

/// Creates a plan as alice and returns its id.
async fn create(s: &Served, title: &str, text: &str) -> String {
    let r = s
        .post(
            "/v1/artifacts",
            json!({"kind": "plan", "snapshot": {"title": title, "text": text}}),
        )
        .send()
        .await
        .unwrap();
    let v = json_of(r, 201).await;
    v["artifact"]["id"].as_str().unwrap().to_owned()
}

async fn head(s: &Served, id: &str) -> Value {
    json_of(
        s.get(&format!("/v1/artifacts/{id}")).send().await.unwrap(),
        200,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_creates_edits_reads_and_archives_artifacts_over_http() {
    let s = served().await;
    let r = s
        .post(
            "/v1/artifacts",
            json!({"kind": "plan", "snapshot": {"title": "Fence", "text": "paint it green"}}),
        )
        .send()
        .await
        .unwrap();
    let created = json_of(r, 201).await;
    let id = created["artifact"]["id"].as_str().unwrap().to_owned();
    assert_eq!(created["artifact"]["version"], 1);
    assert_eq!(
        created["artifact"]["created_by"],
        json!({"type": "person", "name": "alice"})
    );
    assert_eq!(created["revision"]["op"], "create");
    assert!(created["seq"].as_u64().unwrap() >= 1);

    let listed = json_of(s.get("/v1/artifacts").send().await.unwrap(), 200).await;
    assert_eq!(listed["artifacts"].as_array().unwrap().len(), 1);
    assert_eq!(
        listed["artifacts"][0]["rendered"],
        "# Fence\n\npaint it green"
    );

    // A JSON Patch against the head, then an anchored text edit against the next one.
    let patched = s
        .post(
            &format!("/v1/artifacts/{id}/edits"),
            json!({"base": 1, "patch": [{"op": "replace", "path": "/title", "value": "Fence, north"}],
                   "summary": "say which fence"}),
        )
        .send()
        .await
        .unwrap();
    let patched = json_of(patched, 200).await;
    assert_eq!(patched["artifact"]["version"], 2);
    assert_eq!(patched["revision"]["summary"], "say which fence");
    let edited = s
        .post(
            &format!("/v1/artifacts/{id}/edits"),
            json!({"base": 2, "old": "green", "new": "blue"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(json_of(edited, 200).await["artifact"]["version"], 3);

    // A stale edit: a conflict naming the head and the changes since, nothing written.
    let stale = s
        .post(
            &format!("/v1/artifacts/{id}/edits"),
            json!({"base": 1, "old": "paint", "new": "sand"}),
        )
        .send()
        .await
        .unwrap();
    let conflict = problem(stale, 409).await;
    assert_eq!(conflict["kind"], "conflict");
    assert_eq!(conflict["head"], 3);
    let since = conflict["changes_since"].as_array().unwrap();
    assert_eq!(since.len(), 2);
    assert_eq!(since[0]["version"], 2);
    assert_eq!(since[0]["actor"]["name"], "alice");
    assert_eq!(since[1]["op"], "edit_text");

    // Refusals, each changing nothing: a snapshot that does not fit (with its
    // paths), an unknown kind, an anchor not found, a patch that cannot apply,
    // neither patch nor old/new, bad JSON, a missing artifact.
    let invalid = s
        .post(
            "/v1/artifacts",
            json!({"kind": "plan", "snapshot": {"title": 5, "text": "x"}}),
        )
        .send()
        .await
        .unwrap();
    let invalid = problem(invalid, 422).await;
    assert_eq!(invalid["kind"], "validation");
    assert_eq!(invalid["paths"], json!(["/title"]));
    let r = s
        .post(
            &format!("/v1/artifacts/{id}/edits"),
            json!({"base": 3, "patch": [{"op": "add", "path": "/colour", "value": "blue"}]}),
        )
        .send()
        .await
        .unwrap();
    let invalid_edit = problem(r, 422).await;
    assert_eq!(invalid_edit["kind"], "validation");
    assert_eq!(invalid_edit["paths"], json!([""]));
    let r = s
        .post("/v1/artifacts", json!({"kind": "poem", "snapshot": {}}))
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r, 422).await["kind"], "unknown_kind");
    let r = s
        .post(
            &format!("/v1/artifacts/{id}/edits"),
            json!({"base": 3, "old": "purple", "new": "red"}),
        )
        .send()
        .await
        .unwrap();
    let edit = problem(r, 422).await;
    assert_eq!(edit["kind"], "edit");
    assert_eq!(edit["occurrences"], 0);
    let r = s
        .post(
            &format!("/v1/artifacts/{id}/edits"),
            json!({"base": 3, "patch": [{"op": "remove", "path": "/nothing"}]}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r, 422).await["kind"], "patch");
    let r = s
        .post(&format!("/v1/artifacts/{id}/edits"), json!({"base": 3}))
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r, 400).await["kind"], "invalid_argument");
    let r = s
        .client
        .post(s.url("/v1/artifacts"))
        .bearer_auth(&s.token)
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r, 400).await["kind"], "invalid_argument");
    let r = s.get("/v1/artifacts/plan-999").send().await.unwrap();
    assert_eq!(problem(r, 404).await["kind"], "not_found");
    let now = head(&s, &id).await;
    assert_eq!(now["artifact"]["version"], 3);
    assert_eq!(now["rendered"], "# Fence, north\n\npaint it blue");
    let listed = json_of(s.get("/v1/artifacts").send().await.unwrap(), 200).await;
    assert_eq!(listed["artifacts"].as_array().unwrap().len(), 1);

    // An older version, and the history.
    let v1 = json_of(
        s.get(&format!("/v1/artifacts/{id}?version=1"))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(v1["artifact"]["version"], 1);
    assert_eq!(v1["head_version"], 3);
    assert_eq!(v1["rendered"], "# Fence\n\npaint it green");
    let r = s
        .get(&format!("/v1/artifacts/{id}?version=9"))
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r, 404).await["kind"], "not_found");
    let r = s
        .get(&format!("/v1/artifacts/{id}?colour=red"))
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r, 400).await["kind"], "invalid_argument");
    let history = json_of(
        s.get(&format!("/v1/artifacts/{id}/history"))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    let ops: Vec<&str> = history["revisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["op"].as_str().unwrap())
        .collect();
    assert_eq!(ops, ["create", "patch", "edit_text"]);

    // Archived: readable, listed only with all=true, takes no more changes.
    let r = s
        .post(&format!("/v1/artifacts/{id}/archive"), json!({"base": 3}))
        .send()
        .await
        .unwrap();
    assert_eq!(json_of(r, 200).await["artifact"]["archived"], true);
    let r = s
        .post(
            &format!("/v1/artifacts/{id}/edits"),
            json!({"base": 4, "old": "blue", "new": "red"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r, 409).await["kind"], "invalid_state");
    let listed = json_of(s.get("/v1/artifacts").send().await.unwrap(), 200).await;
    assert_eq!(listed["artifacts"], json!([]));
    let all = json_of(
        s.get("/v1/artifacts?all=true&kind=plan")
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(all["artifacts"].as_array().unwrap().len(), 1);
    assert_eq!(head(&s, &id).await["artifact"]["version"], 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_applies_and_rejects_an_agent_s_proposals_over_http() {
    let s = served().await;
    let id = create(&s, "Fence", "paint it green").await;
    let store = s.artifacts.clone().unwrap();
    let scope = Scope::new("acme", "default");
    let agent = Actor::agent("thread:t1", "run_1");
    let edit = |old: &str, new: &str| Change::EditText {
        id: id.clone(),
        base_version: 1,
        field: "/text".to_owned(),
        old: old.to_owned(),
        new: new.to_owned(),
        summary: None,
    };
    for (old, new, why) in [
        ("green", "blue", "blue lasts"),
        ("paint", "stain", "stain soaks in"),
        ("it", "the boards", "say what"),
    ] {
        store
            .propose(&scope, &agent, edit(old, new), why)
            .await
            .unwrap();
    }
    let pending = json_of(s.get("/v1/proposals").send().await.unwrap(), 200).await;
    let pending = pending["proposals"].as_array().unwrap();
    assert_eq!(pending.len(), 3);
    assert_eq!(pending[0]["rationale"], "blue lasts");
    assert_eq!(pending[0]["status"]["status"], "pending");

    // Applied: attributed to its proposer, naming the proposal.
    let r = s
        .post("/v1/proposals/1/apply", json!({}))
        .send()
        .await
        .unwrap();
    let applied = json_of(r, 200).await;
    assert_eq!(applied["artifact"]["version"], 2);
    assert_eq!(applied["revision"]["proposal"], 1);
    assert_eq!(applied["revision"]["actor"]["name"], "thread:t1");
    // Applied again: decided. Another made against version 1: a conflict, left pending.
    let r = s
        .post("/v1/proposals/1/apply", json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r, 409).await["kind"], "invalid_state");
    let r = s
        .post("/v1/proposals/2/apply", json!({}))
        .send()
        .await
        .unwrap();
    let conflict = problem(r, 409).await;
    assert_eq!(conflict["kind"], "conflict");
    assert_eq!(conflict["head"], 2);
    assert_eq!(head(&s, &id).await["artifact"]["version"], 2);

    // Rejected with a reason, and with an empty body.
    let r = s
        .post("/v1/proposals/2/reject", json!({"reason": "not stain"}))
        .send()
        .await
        .unwrap();
    let rejected = json_of(r, 200).await;
    assert_eq!(rejected["proposal"]["status"]["status"], "rejected");
    assert_eq!(rejected["proposal"]["status"]["by"]["name"], "alice");
    assert_eq!(rejected["proposal"]["status"]["reason"], "not stain");
    let r = s
        .client
        .post(s.url("/v1/proposals/3/reject"))
        .bearer_auth(&s.token)
        .send()
        .await
        .unwrap();
    assert_eq!(
        json_of(r, 200).await["proposal"]["status"]["status"],
        "rejected"
    );
    let r = s
        .post("/v1/proposals/9/apply", json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r, 404).await["kind"], "not_found");
    let r = s
        .post("/v1/proposals/one/apply", json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r, 400).await["kind"], "invalid_argument");

    let pending = json_of(s.get("/v1/proposals").send().await.unwrap(), 200).await;
    assert_eq!(pending["proposals"], json!([]));
    let all = json_of(s.get("/v1/proposals?all=true").send().await.unwrap(), 200).await;
    assert_eq!(all["proposals"].as_array().unwrap().len(), 3);
    assert_eq!(head(&s, &id).await["artifact"]["version"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_tenant_neither_sees_nor_changes_the_workspace() {
    let s = served().await;
    let id = create(&s, "Fence", "paint it green").await;
    s.artifacts
        .clone()
        .unwrap()
        .propose(
            &Scope::new("acme", "default"),
            &Actor::agent("thread:t1", "run_1"),
            Change::Archive {
                id: id.clone(),
                base_version: 1,
            },
            "done with it",
        )
        .await
        .unwrap();
    let as_other = |method: reqwest::Method, path: &str| {
        s.client.request(method, s.url(path)).bearer_auth(&s.other)
    };
    let listed = json_of(
        as_other(reqwest::Method::GET, "/v1/artifacts")
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(listed["artifacts"], json!([]));
    let proposals = json_of(
        as_other(reqwest::Method::GET, "/v1/proposals")
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(proposals["proposals"], json!([]));
    for path in [
        format!("/v1/artifacts/{id}"),
        format!("/v1/artifacts/{id}/history"),
    ] {
        let r = as_other(reqwest::Method::GET, &path).send().await.unwrap();
        assert_eq!(problem(r, 404).await["kind"], "not_found");
    }
    let r = as_other(reqwest::Method::POST, &format!("/v1/artifacts/{id}/edits"))
        .json(&json!({"base": 1, "old": "green", "new": "red"}))
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r, 404).await["kind"], "not_found");
    let r = as_other(reqwest::Method::POST, "/v1/proposals/1/apply")
        .send()
        .await
        .unwrap();
    assert_eq!(problem(r, 404).await["kind"], "not_found");
    // No token at all: 401, as for every /v1 endpoint.
    let r = s.client.get(s.url("/v1/artifacts")).send().await.unwrap();
    assert_eq!(problem(r, 401).await["kind"], "unauthorized");
    // The owner's artifact and proposal are as they were.
    let now = head(&s, &id).await;
    assert_eq!(now["artifact"]["version"], 1);
    assert_eq!(now["artifact"]["archived"], false);
    let pending = json_of(s.get("/v1/proposals").send().await.unwrap(), 200).await;
    assert_eq!(pending["proposals"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn a_server_without_a_workspace_says_so_and_the_document_lists_the_operations() {
    let s = start(Setup::default()).await;
    for path in ["/v1/artifacts", "/v1/proposals"] {
        let r = s.get(path).send().await.unwrap();
        let p = problem(r, 404).await;
        assert_eq!(p["kind"], "not_found");
        assert!(
            p["detail"]
                .as_str()
                .unwrap()
                .contains("no artifact workspace"),
            "{p}"
        );
    }
    let doc = json_of(
        s.client
            .get(s.url("/v1/openapi.json"))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    let paths = &doc["paths"];
    for (path, method) in [
        ("/v1/artifacts", "get"),
        ("/v1/artifacts", "post"),
        ("/v1/artifacts/{id}", "get"),
        ("/v1/artifacts/{id}/history", "get"),
        ("/v1/artifacts/{id}/edits", "post"),
        ("/v1/artifacts/{id}/archive", "post"),
        ("/v1/proposals", "get"),
        ("/v1/proposals/{proposal}/apply", "post"),
        ("/v1/proposals/{proposal}/reject", "post"),
    ] {
        assert!(paths[path][method].is_object(), "{path} {method}");
    }
    let schemas = &doc["components"]["schemas"];
    assert_eq!(schemas["EditBody"]["required"], json!(["base"]));
    let problem_fields = &schemas["Problem"]["properties"];
    for field in ["head", "changes_since", "paths"] {
        assert!(problem_fields[field].is_object(), "{field}");
    }
    let view = &schemas["ThreadView"]["properties"];
    for field in ["todos", "artifacts", "children"] {
        assert!(view[field].is_object(), "{field}");
    }
}
