//! The open toolset: typed tools in one call, the file tools as `Tool`s, lock keys, and effect keys on every mutation.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use burrow_backend::{
    Backend, Capabilities, EditResult, FileContext, GlobResult, GrepQuery, GrepResult, LineWindow,
    Listing, LockKey, Result, VPath, WriteResult,
};
use burrow_runtime::tool::{
    CallContext, FnTool, ToolAnnotations, ToolOutput, ToolRegistry, effect_key, workspace_lock,
};
use burrow_state::StateBackend;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::support::{content, ctx, p};

#[derive(Deserialize, JsonSchema)]
struct Greet {
    /// Who to greet.
    name: String,
}

fn cx(call: &str) -> CallContext {
    CallContext {
        run_id: "run-1".into(),
        call_id: call.into(),
    }
}

#[tokio::test]
async fn an_application_adds_a_typed_tool_in_one_call() {
    let mut tools = ToolRegistry::new();
    tools.add_typed("greet", "Greets someone.", |args: Greet, cx| async move {
        Ok(ToolOutput::ok(format!(
            "hello {} ({})",
            args.name, cx.call_id
        )))
    });
    let def = &tools.definitions()[0];
    assert_eq!(def.name, "greet");
    assert_eq!(def.description, "Greets someone.");
    assert_eq!(def.input_schema["properties"]["name"]["type"], "string");
    assert_eq!(def.input_schema["required"], json!(["name"]));

    let greet = tools.get("greet").unwrap();
    let out = greet.call(&cx("c1"), json!({"name": "ann"})).await.unwrap();
    assert_eq!(out, ToolOutput::ok("hello ann (c1)"));
    // Arguments that do not fit are a refusal the model can act on, not a failure.
    let out = greet.call(&cx("c2"), json!({"nom": "ann"})).await.unwrap();
    assert!(out.is_error);
    assert!(out.text.contains("missing field `name`"), "{}", out.text);
    assert!(greet.validate(&json!({"name": "x"})).is_ok());
    assert!(greet.validate(&json!({"name": 3})).is_err());
    assert!(tools.unknown_tool("nope").contains("the tools are: greet"));
}

#[tokio::test]
async fn a_typed_tool_takes_annotations_and_locks_from_its_arguments() {
    let tool = FnTool::new("touch", "Touches a key.", |_: Greet, _| async {
        Ok(ToolOutput::ok("ok"))
    })
    .with_annotations(ToolAnnotations::READ_ONLY)
    .with_locks(|args: &Greet| vec![LockKey::new(args.name.clone())]);
    let mut tools = ToolRegistry::new();
    tools.add(tool);
    let tool = tools.get("touch").unwrap();
    assert_eq!(tool.annotations(), ToolAnnotations::READ_ONLY);
    assert_eq!(tool.locks(&json!({"name": "k"})), vec![LockKey::new("k")]);
    assert!(tool.locks(&json!({})).is_empty());
}

#[tokio::test]
async fn adding_a_tool_of_the_same_name_replaces_it_in_place() {
    let mut tools = ToolRegistry::new();
    tools.add_typed("a", "first", |_: Greet, _| async {
        Ok(ToolOutput::ok("1"))
    });
    tools.add_typed("b", "b", |_: Greet, _| async { Ok(ToolOutput::ok("b")) });
    tools.add_typed("a", "second", |_: Greet, _| async {
        Ok(ToolOutput::ok("2"))
    });
    assert_eq!(tools.names().collect::<Vec<_>>(), ["a", "b"]);
    assert_eq!(tools.definitions()[0].description, "second");
}

