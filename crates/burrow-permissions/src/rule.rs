//! One permission rule as Claude Code writes it (`Tool` or `Tool(specifier)`), parsed into types.
//!
//! # Path specifiers
//!
//! `Read(...)` and `Edit(...)` (and `Write(...)`, the same changing tools)
//! take a path in gitignore syntax, anchored at the workspace root "/":
//! `/secrets/**`, `//secrets/**` (Claude Code's absolute form) and
//! `./build/**` are anchored there; a pattern with a "/" in its middle is
//! anchored too (`src/gen/*`); a pattern with none (`*.env`, `.env`) matches
//! a name at any depth. A trailing "/" is dropped: the directory and what is
//! beneath it are covered, whatever kind the path is. As in gitignore, a
//! rule that matches a directory covers everything beneath it. `*`, `?` and
//! `[...]` stay within one segment, `**` spans segments. `~/` (a home
//! folder), `!` (negation) and `..` (climbing above the root) have no
//! meaning in a workspace and are refused.
//!
//! # Command specifiers
//!
//! `Bash(...)` covers the `execute` tool: `Bash(npm run build)` is exact;
//! `Bash(npm run test:*)` is a prefix ending at a word boundary (the command
//! itself, or it followed by a space); `*` anywhere is a wildcard over any
//! characters (`Bash(git * --force)`), and a final ` *` also matches the bare
//! command. A compound command (`a && b`, `a; b`, `a | b`, a `$(..)`) is
//! matched by a deny or ask rule when any part of it is, each part also with
//! its leading `NAME=value` assignments removed; an allow rule never matches
//! a compound command.

use burrow_backend::VPath;
use globset::{GlobBuilder, GlobMatcher};

use crate::error::SettingsError;

/// The tools `Read(...)` covers: every tool that reads or lists files, and
/// the artifact tools that read artifacts (named as paths, [`crate::artifacts`]).
pub const READ_TOOLS: &[&str] = &[
    "read_file",
    "ls",
    "glob",
    "grep",
    "list_artifacts",
    "read_artifact",
];
/// The tools `Edit(...)` and `Write(...)` cover: every tool that changes
/// files, and the artifact tools that change artifacts ([`crate::artifacts`]).
pub const EDIT_TOOLS: &[&str] = &[
    "write_file",
    "edit_file",
    "delete_path",
    "create_artifact",
    "edit_artifact",
    "archive_artifact",
];
/// The tool `Bash(...)` covers.
pub const EXECUTE_TOOL: &str = "execute";

/// Which list a rule is matched for (allow rules never match compound commands).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum List {
    Deny,
    Ask,
    Allow,
}

/// What a rule applies to.
#[non_exhaustive]
#[derive(Debug, Clone)]
pub enum RuleTool {
    /// `Read`: every reading tool ([`READ_TOOLS`]).
    Read,
    /// `Edit` or `Write`: every changing file tool ([`EDIT_TOOLS`]).
    Edit,
    /// `Bash`: the `execute` tool.
    Bash,
    /// `mcp__SERVER` or `mcp__SERVER__*` (every tool of the server, `tool` is
    /// `None`) or `mcp__SERVER__TOOL`.
    Mcp {
        /// The server's name.
        server: String,
        /// The tool's name, `None` for all of the server's tools.
        tool: Option<String>,
    },
    /// Any other tool name, burrow's own (`read_file`, `task`) or one burrow
    /// does not have (`WebFetch`), which then matches nothing.
    Named(String),
}

/// A rule's specifier, typed by the tool it belongs to.
#[derive(Debug, Clone)]
enum Specifier {
    Path(PathPattern),
    Command(CommandPattern),
    /// The specifier of a tool burrow does not have (`WebFetch(domain:x)`): kept, matches nothing.
    Other,
}

/// A parsed permission rule; [`Rule::text`] is the string it came from.
#[derive(Debug, Clone)]
pub struct Rule {
    text: String,
    tool: RuleTool,
    spec: Option<Specifier>,
}

