//! The error of reading permission settings: a small kind and one sentence naming what was wrong.

/// What was wrong with the permission settings.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SettingsErrorKind {
    /// A rule string that cannot be parsed; the message names the rule.
    InvalidRule,
    /// A settings document of the wrong shape, or a mode burrow does not know.
    InvalidSettings,
}

/// A refused settings file or rule, with one sentence that names the rule or key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SettingsError {
    kind: SettingsErrorKind,
    message: String,
}

impl SettingsError {
    /// The rule `rule` is refused because `why` (a clause, no final stop).
    pub(crate) fn rule(rule: &str, why: impl std::fmt::Display) -> Self {
        Self {
            kind: SettingsErrorKind::InvalidRule,
            message: format!("the permission rule {rule:?} is invalid: {why}."),
        }
    }

    /// The settings are refused; `message` is the whole sentence.
    pub(crate) fn settings(message: impl Into<String>) -> Self {
        Self {
            kind: SettingsErrorKind::InvalidSettings,
            message: message.into(),
        }
    }

    /// What kind of error this is.
    pub fn kind(&self) -> SettingsErrorKind {
        self.kind
    }

    /// The one-sentence message.
    pub fn message(&self) -> &str {
        &self.message
    }
}
