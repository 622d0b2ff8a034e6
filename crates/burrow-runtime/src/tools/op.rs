//! Each file tool as an ordinary `Tool`: its name, description, annotations and lock keys stated once, beside its typed arguments.
//!
//! [`FileOp`] is implemented by each tool's argument type; [`FileTool`]
//! turns one into a [`Tool`] over a shared [`Toolset`]. The list of file
//! tools is [`tools`]; nothing else names them.

use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use async_trait::async_trait;
use burrow_backend::{Error, LockKey, Result, VPath};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::args::{
    DeletePathArgs, EditFileArgs, ExecuteArgs, GlobArgs, GrepArgs, LsArgs, ReadFileArgs,
    WriteFileArgs,
};
use super::{Call, Outcome, ToolOutput, Toolset, schema_of};
use crate::tool::{CallContext, Tool, ToolAnnotations, workspace_lock};

/// One file tool, stated on its argument type.
pub(crate) trait FileOp: DeserializeOwned + JsonSchema + Send + Sync + 'static {
    /// The name the model calls it by.
    const NAME: &'static str;
    /// What it does, for the model.
    const DESCRIPTION: &'static str;
    /// What a call does.
    const ANNOTATIONS: ToolAnnotations;
    /// Whether a result too large to return is saved to a file
    /// (`read_file` pages itself within the same budget instead).
    const SPILLS: bool = true;

    /// The lock keys a call with these arguments holds (none by default).
    ///
    /// # Behavior
    /// Called before the call runs; calls whose keys meet run in call order.
    fn locks(&self, _tools: &Toolset) -> Vec<LockKey> {
        Vec::new()
    }

    /// Runs the call.
    ///
    /// # Behavior
    /// Reads go through `call.ctx()`, each mutation through
    /// `call.mutation(operation, path)`; a refusal is an `Err` whose
    /// `is_refusal()` holds, turned into text by the caller.
    fn run(self, tools: &Toolset, call: &Call<'_>) -> impl Future<Output = Result<Outcome>> + Send;
}

/// Hints of a tool that reads and may save a large result under
/// `/.burrow/large_results/`: not read-only (it may write that file), never
/// destructive of the agent's files, and idempotent.
const SEARCHES: ToolAnnotations = ToolAnnotations {
    read_only: false,
    destructive: false,
    idempotent: true,
};

/// The path keys of `file_path`, or none when it does not parse.
fn path_locks(tools: &Toolset, file_path: &str) -> Vec<LockKey> {
    match VPath::parse(file_path) {
        Ok(path) => tools.backend().locks(tools.context(), &path),
        Err(_) => Vec::new(),
    }
}

impl FileOp for LsArgs {
    const NAME: &'static str = "ls";
    const DESCRIPTION: &'static str = super::LS;
    const ANNOTATIONS: ToolAnnotations = SEARCHES;

    async fn run(self, tools: &Toolset, call: &Call<'_>) -> Result<Outcome> {
        tools.ls(self, call).await
    }
}

impl FileOp for ReadFileArgs {
    const NAME: &'static str = "read_file";
    const DESCRIPTION: &'static str = super::READ_FILE;
    const ANNOTATIONS: ToolAnnotations = ToolAnnotations::READ_ONLY;
    const SPILLS: bool = false;

    async fn run(self, tools: &Toolset, call: &Call<'_>) -> Result<Outcome> {
        tools.read_file(self, call).await
    }
}

impl FileOp for WriteFileArgs {
    const NAME: &'static str = "write_file";
    const DESCRIPTION: &'static str = super::WRITE_FILE;
    // Writing the same content again leaves the same file.
    const ANNOTATIONS: ToolAnnotations = ToolAnnotations {
        read_only: false,
        destructive: true,
        idempotent: true,
    };

    fn locks(&self, tools: &Toolset) -> Vec<LockKey> {
        path_locks(tools, &self.file_path)
    }

    async fn run(self, tools: &Toolset, call: &Call<'_>) -> Result<Outcome> {
        tools.write_file(self, call).await
    }
}

impl FileOp for EditFileArgs {
    const NAME: &'static str = "edit_file";
    const DESCRIPTION: &'static str = super::EDIT_FILE;
    // Applying an edit again may fail or change the file again.
    const ANNOTATIONS: ToolAnnotations = ToolAnnotations {
        read_only: false,
        destructive: true,
        idempotent: false,
    };

    fn locks(&self, tools: &Toolset) -> Vec<LockKey> {
        path_locks(tools, &self.file_path)
    }

    async fn run(self, tools: &Toolset, call: &Call<'_>) -> Result<Outcome> {
        tools.edit_file(self, call).await
    }
}

impl FileOp for DeletePathArgs {
    const NAME: &'static str = "delete_path";
    const DESCRIPTION: &'static str = super::DELETE_PATH;
    // Deleting again finds nothing more to delete.
    const ANNOTATIONS: ToolAnnotations = ToolAnnotations {
        read_only: false,
        destructive: true,
        idempotent: true,
    };
    const SPILLS: bool = false;

