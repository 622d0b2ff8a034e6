//! Tenant isolation on a shared store: another tenant's files look missing to every operation, on every handle.

use std::sync::Arc;

use burrow_backend::{Backend, ErrorKind, FileContext, GrepQuery, VPath};
use burrow_object_store::ObjectStoreBackend;
use burrow_object_store::object_store::ObjectStore;
use burrow_object_store::object_store::memory::InMemory;

fn p(s: &str) -> VPath {
    VPath::parse(s).expect("path")
}

#[tokio::test]
async fn another_tenants_files_look_missing_from_every_handle() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let alice_side = ObjectStoreBackend::new(Arc::clone(&store));
    let bob_side = ObjectStoreBackend::new(Arc::clone(&store));
    let alice = FileContext::for_tenant("alice");
    let bob = FileContext::for_tenant("bob");
    alice_side
        .write(&alice, &p("/secret/plan.txt"), "alice's plan\n")
        .await
        .expect("write");
    for b in [&alice_side, &bob_side] {
        assert_eq!(
            b.read_bytes(&bob, &p("/secret/plan.txt"))
                .await
                .expect_err("hidden")
                .kind(),
            ErrorKind::NotFound
        );
        assert_eq!(
            b.ls(&bob, &p("/secret"), 10)
                .await
                .expect_err("hidden")
                .kind(),
            ErrorKind::NotFound
        );
        assert!(
            b.ls(&bob, &VPath::root(), 10)
                .await
                .expect("ls /")
                .entries
                .is_empty()
        );
        assert!(
            b.glob(&bob, "**", &VPath::root(), 10)
                .await
                .expect("glob")
                .files
                .is_empty()
        );
        assert!(
            b.grep(&bob, &GrepQuery::fixed("plan"), &VPath::root(), 10)
                .await
                .expect("grep")
                .matches
                .is_empty()
        );
        let edit = b
            .edit(&bob, &p("/secret/plan.txt"), "alice", "bob", false)
            .await
            .expect_err("hidden");
        assert_eq!(edit.kind(), ErrorKind::NotFound);
        assert_eq!(
            b.delete(&bob, &p("/secret/plan.txt"))
                .await
                .expect_err("hidden")
                .kind(),
            ErrorKind::NotFound
        );
        // Bob may make his own /secret: it is not Alice's directory.
        b.write(&bob, &p("/secret"), "bob's file")
            .await
            .expect("bob's own path");
        b.delete(&bob, &p("/secret"))
            .await
            .expect("delete bob's file");
    }
    assert_eq!(
        alice_side
            .read_bytes(&alice, &p("/secret/plan.txt"))
            .await
            .expect("read"),
        b"alice's plan\n"
    );
}
