//! The `Tool` trait (everything about one tool in one place) and `ToolRegistry`, the open registry the agent loop reads.
//!
//! A tool is its name, its description for the model, the JSON Schema of
//! its arguments, its annotations (the hints MCP carries), the lock keys a
//! call holds (from its arguments), and `call`. A call returns text for the
//! model, a refusal (text with `is_error`, the run goes on), or a failure
//! (`Err`, the run ends): the same contract as the file tools (ADR 0110).
//!
//! An application adds a typed tool with one call,
//! [`ToolRegistry::add_typed`]: the schema comes from the argument type
//! (schemars), and arguments that do not fit become a refusal the model can
//! act on.

mod arguments;
mod effect;

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use burrow_backend::{Error, LockKey};
use futures::FutureExt;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::model::ToolDefinition;

/// The file tools as `Tool`s; defined in [`crate::tools`], named here too
/// so the path it always had stays. Nothing else of this module uses the
/// file tools (ADR 0281).
pub use crate::tools::file_tools;
pub use arguments::{object_arguments, schema_of};
pub use effect::effect_key;

/// The lock key that meets every other: a call holding it runs alone, after
/// every earlier call that holds any key and before every later one
/// (`execute` holds it, since a command may change any file).
pub fn workspace_lock() -> LockKey {
    LockKey::new(WORKSPACE_LOCK)
}

pub(crate) const WORKSPACE_LOCK: &str = "\u{1f}workspace";

/// Hints about what a call does, as MCP's tool annotations carry them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ToolAnnotations {
    /// The tool changes nothing.
    pub read_only: bool,
    /// The tool may destroy or overwrite data.
    pub destructive: bool,
    /// Calling it again with the same arguments has no further effect (a
    /// resumed run may re-run such a call whose outcome is unknown).
    pub idempotent: bool,
}

impl ToolAnnotations {
    /// A tool that only reads (read-only and idempotent).
    pub const READ_ONLY: ToolAnnotations = ToolAnnotations {
        read_only: true,
        destructive: false,
        idempotent: true,
    };
}

/// Who is calling: the run and the call id, from which effect keys are made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallContext {
    /// The run making the call.
    pub run_id: Arc<str>,
    /// The model's id for the call.
    pub call_id: String,
}

/// What a tool call returns to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    /// The text the model reads.
    pub text: String,
    /// True when the call was refused (the text says why and what to do).
    pub is_error: bool,
}

impl ToolOutput {
    /// A successful result.
    pub fn ok(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            is_error: false,
        }
    }

    /// A refusal, as one sentence for the model.
    pub fn refused(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            is_error: true,
        }
    }
}

/// One tool, everything about it in one place.
#[async_trait]
pub trait Tool: Send + Sync {
    /// The name the model calls it by.
    fn name(&self) -> &str;

    /// What it does and when to use it, for the model.
    fn description(&self) -> &str;

    /// The JSON Schema of its arguments object.
    fn input_schema(&self) -> &Value;

    /// Hints about what a call does.
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::default()
    }

    /// The provider's own type for this tool, when a provider defines one
    /// (`memory_20250818`): an adapter that knows the type sends it in place
    /// of the function definition, every other adapter sends the function.
    ///
    /// # Behavior
    /// Constant for a tool; `None` unless the tool says otherwise.
    fn native_type(&self) -> Option<&str> {
        None
    }

    /// Whether a call may reach beyond the workspace (the web, other
    /// services): MCP's `openWorldHint`, true unless the tool says otherwise.
    ///
    /// # Behavior
    /// Constant for a tool; the file tools answer false.
    fn open_world(&self) -> bool {
        true
    }

    /// `Ok` when `args` fit the tool's arguments, else one sentence saying
    /// why (used for arguments a hook rewrote, before the call runs).
    fn validate(&self, args: &Value) -> Result<(), String>;

    /// The lock keys a call with `args` holds; calls whose keys meet run in call order.
    fn locks(&self, _args: &Value) -> Vec<LockKey> {
        Vec::new()
    }

    /// Runs the call: text, a refusal (`is_error`), or a failure (`Err`).
    async fn call(&self, cx: &CallContext, args: Value) -> Result<ToolOutput, Error>;

    /// Takes on the answer to a question the call `cx` (with `args`) asked
    /// through its run's runner, which paused the run (a subagent's
    /// `ask_parent` relayed by `task`, ADR 0385); `request` is the
    /// arguments the question was recorded with.
    ///
    /// # Behavior
    /// Called by the runner as the paused run resumes, once per answered
    /// question whose tool is this one, before the run's next model request.
    /// `None` (the default): the tool takes no answers, and the answer reaches
    /// the model as the user's next message, as an `ask_user` answer does.
    /// `Some`: what the model reads of it in that message in place of the
    /// bare answer (an `Err` is read as the call's failure). It may ask
    /// again, and the run then pauses again before any model request.
    /// An approval the call relayed (a request whose id is not the call's,
    /// ADR 0392) comes here too: `request` then carries `"approved"` (the
    /// decision, a bool) and `answer` is the reason given, if any; the
    /// runner runs nothing for it.
    async fn answered(
        &self,
        _cx: &CallContext,
        _args: Value,
        _request: Option<&Value>,
        _answer: &str,
    ) -> Option<Result<ToolOutput, Error>> {
        None
    }
}

