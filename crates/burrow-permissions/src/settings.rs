//! The `permissions` object of Claude Code's settings files, and how several files merge.

use serde::Deserialize;

use crate::decide::Permissions;
use crate::error::SettingsError;
use crate::mode::PermissionMode;
use crate::rule::Rule;

/// The `permissions` object of one settings file (or of several, merged), as written.
///
/// Keys burrow does not use (`additionalDirectories`, managed-only keys) are
/// read and kept or ignored; rules stay strings until [`PermissionSettings::compile`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionSettings {
    /// Rules whose calls run without approval.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Rules whose calls pause for approval.
    #[serde(default)]
    pub ask: Vec<String>,
    /// Rules whose calls are refused, in every mode.
    #[serde(default)]
    pub deny: Vec<String>,
    /// The mode's settings name, checked by `compile`.
    #[serde(default)]
    pub default_mode: Option<String>,
    /// Claude Code's extra working folders: kept, unused (a burrow workspace is its backend).
    #[serde(default)]
    pub additional_directories: Vec<String>,
    /// `"disable"` refuses the `bypassPermissions` mode.
    #[serde(default)]
    pub disable_bypass_permissions_mode: Option<String>,
}

impl PermissionSettings {
    /// The `permissions` object of a whole settings document (JSON text);
    /// a document without one has no rules.
    pub fn from_settings_json(text: &str) -> Result<Self, SettingsError> {
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
            SettingsError::settings(format!("the settings file is not valid JSON ({e})."))
        })?;
        Self::from_settings_value(&value)
    }

    /// The `permissions` object of a whole settings document.
    pub fn from_settings_value(value: &serde_json::Value) -> Result<Self, SettingsError> {
        let Some(object) = value.as_object() else {
            return Err(SettingsError::settings(
                "the settings file must hold a JSON object.",
            ));
        };
        match object.get("permissions") {
            None | Some(serde_json::Value::Null) => Ok(Self::default()),
            Some(permissions) => Self::deserialize(permissions).map_err(|e| {
                SettingsError::settings(format!("the \"permissions\" object is invalid ({e})."))
            }),
        }
    }

    /// `later` layered over `self`, as Claude Code layers its settings files:
    /// rule lists concatenated (self's first), a scalar of `later` wins where it is set.
    pub fn merge(&mut self, later: PermissionSettings) {
        self.allow.extend(later.allow);
        self.ask.extend(later.ask);
        self.deny.extend(later.deny);
        self.additional_directories
            .extend(later.additional_directories);
        if later.default_mode.is_some() {
            self.default_mode = later.default_mode;
        }
        if later.disable_bypass_permissions_mode.is_some() {
            self.disable_bypass_permissions_mode = later.disable_bypass_permissions_mode;
        }
    }

    /// Several files' objects merged in order.
    pub fn merged(layers: impl IntoIterator<Item = PermissionSettings>) -> Self {
        let mut out = Self::default();
        for layer in layers {
            out.merge(layer);
        }
        out
    }

    /// The typed rules and mode; the first bad rule, or an unknown mode, is refused.
    pub fn compile(&self) -> Result<Permissions, SettingsError> {
        let parse = |list: &[String]| -> Result<Vec<Rule>, SettingsError> {
            list.iter().map(|r| Rule::parse(r)).collect()
        };
        let mode = match &self.default_mode {
            None => PermissionMode::Default,
            Some(name) => name.parse()?,
        };
        let permissions =
            Permissions::new(parse(&self.allow)?, parse(&self.ask)?, parse(&self.deny)?);
        permissions.with_checked_mode(mode, self.bypass_disabled())
    }

    /// True when `disableBypassPermissionsMode` is `"disable"`.
    pub fn bypass_disabled(&self) -> bool {
        self.disable_bypass_permissions_mode.as_deref() == Some("disable")
    }
}
