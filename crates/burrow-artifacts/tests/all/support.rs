//! Test kinds shared by the modules: a plan (a Rust type) and a doc (a schema value).

use burrow_artifacts::{Artifact, Kinds};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A plan: a goal and its steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    pub goal: String,
    pub steps: Vec<Step>,
    #[serde(default)]
    pub notes: String,
}

/// One step of a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Step {
    pub title: String,
    pub done: bool,
}

impl Artifact for Plan {
    const KIND: &'static str = "plan";

    fn render_for_agent(&self) -> String {
        let mut out = format!("# {}\n", self.goal);
        for s in &self.steps {
            out.push_str(&format!(
                "- [{}] {}\n",
                if s.done { "x" } else { " " },
                s.title
            ));
        }
        out
    }

    fn summary(&self) -> Option<String> {
        Some(format!("{} ({} steps)", self.goal, self.steps.len()))
    }
}

/// The doc kind's schema, as a `doc.schema.json` file would hold it.
pub fn doc_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "text": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}}
        },
        "required": ["title", "text"],
        "additionalProperties": false
    })
}

/// The kinds every test uses: plan and doc.
pub fn kinds() -> Kinds {
    Kinds::new()
        .with::<Plan>()
        .unwrap()
        .with_schema("doc", doc_schema())
        .unwrap()
}

pub fn plan() -> serde_json::Value {
    serde_json::json!({
        "goal": "Ship v1",
        "steps": [{"title": "write", "done": false}, {"title": "test", "done": false}],
        "notes": ""
    })
}
