//! The read-before-edit guard: no edit (or overwrite) of a file the agent has not read, or that changed since.

use std::sync::Arc;

use burrow_backend::Backend;
use serde_json::json;

use super::support::{content, ctx, ok, p, refused, state_with, toolset};

#[tokio::test]
async fn edit_of_an_unread_file_is_refused_and_changes_nothing() {
    let backend = Arc::new(state_with(&[("/a.txt", b"one\ntwo\n")]).await);
    let tools = toolset(backend.clone());
    let text = refused(
        &tools,
        "edit_file",
        json!({"file_path": "/a.txt", "old_string": "one", "new_string": "1"}),
    )
    .await;
    assert!(text.contains("not read /a.txt"), "{text}");
    assert!(text.contains("read_file"), "{text}");
    assert_eq!(content(backend.as_ref(), "/a.txt").await, "one\ntwo\n");
    assert!(!tools.session().ledger().has_seen(&p("/a.txt")));
}

#[tokio::test]
async fn a_read_allows_consecutive_edits_without_rereading() {
    let backend = Arc::new(state_with(&[("/a.txt", b"one\ntwo\nthree\n")]).await);
    let tools = toolset(backend.clone());
    // A partial read counts: the agent chose what to look at.
    ok(
        &tools,
        "read_file",
        json!({"file_path": "/a.txt", "offset": 2, "limit": 1}),
    )
    .await;
    for (old, new) in [("one", "1"), ("two", "2"), ("three", "3")] {
        ok(
            &tools,
            "edit_file",
            json!({"file_path": "/a.txt", "old_string": old, "new_string": new}),
        )
        .await;
    }
    assert_eq!(content(backend.as_ref(), "/a.txt").await, "1\n2\n3\n");
}

#[tokio::test]
async fn a_change_by_someone_else_refuses_the_edit_until_reread() {
    let backend = Arc::new(state_with(&[("/a.txt", b"x = 1\n")]).await);
    let tools = toolset(backend.clone());
    ok(&tools, "read_file", json!({"file_path": "/a.txt"})).await;
    backend
        .write(&ctx(), &p("/a.txt"), "x = 2\n")
        .await
        .unwrap();
    let args = json!({"file_path": "/a.txt", "old_string": "x", "new_string": "y"});
    let text = refused(&tools, "edit_file", args.clone()).await;
    assert!(text.contains("changed since you last read it"), "{text}");
    assert_eq!(content(backend.as_ref(), "/a.txt").await, "x = 2\n");
    // Someone else's write of the very same bytes is no change.
    backend
        .write(&ctx(), &p("/a.txt"), "x = 2\n")
        .await
        .unwrap();
    refused(&tools, "edit_file", args.clone()).await;
    ok(&tools, "read_file", json!({"file_path": "/a.txt"})).await;
    ok(&tools, "edit_file", args).await;
    assert_eq!(content(backend.as_ref(), "/a.txt").await, "y = 2\n");
}

#[tokio::test]
async fn overwriting_needs_a_read_but_creating_does_not() {
    let backend = Arc::new(state_with(&[("/old.txt", b"keep me\n")]).await);
    let tools = toolset(backend.clone());
    let text = refused(
        &tools,
        "write_file",
        json!({"file_path": "/old.txt", "content": "gone"}),
    )
    .await;
    assert!(text.contains("not read /old.txt"), "{text}");
    assert_eq!(content(backend.as_ref(), "/old.txt").await, "keep me\n");

    ok(
        &tools,
        "write_file",
        json!({"file_path": "/new/file.txt", "content": "fresh\n"}),
    )
    .await;
    // What the agent wrote it has seen: it may edit and rewrite it.
    ok(
        &tools,
        "edit_file",
        json!({"file_path": "/new/file.txt", "old_string": "fresh", "new_string": "edited"}),
    )
    .await;
    ok(
        &tools,
        "write_file",
        json!({"file_path": "/new/file.txt", "content": "rewritten\n"}),
    )
    .await;
    assert_eq!(
        content(backend.as_ref(), "/new/file.txt").await,
        "rewritten\n"
    );
}

#[tokio::test]
async fn a_binary_file_seen_by_read_file_may_be_replaced() {
    let backend = Arc::new(state_with(&[("/img.bin", &[0xff, 0xfe, 0x00])]).await);
    let tools = toolset(backend.clone());
    let text = refused(&tools, "read_file", json!({"file_path": "/img.bin"})).await;
    assert!(text.contains("binary"), "{text}");
    ok(
        &tools,
        "write_file",
        json!({"file_path": "/img.bin", "content": "text now\n"}),
    )
    .await;
    assert_eq!(content(backend.as_ref(), "/img.bin").await, "text now\n");
}

#[tokio::test]
async fn sessions_do_not_share_what_they_read() {
    let backend = Arc::new(state_with(&[("/a.txt", b"a\n")]).await);
    let first = toolset(backend.clone());
    let second = toolset(backend.clone());
    ok(&first, "read_file", json!({"file_path": "/a.txt"})).await;
    refused(
        &second,
        "edit_file",
        json!({"file_path": "/a.txt", "old_string": "a", "new_string": "b"}),
    )
    .await;
    ok(
        &first,
        "edit_file",
        json!({"file_path": "/a.txt", "old_string": "a", "new_string": "b"}),
    )
    .await;
    // The first session's edit is a change the second has not seen.
    ok(&second, "read_file", json!({"file_path": "/a.txt"})).await;
    ok(
        &first,
        "edit_file",
        json!({"file_path": "/a.txt", "old_string": "b", "new_string": "c"}),
    )
    .await;
    let text = refused(
        &second,
        "edit_file",
        json!({"file_path": "/a.txt", "old_string": "c", "new_string": "d"}),
    )
    .await;
    assert!(text.contains("changed since"), "{text}");
}

#[tokio::test]
async fn a_deleted_then_recreated_file_must_be_read_again() {
    let backend = Arc::new(state_with(&[("/a.txt", b"v1\n")]).await);
    let tools = toolset(backend.clone());
    ok(&tools, "read_file", json!({"file_path": "/a.txt"})).await;
    backend.delete(&ctx(), &p("/a.txt")).await.unwrap();
    refused(&tools, "read_file", json!({"file_path": "/a.txt"})).await;
    backend.write(&ctx(), &p("/a.txt"), "v1\n").await.unwrap();
    // The missing-file read forgot it, even though the bytes are the same again.
    refused(
        &tools,
        "edit_file",
        json!({"file_path": "/a.txt", "old_string": "v1", "new_string": "v2"}),
    )
    .await;
}

#[tokio::test]
async fn concurrent_edits_in_one_session_all_land() {
    let text: String = (0..20).map(|i| format!("item{i}\n")).collect();
    let backend = Arc::new(state_with(&[("/list.txt", text.as_bytes())]).await);
    let tools = Arc::new(toolset(backend.clone()));
    ok(&tools, "read_file", json!({"file_path": "/list.txt"})).await;
    let mut tasks = Vec::new();
    for i in 0..20 {
        let tools = tools.clone();
        tasks.push(tokio::spawn(async move {
            let args = json!({"file_path": "/list.txt", "old_string": format!("item{i}\n"), "new_string": format!("done{i}\n")});
            tools.call("edit_file", args).await.unwrap()
        }));
    }
    for task in tasks {
        let out = task.await.unwrap();
        assert!(!out.is_error, "{}", out.text);
    }
    let expected: String = (0..20).map(|i| format!("done{i}\n")).collect();
    assert_eq!(content(backend.as_ref(), "/list.txt").await, expected);
}
