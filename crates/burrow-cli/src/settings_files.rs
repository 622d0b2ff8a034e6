//! Several `--settings` files layered into one settings document, in order, as Claude Code layers its settings files (docs/adr/0318).
//!
//! Arrays are concatenated (hooks of each event, the permission lists),
//! objects are merged key by key (hooks by event, `permissions`), a scalar
//! of a later file replaces an earlier one (`defaultMode`), and an
//! `mcpServers` entry of a later file replaces the earlier entry of the same
//! name whole (a server is one definition, not a sum of two).

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The settings of several files as one document, and how to name them in a message.
#[derive(Debug, Clone)]
pub struct Merged {
    /// The merged document.
    pub value: Value,
    /// "the settings file NAME" or "the settings files NAME, NAME".
    pub shown: String,
}

impl Merged {
    /// The merged document as JSON text.
    pub fn text(&self) -> String {
        self.value.to_string()
    }
}

/// The settings of `files` merged in order; `None` when there are none. `Err`
/// is one sentence naming the file that cannot be read or is not a JSON object.
pub fn merged(files: &[PathBuf]) -> Result<Option<Merged>, String> {
    let mut value: Option<Value> = None;
    for file in files {
        let next = read(file)?;
        value = Some(match value {
            None => next,
            Some(before) => layer(before, next),
        });
    }
    Ok(value.map(|value| Merged {
        value,
        shown: shown(files),
    }))
}

fn read(file: &Path) -> Result<Value, String> {
    let shown = crate::display::name(&file.to_string_lossy()).into_owned();
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("the settings file {shown} cannot be read: {e}"))?;
    let value: Value = serde_json::from_str(&text).map_err(|e| {
        format!("the settings file {shown} cannot be used: it is not valid JSON ({e}).")
    })?;
    if !value.is_object() {
        return Err(format!(
            "the settings file {shown} cannot be used: it is not a JSON object."
        ));
    }
    Ok(value)
}

fn shown(files: &[PathBuf]) -> String {
    let names: Vec<String> = files
        .iter()
        .map(|f| crate::display::name(&f.to_string_lossy()).into_owned())
        .collect();
    match names.as_slice() {
        [one] => format!("the settings file {one}"),
        _ => format!("the settings files {}", names.join(", ")),
    }
}

/// `later` laid over `earlier` at the top of a settings document.
fn layer(earlier: Value, later: Value) -> Value {
    match (earlier, later) {
        (Value::Object(mut earlier), Value::Object(later)) => {
            for (key, value) in later {
                let merged = match earlier.remove(&key) {
                    None => value,
                    Some(before) if key == "mcpServers" => servers(before, value),
                    Some(before) => deep(before, value),
                };
                earlier.insert(key, merged);
            }
            Value::Object(earlier)
        }
        (_, later) => later,
    }
}

/// Arrays concatenated, objects merged key by key, anything else the later value.
fn deep(earlier: Value, later: Value) -> Value {
    match (earlier, later) {
        (Value::Array(mut earlier), Value::Array(later)) => {
            earlier.extend(later);
            Value::Array(earlier)
        }
        (Value::Object(mut earlier), Value::Object(later)) => {
            for (key, value) in later {
                let merged = match earlier.remove(&key) {
                    None => value,
                    Some(before) => deep(before, value),
                };
                earlier.insert(key, merged);
            }
            Value::Object(earlier)
        }
        (_, later) => later,
    }
}

/// `mcpServers` by name: a later entry replaces the earlier one whole.
fn servers(earlier: Value, later: Value) -> Value {
    match (earlier, later) {
        (Value::Object(mut earlier), Value::Object(later)) => {
            for (name, server) in later {
                earlier.insert(name, server);
            }
            Value::Object(earlier)
        }
        (_, later) => later,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lists_concatenate_scalars_and_servers_are_replaced() {
        let a = json!({
            "hooks": {"PreToolUse": [{"matcher": "a"}]},
            "permissions": {"deny": ["Read(/a)"], "defaultMode": "plan"},
            "mcpServers": {"x": {"command": "one", "args": ["1"]}},
            "model": "m1"
        });
        let b = json!({
            "hooks": {"PreToolUse": [{"matcher": "b"}], "Stop": [{"hooks": []}]},
            "permissions": {"deny": ["Read(/b)"], "allow": ["Bash"], "defaultMode": "dontAsk"},
            "mcpServers": {"x": {"command": "two"}, "y": {"command": "three"}}
        });
        let merged = layer(a, b);
        assert_eq!(
            merged,
            json!({
                "hooks": {"PreToolUse": [{"matcher": "a"}, {"matcher": "b"}], "Stop": [{"hooks": []}]},
                "permissions": {"deny": ["Read(/a)", "Read(/b)"], "allow": ["Bash"], "defaultMode": "dontAsk"},
                "mcpServers": {"x": {"command": "two"}, "y": {"command": "three"}},
                "model": "m1"
            })
        );
    }

    #[test]
    fn files_are_read_in_order_and_a_bad_one_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let one = dir.path().join("one.json");
        let two = dir.path().join("two.json");
        std::fs::write(&one, r#"{"permissions": {"ask": ["Edit"]}}"#).unwrap();
        std::fs::write(&two, r#"{"permissions": {"ask": ["Bash"]}}"#).unwrap();
        let merged = merged(&[one.clone(), two.clone()]).unwrap().unwrap();
        assert_eq!(merged.value["permissions"]["ask"], json!(["Edit", "Bash"]));
        assert!(
            merged.shown.starts_with("the settings files "),
            "{}",
            merged.shown
        );
        assert!(super::merged(&[]).unwrap().is_none());
        std::fs::write(&two, "[1]").unwrap();
        let err = super::merged(&[one, two]).unwrap_err();
        assert!(
            err.contains("two.json") && err.contains("not a JSON object"),
            "{err}"
        );
    }
}