    /// A file's keys; a tree's is the key that meets every other, since a
    /// write anywhere beneath it must not interleave with its removal.
    fn locks(&self, tools: &Toolset) -> Vec<LockKey> {
        if self.recursive {
            vec![workspace_lock()]
        } else {
            path_locks(tools, &self.path)
        }
    }

    async fn run(self, tools: &Toolset, call: &Call<'_>) -> Result<Outcome> {
        tools.delete_path(self, call).await
    }
}

impl FileOp for GlobArgs {
    const NAME: &'static str = "glob";
    const DESCRIPTION: &'static str = super::GLOB;
    const ANNOTATIONS: ToolAnnotations = SEARCHES;

    async fn run(self, tools: &Toolset, call: &Call<'_>) -> Result<Outcome> {
        tools.glob(self, call).await
    }
}

impl FileOp for GrepArgs {
    const NAME: &'static str = "grep";
    const DESCRIPTION: &'static str = super::GREP;
    const ANNOTATIONS: ToolAnnotations = SEARCHES;

    async fn run(self, tools: &Toolset, call: &Call<'_>) -> Result<Outcome> {
        tools.grep(self, call).await
    }
}

impl FileOp for ExecuteArgs {
    const NAME: &'static str = "execute";
    const DESCRIPTION: &'static str = super::EXECUTE;
    // A command may do anything to the workspace.
    const ANNOTATIONS: ToolAnnotations = ToolAnnotations {
        read_only: false,
        destructive: true,
        idempotent: false,
    };

    /// A command may change any file: it holds the key that meets every other.
    fn locks(&self, _tools: &Toolset) -> Vec<LockKey> {
        vec![workspace_lock()]
    }

    async fn run(self, tools: &Toolset, call: &Call<'_>) -> Result<Outcome> {
        tools.execute(self, call).await
    }
}

/// The file tools over `toolset`, in the order they are offered; `execute`
/// only when the backend runs commands.
pub(crate) fn tools(toolset: &Arc<Toolset>) -> Vec<Arc<dyn Tool>> {
    let mut tools: Vec<Arc<dyn Tool>> = vec![
        FileTool::<LsArgs>::shared(toolset),
        FileTool::<ReadFileArgs>::shared(toolset),
        FileTool::<WriteFileArgs>::shared(toolset),
        FileTool::<EditFileArgs>::shared(toolset),
        FileTool::<DeletePathArgs>::shared(toolset),
        FileTool::<GlobArgs>::shared(toolset),
        FileTool::<GrepArgs>::shared(toolset),
    ];
    if toolset.backend().as_sandbox().is_some() {
        tools.push(FileTool::<ExecuteArgs>::shared(toolset));
    }
    tools
}

/// The name of the tool absent from a backend that runs no commands.
pub(crate) const EXECUTE_NAME: &str = <ExecuteArgs as FileOp>::NAME;

/// One file tool of a shared [`Toolset`].
pub(crate) struct FileTool<A> {
    toolset: Arc<Toolset>,
    schema: Value,
    args: PhantomData<fn() -> A>,
}

impl<A: FileOp> FileTool<A> {
    fn shared(toolset: &Arc<Toolset>) -> Arc<dyn Tool> {
        Arc::new(Self {
            toolset: toolset.clone(),
            schema: schema_of::<A>(),
            args: PhantomData,
        })
    }
}

/// `args` as `A`, or the sentence the model sees.
fn parse<A: FileOp>(args: Value) -> std::result::Result<A, String> {
    let args = match args {
        Value::Null => Value::Object(serde_json::Map::new()),
        other => other,
    };
    serde_json::from_value(args).map_err(|e| {
        format!(
            "The arguments for {} are not valid: {e}. Check the tool's input schema and call it again.",
            A::NAME
        )
    })
}

#[async_trait]
impl<A: FileOp> Tool for FileTool<A> {
    fn name(&self) -> &str {
        A::NAME
    }

    fn description(&self) -> &str {
        A::DESCRIPTION
    }

    fn input_schema(&self) -> &Value {
        &self.schema
    }

    fn annotations(&self) -> ToolAnnotations {
        A::ANNOTATIONS
    }

    /// The file tools work on the workspace only.
    fn open_world(&self) -> bool {
        false
    }

    fn validate(&self, args: &Value) -> std::result::Result<(), String> {
        parse::<A>(args.clone()).map(drop)
    }

    fn locks(&self, args: &Value) -> Vec<LockKey> {
        match parse::<A>(args.clone()) {
            Ok(args) => args.locks(&self.toolset),
            Err(_) => Vec::new(),
        }
    }

    async fn call(&self, cx: &CallContext, args: Value) -> std::result::Result<ToolOutput, Error> {
        let args = match parse::<A>(args) {
            Ok(args) => args,
            Err(refusal) => return Ok(ToolOutput::refused(refusal)),
        };
        let tools = &self.toolset;
        let call = Call::new(tools.context(), cx);
        let result = args.run(tools, &call).await;
        tools.finish(A::NAME, A::SPILLS, result, &call).await
    }
}
