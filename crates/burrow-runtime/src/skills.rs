//! Skills (issue 27, opt-in): Agent Skills folders (`SKILL.md` with YAML frontmatter) discovered through any backend, listed by name and description in every request's instructions, and loaded whole by the `skill` tool (ADR 0290).
//!
//! A skill is a folder holding `SKILL.md`: YAML frontmatter between two
//! `---` lines (`name`, `description`, optional `license`, `compatibility`,
//! `allowed-tools`, `metadata`, and the seed's `tags`, `version`, `author`),
//! then the instructions. Every other file in the folder is a resource the
//! model opens with `read_file`.
//!
//! [`Skills::discover`] reads the folders of each [`SkillSource`] (a
//! [`SkillDirectory`] in a backend) in order. A `SKILL.md` that breaks a
//! rule of the format is not offered, and is a [`SkillWarning`] naming the
//! file and the rule; a second skill of a name already found is a warning
//! too (the first directory wins).
//!
//! [`with_skills`] gives an agent the `skill` tool and the listing: each
//! request's instructions name every skill with its description (at most
//! [`MAX_ENTRY_CHARS`] characters a skill, [`DEFAULT_LISTING_CHARS`] in all
//! unless set), and the skills loaded so far in the conversation. Which
//! skills are loaded is read back from the history (the `skill` calls that
//! succeeded), so it survives a resume of a session thread.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use async_trait::async_trait;
use burrow_backend::{Backend, Error, ErrorKind, FileContext, VPath};
use burrow_types::{Skill, SkillDirectory};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

mod allowed;

pub use allowed::{AllowedTools, rule_of, tools_of};

use crate::agent::{Agent, InstructionProvider};
use crate::message::Message;
use crate::tool::{FnTool, Tool, ToolOutput};

/// The tool's name.
pub const SKILL_TOOL: &str = "skill";

/// The file that makes a folder a skill.
pub const SKILL_FILE: &str = "SKILL.md";

/// Most characters of a skill's `name`.
pub const MAX_NAME_CHARS: usize = 64;

/// Most characters of a skill's `description`.
pub const MAX_DESCRIPTION_CHARS: usize = 1_024;

/// Most characters of a skill's `compatibility`.
pub const MAX_COMPATIBILITY_CHARS: usize = 500;

/// Most characters one skill takes in the listing (Claude Code's bound).
pub const MAX_ENTRY_CHARS: usize = 1_536;

/// Most characters of the whole listing by default: about 2% of a
/// 200,000-token context window at four characters a token, as Claude Code
/// budgets its skill listing.
pub const DEFAULT_LISTING_CHARS: usize = 16_000;

/// Largest `SKILL.md` read (deepagents' bound).
pub const MAX_SKILL_FILE_BYTES: u64 = 10 * 1024 * 1024;

/// Most `SKILL.md` files one directory is searched for.
pub const MAX_SKILLS_PER_DIRECTORY: usize = 1_000;

/// Most resources the `skill` tool lists for one skill.
pub const MAX_RESOURCES: usize = 200;

