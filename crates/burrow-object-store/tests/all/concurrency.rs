//! No lost update: conditional puts as the stores enforce them, a lost race retried, Conflict after the bounded retries, and 16 handles (as 16 processes would) editing one object at once.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use burrow_backend::{Backend, ErrorKind, FileContext, VPath};
use burrow_object_store::object_store::memory::InMemory;
use burrow_object_store::object_store::path::Path;
use burrow_object_store::object_store::{
    ObjectStore, ObjectStoreExt, PutMode, PutPayload, UpdateVersion,
};
use burrow_object_store::{ObjectStoreBackend, ObjectStoreOptions};
use futures::future::join_all;

use super::common::{s3_backend, s3_endpoint};
use super::spy::Spy;

const EDITORS: usize = 16;

fn ctx() -> FileContext {
    FileContext::for_tenant("t")
}

fn p(s: &str) -> VPath {
    VPath::parse(s).expect("path")
}

/// The store refuses a stale If-Match and an If-None-Match over an existing object.
async fn store_enforces_preconditions(store: &dyn ObjectStore, key: &Path) {
    let first = store
        .put_opts(key, PutPayload::from("one"), PutMode::Create.into())
        .await
        .expect("create");
    let again = store
        .put_opts(key, PutPayload::from("two"), PutMode::Create.into())
        .await;
    assert!(
        matches!(
            again,
            Err(burrow_object_store::object_store::Error::AlreadyExists { .. })
        ),
        "If-None-Match: * over an existing object must be refused, got {again:?}"
    );
    let stale = UpdateVersion {
        e_tag: first.e_tag.clone(),
        version: first.version.clone(),
    };
    let second = store
        .put_opts(
            key,
            PutPayload::from("two"),
            PutMode::Update(stale.clone()).into(),
        )
        .await
        .expect("update with the current ETag");
    assert_ne!(second.e_tag, first.e_tag, "a new content has a new ETag");
    let lost = store
        .put_opts(
            key,
            PutPayload::from("three"),
            PutMode::Update(stale).into(),
        )
        .await;
    assert!(
        matches!(
            lost,
            Err(burrow_object_store::object_store::Error::Precondition { .. })
        ),
        "If-Match with a stale ETag must be refused, got {lost:?}"
    );
    let body = store
        .get(key)
        .await
        .expect("get")
        .bytes()
        .await
        .expect("body");
    assert_eq!(&body[..], b"two", "the refused puts changed nothing");
}

#[tokio::test]
async fn in_memory_enforces_preconditions() {
    store_enforces_preconditions(&InMemory::new(), &Path::from("k")).await;
}

/// 16 handles over one store, each editing its own slot of one file at once: every edit lands.
async fn sixteen_handles_lose_nothing(handles: Vec<ObjectStoreBackend>) {
    let path = p("/shared.txt");
    let text: String = (0..EDITORS)
        .map(|i| format!("slot-{i:02}: empty\n"))
        .collect();
    handles[0].write(&ctx(), &path, &text).await.expect("seed");
    let edits = handles.iter().enumerate().map(|(i, b)| {
        let path = path.clone();
        async move {
            b.edit(
                &ctx(),
                &path,
                &format!("slot-{i:02}: empty"),
                &format!("slot-{i:02}: done"),
                false,
            )
            .await
        }
    });
    let results = join_all(edits).await;
    for (i, r) in results.iter().enumerate() {
        let r = r
            .as_ref()
            .unwrap_or_else(|e| panic!("edit {i} failed: {:?} {}", e.kind(), e.message()));
        assert_eq!(r.occurrences, Some(1));
    }
    let window = handles[0].read(&ctx(), &path, 0, 100).await.expect("read");
    let want: Vec<String> = (0..EDITORS).map(|i| format!("slot-{i:02}: done")).collect();
    assert_eq!(window.lines, want, "no update was lost");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_handles_on_in_memory_lose_nothing() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let handles = (0..EDITORS)
        .map(|_| ObjectStoreBackend::new(Arc::clone(&store)))
        .collect();
    sixteen_handles_lose_nothing(handles).await;
}

