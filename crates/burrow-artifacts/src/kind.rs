//! Artifact kinds: the `Artifact` trait for Rust types, the `Kinds` registry of JSON Schemas, and validation (schema, then size).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{ArtifactError, ArtifactErrorKind, Result};

/// The default size limit of a snapshot, as compact JSON: 1 MiB.
pub const DEFAULT_MAX_SNAPSHOT_BYTES: usize = 1024 * 1024;

/// How many failing paths a validation refusal lists in its sentence.
const MAX_LISTED_PATHS: usize = 5;

/// A Rust type that is an artifact kind: its schema comes from `JsonSchema`.
///
/// ```
/// use burrow_artifacts::Artifact;
/// #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
/// struct Plan { goal: String, steps: Vec<String> }
/// impl Artifact for Plan {
///     const KIND: &'static str = "plan";
///     fn summary(&self) -> Option<String> { Some(self.goal.clone()) }
/// }
/// ```
pub trait Artifact: Serialize + DeserializeOwned + JsonSchema + Send + Sync + 'static {
    /// The kind's name (lower case, such as `plan`).
    const KIND: &'static str;

    /// How the artifact reads to an agent: pretty JSON unless the type says otherwise.
    fn render_for_agent(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// A one-line summary, if the type has one.
    fn summary(&self) -> Option<String> {
        None
    }
}

type RenderFn = Arc<dyn Fn(&Value) -> Option<(String, Option<String>)> + Send + Sync>;

/// One kind: its name, schema, compiled validator and renderer.
#[derive(Clone)]
pub struct Kind {
    name: String,
    schema: Value,
    validator: Arc<jsonschema::Validator>,
    render: Option<RenderFn>,
}

impl fmt::Debug for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kind")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Kind {
    /// The kind's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The kind's JSON Schema.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// The rendering of `snapshot` for an agent, and its one-line summary:
    /// the Rust type's when it has one and the snapshot fits it, else pretty JSON.
    pub fn render(&self, snapshot: &Value) -> (String, Option<String>) {
        if let Some(render) = &self.render
            && let Some(out) = render(snapshot)
        {
            return out;
        }
        (
            serde_json::to_string_pretty(snapshot).unwrap_or_default(),
            None,
        )
    }
}

/// The kinds a workspace accepts, by name, and the size limit of a snapshot.
#[derive(Debug, Clone)]
pub struct Kinds {
    kinds: BTreeMap<String, Kind>,
    max_snapshot_bytes: usize,
}

impl Default for Kinds {
    fn default() -> Self {
        Self {
            kinds: BTreeMap::new(),
            max_snapshot_bytes: DEFAULT_MAX_SNAPSHOT_BYTES,
        }
    }
}

impl Kinds {
    /// No kinds, the default size limit (1 MiB).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the Rust type `A` as the kind `A::KIND` (its schema from schemars).
    pub fn with<A: Artifact>(mut self) -> Result<Self> {
        let schema = serde_json::to_value(schemars::schema_for!(A)).map_err(|e| {
            ArtifactError::invalid_argument(format!(
                "the schema of kind {} could not be encoded: {e}",
                A::KIND
            ))
        })?;
        let render: RenderFn = Arc::new(|snapshot: &Value| {
            let value: A = serde_json::from_value(snapshot.clone()).ok()?;
            Some((value.render_for_agent(), value.summary()))
        });
        self.insert(A::KIND, schema, Some(render))?;
        Ok(self)
    }

    /// Adds the kind `name` with the JSON Schema `schema` (a `KIND.schema.json`
    /// file's value); it renders as pretty JSON. A schema that does not
    /// compile is refused with InvalidArgument.
    pub fn with_schema(mut self, name: &str, schema: Value) -> Result<Self> {
        self.insert(name, schema, None)?;
        Ok(self)
    }

    /// Adds the kind `name` with the JSON Schema `schema`, rendered through
    /// `template` (a `KIND.md` file's), its summary the rendering's first
    /// non-blank line. A schema that does not compile is refused with InvalidArgument.
    pub fn with_template(
        mut self,
        name: &str,
        schema: Value,
        template: crate::template::Template,
    ) -> Result<Self> {
        let render: RenderFn = Arc::new(move |snapshot: &Value| {
            let text = template.render(snapshot);
            let summary = crate::template::Template::summary(&text);
            Some((text, summary))
        });
        self.insert(name, schema, Some(render))?;
        Ok(self)
    }

