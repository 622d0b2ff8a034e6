//! `allowed-tools` of a loaded skill (ADR 0297): once a run loads a skill that names tools, the model may call only the tools the run's loaded skills name (and `skill`) for the rest of that run; it never gains a tool.
//!
//! An entry is a tool as burrow names it (`read_file`, `mcp__srv__tool`)
//! or as Claude Code does: `Read` covers the reading tools, `Edit` and
//! `Write` the changing ones, `Bash` the `execute` tool. A specifier
//! (`Bash(git:*)`, `Read(/docs/**)`) narrows to its tool as a whole; the
//! permission rules of the run still decide each call, so an entry grants
//! nothing those rules refuse.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::Value;

use super::{SKILL_TOOL, Skills};
use crate::agent::{CallInfo, Capability, Outcome, RunInfo};
use crate::tool::ToolOutput;

/// The tools Claude Code's `Read` names.
const READ_TOOLS: &[&str] = &["read_file", "ls", "glob", "grep"];
/// The tools Claude Code's `Edit` and `Write` name.
const EDIT_TOOLS: &[&str] = &["write_file", "edit_file", "delete_path"];

/// The burrow tools one `allowed-tools` entry names.
pub fn tools_of(entry: &str) -> Vec<String> {
    let name = entry.split_once('(').map_or(entry, |(name, _)| name).trim();
    match name {
        "Read" => READ_TOOLS.iter().map(|t| (*t).to_owned()).collect(),
        "Edit" | "Write" => EDIT_TOOLS.iter().map(|t| (*t).to_owned()).collect(),
        "Bash" => vec!["execute".to_owned()],
        "" => Vec::new(),
        other => vec![other.to_owned()],
    }
}

/// What one run may call once it loaded skills naming tools.
#[derive(Debug, Default)]
struct Narrowed {
    /// The loaded skills that named tools, in load order.
    skills: Vec<String>,
    /// The tools they name together.
    tools: BTreeSet<String>,
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
    /// Once a run has loaded a skill naming tools, a call of any tool none
    /// of its loaded skills names (other than `skill`) is refused with one
    /// sentence naming the skills and the tools they allow.
    async fn before_call(&self, call: &CallInfo<'_>) -> Result<(), String> {
        if call.tool == SKILL_TOOL {
            return Ok(());
        }
        let runs = self
            .runs
            .lock()
            .map_err(|_| "the skills' tool list is unavailable".to_owned())?;
        match runs.get(call.run_id) {
            Some(n) if !n.tools.contains(call.tool) => Err(format!(
                "The loaded skill{} {} allow{} only these tools for the rest of this run: {}; {} is not one of them.",
                if n.skills.len() == 1 { "" } else { "s" },
                n.skills.join(", "),
                if n.skills.len() == 1 { "s" } else { "" },
                n.tools.iter().cloned().collect::<Vec<_>>().join(", "),
                call.tool
            )),
            _ => Ok(()),
        }
    }

    /// # Behavior
    /// A `skill` call that loaded a skill naming tools adds them to what the
    /// run may call, and its result says which tools that leaves.
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
        let tools: Vec<String> = file
            .allowed_tools
            .iter()
            .flat_map(|e| tools_of(e))
            .collect();
        if tools.is_empty() {
            return;
        }
        let Ok(mut runs) = self.runs.lock() else {
            return;
        };
        let n = runs.entry(call.run_id.to_owned()).or_default();
        if !n.skills.contains(&file.name) {
            n.skills.push(file.name.clone());
        }
        n.tools.extend(tools);
        output.text.push_str(&format!(
            "\n\nFor the rest of this run you may call only these tools (its allowed-tools, with those of the other skills loaded): {}, and skill.",
            n.tools.iter().cloned().collect::<Vec<_>>().join(", ")
        ));
    }

    async fn after_run(&self, run: &RunInfo, _outcome: &Outcome) {
        if let Ok(mut runs) = self.runs.lock() {
            runs.remove(&run.run_id);
        }
    }
}
