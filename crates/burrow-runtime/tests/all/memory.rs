//! The memory tool: every command and every refusal in the reference implementation's words, over a StateBackend and a real SQLite file, tenants apart, and offered to a model as the native `memory_20250818` type.

use std::sync::{Arc, Mutex};

use burrow_backend::{Backend, FileContext};
use burrow_runtime::agent::{Agent, Outcome};
use burrow_runtime::memory::{MEMORY_TOOL, MEMORY_TOOL_TYPE, MemoryTool, with_memory};
use burrow_runtime::message::Message;
use burrow_runtime::model::{ScriptedModel, ScriptedResponse};
use burrow_runtime::tool::{CallContext, Tool};
use burrow_sqlite::StoreBackend;
use burrow_state::StateBackend;
use serde_json::{Value, json};

use super::support::{ctx, p};

struct Memory {
    backend: Arc<dyn Backend>,
    tool: MemoryTool,
    calls: usize,
}

impl Memory {
    fn over(backend: Arc<dyn Backend>, ctx: FileContext) -> Self {
        Self {
            tool: MemoryTool::new(backend.clone(), ctx),
            backend,
            calls: 0,
        }
    }

    fn new() -> Self {
        Self::over(Arc::new(StateBackend::new()), ctx())
    }

    /// The call's text, and whether it was refused.
    async fn call(&mut self, args: Value) -> (String, bool) {
        self.calls += 1;
        let cx = CallContext {
            run_id: Arc::from("run-1"),
            call_id: format!("call-{}", self.calls),
        };
        let out = self.tool.call(&cx, args).await.expect("no store failure");
        (out.text, out.is_error)
    }

    async fn ok(&mut self, args: Value) -> String {
        let (text, refused) = self.call(args.clone()).await;
        assert!(!refused, "{args} was refused: {text}");
        text
    }

    async fn refused(&mut self, args: Value) -> String {
        let (text, refused) = self.call(args.clone()).await;
        assert!(refused, "{args} was not refused: {text}");
        text
    }

    async fn bytes(&self, path: &str) -> String {
        String::from_utf8(self.backend.read_bytes(&ctx(), &p(path)).await.unwrap()).unwrap()
    }
}

#[tokio::test]
async fn create_then_view_a_file_with_the_references_numbering() {
    let mut m = Memory::new();
    let text = m
        .ok(json!({"command": "create", "path": "/memories/notes.md", "file_text": "one\ntwo\nthree\n"}))
        .await;
    assert_eq!(text, "File created successfully at: /memories/notes.md");
    assert_eq!(m.bytes("/memories/notes.md").await, "one\ntwo\nthree\n");

    let view = m
        .ok(json!({"command": "view", "path": "/memories/notes.md"}))
        .await;
    // Python's split("\n") keeps the empty line after the last newline.
    assert_eq!(
        view,
        "Here's the content of /memories/notes.md with line numbers:\n     1\tone\n     2\ttwo\n     3\tthree\n     4\t"
    );
    let range = m
        .ok(json!({"command": "view", "path": "/memories/notes.md", "view_range": [2, 3]}))
        .await;
    assert_eq!(
        range,
        "Here's the content of /memories/notes.md with line numbers:\n     2\ttwo\n     3\tthree"
    );
    let to_end = m
        .ok(json!({"command": "view", "path": "/memories/notes.md", "view_range": [3, -1]}))
        .await;
    assert_eq!(
        to_end,
        "Here's the content of /memories/notes.md with line numbers:\n     3\tthree\n     4\t"
    );

    let again = m
        .refused(json!({"command": "create", "path": "/memories/notes.md", "file_text": "x"}))
        .await;
    assert_eq!(again, "File /memories/notes.md already exists");
    assert_eq!(m.bytes("/memories/notes.md").await, "one\ntwo\nthree\n");
}

