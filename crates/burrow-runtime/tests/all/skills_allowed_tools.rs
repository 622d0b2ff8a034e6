//! `allowed-tools` of a loaded skill (ADR 0297, ADR 0360), through the scripted model on a StateBackend: before any skill every tool runs; once a skill naming `Read` is loaded, a write is refused with one sentence and nothing is written while reads still run; a skill without the field widens nothing; a second skill's tools join the first's; the next run starts unnarrowed. Specifiers narrow within a tool: `Bash(echo ok:*)` and `Bash(echo two words:*)` prefixes for `execute` (a compound command refused), `Read(/docs/**)` and `Edit(/docs/*.md)` paths, an entry that is no rule covering nothing.

use std::sync::Arc;

use burrow_backend::Backend;
use burrow_runtime::agent::{Agent, Outcome};
use burrow_runtime::message::{Message, ToolResult};
use burrow_runtime::model::{ScriptedModel, ScriptedResponse};
use burrow_runtime::skills::{SkillSource, Skills, rule_of, tools_of, with_skills};
use burrow_state::StateBackend;
use burrow_types::SkillDirectory;
use serde_json::json;

use super::support::{Mode, Wrapped, ctx, p};

fn write(id: &str, path: &str) -> ScriptedResponse {
    ScriptedResponse::calls().call(id, "write_file", json!({"file_path": path, "content": "x"}))
}