#[tokio::test]
async fn the_file_tools_are_ordinary_tools_with_annotations_and_path_locks() {
    let backend = Arc::new(StateBackend::new());
    let mut tools = ToolRegistry::new();
    tools.add_file_tools(backend.clone(), ctx());
    assert_eq!(
        tools.names().collect::<Vec<_>>(),
        [
            "ls",
            "read_file",
            "write_file",
            "edit_file",
            "delete_path",
            "glob",
            "grep"
        ]
    );
    let read = tools.get("read_file").unwrap();
    assert_eq!(read.annotations(), ToolAnnotations::READ_ONLY);
    assert!(read.locks(&json!({"file_path": "/a"})).is_empty());
    let write = tools.get("write_file").unwrap();
    assert!(write.annotations().destructive && !write.annotations().read_only);
    let a = write.locks(&json!({"file_path": "/a.txt", "content": ""}));
    assert_eq!(a, backend.locks(&ctx(), &p("/a.txt")));
    // The same file named two ways holds the same key; another file another.
    let edit = tools.get("edit_file").unwrap();
    assert_eq!(
        edit.locks(&json!({"file_path": "/x/../a.txt", "old_string": "a", "new_string": "b"})),
        a
    );
    // Locks are asked for arguments that fit; others hold none (they never run).
    assert!(edit.locks(&json!({"file_path": "/a.txt"})).is_empty());
    assert_ne!(write.locks(&json!({"file_path": "/b.txt"})), a);
    assert!(write.validate(&json!({"file_path": "/a"})).is_err());
    assert!(
        write
            .validate(&json!({"file_path": "/a", "content": "x"}))
            .is_ok()
    );

    let out = write
        .call(&cx("c1"), json!({"file_path": "/a.txt", "content": "hi\n"}))
        .await
        .unwrap();
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(content(backend.as_ref(), "/a.txt").await, "hi\n");
    assert!(!workspace_lock().as_str().is_empty());
}

/// A StateBackend that records the context of every mutation.
#[derive(Default)]
struct Recording {
    inner: StateBackend,
    seen: Mutex<Vec<(String, FileContext)>>,
}

impl Recording {
    fn record(&self, op: &str, ctx: &FileContext) {
        self.seen.lock().unwrap().push((op.to_owned(), ctx.clone()));
    }
}

#[async_trait]
impl Backend for Recording {
    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }
    async fn ls(&self, ctx: &FileContext, dir: &VPath, limit: usize) -> Result<Listing> {
        self.inner.ls(ctx, dir, limit).await
    }
    async fn read(&self, c: &FileContext, p: &VPath, o: usize, l: usize) -> Result<LineWindow> {
        self.inner.read(c, p, o, l).await
    }
    async fn read_bytes(&self, ctx: &FileContext, path: &VPath) -> Result<Vec<u8>> {
        self.record("read_bytes", ctx);
        self.inner.read_bytes(ctx, path).await
    }
    async fn write_bytes(&self, ctx: &FileContext, path: &VPath, b: &[u8]) -> Result<WriteResult> {
        self.record("write", ctx);
        self.inner.write_bytes(ctx, path, b).await
    }
    async fn edit(
        &self,
        ctx: &FileContext,
        path: &VPath,
        old: &str,
        new: &str,
        all: bool,
    ) -> Result<EditResult> {
        self.record("edit", ctx);
        self.inner.edit(ctx, path, old, new, all).await
    }
    async fn delete(&self, ctx: &FileContext, path: &VPath) -> Result<()> {
        self.inner.delete(ctx, path).await
    }
    async fn glob(&self, c: &FileContext, pat: &str, u: &VPath, l: usize) -> Result<GlobResult> {
        self.inner.glob(c, pat, u, l).await
    }
    async fn grep(
        &self,
        c: &FileContext,
        q: &GrepQuery,
        u: &VPath,
        l: usize,
    ) -> Result<GrepResult> {
        self.inner.grep(c, q, u, l).await
    }
}

#[tokio::test]
async fn each_mutating_file_call_carries_its_effect_key_and_reads_carry_none() {
    let backend = Arc::new(Recording::default());
    let mut tools = ToolRegistry::new();
    tools.add_file_tools(backend.clone(), ctx());
    let write = tools.get("write_file").unwrap();
    write
        .call(
            &cx("c1"),
            json!({"file_path": "/a.txt", "content": "one\n"}),
        )
        .await
        .unwrap();
    let edit = tools.get("edit_file").unwrap();
    let out = edit
        .call(
            &cx("c2"),
            json!({"file_path": "/a.txt", "old_string": "one", "new_string": "two"}),
        )
        .await
        .unwrap();
    assert!(!out.is_error, "{}", out.text);
    let seen = backend.seen.lock().unwrap().clone();
    let keys: Vec<(String, Option<String>, Option<String>)> = seen
        .into_iter()
        .map(|(op, c)| (op, c.run_id, c.effect_key))
        .collect();
    assert_eq!(
        keys,
        vec![
            ("read_bytes".into(), None, None),
            (
                "write".into(),
                Some("run-1".into()),
                Some(effect_key("run-1", "c1", "write", "/a.txt"))
            ),
            ("read_bytes".into(), None, None),
            (
                "edit".into(),
                Some("run-1".into()),
                Some(effect_key("run-1", "c2", "edit", "/a.txt"))
            ),
        ]
    );
}

