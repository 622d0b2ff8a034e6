//! The key/value long-term store: namespaces, nesting only when asked, key prefixes, limits, tenants.

use burrow_backend::ErrorKind;
use burrow_sqlite::{Depth, SqliteStore};
use serde_json::json;

use super::common::TempStore;

fn keys(page: &burrow_sqlite::Page) -> Vec<(String, String)> {
    page.items
        .iter()
        .map(|i| (i.namespace.join("/"), i.key.clone()))
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}

#[tokio::test]
async fn put_get_replace_delete() {
    let t = TempStore::new();
    let s = &t.store;
    assert!(s.get("t", &["memories"], "k").await.unwrap().is_none());
    s.put("t", &["memories"], "k", json!({"a": 1}))
        .await
        .unwrap();
    let item = s.get("t", &["memories"], "k").await.unwrap().unwrap();
    assert_eq!(item.value, json!({"a": 1}));
    assert_eq!(item.namespace, ["memories"]);
    assert_eq!(item.created_at, item.updated_at);
    s.put("t", &["memories"], "k", json!([1, "two", null]))
        .await
        .unwrap();
    let replaced = s.get("t", &["memories"], "k").await.unwrap().unwrap();
    assert_eq!(replaced.value, json!([1, "two", null]));
    assert_eq!(replaced.created_at, item.created_at);
    assert!(s.delete("t", &["memories"], "k").await.unwrap());
    assert!(!s.delete("t", &["memories"], "k").await.unwrap());
    assert!(s.get("t", &["memories"], "k").await.unwrap().is_none());
}

#[tokio::test]
async fn a_namespace_sees_its_sub_namespaces_only_when_asked() {
    let t = TempStore::new();
    let s = &t.store;
    for (ns, key) in [
        (vec!["memories"], "top"),
        (vec!["memories", "user"], "likes"),
        (vec!["memories", "user"], "name"),
        (vec!["memories", "user", "old"], "x"),
        (vec!["memories", "users"], "not-a-child"),
        (vec!["memoriesx"], "y"),
        (vec!["memories/user"], "slash-in-a-segment"),
    ] {
        s.put("t", &ns, key, json!(key)).await.unwrap();
    }
    let exact = s
        .list("t", &["memories", "user"], Depth::Exact, 100)
        .await
        .unwrap();
    assert_eq!(
        keys(&exact),
        pairs(&[("memories/user", "likes"), ("memories/user", "name")])
    );
    let nested = s
        .list("t", &["memories", "user"], Depth::Nested, 100)
        .await
        .unwrap();
    assert_eq!(
        keys(&nested),
        pairs(&[
            ("memories/user", "likes"),
            ("memories/user", "name"),
            ("memories/user/old", "x")
        ])
    );
    let slash = s
        .list("t", &["memories/user"], Depth::Nested, 100)
        .await
        .unwrap();
    assert_eq!(slash.items.len(), 1);
    assert_eq!(slash.items[0].namespace, ["memories/user"]);
    let all = s
        .list("t", &[] as &[&str], Depth::Nested, 100)
        .await
        .unwrap();
    assert_eq!(all.items.len(), 7);
    let root_only = s
        .list("t", &[] as &[&str], Depth::Exact, 100)
        .await
        .unwrap();
    assert!(root_only.items.is_empty());

    let namespaces = s.list_namespaces("t", &["memories"], 100).await.unwrap();
    let expected: Vec<Vec<String>> = [
        vec!["memories"],
        vec!["memories", "user"],
        vec!["memories", "user", "old"],
        vec!["memories", "users"],
    ]
    .into_iter()
    .map(|v| v.into_iter().map(str::to_owned).collect())
    .collect();
    assert_eq!(namespaces, expected);
    assert_eq!(
        s.list_namespaces("t", &[] as &[&str], 2)
            .await
            .unwrap()
            .len(),
        2
    );
}

#[tokio::test]
async fn limits_truncate_and_prefixes_select_keys() {
    let t = TempStore::new();
    let s = &t.store;
    for key in ["a", "ab", "abc", "abd", "b", "\u{10FFFF}x", "\u{10FFFF}"] {
        s.put("t", &["n"], key, json!(key)).await.unwrap();
    }
    s.put("t", &["n", "deeper"], "abz", json!(0)).await.unwrap();
    let page = s.list("t", &["n"], Depth::Exact, 3).await.unwrap();
    assert_eq!(page.items.len(), 3);
    assert!(page.truncated);
    assert!(
        !s.list("t", &["n"], Depth::Exact, 7)
            .await
            .unwrap()
            .truncated
    );

    let ab = s.search("t", &["n"], "ab", 100).await.unwrap();
    let got: Vec<&str> = ab.items.iter().map(|i| i.key.as_str()).collect();
    assert_eq!(got, ["ab", "abc", "abd"]);
    let ab2 = s.search("t", &["n"], "ab", 2).await.unwrap();
    assert_eq!(ab2.items.len(), 2);
    assert!(ab2.truncated);
    let max = s.search("t", &["n"], "\u{10FFFF}", 100).await.unwrap();
    assert_eq!(max.items.len(), 2);
    assert_eq!(s.search("t", &["n"], "", 100).await.unwrap().items.len(), 7);
    assert!(
        s.search("t", &["n"], "zz", 100)
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

#[tokio::test]
async fn tenants_never_see_each_others_items() {
    let t = TempStore::new();
    let s = &t.store;
    s.put("alice", &["m"], "k", json!("alice")).await.unwrap();
    s.put("bob", &["m"], "k", json!("bob")).await.unwrap();
    assert_eq!(
        s.get("alice", &["m"], "k").await.unwrap().unwrap().value,
        json!("alice")
    );
    assert_eq!(
        s.get("bob", &["m"], "k").await.unwrap().unwrap().value,
        json!("bob")
    );
    assert!(s.get("carol", &["m"], "k").await.unwrap().is_none());
    assert!(
        s.list("carol", &[] as &[&str], Depth::Nested, 10)
            .await
            .unwrap()
            .items
            .is_empty()
    );
    assert!(
        s.search("carol", &["m"], "", 10)
            .await
            .unwrap()
            .items
            .is_empty()
    );
    assert!(
        s.list_namespaces("carol", &[] as &[&str], 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(s.delete("bob", &["m"], "k").await.unwrap());
    assert_eq!(
        s.get("alice", &["m"], "k").await.unwrap().unwrap().value,
        json!("alice")
    );
}

#[tokio::test]
async fn bad_arguments_are_refused() {
    let t = TempStore::new();
    let s = &t.store;
    let cases = [
        s.put("t", &["a", ""], "k", json!(1)).await.unwrap_err(),
        s.put("t", &["a"], "", json!(1)).await.unwrap_err(),
        s.put("t", &["x".repeat(256)], "k", json!(1))
            .await
            .unwrap_err(),
        s.list("t", &vec!["a"; 33], Depth::Exact, 1)
            .await
            .unwrap_err(),
    ];
    for err in cases {
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    }
    let big = json!("x".repeat(burrow_sqlite::MAX_VALUE_BYTES));
    assert_eq!(
        s.put("t", &["a"], "k", big).await.unwrap_err().kind(),
        ErrorKind::TooLarge
    );
}

#[tokio::test]
async fn items_outlive_the_process_handle() {
    let t = TempStore::new();
    t.store
        .put("t", &["m"], "k", json!({"kept": true}))
        .await
        .unwrap();
    let reopened = SqliteStore::open(t.db_path()).unwrap();
    assert_eq!(
        reopened.get("t", &["m"], "k").await.unwrap().unwrap().value,
        json!({"kept": true})
    );
}