type CallFn<A> =
    Arc<dyn Fn(A, CallContext) -> BoxFuture<'static, Result<ToolOutput, Error>> + Send + Sync>;
type LocksFn<A> = Arc<dyn Fn(&A) -> Vec<LockKey> + Send + Sync>;

/// A tool made from a typed-argument closure: the schema comes from `A`.
pub struct FnTool<A> {
    name: String,
    description: String,
    schema: Value,
    annotations: ToolAnnotations,
    f: CallFn<A>,
    locks: Option<LocksFn<A>>,
}

impl<A> std::fmt::Debug for FnTool<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FnTool")
            .field("name", &self.name)
            .field("annotations", &self.annotations)
            .finish_non_exhaustive()
    }
}

impl<A> FnTool<A>
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
{
    /// A tool named `name` that runs `f` on its typed arguments.
    pub fn new<F, Fut>(name: impl Into<String>, description: impl Into<String>, f: F) -> Self
    where
        F: Fn(A, CallContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ToolOutput, Error>> + Send + 'static,
    {
        Self {
            name: name.into(),
            description: description.into(),
            schema: schema_of::<A>(),
            annotations: ToolAnnotations::default(),
            f: Arc::new(move |args, cx| f(args, cx).boxed()),
            locks: None,
        }
    }

    /// The same tool with `annotations`.
    pub fn with_annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = annotations;
        self
    }

    /// The same tool, holding the keys `locks` gives for each call's arguments.
    pub fn with_locks(
        mut self,
        locks: impl Fn(&A) -> Vec<LockKey> + Send + Sync + 'static,
    ) -> Self {
        self.locks = Some(Arc::new(locks));
        self
    }

    fn parse(&self, args: Value) -> Result<A, String> {
        let args = match args {
            Value::Null => Value::Object(serde_json::Map::new()),
            other => other,
        };
        serde_json::from_value(args).map_err(|e| {
            format!(
                "The arguments for {} are not valid: {e}. Check the tool's input schema and call it again.",
                self.name
            )
        })
    }
}

#[async_trait]
impl<A> Tool for FnTool<A>
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> &Value {
        &self.schema
    }

    fn annotations(&self) -> ToolAnnotations {
        self.annotations
    }

    fn validate(&self, args: &Value) -> Result<(), String> {
        self.parse(args.clone()).map(|_| ())
    }

    fn locks(&self, args: &Value) -> Vec<LockKey> {
        match (&self.locks, self.parse(args.clone())) {
            (Some(locks), Ok(args)) => locks(&args),
            _ => Vec::new(),
        }
    }

    async fn call(&self, cx: &CallContext, args: Value) -> Result<ToolOutput, Error> {
        match self.parse(args) {
            Ok(args) => (self.f)(args, cx.clone()).await,
            Err(refusal) => Ok(ToolOutput::refused(refusal)),
        }
    }
}

/// The tools an agent (or the MCP server) offers, in the order added.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: Vec<Arc<dyn Tool>>,
    index: HashMap<String, usize>,
    /// Shared between clones (a run's copy of its agent's tools costs no
    /// schema copies); copied on the first change of a shared one.
    definitions: Arc<Vec<ToolDefinition>>,
    /// Tools this registry lacks on purpose, with why (said when one is called).
    absent: Vec<(String, String)>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("tools", &self.names().collect::<Vec<_>>())
            .finish()
    }
}

