//! Hook matchers as Claude Code reads them: empty or `*` matches every tool, a plain `a|b` list names tools, anything else is a regex.

use regex::Regex;

use super::HookConfigError;

/// Which tools a hook applies to.
#[derive(Debug, Clone)]
pub enum Matcher {
    /// Every tool.
    All,
    /// These tool names exactly.
    Names(Vec<String>),
    /// An unanchored regex over the tool name (`edit.*` also matches `notebook_edit`).
    Regex(Regex),
}

impl Matcher {
    /// Parses a matcher; a regex that does not compile is a configuration error.
    pub fn parse(matcher: Option<&str>) -> Result<Self, HookConfigError> {
        let m = matcher.map(str::trim).unwrap_or("");
        if m.is_empty() || m == "*" {
            return Ok(Matcher::All);
        }
        let plain = m
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '|' | ',' | ' '));
        if plain {
            let names = m
                .split(['|', ','])
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
            return Ok(Matcher::Names(names));
        }
        Regex::new(m).map(Matcher::Regex).map_err(|e| {
            HookConfigError(format!(
                "the hook matcher \"{m}\" is not a valid regular expression: {}",
                e.to_string().lines().last().unwrap_or("invalid")
            ))
        })
    }

    /// True when the hook applies to `tool`.
    pub fn matches(&self, tool: &str) -> bool {
        match self {
            Matcher::All => true,
            Matcher::Names(names) => names.iter().any(|n| n == tool),
            Matcher::Regex(re) => re.is_match(tool),
        }
    }
}
