//! Property: after any sequence of random changes (JSON Patch ops, some refused, and reverts), replaying the revisions' patches from the first snapshot gives every revision's snapshot and the head's, on memory and SQLite.

use std::sync::Arc;

use burrow_artifacts::conformance::kinds;
use burrow_artifacts::{Actor, ArtifactStore, Change, MemoryArtifactStore, SqliteArtifactStore};
use burrow_runtime::session::Scope;
use proptest::prelude::*;
use serde_json::{Value, json};

/// One random change: a patch op on keys k0..k3 and the array `list`, or a revert.
#[derive(Debug, Clone)]
enum Step {
    Op(Value),
    Revert(u64),
}

fn key() -> impl Strategy<Value = String> {
    (0..4u8).prop_map(|k| format!("/k{k}"))
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (key(), any::<i16>())
            .prop_map(|(p, v)| Step::Op(json!({"op": "add", "path": p, "value": v}))),
        key().prop_map(|p| Step::Op(json!({"op": "remove", "path": p}))),
        (key(), "[a-z]{0,3}")
            .prop_map(|(p, v)| Step::Op(json!({"op": "replace", "path": p, "value": v}))),
        (key(), key()).prop_map(|(f, p)| Step::Op(json!({"op": "move", "from": f, "path": p}))),
        (key(), key()).prop_map(|(f, p)| Step::Op(json!({"op": "copy", "from": f, "path": p}))),
        any::<i16>().prop_map(|v| Step::Op(json!({"op": "add", "path": "/list/-", "value": v}))),
        (0..3u8).prop_map(|i| Step::Op(json!({"op": "remove", "path": format!("/list/{i}")}))),
        (key(), any::<i16>())
            .prop_map(|(p, v)| Step::Op(json!({"op": "test", "path": p, "value": v}))),
        (1..6u64).prop_map(Step::Revert),
    ]
}

async fn run(store: Arc<dyn ArtifactStore>, steps: Vec<Vec<Step>>) -> Result<(), TestCaseError> {
    let scope = Scope::new("t", "replay");
    let actor = Actor::person("p");
    let created = store
        .submit(
            &scope,
            &actor,
            Change::Create {
                kind: "record".into(),
                snapshot: json!({"k0": 1, "list": []}),
            },
        )
        .await
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let id = created.artifact.id;
    let mut head = 1;
    for batch in steps {
        let ops: Vec<Value> = batch
            .iter()
            .filter_map(|s| match s {
                Step::Op(v) => Some(v.clone()),
                Step::Revert(_) => None,
            })
            .collect();
        let change = match batch.first() {
            Some(Step::Revert(to)) => Change::Revert {
                id: id.clone(),
                base_version: head,
                to_version: *to,
            },
            _ => Change::Patch {
                id: id.clone(),
                base_version: head,
                patch: serde_json::from_value(Value::Array(ops)).expect("a patch"),
                summary: None,
            },
        };
        // Refusals (a missing path, a failed test, a revert too far) are part of the game.
        if let Ok(done) = store.submit(&scope, &actor, change).await {
            prop_assert_eq!(done.artifact.version, head + 1);
            head += 1;
        }
    }
    let history = store.history(&scope, &id).await.expect("the history");
    let last = store.get(&scope, &id).await.expect("the head");
    prop_assert_eq!(history.len() as u64, head);
    let mut doc = history[0].snapshot.clone();
    for r in &history[1..] {
        json_patch::patch(&mut doc, &r.patch).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&doc, &r.snapshot, "replaying to v{}", r.version);
    }
    prop_assert_eq!(&doc, &last.snapshot);
    Ok(())
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn replaying_the_revisions_reproduces_the_head_in_memory(
        steps in prop::collection::vec(prop::collection::vec(step(), 1..4), 0..16)
    ) {
        let store = Arc::new(MemoryArtifactStore::new(kinds()));
        runtime().block_on(run(store, steps))?;
    }

    #[test]
    fn replaying_the_revisions_reproduces_the_head_in_sqlite(
        steps in prop::collection::vec(prop::collection::vec(step(), 1..4), 0..16)
    ) {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let store = Arc::new(SqliteArtifactStore::open(dir.path().join("a.db"), kinds()).expect("open"));
        runtime().block_on(run(store, steps))?;
    }
}
