//! Listings page correctly: a directory of 5,000 entries (more than S3's 1,000-key pages), files and subdirectories interleaved, lists whole and in order.

use std::sync::Arc;

use burrow_backend::{Backend, FileContext, VPath};
use burrow_object_store::object_store::path::Path;
use burrow_object_store::object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use burrow_object_store::{ObjectStoreBackend, ObjectStoreOptions};
use futures::{StreamExt, TryStreamExt, stream};

use super::common::{s3_backend, s3_endpoint};

const FILES: usize = 4_900;
const SUBDIRS: usize = 100;

/// Fills `/big` of tenant "t" with FILES files and SUBDIRS subdirectories
/// (two files each), writing the objects directly: the test is about listing.
async fn fill(backend: &ObjectStoreBackend) {
    let root = &backend.options().root;
    let base = if root.is_empty() {
        "t/big".to_owned()
    } else {
        format!("{root}/t/big")
    };
    let mut keys: Vec<String> = (0..FILES).map(|i| format!("{base}/f{i:05}.txt")).collect();
    for d in 0..SUBDIRS {
        // Named to sort between the files, so directories fall on every page.
        keys.push(format!("{base}/f{:05}.d/one", d * 49));
        keys.push(format!("{base}/f{:05}.d/two", d * 49));
    }
    let store: Arc<dyn ObjectStore> = Arc::clone(backend.store());
    stream::iter(keys)
        .map(|key| {
            let store = Arc::clone(&store);
            async move {
                store
                    .put(&Path::parse(&key).expect("key"), PutPayload::from("x"))
                    .await
            }
        })
        .buffer_unordered(16)
        .try_collect::<Vec<_>>()
        .await
        .expect("fill");
}

async fn five_thousand_entries(backend: &ObjectStoreBackend) {
    fill(backend).await;
    let ctx = FileContext::for_tenant("t");
    let big = VPath::parse("/big").expect("big");
    let listing = backend.ls(&ctx, &big, usize::MAX).await.expect("ls");
    assert!(!listing.truncated);
    assert_eq!(
        listing.entries.len(),
        FILES + SUBDIRS,
        "every file and every directory, once"
    );
    let dirs = listing.entries.iter().filter(|e| e.is_dir).count();
    assert_eq!(dirs, SUBDIRS);
    let paths: Vec<&str> = listing.entries.iter().map(|e| e.path.as_str()).collect();
    let mut sorted = paths.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(paths, sorted, "sorted by path, no duplicates across pages");
    let head = backend.ls(&ctx, &big, 1234).await.expect("ls limit");
    assert!(head.truncated);
    assert_eq!(
        head.entries,
        listing.entries[..1234].to_vec(),
        "the first entries in order"
    );
    let found = backend
        .glob(&ctx, "*.txt", &big, usize::MAX)
        .await
        .expect("glob");
    assert_eq!(found.files.len(), FILES);
    let inner = backend
        .glob(&ctx, "f*.d/*", &big, usize::MAX)
        .await
        .expect("glob");
    assert_eq!(inner.files.len(), 2 * SUBDIRS);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_thousand_entries_in_memory() {
    five_thousand_entries(&ObjectStoreBackend::in_memory()).await;
}

/// The tests that need the S3 test server (`burrow_testkit::Part::S3`).
mod s3 {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn five_thousand_entries_on_s3_page_correctly() {
        let endpoint = s3_endpoint();
        let backend = tokio::task::spawn_blocking(move || {
            s3_backend(&endpoint, "paging", ObjectStoreOptions::default())
        })
        .await
        .expect("setup");
        five_thousand_entries(&backend).await;
    }
}
