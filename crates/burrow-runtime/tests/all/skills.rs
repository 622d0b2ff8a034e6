//! Skills: SKILL.md parsed by the Agent Skills rules, discovered through a backend (state, SQLite), listed within bounds, and loaded by the `skill` tool through the scripted model.

use std::sync::{Arc, Mutex};

use burrow_backend::Backend;
use burrow_runtime::agent::{Agent, Outcome};
use burrow_runtime::message::Message;
use burrow_runtime::model::{ScriptedModel, ScriptedResponse};
use burrow_runtime::skills::{
    MAX_ENTRY_CHARS, SkillRule, SkillSource, Skills, parse_skill_file, with_skills,
};
use burrow_sqlite::StoreBackend;
use burrow_state::StateBackend;
use burrow_types::SkillDirectory;
use serde_json::json;

use super::support::{ctx, p};

fn skill_md(name: &str, description: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\n{body}")
}

async fn write_all(backend: &dyn Backend, files: &[(&str, &str)]) {
    for (path, text) in files {
        backend.write(&ctx(), &p(path), text).await.unwrap();
    }
}

fn dir(path: &str) -> SkillDirectory {
    SkillDirectory {
        path: path.to_owned(),
        recursive: None,
    }
}

async fn discover(
    backend: Arc<dyn Backend>,
    dirs: &[SkillDirectory],
) -> (Skills, Vec<burrow_runtime::skills::SkillWarning>) {
    let sources = dirs
        .iter()
        .map(|d| SkillSource::new(backend.clone(), ctx(), d.clone()))
        .collect();
    Skills::discover(sources).await.unwrap()
}

#[test]
fn every_field_of_the_format_is_read() {
    let text = "---\nname: pdf-forms\ndescription: Fill in PDF forms. Use when the user gives a PDF form.\n\
license: Apache-2.0\ncompatibility: needs python3 and pypdf\nallowed-tools: Bash(python:*) Read\n\
metadata:\n  owner: docs-team\n  revision: 3\ntags: [pdf, forms]\nversion: 1.2\nauthor: Ada\n---\n\n# PDF forms\nStep one.\n";
    let file = parse_skill_file(text, "pdf-forms").unwrap();
    assert_eq!(file.name, "pdf-forms");
    assert_eq!(
        file.description,
        "Fill in PDF forms. Use when the user gives a PDF form."
    );
    assert_eq!(file.license.as_deref(), Some("Apache-2.0"));
    assert_eq!(
        file.compatibility.as_deref(),
        Some("needs python3 and pypdf")
    );
    assert_eq!(file.allowed_tools, ["Bash(python:*)", "Read"]);
    assert_eq!(
        file.metadata.get("owner").map(String::as_str),
        Some("docs-team")
    );
    assert_eq!(file.metadata.get("revision").map(String::as_str), Some("3"));
    assert_eq!(file.tags, ["pdf", "forms"]);
    assert_eq!(file.version.as_deref(), Some("1.2"));
    assert_eq!(file.author.as_deref(), Some("Ada"));
    assert_eq!(file.instructions, "# PDF forms\nStep one.\n");

    // allowed-tools as a list, the seed's fields from metadata, CRLF lines.
    let text = "---\r\nname: x1\r\ndescription: d\r\nallowed-tools:\r\n  - Read\r\n  - Grep\r\nmetadata:\r\n  author: Bo\r\n  version: \"2.0\"\r\n  tags: a, b\r\n---\r\nbody\r\n";
    let file = parse_skill_file(text, "x1").unwrap();
    assert_eq!(file.allowed_tools, ["Read", "Grep"]);
    assert_eq!(file.author.as_deref(), Some("Bo"));
    assert_eq!(file.version.as_deref(), Some("2.0"));
    assert_eq!(file.tags, ["a", "b"]);
    assert_eq!(file.instructions, "body\r\n");
}

