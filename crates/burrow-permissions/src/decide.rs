//! The decision for one tool call: deny, then ask, then allow, first match wins, then the mode.

use burrow_backend::VPath;

use crate::error::SettingsError;
use crate::mode::PermissionMode;
use crate::paths::PathRules;
use crate::rule::{EDIT_TOOLS, EXECUTE_TOOL, List, READ_TOOLS, Rule, RuleTool};

/// What happens to a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Decision {
    /// The call runs.
    Allow,
    /// The call pauses for a person's approval.
    Ask,
    /// The call is refused.
    Deny,
}

/// A decision and the rule (or mode) behind it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// What happens to the call.
    pub decision: Decision,
    /// The rule that matched, as written; `None` when the mode decided.
    pub rule: Option<String>,
    /// The mode the call was decided in.
    pub mode: PermissionMode,
}

impl Verdict {
    /// One sentence saying why, for the model or the person approving.
    pub fn reason(&self) -> String {
        match (&self.rule, self.decision) {
            (Some(rule), Decision::Deny) => format!("denied by the permission rule {rule}."),
            (Some(rule), Decision::Ask) => {
                format!("the permission rule {rule} asks for approval.")
            }
            (Some(rule), Decision::Allow) => format!("allowed by the permission rule {rule}."),
            (None, Decision::Deny) if self.mode == PermissionMode::Plan => {
                "plan mode runs no tool that changes anything.".to_owned()
            }
            (None, Decision::Deny) => format!(
                "no permission rule allows this call, and the {} mode refuses what is not allowed.",
                self.mode
            ),
            (None, Decision::Ask) => format!("the {} mode asks for approval.", self.mode),
            (None, Decision::Allow) => format!("the {} mode allows this call.", self.mode),
        }
    }
}

/// One tool call, as the rules see it.
#[derive(Debug, Clone, Copy)]
pub struct ToolUse<'a> {
    /// The tool's name (`read_file`, `execute`, `mcp__github__create_issue`).
    pub name: &'a str,
    /// The path the call works on (`read_file`'s path, `glob`'s `under`), if any.
    pub path: Option<&'a VPath>,
    /// The shell command of an `execute` call.
    pub command: Option<&'a str>,
    /// The call may change something (false for a tool annotated read-only).
    pub changes: bool,
}

impl<'a> ToolUse<'a> {
    /// A call of `name`; it changes something unless it is one of the reading
    /// file tools (use [`ToolUse::read_only`] for another tool's annotation).
    pub fn new(name: &'a str) -> Self {
        Self {
            name,
            path: None,
            command: None,
            changes: !READ_TOOLS.contains(&name),
        }
    }

    /// The same call working on `path`.
    pub fn with_path(mut self, path: &'a VPath) -> Self {
        self.path = Some(path);
        self
    }

    /// The same call running `command`.
    pub fn with_command(mut self, command: &'a str) -> Self {
        self.command = Some(command);
        self
    }

    /// The same call, read-only or not, as its tool's annotations say.
    pub fn read_only(mut self, read_only: bool) -> Self {
        self.changes = !read_only;
        self
    }
}

/// Typed rules and a mode: decides calls, and holds the deny path rules a
/// [`crate::PermissionBackend`] enforces.
#[derive(Debug, Clone, Default)]
pub struct Permissions {
    allow: Vec<Rule>,
    ask: Vec<Rule>,
    deny: Vec<Rule>,
    mode: PermissionMode,
}

impl Permissions {
    /// Rules in the default mode.
    pub fn new(allow: Vec<Rule>, ask: Vec<Rule>, deny: Vec<Rule>) -> Self {
        Self {
            allow,
            ask,
            deny,
            mode: PermissionMode::Default,
        }
    }

    /// The same rules in `mode` (`--permission-mode` overrides `defaultMode`).
    pub fn with_mode(mut self, mode: PermissionMode) -> Self {
        self.mode = mode;
        self
    }

    /// The same rules in `mode`, refused when it is `bypassPermissions` and
    /// the settings disabled it.
    pub fn with_checked_mode(
        self,
        mode: PermissionMode,
        bypass_disabled: bool,
    ) -> Result<Self, SettingsError> {
        if bypass_disabled && mode == PermissionMode::BypassPermissions {
            return Err(SettingsError::settings(
                "the bypassPermissions mode is disabled by disableBypassPermissionsMode in the settings.",
            ));
        }
        Ok(self.with_mode(mode))
    }

    /// The mode calls are decided in.
    pub fn mode(&self) -> PermissionMode {
        self.mode
    }

    /// The deny rules, in order.
    pub fn deny_rules(&self) -> &[Rule] {
        &self.deny
    }