/// A rule of the Agent Skills format that a `SKILL.md` breaks, or why a
/// directory gave no skills; its text is one clause, without a final stop.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SkillRule {
    /// The file does not open with `---`, or the frontmatter is not closed.
    #[error(
        "it does not start with YAML frontmatter (a `---` line, the fields, then another `---` line)"
    )]
    NoFrontmatter,
    /// The frontmatter does not parse as YAML.
    #[error("its frontmatter is not valid YAML ({0})")]
    Yaml(String),
    /// The frontmatter parses, but not to a mapping.
    #[error("its frontmatter is not a mapping of fields to values")]
    NotAMapping,
    /// A required field is absent.
    #[error("its frontmatter has no `{0}` field")]
    Missing(&'static str),
    /// A field has a value of the wrong type.
    #[error("its `{field}` field must be {expected}")]
    WrongType {
        /// The field.
        field: &'static str,
        /// What it must be.
        expected: &'static str,
    },
    /// `name` is longer than [`MAX_NAME_CHARS`].
    #[error("its `name` has {0} characters, more than 64")]
    NameTooLong(usize),
    /// `name` holds a character other than `a-z`, `0-9` and `-`, or a hyphen misplaced.
    #[error(
        "its `name` {0:?} must be lowercase letters, digits and hyphens, not starting or ending with a hyphen nor holding two in a row"
    )]
    NameCharacters(String),
    /// `name` is not the name of the skill's folder.
    #[error("its `name` {name:?} is not the name of its folder, {folder:?}")]
    NameNotFolder {
        /// The frontmatter's name.
        name: String,
        /// The folder's name.
        folder: String,
    },
    /// `description` is empty.
    #[error("its `description` is empty")]
    EmptyDescription,
    /// `description` is longer than [`MAX_DESCRIPTION_CHARS`].
    #[error("its `description` has {0} characters, more than 1,024")]
    DescriptionTooLong(usize),
    /// `compatibility` is empty or longer than [`MAX_COMPATIBILITY_CHARS`].
    #[error("its `compatibility` has {0} characters; it must have 1 to 500")]
    CompatibilityLength(usize),
    /// The file is larger than [`MAX_SKILL_FILE_BYTES`].
    #[error("it is larger than 10 MiB")]
    TooLarge,
    /// The file is not UTF-8 text.
    #[error("it is not UTF-8 text")]
    NotText,
    /// A skill of the same name was found first.
    #[error("a skill named {name:?} was found first, in {first}")]
    Duplicate {
        /// The name both skills have.
        name: String,
        /// The `SKILL.md` that was kept.
        first: String,
    },
    /// The directory to discover skills in does not exist.
    #[error("the skill directory does not exist")]
    NoDirectory,
    /// The directory holds more `SKILL.md` files than are searched.
    #[error("the directory holds more than 1,000 skills; only the first 1,000 were read")]
    TooMany,
}

impl SkillRule {
    /// The rule's kind, for a `skill_error` event (`name_not_folder`, `yaml`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            SkillRule::NoFrontmatter => "no_frontmatter",
            SkillRule::Yaml(_) => "yaml",
            SkillRule::NotAMapping => "not_a_mapping",
            SkillRule::Missing(_) => "missing_field",
            SkillRule::WrongType { .. } => "wrong_type",
            SkillRule::NameTooLong(_) => "name_too_long",
            SkillRule::NameCharacters(_) => "name_characters",
            SkillRule::NameNotFolder { .. } => "name_not_folder",
            SkillRule::EmptyDescription => "empty_description",
            SkillRule::DescriptionTooLong(_) => "description_too_long",
            SkillRule::CompatibilityLength(_) => "compatibility_length",
            SkillRule::TooLarge => "too_large",
            SkillRule::NotText => "not_text",
            SkillRule::Duplicate { .. } => "duplicate",
            SkillRule::NoDirectory => "no_directory",
            SkillRule::TooMany => "too_many",
        }
    }
}

/// A skill file that was not loaded (or a directory that gave no skills),
/// and the rule it breaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillWarning {
    /// The `SKILL.md` (or the directory), a path in its backend.
    pub file: String,
    /// What is wrong with it.
    pub rule: SkillRule,
}

impl std::fmt::Display for SkillWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.rule {
            SkillRule::NoDirectory | SkillRule::TooMany => {
                write!(f, "{}: {}.", self.file, self.rule)
            }
            _ => write!(f, "the skill {} was not loaded: {}.", self.file, self.rule),
        }
    }
}

/// A parsed `SKILL.md`: the fields of its frontmatter and its instructions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFile {
    /// `name`.
    pub name: String,
    /// `description`.
    pub description: String,
    /// `license`.
    pub license: Option<String>,
    /// `compatibility`.
    pub compatibility: Option<String>,
    /// `allowed-tools` (a space-separated string or a list, as a list).
    pub allowed_tools: Vec<String>,
    /// `metadata`.
    pub metadata: BTreeMap<String, String>,
    /// `tags` (or `metadata.tags`, comma-separated).
    pub tags: Vec<String>,
    /// `version` (or `metadata.version`).
    pub version: Option<String>,
    /// `author` (or `metadata.author`).
    pub author: Option<String>,
    /// The body after the frontmatter: the instructions.
    pub instructions: String,
}

/// Splits `text` into its frontmatter and its body.
fn split_frontmatter(text: &str) -> Option<(&str, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next()?;
    if first.trim_end() != "---" {
        return None;
    }
    let start = first.len();
    let mut at = start;
    for line in lines {
        if matches!(line.trim_end(), "---" | "...") {
            let body = &text[at + line.len()..];
            return Some((&text[start..at], body));
        }
        at += line.len();
    }
    None
}

