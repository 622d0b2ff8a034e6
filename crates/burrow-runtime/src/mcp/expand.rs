//! `${VAR}` and `${VAR:-default}` in `mcpServers` entries, expanded from the environment as Claude Code does (docs/adr/0322).
//!
//! Expanded: a stdio entry's `command`, each of its `args` and each `env`
//! value; an http entry's `url` and each `headers` value. Nothing else (names,
//! `type`) is touched. `$VAR` without braces and a `$` not followed by `{`
//! stay as written. An unset variable with no default is left as written
//! (`${VAR}`) and is a warning naming the server and the variable; an unset
//! variable with a default gives the default, and so does a set but empty one
//! (the shell's `:-`).

use serde_json::Value;

/// `settings` with every `mcpServers` entry's strings expanded through
/// `lookup` (the environment, in burrow), and one warning sentence fragment
/// for each variable an entry names that is unset and has no default.
pub fn expand_servers(
    settings: &Value,
    lookup: impl Fn(&str) -> Option<String>,
) -> (Value, Vec<String>) {
    let mut out = settings.clone();
    let mut warnings = Vec::new();
    let Some(servers) = out.get_mut("mcpServers").and_then(Value::as_object_mut) else {
        return (out, warnings);
    };
    for (name, entry) in servers.iter_mut() {
        let Some(entry) = entry.as_object_mut() else {
            continue;
        };
        let mut missing = Vec::new();
        let mut expand = |v: &mut Value| {
            if let Value::String(text) = v {
                *text = expand_text(text, &lookup, &mut missing);
            }
        };
        for key in ["command", "url"] {
            if let Some(v) = entry.get_mut(key) {
                expand(v);
            }
        }
        if let Some(args) = entry.get_mut("args").and_then(Value::as_array_mut) {
            args.iter_mut().for_each(&mut expand);
        }
        for key in ["env", "headers"] {
            if let Some(map) = entry.get_mut(key).and_then(Value::as_object_mut) {
                map.values_mut().for_each(&mut expand);
            }
        }
        let mut seen = std::collections::BTreeSet::new();
        for var in missing {
            if seen.insert(var.clone()) {
                warnings.push(format!(
                    "the MCP server \"{name}\" names the variable ${{{var}}}, which is not set and has no default; it is left as written"
                ));
            }
        }
    }
    (out, warnings)
}

/// `text` with each `${VAR}` and `${VAR:-default}` expanded; the names of
/// unset variables without a default are pushed onto `missing`.
fn expand_text(
    text: &str,
    lookup: &impl Fn(&str) -> Option<String>,
    missing: &mut Vec<String>,
) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            // No closing brace: the rest stays as written.
            out.push_str(&rest[start..]);
            return out;
        };
        let inner = &after[..end];
        let (var, default) = match inner.split_once(":-") {
            Some((var, default)) => (var, Some(default)),
            None => (inner, None),
        };
        let valid = !var.is_empty()
            && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !var.starts_with(|c: char| c.is_ascii_digit());
        if !valid {
            out.push_str(&rest[start..start + 2 + end + 1]);
        } else {
            match (lookup(var), default) {
                (Some(value), Some(default)) if value.is_empty() => out.push_str(default),
                (Some(value), _) => out.push_str(&value),
                (None, Some(default)) => out.push_str(default),
                (None, None) => {
                    missing.push(var.to_owned());
                    out.push_str(&rest[start..start + 2 + end + 1]);
                }
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(var: &str) -> Option<String> {
        match var {
            "HOME_DIR" => Some("/home/me".to_owned()),
            "TOKEN" => Some("t0k".to_owned()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn every_expanded_field_is_expanded_and_nothing_else() {
        let settings = json!({"hooks": {"x": "${TOKEN}"}, "mcpServers": {
            "s": {"command": "${HOME_DIR}/bin/srv", "args": ["--port", "${PORT:-8080}", "$TOKEN"],
                  "env": {"KEY": "${TOKEN}", "E": "${EMPTY:-fallback}", "F": "${EMPTY}"}},
            "h": {"type": "http", "url": "https://${HOST:-example.com}/mcp",
                  "headers": {"Authorization": "Bearer ${TOKEN}"}, "other": "${TOKEN}"}}});
        let (out, warnings) = expand_servers(&settings, env);
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(
            out,
            json!({"hooks": {"x": "${TOKEN}"}, "mcpServers": {
                "s": {"command": "/home/me/bin/srv", "args": ["--port", "8080", "$TOKEN"],
                      "env": {"KEY": "t0k", "E": "fallback", "F": ""}},
                "h": {"type": "http", "url": "https://example.com/mcp",
                      "headers": {"Authorization": "Bearer t0k"}, "other": "${TOKEN}"}}})
        );
    }

    #[test]
    fn an_unset_variable_without_a_default_is_a_warning_naming_server_and_variable() {
        let settings = json!({"mcpServers": {
            "gh": {"command": "srv", "args": ["${GH_TOKEN}", "${GH_TOKEN}"], "env": {"A": "${OTHER}x"}}}});
        let (out, warnings) = expand_servers(&settings, env);
        assert_eq!(
            warnings,
            [
                "the MCP server \"gh\" names the variable ${GH_TOKEN}, which is not set and has no default; it is left as written",
                "the MCP server \"gh\" names the variable ${OTHER}, which is not set and has no default; it is left as written",
            ]
        );
        assert_eq!(
            out["mcpServers"]["gh"]["args"],
            json!(["${GH_TOKEN}", "${GH_TOKEN}"])
        );
        assert_eq!(out["mcpServers"]["gh"]["env"]["A"], "${OTHER}x");
    }

    #[test]
    fn malformed_references_stay_as_written() {
        let mut missing = Vec::new();
        for text in ["${", "a${b", "${}", "${1X}", "${A B}", "$", "$$", "${TOKEN"] {
            assert_eq!(expand_text(text, &env, &mut missing), text);
        }
        assert!(missing.is_empty(), "{missing:?}");
        assert_eq!(
            expand_text("${TOKEN}${TOKEN}", &env, &mut missing),
            "t0kt0k"
        );
        assert_eq!(expand_text("${X:-a:-b}", &env, &mut missing), "a:-b");
    }
}
