//! `burrow run --agents DIR`: subagent definitions in Claude Code's file form, `DIR/*.md` with a YAML frontmatter (`name`, `description`, optional `tools`, `model`, `can_ask_questions` and `max_questions`) and the instructions as the body (docs/adr/0271, 0276).
//!
//! The frontmatter is read as the flat YAML Claude Code's agent files use:
//! `key: value` lines, values plain or quoted ('...' or "..."), a list as
//! `[a, b]`, as `- item` lines under the key, or (for `tools`) as a comma
//! list, and a `|` or `>` block for a long value. Keys burrow does not use
//! (`color`, `maxTurns`, ...) are read and left alone. Anything else is a
//! file that does not parse: one sentence naming it, before anything runs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use burrow::types::SubAgentConfig;

use crate::display;

/// One definition as its file gives it, its model not opened yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentFile {
    /// The seed's configuration (name, description, instructions, model).
    pub config: SubAgentConfig,
    /// The tools the child gets (`None`: the parent's file tools).
    pub tools: Option<Vec<String>>,
}

/// The definitions of `DIR/*.md`, ordered by file name. An `Err` is one
/// sentence naming the file (or the folder) that cannot be used.
pub fn load_dir(dir: &Path) -> Result<Vec<AgentFile>, String> {
    let shown_dir = display::name(&dir.to_string_lossy()).into_owned();
    let entries = std::fs::read_dir(dir)
        .map_err(|e| format!("the agents folder {shown_dir} cannot be read: {e}"))?;
    let mut paths: Vec<PathBuf> = Vec::new();
    for entry in entries {
        let entry =
            entry.map_err(|e| format!("the agents folder {shown_dir} cannot be read: {e}"))?;
        let path = entry.path();
        if path.extension().is_some_and(|x| x == "md") && path.is_file() {
            paths.push(path);
        }
    }
    paths.sort();
    let mut agents: Vec<AgentFile> = Vec::with_capacity(paths.len());
    for path in paths {
        let shown = display::name(&path.to_string_lossy()).into_owned();
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("the agent file {shown} cannot be read: {e}"))?;
        let mut agent =
            parse(&text).map_err(|why| format!("the agent file {shown} does not parse: {why}"))?;
        if let Some(model) = &agent.config.model
            && let Some(file) = model.strip_prefix("scripted:")
            && !file.is_empty()
            && Path::new(file).is_relative()
        {
            // A script next to the definition: relative to the folder.
            let joined = std::path::absolute(dir.join(file)).unwrap_or_else(|_| dir.join(file));
            agent.config.model = Some(format!("scripted:{}", joined.display()));
        }
        if agents.iter().any(|a| a.config.name == agent.config.name) {
            return Err(format!(
                "the agent file {shown} names the subagent {}, as an earlier file does; names must be unique",
                agent.config.name
            ));
        }
        agents.push(agent);
    }
    Ok(agents)
}

/// One definition from a file's text; an `Err` says what is wrong, in a phrase.
pub fn parse(text: &str) -> Result<AgentFile, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.lines();
    if lines.next().map(str::trim_end) != Some("---") {
        return Err("it does not start with a --- line opening its frontmatter".to_owned());
    }
    let mut front: Vec<&str> = Vec::new();
    let mut closed = false;
    for line in lines.by_ref() {
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        front.push(line);
    }
    if !closed {
        return Err("its frontmatter has no closing --- line".to_owned());
    }
    let body: Vec<&str> = lines.collect();
    let fields = frontmatter(&front)?;
    let scalar = |key: &str| -> Result<Option<String>, String> {
        match fields.get(key) {
            None => Ok(None),
            Some(Value::Text(t)) => Ok(Some(t.clone())),
            Some(Value::List(_)) => Err(format!("its {key} is a list, not a text")),
        }
    };
    let name = scalar("name")?
        .filter(|n| !n.is_empty())
        .ok_or("its frontmatter has no name")?;
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
        || name.len() > 64
    {
        return Err(format!(
            "its name {} is not 1 to 64 lowercase letters, digits, - and _",
            display::name(&name)
        ));
    }
    let description = scalar("description")?
        .filter(|d| !d.trim().is_empty())
        .ok_or("its frontmatter has no description")?;
    let tools = match fields.get("tools") {
        None => None,
        Some(Value::Text(t)) if t.trim().is_empty() => None,
        Some(Value::Text(t)) => Some(
            t.split(',')
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
                .collect(),
        ),
        Some(Value::List(items)) => Some(items.clone()),
    };
    let model = scalar("model")?.filter(|m| !m.is_empty() && m != "inherit");
    let can_ask = match scalar("can_ask_questions")?.as_deref() {
        None => None,
        Some("true") => Some(true),
        Some("false") => Some(false),
        Some(_) => return Err("its can_ask_questions is neither true nor false".to_owned()),
    };
    let max_questions = match scalar("max_questions")? {
        None => None,
        Some(n) => Some(
            n.parse::<u32>()
                .map_err(|_| "its max_questions is not a whole number".to_owned())?,
        ),
    };
    let mut config = SubAgentConfig::new(name, description, body.join("\n").trim().to_owned());
    config.model = model;
    config.can_ask_questions = can_ask;
    config.max_questions = max_questions;
    Ok(AgentFile { config, tools })
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Value {
    Text(String),
    List(Vec<String>),
}

