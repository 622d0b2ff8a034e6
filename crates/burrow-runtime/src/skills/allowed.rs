//! `allowed-tools` of a loaded skill (ADR 0297, ADR 0360): once a run loads a skill that names tools, the model may make only the calls the run's loaded skills' entries cover (and `skill`) for the rest of that run; it never gains a tool.
//!
//! An entry is read as Claude Code reads it: a permission rule
//! (`burrow-permissions`' syntax) that allows. A tool as burrow names it
//! (`read_file`, `mcp__srv__tool`) or as Claude Code does: `Read` covers the
//! reading tools, `Edit` and `Write` the changing ones, `Bash` the `execute`
//! tool, `Glob`, `Grep`, `LS` and `MultiEdit` their burrow tools. A
//! specifier narrows within the tool: `Bash(git:*)` and `Bash(npm run
//! test:*)` cover the commands with that prefix (never a compound command
//! such as `git log && rm x`), `Read(/docs/**)` and `Edit(src/*.rs)` the
//! paths the pattern covers. An entry that is no rule covers nothing. The
//! permission rules of the run still decide each call, so an entry grants
//! nothing those rules refuse.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use burrow_permissions::{Decision, PermissionMode, Permissions, Rule};
use serde_json::Value;

use super::{SKILL_TOOL, Skills};
use crate::agent::{CallInfo, Capability, Outcome, RunInfo};
use crate::tool::ToolOutput;

/// The tools Claude Code's `Read` names.
const READ_TOOLS: &[&str] = burrow_permissions::READ_TOOLS;
/// The tools Claude Code's `Edit` and `Write` name.
const EDIT_TOOLS: &[&str] = burrow_permissions::EDIT_TOOLS;

/// Claude Code's tool names that are one burrow tool under another name.
const RENAMED: &[(&str, &str)] = &[
    ("Glob", "glob"),
    ("Grep", "grep"),
    ("LS", "ls"),
    ("MultiEdit", "edit_file"),
    ("TodoWrite", "write_todos"),
    ("Task", "task"),
];

/// The burrow tools one `allowed-tools` entry names (whatever its specifier).
pub fn tools_of(entry: &str) -> Vec<String> {
    let name = entry.split_once('(').map_or(entry, |(name, _)| name).trim();
    match name {
        "Read" => READ_TOOLS.iter().map(|t| (*t).to_owned()).collect(),
        "Edit" | "Write" => EDIT_TOOLS.iter().map(|t| (*t).to_owned()).collect(),
        "Bash" => vec![burrow_permissions::EXECUTE_TOOL.to_owned()],
        "" => Vec::new(),
        other => vec![renamed(other).to_owned()],
    }
}

fn renamed(name: &str) -> &str {
    RENAMED
        .iter()
        .find(|(cc, _)| *cc == name)
        .map_or(name, |(_, burrow)| burrow)
}

/// One `allowed-tools` entry as an allow rule; `Err` is why it is none.
pub fn rule_of(entry: &str) -> Result<Rule, String> {
    let entry = entry.trim();
    let (name, rest) = match entry.find('(') {
        Some(open) => entry.split_at(open),
        None => (entry, ""),
    };
    Rule::parse(&format!("{}{rest}", renamed(name.trim()))).map_err(|e| e.message().to_owned())
}

/// What one run may call once it loaded skills naming tools.
#[derive(Debug, Default)]
struct Narrowed {
    /// The loaded skills that named tools, in load order.
    skills: Vec<String>,
    /// Their entries as written, in load order, each once.
    entries: Vec<String>,
    /// The entries that are rules, as allow rules.
    rules: Vec<Rule>,
}

impl Narrowed {
    /// Whether the entries cover a call of `tool` with `arguments`: some
    /// rule allows it (decided as permission rules are, in the mode that
    /// refuses what no rule allows).
    fn covers(&self, tool: &str, arguments: &Value) -> bool {
        let only = Permissions::new(self.rules.clone(), Vec::new(), Vec::new())
            .with_mode(PermissionMode::DontAsk);
        only.decide_arguments(tool, arguments, false).decision == Decision::Allow
    }

