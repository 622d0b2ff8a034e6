//! Per-tenant quotas: a write past the bytes or files quota is refused with QuotaExceeded and writes nothing.

use burrow_backend::{Backend, ErrorKind};
use burrow_sqlite::StoreBackend;

use super::common::{TempStore, ctx, p};

#[tokio::test]
async fn bytes_quota_refuses_growth_and_allows_shrinking() {
    let t = TempStore::new();
    let files = StoreBackend::builder(&t.store).max_bytes(10).build();
    let c = ctx("t");
    files.write(&c, &p("/a"), "12345").await.unwrap();
    files.write(&c, &p("/b"), "12345").await.unwrap();
    let err = files.write(&c, &p("/c"), "1").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::QuotaExceeded);
    assert!(err.message().contains("/c"), "{err}");
    assert_eq!(
        files.read_bytes(&c, &p("/c")).await.unwrap_err().kind(),
        ErrorKind::NotFound
    );
    let err = files.write(&c, &p("/a"), "123456").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::QuotaExceeded);
    assert_eq!(files.read_bytes(&c, &p("/a")).await.unwrap(), b"12345");
    let err = files
        .edit(&c, &p("/a"), "1", "11", false)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::QuotaExceeded);
    assert_eq!(files.read_bytes(&c, &p("/a")).await.unwrap(), b"12345");
    // Shrinking and deleting are always allowed, and make room.
    files.edit(&c, &p("/a"), "12", "", false).await.unwrap();
    files.write(&c, &p("/c"), "12").await.unwrap();
    files.delete(&c, &p("/b")).await.unwrap();
    assert_eq!(files.usage("t").await.unwrap(), (5, 2));
    // Another tenant has a quota of its own.
    files
        .write(&ctx("u"), &p("/a"), "1234567890")
        .await
        .unwrap();
}

#[tokio::test]
async fn files_quota_counts_files_not_replacements() {
    let t = TempStore::new();
    let files = StoreBackend::builder(&t.store).max_files(2).build();
    let c = ctx("t");
    files.write(&c, &p("/d/a"), "a").await.unwrap();
    files.write(&c, &p("/d/b"), "b").await.unwrap();
    files.write(&c, &p("/d/a"), "replaced").await.unwrap();
    let err = files.write(&c, &p("/d/c"), "c").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::QuotaExceeded);
    assert_eq!(files.ls(&c, &p("/d"), 10).await.unwrap().entries.len(), 2);
    let err = files
        .write_many(&c, vec![(p("/e/1"), b"1".to_vec())])
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::QuotaExceeded);
    assert_eq!(
        files.ls(&c, &p("/e"), 10).await.unwrap_err().kind(),
        ErrorKind::NotFound
    );
    files.delete(&c, &p("/d/b")).await.unwrap();
    files.write(&c, &p("/d/c"), "c").await.unwrap();
}

#[tokio::test]
async fn a_quota_refusal_under_an_effect_key_is_replayed() {
    let t = TempStore::new();
    let files = StoreBackend::builder(&t.store).max_files(1).build();
    let c = ctx("t");
    files.write(&c, &p("/a"), "a").await.unwrap();
    let key = c.with_effect_key("k");
    assert_eq!(
        files.write(&key, &p("/b"), "b").await.unwrap_err().kind(),
        ErrorKind::QuotaExceeded
    );
    files.delete(&c, &p("/a")).await.unwrap();
    assert_eq!(
        files.write(&key, &p("/b"), "b").await.unwrap_err().kind(),
        ErrorKind::QuotaExceeded
    );
    assert_eq!(files.usage("t").await.unwrap(), (0, 0));
}