#[test]
fn effect_keys_are_sha256_over_length_prefixed_fields() {
    let key = effect_key("r", "c", "write", "/a");
    assert_eq!(key.len(), 64);
    assert!(key.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(key, effect_key("r", "c", "write", "/a"));
    // Moving a byte from one field to the next gives another key.
    assert_ne!(
        effect_key("ab", "c", "write", "/a"),
        effect_key("a", "bc", "write", "/a")
    );
    assert_ne!(key, effect_key("r", "c", "edit", "/a"));
}

#[tokio::test]
async fn a_retried_edit_on_a_durable_backend_is_replayed_not_applied_twice() {
    let dir = tempfile::tempdir().unwrap();
    let backend = Arc::new(burrow_sqlite::StoreBackend::open(dir.path().join("w.db")).unwrap());
    assert!(backend.capabilities().effect_keys);
    backend.write(&ctx(), &p("/a.txt"), "a\n").await.unwrap();
    let mut tools = ToolRegistry::new();
    tools.add_file_tools(backend.clone(), ctx());
    let read = tools.get("read_file").unwrap();
    read.call(&cx("c0"), json!({"file_path": "/a.txt"}))
        .await
        .unwrap();
    let edit = tools.get("edit_file").unwrap();
    let args = json!({"file_path": "/a.txt", "old_string": "a", "new_string": "ab"});
    let first = edit.call(&cx("c1"), args.clone()).await.unwrap();
    assert!(!first.is_error, "{}", first.text);
    assert_eq!(content(backend.as_ref(), "/a.txt").await, "ab\n");
    // The same call again (a retry): the store replays the recorded outcome.
    let again = edit.call(&cx("c1"), args.clone()).await.unwrap();
    assert!(!again.is_error, "{}", again.text);
    assert_eq!(content(backend.as_ref(), "/a.txt").await, "ab\n");
    // A new call is a new effect and applies, with no re-read: after the
    // replay the ledger holds what the file holds.
    let third = edit.call(&cx("c2"), args).await.unwrap();
    assert!(!third.is_error, "{}", third.text);
    assert_eq!(content(backend.as_ref(), "/a.txt").await, "abb\n");
}

/// ADR 0033: reads take no lock. ls, glob and grep (like read_file) give the
/// batch executor no keys, even for the very path a write of the same batch
/// locks, so they never wait for a mutation nor make one wait.
#[test]
fn ls_glob_and_grep_take_no_lock_keys() {
    let backend = Arc::new(StateBackend::new());
    let mut tools = ToolRegistry::new();
    tools.add_file_tools(backend, ctx());
    let write = tools.get("write_file").unwrap();
    let written = write.locks(&json!({"file_path": "/d/a.txt", "content": "x"}));
    assert!(!written.is_empty(), "write_file locks the file it writes");
    for (tool, args) in [
        ("ls", json!({"path": "/d"})),
        ("ls", json!({})),
        ("glob", json!({"pattern": "**/a.txt", "path": "/d"})),
        ("glob", json!({"pattern": "/d/a.txt"})),
        ("grep", json!({"pattern": "x", "path": "/d/a.txt"})),
        (
            "grep",
            json!({"pattern": "x", "path": "/d", "glob": "a.txt"}),
        ),
        ("read_file", json!({"file_path": "/d/a.txt"})),
    ] {
        let read = tools.get(tool).unwrap();
        assert!(read.validate(&args).is_ok(), "{tool} {args}");
        // ls, glob and grep may spill a large result into the workspace
        // (ADR 0135), so only read_file keeps the read-only hint; none of
        // them changes what the model asked about.
        assert!(!read.annotations().destructive, "{tool}");
        assert!(
            read.locks(&args).is_empty(),
            "{tool} {args} takes a lock key"
        );
    }
}
