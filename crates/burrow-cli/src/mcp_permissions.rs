//! `burrow mcp --settings`: the tool rules and mode decide each MCP client's call, as they decide a run's (docs/adr/0319).
//!
//! The path rules already hold below every tool (`PermissionBackend`); this
//! wraps each served tool so a `deny` tool rule (`write_file`, `Bash(rm:*)`)
//! refuses the call, plan mode withholds the changing tools, `dontAsk`
//! refuses what no rule allows, and an `ask` (which no MCP client can
//! answer) refuses the call saying approval is needed.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use burrow::permissions::{Decision, PermissionSettings, Permissions};
use burrow_runtime::tool::{CallContext, Tool, ToolOutput, ToolRegistry};
use serde_json::Value;

/// `tools` decided by the permissions of `files` merged in order; the same
/// registry when they name no rule and no mode. `Err` is one sentence.
pub fn decide_tools(tools: ToolRegistry, files: &[PathBuf]) -> Result<ToolRegistry, String> {
    let settings = PermissionSettings::merged(crate::permissions::layers(files)?);
    if settings.allow.is_empty()
        && settings.ask.is_empty()
        && settings.deny.is_empty()
        && settings.default_mode.is_none()
    {
        return Ok(tools);
    }
    let permissions = Arc::new(
        settings
            .compile()
            .map_err(|e| format!("the permissions cannot be used: {e}"))?,
    );
    let decided = permissions.clone();
    Ok(crate::permissions::offered(tools, &permissions, |tool| {
        Arc::new(Decided {
            inner: tool,
            permissions: decided.clone(),
        })
    }))
}

/// The `Tool` methods of a wrapper that are its `inner` tool's (all but
/// `call`): a wrapper around a served tool changes what a call does, never
/// what the client is told of the tool.
macro_rules! forward_to_inner {
    () => {
        fn name(&self) -> &str {
            self.inner.name()
        }

        fn description(&self) -> &str {
            self.inner.description()
        }

        fn input_schema(&self) -> &serde_json::Value {
            self.inner.input_schema()
        }

        fn annotations(&self) -> burrow_runtime::tool::ToolAnnotations {
            self.inner.annotations()
        }

        fn native_type(&self) -> Option<&str> {
            self.inner.native_type()
        }

        fn open_world(&self) -> bool {
            self.inner.open_world()
        }

        fn validate(&self, args: &serde_json::Value) -> Result<(), String> {
            self.inner.validate(args)
        }

        fn locks(&self, args: &serde_json::Value) -> Vec<burrow::LockKey> {
            self.inner.locks(args)
        }
    };
}
pub(crate) use forward_to_inner;

/// A served tool whose calls the permissions decide first.
struct Decided {
    inner: Arc<dyn Tool>,
    permissions: Arc<Permissions>,
}

#[async_trait]
impl Tool for Decided {
    forward_to_inner!();

    /// Runs the call when the permissions allow it; a deny or an ask is a
    /// refusal naming the rule (an MCP client cannot approve a call).
    async fn call(&self, cx: &CallContext, args: Value) -> Result<ToolOutput, burrow::Error> {
        let read_only = self.inner.annotations().read_only;
        let verdict =
            crate::permissions::verdict(&self.permissions, self.inner.name(), &args, read_only);
        match verdict.decision {
            Decision::Allow => self.inner.call(cx, args).await,
            Decision::Deny => Ok(ToolOutput::refused(format!(
                "The call was refused: {}",
                verdict.reason()
            ))),
            Decision::Ask => Ok(ToolOutput::refused(format!(
                "The call was refused: {} burrow mcp cannot ask its client for approval, so only calls that need none run.",
                verdict.reason()
            ))),
        }
    }
}