/// A scalar as text (`1.0` and `true` are written as YAML wrote them, near enough).
fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// An optional text field.
fn text_field(
    map: &serde_json::Map<String, Value>,
    field: &'static str,
) -> Result<Option<String>, SkillRule> {
    match map.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => scalar(v).map(Some).ok_or(SkillRule::WrongType {
            field,
            expected: "text",
        }),
    }
}

/// A list of text, from a YAML list or a string split by `split`.
fn list_field(
    map: &serde_json::Map<String, Value>,
    field: &'static str,
    split: fn(&str) -> Vec<String>,
) -> Result<Vec<String>, SkillRule> {
    let wrong = SkillRule::WrongType {
        field,
        expected: "a list of text or one text",
    };
    match map.get(field) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(split(s)),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| scalar(v).ok_or(wrong.clone()))
            .collect(),
        Some(_) => Err(wrong),
    }
}

/// `allowed-tools` as a string: entries separated by spaces (the Agent
/// Skills form) or commas (as Claude Code's skills often write them), never
/// inside a specifier's parentheses, so `Bash(npm run test:*)` stays one.
fn tool_entries(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut entry = String::new();
    let mut depth = 0usize;
    for c in s.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth == 0 && (c.is_whitespace() || c == ',') {
            if !entry.is_empty() {
                out.push(std::mem::take(&mut entry));
            }
        } else {
            entry.push(c);
        }
    }
    if !entry.is_empty() {
        out.push(entry);
    }
    out
}

fn by_comma(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Whether `name` is lowercase letters, digits and single inner hyphens.
fn name_chars_ok(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// Parses the text of a `SKILL.md` kept in a folder named `folder`; an
/// `Err` is the first rule it breaks.
pub fn parse_skill_file(text: &str, folder: &str) -> Result<SkillFile, SkillRule> {
    let (front, body) = split_frontmatter(text).ok_or(SkillRule::NoFrontmatter)?;
    let value: Value = if front.trim().is_empty() {
        Value::Null
    } else {
        serde_saphyr::from_str(front).map_err(|e| {
            let message = e.to_string();
            let first = message.lines().next().unwrap_or("").trim().to_owned();
            SkillRule::Yaml(first)
        })?
    };
    let map = match value {
        Value::Object(map) => map,
        Value::Null => serde_json::Map::new(),
        _ => return Err(SkillRule::NotAMapping),
    };
    let name = text_field(&map, "name")?.ok_or(SkillRule::Missing("name"))?;
    let chars = name.chars().count();
    if chars > MAX_NAME_CHARS {
        return Err(SkillRule::NameTooLong(chars));
    }
    if !name_chars_ok(&name) {
        return Err(SkillRule::NameCharacters(name));
    }
    if name != folder {
        return Err(SkillRule::NameNotFolder {
            name,
            folder: folder.to_owned(),
        });
    }
    let description = text_field(&map, "description")?.ok_or(SkillRule::Missing("description"))?;
    if description.trim().is_empty() {
        return Err(SkillRule::EmptyDescription);
    }
    let chars = description.chars().count();
    if chars > MAX_DESCRIPTION_CHARS {
        return Err(SkillRule::DescriptionTooLong(chars));
    }
    let compatibility = text_field(&map, "compatibility")?;
    if let Some(c) = &compatibility {
        let chars = c.chars().count();
        if chars == 0 || chars > MAX_COMPATIBILITY_CHARS {
            return Err(SkillRule::CompatibilityLength(chars));
        }
    }
    let license = text_field(&map, "license")?;
    let allowed_tools = list_field(&map, "allowed-tools", tool_entries)?;
    let mut metadata = BTreeMap::new();
    match map.get("metadata") {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            for (k, v) in m {
                let v = scalar(v).ok_or(SkillRule::WrongType {
                    field: "metadata",
                    expected: "a mapping of text to text",
                })?;
                metadata.insert(k.clone(), v);
            }
        }
        Some(_) => {
            return Err(SkillRule::WrongType {
                field: "metadata",
                expected: "a mapping of text to text",
            });
        }
    }
    let mut tags = list_field(&map, "tags", by_comma)?;
    if tags.is_empty()
        && let Some(t) = metadata.get("tags")
    {
        tags = by_comma(t);
    }
    let version = text_field(&map, "version")?.or_else(|| metadata.get("version").cloned());
    let author = text_field(&map, "author")?.or_else(|| metadata.get("author").cloned());
    Ok(SkillFile {
        name,
        description,
        license,
        compatibility,
        allowed_tools,
        metadata,
        tags,
        version,
        author,
        instructions: body.trim_start_matches(['\r', '\n']).to_owned(),
    })
}

/// A directory of skills in a backend, read as a tenant.
#[derive(Clone)]
pub struct SkillSource {
    backend: Arc<dyn Backend>,
    ctx: FileContext,
    directory: SkillDirectory,
}

impl std::fmt::Debug for SkillSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkillSource")
            .field("directory", &self.directory)
            .finish_non_exhaustive()
    }
}

