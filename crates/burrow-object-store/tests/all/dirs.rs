//! Made directories as marker objects and `delete_tree` as pages of list + batch delete: the marker is never listed, goes with its directory, and a delete that fails mid-way leaves part of the tree and finishes when run again.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use burrow_backend::{Backend, ErrorKind, FileContext, VPath};
use burrow_object_store::ObjectStoreBackend;
use burrow_object_store::dirs::TREE_PAGE;
use burrow_object_store::keys::DIR_MARKER;
use burrow_object_store::object_store::ObjectStore;
use burrow_object_store::object_store::memory::InMemory;
use futures::{StreamExt, TryStreamExt};

use super::common::{s3_backend, s3_endpoint};
use super::spy::Spy;

fn ctx() -> FileContext {
    FileContext::for_tenant("t")
}

fn p(s: &str) -> VPath {
    VPath::parse(s).expect("path")
}

/// Every key in `store`, sorted.
async fn keys(store: &dyn ObjectStore) -> Vec<String> {
    let mut all: Vec<String> = store
        .list(None)
        .map_ok(|meta| meta.location.to_string())
        .try_collect()
        .await
        .expect("list the store");
    all.sort();
    all
}

/// How many files glob finds beneath `dir`.
async fn files_beneath(b: &ObjectStoreBackend, dir: &str) -> usize {
    b.glob(&ctx(), "**", &p(dir), 100_000)
        .await
        .expect("glob")
        .files
        .len()
}

/// A made directory is one marker object, listed by no one, kept while
/// files come and go beneath it, and deleted with the directory.
async fn markers_hold_made_directories(b: &ObjectStoreBackend) {
    let store = b.store().as_ref();
    b.make_dir(&ctx(), &p("/m/inner"), true)
        .await
        .expect("mkdir -p");
    let root = b.options().root.clone();
    let prefix = if root.is_empty() {
        String::new()
    } else {
        format!("{root}/")
    };
    assert_eq!(
        keys(store).await,
        [format!("{prefix}t/m/inner/{DIR_MARKER}")],
        "one marker, for the leaf only"
    );
    b.write(&ctx(), &p("/m/inner/f.txt"), "f")
        .await
        .expect("write");
    b.delete(&ctx(), &p("/m/inner/f.txt"))
        .await
        .expect("delete");
    let inner = b.ls(&ctx(), &p("/m/inner"), 10).await.expect("ls");
    assert!(inner.entries.is_empty(), "the marker is never listed");
    assert_eq!(files_beneath(b, "/").await, 0, "glob sees no marker");
    let e = b.delete(&ctx(), &p("/m")).await.expect_err("delete /m");
    assert_eq!(e.kind(), ErrorKind::DirectoryNotEmpty);
    b.delete(&ctx(), &p("/m/inner"))
        .await
        .expect("delete the empty made dir");
    assert_eq!(keys(store).await, Vec::<String>::new(), "the marker went");
    let e = b.ls(&ctx(), &p("/m"), 10).await.expect_err("ls /m");
    assert_eq!(
        e.kind(),
        ErrorKind::NotFound,
        "its implicit parent went too"
    );
}

#[tokio::test]
async fn markers_hold_made_directories_in_memory() {
    markers_hold_made_directories(&ObjectStoreBackend::in_memory()).await;
}

#[tokio::test]
async fn markers_hold_made_directories_in_a_local_folder() {
    let dir = tempfile::tempdir().expect("temp dir");
    let b = ObjectStoreBackend::local(dir.path()).expect("local store");
    markers_hold_made_directories(&b).await;
}

/// `/t` with `n` files in 10 directories, a made empty directory, and a sibling beside it.
async fn plant_tree(b: &ObjectStoreBackend, n: usize) {
    futures::stream::iter(0..n)
        .map(|i| {
            let path = p(&format!("/tree/{}/{i}.txt", i % 10));
            async move { b.write(&ctx(), &path, "x").await.map(|_| ()) }
        })
        .buffer_unordered(16)
        .try_collect::<Vec<()>>()
        .await
        .expect("plant the tree");
    b.make_dir(&ctx(), &p("/tree/made/empty"), true)
        .await
        .expect("mkdir");
    b.write(&ctx(), &p("/tree.txt"), "beside")
        .await
        .expect("write");
}