impl Rule {
    /// Parses `text`; a bad rule is refused with one sentence naming it.
    pub fn parse(text: &str) -> Result<Rule, SettingsError> {
        let trimmed = text.trim();
        let (name, inner) = match trimmed.find('(') {
            None => (trimmed, None),
            Some(open) => {
                let Some(body) = trimmed[open + 1..].strip_suffix(')') else {
                    return Err(SettingsError::rule(
                        text,
                        "its specifier must end with \")\" and nothing may follow it",
                    ));
                };
                (&trimmed[..open], Some(body))
            }
        };
        if name.is_empty() {
            return Err(SettingsError::rule(text, "it names no tool"));
        }
        if !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '*')
        {
            return Err(SettingsError::rule(
                text,
                "a tool name holds only letters, digits, \"_\" and \"-\"",
            ));
        }
        if inner.is_some_and(|s| s.trim().is_empty()) {
            return Err(SettingsError::rule(
                text,
                "its specifier is empty; write the tool name alone to cover every call",
            ));
        }
        let tool = parse_tool(text, name)?;
        let spec = match inner {
            None => None,
            Some(body) => Some(match &tool {
                RuleTool::Read | RuleTool::Edit => Specifier::Path(PathPattern::parse(text, body)?),
                RuleTool::Bash => Specifier::Command(CommandPattern::parse(body)),
                RuleTool::Mcp { .. } => {
                    return Err(SettingsError::rule(
                        text,
                        "an MCP tool rule takes no specifier",
                    ));
                }
                RuleTool::Named(n) if READ_TOOLS.contains(&n.as_str()) => {
                    Specifier::Path(PathPattern::parse(text, body)?)
                }
                RuleTool::Named(n) if EDIT_TOOLS.contains(&n.as_str()) => {
                    Specifier::Path(PathPattern::parse(text, body)?)
                }
                RuleTool::Named(n) if n == EXECUTE_TOOL => {
                    Specifier::Command(CommandPattern::parse(body))
                }
                RuleTool::Named(_) => Specifier::Other,
            }),
        };
        Ok(Rule {
            text: trimmed.to_owned(),
            tool,
            spec,
        })
    }

    /// The rule as written (trimmed).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// What the rule applies to.
    pub fn tool(&self) -> &RuleTool {
        &self.tool
    }

    /// The path pattern of a `Read`/`Edit`/`Write` rule, `None` for a bare one
    /// (every path) or another tool.
    pub fn path_pattern(&self) -> Option<&PathPattern> {
        match &self.spec {
            Some(Specifier::Path(p)) => Some(p),
            _ => None,
        }
    }

    /// True when the rule names a tool with no specifier: the whole tool.
    pub fn is_bare(&self) -> bool {
        self.spec.is_none()
    }

    /// Whether this rule covers a call of `name` with `path` / `command`.
    pub(crate) fn matches(
        &self,
        name: &str,
        path: Option<&VPath>,
        command: Option<&str>,
        list: List,
    ) -> bool {
        let tool_hit = match &self.tool {
            RuleTool::Read => READ_TOOLS.contains(&name),
            RuleTool::Edit => EDIT_TOOLS.contains(&name),
            RuleTool::Bash => name == EXECUTE_TOOL,
            RuleTool::Mcp { server, tool } => match name
                .strip_prefix("mcp__")
                .and_then(|rest| rest.strip_prefix(server.as_str()))
            {
                Some("") => tool.is_none(),
                Some(rest) => match (rest.strip_prefix("__"), tool) {
                    (Some(_), None) => true,
                    (Some(called), Some(t)) => called == t,
                    (None, _) => false,
                },
                None => false,
            },
            RuleTool::Named(n) => n == name,
        };
        if !tool_hit {
            return false;
        }
        match &self.spec {
            None => true,
            Some(Specifier::Path(p)) => path.is_some_and(|path| p.covers(path)),
            Some(Specifier::Command(c)) => command.is_some_and(|cmd| c.matches(cmd, list)),
            Some(Specifier::Other) => false,
        }
    }
}

