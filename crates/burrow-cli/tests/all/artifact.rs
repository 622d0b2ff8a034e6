//! `burrow artifact ...` through the binary on a real SQLite session file: create, show, edit (JSON Patch and anchored text), history with the person's name, a stale edit's conflict in --json, archive, an agent's proposals listed, applied and rejected, and the refusals (unknown kind, schema path, no kinds folder, a decided, unknown or stale proposal).

use std::path::Path;

use burrow_artifacts::{Actor, ArtifactStore, Change, Kinds, SqliteArtifactStore};
use burrow_runtime::session::Scope;
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
    artifact_as(dir, &["--json"], args)
}

/// `burrow GLOBAL... artifact ARGS...` on the test's session file and kinds, as "ana".
fn artifact_as(dir: &Path, global: &[&str], args: &[&str]) -> Run {
    let spec = format!("sqlite:{}", dir.join("s.db").display());
    let mut all = global.to_vec();
    all.push("artifact");
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

/// The kinds `setup` wrote, for the library's own store on the same file.
fn kinds_of(dir: &Path) -> Kinds {
    let text = std::fs::read_to_string(dir.join("kinds").join("plan.schema.json")).unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    Kinds::new().with_schema("plan", schema).unwrap()
}

/// Records `changes` as proposals of the agent `planner` through the library, on
/// the store the CLI opens (the file s.db, the default tenant, the workspace "default").
fn propose(dir: &Path, changes: Vec<(Change, &str)>) -> Vec<u64> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let store = SqliteArtifactStore::open(dir.join("s.db"), kinds_of(dir)).unwrap();
        let scope = Scope::new(burrow::DEFAULT_TENANT, "default");
        let agent = Actor::agent("planner", "run-1");
        let mut ids = Vec::new();
        for (change, rationale) in changes {
            ids.push(
                store
                    .propose(&scope, &agent, change, rationale)
                    .await
                    .unwrap()
                    .id,
            );
        }
        ids
    })
}

fn edit_text(id: &str, base: u64, old: &str, new: &str) -> Change {
    Change::EditText {
        id: id.to_owned(),
        base_version: base,
        field: "/text".to_owned(),
        old: old.to_owned(),
        new: new.to_owned(),
        summary: None,
    }
}

