//! Skills: SKILL.md-described capabilities discovered in directories and loaded on demand.

use serde::{Deserialize, Serialize};

/// A skill, as the Python `Skill` TypedDict holds it; `instructions` and
/// `resources` are absent until loaded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skill {
    /// Unique identifier.
    pub name: String,
    /// Brief description.
    pub description: String,
    /// The skill's directory.
    pub path: String,
    /// Categorisation tags.
    pub tags: Vec<String>,
    /// Semantic version.
    pub version: String,
    /// Author.
    pub author: String,
    /// True while only the frontmatter has been loaded.
    pub frontmatter_loaded: bool,
    /// The full instructions, once loaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Other files in the skill's directory, once loaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Vec<String>>,
}

/// A directory to discover skills in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillDirectory {
    /// The directory.
    pub path: String,
    /// Whether to search below it; absent means yes (see [`SkillDirectory::is_recursive`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recursive: Option<bool>,
}

impl SkillDirectory {
    /// Whether discovery descends into subdirectories (true unless set to false).
    pub fn is_recursive(&self) -> bool {
        self.recursive.unwrap_or(true)
    }
}

/// The YAML frontmatter of a SKILL.md.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillFrontmatter {
    /// Unique identifier.
    pub name: String,
    /// Brief description.
    pub description: String,
    /// Categorisation tags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    /// Semantic version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Author.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
}
