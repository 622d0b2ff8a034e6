//! Hooks from Claude Code's settings form: `{"hooks": {"PreToolUse": [{"matcher": "...", "hooks": [{"type": "command", ...}]}]}}`.

use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use super::{Hook, HookAction, HookConfigError, HookEvent, Hooks, Matcher, OnError};

#[derive(Deserialize)]
struct Settings {
    #[serde(default)]
    hooks: serde_json::Map<String, Value>,
}

#[derive(Deserialize)]
struct Group {
    #[serde(default)]
    matcher: Option<String>,
    #[serde(default)]
    hooks: Vec<Entry>,
}

#[derive(Deserialize)]
struct Entry {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    command: Option<String>,
    /// Seconds.
    #[serde(default)]
    timeout: Option<f64>,
    #[serde(default)]
    on_error: Option<OnError>,
    #[serde(default)]
    background: Option<bool>,
    /// Claude Code's spelling of a hook that does not block.
    #[serde(default, rename = "async")]
    async_: Option<bool>,
}

impl Hooks {
    /// Hooks from a settings document (JSON text). Other settings keys are
    /// ignored; events burrow does not fire (yet) are listed in
    /// [`Hooks::ignored_events`]; a hook type other than `command`, a command
    /// hook without a command, a bad timeout or a matcher that is not a valid
    /// regex is a configuration error.
    pub fn from_settings(json: &str) -> Result<Hooks, HookConfigError> {
        let value: Value = serde_json::from_str(json)
            .map_err(|e| HookConfigError(format!("the settings are not valid JSON: {e}")))?;
        Self::from_settings_value(value)
    }

    /// Hooks from a parsed settings document.
    pub fn from_settings_value(value: Value) -> Result<Hooks, HookConfigError> {
        let settings: Settings = serde_json::from_value(value).map_err(|e| {
            HookConfigError(format!(
                "the settings' \"hooks\" are not in the expected form: {e}"
            ))
        })?;
        let mut hooks = Hooks::new();
        for (name, groups) in settings.hooks {
            let Some(event) = HookEvent::from_name(&name).filter(|e| e.is_fired()) else {
                hooks.ignored_events.push(name);
                continue;
            };
            let groups: Vec<Group> = serde_json::from_value(groups).map_err(|e| {
                HookConfigError(format!(
                    "the {name} hooks are not in the expected form: {e}"
                ))
            })?;
            for group in groups {
                let matcher = Matcher::parse(group.matcher.as_deref())?;
                for entry in group.hooks {
                    hooks.add(entry.into_hook(event, &name, matcher.clone())?);
                }
            }
        }
        Ok(hooks)
    }
}

impl Entry {
    fn into_hook(
        self,
        event: HookEvent,
        name: &str,
        matcher: Matcher,
    ) -> Result<Hook, HookConfigError> {
        if self.kind != "command" {
            return Err(HookConfigError(format!(
                "a {name} hook has type \"{}\", which burrow does not run; use \"command\"",
                self.kind
            )));
        }
        let command = self
            .command
            .filter(|c| !c.trim().is_empty())
            .ok_or_else(|| HookConfigError(format!("a {name} command hook has no command")))?;
        let timeout = match self.timeout {
            None => super::DEFAULT_TIMEOUT,
            Some(s) if s.is_finite() && s > 0.0 && s <= 86_400.0 => Duration::from_secs_f64(s),
            Some(s) => {
                return Err(HookConfigError(format!(
                    "a {name} hook has timeout {s}, which is not a number of seconds between 0 and 86400"
                )));
            }
        };
        Ok(Hook {
            event,
            matcher,
            action: HookAction::Command(command),
            timeout,
            on_error: self.on_error,
            background: self.background.or(self.async_).unwrap_or(false),
        })
    }
}
