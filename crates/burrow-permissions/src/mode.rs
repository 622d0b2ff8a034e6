//! `PermissionMode`: Claude Code's permission modes, by their settings names.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::SettingsError;

/// How calls that no deny rule covers are decided (`defaultMode`, `--permission-mode`).
///
/// Deny rules hold in every mode. The names are Claude Code's.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum PermissionMode {
    /// `ask` rules pause the call for approval; calls no rule matches run.
    #[default]
    #[serde(rename = "default")]
    Default,
    /// As `default`, and calls of the changing file tools need no approval.
    #[serde(rename = "acceptEdits")]
    AcceptEdits,
    /// No tool that changes anything runs; reading tools are decided as in `default`.
    #[serde(rename = "plan")]
    Plan,
    /// No approval is asked: `ask` rules allow. Deny still holds.
    #[serde(rename = "bypassPermissions")]
    BypassPermissions,
    /// Nothing is asked: what no `allow` rule allows is refused.
    #[serde(rename = "dontAsk")]
    DontAsk,
}

impl PermissionMode {
    /// Every mode, in the order Claude Code documents them.
    pub const ALL: [PermissionMode; 5] = [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::Plan,
        PermissionMode::BypassPermissions,
        PermissionMode::DontAsk,
    ];

    /// The settings name (`default`, `acceptEdits`, `plan`, `bypassPermissions`, `dontAsk`).
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Default => "default",
            PermissionMode::AcceptEdits => "acceptEdits",
            PermissionMode::Plan => "plan",
            PermissionMode::BypassPermissions => "bypassPermissions",
            PermissionMode::DontAsk => "dontAsk",
        }
    }
}

impl fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for PermissionMode {
    type Err = SettingsError;

    /// A mode by its settings name; `auto` (Claude Code's classifier) and anything
    /// else is refused with the names burrow knows.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| {
                SettingsError::settings(format!(
                    "the permission mode {s:?} is not one burrow knows; use default, acceptEdits, plan, bypassPermissions or dontAsk."
                ))
            })
    }
}