    /// The same kinds with a snapshot size limit of `bytes` (as compact JSON).
    pub fn with_max_snapshot_bytes(mut self, bytes: usize) -> Self {
        self.max_snapshot_bytes = bytes;
        self
    }

    fn insert(&mut self, name: &str, schema: Value, render: Option<RenderFn>) -> Result<()> {
        let valid_name = !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
        if !valid_name {
            return Err(ArtifactError::invalid_argument(format!(
                "the kind name {:?} is not valid: use 1 to 64 lower-case letters, digits, '_' or '-'.",
                clip(name, 64)
            )));
        }
        let validator = jsonschema::validator_for(&schema).map_err(|e| {
            ArtifactError::invalid_argument(format!(
                "the schema of kind {name} is not a valid JSON Schema: {e}."
            ))
        })?;
        self.kinds.insert(
            name.to_owned(),
            Kind {
                name: name.to_owned(),
                schema,
                validator: Arc::new(validator),
                render,
            },
        );
        Ok(())
    }

    /// The kind `name`, or UnknownKind naming the kinds there are.
    pub fn get(&self, name: &str) -> Result<&Kind> {
        self.kinds.get(name).ok_or_else(|| {
            let names: Vec<&str> = self.names().collect();
            ArtifactError::new(
                ArtifactErrorKind::UnknownKind,
                format!(
                    "there is no artifact kind {:?}; the kinds are: {}.",
                    clip(name, 64),
                    if names.is_empty() {
                        "(none)".to_owned()
                    } else {
                        names.join(", ")
                    }
                ),
            )
        })
    }

    /// The kinds' names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.kinds.keys().map(String::as_str)
    }

    /// The kinds, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = &Kind> {
        self.kinds.values()
    }

    /// The snapshot size limit, in bytes of compact JSON.
    pub fn max_snapshot_bytes(&self) -> usize {
        self.max_snapshot_bytes
    }

    /// `Ok` when `snapshot` is a valid `kind`: a known kind, within the size
    /// limit, fitting its schema. Else UnknownKind, TooLarge, or Validation
    /// naming the failing paths in one sentence.
    pub fn validate(&self, kind: &str, snapshot: &Value) -> Result<()> {
        let k = self.get(kind)?;
        let size = json_size(snapshot);
        if size > self.max_snapshot_bytes {
            return Err(ArtifactError::new(
                ArtifactErrorKind::TooLarge {
                    size,
                    limit: self.max_snapshot_bytes,
                },
                format!(
                    "the {kind} snapshot is {size} bytes, over the limit of {} bytes.",
                    self.max_snapshot_bytes
                ),
            ));
        }
        let mut paths: Vec<String> = Vec::new();
        let mut details: Vec<String> = Vec::new();
        for error in k.validator.iter_errors(snapshot) {
            let path = error.instance_path().as_str().to_owned();
            if !paths.contains(&path) {
                if details.len() < MAX_LISTED_PATHS {
                    let shown = if path.is_empty() { "/" } else { path.as_str() };
                    details.push(format!("at {shown}: {}", clip(&error.to_string(), 120)));
                }
                paths.push(path);
            }
        }
        if paths.is_empty() {
            return Ok(());
        }
        let more = paths.len().saturating_sub(MAX_LISTED_PATHS);
        let message = format!(
            "the snapshot is not a valid {kind}: {}{}.",
            details.join("; "),
            if more > 0 {
                format!(" (and {more} more)")
            } else {
                String::new()
            }
        );
        Err(ArtifactError::new(
            ArtifactErrorKind::Validation { paths },
            message,
        ))
    }
}

/// The size of `value` as compact JSON, counted as it is written, never held.
pub(crate) fn json_size(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a `Value` to a counter cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// `s` cut to at most `max` characters, with "…" when cut.
pub(crate) fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}
