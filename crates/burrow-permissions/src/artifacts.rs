//! Artifacts as paths: each artifact of the artifact workspace is named `/artifacts/KIND/ID` to the rules, so `Read(...)` reaches the reading artifact tools and `Edit(...)`/`Write(...)` the changing ones (ADR 0395).
//!
//! An artifact's id is `KIND-SEQ` (the artifact store names every one so),
//! so its kind is the id up to its last "-": `note-3` is
//! `/artifacts/note/note-3`. A create is checked at `/artifacts/KIND/KIND-*`,
//! a name standing for the artifact it will make (its number is given as it
//! commits): a rule covering the kind's folder (`/artifacts/note/**`) or
//! every id of the kind (`/artifacts/note/*`, `note-*`) covers it, a rule
//! naming one artifact (`/artifacts/note/note-3`) does not.

use burrow_backend::VPath;
use serde_json::Value;

/// The folder the rules see the artifacts in.
pub const ARTIFACTS_DIR: &str = "/artifacts";

/// The artifact tools that read (`Read(...)` covers them).
pub const ARTIFACT_READ_TOOLS: &[&str] = &["list_artifacts", "read_artifact"];

/// The artifact tools that change an artifact (`Edit(...)` and `Write(...)` cover them).
pub const ARTIFACT_EDIT_TOOLS: &[&str] = &["create_artifact", "edit_artifact", "archive_artifact"];

/// True when `name` can be one path segment (no "/", NUL, "." or "..").
fn plain(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\0'])
}

/// The kind of the artifact `id`: the id up to its last "-", when a number follows it.
pub fn kind_of(id: &str) -> Option<&str> {
    let (kind, seq) = id.rsplit_once('-')?;
    (!kind.is_empty() && !seq.is_empty() && seq.bytes().all(|b| b.is_ascii_digit())).then_some(kind)
}

/// The path the rules know the artifact `id` by, `/artifacts/KIND/ID`;
/// `None` when `id` names no artifact the store could have made (not
/// `KIND-SEQ`, or not a plain name).
pub fn artifact_path(id: &str) -> Option<VPath> {
    let kind = kind_of(id)?;
    if !plain(id) || !plain(kind) {
        return None;
    }
    VPath::parse(&format!("{ARTIFACTS_DIR}/{kind}/{id}")).ok()
}

/// The path a create of a `kind` artifact is checked at, `/artifacts/KIND/KIND-*`;
/// `None` when `kind` is not a plain name (no kind is).
pub fn new_artifact_path(kind: &str) -> Option<VPath> {
    if !plain(kind) {
        return None;
    }
    VPath::parse(&format!("{ARTIFACTS_DIR}/{kind}/{kind}-*")).ok()
}

/// The folder of the `kind` artifacts, `/artifacts/KIND` (`/artifacts` for
/// every kind); `None` when `kind` is not a plain name.
pub fn kind_path(kind: Option<&str>) -> Option<VPath> {
    match kind {
        None => VPath::parse(ARTIFACTS_DIR).ok(),
        Some(kind) if plain(kind) => VPath::parse(&format!("{ARTIFACTS_DIR}/{kind}")).ok(),
        Some(_) => None,
    }
}

/// The path a call of the artifact tool `tool` with `arguments` works on:
/// the artifact its `id` names, a create's new artifact of its `kind`, a
/// listing's kind folder (or `/artifacts`); `None` for another tool or
/// arguments that name no artifact.
pub fn artifact_call_path(tool: &str, arguments: &Value) -> Option<VPath> {
    let text = |key: &str| arguments.get(key).and_then(Value::as_str);
    match tool {
        "list_artifacts" => kind_path(text("kind")),
        "read_artifact" | "edit_artifact" | "archive_artifact" => artifact_path(text("id")?),
        "create_artifact" => new_artifact_path(text("kind")?),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_artifact_is_named_by_its_kind_and_id() {
        let path = |id| artifact_path(id).map(|p| p.as_str().to_owned());
        assert_eq!(path("note-3").as_deref(), Some("/artifacts/note/note-3"));
        assert_eq!(
            path("due-diligence-12").as_deref(),
            Some("/artifacts/due-diligence/due-diligence-12")
        );
        for none in ["note", "note-", "-3", "note-x", "a/b-3", "..-3", ""] {
            assert_eq!(path(none), None, "{none}");
        }
        assert_eq!(
            new_artifact_path("note").unwrap().as_str(),
            "/artifacts/note/note-*"
        );
        assert_eq!(kind_path(None).unwrap().as_str(), "/artifacts");
        assert_eq!(kind_path(Some("..")), None);
    }

    #[test]
    fn each_artifact_tool_call_has_its_path() {
        let path = |tool, args: Value| artifact_call_path(tool, &args).map(|p| p.to_string());
        assert_eq!(
            path("edit_artifact", serde_json::json!({"id": "note-1"})).as_deref(),
            Some("/artifacts/note/note-1")
        );
        assert_eq!(
            path("create_artifact", serde_json::json!({"kind": "note"})).as_deref(),
            Some("/artifacts/note/note-*")
        );
        assert_eq!(
            path("list_artifacts", serde_json::json!({"kind": "note"})).as_deref(),
            Some("/artifacts/note")
        );
        assert_eq!(
            path("list_artifacts", serde_json::json!({})).as_deref(),
            Some("/artifacts")
        );
        assert_eq!(path("read_file", serde_json::json!({"id": "note-1"})), None);
    }
}
