//! Bounds: big objects are refused from their size before any byte is downloaded, and keys too long for the store are refused as paths, with nothing written.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use burrow_backend::{Backend, ErrorKind, FileContext, GrepQuery, VPath};
use burrow_object_store::object_store::memory::InMemory;
use burrow_object_store::object_store::path::Path;
use burrow_object_store::object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use burrow_object_store::{ObjectStoreBackend, ObjectStoreOptions, S3_MAX_KEY_BYTES};

use super::common::{s3_backend, s3_endpoint};
use super::spy::Spy;

fn ctx() -> FileContext {
    FileContext::for_tenant("t")
}

#[tokio::test]
async fn a_big_object_is_refused_before_its_body_is_downloaded() {
    let spy = Arc::new(Spy::new(Arc::new(InMemory::new())));
    let options = ObjectStoreOptions::default().with_max_file_size(1024);
    let backend =
        ObjectStoreBackend::with_options(Arc::clone(&spy) as Arc<dyn ObjectStore>, options)
            .expect("backend");
    // Put by someone else, straight into the store: 1 MiB against a 1 KiB limit.
    spy.put(
        &Path::from("t/big.bin"),
        PutPayload::from(vec![b'x'; 1 << 20]),
    )
    .await
    .expect("put");
    let path = VPath::parse("/big.bin").expect("p");
    for result in [
        backend.read_bytes(&ctx(), &path).await.map(|_| ()),
        backend.read(&ctx(), &path, 0, 10).await.map(|_| ()),
        backend
            .edit(&ctx(), &path, "x", "y", false)
            .await
            .map(|_| ()),
    ] {
        let err = result.expect_err("too large");
        assert_eq!(err.kind(), ErrorKind::TooLarge, "{}", err.message());
        assert!(err.message().contains("/big.bin"), "{}", err.message());
    }
    let grep = backend
        .grep(&ctx(), &GrepQuery::fixed("x"), &VPath::root(), 10)
        .await
        .expect("grep");
    assert!(grep.matches.is_empty(), "grep skips files over the limit");
    assert_eq!(
        spy.downloaded.load(Ordering::SeqCst),
        0,
        "not one byte of the big object was downloaded"
    );
    let small = VPath::parse("/small.txt").expect("p");
    backend.write(&ctx(), &small, "x\n").await.expect("write");
    backend.read_bytes(&ctx(), &small).await.expect("read");
    assert_eq!(
        spy.downloaded.load(Ordering::SeqCst),
        2,
        "the spy does count downloads"
    );
}

#[tokio::test]
async fn a_write_past_the_max_size_writes_nothing() {
    let backend = ObjectStoreBackend::with_options(
        Arc::new(InMemory::new()),
        ObjectStoreOptions::default().with_max_file_size(4),
    )
    .expect("backend");
    let path = VPath::parse("/f").expect("p");
    let err = backend
        .write(&ctx(), &path, "12345")
        .await
        .expect_err("too large");
    assert_eq!(err.kind(), ErrorKind::TooLarge);
    assert_eq!(
        backend
            .read_bytes(&ctx(), &path)
            .await
            .expect_err("nothing")
            .kind(),
        ErrorKind::NotFound
    );
}

/// A path whose key would pass S3's 1,024 bytes is refused as InvalidPath, and nothing is written.
async fn long_keys_refused(backend: &ObjectStoreBackend) {
    let long = format!("/{}", vec!["s".repeat(200); 6].join("/"));
    let path = VPath::parse(&long).expect("a legal path");
    let err = backend
        .write(&ctx(), &path, "x")
        .await
        .expect_err("too long for the store");
    assert_eq!(err.kind(), ErrorKind::InvalidPath, "{}", err.message());
    assert!(
        err.message().contains(&S3_MAX_KEY_BYTES.to_string()),
        "{}",
        err.message()
    );
    let listing = backend.ls(&ctx(), &VPath::root(), 10).await.expect("ls");
    assert!(listing.entries.is_empty(), "nothing was written");
    let short = VPath::parse("/fits.txt").expect("p");
    backend
        .write(&ctx(), &short, "x")
        .await
        .expect("a short path still works");
}

#[tokio::test]
async fn keys_longer_than_the_store_allows_are_invalid_paths() {
    let options = ObjectStoreOptions::default().with_max_key_bytes(Some(S3_MAX_KEY_BYTES));
    long_keys_refused(
        &ObjectStoreBackend::with_options(Arc::new(InMemory::new()), options).expect("backend"),
    )
    .await;
}

#[tokio::test]
async fn local_names_over_255_bytes_once_escaped_are_invalid_paths() {
    let dir = tempfile::tempdir().expect("temp dir");
    let backend = ObjectStoreBackend::local(dir.path()).expect("backend");
    // 100 bytes as a name, 300 once every "%" is escaped.
    let path = VPath::parse(&format!("/{}", "%".repeat(100))).expect("p");
    let err = backend
        .write(&ctx(), &path, "x")
        .await
        .expect_err("too long once escaped");
    assert_eq!(err.kind(), ErrorKind::InvalidPath, "{}", err.message());
    let fits = VPath::parse(&format!("/{}", "%".repeat(85))).expect("p");
    backend
        .write(&ctx(), &fits, "x")
        .await
        .expect("255 bytes once escaped fits");
}

/// The tests that need the S3 test server (`burrow_testkit::Part::S3`).
mod s3 {
    use super::*;

    #[tokio::test]
    async fn s3_keys_are_limited_to_1024_bytes() {
        let endpoint = s3_endpoint();
        let options = ObjectStoreOptions::default().with_max_key_bytes(Some(S3_MAX_KEY_BYTES));
        let backend =
            tokio::task::spawn_blocking(move || s3_backend(&endpoint, "keylimit", options))
                .await
                .expect("setup");
        long_keys_refused(&backend).await;
    }
}
