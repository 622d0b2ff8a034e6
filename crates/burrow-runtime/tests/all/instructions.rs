//! Instruction providers read through the backend: memory files per agent name and output styles, each bounded with a note when cut.

use std::sync::{Arc, Mutex};

use burrow_backend::Backend;
use burrow_runtime::agent::{
    Agent, FailureReason, InstructionProvider, MemoryFiles, Outcome, OutputStyle, OutputStyleFile,
};
use burrow_runtime::model::{ScriptedModel, ScriptedResponse};
use burrow_state::StateBackend;
use serde_json::json;

use super::support::{ctx, p};

async fn with(files: &[(&str, &str)]) -> Arc<StateBackend> {
    let backend = Arc::new(StateBackend::new());
    for (path, text) in files {
        backend.write(&ctx(), &p(path), text).await.unwrap();
    }
    backend
}

#[tokio::test]
async fn each_agent_reads_its_own_memory_file() {
    let backend = with(&[
        (
            "/.burrow/memory/main/MEMORY.md",
            "- the user prefers tabs\n",
        ),
        (
            "/.burrow/memory/reviewer/MEMORY.md",
            "- check error types\n",
        ),
    ])
    .await;
    let main = MemoryFiles::new(backend.clone(), ctx(), "main").unwrap();
    let text = main.instructions(&[]).await.unwrap().unwrap();
    assert!(text.contains("agent main"), "{text}");
    assert!(text.contains("/.burrow/memory/main/MEMORY.md"), "{text}");
    assert!(text.contains("prefers tabs") && !text.contains("error types"));
    let file = main.load().await.unwrap().unwrap();
    assert_eq!(file.agent_name, "main");
    assert_eq!(file.path, "/.burrow/memory/main/MEMORY.md");
    assert_eq!(file.content, "- the user prefers tabs\n");

    // No memory yet is no instructions, not an error.
    let fresh = MemoryFiles::new(backend.clone(), ctx(), "new-agent").unwrap();
    assert_eq!(fresh.instructions(&[]).await.unwrap(), None);
    assert_eq!(fresh.load().await.unwrap(), None);

    // The directory is configurable.
    backend
        .write(&ctx(), &p("/mem/main/MEMORY.md"), "elsewhere")
        .await
        .unwrap();
    let moved = MemoryFiles::new(backend.clone(), ctx(), "main")
        .unwrap()
        .with_dir("/mem")
        .unwrap();
    assert!(
        moved
            .instructions(&[])
            .await
            .unwrap()
            .unwrap()
            .contains("elsewhere")
    );

    // A name that is not one path segment is refused.
    for bad in ["", "..", "a/b", "../x", "a b"] {
        let e = MemoryFiles::new(backend.clone(), ctx(), bad).unwrap_err();
        assert!(e.is_refusal(), "{bad}: {e}");
    }
}

#[tokio::test]
async fn a_long_memory_or_style_is_cut_with_a_note() {
    let long = "x".repeat(500);
    let backend = with(&[
        ("/.burrow/memory/main/MEMORY.md", &long),
        ("/.burrow/output-styles/terse.md", &long),
    ])
    .await;
    let memory = MemoryFiles::new(backend.clone(), ctx(), "main")
        .unwrap()
        .with_max_chars(100);
    let text = memory.instructions(&[]).await.unwrap().unwrap();
    assert!(text.contains(&"x".repeat(100)) && !text.contains(&"x".repeat(101)));
    assert!(text.contains("400 more characters are not shown"), "{text}");
    let style = OutputStyleFile::new(backend.clone(), ctx(), "terse")
        .unwrap()
        .with_max_chars(50);
    let text = style.instructions(&[]).await.unwrap().unwrap();
    assert!(text.contains("450 more characters are not shown"), "{text}");
    let in_code = OutputStyle::new("big", "", "y".repeat(20_000));
    let text = in_code.instructions(&[]).await.unwrap().unwrap();
    assert!(
        text.contains("10000 more characters are not shown"),
        "{text}"
    );
}

#[tokio::test]
async fn an_output_style_file_with_frontmatter_is_read_for_every_request() {
    let backend = with(&[(
        "/.burrow/output-styles/terse.md",
        "---\nname: Terse\ndescription: short answers\n---\n\nAnswer in one sentence.\n",
    )])
    .await;
    let style = OutputStyleFile::new(backend.clone(), ctx(), "terse").unwrap();
    let loaded = style.load().await.unwrap();
    assert_eq!(loaded.name, "Terse");
    assert_eq!(loaded.description, "short answers");
    assert_eq!(loaded.content, "Answer in one sentence.\n");

    // Each request carries the style as the file holds it then: the agent
    // itself rewrites it half-way.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let recorded = seen.clone();
    let path = "/.burrow/output-styles/terse.md";
    let model = ScriptedModel::new(move |request| {
        let mut seen = recorded.lock().unwrap();
        seen.push(request.system.to_owned());
        Ok(match seen.len() {
            1 => ScriptedResponse::calls().call("c1", "read_file", json!({"file_path": path})),
            2 => ScriptedResponse::calls().call(
                "c2",
                "write_file",
                json!({"file_path": path, "content": "Answer in one word."}),
            ),
            _ => ScriptedResponse::text("ok"),
        })
    });
    let mut tools = burrow_runtime::tool::ToolRegistry::new();
    tools.add_file_tools(backend.clone(), ctx());
    let agent = Agent::new(Arc::new(model))
        .with_instructions("You are helpful.")
        .with_tools(tools)
        .with_provider(Arc::new(style));
    let mut history = Vec::new();
    let result = agent.run(&mut history, "hi").await;
    assert_eq!(result.outcome, Outcome::Completed);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3);
    assert!(
        seen[0].starts_with("You are helpful.\n\nOutput style \"Terse\""),
        "{}",
        seen[0]
    );
    assert!(seen[0].contains("Answer in one sentence."), "{}", seen[0]);
    assert!(seen[2].contains("Answer in one word."), "{}", seen[2]);
    assert!(!seen[2].contains("one sentence"), "{}", seen[2]);
}

#[tokio::test]
async fn a_missing_style_file_fails_the_run_naming_it() {
    let backend = with(&[]).await;
    let style = OutputStyleFile::new(backend.clone(), ctx(), "nope").unwrap();
    let agent = Agent::new(Arc::new(ScriptedModel::from_responses(vec![
        ScriptedResponse::text("never"),
    ])))
    .with_provider(Arc::new(style));
    let mut history = Vec::new();
    match agent.run(&mut history, "hi").await.outcome {
        Outcome::Failed { reason, message } => {
            assert_eq!(reason, FailureReason::InstructionsFailed);
            assert!(
                message.contains("/.burrow/output-styles/nope.md"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(OutputStyleFile::new(backend, ctx(), "../x").is_err());
}
