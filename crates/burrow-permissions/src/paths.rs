//! `PathRules`: the `Read(...)` and `Edit(...)` deny rules, asked about one virtual path at a time.

use burrow_backend::{Error, ErrorKind, VPath};

use crate::rule::{PathPattern, Rule, RuleTool};

/// One deny rule over paths: its text and pattern (`None`: every path).
#[derive(Debug, Clone)]
struct PathRule {
    text: String,
    pattern: Option<PathPattern>,
}

impl PathRule {
    fn covers(&self, path: &VPath) -> bool {
        self.pattern.as_ref().is_none_or(|p| p.covers(path))
    }

    fn may_cover_beneath(&self, dir: &VPath) -> bool {
        self.pattern
            .as_ref()
            .is_none_or(|p| p.may_cover_beneath(dir))
    }
}

/// The deny rules a [`crate::PermissionBackend`] enforces below the tools.
///
/// A `Read` deny rule **hides** what it covers: it is refused to every
/// operation (a read, a listing of it, a write, an edit, a delete), because
/// even a write or an edit tells something about a file, and it never
/// appears in a listing or a match. An `Edit` (or `Write`) deny rule
/// **locks** what it covers: every mutation is refused, reads go on.
#[derive(Debug, Clone, Default)]
pub struct PathRules {
    read: Vec<PathRule>,
    edit: Vec<PathRule>,
}

impl PathRules {
    /// The `Read`/`Edit`/`Write` rules of a deny list, in order; other rules are not path rules.
    pub fn from_deny_rules(deny: &[Rule]) -> Self {
        let mut out = Self::default();
        for rule in deny {
            let path_rule = PathRule {
                text: rule.text().to_owned(),
                pattern: rule.path_pattern().cloned(),
            };
            match rule.tool() {
                RuleTool::Read => out.read.push(path_rule),
                RuleTool::Edit => out.edit.push(path_rule),
                _ => {}
            }
        }
        out
    }

    /// Parses `Read(...)`/`Edit(...)` rule strings as deny rules (for tests and
    /// callers without a settings file); other rules are refused as not path rules.
    pub fn from_strings<S: AsRef<str>>(
        rules: impl IntoIterator<Item = S>,
    ) -> Result<Self, crate::SettingsError> {
        let mut parsed = Vec::new();
        for text in rules {
            let rule = Rule::parse(text.as_ref())?;
            if !matches!(rule.tool(), RuleTool::Read | RuleTool::Edit) {
                return Err(crate::error::SettingsError::rule(
                    text.as_ref(),
                    "only Read(...), Edit(...) and Write(...) rules are path rules",
                ));
            }
            parsed.push(rule);
        }
        Ok(Self::from_deny_rules(&parsed))
    }

    /// True when no path rule is set.
    pub fn is_empty(&self) -> bool {
        self.read.is_empty() && self.edit.is_empty()
    }

    /// Every rule's text, read rules first.
    pub fn texts(&self) -> impl Iterator<Item = &str> {
        self.read.iter().chain(&self.edit).map(|r| r.text.as_str())
    }

    /// The first `Read` deny rule covering `path`: it is hidden.
    pub fn hidden_by(&self, path: &VPath) -> Option<&str> {
        self.read
            .iter()
            .find(|r| r.covers(path))
            .map(|r| r.text.as_str())
    }

    /// True when `path` is hidden by a `Read` deny rule.
    pub fn hides(&self, path: &VPath) -> bool {
        self.hidden_by(path).is_some()
    }

    /// The first rule refusing a mutation of `path`: a `Read` rule hiding it, else an `Edit` rule.
    pub fn locked_by(&self, path: &VPath) -> Option<&str> {
        self.hidden_by(path).or_else(|| {
            self.edit
                .iter()
                .find(|r| r.covers(path))
                .map(|r| r.text.as_str())
        })
    }

    /// True when some rule may cover a path at or beneath `dir`.
    pub fn may_cover_beneath(&self, dir: &VPath) -> bool {
        self.read
            .iter()
            .chain(&self.edit)
            .any(|r| r.may_cover_beneath(dir))
    }

    /// The refusal of `path` by `rule`: PermissionDenied, one sentence naming the rule.
    pub fn refusal(path: &VPath, rule: &str) -> Error {
        Error::refusal_at(
            ErrorKind::PermissionDenied,
            path,
            "",
            format!(" is denied by the permission rule {rule}; leave it alone."),
        )
    }
}