#[test]
fn each_rule_broken_once_is_named() {
    let long_name = "a".repeat(65);
    let long_description = "d".repeat(1_025);
    let long_compat = "c".repeat(501);
    let cases: Vec<(String, &str, SkillRule)> = vec![
        ("no frontmatter\n".into(), "a", SkillRule::NoFrontmatter),
        (
            "---\nname: a\ndescription: never closed\n".into(),
            "a",
            SkillRule::NoFrontmatter,
        ),
        ("---\n- a\n- b\n---\n".into(), "a", SkillRule::NotAMapping),
        (
            "---\ndescription: d\n---\n".into(),
            "a",
            SkillRule::Missing("name"),
        ),
        (
            "---\nname: a\n---\n".into(),
            "a",
            SkillRule::Missing("description"),
        ),
        (
            format!("---\nname: {long_name}\ndescription: d\n---\n"),
            "a",
            SkillRule::NameTooLong(65),
        ),
        (
            "---\nname: Pdf_Forms\ndescription: d\n---\n".into(),
            "Pdf_Forms",
            SkillRule::NameCharacters("Pdf_Forms".into()),
        ),
        (
            "---\nname: -pdf\ndescription: d\n---\n".into(),
            "-pdf",
            SkillRule::NameCharacters("-pdf".into()),
        ),
        (
            "---\nname: pdf--forms\ndescription: d\n---\n".into(),
            "pdf--forms",
            SkillRule::NameCharacters("pdf--forms".into()),
        ),
        (
            "---\nname: pdf\ndescription: d\n---\n".into(),
            "pdf-tools",
            SkillRule::NameNotFolder {
                name: "pdf".into(),
                folder: "pdf-tools".into(),
            },
        ),
        (
            "---\nname: a\ndescription: \"  \"\n---\n".into(),
            "a",
            SkillRule::EmptyDescription,
        ),
        (
            format!("---\nname: a\ndescription: {long_description}\n---\n"),
            "a",
            SkillRule::DescriptionTooLong(1_025),
        ),
        (
            format!("---\nname: a\ndescription: d\ncompatibility: {long_compat}\n---\n"),
            "a",
            SkillRule::CompatibilityLength(501),
        ),
        (
            "---\nname: a\ndescription: d\ncompatibility: \"\"\n---\n".into(),
            "a",
            SkillRule::CompatibilityLength(0),
        ),
        (
            "---\nname: a\ndescription: d\nmetadata: [1, 2]\n---\n".into(),
            "a",
            SkillRule::WrongType {
                field: "metadata",
                expected: "a mapping of text to text",
            },
        ),
        (
            "---\nname: a\ndescription: d\nallowed-tools: {x: 1}\n---\n".into(),
            "a",
            SkillRule::WrongType {
                field: "allowed-tools",
                expected: "a list of text or one text",
            },
        ),
        (
            "---\nname: [a]\ndescription: d\n---\n".into(),
            "a",
            SkillRule::WrongType {
                field: "name",
                expected: "text",
            },
        ),
    ];
    for (text, folder, rule) in cases {
        assert_eq!(parse_skill_file(&text, folder), Err(rule), "{text}");
    }
    // YAML that does not parse names the parser's reason.
    let e = parse_skill_file("---\nname: a\ndescription: [unclosed\n---\n", "a").unwrap_err();
    match &e {
        SkillRule::Yaml(reason) => assert!(!reason.is_empty()),
        other => panic!("{other:?}"),
    }
    assert!(
        e.to_string()
            .starts_with("its frontmatter is not valid YAML")
    );
}