fn parse_tool(text: &str, name: &str) -> Result<RuleTool, SettingsError> {
    if let Some(rest) = name.strip_prefix("mcp__") {
        let (server, tool) = match rest.split_once("__") {
            Some((server, "*" | "")) => (server, None),
            Some((server, tool)) => (server, Some(tool.to_owned())),
            None => (rest, None),
        };
        if server.is_empty() || server.contains('*') {
            return Err(SettingsError::rule(
                text,
                "an MCP rule is mcp__SERVER, mcp__SERVER__* or mcp__SERVER__TOOL with a server name",
            ));
        }
        return Ok(RuleTool::Mcp {
            server: server.to_owned(),
            tool,
        });
    }
    if name.contains('*') {
        return Err(SettingsError::rule(
            text,
            "\"*\" in a tool name is only allowed as mcp__SERVER__*",
        ));
    }
    Ok(match name {
        "Read" => RuleTool::Read,
        "Edit" | "Write" => RuleTool::Edit,
        "Bash" => RuleTool::Bash,
        other => RuleTool::Named(other.to_owned()),
    })
}

/// A gitignore-style path pattern anchored at the workspace root.
#[derive(Debug, Clone)]
pub struct PathPattern {
    /// `None`: the pattern covers every path (`/`, `**`).
    matcher: Option<GlobMatcher>,
    /// For an anchored pattern, the literal directories before its first
    /// wildcard ("/secrets" for "/secrets/**"); "/" when unanchored.
    literal: VPath,
}

impl PathPattern {
    fn parse(rule: &str, spec: &str) -> Result<PathPattern, SettingsError> {
        let spec = spec.trim();
        if spec.starts_with('!') {
            return Err(SettingsError::rule(
                rule,
                "negated patterns (\"!\") are not supported; write an allow rule instead",
            ));
        }
        if spec == "~" || spec.starts_with("~/") {
            return Err(SettingsError::rule(
                rule,
                "\"~/\" means a home folder, which a burrow workspace does not have; anchor the path at the workspace root with \"/\"",
            ));
        }
        let (anchored_by_prefix, body) = if let Some(rest) = spec.strip_prefix("//") {
            (true, rest)
        } else if let Some(rest) = spec.strip_prefix('/') {
            (true, rest)
        } else if let Some(rest) = spec.strip_prefix("./") {
            (true, rest)
        } else {
            (false, spec)
        };
        let body = body.trim_end_matches('/');
        let segments: Vec<&str> = body
            .split('/')
            .filter(|s| !s.is_empty() && *s != ".")
            .collect();
        if segments.contains(&"..") {
            return Err(SettingsError::rule(
                rule,
                "\"..\" would climb out of the workspace; anchor the path at the workspace root with \"/\"",
            ));
        }
        let anchored = anchored_by_prefix || segments.len() > 1;
        if segments.is_empty() || (anchored && segments.iter().all(|s| *s == "**")) {
            return Ok(PathPattern {
                matcher: None,
                literal: VPath::root(),
            });
        }
        let joined = segments.join("/");
        let glob = if anchored {
            format!("/{joined}")
        } else {
            format!("**/{joined}")
        };
        let matcher = GlobBuilder::new(&glob)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|e| {
                SettingsError::rule(
                    rule,
                    format_args!("its path pattern is malformed ({})", e.kind()),
                )
            })?
            .compile_matcher();
        let literal = if anchored {
            let literal: Vec<&str> = segments
                .iter()
                .take_while(|s| !s.contains(['*', '?', '[', '{', '\\']))
                .copied()
                .collect();
            VPath::parse(&format!("/{}", literal.join("/")))
                .map_err(|e| SettingsError::rule(rule, e.message().trim_end_matches('.')))?
        } else {
            VPath::root()
        };
        Ok(PathPattern {
            matcher: Some(matcher),
            literal,
        })
    }

    /// True when `path`, or a directory above it, matches: the pattern covers it.
    pub fn covers(&self, path: &VPath) -> bool {
        let Some(matcher) = &self.matcher else {
            return true;
        };
        let s = path.as_str();
        if path.is_root() {
            return false;
        }
        s.match_indices('/')
            .skip(1)
            .map(|(i, _)| &s[..i])
            .chain(std::iter::once(s))
            .any(|prefix| matcher.is_match(prefix))
    }

    /// False only when no path at or beneath `dir` can be covered (the
    /// pattern's literal directories lead elsewhere); true when one may be.
    pub fn may_cover_beneath(&self, dir: &VPath) -> bool {
        self.matcher.is_none()
            || self.literal.is_root()
            || dir.starts_with(&self.literal)
            || self.literal.starts_with(dir)
    }

    /// True when the pattern covers every path, the root included.
    pub fn covers_everything(&self) -> bool {
        self.matcher.is_none()
    }
}

