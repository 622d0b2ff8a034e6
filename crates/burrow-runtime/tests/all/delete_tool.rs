//! `delete_path`: a file or an empty directory, or a whole tree with `recursive`; "/" refused (mount points are the composite's own refusal, tested there); the read ledger forgets what went; a tree holds the lock that meets every other.

use std::sync::Arc;

use burrow_backend::{Backend, ErrorKind, FileContext, VPath};
use burrow_runtime::tool::{ToolRegistry, workspace_lock};
use burrow_state::StateBackend;
use serde_json::json;

use super::support::{CountingHook, ctx, ok, p, refused, state_with, toolset};

fn gone(e: burrow_backend::Error) -> bool {
    e.kind() == ErrorKind::NotFound
}

#[tokio::test]
async fn a_file_and_an_empty_directory_are_deleted_and_a_full_one_needs_recursive() {
    let backend = Arc::new(state_with(&[("/a.txt", b"a\n"), ("/d/x.txt", b"x\n")]).await);
    backend.make_dir(&ctx(), &p("/empty"), false).await.unwrap();
    let hook = Arc::new(CountingHook::default());
    let tools = toolset(backend.clone()).with_after_change(hook.clone());
    assert_eq!(
        ok(&tools, "delete_path", json!({"path": "/a.txt"})).await,
        "Deleted /a.txt."
    );
    assert!(gone(
        backend.read_bytes(&ctx(), &p("/a.txt")).await.unwrap_err()
    ));
    ok(&tools, "delete_path", json!({"path": "/empty"})).await;
    assert!(gone(
        backend.ls(&ctx(), &p("/empty"), 10).await.unwrap_err()
    ));
    let text = refused(&tools, "delete_path", json!({"path": "/d"})).await;
    assert!(text.contains("recursive set to true"), "{text}");
    assert_eq!(
        backend.read_bytes(&ctx(), &p("/d/x.txt")).await.unwrap(),
        b"x\n",
        "a refused delete removes nothing"
    );
    assert_eq!(
        ok(
            &tools,
            "delete_path",
            json!({"path": "/d", "recursive": true})
        )
        .await,
        "Deleted /d and everything beneath it."
    );
    assert!(gone(backend.ls(&ctx(), &p("/d"), 10).await.unwrap_err()));
    assert_eq!(hook.count(), 3, "each delete ran the after-change hook");
    let text = refused(
        &tools,
        "delete_path",
        json!({"path": "/nope", "recursive": true}),
    )
    .await;
    assert!(text.contains("/nope"), "{text}");
    assert_eq!(hook.count(), 3, "a refusal changed nothing");
}

#[tokio::test]
async fn the_root_is_refused_and_nothing_goes() {
    let backend = Arc::new(state_with(&[("/a.txt", b"a\n")]).await);
    let tools = toolset(backend.clone());
    for recursive in [false, true] {
        let text = refused(
            &tools,
            "delete_path",
            json!({"path": "/", "recursive": recursive}),
        )
        .await;
        assert!(text.contains("cannot be deleted"), "{text}");
    }
    assert_eq!(
        backend.read_bytes(&ctx(), &p("/a.txt")).await.unwrap(),
        b"a\n"
    );
}

#[tokio::test]
async fn what_was_deleted_must_be_read_again_before_it_is_replaced() {
    let backend = Arc::new(state_with(&[("/d/a.txt", b"a\n"), ("/f.txt", b"f\n")]).await);
    let tools = toolset(backend.clone());
    ok(&tools, "read_file", json!({"file_path": "/d/a.txt"})).await;
    ok(&tools, "read_file", json!({"file_path": "/f.txt"})).await;
    ok(
        &tools,
        "delete_path",
        json!({"path": "/d", "recursive": true}),
    )
    .await;
    ok(&tools, "delete_path", json!({"path": "/f.txt"})).await;
    // Someone else puts the same bytes back: the agent has not seen these files.
    let other = FileContext::for_tenant(ctx().tenant.clone());
    backend.write(&other, &p("/d/a.txt"), "a\n").await.unwrap();
    backend.write(&other, &p("/f.txt"), "f\n").await.unwrap();
    for path in ["/d/a.txt", "/f.txt"] {
        let text = refused(
            &tools,
            "edit_file",
            json!({"file_path": path, "old_string": "a", "new_string": "b"}),
        )
        .await;
        assert!(text.contains("have not read"), "{path}: {text}");
    }
}

#[tokio::test]
async fn a_file_holds_its_path_keys_and_a_tree_the_key_that_meets_every_other() {
    let backend = Arc::new(StateBackend::new());
    let mut tools = ToolRegistry::new();
    tools.add_file_tools(backend.clone(), ctx());
    let delete = tools.get("delete_path").unwrap();
    let a = delete.annotations();
    assert!(a.destructive && !a.read_only && a.idempotent);
    assert_eq!(
        delete.locks(&json!({"path": "/a.txt"})),
        backend.locks(&ctx(), &VPath::parse("/a.txt").unwrap())
    );
    assert_eq!(
        delete.locks(&json!({"path": "/d", "recursive": true})),
        vec![workspace_lock()]
    );
    assert!(delete.validate(&json!({"file_path": "/a"})).is_err());
    assert!(
        delete
            .validate(&json!({"path": "/a", "recursive": "yes"}))
            .is_err()
    );
}
