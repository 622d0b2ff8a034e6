//! The Toolset's contract with its caller: refusals are text, failures are errors, changes run the after-change hook.

use std::sync::Arc;

use burrow_backend::ErrorKind;
use serde_json::json;

use super::support::{CountingHook, Mode, Wrapped, call, ok, refused, state_with, toolset};

#[tokio::test]
async fn a_failure_is_an_error_not_text_for_the_model() {
    let backend = Arc::new(Wrapped::new(state_with(&[]).await, Mode::Broken, true));
    let tools = toolset(backend);
    for (tool, args) in [
        ("ls", json!({})),
        ("read_file", json!({"file_path": "/a"})),
        ("write_file", json!({"file_path": "/a", "content": "x"})),
        (
            "edit_file",
            json!({"file_path": "/a", "old_string": "x", "new_string": "y"}),
        ),
        ("glob", json!({"pattern": "*"})),
        ("grep", json!({"pattern": "x"})),
        ("execute", json!({"command": "echo hi"})),
    ] {
        let err = tools.call(tool, args).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Failure, "{tool}");
        assert!(!err.is_refusal());
    }
    // Argument and name checks come before the storage: still text.
    assert!(call(&tools, "read_file", json!({})).await.is_error);
    assert!(call(&tools, "nope", json!({})).await.is_error);
}

#[tokio::test]
async fn the_after_change_hook_runs_after_changes_only() {
    let backend = Arc::new(Wrapped::new(
        state_with(&[("/a.txt", b"a\n")]).await,
        Mode::Plain,
        true,
    ));
    let hook = Arc::new(CountingHook::default());
    let tools = toolset(backend).with_after_change(hook.clone());
    ok(&tools, "ls", json!({})).await;
    ok(&tools, "read_file", json!({"file_path": "/a.txt"})).await;
    ok(&tools, "glob", json!({"pattern": "*"})).await;
    ok(&tools, "grep", json!({"pattern": "a"})).await;
    refused(
        &tools,
        "write_file",
        json!({"file_path": "/", "content": "x"}),
    )
    .await;
    refused(
        &tools,
        "edit_file",
        json!({"file_path": "/a.txt", "old_string": "zz", "new_string": "y"}),
    )
    .await;
    assert_eq!(hook.count(), 0);
    ok(
        &tools,
        "write_file",
        json!({"file_path": "/b.txt", "content": "b\n"}),
    )
    .await;
    ok(
        &tools,
        "edit_file",
        json!({"file_path": "/a.txt", "old_string": "a", "new_string": "z"}),
    )
    .await;
    ok(&tools, "execute", json!({"command": "echo hi"})).await;
    assert_eq!(hook.count(), 3);
}

#[tokio::test]
async fn a_failing_hook_fails_the_call() {
    let backend = Arc::new(state_with(&[]).await);
    let hook = Arc::new(CountingHook {
        fail: true,
        ..CountingHook::default()
    });
    let tools = toolset(backend).with_after_change(hook.clone());
    let err = tools
        .call("write_file", json!({"file_path": "/a.txt", "content": "x"}))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Failure);
    assert_eq!(hook.count(), 1);
}

#[tokio::test]
async fn unknown_tools_and_bad_arguments_are_refusals_that_name_the_fix() {
    let tools = toolset(Arc::new(state_with(&[]).await));
    let text = refused(&tools, "delete_file", json!({"file_path": "/a"})).await;
    assert!(text.contains("no tool named \"delete_file\""), "{text}");
    assert!(
        text.contains("ls, read_file, write_file, edit_file, delete_path, glob, grep"),
        "{text}"
    );
    let text = refused(&tools, "execute", json!({"command": "ls"})).await;
    assert!(text.contains("cannot run commands"), "{text}");
    let text = refused(
        &tools,
        "edit_file",
        json!({"file_path": "/a", "old": "x", "new": "y"}),
    )
    .await;
    assert!(
        text.contains("unknown field") && text.contains("`old_string`"),
        "{text}"
    );
    let long_name = "x".repeat(10_000);
    assert!(refused(&tools, &long_name, json!({})).await.len() < 300);
}
