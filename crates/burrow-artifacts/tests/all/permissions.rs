//! `PermissionArtifactStore`: `Read(...)` and `Edit(...)` deny rules over the artifacts as `/artifacts/KIND/ID`, on the memory and SQLite stores and through the artifact tools: a hidden artifact is refused to every call and left out of listings, proposals and events; a locked one takes no change, proposal or applied proposal and stays readable (ADR 0395).

use std::sync::Arc;

use burrow_artifacts::tools::ArtifactWorkspace;
use burrow_artifacts::{
    Actor, ArtifactErrorKind, ArtifactStore, Change, EventKind, MemoryArtifactStore,
    PermissionArtifactStore, SqliteArtifactStore,
};
use burrow_permissions::PathRules;
use burrow_runtime::session::Scope;
use burrow_runtime::tool::{CallContext, ToolRegistry};
use serde_json::{Value, json};

use super::support::{kinds, plan};

fn scope() -> Scope {
    Scope::new("t", "w")
}

fn person() -> Actor {
    Actor::agent("someone", "run-0")
}

fn doc(title: &str) -> Value {
    json!({"title": title, "text": "body"})
}

/// The memory and SQLite stores (the folder holds the SQLite file).
fn stores(dir: &tempfile::TempDir) -> Vec<(&'static str, Arc<dyn ArtifactStore>)> {
    vec![
        ("memory", Arc::new(MemoryArtifactStore::new(kinds()))),
        (
            "sqlite",
            Arc::new(SqliteArtifactStore::open(dir.path().join("a.db"), kinds()).unwrap()),
        ),
    ]
}

/// `inner` with plan-1, doc-2 and doc-3 made (unguarded), then behind `rules`.
async fn seeded(inner: &Arc<dyn ArtifactStore>, rules: &[&str]) -> Arc<dyn ArtifactStore> {
    for change in [
        Change::Create {
            kind: "plan".into(),
            snapshot: plan(),
        },
        Change::Create {
            kind: "doc".into(),
            snapshot: doc("open"),
        },
        Change::Create {
            kind: "doc".into(),
            snapshot: doc("secret"),
        },
    ] {
        inner.submit(&scope(), &person(), change).await.unwrap();
    }
    PermissionArtifactStore::guard(inner.clone(), PathRules::from_strings(rules).unwrap())
}

fn patch(id: &str) -> Change {
    Change::Patch {
        id: id.into(),
        base_version: 1,
        patch: serde_json::from_value(json!([{"op": "replace", "path": "/text", "value": "x"}]))
            .unwrap(),
        summary: None,
    }
}