#[tokio::test]
async fn a_directory_view_goes_two_levels_deep_and_hides_dot_files() {
    let mut m = Memory::new();
    for (path, text) in [
        ("/memories/a.md", "12345"),
        ("/memories/.hidden", "secret"),
        ("/memories/projects/p1.md", &"x".repeat(1536)),
        ("/memories/projects/deep/deeper/far.md", "far"),
    ] {
        m.backend.write(&ctx(), &p(path), text).await.unwrap();
    }
    let view = m.ok(json!({"command": "view", "path": "/memories"})).await;
    assert_eq!(
        view,
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items:\n\
         1.5K\t/memories\n\
         5B\t/memories/a.md\n\
         1.5K\t/memories/projects/\n\
         3B\t/memories/projects/deep/\n\
         1.5K\t/memories/projects/p1.md"
    );
}

#[tokio::test]
async fn an_empty_workspace_views_memories_as_an_empty_directory() {
    let mut m = Memory::new();
    let view = m.ok(json!({"command": "view", "path": "/memories"})).await;
    assert_eq!(
        view,
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items:\n0B\t/memories"
    );
}

#[tokio::test]
async fn str_replace_edits_one_occurrence_and_shows_the_snippet() {
    let mut m = Memory::new();
    m.ok(json!({"command": "create", "path": "/memories/p.md", "file_text": "a\nb\ncolor: blue\nd\ne\nf\n"}))
        .await;
    let text = m
        .ok(json!({"command": "str_replace", "path": "/memories/p.md", "old_str": "blue", "new_str": "green"}))
        .await;
    assert_eq!(
        text,
        "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n     1\ta\n     2\tb\n     3\tcolor: green\n     4\td\n     5\te"
    );
    assert_eq!(
        m.bytes("/memories/p.md").await,
        "a\nb\ncolor: green\nd\ne\nf\n"
    );

    let none = m
        .refused(json!({"command": "str_replace", "path": "/memories/p.md", "old_str": "blue", "new_str": "x"}))
        .await;
    assert_eq!(
        none,
        "No replacement was performed, old_str `blue` did not appear verbatim in /memories/p.md."
    );
    m.ok(json!({"command": "create", "path": "/memories/twice.md", "file_text": "x\ny\nx\n"}))
        .await;
    let many = m
        .refused(json!({"command": "str_replace", "path": "/memories/twice.md", "old_str": "x", "new_str": "z"}))
        .await;
    assert_eq!(
        many,
        "No replacement was performed. Multiple occurrences of old_str `x` in lines: 1, 3. Please ensure it is unique"
    );
    assert_eq!(m.bytes("/memories/twice.md").await, "x\ny\nx\n");

    let missing = m
        .refused(json!({"command": "str_replace", "path": "/memories/nope.md", "old_str": "a", "new_str": "b"}))
        .await;
    assert_eq!(
        missing,
        "The path /memories/nope.md does not exist. Please provide a valid path."
    );
    m.backend
        .write(&ctx(), &p("/memories/dir/f.md"), "f")
        .await
        .unwrap();
    let dir = m
        .refused(json!({"command": "str_replace", "path": "/memories/dir", "old_str": "a", "new_str": "b"}))
        .await;
    assert_eq!(dir, "The path /memories/dir is not a file.");
}

#[tokio::test]
async fn insert_puts_a_line_after_insert_line_and_checks_its_range() {
    let mut m = Memory::new();
    m.ok(json!({"command": "create", "path": "/memories/todo.md", "file_text": "one\ntwo"}))
        .await;
    let text = m
        .ok(json!({"command": "insert", "path": "/memories/todo.md", "insert_line": 1, "insert_text": "between\n"}))
        .await;
    assert_eq!(text, "The file /memories/todo.md has been edited.");
    assert_eq!(m.bytes("/memories/todo.md").await, "one\nbetween\ntwo\n");
    m.ok(json!({"command": "insert", "path": "/memories/todo.md", "insert_line": 0, "insert_text": "top"}))
        .await;
    assert_eq!(
        m.bytes("/memories/todo.md").await,
        "top\none\nbetween\ntwo\n"
    );

    let out = m
        .refused(json!({"command": "insert", "path": "/memories/todo.md", "insert_line": 9, "insert_text": "x"}))
        .await;
    assert_eq!(
        out,
        "Invalid `insert_line` parameter: 9. It should be within the range [0, 4]."
    );
    let negative = m
        .refused(json!({"command": "insert", "path": "/memories/todo.md", "insert_line": -1, "insert_text": "x"}))
        .await;
    assert_eq!(
        negative,
        "Invalid `insert_line` parameter: -1. It should be within the range [0, 4]."
    );
    assert_eq!(
        m.bytes("/memories/todo.md").await,
        "top\none\nbetween\ntwo\n"
    );
}