fn results(history: &[Message]) -> Vec<ToolResult> {
    history
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult(r) => Some(r.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn entries_name_burrow_tools_as_claude_code_names_them() {
    // The artifact tools too: artifacts are paths to the rules (ADR 0395).
    assert_eq!(
        tools_of("Read"),
        [
            "read_file",
            "ls",
            "glob",
            "grep",
            "list_artifacts",
            "read_artifact"
        ]
    );
    assert_eq!(
        tools_of("Write"),
        [
            "write_file",
            "edit_file",
            "delete_path",
            "create_artifact",
            "edit_artifact",
            "archive_artifact"
        ]
    );
    assert_eq!(tools_of("Bash(git:*)"), ["execute"]);
    assert_eq!(tools_of("read_file"), ["read_file"]);
    assert_eq!(tools_of("mcp__docs__search"), ["mcp__docs__search"]);
    assert_eq!(tools_of("Grep"), ["grep"]);
    assert_eq!(tools_of("MultiEdit(/src/**)"), ["edit_file"]);
    // Each entry is a permission rule; one that is not says why.
    for good in [
        "Bash(git:*)",
        "Bash(npm run test:*)",
        "Read(/docs/**)",
        "Glob",
        "LS",
    ] {
        assert!(rule_of(good).is_ok(), "{good}");
    }
    assert!(rule_of("Bash(git:*").unwrap_err().contains("\")\""));
}

#[tokio::test]
async fn a_loaded_skill_narrows_the_tools_for_the_rest_of_the_run() {
    let backend: Arc<dyn Backend> = Arc::new(StateBackend::new());
    for (path, text) in [
        (
            "/skills/reader/SKILL.md",
            "---\nname: reader\ndescription: Reads only.\nallowed-tools: Read\n---\nRead, never write.\n",
        ),
        (
            "/skills/plain/SKILL.md",
            "---\nname: plain\ndescription: No tool list.\n---\nAnything.\n",
        ),
        (
            "/skills/todo/SKILL.md",
            "---\nname: todo\ndescription: Edits.\nallowed-tools:\n  - edit_file\n---\nEdit.\n",
        ),
        ("/a.txt", "hello\n"),
    ] {
        backend.write(&ctx(), &p(path), text).await.unwrap();
    }
    let sources = vec![SkillSource::new(
        backend.clone(),
        ctx(),
        SkillDirectory {
            path: "/skills".to_owned(),
            recursive: None,
        },
    )];
    let (skills, warnings) = Skills::discover(sources).await.unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let script = vec![
        write("w1", "/before.txt"),
        ScriptedResponse::calls().call("s1", "skill", json!({"name": "reader"})),
        write("w2", "/after.txt").call("r1", "read_file", json!({"file_path": "/a.txt"})),
        ScriptedResponse::calls().call("s2", "skill", json!({"name": "plain"})),
        write("w3", "/plain.txt"),
        ScriptedResponse::calls().call("s3", "skill", json!({"name": "todo"})),
        ScriptedResponse::calls().call(
            "e1",
            "edit_file",
            json!({"file_path": "/a.txt", "old_string": "hello", "new_string": "bye"}),
        ),
        ScriptedResponse::text("first done"),
        // The next run.
        write("w4", "/next.txt"),
        ScriptedResponse::text("second done"),
    ];
    let mut tools = burrow_runtime::tool::ToolRegistry::new();
    tools.add_file_tools(backend.clone(), ctx());
    let agent = with_skills(
        Agent::new(Arc::new(ScriptedModel::from_responses(script))).with_tools(tools),
        Arc::new(skills),
    );
    let mut history = Vec::new();
    let result = agent.run(&mut history, "look").await;
    assert_eq!(result.outcome, Outcome::Completed);
    let got = results(&history);
    let by_id = |id: &str| got.iter().find(|r| r.call_id == id).unwrap().clone();
    assert!(!by_id("w1").is_error, "{:?}", by_id("w1"));
    let s1 = by_id("s1");
    assert!(
        s1.content.ends_with(
            "For the rest of this run you may make only the calls these allowed-tools rules cover (this skill's, with those of the other skills loaded): Read; and call skill."
        ),
        "{}",
        s1.content
    );
    let w2 = by_id("w2");
    assert!(w2.is_error);
    assert_eq!(
        w2.content,
        "The loaded skill reader allows only the calls its allowed-tools rules cover for the rest of this run (Read); this write_file call is not one of them."
    );
    assert!(!by_id("r1").is_error && by_id("r1").content.contains("hello"));
    assert!(!by_id("s2").is_error);
    assert!(
        by_id("w3").is_error,
        "a skill without allowed-tools widens nothing"
    );
    assert!(!by_id("e1").is_error, "{:?}", by_id("e1"));
    for gone in ["/after.txt", "/plain.txt"] {
        assert!(
            backend.read_bytes(&ctx(), &p(gone)).await.is_err(),
            "{gone} was written"
        );
    }
    assert_eq!(
        backend.read_bytes(&ctx(), &p("/a.txt")).await.unwrap(),
        b"bye\n"
    );

    // The narrowing ends with its run.
    let result = agent.run(&mut history, "write now").await;
    assert_eq!(result.outcome, Outcome::Completed);
    assert!(
        !results(&history)
            .iter()
            .find(|r| r.call_id == "w4")
            .unwrap()
            .is_error
    );
    assert_eq!(
        backend.read_bytes(&ctx(), &p("/next.txt")).await.unwrap(),
        b"x"
    );
}

#[tokio::test]
async fn specifiers_narrow_within_a_tool_to_command_prefixes_and_paths() {
    let backend = Arc::new(Wrapped::new(StateBackend::new(), Mode::Plain, true));
    let files: Arc<dyn Backend> = backend.clone();
    for (path, text) in [
        (
            "/skills/docs-only/SKILL.md",
            "---\nname: docs-only\ndescription: Docs and echo.\nallowed-tools: Bash(echo ok:*) Bash(echo two words:*), Read(/docs/**) Edit(/docs/*.md) Bash(broken\n---\nDocs.\n",
        ),
        ("/docs/a.md", "docs\n"),
        ("/a.txt", "secret\n"),
    ] {
        files.write(&ctx(), &p(path), text).await.unwrap();
    }
    let (skills, warnings) = Skills::discover(vec![SkillSource::new(
        files.clone(),
        ctx(),
        SkillDirectory {
            path: "/skills".to_owned(),
            recursive: None,
        },
    )])
    .await
    .unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        skills.file("docs-only").unwrap().allowed_tools,
        [
            "Bash(echo ok:*)",
            "Bash(echo two words:*)",
            "Read(/docs/**)",
            "Edit(/docs/*.md)",
            "Bash(broken"
        ]
    );
    let exec = |id: &str, command: &str| {
        ScriptedResponse::calls().call(id, "execute", json!({"command": command}))
    };
    let script = vec![
        ScriptedResponse::calls().call("s1", "skill", json!({"name": "docs-only"})),
        exec("x1", "echo ok now")
            .call("x2", "execute", json!({"command": "echo two words here"}))
            .call("x3", "execute", json!({"command": "echo bad"}))
            .call("x4", "execute", json!({"command": "echo ok && echo bad"}))
            .call("x5", "execute", json!({"command": "echo okay"})),
        ScriptedResponse::calls()
            .call("r1", "read_file", json!({"file_path": "/docs/a.md"}))
            .call("r2", "read_file", json!({"file_path": "/a.txt"}))
            .call(
                "w1",
                "write_file",
                json!({"file_path": "/docs/new.md", "content": "x"}),
            )
            .call(
                "w2",
                "write_file",
                json!({"file_path": "/docs/deep/new.md", "content": "x"}),
            )
            .call(
                "w3",
                "write_file",
                json!({"file_path": "/b.md", "content": "x"}),
            ),
        ScriptedResponse::text("done"),
    ];
    let mut tools = burrow_runtime::tool::ToolRegistry::new();
    tools.add_file_tools(files.clone(), ctx());
    let agent = with_skills(
        Agent::new(Arc::new(ScriptedModel::from_responses(script))).with_tools(tools),
        Arc::new(skills),
    );
    let mut history = Vec::new();
    let result = agent.run(&mut history, "go").await;
    assert_eq!(result.outcome, Outcome::Completed);
    let got = results(&history);
    let by_id = |id: &str| got.iter().find(|r| r.call_id == id).unwrap().clone();
    let s1 = by_id("s1").content;
    assert!(
        s1.contains("(this skill's, with those of the other skills loaded): Bash(echo ok:*), Bash(echo two words:*), Read(/docs/**), Edit(/docs/*.md), Bash(broken; and call skill."),
        "{s1}"
    );
    assert!(s1.contains("Bash(broken covers nothing:"), "{s1}");
    let refusal = |tool: &str| {
        format!(
            "The loaded skill docs-only allows only the calls its allowed-tools rules cover for the rest of this run (Bash(echo ok:*), Bash(echo two words:*), Read(/docs/**), Edit(/docs/*.md), Bash(broken); this {tool} call is not one of them."
        )
    };
    // The prefixes run; what they do not cover is refused and never runs.
    assert!(by_id("x1").content.contains("ok now"), "{:?}", by_id("x1"));
    assert!(!by_id("x1").is_error);
    assert!(
        by_id("x2").content.contains("two words here"),
        "{:?}",
        by_id("x2")
    );
    for refused in ["x3", "x4", "x5"] {
        let r = by_id(refused);
        assert!(r.is_error, "{refused}: {r:?}");
        assert_eq!(r.content, refusal("execute"), "{refused}");
    }
    // Paths: under /docs only, and writes only to /docs/*.md.
    assert!(by_id("r1").content.contains("docs"), "{:?}", by_id("r1"));
    assert_eq!(by_id("r2").content, refusal("read_file"));
    assert!(!by_id("w1").is_error, "{:?}", by_id("w1"));
    for refused in ["w2", "w3"] {
        assert_eq!(by_id(refused).content, refusal("write_file"), "{refused}");
    }
    assert_eq!(
        files.read_bytes(&ctx(), &p("/docs/new.md")).await.unwrap(),
        b"x"
    );
    for gone in ["/docs/deep/new.md", "/b.md"] {
        assert!(
            files.read_bytes(&ctx(), &p(gone)).await.is_err(),
            "{gone} was written"
        );
    }
}