#[tokio::test]
async fn a_read_rule_hides_an_artifact_from_every_call_and_every_listing() {
    let dir = tempfile::tempdir().unwrap();
    for (name, inner) in stores(&dir) {
        let store = seeded(&inner, &["Read(/artifacts/doc/doc-3)"]).await;
        let refused = store.get(&scope(), "doc-3").await.unwrap_err();
        assert_eq!(
            refused.kind(),
            &ArtifactErrorKind::PermissionDenied,
            "{name}"
        );
        assert_eq!(
            refused.message(),
            "the artifact doc-3 is denied by the permission rule Read(/artifacts/doc/doc-3); leave it alone."
        );
        for refused in [
            store.revision(&scope(), "doc-3", 1).await.map(|_| ()),
            store.history(&scope(), "doc-3").await.map(|_| ()),
            store
                .submit(&scope(), &person(), patch("doc-3"))
                .await
                .map(|_| ()),
            store
                .propose(&scope(), &person(), patch("doc-3"), "why")
                .await
                .map(|_| ()),
        ] {
            assert_eq!(
                refused.unwrap_err().kind(),
                &ArtifactErrorKind::PermissionDenied,
                "{name}"
            );
        }
        let ids = |list: Vec<burrow_artifacts::Versioned>| -> Vec<String> {
            list.into_iter().map(|a| a.id).collect()
        };
        assert_eq!(
            ids(store.list(&scope(), None, true).await.unwrap()),
            ["doc-2", "plan-1"],
            "{name}"
        );
        assert_eq!(
            ids(store.list(&scope(), Some("doc"), true).await.unwrap()),
            ["doc-2"],
            "{name}"
        );
        // Nothing changed under the rule: the hidden artifact is as it was.
        assert_eq!(inner.get(&scope(), "doc-3").await.unwrap().version, 1);
        // Its proposal (made around the rule) and its events are left out too.
        inner
            .propose(&scope(), &person(), patch("doc-3"), "why")
            .await
            .unwrap();
        inner
            .propose(&scope(), &person(), patch("doc-2"), "why")
            .await
            .unwrap();
        let proposals = store.proposals(&scope(), false).await.unwrap();
        assert_eq!(proposals.len(), 1, "{name}: {proposals:?}");
        assert_eq!(proposals[0].change.id(), Some("doc-2"));
        let hidden = store.proposal(&scope(), 1).await.unwrap_err();
        assert_eq!(hidden.kind(), &ArtifactErrorKind::PermissionDenied);
        assert!(
            hidden.message().contains("Read(/artifacts/doc/doc-3)"),
            "{hidden}"
        );
        let events = store.events(&scope(), 0, 1000).await.unwrap();
        let about: Vec<String> = events
            .iter()
            .map(|e| match &e.kind {
                EventKind::Changed { artifact, .. } => artifact.clone(),
                EventKind::Proposed { proposal } => format!("proposal {proposal}"),
                _ => "other".to_owned(),
            })
            .collect();
        assert_eq!(about, ["plan-1", "doc-2", "proposal 2"], "{name}");
        // A page short of its limit still means the end; one at its limit goes on from its last seq.
        let first = store.events(&scope(), 0, 2).await.unwrap();
        assert_eq!(first.len(), 2);
        let rest = store.events(&scope(), first[1].seq, 1000).await.unwrap();
        assert_eq!(rest.len(), 1, "{name}: {rest:?}");
    }
}