#[tokio::test]
async fn a_lost_race_is_retried_from_a_fresh_read() {
    let spy = Arc::new(Spy::new(Arc::new(InMemory::new())));
    let backend = ObjectStoreBackend::new(Arc::clone(&spy) as Arc<dyn ObjectStore>);
    let path = p("/f.txt");
    backend.write(&ctx(), &path, "a\n").await.expect("write");
    spy.interfere_with_next(2);
    let r = backend
        .edit(&ctx(), &path, "a", "b", false)
        .await
        .expect("edit after two lost races");
    assert_eq!(r.occurrences, Some(1));
    assert_eq!(spy.interfered.load(Ordering::SeqCst), 2);
    let bytes = backend.read_bytes(&ctx(), &path).await.expect("read");
    assert_eq!(
        bytes, b"b\ninterfering write 0\ninterfering write 1\n",
        "both the other writer's changes and ours"
    );
}

#[tokio::test]
async fn an_overwrite_never_hides_a_concurrent_change_it_did_not_see() {
    let spy = Arc::new(Spy::new(Arc::new(InMemory::new())));
    let backend = ObjectStoreBackend::new(Arc::clone(&spy) as Arc<dyn ObjectStore>);
    let path = p("/f.txt");
    backend.write(&ctx(), &path, "one\n").await.expect("write");
    spy.interfere_with_next(1);
    backend
        .write(&ctx(), &path, "two\n")
        .await
        .expect("overwrite");
    assert_eq!(
        spy.interfered.load(Ordering::SeqCst),
        1,
        "the remembered version lost once, then the write re-checked"
    );
    assert_eq!(
        backend.read_bytes(&ctx(), &path).await.expect("read"),
        b"two\n"
    );
}

#[tokio::test]
async fn endless_lost_races_end_in_conflict_and_change_nothing() {
    let spy = Arc::new(Spy::new(Arc::new(InMemory::new())));
    let options = ObjectStoreOptions::default().with_max_attempts(3);
    let backend =
        ObjectStoreBackend::with_options(Arc::clone(&spy) as Arc<dyn ObjectStore>, options)
            .expect("backend");
    let path = p("/f.txt");
    backend.write(&ctx(), &path, "a\n").await.expect("write");
    spy.interfere_with_next(usize::MAX);
    let err = backend
        .edit(&ctx(), &path, "a", "b", false)
        .await
        .expect_err("conflict");
    assert_eq!(err.kind(), ErrorKind::Conflict, "{}", err.message());
    assert!(
        err.message().contains("/f.txt") && err.message().contains("3 attempts"),
        "{}",
        err.message()
    );
    spy.interfere_with_next(0);
    let bytes = backend.read_bytes(&ctx(), &path).await.expect("read");
    assert_eq!(
        bytes, b"a\ninterfering write 0\ninterfering write 1\ninterfering write 2\n",
        "only the other writer's changes"
    );
}

/// The tests that need the S3 test server (`burrow_testkit::Part::S3`).
mod s3 {
    use super::*;

    #[tokio::test]
    async fn s3_server_enforces_if_match_and_if_none_match() {
        let endpoint = s3_endpoint();
        let backend = tokio::task::spawn_blocking(move || {
            s3_backend(&endpoint, "preconditions", ObjectStoreOptions::default())
        })
        .await
        .expect("setup");
        let key = Path::from(format!("{}/raw-object", backend.options().root));
        store_enforces_preconditions(backend.store().as_ref(), &key).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sixteen_handles_on_s3_lose_nothing() {
        let endpoint = s3_endpoint();
        let first = tokio::task::spawn_blocking(move || {
            s3_backend(&endpoint, "sixteen", ObjectStoreOptions::default())
        })
        .await
        .expect("setup");
        let options = first.options().clone();
        let mut handles = vec![];
        for _ in 1..EDITORS {
            handles.push(
                ObjectStoreBackend::with_options(Arc::clone(first.store()), options.clone())
                    .expect("handle"),
            );
        }
        handles.push(first);
        sixteen_handles_lose_nothing(handles).await;
    }
}
