//! The artifact tools called directly (every outcome in words, refusals as is_error results, a store failure as Err, definitions that never change) and one run of burrow-runtime's agent loop with a scripted model creating and editing a plan.

use std::sync::Arc;

use burrow_artifacts::store::engine::{Transact, Tx};
use burrow_artifacts::tools::{ArtifactWorkspace, WritePolicy};
use burrow_artifacts::{
    Actor, ArtifactError, ArtifactStore, Change, Kinds, MemoryArtifactStore, SqliteArtifactStore,
};
use burrow_runtime::agent::{Agent, Outcome};
use burrow_runtime::message::Message;
use burrow_runtime::model::{ScriptedModel, ScriptedResponse};
use burrow_runtime::session::Scope;
use burrow_runtime::tool::{CallContext, ToolRegistry};
use serde_json::{Value, json};

use super::support::{kinds, plan};

fn scope() -> Scope {
    Scope::new("t", "w")
}

fn cx(call: &str) -> CallContext {
    CallContext {
        run_id: "run-1".into(),
        call_id: call.into(),
    }
}

fn workspace(store: Arc<dyn ArtifactStore>) -> (Arc<ArtifactWorkspace>, ToolRegistry) {
    let ws = Arc::new(ArtifactWorkspace::new(store, scope(), "assistant"));
    let mut tools = ToolRegistry::new();
    ws.add_to(&mut tools);
    (ws, tools)
}

async fn call(tools: &ToolRegistry, name: &str, args: Value) -> (bool, String) {
    let out = tools
        .call(&cx(name), name, args)
        .await
        .expect("no store failure");
    (out.is_error, out.text)
}

#[tokio::test]
async fn the_tools_create_read_edit_list_and_archive() {
    let store: Arc<dyn ArtifactStore> = Arc::new(MemoryArtifactStore::new(kinds()));
    let (ws, tools) = workspace(store.clone());
    assert_eq!(
        tools.names().collect::<Vec<_>>(),
        [
            "list_artifacts",
            "read_artifact",
            "create_artifact",
            "edit_artifact",
            "archive_artifact"
        ]
    );
    assert_eq!(
        call(&tools, "list_artifacts", json!({})).await,
        (false, "There are no artifacts.".into())
    );

    let (err, text) = call(
        &tools,
        "create_artifact",
        json!({"kind": "plan", "snapshot": plan()}),
    )
    .await;
    assert!(!err, "{text}");
    assert_eq!(
        text,
        "Created plan-1 (plan): it is now at version 1; use base_version 1 for its next change."
    );
    let made = store.get(&scope(), "plan-1").await.unwrap();
    assert_eq!(made.created_by, Actor::agent("assistant", "run-1"));

    let (err, text) = call(&tools, "read_artifact", json!({"id": "plan-1"})).await;
    assert!(!err);
    assert_eq!(
        text,
        "<artifact id=\"plan-1\" kind=\"plan\" version=\"1\">\n# Ship v1\n- [ ] write\n- [ ] test\n\n</artifact>"
    );
    assert_eq!(ws.followed(), ["plan-1"]);

    let (err, text) = call(
        &tools,
        "edit_artifact",
        json!({"id": "plan-1", "base_version": 1, "patch": [{"op": "replace", "path": "/steps/0/done", "value": true}], "summary": "wrote it"}),
    )
    .await;
    assert!(!err, "{text}");
    assert_eq!(
        text,
        "Changed plan-1 (plan): it is now at version 2; use base_version 2 for its next change."
    );
    let (err, text) = call(
        &tools,
        "edit_artifact",
        json!({"id": "plan-1", "base_version": 2, "old": "Ship", "new": "Launch", "field": "/goal"}),
    )
    .await;
    assert!(!err, "{text}");
    let head = store.get(&scope(), "plan-1").await.unwrap();
    assert_eq!(head.snapshot["goal"], "Launch v1");
    assert_eq!(head.snapshot["steps"][0]["done"], true);

    let (_, text) = call(
        &tools,
        "read_artifact",
        json!({"id": "plan-1", "version": 1}),
    )
    .await;
    assert!(
        text.starts_with("<artifact id=\"plan-1\" kind=\"plan\" version=\"1\">\n# Ship v1"),
        "{text}"
    );

    let (_, text) = call(&tools, "list_artifacts", json!({"kind": "plan"})).await;
    assert_eq!(text, "- plan-1 (plan, v3): Launch v1 (2 steps)\n");
    let (err, text) = call(
        &tools,
        "archive_artifact",
        json!({"id": "plan-1", "base_version": 3}),
    )
    .await;
    assert!(!err);
    assert_eq!(
        text,
        "Archived plan-1 (plan): it is now at version 4; use base_version 4 for its next change."
    );
    assert_eq!(
        call(&tools, "list_artifacts", json!({})).await.1,
        "There are no artifacts."
    );
    let (_, text) = call(&tools, "list_artifacts", json!({"include_archived": true})).await;
    assert_eq!(text, "- plan-1 (plan, v4, archived): Launch v1 (2 steps)\n");
}

