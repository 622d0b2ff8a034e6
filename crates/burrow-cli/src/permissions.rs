//! The `permissions` of `--settings` files for `burrow run` and `burrow mcp`: the deny path rules wrap the opened backend.
//!
//! The rules are read before any backend is opened (a bad rule runs
//! nothing) and enforced by `PermissionBackend` over the whole workspace, so
//! every tool, hook and MCP client sees the same rules (docs/adr/0310).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use burrow::permissions::{PathRules, PermissionBackend, PermissionSettings};

use crate::spec::Opened;

/// The deny path rules of `files`, merged in order; `Err` is one sentence.
pub fn path_rules(files: &[PathBuf]) -> Result<PathRules, String> {
    let mut layers = Vec::with_capacity(files.len());
    for file in files {
        layers.push(read(file)?);
    }
    let permissions = PermissionSettings::merged(layers)
        .compile()
        .map_err(|e| format!("the settings' permissions cannot be used: {e}"))?;
    Ok(permissions.path_rules())
}

fn read(file: &Path) -> Result<PermissionSettings, String> {
    let shown = file.display();
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("the settings file {shown} cannot be read: {e}"))?;
    PermissionSettings::from_settings_json(&text)
        .map_err(|e| format!("the settings file {shown} cannot be used: {e}"))
}

/// `opened` with its backend behind `rules`, when there are any.
pub fn guard(opened: &mut Opened, rules: PathRules) {
    if !rules.is_empty() {
        opened.backend = Arc::new(PermissionBackend::new(opened.backend.clone(), rules));
    }
}
