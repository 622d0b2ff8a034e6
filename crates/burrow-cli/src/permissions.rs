//! The `permissions` of `--settings` files for `burrow run` and `burrow mcp`: the deny path rules wrap the opened backend.
//!
//! The rules are read before any backend is opened (a bad rule runs
//! nothing) and enforced by `PermissionBackend` over the whole workspace, so
//! every tool, hook and MCP client sees the same rules (docs/adr/0310).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use burrow::permissions::{PathRules, PermissionBackend, PermissionSettings};

use crate::spec::{BackendArg, Opened};

/// The deny path rules of `files`, merged in order; `Err` is one sentence.
pub fn path_rules(files: &[PathBuf]) -> Result<PathRules, String> {
    let permissions = PermissionSettings::merged(layers(files)?)
        .compile()
        .map_err(|e| format!("the settings' permissions cannot be used: {e}"))?;
    Ok(permissions.path_rules())
}

/// The permissions of each of `files`, in order.
pub fn layers(files: &[PathBuf]) -> Result<Vec<PermissionSettings>, String> {
    files.iter().map(|file| read(file)).collect()
}

fn read(file: &Path) -> Result<PermissionSettings, String> {
    let shown = file.display();
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("the settings file {shown} cannot be read: {e}"))?;
    PermissionSettings::from_settings_json(&text)
        .map_err(|e| format!("the settings file {shown} cannot be used: {e}"))
}

/// Refuses `rules` over a backend that runs commands: a command in the
/// sandbox reads and writes its files directly, below the rules, so a run
/// there would have a gap the rules do not show (docs/adr/0317). `Err` is
/// one sentence naming the first rule and the sandbox.
pub fn refuse_sandbox(backends: &[BackendArg], rules: &PathRules) -> Result<(), String> {
    let Some(rule) = rules.texts().next() else {
        return Ok(());
    };
    match backends.iter().find(|arg| runs_commands(arg)) {
        Some(arg) => Err(format!(
            "the permission rule {rule} cannot be enforced inside the sandbox {}, whose commands reach its files directly, so nothing runs; drop the Read and Edit deny rules or use a backend that runs no commands.",
            arg.spec
        )),
        None => Ok(()),
    }
}

/// True when `arg` opens a sandbox (as the default or a mount, the composite runs commands in it).
fn runs_commands(arg: &BackendArg) -> bool {
    match &arg.spec {
        #[cfg(feature = "docker")]
        crate::spec::Spec::Docker(_) => true,
        #[allow(unreachable_patterns)]
        _ => false,
    }
}

/// `opened` with its backend behind `rules`, when there are any.
pub fn guard(opened: &mut Opened, rules: PathRules) {
    if !rules.is_empty() {
        opened.backend = Arc::new(PermissionBackend::new(opened.backend.clone(), rules));
    }
}

/// The tools that change nothing, besides the reading file tools, for plan mode
/// (`task`: its children are offered what the parent is, ADR 0321).
const READ_ONLY_TOOLS: &[&str] = &["skill", "write_todos", "ask_user", "task"];

/// The names of a run's tools annotated read-only (an MCP tool's
/// `readOnlyHint`), known once the tools are: the permission hook reads them
/// so that plan mode runs what it offers (docs/adr/0365). Clones share the names.
#[derive(Debug, Clone, Default)]
pub struct ReadOnlyTools(Arc<std::sync::RwLock<std::collections::HashSet<String>>>);

impl ReadOnlyTools {
    /// Notes the tools of `tools` whose annotations say read-only.
    pub fn note(&self, tools: &burrow_runtime::tool::ToolRegistry) {
        let mut names = match self.0.write() {
            Ok(names) => names,
            Err(poisoned) => poisoned.into_inner(),
        };
        for tool in tools.tools() {
            if tool.annotations().read_only {
                names.insert(tool.name().to_owned());
            }
        }
    }

    /// True when `name` is a burrow tool that changes nothing or a tool annotated read-only.
    pub fn contains(&self, name: &str) -> bool {
        READ_ONLY_TOOLS.contains(&name)
            || match self.0.read() {
                Ok(names) => names.contains(name),
                Err(poisoned) => poisoned.into_inner().contains(name),
            }
    }
}

