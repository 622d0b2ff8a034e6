//! The round-1 file tools (`tools::Toolset`) offered as ordinary `Tool`s, each mutating call with its effect key.
//!
//! An adapter until the file tools are rewritten as `Tool`s themselves: one
//! [`FileTool`] per tool the toolset offers, sharing one `Toolset` (so one
//! read-before-edit ledger) built over an [`EffectKeyed`] view of the
//! backend. Lock keys come from the arguments through `Backend::locks`:
//! `write_file` and `edit_file` hold their path's keys, `execute` holds the
//! workspace key, reads hold none.

use std::sync::Arc;

use async_trait::async_trait;
use burrow_backend::{Backend, Error, FileContext, LockKey, VPath};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::effect::{EffectKeyed, scope};
use super::{CallContext, Tool, ToolAnnotations, ToolOutput, workspace_lock};
use crate::tools::{
    EditFileArgs, ExecuteArgs, GlobArgs, GrepArgs, LsArgs, ReadFileArgs, ToolConfig, ToolSpec,
    Toolset, WriteFileArgs,
};

/// One file tool of a shared [`Toolset`].
pub struct FileTool {
    toolset: Arc<Toolset>,
    spec: ToolSpec,
    annotations: ToolAnnotations,
}

impl std::fmt::Debug for FileTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileTool")
            .field("name", &self.spec.name)
            .finish_non_exhaustive()
    }
}

/// The file tools over `backend`, every call made as `ctx` (plus each
/// call's run id and effect keys), with `config`. `execute` is among them
/// only when the backend runs commands.
pub fn file_tools(
    backend: Arc<dyn Backend>,
    ctx: FileContext,
    config: ToolConfig,
) -> Vec<Arc<dyn Tool>> {
    let keyed: Arc<dyn Backend> = Arc::new(EffectKeyed::new(backend));
    let toolset = Arc::new(Toolset::new(keyed, ctx).with_config(config));
    toolset
        .tools()
        .into_iter()
        .map(|spec| {
            let annotations = annotations_of(&spec.name);
            Arc::new(FileTool {
                toolset: toolset.clone(),
                spec,
                annotations,
            }) as Arc<dyn Tool>
        })
        .collect()
}

fn annotations_of(name: &str) -> ToolAnnotations {
    match name {
        "ls" | "read_file" | "glob" | "grep" => ToolAnnotations::READ_ONLY,
        // Writing the same content again leaves the same file.
        "write_file" => ToolAnnotations {
            read_only: false,
            destructive: true,
            idempotent: true,
        },
        _ => ToolAnnotations {
            read_only: false,
            destructive: true,
            idempotent: false,
        },
    }
}

fn fits<T: DeserializeOwned>(name: &str, args: &Value) -> Result<(), String> {
    let args = match args {
        Value::Null => Value::Object(serde_json::Map::new()),
        other => other.clone(),
    };
    serde_json::from_value::<T>(args).map(|_| ()).map_err(|e| {
        format!(
            "The arguments for {name} are not valid: {e}. Check the tool's input schema and call it again."
        )
    })
}

impl FileTool {
    /// The toolset behind this tool (shared by all the file tools of one [`file_tools`] call).
    pub fn toolset(&self) -> &Arc<Toolset> {
        &self.toolset
    }

    fn path_locks(&self, args: &Value) -> Vec<LockKey> {
        let path = args
            .get("file_path")
            .and_then(Value::as_str)
            .and_then(|p| VPath::parse(p).ok());
        match path {
            Some(path) => self.toolset.backend().locks(self.toolset.context(), &path),
            None => Vec::new(),
        }
    }
}

#[async_trait]
impl Tool for FileTool {
    fn name(&self) -> &str {
        &self.spec.name
    }

    fn description(&self) -> &str {
        &self.spec.description
    }

    fn input_schema(&self) -> &Value {
        &self.spec.input_schema
    }

    fn annotations(&self) -> ToolAnnotations {
        self.annotations
    }

    fn validate(&self, args: &Value) -> Result<(), String> {
        let name = self.spec.name.as_str();
        match name {
            "ls" => fits::<LsArgs>(name, args),
            "read_file" => fits::<ReadFileArgs>(name, args),
            "write_file" => fits::<WriteFileArgs>(name, args),
            "edit_file" => fits::<EditFileArgs>(name, args),
            "glob" => fits::<GlobArgs>(name, args),
            "grep" => fits::<GrepArgs>(name, args),
            _ => fits::<ExecuteArgs>(name, args),
        }
    }

    fn locks(&self, args: &Value) -> Vec<LockKey> {
        match self.spec.name.as_str() {
            "write_file" | "edit_file" => self.path_locks(args),
            "execute" => vec![workspace_lock()],
            _ => Vec::new(),
        }
    }

    async fn call(&self, cx: &CallContext, args: Value) -> Result<ToolOutput, Error> {
        scope(cx.clone(), self.toolset.call(&self.spec.name, args)).await
    }
}
