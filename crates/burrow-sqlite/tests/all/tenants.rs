//! Tenant isolation: another tenant's files look exactly like missing ones, in every operation.

use burrow_backend::{Backend, GrepQuery};

use super::common::{TempStore, ctx, p};

/// The error kind and message of a result, or "ok".
fn outcome<T>(r: burrow_backend::Result<T>) -> String {
    match r {
        Ok(_) => "ok".to_owned(),
        Err(e) => format!("{}: {}", e.kind(), e.message()),
    }
}

#[tokio::test]
async fn another_tenants_files_look_exactly_like_missing_ones() {
    let t = TempStore::new();
    let (alice, bob) = (ctx("alice"), ctx("bob"));
    t.files
        .write(&alice, &p("/secret/plan.md"), "the plan\n")
        .await
        .unwrap();
    t.files
        .write(&alice, &p("/top.txt"), "the plan\n")
        .await
        .unwrap();

    // Bob sees an empty store.
    assert!(
        t.files
            .ls(&bob, &p("/"), 100)
            .await
            .unwrap()
            .entries
            .is_empty()
    );
    assert!(
        t.files
            .glob(&bob, "**", &p("/"), 100)
            .await
            .unwrap()
            .files
            .is_empty()
    );
    let grep = t
        .files
        .grep(&bob, &GrepQuery::fixed("plan"), &p("/"), 100)
        .await
        .unwrap();
    assert!(grep.matches.is_empty());
    let grep = t
        .files
        .grep(&bob, &GrepQuery::fixed("plan"), &p("/top.txt"), 100)
        .await
        .unwrap();
    assert!(grep.matches.is_empty());

    // Each answer is the one a store that never held the path gives, word for word.
    let empty = TempStore::new();
    let (a, b) = (&t.files, &empty.files);
    {
        let pairs = [
            (
                outcome(a.read(&bob, &p("/secret/plan.md"), 0, 10).await),
                outcome(b.read(&bob, &p("/secret/plan.md"), 0, 10).await),
            ),
            (
                outcome(a.read_bytes(&bob, &p("/top.txt")).await),
                outcome(b.read_bytes(&bob, &p("/top.txt")).await),
            ),
            (
                outcome(a.ls(&bob, &p("/secret"), 10).await),
                outcome(b.ls(&bob, &p("/secret"), 10).await),
            ),
            (
                outcome(a.edit(&bob, &p("/top.txt"), "plan", "x", false).await),
                outcome(b.edit(&bob, &p("/top.txt"), "plan", "x", false).await),
            ),
            (
                outcome(a.delete(&bob, &p("/top.txt")).await),
                outcome(b.delete(&bob, &p("/top.txt")).await),
            ),
            (
                outcome(a.glob(&bob, "*", &p("/secret"), 10).await),
                outcome(b.glob(&bob, "*", &p("/secret"), 10).await),
            ),
            (
                outcome(a.delete(&bob, &p("/secret")).await),
                outcome(b.delete(&bob, &p("/secret")).await),
            ),
        ];
        for (theirs, missing) in pairs {
            assert_eq!(theirs, missing);
            assert!(
                theirs.starts_with("not_found") || theirs == "ok",
                "{theirs}"
            );
        }
    }
    assert_eq!(
        t.files.read_bytes(&alice, &p("/top.txt")).await.unwrap(),
        b"the plan\n"
    );

    // Bob may use the same paths for his own files, and Alice's stay hers.
    t.files
        .write(&bob, &p("/top.txt"), "bob's\n")
        .await
        .unwrap();
    t.files
        .write(&bob, &p("/secret"), "a file here\n")
        .await
        .unwrap();
    assert_eq!(
        t.files.read_bytes(&alice, &p("/top.txt")).await.unwrap(),
        b"the plan\n"
    );
    assert_eq!(
        t.files
            .ls(&alice, &p("/secret"), 10)
            .await
            .unwrap()
            .entries
            .len(),
        1
    );
    assert_eq!(t.files.usage("alice").await.unwrap(), (18, 2));
    assert_eq!(t.files.usage("bob").await.unwrap(), (18, 2));
    t.files.delete(&bob, &p("/top.txt")).await.unwrap();
    assert_eq!(
        t.files.read_bytes(&alice, &p("/top.txt")).await.unwrap(),
        b"the plan\n"
    );
}

#[tokio::test]
async fn effect_keys_are_scoped_by_tenant() {
    let t = TempStore::new();
    let alice = ctx("alice").with_effect_key("call-1");
    let bob = ctx("bob").with_effect_key("call-1");
    t.files.write(&alice, &p("/a.txt"), "alice").await.unwrap();
    t.files.write(&bob, &p("/a.txt"), "bob").await.unwrap();
    assert_eq!(
        t.files.read_bytes(&ctx("bob"), &p("/a.txt")).await.unwrap(),
        b"bob"
    );
    assert_eq!(
        t.files
            .read_bytes(&ctx("alice"), &p("/a.txt"))
            .await
            .unwrap(),
        b"alice"
    );
}