impl SkillSource {
    /// `directory` of `backend`, read as `ctx`.
    pub fn new(backend: Arc<dyn Backend>, ctx: FileContext, directory: SkillDirectory) -> Self {
        Self {
            backend,
            ctx,
            directory,
        }
    }
}

/// One discovered skill and where to read its resources.
#[derive(Debug, Clone)]
struct Entry {
    file: SkillFile,
    dir: VPath,
    path: VPath,
    source: usize,
}

/// The skills an agent can load, discovered once.
#[derive(Debug, Clone)]
pub struct Skills {
    entries: Vec<Entry>,
    sources: Vec<SkillSource>,
    max_listing_chars: usize,
}

impl Skills {
    /// Discovers the skills of `sources`, in order: in each directory every
    /// `SKILL.md` below it (only `DIR/NAME/SKILL.md` when it is not
    /// recursive), in path order.
    ///
    /// A file that breaks a rule, a second skill of one name, and a
    /// directory that does not exist are warnings; a directory path that
    /// does not parse is refused, and a backend failure is an `Err`.
    pub async fn discover(sources: Vec<SkillSource>) -> Result<(Skills, Vec<SkillWarning>), Error> {
        let mut entries: Vec<Entry> = Vec::new();
        let mut warnings = Vec::new();
        for (index, source) in sources.iter().enumerate() {
            let dir = VPath::parse(&source.directory.path)?;
            match source.backend.ls(&source.ctx, &dir, 1).await {
                Ok(_) => {}
                Err(e) if e.is_refusal() => {
                    warnings.push(SkillWarning {
                        file: dir.to_string(),
                        rule: SkillRule::NoDirectory,
                    });
                    continue;
                }
                Err(e) => return Err(e),
            }
            let pattern = if source.directory.is_recursive() {
                SKILL_FILE.to_owned()
            } else {
                format!("/*/{SKILL_FILE}")
            };
            let found = source
                .backend
                .glob(&source.ctx, &pattern, &dir, MAX_SKILLS_PER_DIRECTORY)
                .await?;
            if found.truncated {
                warnings.push(SkillWarning {
                    file: dir.to_string(),
                    rule: SkillRule::TooMany,
                });
            }
            for info in found.files {
                let path = VPath::parse(&info.path)?;
                let Some(folder) = path.parent() else {
                    continue;
                };
                let warn = |rule| SkillWarning {
                    file: path.to_string(),
                    rule,
                };
                if info.size.is_some_and(|s| s > MAX_SKILL_FILE_BYTES) {
                    warnings.push(warn(SkillRule::TooLarge));
                    continue;
                }
                let bytes = match source.backend.read_bytes(&source.ctx, &path).await {
                    Ok(bytes) => bytes,
                    Err(e) if e.is_refusal() && e.kind() == ErrorKind::TooLarge => {
                        warnings.push(warn(SkillRule::TooLarge));
                        continue;
                    }
                    // Gone since the glob, or not a file after all: no skill.
                    Err(e) if e.is_refusal() => continue,
                    Err(e) => return Err(e),
                };
                let Ok(text) = String::from_utf8(bytes) else {
                    warnings.push(warn(SkillRule::NotText));
                    continue;
                };
                let file = match parse_skill_file(&text, folder.name()) {
                    Ok(file) => file,
                    Err(rule) => {
                        warnings.push(warn(rule));
                        continue;
                    }
                };
                if let Some(first) = entries.iter().find(|e| e.file.name == file.name) {
                    warnings.push(warn(SkillRule::Duplicate {
                        name: file.name.clone(),
                        first: first.path.to_string(),
                    }));
                    continue;
                }
                entries.push(Entry {
                    file,
                    dir: folder,
                    path,
                    source: index,
                });
            }
        }
        Ok((
            Skills {
                entries,
                sources,
                max_listing_chars: DEFAULT_LISTING_CHARS,
            },
            warnings,
        ))
    }

