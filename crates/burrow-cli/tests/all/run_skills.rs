//! `burrow run --skills DIR` and `--workspace-skills PATH` through the binary with a scripted model: a host folder's skill loaded and its resource read, a workspace skill listed, a bad skill a warning and a `skill_error` event.

use serde_json::{Value, json};

use super::support::{burrow_in, json_lines as lines, script};

#[test]
fn host_and_workspace_skills_are_loaded_and_a_bad_one_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let host = d.join("my-skills");
    std::fs::create_dir_all(host.join("csv-clean")).unwrap();
    std::fs::write(
        host.join("csv-clean/SKILL.md"),
        "---\nname: csv-clean\ndescription: Clean CSV files; use for any CSV.\n---\nTrim every cell.\n",
    )
    .unwrap();
    std::fs::write(host.join("csv-clean/rules.md"), "No empty rows.\n").unwrap();
    std::fs::create_dir_all(host.join("broken")).unwrap();
    std::fs::write(host.join("broken/SKILL.md"), "no frontmatter\n").unwrap();
    let ws = d.join("ws");
    std::fs::create_dir_all(ws.join("skills/release-notes")).unwrap();
    std::fs::write(
        ws.join("skills/release-notes/SKILL.md"),
        "---\nname: release-notes\ndescription: Write release notes.\n---\nGroup by kind.\n",
    )
    .unwrap();
    let model = script(
        d,
        "skills.jsonl",
        &[
            json!({"tool_calls": [{"id": "s1", "name": "skill", "arguments": {"name": "csv-clean"}}]}),
            json!({"tool_calls": [{"id": "r1", "name": "read_file",
                "arguments": {"file_path": "/.burrow/skills/host-1/csv-clean/rules.md"}}]}),
            json!({"text": "done"}),
        ],
    );
    let run = burrow_in(
        d,
        &[
            "--json",
            "--backend",
            &format!("fs:{}", ws.display()),
            "run",
            "clean data.csv",
            "--model",
            &model,
            "--skills",
            &host.display().to_string(),
            "--workspace-skills",
            "/skills",
        ],
        b"",
    );
    run.assert_code(0);
    let events = lines(&run);
    let errors: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "skill_error")
        .collect();
    assert_eq!(errors.len(), 1, "{events:?}");
    assert_eq!(errors[0]["file"], "/.burrow/skills/host-1/broken/SKILL.md");
    assert_eq!(errors[0]["rule"], "no_frontmatter");
    assert!(
        run.stderr.contains(
            "burrow: warning: the skill /.burrow/skills/host-1/broken/SKILL.md was not loaded"
        ),
        "{}",
        run.stderr
    );
    let results: Vec<String> = events
        .iter()
        .filter(|e| e["type"] == "tool_result")
        .map(|e| e.to_string())
        .collect();
    assert_eq!(results.len(), 2, "{events:?}");
    assert!(results[0].contains("Trim every cell."), "{}", results[0]);
    assert!(
        results[0].contains("/.burrow/skills/host-1/csv-clean/rules.md"),
        "{}",
        results[0]
    );
    assert!(results[1].contains("No empty rows."), "{}", results[1]);

    // A --skills path that is not a folder runs nothing.
    let bad = burrow_in(
        d,
        &["run", "x", "--model", &model, "--skills", "no-such-folder"],
        b"",
    );
    bad.assert_code(2);
    assert!(bad.stderr.contains("is not a folder"), "{}", bad.stderr);
}