impl ToolRegistry {
    /// No tools.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `tool`; a tool of the same name is replaced in its place.
    pub fn add(&mut self, tool: impl Tool + 'static) -> &mut Self {
        self.add_arc(Arc::new(tool))
    }

    /// Adds a shared tool; a tool of the same name is replaced in its place.
    pub fn add_arc(&mut self, tool: Arc<dyn Tool>) -> &mut Self {
        self.absent.retain(|(name, _)| name != tool.name());
        let definition = ToolDefinition {
            name: tool.name().to_owned(),
            description: tool.description().to_owned(),
            input_schema: tool.input_schema().clone(),
            native_type: tool.native_type().map(str::to_owned),
        };
        match self.index.get(tool.name()) {
            Some(&i) => {
                self.tools[i] = tool;
                Arc::make_mut(&mut self.definitions)[i] = definition;
            }
            None => {
                self.index.insert(tool.name().to_owned(), self.tools.len());
                self.tools.push(tool);
                Arc::make_mut(&mut self.definitions).push(definition);
            }
        }
        self
    }

    /// Adds a tool that runs `f` on typed arguments `A` (schema from `A`).
    pub fn add_typed<A, F, Fut>(
        &mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        f: F,
    ) -> &mut Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(A, CallContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ToolOutput, Error>> + Send + 'static,
    {
        self.add(FnTool::new(name, description, f))
    }

    /// The same registry with each tool replaced by `wrap(tool)`, its
    /// definitions shared, not rebuilt: `wrap` must keep each tool's name,
    /// description and schema, and none of the tools may have a native type
    /// (a wrapper says none), which the caller checks.
    pub(crate) fn rewrapped(&self, wrap: impl Fn(&Arc<dyn Tool>) -> Arc<dyn Tool>) -> Self {
        Self {
            tools: self.tools.iter().map(wrap).collect(),
            index: self.index.clone(),
            definitions: self.definitions.clone(),
            absent: self.absent.clone(),
        }
    }

    /// Records that the tool `name` is not offered here, and `why`: a call
    /// of it is refused with that reason. Adding a tool of that name later
    /// clears the note.
    pub fn note_absent(&mut self, name: impl Into<String>, why: impl Into<String>) -> &mut Self {
        let name = name.into();
        if self.get(&name).is_none() {
            self.absent.retain(|(n, _)| *n != name);
            self.absent.push((name, why.into()));
        }
        self
    }

    /// The tools noted absent ([`note_absent`](Self::note_absent)), with why.
    pub fn absent(&self) -> impl Iterator<Item = (&str, &str)> {
        self.absent
            .iter()
            .map(|(n, why)| (n.as_str(), why.as_str()))
    }

    /// Calls the tool `name` on `args` as `cx`: an unknown tool and
    /// arguments that are not a JSON object (`null` counts as `{}`) are
    /// refusals; otherwise the tool's own result.
    pub async fn call(
        &self,
        cx: &CallContext,
        name: &str,
        args: Value,
    ) -> Result<ToolOutput, Error> {
        let Some(tool) = self.get(name) else {
            return Ok(ToolOutput::refused(self.unknown_tool(name)));
        };
        match object_arguments(name, args) {
            Ok(args) => tool.call(cx, args).await,
            Err(refusal) => Ok(ToolOutput::refused(refusal)),
        }
    }

    /// The tool named `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.index.get(name).map(|&i| &self.tools[i])
    }

    /// The tools, in the order added.
    pub fn tools(&self) -> &[Arc<dyn Tool>] {
        &self.tools
    }

    /// The tools' names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(|t| t.name())
    }

    /// The tools as a model sees them (built once, not per request).
    pub fn definitions(&self) -> &[ToolDefinition] {
        &self.definitions
    }

    /// How many tools.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The refusal a call of an unknown tool gets.
    pub fn unknown_tool(&self, name: &str) -> String {
        let names: Vec<&str> = self.names().collect();
        let why = match self.absent.iter().find(|(n, _)| n == name) {
            Some((_, why)) => format!(" ({why})"),
            None => String::new(),
        };
        format!(
            "There is no tool named \"{}\"{why}; the tools are: {}.",
            name.chars().take(100).collect::<String>(),
            if names.is_empty() {
                "(none)".to_owned()
            } else {
                names.join(", ")
            }
        )
    }
}