    /// The same skills, their listing at most `chars` characters long.
    pub fn with_max_listing_chars(mut self, chars: usize) -> Self {
        self.max_listing_chars = chars;
        self
    }

    /// The skills' names, in discovery order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| e.file.name.as_str())
    }

    /// How many skills there are.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The parsed `SKILL.md` of the skill `name`.
    pub fn file(&self, name: &str) -> Option<&SkillFile> {
        self.entry(name).map(|e| &e.file)
    }

    fn entry(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.file.name == name)
    }

    /// Every skill as the seed's `Skill`, only its frontmatter loaded.
    pub fn list(&self) -> Vec<Skill> {
        self.entries
            .iter()
            .map(|e| skill_of(e, None, None))
            .collect()
    }

    /// The skill `name` loaded: its instructions and its resources (every
    /// other file of its folder, at most [`MAX_RESOURCES`], read now through
    /// its backend). `None` when no skill has that name.
    pub async fn load(&self, name: &str) -> Result<Option<(Skill, bool)>, Error> {
        let Some(entry) = self.entry(name) else {
            return Ok(None);
        };
        let source = &self.sources[entry.source.min(self.sources.len().saturating_sub(1))];
        let found = source
            .backend
            .glob(&source.ctx, "*", &entry.dir, MAX_RESOURCES + 1)
            .await?;
        let mut resources: Vec<String> = found
            .files
            .into_iter()
            .map(|f| f.path)
            .filter(|p| p != entry.path.as_str())
            .collect();
        let more = found.truncated || resources.len() > MAX_RESOURCES;
        resources.truncate(MAX_RESOURCES);
        Ok(Some((
            skill_of(
                entry,
                Some(entry.file.instructions.clone()),
                Some(resources),
            ),
            more,
        )))
    }

    /// The listing for the instructions, `loaded` naming the skills loaded so far.
    pub fn listing(&self, loaded: &[String]) -> Option<String> {
        if self.entries.is_empty() {
            return None;
        }
        let mut out = String::from(LISTING_HEAD);
        let mut used = 0;
        let mut left_out = 0;
        for entry in &self.entries {
            let line = entry_line(&entry.file);
            let chars = line.chars().count();
            if left_out > 0 || used + chars > self.max_listing_chars {
                left_out += 1;
                continue;
            }
            used += chars;
            out.push_str(&line);
        }
        if left_out > 0 {
            out.push_str(&format!(
                "({left_out} more skills are not listed: the listing is limited to {} characters. Call {SKILL_TOOL} with a name you know to load one of them.)\n",
                self.max_listing_chars
            ));
        }
        if !loaded.is_empty() {
            out.push_str(&format!(
                "\nLoaded in this conversation (their instructions are above in the conversation; follow them): {}\n",
                loaded.join(", ")
            ));
        }
        Some(out.trim_end().to_owned())
    }
}

/// The listing's opening, modelled on Claude Code's Skill tool and
/// deepagents' skills prompt (docs/adr/0290).
const LISTING_HEAD: &str = "## Skills\n\n\
You have skills: folders of instructions, scripts and reference files for particular kinds of task. \
Before you start a task, and whenever the task changes, check the list below. \
When a skill's description matches what you are asked to do, even in part, call the `skill` tool with its name \
BEFORE anything else (before other tools, before answering), then follow the instructions it returns; \
do not work from the description alone, and do not guess what a skill says. \
When two skills match, load both. A skill loaded once stays loaded for the rest of the conversation: \
do not load it again.\n\nAvailable skills (name: when to use it):\n";

/// One skill's line in the listing, at most [`MAX_ENTRY_CHARS`] characters.
fn entry_line(file: &SkillFile) -> String {
    let description: String = file
        .description
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let mut line = format!("- {}: {description}", file.name);
    if line.chars().count() > MAX_ENTRY_CHARS {
        line = line.chars().take(MAX_ENTRY_CHARS - 1).collect();
        line.push('…');
    }
    line.push('\n');
    line
}

fn skill_of(entry: &Entry, instructions: Option<String>, resources: Option<Vec<String>>) -> Skill {
    let loaded = instructions.is_some();
    Skill {
        name: entry.file.name.clone(),
        description: entry.file.description.clone(),
        path: entry.dir.to_string(),
        tags: entry.file.tags.clone(),
        version: entry.file.version.clone().unwrap_or_default(),
        author: entry.file.author.clone().unwrap_or_default(),
        frontmatter_loaded: !loaded,
        instructions,
        resources,
    }
}

