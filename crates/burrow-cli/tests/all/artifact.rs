//! `burrow artifact ...` through the binary on a real SQLite session file: create, show, edit (JSON Patch and anchored text), history with the person's name, a stale edit's conflict in --json, archive, and the refusals (unknown kind, schema path, no kinds folder).

use std::path::Path;

use serde_json::{Value, json};

use super::support::{Run, burrow_in_env};

fn setup(dir: &Path) {
    let kinds = dir.join("kinds");
    std::fs::create_dir(&kinds).unwrap();
    let schema = json!({
        "type": "object",
        "required": ["title", "text"],
        "properties": {"title": {"type": "string"}, "text": {"type": "string"}}
    });
    std::fs::write(kinds.join("plan.schema.json"), schema.to_string()).unwrap();
    std::fs::write(
        dir.join("plan.json"),
        json!({"title": "Ship", "text": "step one\nstep two\n"}).to_string(),
    )
    .unwrap();
}

/// `burrow --json artifact ARGS... --session sqlite:s.db --artifacts kinds` as USER=ana.
fn artifact(dir: &Path, args: &[&str]) -> Run {
    let spec = format!("sqlite:{}", dir.join("s.db").display());
    let mut all = vec!["--json", "artifact"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--session", &spec, "--artifacts", "kinds"]);
    burrow_in_env(dir, &all, b"", &[("USER", "ana")])
}

fn value(run: &Run) -> Value {
    serde_json::from_slice(&run.stdout).unwrap()
}

#[test]
fn a_person_creates_edits_and_archives_with_versions_and_history() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    setup(dir);

    let created = artifact(dir, &["create", "plan", "plan.json"]);
    assert_eq!(created.code, 0, "{}", created.stderr);
    let created = value(&created);
    let id = created["artifact"]["id"].as_str().unwrap().to_owned();
    assert_eq!(created["artifact"]["version"], 1);
    assert_eq!(
        created["artifact"]["created_by"],
        json!({"type": "person", "name": "ana"})
    );

    std::fs::write(
        dir.join("patch.json"),
        json!([{"op": "replace", "path": "/title", "value": "Ship it"}]).to_string(),
    )
    .unwrap();
    let patched = artifact(dir, &["edit", &id, "--base", "1", "--patch", "patch.json"]);
    assert_eq!(patched.code, 0, "{}", patched.stderr);
    assert_eq!(value(&patched)["artifact"]["version"], 2);

    let edited = artifact(
        dir,
        &[
            "edit", &id, "--base", "2", "--old", "step two", "--new", "step 2", "--as", "bo",
        ],
    );
    assert_eq!(edited.code, 0, "{}", edited.stderr);
    let edited = value(&edited);
    assert_eq!(edited["artifact"]["snapshot"]["text"], "step one\nstep 2\n");
    assert_eq!(
        edited["revision"]["actor"],
        json!({"type": "person", "name": "bo"})
    );

    // A stale edit: refused (exit 1) with the conflict's head and the changes since.
    let stale = artifact(
        dir,
        &["edit", &id, "--base", "1", "--old", "one", "--new", "1"],
    );
    assert_eq!(stale.code, 1, "{}", stale.stderr);
    let error = &value(&stale)["error"];
    assert_eq!(error["kind"], "conflict");
    assert_eq!(error["conflict"]["head"], 3);
    assert_eq!(
        error["conflict"]["changes_since"].as_array().unwrap().len(),
        2
    );
    let shown = value(&artifact(dir, &["show", &id]));
    assert_eq!(
        shown["artifact"]["version"], 3,
        "the refused edit changed nothing"
    );

    let old = value(&artifact(dir, &["show", &id, "--version", "1"]));
    assert_eq!(old["artifact"]["snapshot"]["title"], "Ship");

    let history = value(&artifact(dir, &["history", &id]));
    let ops: Vec<&str> = history["revisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["op"].as_str().unwrap())
        .collect();
    assert_eq!(ops, ["create", "patch", "edit_text"]);

    let archived = artifact(dir, &["archive", &id, "--base", "3"]);
    assert_eq!(archived.code, 0, "{}", archived.stderr);
    let listed = value(&artifact(dir, &["list"]));
    assert_eq!(
        listed["artifacts"],
        json!([]),
        "an archived artifact is listed only with --all"
    );
    let listed = value(&artifact(dir, &["list", "--all"]));
    assert_eq!(listed["artifacts"][0]["archived"], true);
    let after = artifact(
        dir,
        &["edit", &id, "--base", "4", "--old", "one", "--new", "1"],
    );
    assert_eq!(after.code, 1, "an archived artifact takes no change");
}

#[test]
fn bad_input_is_refused_with_a_kind_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    setup(dir);

    let unknown = artifact(dir, &["create", "memo", "plan.json"]);
    assert_eq!(unknown.code, 1, "{}", unknown.stderr);
    assert_eq!(value(&unknown)["error"]["kind"], "unknown_kind");

    std::fs::write(
        dir.join("bad.json"),
        json!({"title": 7, "text": ""}).to_string(),
    )
    .unwrap();
    let invalid = artifact(dir, &["create", "plan", "bad.json"]);
    assert_eq!(invalid.code, 1, "{}", invalid.stderr);
    let error = &value(&invalid)["error"];
    assert_eq!(error["kind"], "validation");
    assert!(
        error["message"].as_str().unwrap().contains("/title"),
        "{error}"
    );
    assert_eq!(value(&artifact(dir, &["list"]))["artifacts"], json!([]));

    let missing = artifact(dir, &["show", "plan-9"]);
    assert_eq!(missing.code, 1);
    assert_eq!(value(&missing)["error"]["kind"], "not_found");

    let spec = format!("sqlite:{}", dir.join("s.db").display());
    let no_kinds = burrow_in_env(
        dir,
        &[
            "artifact",
            "list",
            "--session",
            &spec,
            "--artifacts",
            "nowhere",
        ],
        b"",
        &[],
    );
    assert_eq!(no_kinds.code, 2);
    assert!(
        no_kinds.stderr.contains("artifacts folder"),
        "{}",
        no_kinds.stderr
    );
    assert!(
        !no_kinds.stderr.contains(&dir.display().to_string()),
        "no host path"
    );
}