#[tokio::test]
async fn refusals_are_results_that_say_what_to_do() {
    let store: Arc<dyn ArtifactStore> = Arc::new(MemoryArtifactStore::new(kinds()));
    let (_, tools) = workspace(store.clone());
    call(
        &tools,
        "create_artifact",
        json!({"kind": "plan", "snapshot": plan()}),
    )
    .await;
    // A person edits first: the agent's edit from v1 is stale.
    store
        .submit(
            &scope(),
            &Actor::person("alice"),
            Change::EditText {
                id: "plan-1".into(),
                base_version: 1,
                field: "/goal".into(),
                old: "v1".into(),
                new: "v2".into(),
                summary: Some("renamed".into()),
            },
        )
        .await
        .unwrap();
    let (err, text) = call(
        &tools,
        "edit_artifact",
        json!({"id": "plan-1", "base_version": 1, "old": "write", "new": "draft", "field": "/steps/0/title"}),
    )
    .await;
    assert!(err);
    assert_eq!(
        text,
        "Conflict: plan-1 is at version 2, not 1: 1 change since (v2 edit_text by alice). Read it again (it is at version 2), then retry your change against it."
    );

    let (err, text) = call(
        &tools,
        "edit_artifact",
        json!({"id": "plan-1", "base_version": 2, "patch": [{"op": "replace", "path": "/steps/1/done", "value": "yes"}]}),
    )
    .await;
    assert!(err);
    assert!(
        text.starts_with(
            "Refused, nothing changed: The snapshot is not a valid plan: at /steps/1/done:"
        ),
        "{text}"
    );
    assert!(
        text.ends_with("Fix the fields at /steps/1/done and try again."),
        "{text}"
    );

    let (err, text) = call(
        &tools,
        "edit_artifact",
        json!({"id": "plan-1", "base_version": 2, "old": "t", "new": "T", "field": "/goal"}),
    )
    .await;
    assert!(err);
    assert_eq!(
        text,
        "Refused, nothing changed: The text to replace in /goal of plan-1 v2 was not found; read the artifact and copy the exact text."
    );
    let (err, text) = call(&tools, "edit_artifact", json!({"id": "plan-1", "base_version": 2, "old": "t", "new": "T", "field": "/steps/1/title"})).await;
    assert!(err);
    assert!(text.contains("is ambiguous: it occurs 2 times"), "{text}");
    let (err, text) = call(
        &tools,
        "edit_artifact",
        json!({"id": "plan-1", "base_version": 2}),
    )
    .await;
    assert!(err);
    assert!(
        text.contains("Give either `patch`, or both `old` and `new`"),
        "{text}"
    );
    let (err, text) = call(
        &tools,
        "create_artifact",
        json!({"kind": "memo", "snapshot": {}}),
    )
    .await;
    assert!(err);
    assert_eq!(
        text,
        "Refused, nothing changed: There is no artifact kind \"memo\"; the kinds are: doc, plan."
    );
    let (err, text) = call(&tools, "read_artifact", json!({"id": "plan-9"})).await;
    assert!(err);
    assert_eq!(text, "Refused: There is no artifact plan-9.");
    // Nothing refused changed anything.
    assert_eq!(store.get(&scope(), "plan-1").await.unwrap().version, 2);
    assert_eq!(store.events(&scope(), 0, 100).await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_proposal_changes_nothing_and_says_so() {
    let store: Arc<dyn ArtifactStore> = Arc::new(MemoryArtifactStore::new(kinds()));
    let ws = Arc::new(
        ArtifactWorkspace::new(store.clone(), scope(), "assistant")
            .with_policy(WritePolicy::Propose),
    );
    let mut tools = ToolRegistry::new();
    ws.add_to(&mut tools);
    let (err, text) = call(
        &tools,
        "create_artifact",
        json!({"kind": "plan", "snapshot": plan()}),
    )
    .await;
    assert!(err);
    assert_eq!(
        text,
        "Refused, nothing changed: A proposal needs a rationale: say why, in `rationale`."
    );
    let (err, text) = call(
        &tools,
        "create_artifact",
        json!({"kind": "plan", "snapshot": plan(), "rationale": "we need a plan"}),
    )
    .await;
    assert!(!err);
    assert_eq!(
        text,
        "Proposed as proposal 1: nothing changes until a person applies it; you will be told the decision. Carry on meanwhile."
    );
    assert!(store.list(&scope(), None, true).await.unwrap().is_empty());
    let p = store.proposal(&scope(), 1).await.unwrap();
    assert_eq!(p.rationale, "we need a plan");
    assert_eq!(p.actor, Actor::agent("assistant", "run-1"));
}

#[tokio::test]
async fn renderings_and_summaries_are_clipped() {
    let store: Arc<dyn ArtifactStore> = Arc::new(MemoryArtifactStore::new(kinds()));
    let ws = Arc::new(
        ArtifactWorkspace::new(store.clone(), scope(), "assistant")
            .with_max_render_chars(10)
            .with_max_summary_chars(5),
    );
    let mut tools = ToolRegistry::new();
    ws.add_to(&mut tools);
    call(
        &tools,
        "create_artifact",
        json!({"kind": "plan", "snapshot": plan()}),
    )
    .await;
    let (_, text) = call(&tools, "read_artifact", json!({"id": "plan-1"})).await;
    assert_eq!(
        text,
        "<artifact id=\"plan-1\" kind=\"plan\" version=\"1\">\n# Ship v1…\n</artifact>"
    );
    let (_, text) = call(&tools, "list_artifacts", json!({})).await;
    assert_eq!(text, "- plan-1 (plan, v1): Ship…\n");
}

#[tokio::test]
async fn the_definitions_never_change_between_requests() {
    let store: Arc<dyn ArtifactStore> = Arc::new(MemoryArtifactStore::new(kinds()));
    let (_, tools) = workspace(store.clone());
    let before = tools.definitions().to_vec();
    call(
        &tools,
        "create_artifact",
        json!({"kind": "plan", "snapshot": plan()}),
    )
    .await;
    call(&tools, "read_artifact", json!({"id": "plan-1"})).await;
    assert_eq!(tools.definitions(), before.as_slice());
    let (_, again) = workspace(store);
    assert_eq!(again.definitions(), before.as_slice());
    // The kinds' schemas are described once, in create_artifact's description.
    let create = &before[2];
    assert!(
        create.description.contains("\n- doc: {"),
        "{}",
        create.description
    );
    assert!(
        create.description.contains("\n- plan: {"),
        "{}",
        create.description
    );
    assert_eq!(
        before
            .iter()
            .filter(|d| d.description.contains("\"$schema\""))
            .count(),
        1
    );
}

/// A store whose every transaction fails: a fault a real store cannot be made to show on demand.
struct BrokenStore(Arc<Kinds>);

impl Transact for BrokenStore {
    fn kinds(&self) -> &Arc<Kinds> {
        &self.0
    }

    async fn transact<T, F>(&self, _scope: &Scope, _f: F) -> burrow_artifacts::Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut dyn Tx) -> burrow_artifacts::Result<T> + Send + 'static,
    {
        Err(ArtifactError::corrupt("the disk is gone."))
    }
}

#[tokio::test]
async fn a_store_failure_is_a_failure_not_a_refusal() {
    let (_, tools) = workspace(Arc::new(BrokenStore(Arc::new(kinds()))));
    for (name, args) in [
        ("list_artifacts", json!({})),
        ("read_artifact", json!({"id": "plan-1"})),
        (
            "create_artifact",
            json!({"kind": "plan", "snapshot": plan()}),
        ),
        (
            "archive_artifact",
            json!({"id": "plan-1", "base_version": 1}),
        ),
    ] {
        let err = tools.call(&cx(name), name, args).await.unwrap_err();
        assert_eq!(
            err.message(),
            "the artifact store failed: the disk is gone.",
            "{name}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_run_creates_and_edits_a_plan_in_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn ArtifactStore> =
        Arc::new(SqliteArtifactStore::open(dir.path().join("a.db"), kinds()).unwrap());
    let (_, tools) = workspace(store.clone());
    let script = vec![
        ScriptedResponse::text("Making a plan.").call(
            "c1",
            "create_artifact",
            json!({"kind": "plan", "snapshot": plan()}),
        ),
        // A stale edit first (base 0 is not a version): refused, the run goes on.
        ScriptedResponse::calls().call(
            "e0",
            "edit_artifact",
            json!({"id": "plan-1", "base_version": 0, "old": "write", "new": "draft", "field": "/steps/0/title"}),
        ),
        ScriptedResponse::calls().call(
            "e1",
            "edit_artifact",
            json!({"id": "plan-1", "base_version": 1, "old": "write", "new": "draft", "field": "/steps/0/title", "summary": "renamed step 1"}),
        ),
        ScriptedResponse::calls().call("r1", "read_artifact", json!({"id": "plan-1"})),
        ScriptedResponse::text("Done."),
    ];
    let agent = Agent::new(Arc::new(ScriptedModel::from_responses(script))).with_tools(tools);
    let mut history = Vec::new();
    let result = agent.run(&mut history, "plan the launch").await;
    assert_eq!(result.outcome, Outcome::Completed);
    let results: Vec<(String, bool, String)> = history
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult(r) => Some((r.name.clone(), r.is_error, r.content.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 4);
    assert_eq!(results[0].0, "create_artifact");
    assert!(!results[0].1);
    assert!(results[1].1, "{}", results[1].2);
    assert!(
        results[1]
            .2
            .contains("Conflict: plan-1 is at version 1, not 0"),
        "{}",
        results[1].2
    );
    assert!(!results[2].1, "{}", results[2].2);
    assert!(results[3].2.contains("- [ ] draft\n"), "{}", results[3].2);
    let head = store.get(&scope(), "plan-1").await.unwrap();
    assert_eq!(head.version, 2);
    assert_eq!(head.snapshot["steps"][0]["title"], "draft");
    let history = store.history(&scope(), "plan-1").await.unwrap();
    assert_eq!(history[1].summary.as_deref(), Some("renamed step 1"));
    assert!(matches!(&history[1].actor, Actor::Agent { name, .. } if name == "assistant"));
}