/// The skills a conversation has loaded: the names of its `skill` calls
/// that succeeded, in the order they were first loaded.
pub fn loaded(history: &[Message]) -> Vec<String> {
    let mut ok = HashSet::new();
    for message in history {
        if let Message::ToolResult(r) = message
            && r.name == SKILL_TOOL
            && !r.is_error
        {
            ok.insert(r.call_id.as_str());
        }
    }
    let mut names: Vec<String> = Vec::new();
    for call in history.iter().flat_map(|m| m.tool_calls()) {
        if call.name == SKILL_TOOL
            && ok.contains(call.id.as_str())
            && let Some(name) = call.arguments.get("name").and_then(Value::as_str)
            && !names.iter().any(|n| n == name)
        {
            names.push(name.to_owned());
        }
    }
    names
}

/// The listing as an instruction provider.
#[derive(Debug, Clone)]
pub struct SkillListing(pub Arc<Skills>);

#[async_trait]
impl InstructionProvider for SkillListing {
    async fn instructions(&self, history: &[Message]) -> Result<Option<String>, Error> {
        Ok(self.0.listing(&loaded(history)))
    }
}

/// `skill`'s arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The skill's name, as the listing gives it.
    name: String,
}

const DESCRIPTION: &str = "Load a skill: its full instructions and the paths of its resource files. \
Call it with the skill's `name` as soon as a skill in the Skills list of your instructions matches \
the task, before doing the task, then follow the instructions; open the resources with read_file \
when they call for them.";

/// What the model reads when `name` loads.
fn render(skill: &Skill, more: bool) -> String {
    let mut out = format!(
        "Skill {} is loaded for the rest of this conversation; follow its instructions.\nIts folder: {}\n\n<instructions>\n{}\n</instructions>\n",
        skill.name,
        skill.path,
        skill.instructions.as_deref().unwrap_or("").trim_end()
    );
    let resources = skill.resources.as_deref().unwrap_or(&[]);
    if resources.is_empty() {
        out.push_str("\nThe skill has no resource files.");
    } else {
        out.push_str(
            "\nIts resource files (open one with read_file when the instructions call for it):\n",
        );
        for r in resources {
            out.push_str(&format!("- {r}\n"));
        }
        if more {
            out.push_str(&format!(
                "(more files than {MAX_RESOURCES}; list the folder with ls or glob for the rest)\n"
            ));
        }
    }
    out.trim_end().to_owned()
}

/// The `skill` tool over `skills`.
pub fn skill_tool(skills: Arc<Skills>) -> Arc<dyn Tool> {
    Arc::new(
        FnTool::new(SKILL_TOOL, DESCRIPTION, move |args: Args, _cx| {
            let skills = skills.clone();
            async move {
                match skills.load(&args.name).await {
                    Ok(Some((skill, more))) => Ok(ToolOutput::ok(render(&skill, more))),
                    Ok(None) => {
                        let names: Vec<&str> = skills.names().take(50).collect();
                        Ok(ToolOutput::refused(format!(
                            "No skill is named {:?}; the skills are: {}.",
                            args.name,
                            if names.is_empty() {
                                "none".to_owned()
                            } else {
                                names.join(", ")
                            }
                        )))
                    }
                    Err(e) if e.is_refusal() => Ok(ToolOutput::refused(format!(
                        "The skill {:?} cannot be read now: {}",
                        args.name,
                        e.message()
                    ))),
                    Err(e) => Err(e),
                }
            }
        })
        .with_annotations(crate::tool::ToolAnnotations {
            read_only: true,
            destructive: false,
            idempotent: true,
        }),
    )
}

/// `agent` with `skills`: the `skill` tool, the listing in every
/// request's instructions, and the loaded skills' `allowed-tools` narrowing
/// what the rest of the run may call ([`AllowedTools`], ADR 0297).
pub fn with_skills(agent: Agent, skills: Arc<Skills>) -> Agent {
    let mut tools = agent.tools().clone();
    tools.add_arc(skill_tool(skills.clone()));
    agent
        .with_tools(tools)
        .with_provider(Arc::new(SkillListing(skills.clone())))
        .with_capability(Arc::new(AllowedTools::new(skills)))
}