    /// The ask rules, in order.
    pub fn ask_rules(&self) -> &[Rule] {
        &self.ask
    }

    /// The allow rules, in order.
    pub fn allow_rules(&self) -> &[Rule] {
        &self.allow
    }

    /// True when no rule of any list is set.
    pub fn is_empty(&self) -> bool {
        self.allow.is_empty() && self.ask.is_empty() && self.deny.is_empty()
    }

    /// The `Read(...)` and `Edit(...)` deny rules, which hold below the tools.
    pub fn path_rules(&self) -> PathRules {
        PathRules::from_deny_rules(&self.deny)
    }

    /// Whether the tool `name` is offered to the model at all: not when a
    /// bare deny rule names it (`Bash`, `mcp__github`), nor, in plan mode,
    /// when it `changes` something.
    pub fn offers(&self, name: &str, changes: bool) -> bool {
        if self.mode == PermissionMode::Plan && changes {
            return false;
        }
        !self
            .deny
            .iter()
            .any(|rule| rule.is_bare() && rule.matches(name, None, None, List::Deny))
    }

    /// The decision for `call`.
    ///
    /// # Behavior
    ///
    /// - The first deny rule that matches denies, in every mode.
    /// - In plan mode, a call that changes something is denied.
    /// - Else the first ask rule that matches asks, except that
    ///   `bypassPermissions` allows it, `dontAsk` denies it, and `acceptEdits`
    ///   allows it for a changing file tool.
    /// - Else the first allow rule that matches allows.
    /// - Else the mode decides: `dontAsk` denies, every other mode allows
    ///   (ADR 0312: burrow runs a call no rule names, as it always has).
    pub fn decide(&self, call: &ToolUse<'_>) -> Verdict {
        let verdict = |decision, rule: Option<&Rule>| Verdict {
            decision,
            rule: rule.map(|r| r.text().to_owned()),
            mode: self.mode,
        };
        fn find<'r>(rules: &'r [Rule], call: &ToolUse<'_>, list: List) -> Option<&'r Rule> {
            rules
                .iter()
                .find(|r| r.matches(call.name, call.path, call.command, list))
        }
        if let Some(rule) = find(&self.deny, call, List::Deny) {
            return verdict(Decision::Deny, Some(rule));
        }
        if self.mode == PermissionMode::Plan && call.changes {
            return verdict(Decision::Deny, None);
        }
        if let Some(rule) = find(&self.ask, call, List::Ask) {
            let decision = match self.mode {
                PermissionMode::BypassPermissions => Decision::Allow,
                PermissionMode::DontAsk => Decision::Deny,
                PermissionMode::AcceptEdits if EDIT_TOOLS.contains(&call.name) => Decision::Allow,
                _ => Decision::Ask,
            };
            return verdict(decision, Some(rule));
        }
        if let Some(rule) = find(&self.allow, call, List::Allow) {
            return verdict(Decision::Allow, Some(rule));
        }
        match self.mode {
            PermissionMode::DontAsk => verdict(Decision::Deny, None),
            _ => verdict(Decision::Allow, None),
        }
    }

    /// The decision for a call of the tool `name` with the JSON `arguments`
    /// the model gave it: its path is `file_path` or `path` (a path that does
    /// not parse is none), for an artifact tool the artifact's path
    /// ([`crate::artifacts::artifact_call_path`]), its command `command`;
    /// `read_only` when the tool changes nothing.
    ///
    /// # Behavior
    /// As [`Permissions::decide`] for the [`ToolUse`] those arguments make.
    pub fn decide_arguments(
        &self,
        name: &str,
        arguments: &serde_json::Value,
        read_only: bool,
    ) -> Verdict {
        let text = |key: &str| arguments.get(key).and_then(serde_json::Value::as_str);
        let path = crate::artifacts::artifact_call_path(name, arguments).or_else(|| {
            text("file_path")
                .or_else(|| text("path"))
                .and_then(|p| VPath::parse(p).ok())
        });
        let mut call = ToolUse::new(name);
        if read_only {
            call = call.read_only(true);
        }
        if let Some(path) = &path {
            call = call.with_path(path);
        }
        if let Some(command) = text("command") {
            call = call.with_command(command);
        }
        self.decide(&call)
    }

    /// True when a rule of any list is about `execute` (a `Bash` rule or the tool's own name).
    pub fn has_command_rules(&self) -> bool {
        self.allow
            .iter()
            .chain(&self.ask)
            .chain(&self.deny)
            .any(|r| match r.tool() {
                RuleTool::Bash => true,
                RuleTool::Named(n) => n == EXECUTE_TOOL,
                _ => false,
            })
    }
}
