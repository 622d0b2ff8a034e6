//! The replay guard: records live beside the data and never show, a running change blocks its retry, a stale claim is taken over, a failure records nothing, and handles sharing a store share the records.

use std::sync::Arc;
use std::time::Duration;

use burrow_backend::{Backend, ErrorKind, FileContext, GrepQuery, VPath};
use burrow_object_store::keys::EFFECTS_DIR;
use burrow_object_store::object_store::memory::InMemory;
use burrow_object_store::object_store::path::Path;
use burrow_object_store::object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use burrow_object_store::{ObjectStoreBackend, ObjectStoreOptions};
use futures::TryStreamExt;

use super::spy::Spy;

fn p(s: &str) -> VPath {
    VPath::parse(s).expect("path")
}

#[tokio::test]
async fn records_live_beside_the_data_and_never_show() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let backend = ObjectStoreBackend::with_options(
        Arc::clone(&store),
        ObjectStoreOptions::default().with_root("r"),
    )
    .expect("backend");
    // A tenant named like the records' directory must not see them either.
    for tenant in ["t", EFFECTS_DIR] {
        let ctx = FileContext::for_tenant(tenant).with_effect_key("k1");
        backend
            .write(&ctx, &p("/a.txt"), "x\n")
            .await
            .expect("write");
        let plain = FileContext::for_tenant(tenant);
        let listing = backend.ls(&plain, &VPath::root(), 100).await.expect("ls");
        assert_eq!(listing.entries.len(), 1, "{tenant}: {:?}", listing.entries);
        let all = backend
            .glob(&plain, "**", &VPath::root(), 100)
            .await
            .expect("glob");
        assert_eq!(all.files.len(), 1);
        let grep = backend
            .grep(&plain, &GrepQuery::regex("."), &VPath::root(), 100)
            .await
            .expect("grep");
        assert_eq!(grep.matches.len(), 1);
    }
    let mut records: Vec<String> = store
        .list(Some(&Path::from(format!("r/{EFFECTS_DIR}"))))
        .map_ok(|m| m.location.as_ref().to_owned())
        .try_collect()
        .await
        .expect("raw listing");
    records.sort();
    assert_eq!(
        records,
        [
            format!("r/{EFFECTS_DIR}/%2Eburrow-effects/k1"),
            format!("r/{EFFECTS_DIR}/t/k1")
        ]
    );
}

#[tokio::test]
async fn handles_sharing_a_store_share_the_records() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let first = ObjectStoreBackend::new(Arc::clone(&store));
    let second = ObjectStoreBackend::new(Arc::clone(&store));
    let keyed = FileContext::for_tenant("t").with_effect_key("edit-1");
    first
        .write(&FileContext::for_tenant("t"), &p("/f"), "a a\n")
        .await
        .expect("write");
    let once = first
        .edit(&keyed, &p("/f"), "a", "b", true)
        .await
        .expect("edit");
    let replayed = second
        .edit(&keyed, &p("/f"), "a", "b", true)
        .await
        .expect("replay on another handle");
    assert_eq!(once, replayed);
    assert_eq!(
        second.read_bytes(&keyed, &p("/f")).await.expect("read"),
        b"b b\n"
    );
}

#[tokio::test]
async fn refusals_are_recorded_and_replayed() {
    let backend = ObjectStoreBackend::in_memory();
    let keyed = FileContext::for_tenant("t").with_effect_key("missing-edit");
    let first = backend
        .edit(&keyed, &p("/nope"), "a", "b", false)
        .await
        .expect_err("missing");
    assert_eq!(first.kind(), ErrorKind::NotFound);
    backend
        .write(&FileContext::for_tenant("t"), &p("/nope"), "a")
        .await
        .expect("write");
    let again = backend
        .edit(&keyed, &p("/nope"), "a", "b", false)
        .await
        .expect_err("replayed refusal");
    assert_eq!(
        (again.kind(), again.message()),
        (first.kind(), first.message())
    );
    assert_eq!(
        backend.read_bytes(&keyed, &p("/nope")).await.expect("read"),
        b"a",
        "the replay changed nothing"
    );
    let other_op = backend
        .delete(&keyed, &p("/nope"))
        .await
        .expect_err("key used by an edit");
    assert_eq!(
        other_op.kind(),
        ErrorKind::InvalidArgument,
        "{}",
        other_op.message()
    );
}

/// A pending record, as a change still running (or a dead process) leaves it.
async fn put_pending(store: &dyn ObjectStore, key: &str) {
    store
        .put(
            &Path::from(format!("{EFFECTS_DIR}/t/{key}")),
            PutPayload::from(r#"{"op":"write","state":"pending"}"#),
        )
        .await
        .expect("put");
}

#[tokio::test]
async fn a_change_still_running_blocks_its_retry_with_conflict() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let backend = ObjectStoreBackend::new(Arc::clone(&store));
    put_pending(store.as_ref(), "running").await;
    let keyed = FileContext::for_tenant("t").with_effect_key("running");
    let err = backend
        .write(&keyed, &p("/f"), "x")
        .await
        .expect_err("in progress");
    assert_eq!(err.kind(), ErrorKind::Conflict, "{}", err.message());
    assert_eq!(
        backend
            .read_bytes(&keyed, &p("/f"))
            .await
            .expect_err("nothing written")
            .kind(),
        ErrorKind::NotFound
    );
}

#[tokio::test]
async fn a_stale_claim_is_taken_over() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let options = ObjectStoreOptions::default().with_pending_effect_ttl(Duration::ZERO);
    let backend = ObjectStoreBackend::with_options(Arc::clone(&store), options).expect("backend");
    put_pending(store.as_ref(), "dead").await;
    let keyed = FileContext::for_tenant("t").with_effect_key("dead");
    tokio::time::sleep(Duration::from_millis(5)).await;
    backend
        .write(&keyed, &p("/f"), "x")
        .await
        .expect("taken over");
    backend
        .write(&FileContext::for_tenant("t"), &p("/f"), "changed")
        .await
        .expect("write");
    backend
        .write(&keyed, &p("/f"), "y")
        .await
        .expect("replayed");
    assert_eq!(
        backend.read_bytes(&keyed, &p("/f")).await.expect("read"),
        b"changed",
        "recorded once taken over"
    );
}

#[tokio::test]
async fn a_failure_records_nothing_so_a_retry_runs() {
    let spy = Arc::new(Spy::new(Arc::new(InMemory::new())));
    let backend = ObjectStoreBackend::new(Arc::clone(&spy) as Arc<dyn ObjectStore>);
    let keyed = FileContext::for_tenant("t").with_effect_key("fails-once");
    spy.fail_next_file_puts(1);
    let first = backend
        .write(&keyed, &p("/new.txt"), "x")
        .await
        .expect_err("the store broke");
    assert!(
        !first.is_refusal(),
        "a failure, not a refusal: {}",
        first.message()
    );
    assert!(
        first.message().contains("/new.txt") && !first.message().contains("t/new.txt"),
        "{}",
        first.message()
    );
    backend
        .write(&keyed, &p("/new.txt"), "y")
        .await
        .expect("the retry runs again");
    backend
        .write(&keyed, &p("/new.txt"), "z")
        .await
        .expect("and is then recorded");
    assert_eq!(
        backend
            .read_bytes(&keyed, &p("/new.txt"))
            .await
            .expect("read"),
        b"y"
    );
}
