//! `burrow run --team FILE.json`: the team file, a JSON list of the seed's `TeamMember`s (name, role, description, instructions, model), or an object with that list as `members` (docs/adr/0357).
//!
//! A member's `model` is a model spec as for `--model` (a `scripted:` file
//! relative to the team file's folder); left out, the member runs with the
//! lead's model. A file that cannot be read or does not parse, an unknown
//! field, a member name that is not plain, the lead's, or taken twice: one
//! sentence naming the file, before anything runs.

use std::path::Path;

use burrow::types::TeamMember;
use serde::Deserialize;

use crate::display;

/// A member as the file gives it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MemberEntry {
    name: String,
    #[serde(default)]
    role: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    instructions: String,
    #[serde(default)]
    model: Option<String>,
}

/// The file's two forms.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum TeamFile {
    List(Vec<MemberEntry>),
    Object { members: Vec<MemberEntry> },
}

/// The team file as messages name it: its file name (the folder it is in is
/// this machine's business, and a resumed run names it by its absolute path).
pub fn shown(path: &Path) -> String {
    let name = path
        .file_name()
        .map_or_else(|| path.to_string_lossy(), |n| n.to_string_lossy());
    display::name(&name).into_owned()
}

/// One member and its model spec (`None`: the lead's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedMember {
    /// The seed's member (its `model` the spec it runs with, the lead's when the file gives none).
    pub member: TeamMember,
    /// The spec the file gives, a `scripted:` file made absolute.
    pub model: Option<String>,
    /// The spec as the file gives it, for messages.
    pub given: Option<String>,
}

/// The members of the team file `path`, in the file's order, each member's
/// `model` filled with `lead_model` when the file leaves it out. An `Err` is
/// one sentence naming the file.
pub fn load(path: &Path, lead_model: &str) -> Result<Vec<LoadedMember>, String> {
    let shown = shown(path);
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("the team file {shown} cannot be read: {e}"))?;
    let file: TeamFile = serde_json::from_str(&text).map_err(|e| {
        format!(
            "the team file {shown} is not a JSON list of members (name, role, description, instructions, model) nor an object with one as \"members\": {e}"
        )
    })?;
    let entries = match file {
        TeamFile::List(members) | TeamFile::Object { members } => members,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut out = Vec::with_capacity(entries.len());
    for e in entries {
        let given = e.model.clone();
        let model = e.model.map(|spec| match spec.strip_prefix("scripted:") {
            Some(file) if !file.is_empty() && Path::new(file).is_relative() => {
                let joined = std::path::absolute(dir.join(file)).unwrap_or_else(|_| dir.join(file));
                format!("scripted:{}", joined.display())
            }
            _ => spec,
        });
        out.push(LoadedMember {
            member: TeamMember {
                name: e.name,
                role: e.role,
                description: e.description,
                instructions: e.instructions,
                model: model.clone().unwrap_or_else(|| lead_model.to_owned()),
            },
            model,
            given,
        });
    }
    let members: Vec<TeamMember> = out.iter().map(|m| m.member.clone()).collect();
    burrow_runtime::team::Team::check(&members)
        .map_err(|why| format!("the team file {shown} cannot be used: {why}"))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, text: &str) -> std::path::PathBuf {
        let path = dir.join("team.json");
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn both_forms_load_and_a_scripted_model_is_relative_to_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let list = write(
            dir.path(),
            r#"[{"name": "alice", "role": "coder", "model": "scripted:a.jsonl"}, {"name": "bob"}]"#,
        );
        let members = load(&list, "scripted:/lead.jsonl").unwrap();
        assert_eq!(members.len(), 2);
        let a = members[0].model.as_deref().unwrap();
        assert!(
            a.starts_with("scripted:/") && a.ends_with("/a.jsonl"),
            "{a}"
        );
        assert_eq!(members[1].model, None);
        assert_eq!(members[1].member.model, "scripted:/lead.jsonl");
        let object = write(dir.path(), r#"{"members": [{"name": "carol"}]}"#);
        assert_eq!(load(&object, "x:y").unwrap()[0].member.name, "carol");
    }

    #[test]
    fn bad_files_are_one_sentence_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        for (text, says) in [
            ("not json", "is not a JSON list"),
            (r#"[{"name": "a", "colour": "red"}]"#, "is not a JSON list"),
            ("[]", "has no members"),
            (r#"[{"name": "lead"}]"#, "lead's name"),
            (
                r#"[{"name": "a"}, {"name": "a"}]"#,
                "two members are named a",
            ),
            (r#"[{"name": "a b"}]"#, "not a plain name"),
        ] {
            let path = write(dir.path(), text);
            let e = load(&path, "x:y").unwrap_err();
            assert!(e.starts_with("the team file "), "{e}");
            assert!(e.contains("team.json"), "{e}");
            assert!(e.contains(says), "{text}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
        let e = load(&dir.path().join("none.json"), "x:y").unwrap_err();
        assert!(e.contains("cannot be read"), "{e}");
    }
}