#[tokio::test]
async fn delete_removes_a_file_or_a_tree_but_never_the_root() {
    let mut m = Memory::new();
    m.ok(json!({"command": "create", "path": "/memories/old.md", "file_text": "x"}))
        .await;
    m.ok(json!({"command": "create", "path": "/memories/dir/a/b.md", "file_text": "y"}))
        .await;
    assert_eq!(
        m.ok(json!({"command": "delete", "path": "/memories/old.md"}))
            .await,
        "Successfully deleted /memories/old.md"
    );
    assert_eq!(
        m.ok(json!({"command": "delete", "path": "/memories/dir"}))
            .await,
        "Successfully deleted /memories/dir"
    );
    assert_eq!(
        m.refused(json!({"command": "delete", "path": "/memories/dir"}))
            .await,
        "The path /memories/dir does not exist"
    );
    assert_eq!(
        m.refused(json!({"command": "delete", "path": "/memories"}))
            .await,
        "Cannot delete the /memories directory itself"
    );
    let left = m.backend.glob(&ctx(), "*", &p("/"), 100).await.unwrap();
    assert!(left.files.is_empty(), "{:?}", left.files);
}

#[tokio::test]
async fn rename_moves_a_file_or_a_tree_and_refuses_an_existing_destination() {
    let mut m = Memory::new();
    m.ok(json!({"command": "create", "path": "/memories/draft.md", "file_text": "d"}))
        .await;
    m.ok(json!({"command": "create", "path": "/memories/final.md", "file_text": "f"}))
        .await;
    assert_eq!(
        m.refused(json!({"command": "rename", "old_path": "/memories/draft.md", "new_path": "/memories/final.md"}))
            .await,
        "The destination /memories/final.md already exists"
    );
    assert_eq!(
        m.ok(json!({"command": "rename", "old_path": "/memories/draft.md", "new_path": "/memories/archive/draft.md"}))
            .await,
        "Successfully renamed /memories/draft.md to /memories/archive/draft.md"
    );
    assert_eq!(m.bytes("/memories/archive/draft.md").await, "d");
    assert_eq!(
        m.ok(json!({"command": "rename", "old_path": "/memories/archive", "new_path": "/memories/kept"}))
            .await,
        "Successfully renamed /memories/archive to /memories/kept"
    );
    assert_eq!(m.bytes("/memories/kept/draft.md").await, "d");
    assert_eq!(
        m.refused(
            json!({"command": "rename", "old_path": "/memories/archive", "new_path": "/memories/x"})
        )
        .await,
        "The path /memories/archive does not exist"
    );
    let into_itself = m
        .refused(json!({"command": "rename", "old_path": "/memories/kept", "new_path": "/memories/kept/inner"}))
        .await;
    assert_eq!(
        into_itself,
        "Cannot move /memories/kept into itself or a folder beneath it"
    );
    assert_eq!(m.bytes("/memories/kept/draft.md").await, "d");
}

#[tokio::test]
async fn paths_outside_memories_are_refused_and_change_nothing() {
    let mut m = Memory::new();
    m.backend
        .write(&ctx(), &p("/etc/passwd"), "root")
        .await
        .unwrap();
    assert_eq!(
        m.refused(json!({"command": "view", "path": "/etc/passwd"}))
            .await,
        "Path must start with /memories, got: /etc/passwd"
    );
    assert_eq!(
        m.refused(
            json!({"command": "create", "path": "/memories/../etc/passwd", "file_text": "x"})
        )
        .await,
        "Path /memories/../etc/passwd would escape /memories directory"
    );
    assert_eq!(
        m.refused(
            json!({"command": "rename", "old_path": "/etc/passwd", "new_path": "/memories/p"})
        )
        .await,
        "Path must start with /memories, got: /etc/passwd"
    );
    assert_eq!(
        m.refused(json!({"command": "view", "path": "/memories/none.md"}))
            .await,
        "The path /memories/none.md does not exist. Please provide a valid path."
    );
    let bad = m
        .refused(json!({"command": "shred", "path": "/memories"}))
        .await;
    assert!(
        bad.starts_with("The arguments for memory are not valid"),
        "{bad}"
    );
    assert_eq!(m.bytes("/etc/passwd").await, "root");
}

