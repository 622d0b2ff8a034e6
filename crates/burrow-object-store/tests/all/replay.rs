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

use super::common::s3_backend;
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
            PutPayload::from(r#"{"op":"write","path":"/f","state":"pending"}"#),
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

#[tokio::test]
async fn a_key_replays_only_the_same_operation_on_the_same_path() {
    let backend = ObjectStoreBackend::in_memory();
    let keyed = FileContext::for_tenant("t").with_effect_key("k");
    backend
        .write(&keyed, &p("/a.txt"), "first")
        .await
        .expect("write");
    let err = backend
        .write(&keyed, &p("/b.txt"), "second")
        .await
        .expect_err("same key, another path");
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{}", err.message());
    assert!(
        err.message().contains("/a.txt") && err.message().contains("/b.txt"),
        "{}",
        err.message()
    );
    assert_eq!(
        backend
            .read_bytes(&keyed, &p("/b.txt"))
            .await
            .expect_err("nothing written")
            .kind(),
        ErrorKind::NotFound
    );
    let err = backend
        .edit(&keyed, &p("/a.txt"), "first", "x", false)
        .await
        .expect_err("same key, another operation");
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{}", err.message());
    assert_eq!(
        backend
            .read_bytes(&keyed, &p("/a.txt"))
            .await
            .expect("read"),
        b"first"
    );
}

/// A keyed edit whose outcome record cannot be stored after the edit landed, then retried: applied once.
async fn a_lost_outcome_record_never_applies_twice(backend: ObjectStoreBackend, spy: &Spy) {
    let plain = FileContext::for_tenant("t");
    let keyed = FileContext::for_tenant("t").with_effect_key("append-once");
    backend
        .write(&plain, &p("/log.txt"), "x")
        .await
        .expect("write");
    spy.fail_next_outcome_records(1);
    let first = backend.edit(&keyed, &p("/log.txt"), "x", "xx", false).await;
    let first = first.expect("the edit landed, so its outcome is returned");
    assert_eq!(first.occurrences, Some(1));
    // However the retries come (the claim is stale at once), the edit is not applied again.
    for _ in 0..2 {
        let again = backend
            .edit(&keyed, &p("/log.txt"), "x", "xx", false)
            .await
            .expect("replayed");
        assert_eq!(again, first);
        assert_eq!(
            backend
                .read_bytes(&plain, &p("/log.txt"))
                .await
                .expect("read"),
            b"xx",
            "applied exactly once"
        );
    }
    // A keyed write whose outcome record fails: the retry replays it, even after another write.
    let keyed = FileContext::for_tenant("t").with_effect_key("write-once");
    spy.fail_next_outcome_records(1);
    backend
        .write(&keyed, &p("/w.txt"), "keyed")
        .await
        .expect("written");
    backend
        .write(&keyed, &p("/w.txt"), "keyed")
        .await
        .expect("replayed from the tag");
    backend
        .write(&plain, &p("/w.txt"), "later")
        .await
        .expect("write");
    backend
        .write(&keyed, &p("/w.txt"), "keyed")
        .await
        .expect("replayed from the record");
    assert_eq!(
        backend
            .read_bytes(&plain, &p("/w.txt"))
            .await
            .expect("read"),
        b"later"
    );
}

fn ttl_zero() -> ObjectStoreOptions {
    ObjectStoreOptions::default().with_pending_effect_ttl(Duration::ZERO)
}

#[tokio::test]
async fn a_lost_outcome_record_never_applies_twice_in_memory() {
    let spy = Arc::new(Spy::new(Arc::new(InMemory::new())));
    let backend =
        ObjectStoreBackend::with_options(Arc::clone(&spy) as Arc<dyn ObjectStore>, ttl_zero())
            .expect("backend");
    a_lost_outcome_record_never_applies_twice(backend, &spy).await;
}

/// The same on the S3 test server (a module named `s3`, so `cargo xtask test` can
/// report it skipped where setup started no server).
mod s3 {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_lost_outcome_record_never_applies_twice_on_s3() {
        let endpoint = burrow_testkit::require(burrow_testkit::Part::S3);
        let on_s3 = s3_backend(&endpoint, "replay-once", ttl_zero());
        let spy = Arc::new(Spy::new(Arc::clone(on_s3.store())));
        let backend = ObjectStoreBackend::with_options(
            Arc::clone(&spy) as Arc<dyn ObjectStore>,
            on_s3.options().clone(),
        )
        .expect("backend");
        a_lost_outcome_record_never_applies_twice(backend, &spy).await;
    }
}

#[tokio::test]
async fn a_fresh_claim_is_judged_by_the_store_clock_not_the_local_one() {
    // The store's clock runs an hour behind: by the local clock every claim
    // looks an hour old, by the store's it is fresh.
    let spy = Arc::new(Spy::new(Arc::new(InMemory::new())));
    spy.skew_clock(-3600);
    let backend = ObjectStoreBackend::new(Arc::clone(&spy) as Arc<dyn ObjectStore>);
    put_pending(spy.as_ref(), "running").await;
    let keyed = FileContext::for_tenant("t").with_effect_key("running");
    let err = backend
        .write(&keyed, &p("/f"), "x")
        .await
        .expect_err("still running by the store's clock");
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
async fn an_interrupted_change_whose_file_moved_on_is_refused_not_repeated() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let backend = ObjectStoreBackend::with_options(Arc::clone(&store), ttl_zero()).expect("b");
    let plain = FileContext::for_tenant("t");
    backend.write(&plain, &p("/f"), "v1").await.expect("write");
    // A claimant that announced "write /f over version \"0\"" and died; /f has changed since.
    store
        .put(
            &Path::from(format!("{EFFECTS_DIR}/t/gone")),
            PutPayload::from(
                r#"{"op":"write","path":"/f","state":"pending","intent":{"before":{"e_tag":"\"old\"","version":null},"outcome":{"path":"/f"}}}"#,
            ),
        )
        .await
        .expect("put");
    let keyed = FileContext::for_tenant("t").with_effect_key("gone");
    let err = backend
        .write(&keyed, &p("/f"), "v2")
        .await
        .expect_err("undecidable");
    assert_eq!(err.kind(), ErrorKind::Conflict, "{}", err.message());
    assert_eq!(
        backend.read_bytes(&plain, &p("/f")).await.expect("read"),
        b"v1"
    );
    let again = backend
        .write(&keyed, &p("/f"), "v2")
        .await
        .expect_err("recorded");
    assert_eq!(again.message(), err.message());
}
