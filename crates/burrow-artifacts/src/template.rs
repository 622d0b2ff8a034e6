//! `KIND.md` templates: how an artifact of a schema kind reads to an agent, by `{{field}}` and `{{/json/pointer}}` substitution (ADR 0333).
//!
//! A template is plain text in which `{{NAME}}` is replaced by the
//! snapshot's top-level field `NAME`, and `{{/a/b}}` by the value at that
//! JSON Pointer (RFC 6901). A string is put in as it is; any other value as
//! compact JSON; a missing field or pointer as nothing. A `{{` without its
//! `}}` is kept as written. There are no loops, conditions or escapes: a
//! kind that needs them is a Rust type with its own `render_for_agent`.

use serde_json::Value;

/// A parsed `KIND.md` template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    /// A JSON Pointer (a field name is kept as `/NAME`, escaped).
    Value(String),
}

impl Template {
    /// Parses `text`; every text is a template (an unclosed `{{` is literal).
    pub fn parse(text: &str) -> Self {
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut rest = text;
        while let Some(open) = rest.find("{{") {
            let after = &rest[open + 2..];
            let Some(close) = after.find("}}") else {
                break;
            };
            let name = after[..close].trim();
            literal.push_str(&rest[..open]);
            if name.is_empty() || name.contains('\n') {
                // Not a substitution: kept as written.
                literal.push_str(&rest[open..open + 2 + close + 2]);
            } else {
                if !literal.is_empty() {
                    parts.push(Part::Text(std::mem::take(&mut literal)));
                }
                let pointer = if name.starts_with('/') {
                    name.to_owned()
                } else {
                    format!("/{}", name.replace('~', "~0").replace('/', "~1"))
                };
                parts.push(Part::Value(pointer));
            }
            rest = &after[close + 2..];
        }
        literal.push_str(rest);
        if !literal.is_empty() {
            parts.push(Part::Text(literal));
        }
        Self { parts }
    }

    /// `snapshot` rendered through the template.
    pub fn render(&self, snapshot: &Value) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(text) => out.push_str(text),
                Part::Value(pointer) => match snapshot.pointer(pointer) {
                    Some(Value::String(s)) => out.push_str(s),
                    Some(Value::Null) | None => {}
                    Some(other) => out.push_str(&other.to_string()),
                },
            }
        }
        out
    }

    /// The rendering's first non-blank line, without Markdown heading marks:
    /// the one-line summary a listing shows.
    pub fn summary(rendered: &str) -> Option<String> {
        rendered
            .lines()
            .map(|l| l.trim().trim_start_matches('#').trim())
            .find(|l| !l.is_empty())
            .map(str::to_owned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_and_pointers_are_substituted() {
        let t =
            Template::parse("# {{title}}\n{{ /steps/0/title }} ({{/steps/0/done}}){{missing}}.");
        let snapshot = json!({"title": "Ship", "steps": [{"title": "write", "done": true}]});
        assert_eq!(t.render(&snapshot), "# Ship\nwrite (true).");
        assert_eq!(
            Template::summary(&t.render(&snapshot)).as_deref(),
            Some("Ship")
        );
    }

    #[test]
    fn what_is_not_a_substitution_is_kept() {
        let t = Template::parse("a {{}} b {{ unclosed");
        assert_eq!(t.render(&json!({})), "a {{}} b {{ unclosed");
        let t = Template::parse("{{a/b}} {{x~y}}");
        assert_eq!(t.render(&json!({"a/b": 1, "x~y": [2]})), "1 [2]");
    }
}