/// A `Bash(...)` command pattern: exact, `prefix:*`, or with `*` wildcards.
#[derive(Debug, Clone)]
struct CommandPattern {
    form: CommandForm,
}

#[derive(Debug, Clone)]
enum CommandForm {
    Exact(String),
    Prefix(String),
    /// The pieces between `*`s; a final " *" also matches the bare command.
    Wildcard(Vec<String>),
}

impl CommandPattern {
    fn parse(spec: &str) -> CommandPattern {
        let spec = spec.trim();
        let form = if let Some(prefix) = spec.strip_suffix(":*") {
            CommandForm::Prefix(prefix.trim_end().to_owned())
        } else if spec.contains('*') {
            CommandForm::Wildcard(spec.split('*').map(str::to_owned).collect())
        } else {
            CommandForm::Exact(spec.to_owned())
        };
        CommandPattern { form }
    }

    fn matches(&self, command: &str, list: List) -> bool {
        let parts = split_compound(command);
        if list == List::Allow {
            return parts.len() == 1 && self.matches_one(parts[0]);
        }
        parts
            .iter()
            .any(|part| self.matches_one(part) || self.matches_one(strip_assignments(part)))
    }

    fn matches_one(&self, command: &str) -> bool {
        let command = command.trim();
        match &self.form {
            CommandForm::Exact(exact) => command == exact,
            CommandForm::Prefix(prefix) => {
                command == prefix
                    || command
                        .strip_prefix(prefix.as_str())
                        .is_some_and(|rest| rest.starts_with(char::is_whitespace))
            }
            CommandForm::Wildcard(pieces) => {
                wildcard_match(pieces, command)
                    || pieces.last().is_some_and(|last| last.is_empty())
                        && pieces.len() == 2
                        && pieces[0].ends_with(' ')
                        && command == pieces[0].trim_end()
            }
        }
    }
}

/// Whether `text` is `pieces` joined by runs of any characters.
fn wildcard_match(pieces: &[String], text: &str) -> bool {
    let Some((first, rest)) = pieces.split_first() else {
        return text.is_empty();
    };
    let Some(mut remaining) = text.strip_prefix(first.as_str()) else {
        return false;
    };
    let Some((last, middle)) = rest.split_last() else {
        return remaining.is_empty();
    };
    for piece in middle {
        match remaining.find(piece.as_str()) {
            Some(i) => remaining = &remaining[i + piece.len()..],
            None => return false,
        }
    }
    remaining.ends_with(last.as_str())
}

/// The parts of a shell command between `&&`, `||`, `;`, `|`, `&`, newlines,
/// backticks and `$(`/`)`; quotes are not parsed, which only ever makes more parts.
fn split_compound(command: &str) -> Vec<&str> {
    let parts: Vec<&str> = command
        .split(['&', '|', ';', '\n', '`', '(', ')'])
        .map(|p| p.trim().trim_start_matches('$').trim())
        .filter(|p| !p.is_empty())
        .collect();
    if parts.is_empty() { vec![""] } else { parts }
}

/// `part` without its leading `NAME=value` words (`FOO=1 rm x` is `rm x`).
fn strip_assignments(part: &str) -> &str {
    let mut rest = part.trim_start();
    loop {
        let word_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let word = &rest[..word_end];
        let is_assignment = word.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        });
        if !is_assignment || word_end == rest.len() {
            return rest;
        }
        rest = rest[word_end..].trim_start();
    }
}
