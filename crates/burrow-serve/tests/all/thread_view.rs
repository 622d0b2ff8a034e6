//! `GET /v1/threads/{thread}` beyond history and runs: the todo list, the subagent threads under it with their outcomes (on a real SQLite file; on PostgreSQL in `postgres`), and the artifacts its agent follows; each through reqwest against a served runner.

use burrow_runtime::model::ScriptedResponse;
use burrow_runtime::subagent::{GENERAL_PURPOSE, TASK};
use burrow_runtime::todos::WRITE_TODOS;
use serde_json::json;

use super::support::{Setup, problem, start};

/// A `write_todos` call of two items: "Survey the fence" completed, "Paint the fence" in progress.
pub fn todos_call() -> ScriptedResponse {
    ScriptedResponse::calls().call(
        "w1",
        WRITE_TODOS,
        json!({"todos": [
            {"content": "Survey the fence", "status": "completed", "activeForm": "Surveying the fence"},
            {"content": "Paint the fence", "status": "in_progress", "activeForm": "Painting the fence"}
        ]}),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_view_holds_its_todos_and_its_children_with_their_outcomes() {
    todos_and_children(Setup::default(), true).await;
}

/// The parent writes todos, starts a child, ends; its view holds both; with `wall`,
/// another tenant sees neither the thread nor the child.
pub async fn todos_and_children(base: Setup, wall: bool) {
    let s = start(Setup {
        // The parent writes todos, starts a child (whose one answer is request 2),
        // then ends; later messages get "done".
        script: vec![
            todos_call(),
            ScriptedResponse::calls().call(
                "c1",
                TASK,
                json!({"description": "survey", "prompt": "survey the fence", "subagent_type": GENERAL_PURPOSE}),
            ),
            ScriptedResponse::text("the fence is 20 m long"),
            ScriptedResponse::text("painted, 20 m"),
        ],
        todos: true,
        tasks: true,
        ..base
    })
    .await;
    s.message("t1", json!({"content": "paint the fence"})).await;
    let view = s.until_history("t1", "painted, 20 m").await;
    let parent_run = view["runs"][0]["run_id"].as_str().unwrap().to_owned();

    let todos = view["todos"].as_array().unwrap();
    assert_eq!(todos.len(), 2, "{view}");
    assert_eq!(todos[0]["content"], "Survey the fence");
    assert_eq!(todos[1]["status"], "in_progress");

    let children = view["children"].as_array().unwrap();
    assert_eq!(children.len(), 1, "{}", view["children"]);
    let child = &children[0];
    assert_eq!(child["thread"], "t1/task-c1");
    assert_eq!(child["parent"], "t1");
    assert_eq!(child["status"], "idle");
    assert_eq!(child["outcome"], "completed");
    assert_eq!(child["subagent"], GENERAL_PURPOSE);
    assert_eq!(child["call_id"], "c1");
    assert_eq!(child["parent_run_id"], parent_run.as_str());
    assert!(child["run_id"].as_str().is_some_and(|r| r != parent_run));
    assert!(view["artifacts"].as_array().unwrap().is_empty());

    // The child's own view, its id percent-encoded: its history holds its answer, and
    // it has no children and no todos.
    let child_view = s.view("t1%2Ftask-c1").await;
    assert!(
        child_view["history"]
            .to_string()
            .contains("the fence is 20 m long")
    );
    assert_eq!(child_view["children"], json!([]));
    assert_eq!(child_view["todos"], json!([]));

    // Threads that sort near it are not its children: `t10`, and `t1/notes`, which
    // is under it by name but no task's.
    for thread in ["t10", "t1%2Fnotes"] {
        s.message(thread, json!({"content": "hello"})).await;
    }
    s.settled("t10").await;
    s.settled("t1%2Fnotes").await;
    let again = s.view("t1").await;
    assert_eq!(again["children"], view["children"]);

    // Another tenant sees neither the thread nor its child.
    if !wall {
        return;
    }
    for path in ["/v1/threads/t1", "/v1/threads/t1%2Ftask-c1"] {
        let r = s
            .client
            .get(s.url(path))
            .bearer_auth(&s.other)
            .send()
            .await
            .unwrap();
        assert_eq!(problem(r, 404).await["kind"], "not_found");
    }
}

#[cfg(feature = "artifacts")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_view_lists_the_artifacts_its_agent_follows_rendered() {
    let s = start(Setup {
        script: vec![
            ScriptedResponse::calls().call(
                "a1",
                "create_artifact",
                json!({"kind": "plan", "snapshot": {"title": "Fence", "text": "paint it green"}}),
            ),
            ScriptedResponse::text("planned"),
        ],
        artifacts: true,
        ..Setup::default()
    })
    .await;
    // A person's artifact the agent never touches is not followed.
    let other = s
        .post(
            "/v1/artifacts",
            json!({"kind": "plan", "snapshot": {"title": "Shed", "text": "later"}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(other.status().as_u16(), 201);
    s.message("t1", json!({"content": "plan the fence"})).await;
    let view = s.until_history("t1", "planned").await;
    let artifacts = view["artifacts"].as_array().unwrap();
    assert_eq!(artifacts.len(), 1, "{}", view["artifacts"]);
    let plan = &artifacts[0];
    assert_eq!(plan["kind"], "plan");
    assert_eq!(plan["version"], 1);
    assert_eq!(plan["snapshot"]["title"], "Fence");
    assert_eq!(plan["created_by"]["name"], "thread:t1");
    assert_eq!(plan["rendered"], "# Fence\n\npaint it green");

    // A person's edit shows at once: the view reads the head, not a copy.
    let id = plan["id"].as_str().unwrap();
    let edited = s
        .post(
            &format!("/v1/artifacts/{id}/edits"),
            json!({"base": 1, "old": "green", "new": "blue"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(edited.status().as_u16(), 200);
    let view = s.view("t1").await;
    assert_eq!(view["artifacts"][0]["version"], 2);
    assert_eq!(view["artifacts"][0]["rendered"], "# Fence\n\npaint it blue");
}
