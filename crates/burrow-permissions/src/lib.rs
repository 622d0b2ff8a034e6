//! Claude Code's permission rules for burrow: typed rules, call decisions, and deny path rules enforced in a layer over any `Backend`.
//!
//! # Key design decision: path rules are enforced below the tools
//!
//! Claude Code checks a `Read(.env)` deny rule in its `Read` tool, so
//! `cat .env` in Bash, a grep or a glob walks straight past it: its
//! headline permissions bug. burrow's tools, hooks and MCP clients all
//! reach files through one `Backend`, so the deny path rules are enforced
//! there instead, by [`PermissionBackend`], a wrapper like the composite:
//! whichever tool asks, a hidden path is refused to every operation and
//! never appears in any listing or match, filtered before the limit so a
//! page is never short and `truncated` stays exact. What cannot be checked
//! from outside (a shell command in a sandbox) is refused while a path
//! rule holds, never a silent gap (ADR 0310).
//!
//! The rest of the rules are about tool calls, not paths (`Bash(...)`,
//! `mcp__SERVER__TOOL`, tool names, ask and allow rules): [`Permissions`]
//! decides a [`ToolUse`] with Claude Code's order (deny, then ask, then
//! allow, first match wins; deny holds in every mode) and the
//! [`PermissionMode`]s, for the runtime's call pipeline to act on.
//!
//! The artifact workspace's artifacts are named to the path rules as
//! `/artifacts/KIND/ID` ([`artifacts`]), so `Read(...)` and `Edit(...)`
//! reach the artifact tools too (ADR 0395).
//!
//! Rules are read from settings files with [`PermissionSettings`]: several
//! files merge in order (lists concatenated, later scalars win). A bad rule
//! is a [`SettingsError`] naming it in one sentence. The rule syntax is
//! described in [`Rule`]'s module docs.

pub mod artifacts;
mod backend;
mod decide;
mod error;
mod mode;
mod paths;
mod rule;
mod settings;

pub use backend::PermissionBackend;
pub use decide::{Decision, Permissions, ToolUse, Verdict};
pub use error::{SettingsError, SettingsErrorKind};
pub use mode::PermissionMode;
pub use paths::PathRules;
pub use rule::{EDIT_TOOLS, EXECUTE_TOOL, PathPattern, READ_TOOLS, Rule, RuleTool};
pub use settings::PermissionSettings;