#[tokio::test]
async fn an_edit_rule_locks_an_artifact_and_leaves_it_readable() {
    let dir = tempfile::tempdir().unwrap();
    for (name, inner) in stores(&dir) {
        let store = seeded(&inner, &["Edit(/artifacts/doc/**)"]).await;
        let refused = store
            .submit(&scope(), &person(), patch("doc-2"))
            .await
            .unwrap_err();
        assert_eq!(
            refused.kind(),
            &ArtifactErrorKind::PermissionDenied,
            "{name}"
        );
        assert_eq!(
            refused.message(),
            "the artifact doc-2 is denied by the permission rule Edit(/artifacts/doc/**); leave it alone."
        );
        let create = store
            .submit(
                &scope(),
                &person(),
                Change::Create {
                    kind: "doc".into(),
                    snapshot: doc("new"),
                },
            )
            .await
            .unwrap_err();
        assert_eq!(
            create.message(),
            "a new doc artifact is denied by the permission rule Edit(/artifacts/doc/**); leave it alone."
        );
        let archive = Change::Archive {
            id: "doc-2".into(),
            base_version: 1,
        };
        assert!(store.submit(&scope(), &person(), archive).await.is_err());
        assert!(
            store
                .propose(&scope(), &person(), patch("doc-2"), "why")
                .await
                .is_err()
        );
        // A proposal made around the rule is not applied through it.
        let proposal = inner
            .propose(&scope(), &person(), patch("doc-2"), "why")
            .await
            .unwrap();
        let applied = store
            .apply_proposal(&scope(), &person(), proposal.id)
            .await
            .unwrap_err();
        assert_eq!(applied.kind(), &ArtifactErrorKind::PermissionDenied);
        // Reads go on; nothing changed; other kinds change.
        assert_eq!(store.get(&scope(), "doc-2").await.unwrap().version, 1);
        assert_eq!(
            store
                .list(&scope(), Some("doc"), false)
                .await
                .unwrap()
                .len(),
            2
        );
        assert_eq!(
            inner.list(&scope(), None, false).await.unwrap().len(),
            3,
            "{name}"
        );
        store
            .submit(
                &scope(),
                &person(),
                Change::Create {
                    kind: "plan".into(),
                    snapshot: plan(),
                },
            )
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn a_rule_naming_one_artifact_leaves_creates_of_its_kind_alone() {
    let inner: Arc<dyn ArtifactStore> = Arc::new(MemoryArtifactStore::new(kinds()));
    let store = seeded(&inner, &["Edit(/artifacts/doc/doc-2)"]).await;
    let made = store
        .submit(
            &scope(),
            &person(),
            Change::Create {
                kind: "doc".into(),
                snapshot: doc("new"),
            },
        )
        .await
        .unwrap();
    assert_eq!(made.artifact.id, "doc-4");
    assert!(
        store
            .submit(&scope(), &person(), patch("doc-3"))
            .await
            .is_ok()
    );
    assert!(
        store
            .submit(&scope(), &person(), patch("doc-2"))
            .await
            .is_err()
    );
    // Every id of the kind (`*`, `doc-*`) covers the new ones.
    for rule in ["Edit(/artifacts/doc/*)", "Write(doc-*)", "Edit(/artifacts)"] {
        let store =
            PermissionArtifactStore::guard(inner.clone(), PathRules::from_strings([rule]).unwrap());
        let create = Change::Create {
            kind: "doc".into(),
            snapshot: doc("new"),
        };
        let refused = store.submit(&scope(), &person(), create).await.unwrap_err();
        assert!(refused.message().contains(rule), "{rule}: {refused}");
    }
}

#[tokio::test]
async fn a_read_rule_over_a_kind_refuses_its_listing_and_the_tools_say_so() {
    let inner: Arc<dyn ArtifactStore> = Arc::new(MemoryArtifactStore::new(kinds()));
    let store = seeded(&inner, &["Read(/artifacts/doc)"]).await;
    let ws = Arc::new(ArtifactWorkspace::new(store, scope(), "assistant"));
    let mut tools = ToolRegistry::new();
    ws.add_to(&mut tools);
    let call = |name: &'static str, args: Value| {
        let tools = &tools;
        async move {
            let cx = CallContext {
                run_id: "run-1".into(),
                call_id: name.into(),
            };
            let out = tools.call(&cx, name, args).await.unwrap();
            (out.is_error, out.text)
        }
    };
    let (err, text) = call("list_artifacts", json!({})).await;
    assert!(!err, "{text}");
    assert!(text.contains("plan-1") && !text.contains("doc-"), "{text}");
    assert_eq!(
        call("list_artifacts", json!({"kind": "doc"})).await,
        (
            true,
            "Refused: The artifacts of the kind doc are denied by the permission rule Read(/artifacts/doc); leave them alone.".to_owned()
        )
    );
    assert_eq!(
        call("read_artifact", json!({"id": "doc-2"})).await,
        (
            true,
            "Refused: The artifact doc-2 is denied by the permission rule Read(/artifacts/doc); leave it alone.".to_owned()
        )
    );
    let (err, text) = call(
        "edit_artifact",
        json!({"id": "doc-2", "base_version": 1, "old": "body", "new": "x"}),
    )
    .await;
    assert!(err);
    assert_eq!(
        text,
        "Refused, nothing changed: The artifact doc-2 is denied by the permission rule Read(/artifacts/doc); leave it alone."
    );
    assert_eq!(inner.get(&scope(), "doc-2").await.unwrap().version, 1);
    assert!(ws.followed().is_empty(), "{:?}", ws.followed());
}