#[tokio::test]
async fn discovery_in_a_workspace_folder_warns_of_each_bad_skill_and_duplicate() {
    let backend: Arc<dyn Backend> = Arc::new(StateBackend::new());
    write_all(
        backend.as_ref(),
        &[
            (
                "/skills/pdf-forms/SKILL.md",
                &skill_md("pdf-forms", "Fill in PDF forms.", "Use pypdf.\n"),
            ),
            ("/skills/pdf-forms/scripts/fill.py", "print('fill')\n"),
            ("/skills/pdf-forms/reference.md", "# ref\n"),
            (
                "/skills/deep/nested/csv-clean/SKILL.md",
                &skill_md("csv-clean", "Clean CSV files.", "Trim cells.\n"),
            ),
            ("/skills/broken/SKILL.md", &skill_md("other-name", "d", "")),
            (
                "/more/pdf-forms/SKILL.md",
                &skill_md("pdf-forms", "A second pdf-forms.", ""),
            ),
        ],
    )
    .await;
    let (skills, warnings) = discover(
        backend.clone(),
        &[dir("/skills"), dir("/more"), dir("/absent")],
    )
    .await;
    assert_eq!(
        skills.names().collect::<Vec<_>>(),
        ["csv-clean", "pdf-forms"]
    );
    let rendered: Vec<String> = warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        rendered,
        [
            "the skill /skills/broken/SKILL.md was not loaded: its `name` \"other-name\" is not the name of its folder, \"broken\".",
            "the skill /more/pdf-forms/SKILL.md was not loaded: a skill named \"pdf-forms\" was found first, in /skills/pdf-forms/SKILL.md.",
            "/absent: the skill directory does not exist.",
        ]
    );

    // Not recursive: only DIR/NAME/SKILL.md.
    let flat = SkillDirectory {
        path: "/skills".into(),
        recursive: Some(false),
    };
    let (skills, _) = discover(backend.clone(), &[flat]).await;
    assert_eq!(skills.names().collect::<Vec<_>>(), ["pdf-forms"]);

    // The seed's Skill: frontmatter only in the list, everything once loaded.
    let listed = skills.list();
    assert!(listed[0].frontmatter_loaded && listed[0].instructions.is_none());
    let (skill, more) = skills.load("pdf-forms").await.unwrap().unwrap();
    assert!(!more && !skill.frontmatter_loaded);
    assert_eq!(skill.path, "/skills/pdf-forms");
    assert_eq!(skill.instructions.as_deref(), Some("Use pypdf.\n"));
    assert_eq!(
        skill.resources.unwrap(),
        [
            "/skills/pdf-forms/reference.md",
            "/skills/pdf-forms/scripts/fill.py"
        ]
    );
    assert!(skills.load("nope").await.unwrap().is_none());
}

#[tokio::test]
async fn discovery_through_sqlite_reads_the_same_skills() {
    let dir_ = tempfile::tempdir().unwrap();
    let backend: Arc<dyn Backend> =
        Arc::new(StoreBackend::open(dir_.path().join("ws.db")).unwrap());
    write_all(
        backend.as_ref(),
        &[
            (
                "/.burrow/skills/release-notes/SKILL.md",
                &skill_md("release-notes", "Write release notes.", "Group by kind.\n"),
            ),
            ("/.burrow/skills/release-notes/template.md", "## Added\n"),
        ],
    )
    .await;
    let (skills, warnings) = discover(backend, &[dir("/.burrow/skills")]).await;
    assert!(warnings.is_empty(), "{warnings:?}");
    let (skill, _) = skills.load("release-notes").await.unwrap().unwrap();
    assert_eq!(
        skill.resources.unwrap(),
        ["/.burrow/skills/release-notes/template.md"]
    );
}

#[tokio::test]
async fn the_listing_is_bounded_per_skill_and_in_all() {
    let backend: Arc<dyn Backend> = Arc::new(StateBackend::new());
    let long = "w".repeat(1_024);
    let mut files = Vec::new();
    for i in 0..20 {
        // A YAML folded description longer than a line, then many short ones.
        files.push((
            format!("/s/skill-{i:02}/SKILL.md"),
            skill_md(&format!("skill-{i:02}"), &long, ""),
        ));
    }
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    write_all(backend.as_ref(), &refs).await;
    let (skills, warnings) = discover(backend.clone(), &[dir("/s")]).await;
    assert!(warnings.is_empty(), "{warnings:?}");
    // Default bound: 16,000 characters, so 15 entries of ~1,036 fit.
    let text = skills.listing(&[]).unwrap();
    let entries = text.lines().filter(|l| l.starts_with("- skill-")).count();
    assert_eq!(entries, 15, "{text}");
    assert!(text.contains("(5 more skills are not listed"), "{text}");
    // A settable bound.
    let small = skills.clone().with_max_listing_chars(3_000);
    let text = small.listing(&[]).unwrap();
    assert_eq!(
        text.lines().filter(|l| l.starts_with("- skill-")).count(),
        2
    );
    assert!(text.contains("(18 more skills are not listed"));

    // One skill's entry is cut at 1,536 characters (a description can
    // reach that only through the name and the bound; check the cut with a
    // description right at 1,024 plus a 64-character name).
    for line in text.lines().filter(|l| l.starts_with("- ")) {
        assert!(line.chars().count() <= MAX_ENTRY_CHARS);
    }
    // Loaded skills are named.
    let text = small.listing(&["skill-01".to_owned()]).unwrap();
    assert!(text.contains("Loaded in this conversation (their instructions are above in the conversation; follow them): skill-01"));
    // No skills, no listing.
    let (none, _) = discover(backend, &[dir("/empty")]).await;
    assert_eq!(none.listing(&[]), None);
}

