//! Keys and escaping: every hostile name round-trips on every store as one escaped key segment, and no tenant name can spell another tenant's prefix.

use std::collections::BTreeSet;
use std::sync::Arc;

use burrow_backend::{Backend, FileContext, VPath};
use burrow_conformance::scenarios::paths::hostile_names;
use burrow_object_store::keys::{EFFECTS_DIR, Keys, escape, escape_tenant, unescape};
use burrow_object_store::object_store::memory::InMemory;
use burrow_object_store::object_store::path::Path;
use burrow_object_store::{ObjectStoreBackend, ObjectStoreOptions};
use futures::TryStreamExt;

use super::common::{s3_backend, s3_endpoint};

/// Names that are hostile to keys in particular, besides the conformance table's.
fn key_hostile_names() -> Vec<String> {
    let mut names = hostile_names();
    for extra in [
        "%",
        "%%",
        "%2F",
        "%2f",
        "%25",
        "a%2Fb",
        ".burrow-effects",
        "..%2F..",
        "#123",
        "x#1",
        "\u{7f}del",
    ] {
        names.push(extra.to_owned());
    }
    names
}

/// Writes, lists and reads back every name, then checks the raw keys: one escaped segment each.
async fn round_trip(backend: &ObjectStoreBackend) {
    let ctx = FileContext::for_tenant("t");
    let names = key_hostile_names();
    for (i, name) in names.iter().enumerate() {
        let path = VPath::parse(&format!("/h/{name}")).expect("a legal name");
        backend
            .write(&ctx, &path, &format!("{i}"))
            .await
            .unwrap_or_else(|e| panic!("write {name:?}: {}", e.message()));
        let back = backend
            .read_bytes(&ctx, &path)
            .await
            .unwrap_or_else(|e| panic!("read {name:?}: {}", e.message()));
        assert_eq!(back, format!("{i}").into_bytes(), "{name:?}");
    }
    let listing = backend
        .ls(&ctx, &VPath::parse("/h").expect("h"), 10_000)
        .await
        .expect("ls");
    let listed: BTreeSet<String> = listing.entries.iter().map(|e| e.name.clone()).collect();
    assert_eq!(
        listed,
        names.iter().cloned().collect::<BTreeSet<_>>(),
        "ls shows every name exactly"
    );
    let root = &backend.options().root;
    let tenant_prefix = if root.is_empty() {
        "t".to_owned()
    } else {
        format!("{root}/t")
    };
    let raw: Vec<String> = backend
        .store()
        .list(Some(&Path::from(tenant_prefix.as_str())))
        .map_ok(|m| m.location.as_ref().to_owned())
        .try_collect()
        .await
        .expect("raw listing");
    assert_eq!(raw.len(), names.len(), "one object per name");
    for key in raw {
        let segment = key
            .strip_prefix(&format!("{tenant_prefix}/h/"))
            .expect("beneath the tenant");
        assert!(!segment.contains('/'), "one segment: {key:?}");
        assert!(
            unescape(segment).is_some_and(|n| names.contains(&n)),
            "decodes to a written name: {key:?}"
        );
    }
}

#[tokio::test]
async fn hostile_names_round_trip_in_memory() {
    round_trip(&ObjectStoreBackend::in_memory()).await;
}

#[tokio::test]
async fn hostile_names_round_trip_on_a_local_folder() {
    let dir = tempfile::tempdir().expect("temp dir");
    round_trip(&ObjectStoreBackend::local(dir.path()).expect("backend")).await;
}

#[test]
fn no_tenant_spells_another_tenants_prefix_or_the_effects_dir() {
    let tenants = [
        "a",
        "a/b",
        "a%2Fb",
        "a%252Fb",
        ".",
        "..",
        "",
        "%",
        ".burrow-effects",
        "%2Eburrow-effects",
        ".a",
        "%2Ea",
        "a b",
        "🦀",
        "A",
        "a\n",
        "a/",
        "/a",
    ];
    let keys = Keys::new("root", None, None).expect("keys");
    let mut seen = BTreeSet::new();
    for tenant in tenants {
        let prefix = keys.tenant_prefix(tenant);
        let segment = prefix.strip_prefix("root/").expect("beneath the root");
        assert!(
            !segment.contains('/'),
            "{tenant:?} is one segment: {prefix:?}"
        );
        assert!(
            !segment.starts_with('.'),
            "{tenant:?} never starts with a dot: {prefix:?}"
        );
        assert_ne!(segment, EFFECTS_DIR);
        assert!(Path::parse(&prefix).is_ok(), "{prefix:?} is a valid key");
        assert!(
            seen.insert(prefix.clone()),
            "{tenant:?} collides: {prefix:?}"
        );
    }
    assert_eq!(escape_tenant("a"), escape("a"));
}

#[tokio::test]
async fn tenants_with_slashes_do_not_reach_nested_paths_of_others() {
    let backend = ObjectStoreBackend::in_memory();
    let a = FileContext::for_tenant("a");
    let ab = FileContext::for_tenant("a/b");
    backend
        .write(&a, &VPath::parse("/b/x").expect("p"), "tenant a")
        .await
        .expect("write a");
    backend
        .write(&ab, &VPath::parse("/x").expect("p"), "tenant a/b")
        .await
        .expect("write a/b");
    assert_eq!(
        backend
            .read_bytes(&a, &VPath::parse("/b/x").expect("p"))
            .await
            .expect("read"),
        b"tenant a"
    );
    assert_eq!(
        backend
            .read_bytes(&ab, &VPath::parse("/x").expect("p"))
            .await
            .expect("read"),
        b"tenant a/b"
    );
    let listing = backend.ls(&ab, &VPath::root(), 10).await.expect("ls");
    assert_eq!(listing.entries.len(), 1);
}

#[tokio::test]
async fn foreign_objects_beneath_the_prefix_are_ignored() {
    let store = Arc::new(InMemory::new());
    let backend = ObjectStoreBackend::new(store.clone());
    let ctx = FileContext::for_tenant("t");
    backend
        .write(&ctx, &VPath::parse("/ok.txt").expect("p"), "x")
        .await
        .expect("write");
    // Keys burrow never writes: a lower-case escape, a bare reserved character.
    for key in ["t/bad%2fname", "t/star*name", "t/%zz"] {
        burrow_object_store::object_store::ObjectStoreExt::put(
            store.as_ref(),
            &Path::parse(key).expect("key"),
            "y".into(),
        )
        .await
        .expect("put");
    }
    let listing = backend.ls(&ctx, &VPath::root(), 10).await.expect("ls");
    let names: Vec<&str> = listing.entries.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["ok.txt"]);
}

/// The tests that need the S3 test server (`burrow_testkit::Part::S3`).
mod s3 {
    use super::*;

    #[tokio::test]
    async fn hostile_names_round_trip_on_s3() {
        let endpoint = s3_endpoint();
        let backend = tokio::task::spawn_blocking(move || {
            s3_backend(&endpoint, "names", ObjectStoreOptions::default())
        })
        .await
        .expect("setup");
        round_trip(&backend).await;
    }
}