#[tokio::test]
async fn a_file_over_the_backends_limit_is_refused_before_anything_is_written() {
    let limits = burrow_backend::Limits {
        max_file_size: 64,
        ..burrow_backend::Limits::default()
    };
    let mut m = Memory::over(Arc::new(StateBackend::with_limits(limits)), ctx());
    let (text, refused) = m
        .call(json!({"command": "create", "path": "/memories/big.md", "file_text": "x".repeat(65)}))
        .await;
    assert!(refused, "{text}");
    let left = m.backend.glob(&ctx(), "*", &p("/"), 10).await.unwrap();
    assert!(left.files.is_empty());
}

#[tokio::test]
async fn two_tenants_of_one_sqlite_file_never_see_each_others_memories() {
    let dir = tempfile::tempdir().unwrap();
    let backend: Arc<dyn Backend> =
        Arc::new(StoreBackend::open(dir.path().join("memories.db")).unwrap());
    let mut alice = Memory::over(backend.clone(), FileContext::for_tenant("alice"));
    let mut bob = Memory::over(backend.clone(), FileContext::for_tenant("bob"));
    alice
        .ok(json!({"command": "create", "path": "/memories/me.md", "file_text": "alice likes tea"}))
        .await;
    assert_eq!(
        bob.refused(json!({"command": "view", "path": "/memories/me.md"}))
            .await,
        "The path /memories/me.md does not exist. Please provide a valid path."
    );
    bob.ok(
        json!({"command": "create", "path": "/memories/me.md", "file_text": "bob likes coffee"}),
    )
    .await;
    let view = alice
        .ok(json!({"command": "view", "path": "/memories/me.md"}))
        .await;
    assert!(view.ends_with("     1\talice likes tea"), "{view}");
    assert_eq!(
        bob.ok(json!({"command": "delete", "path": "/memories/me.md"}))
            .await,
        "Successfully deleted /memories/me.md"
    );
    let view = alice
        .ok(json!({"command": "view", "path": "/memories/me.md"}))
        .await;
    assert!(view.ends_with("     1\talice likes tea"), "{view}");
}

#[tokio::test]
async fn a_model_is_offered_the_native_type_and_its_calls_run() {
    let backend: Arc<dyn Backend> = Arc::new(StateBackend::new());
    let offered = Arc::new(Mutex::new(Vec::new()));
    let seen = offered.clone();
    let model = ScriptedModel::new(move |request| {
        let mut seen = seen.lock().unwrap();
        seen.push(request.tools.to_vec());
        Ok(match seen.len() {
            1 => ScriptedResponse::calls().call(
                "c1",
                MEMORY_TOOL,
                json!({"command": "create", "path": "/memories/user.md", "file_text": "Prefers short answers.\n"}),
            ),
            _ => ScriptedResponse::text("noted"),
        })
    });
    let agent = with_memory(Agent::new(Arc::new(model)), backend.clone(), ctx());
    let mut history = Vec::new();
    let result = agent
        .run(&mut history, "remember that I like short answers")
        .await;
    assert_eq!(result.outcome, Outcome::Completed);
    let tools = offered.lock().unwrap()[0].clone();
    let memory = tools.iter().find(|t| t.name == MEMORY_TOOL).unwrap();
    assert_eq!(memory.native_type.as_deref(), Some(MEMORY_TOOL_TYPE));
    assert_eq!(memory.input_schema["type"], "object");
    let answered = history.iter().any(|m| {
        matches!(m, Message::ToolResult(r)
            if r.content == "File created successfully at: /memories/user.md" && !r.is_error)
    });
    assert!(answered, "{history:?}");
    let bytes = backend
        .read_bytes(&ctx(), &p("/memories/user.md"))
        .await
        .unwrap();
    assert_eq!(bytes, b"Prefers short answers.\n");
}
