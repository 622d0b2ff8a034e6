//! Listings page correctly: a directory of 5,000 entries (more than S3's 1,000-key pages), files and subdirectories interleaved, lists whole and in order; a name that is both a file and a directory lists once.

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
    put_all(backend, keys).await;
}

/// Puts one small object at each of `keys` straight into the store, 16 at a time.
async fn put_all(backend: &ObjectStoreBackend, keys: Vec<String>) {
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

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_file_and_a_directory_of_one_name_list_once_on_s3() {
        let endpoint = s3_endpoint();
        let backend = tokio::task::spawn_blocking(move || {
            s3_backend(&endpoint, "clash", ObjectStoreOptions::default())
        })
        .await
        .expect("setup");
        a_file_and_a_directory_of_one_name_list_once(&backend).await;
    }
}

/// How many files sort between the clashing name's object and its prefix:
/// more than a page, so the paged listing (S3) returns the two pages apart.
const BETWEEN: usize = 1_100;

/// Puts, beneath tenant "t", the file `/clash/a`, the files
/// `/clash/a-{i}` and the file `/clash/a/x` (so `/clash/a` is a file and a
/// directory, as two racing processes can leave it; see `mutate.rs`).
async fn fill_clash(backend: &ObjectStoreBackend) {
    let root = &backend.options().root;
    let base = if root.is_empty() {
        "t/clash".to_owned()
    } else {
        format!("{root}/t/clash")
    };
    let mut keys: Vec<String> = (0..BETWEEN).map(|i| format!("{base}/a-{i:04}")).collect();
    keys.push(format!("{base}/a"));
    keys.push(format!("{base}/a/x"));
    put_all(backend, keys).await;
}

/// `ls` lists a name that is both a file and a directory once, as the
/// directory, and it takes one place of the limit; the file still reads.
async fn a_file_and_a_directory_of_one_name_list_once(backend: &ObjectStoreBackend) {
    fill_clash(backend).await;
    let ctx = FileContext::for_tenant("t");
    let clash = VPath::parse("/clash").expect("clash");
    let all = backend.ls(&ctx, &clash, usize::MAX).await.expect("ls");
    assert!(!all.truncated);
    assert_eq!(all.entries.len(), BETWEEN + 1, "every name once");
    let a: Vec<&burrow_backend::FileInfo> = all
        .entries
        .iter()
        .filter(|e| e.path == "/clash/a")
        .collect();
    assert_eq!(a.len(), 1, "/clash/a listed once: {a:?}");
    assert!(
        a[0].is_dir && a[0].size.is_none(),
        "as the directory: {a:?}"
    );
    let head = backend.ls(&ctx, &clash, 2).await.expect("ls limit");
    let names: Vec<(&str, bool)> = head
        .entries
        .iter()
        .map(|e| (e.path.as_str(), e.is_dir))
        .collect();
    assert_eq!(names, [("/clash/a", true), ("/clash/a-0000", false)]);
    assert!(head.truncated);
    let inside = backend
        .ls(&ctx, &VPath::parse("/clash/a").expect("a"), 10)
        .await
        .expect("ls a");
    assert_eq!(inside.entries.len(), 1);
    assert_eq!(inside.entries[0].path, "/clash/a/x");
    let read = backend
        .read_bytes(&ctx, &VPath::parse("/clash/a").expect("a"))
        .await
        .expect("the file reads as a file");
    assert_eq!(read, b"x");
}

// A local folder cannot hold a file and a directory of one name (the host
// refuses), so the clash is tested where it can happen: in memory and on S3.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_and_a_directory_of_one_name_list_once_in_memory() {
    a_file_and_a_directory_of_one_name_list_once(&ObjectStoreBackend::in_memory()).await;
}