/// The proposal `id` of `proposals --all`.
fn proposal(dir: &Path, id: u64) -> Value {
    let all = value(&artifact(dir, &["proposals", "--all"]));
    all["proposals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("no proposal {id} in {all}"))
}

/// A refusal's message is one sentence: one full stop, at its end.
fn one_sentence(message: &str) {
    assert!(message.ends_with('.'), "{message}");
    assert_eq!(message.matches(". ").count(), 0, "{message}");
}

#[test]
fn an_agents_proposals_are_listed_applied_and_rejected_by_a_person() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    setup(dir);
    let created = artifact(dir, &["create", "plan", "plan.json"]);
    assert_eq!(created.code, 0, "{}", created.stderr);
    let id = value(&created)["artifact"]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    let title = Change::Patch {
        id: id.clone(),
        base_version: 1,
        patch: serde_json::from_value(
            json!([{"op": "replace", "path": "/title", "value": "Ship now"}]),
        )
        .unwrap(),
        summary: Some("a sharper title".to_owned()),
    };
    let ids = propose(
        dir,
        vec![
            (
                edit_text(&id, 1, "step two", "step 2"),
                "digits read faster",
            ),
            (title, "the title should say when"),
            (
                edit_text(&id, 1, "step one", "step 1"),
                "the same for the first",
            ),
        ],
    );
    assert_eq!(ids, [1, 2, 3]);

    // `proposals --json`: the open ones, in order, with their change, rationale and proposer.
    let listed = artifact(dir, &["proposals"]);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let listed = value(&listed);
    let proposals = listed["proposals"].as_array().unwrap();
    assert_eq!(proposals.len(), 3, "{listed}");
    let agent = json!({"type": "agent", "name": "planner", "run_id": "run-1"});
    for (p, (n, op, rationale)) in proposals.iter().zip([
        (1, "edit_text", "digits read faster"),
        (2, "patch", "the title should say when"),
        (3, "edit_text", "the same for the first"),
    ]) {
        assert_eq!(p["id"], n, "{p}");
        assert_eq!(p["change"]["op"], op, "{p}");
        assert_eq!(p["change"]["id"], id.as_str(), "{p}");
        assert_eq!(p["change"]["base_version"], 1, "{p}");
        assert_eq!(p["rationale"], rationale, "{p}");
        assert_eq!(p["actor"], agent, "{p}");
        assert_eq!(p["status"], json!({"status": "pending"}), "{p}");
    }
    assert_eq!(
        proposals[0]["change"],
        json!({"op": "edit_text", "id": id, "base_version": 1, "field": "/text",
               "old": "step two", "new": "step 2"})
    );
    let shown = value(&artifact(dir, &["show", &id]));
    assert_eq!(
        shown["artifact"]["version"], 1,
        "a proposal changes no artifact"
    );

    // The text listing: one line a proposal.
    let text = artifact_as(dir, &[], &["proposals"]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    let stdout = String::from_utf8(text.stdout.clone()).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    assert!(
        lines[0].starts_with(&format!("1 edit_text {id} pending ")),
        "{stdout}"
    );
    assert!(lines[0].ends_with(": digits read faster"), "{stdout}");

    // `apply 1`: the artifact's version and snapshot change, attributed to the
    // proposer; the proposal is applied by the person and no longer open.
    let applied = artifact(dir, &["apply", "1"]);
    assert_eq!(applied.code, 0, "{}", applied.stderr);
    let applied = value(&applied);
    assert_eq!(applied["artifact"]["version"], 2, "{applied}");
    assert_eq!(
        applied["artifact"]["snapshot"],
        json!({"title": "Ship", "text": "step one\nstep 2\n"})
    );
    assert_eq!(applied["revision"]["actor"], agent, "{applied}");
    let shown = value(&artifact(dir, &["show", &id]));
    assert_eq!(shown["artifact"]["version"], 2);
    assert_eq!(shown["artifact"]["snapshot"]["text"], "step one\nstep 2\n");
    let open: Vec<Value> = value(&artifact(dir, &["proposals"]))["proposals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].clone())
        .collect();
    assert_eq!(
        open,
        [json!(2), json!(3)],
        "an applied proposal is not open"
    );
    assert_eq!(
        proposal(dir, 1)["status"],
        json!({"status": "applied", "by": {"type": "person", "name": "ana"},
               "artifact": id, "version": 2})
    );

    // `reject 2 --reason R`: the proposal is rejected with the reason; the artifact is untouched.
    let rejected = artifact(
        dir,
        &["reject", "2", "--reason", "keep the title", "--as", "bo"],
    );
    assert_eq!(rejected.code, 0, "{}", rejected.stderr);
    assert_eq!(
        value(&rejected)["proposal"]["status"],
        json!({"status": "rejected", "by": {"type": "person", "name": "bo"},
               "reason": "keep the title"})
    );
    let after_reject = value(&artifact(dir, &["show", &id]));
    assert_eq!(after_reject, shown, "a rejection changes no artifact");
    let history = value(&artifact(dir, &["history", &id]));
    assert_eq!(history["revisions"].as_array().unwrap().len(), 2);
}

#[test]
fn a_decided_unknown_or_stale_proposal_is_refused_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    setup(dir);
    let created = artifact(dir, &["create", "plan", "plan.json"]);
    assert_eq!(created.code, 0, "{}", created.stderr);
    let id = value(&created)["artifact"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    propose(
        dir,
        vec![
            (edit_text(&id, 1, "step two", "step 2"), "digits"),
            (edit_text(&id, 1, "step one", "step 1"), "digits too"),
            (edit_text(&id, 1, "one", "first"), "a word"),
        ],
    );
    assert_eq!(artifact(dir, &["apply", "1"]).code, 0);
    let rejected = artifact(dir, &["reject", "3"]);
    assert_eq!(rejected.code, 0, "{}", rejected.stderr);
    assert_eq!(
        value(&rejected)["proposal"]["status"],
        json!({"status": "rejected", "by": {"type": "person", "name": "ana"}}),
        "no --reason, no reason"
    );
    let before = value(&artifact(dir, &["show", &id]));
    assert_eq!(before["artifact"]["version"], 2);
    let before_all = value(&artifact(dir, &["proposals", "--all"]));

    // A rejected proposal, an applied one and an unknown one: refused, kind and one sentence.
    for (args, kind, said) in [
        (
            ["apply", "3"],
            "invalid_state",
            "proposal 3 was already rejected",
        ),
        (
            ["apply", "1"],
            "invalid_state",
            "proposal 1 was already applied",
        ),
        (
            ["reject", "1"],
            "invalid_state",
            "proposal 1 was already applied",
        ),
        (["apply", "9"], "not_found", "there is no proposal 9"),
        (["reject", "9"], "not_found", "there is no proposal 9"),
    ] {
        let refused = artifact(dir, &args);
        assert_eq!(refused.code, 1, "{args:?}: {}", refused.stderr);
        let error = &value(&refused)["error"];
        assert_eq!(error["kind"], kind, "{args:?}: {error}");
        let message = error["message"].as_str().unwrap();
        assert!(message.contains(said), "{args:?}: {message}");
        one_sentence(message);
    }

    // Proposal 2 was made against version 1; the head is 2: applying it is a conflict
    // naming the head and the change since, and it stays open.
    let stale = artifact(dir, &["apply", "2"]);
    assert_eq!(stale.code, 1, "{}", stale.stderr);
    let error = &value(&stale)["error"];
    assert_eq!(error["kind"], "conflict", "{error}");
    assert_eq!(error["conflict"]["head"], 2, "{error}");
    assert_eq!(
        error["conflict"]["changes_since"].as_array().unwrap().len(),
        1,
        "{error}"
    );
    one_sentence(error["message"].as_str().unwrap());

    assert_eq!(
        value(&artifact(dir, &["show", &id])),
        before,
        "the refusals changed no artifact"
    );
    assert_eq!(
        value(&artifact(dir, &["proposals", "--all"])),
        before_all,
        "the refusals changed no proposal"
    );
    assert_eq!(proposal(dir, 2)["status"], json!({"status": "pending"}));

    // Without --json the refusal is one line on stderr, no host path.
    let plain = artifact_as(dir, &[], &["apply", "9"]);
    assert_eq!(plain.code, 1);
    assert_eq!(
        plain.stderr.trim(),
        "burrow: there is no proposal 9.",
        "{}",
        plain.stderr
    );
}