#[tokio::test]
async fn the_skill_tool_loads_a_skill_through_the_scripted_model() {
    let backend: Arc<dyn Backend> = Arc::new(StateBackend::new());
    write_all(
        backend.as_ref(),
        &[
            (
                "/skills/csv-clean/SKILL.md",
                &skill_md(
                    "csv-clean",
                    "Clean CSV files; use when the user gives a CSV.",
                    "1. Trim every cell.\n2. Read rules.md.\n",
                ),
            ),
            ("/skills/csv-clean/rules.md", "No empty rows.\n"),
        ],
    )
    .await;
    let (skills, _) = discover(backend.clone(), &[dir("/skills")]).await;
    let systems = Arc::new(Mutex::new(Vec::new()));
    let seen = systems.clone();
    let model = ScriptedModel::new(move |request| {
        let mut seen = seen.lock().unwrap();
        seen.push(request.system.to_owned());
        Ok(match seen.len() {
            1 => ScriptedResponse::calls()
                .call("c1", "skill", json!({"name": "csv-clean"}))
                .call("c2", "skill", json!({"name": "nope"})),
            2 => ScriptedResponse::calls().call(
                "c3",
                "read_file",
                json!({"file_path": "/skills/csv-clean/rules.md"}),
            ),
            _ => ScriptedResponse::text("done"),
        })
    });
    let mut tools = burrow_runtime::tool::ToolRegistry::new();
    tools.add_file_tools(backend.clone(), ctx());
    let agent = with_skills(
        Agent::new(Arc::new(model))
            .with_instructions("You are helpful.")
            .with_tools(tools),
        Arc::new(skills),
    );
    let mut history = Vec::new();
    let result = agent.run(&mut history, "clean data.csv").await;
    assert_eq!(result.outcome, Outcome::Completed);
    let results: Vec<_> = history
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult(r) => Some(r.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 3);
    assert!(!results[0].is_error, "{results:?}");
    assert!(
        results[0]
            .content
            .contains("<instructions>\n1. Trim every cell.\n2. Read rules.md.\n</instructions>"),
        "{}",
        results[0].content
    );
    assert!(results[0].content.contains("- /skills/csv-clean/rules.md"));
    assert!(results[1].is_error);
    assert_eq!(
        results[1].content,
        "No skill is named \"nope\"; the skills are: csv-clean."
    );
    assert!(!results[2].is_error && results[2].content.contains("No empty rows."));

    let systems = systems.lock().unwrap().clone();
    assert_eq!(systems.len(), 3);
    assert!(
        systems[0].starts_with("You are helpful.\n\n## Skills\n"),
        "{}",
        systems[0]
    );
    assert!(systems[0].contains("call the `skill` tool with its name BEFORE anything else"));
    assert!(systems[0].contains("- csv-clean: Clean CSV files; use when the user gives a CSV."));
    assert!(!systems[0].contains("Loaded in this conversation"));
    // From the second request on, the skill is marked loaded (read back from the history).
    assert!(systems[1].contains("Loaded in this conversation (their instructions are above in the conversation; follow them): csv-clean"));
    assert_eq!(burrow_runtime::skills::loaded(&history), ["csv-clean"]);
}