/// A `PreToolUse` handler hook that decides each call by the permissions of
/// `files`, merged in order (ask pauses the call as an `ask` hook does, deny
/// refuses it with the rule's sentence) in `mode` (else the last
/// `defaultMode`), a tool of `read_only` changing nothing, and those
/// permissions; `None` when there are no rules and no mode.
#[cfg(feature = "run")]
pub fn hook(
    files: &[PathBuf],
    mode: Option<&str>,
    read_only: ReadOnlyTools,
) -> Result<
    Option<(
        burrow_runtime::hooks::Hook,
        Arc<burrow::permissions::Permissions>,
    )>,
    String,
> {
    use burrow::permissions::Decision;
    use burrow_runtime::hooks::{Hook, HookEvent, HookInput, HookOutput};
    let mut settings = PermissionSettings::merged(layers(files)?);
    if let Some(mode) = mode {
        settings.default_mode = Some(mode.to_owned());
    }
    if settings.allow.is_empty()
        && settings.ask.is_empty()
        && settings.deny.is_empty()
        && settings.default_mode.is_none()
    {
        return Ok(None);
    }
    let permissions = Arc::new(
        settings
            .compile()
            .map_err(|e| format!("the permissions cannot be used: {e}"))?,
    );
    let decided = permissions.clone();
    let decide = move |input: HookInput| {
        let name = input.tool_name.unwrap_or_default();
        let args = input.tool_input.unwrap_or_default();
        let verdict = verdict(&decided, &name, &args, read_only.contains(&name));
        let output = match verdict.decision {
            // Neutral: the other hooks (and the default) decide an allowed call.
            Decision::Allow => HookOutput::default(),
            Decision::Ask => HookOutput::ask(verdict.reason()),
            Decision::Deny => HookOutput::deny(verdict.reason()),
        };
        std::future::ready(Ok(output))
    };
    let hook = Hook::handler(HookEvent::PreToolUse, None, decide)
        .map_err(|e| format!("the permission hook cannot be made: {}", e.0))?;
    Ok(Some((hook, permissions)))
}

/// The decision of `permissions` for a call of the tool `name` with `args`
/// (its `file_path` or `path`, its `command`), `read_only` when the tool
/// changes nothing.
pub fn verdict(
    permissions: &burrow::permissions::Permissions,
    name: &str,
    args: &serde_json::Value,
    read_only: bool,
) -> burrow::permissions::Verdict {
    permissions.decide_arguments(name, args, read_only)
}

/// The tools of `tools` that `permissions` offer, each passed through
/// `wrap`: a tool a bare deny rule names is withheld, and in plan mode every
/// tool that changes something (a reading file tool, or one annotated
/// read-only, changes nothing); a withheld tool's name says why when called.
pub fn offered(
    tools: burrow_runtime::tool::ToolRegistry,
    permissions: &burrow::permissions::Permissions,
    wrap: impl Fn(Arc<dyn burrow_runtime::tool::Tool>) -> Arc<dyn burrow_runtime::tool::Tool>,
) -> burrow_runtime::tool::ToolRegistry {
    use burrow::permissions::{PermissionMode, ToolUse};
    let mut out = burrow_runtime::tool::ToolRegistry::new();
    for (name, why) in tools.absent() {
        out.note_absent(name, why);
    }
    for tool in tools.tools() {
        let changes = ToolUse::new(tool.name()).changes
            && !tool.annotations().read_only
            && !READ_ONLY_TOOLS.contains(&tool.name());
        if permissions.offers(tool.name(), changes) {
            out.add_arc(wrap(tool.clone()));
        } else if permissions.mode() == PermissionMode::Plan && changes {
            out.note_absent(
                tool.name(),
                "plan mode offers no tool that changes anything",
            );
        } else {
            // The bare deny rule naming it, in its sentence.
            let verdict = permissions.decide(&ToolUse::new(tool.name()).read_only(!changes));
            let reason = verdict.reason();
            out.note_absent(tool.name(), reason.trim_end_matches('.'));
        }
    }
    out
}