/// The frontmatter's keys and values.
fn frontmatter(lines: &[&str]) -> Result<BTreeMap<String, Value>, String> {
    let mut fields = BTreeMap::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            return Err(format!(
                "line {} of its frontmatter is indented but belongs to no key",
                i + 1
            ));
        }
        let Some((key, rest)) = line.split_once(':') else {
            return Err(format!(
                "line {} of its frontmatter is not `key: value`",
                i + 1
            ));
        };
        let key = key.trim();
        if key.is_empty() || key.contains(char::is_whitespace) {
            return Err(format!(
                "line {} of its frontmatter has no key before its colon",
                i + 1
            ));
        }
        let rest = rest.trim();
        // The indented lines that follow belong to this key.
        let start = i;
        while i < lines.len() && (lines[i].starts_with([' ', '\t']) || lines[i].trim().is_empty()) {
            i += 1;
        }
        let block: Vec<&str> = lines[start..i].to_vec();
        let value = if rest.is_empty() {
            let items: Vec<&str> = block
                .iter()
                .map(|l| l.trim())
                .filter(|l| !l.is_empty())
                .collect();
            if items.is_empty() {
                Value::Text(String::new())
            } else if items.iter().all(|l| l.starts_with('-')) {
                let list: Result<Vec<String>, String> =
                    items.iter().map(|l| unquote(l[1..].trim(), i)).collect();
                Value::List(list?)
            } else {
                return Err(format!(
                    "the value of {key} in its frontmatter is neither a list of - items nor a | or > block"
                ));
            }
        } else if rest == "|" || rest == ">" || rest == "|-" || rest == ">-" {
            let kept: Vec<&str> = block.iter().map(|l| l.trim()).collect();
            let joined = if rest.starts_with('|') {
                kept.join("\n")
            } else {
                kept.join(" ")
            };
            Value::Text(joined.trim().to_owned())
        } else {
            if block.iter().any(|l| !l.trim().is_empty()) {
                return Err(format!(
                    "the value of {key} in its frontmatter goes on over indented lines; quote it or use a | block"
                ));
            }
            if let Some(inner) = rest.strip_prefix('[') {
                let inner = inner.strip_suffix(']').ok_or_else(|| {
                    format!("the list of {key} in its frontmatter has no closing ]")
                })?;
                let list: Result<Vec<String>, String> = inner
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(|s| unquote(s, i))
                    .collect();
                Value::List(list?)
            } else {
                Value::Text(unquote(rest, i)?)
            }
        };
        if fields.insert(key.to_owned(), value).is_some() {
            return Err(format!("its frontmatter gives {key} twice"));
        }
    }
    Ok(fields)
}

/// A plain or quoted scalar's text.
fn unquote(value: &str, line: usize) -> Result<String, String> {
    for quote in ['"', '\''] {
        if let Some(inner) = value.strip_prefix(quote) {
            let inner = inner.strip_suffix(quote).ok_or_else(|| {
                format!("a quoted value near line {line} of its frontmatter is not closed")
            })?;
            return Ok(if quote == '"' {
                inner.replace("\\\"", "\"").replace("\\n", "\n")
            } else {
                inner.replace("''", "'")
            });
        }
    }
    // A plain scalar: a ` #` starts a comment.
    let plain = match value.find(" #") {
        Some(at) => &value[..at],
        None => value,
    };
    Ok(plain.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_code_files_parse() {
        let file = parse(
            "---\nname: code-reviewer\ndescription: \"Reviews code: quality, security\"\ntools: read_file, grep\nmodel: inherit\ncolor: blue\n---\nYou review code.\n\nBe brief.\n",
        )
        .unwrap();
        assert_eq!(file.config.name, "code-reviewer");
        assert_eq!(file.config.description, "Reviews code: quality, security");
        assert_eq!(file.config.instructions, "You review code.\n\nBe brief.");
        assert_eq!(file.config.model, None);
        assert_eq!(
            file.tools,
            Some(vec!["read_file".to_owned(), "grep".to_owned()])
        );
        let listed =
            parse("---\nname: a\ndescription: >\n  one\n  two\ntools:\n  - ls\n  - glob\n---\n")
                .unwrap();
        assert_eq!(listed.config.description, "one two");
        assert_eq!(listed.tools, Some(vec!["ls".to_owned(), "glob".to_owned()]));
        assert_eq!(
            parse(
                "---\nname: a\ndescription: d\ntools: [ls, 'grep']\nmodel: scripted:x.jsonl\n---\n"
            )
            .unwrap()
            .config
            .model
            .as_deref(),
            Some("scripted:x.jsonl")
        );
    }

    #[test]
    fn broken_files_say_why() {
        let why = |text: &str| parse(text).unwrap_err();
        assert!(why("name: a\n").contains("does not start with a ---"));
        assert!(why("---\nname: a\ndescription: d\n").contains("no closing ---"));
        assert!(why("---\ndescription: d\n---\n").contains("no name"));
        assert!(why("---\nname: a\n---\n").contains("no description"));
        assert!(why("---\nname: A b\ndescription: d\n---\n").contains("is not 1 to 64"));
        assert!(why("---\nname: a\ndescription: \"d\n---\n").contains("not closed"));
        assert!(why("---\nname: a\nname: b\ndescription: d\n---\n").contains("twice"));
        assert!(why("---\njust words\n---\n").contains("not `key: value`"));
        assert!(why("---\nname: a\ndescription: d\ntools: [ls\n---\n").contains("no closing ]"));
        assert!(
            why("---\nname: a\ndescription: d\ncan_ask_questions: maybe\n---\n")
                .contains("neither true nor false")
        );
        assert!(
            why("---\nname: a\ndescription: d\nmax_questions: many\n---\n")
                .contains("not a whole number")
        );
        let asks =
            parse("---\nname: a\ndescription: d\ncan_ask_questions: true\nmax_questions: 2\n---\n")
                .unwrap();
        assert_eq!(asks.config.can_ask_questions, Some(true));
        assert_eq!(asks.config.max_questions, Some(2));
    }
}