#[tokio::test]
async fn delete_tree_goes_page_by_page_and_a_failure_mid_way_is_finished_by_a_rerun() {
    let spy = Arc::new(Spy::new(Arc::new(InMemory::new())));
    let b = ObjectStoreBackend::new(Arc::clone(&spy) as Arc<dyn ObjectStore>);
    let n = 2 * TREE_PAGE + 300;
    plant_tree(&b, n).await;
    // The store drops the connection after 1,500 objects are deleted.
    spy.allow_deletes(1500);
    let e = b
        .delete_tree(&ctx(), &p("/tree"))
        .await
        .expect_err("a delete_tree whose store fails");
    assert_eq!(e.kind(), ErrorKind::Failure);
    assert!(
        !e.message().contains("connection dropped"),
        "{}",
        e.message()
    );
    let left = files_beneath(&b, "/tree").await;
    assert!(
        left > 0 && left < n,
        "part of the tree is left ({left} of {n} files)"
    );
    assert!(
        b.ls(&ctx(), &p("/tree"), 10).await.is_ok(),
        "/tree still lists"
    );
    spy.allow_deletes(i64::MAX);
    spy.delete_batches.store(0, Ordering::SeqCst);
    b.delete_tree(&ctx(), &p("/tree"))
        .await
        .expect("the rerun finishes it");
    assert!(
        spy.delete_batches.load(Ordering::SeqCst) >= left.div_ceil(TREE_PAGE),
        "deleted a page at a time"
    );
    let e = b.ls(&ctx(), &p("/tree"), 10).await.expect_err("ls /tree");
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert_eq!(
        keys(spy.as_ref()).await,
        ["t/tree.txt".to_owned()],
        "nothing of the tree is left, the sibling is"
    );
}

#[tokio::test]
async fn delete_tree_under_an_effect_key_is_replayed() {
    let b = ObjectStoreBackend::in_memory();
    let key = ctx().with_effect_key("rm-tree");
    b.write(&ctx(), &p("/d/a.txt"), "a").await.expect("write");
    b.delete_tree(&key, &p("/d")).await.expect("delete_tree");
    b.write(&ctx(), &p("/d/b.txt"), "b")
        .await
        .expect("write again");
    b.delete_tree(&key, &p("/d"))
        .await
        .expect("the retry replays");
    assert_eq!(
        b.read_bytes(&ctx(), &p("/d/b.txt")).await.expect("read"),
        b"b",
        "the retry removed nothing"
    );
    let e = b
        .delete(&key, &p("/d/b.txt"))
        .await
        .expect_err("the key of a delete_tree on a delete");
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
}

/// The tests that need the S3 test server (`burrow_testkit::Part::S3`).
mod s3 {
    use super::*;

    #[tokio::test]
    async fn markers_hold_made_directories_on_s3() {
        let endpoint = s3_endpoint();
        let b = tokio::task::spawn_blocking(move || {
            s3_backend(&endpoint, "markers", Default::default())
        })
        .await
        .expect("setup");
        markers_hold_made_directories(&b).await;
    }

    #[tokio::test]
    async fn delete_tree_on_s3_removes_more_than_a_page() {
        let endpoint = s3_endpoint();
        let b =
            tokio::task::spawn_blocking(move || s3_backend(&endpoint, "tree", Default::default()))
                .await
                .expect("setup");
        let n = TREE_PAGE + 200;
        plant_tree(&b, n).await;
        assert_eq!(files_beneath(&b, "/tree").await, n);
        b.delete_tree(&ctx(), &p("/tree"))
            .await
            .expect("delete_tree");
        assert_eq!(files_beneath(&b, "/tree").await, 0);
        let top = b.ls(&ctx(), &p("/"), 10).await.expect("ls /");
        let names: Vec<&str> = top.entries.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(names, ["/tree.txt"]);
    }
}