    /// "The loaded skill S allows only the calls its", or the plural.
    fn skills_said(&self) -> String {
        let one = self.skills.len() == 1;
        format!(
            "The loaded skill{} {} allow{} only the calls {}",
            if one { "" } else { "s" },
            self.skills.join(", "),
            if one { "s" } else { "" },
            if one { "its" } else { "their" },
        )
    }
}

/// The capability that keeps a run to its loaded skills' `allowed-tools`.
#[derive(Debug)]
pub struct AllowedTools {
    skills: Arc<Skills>,
    runs: Mutex<HashMap<String, Narrowed>>,
}

impl AllowedTools {
    /// The narrowing of `skills`' `allowed-tools`.
    pub fn new(skills: Arc<Skills>) -> Self {
        Self {
            skills,
            runs: Mutex::default(),
        }
    }
}

#[async_trait]
impl Capability for AllowedTools {
    fn name(&self) -> &str {
        "skill-allowed-tools"
    }

    /// # Behavior
    /// Once a run has loaded a skill naming tools, a call (other than
    /// `skill`) that no entry of its loaded skills covers is refused with
    /// one sentence naming the skills and their entries; the tool does not
    /// run.
    async fn before_call(&self, call: &CallInfo<'_>) -> Result<(), String> {
        if call.tool == SKILL_TOOL {
            return Ok(());
        }
        let runs = self
            .runs
            .lock()
            .map_err(|_| "the skills' tool list is unavailable".to_owned())?;
        match runs.get(call.run_id) {
            Some(n) if !n.covers(call.tool, call.arguments) => Err(format!(
                "{} allowed-tools rules cover for the rest of this run ({}); this {} call is not one of them.",
                n.skills_said(),
                n.entries.join(", "),
                call.tool
            )),
            _ => Ok(()),
        }
    }

    /// # Behavior
    /// A `skill` call that loaded a skill naming tools adds its entries to
    /// what the run may call, and its result says which entries that
    /// leaves (and which of them burrow cannot read as a rule).
    async fn after_call(&self, call: &CallInfo<'_>, output: &mut ToolOutput) {
        if call.tool != SKILL_TOOL || output.is_error {
            return;
        }
        let Some(file) = call
            .arguments
            .get("name")
            .and_then(Value::as_str)
            .and_then(|name| self.skills.file(name))
        else {
            return;
        };
        let entries: Vec<&str> = file
            .allowed_tools
            .iter()
            .map(|e| e.trim())
            .filter(|e| !e.is_empty())
            .collect();
        if entries.is_empty() {
            return;
        }
        let Ok(mut runs) = self.runs.lock() else {
            return;
        };
        let n = runs.entry(call.run_id.to_owned()).or_default();
        if !n.skills.contains(&file.name) {
            n.skills.push(file.name.clone());
        }
        let mut unread = Vec::new();
        for entry in entries {
            if n.entries.iter().any(|e| e == entry) {
                continue;
            }
            n.entries.push(entry.to_owned());
            match rule_of(entry) {
                Ok(rule) => n.rules.push(rule),
                Err(why) => unread.push(format!("{entry} covers nothing: {why}")),
            }
        }
        output.text.push_str(&format!(
            "\n\nFor the rest of this run you may make only the calls these allowed-tools rules cover (this skill's, with those of the other skills loaded): {}; and call skill.",
            n.entries.join(", ")
        ));
        for line in unread {
            output.text.push_str(&format!(" {line}"));
        }
    }

    async fn after_run(&self, run: &RunInfo, _outcome: &Outcome) {
        if let Ok(mut runs) = self.runs.lock() {
            runs.remove(&run.run_id);
        }
    }
}
