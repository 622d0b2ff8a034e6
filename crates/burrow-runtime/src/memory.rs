//! The memory tool (issue 27): Anthropic's `memory_20250818` commands (`view`, `create`, `str_replace`, `insert`, `delete`, `rename`) over any backend, under `/memories`, scoped by the tenant of its `FileContext` (ADR 0291).
//!
//! Claude is trained on this tool's exact texts, so results and refusals
//! are the reference implementation's (the Python SDK's
//! `BetaLocalFilesystemMemoryTool`) word for word, with three differences
//! the backend contract makes: a directory's size is the bytes of the files
//! beneath it (a backend has no `st_size` for directories); a file that is
//! not UTF-8 is refused in a sentence; and a backend refusal (a file over the
//! size limit, a read-only mount) is that refusal's sentence.
//!
//! **Tenants.** Every call is made as the tool's [`FileContext`], so on a
//! backend that keeps tenants apart (SQLite, the object store) two tenants'
//! memories never meet; on one that does not, mount a backend per tenant
//! (`--backend /memories=sqlite:mem.db`, or a composite resolver).
//!
//! **Durability.** Each change carries an effect key made from the call, so
//! a resumed call does not write twice. `str_replace` and `insert` read then
//! write the file, as the reference does; calls of one run hold the
//! tool's lock and so never interleave, but two processes changing one
//! memory file at the same instant keep the last write.

use std::sync::Arc;

use async_trait::async_trait;
use burrow_backend::{Backend, Error, ErrorKind, FileContext, LockKey, VPath};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::agent::Agent;
use crate::tool::{CallContext, Tool, ToolAnnotations, ToolOutput};

/// The tool's name, as the reference declares it.
pub const MEMORY_TOOL: &str = "memory";

/// The Anthropic tool type an `anthropic:` model is sent instead of a function definition.
pub const MEMORY_TOOL_TYPE: &str = "memory_20250818";

/// The beta an Anthropic request offering the memory tool names in `anthropic-beta`.
pub const MEMORY_BETA: &str = "context-management-2025-06-27";

/// The folder every memory path lies in.
pub const MEMORY_ROOT: &str = "/memories";

/// The most lines a viewed file may have.
const MAX_LINES: usize = 999_999;

/// The width of a line number in a view, as the reference pads it.
const LINE_NUMBER_WIDTH: usize = 6;

/// The most entries one directory view lists from one directory.
const MAX_VIEW_ENTRIES: usize = 10_000;

const DESCRIPTION: &str = "Your memory directory, kept between conversations. ALWAYS view \
/memories first to see what you stored earlier, and record progress, decisions and what you \
learned as you work, in case the conversation is cut off. Commands: view (a directory, up to \
2 levels deep, or a file with line numbers; `view_range` [start, end] or [start, -1]), create \
(a new file with `file_text`), str_replace (`old_str` must occur exactly once), insert \
(`insert_text` after line `insert_line`, 0 for the top), delete (a file or a directory) and \
rename (`old_path` to `new_path`). Every path starts with /memories. Never store secrets.";

/// One command, as the model sends it.
#[derive(Debug, Deserialize)]
#[serde(tag = "command", rename_all = "snake_case")]
enum Command {
    View {
        path: String,
        #[serde(default)]
        view_range: Option<Vec<i64>>,
    },
    Create {
        path: String,
        file_text: String,
    },
    StrReplace {
        path: String,
        old_str: String,
        new_str: String,
    },
    Insert {
        path: String,
        insert_line: i64,
        insert_text: String,
    },
    Delete {
        path: String,
    },
    Rename {
        old_path: String,
        new_path: String,
    },
}

/// A refusal the model reads, or a failure of the store.
enum Stop {
    Refused(String),
    Failed(Error),
}

impl From<Error> for Stop {
    fn from(e: Error) -> Self {
        if e.is_refusal() {
            Stop::Refused(e.message().to_owned())
        } else {
            Stop::Failed(e)
        }
    }
}

type Step<T> = std::result::Result<T, Stop>;

fn refuse<T>(text: impl Into<String>) -> Step<T> {
    Err(Stop::Refused(text.into()))
}

/// The memory tool over `backend`, every call made as `ctx`.
#[derive(Clone)]
pub struct MemoryTool {
    backend: Arc<dyn Backend>,
    ctx: FileContext,
    schema: Value,
}

impl std::fmt::Debug for MemoryTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryTool")
            .field("ctx", &self.ctx)
            .finish_non_exhaustive()
    }
}

/// `agent` with the memory tool over `backend`, as `ctx`.
pub fn with_memory(agent: Agent, backend: Arc<dyn Backend>, ctx: FileContext) -> Agent {
    let mut tools = agent.tools().clone();
    tools.add_arc(Arc::new(MemoryTool::new(backend, ctx)));
    agent.with_tools(tools)
}

impl MemoryTool {
    /// The tool over `backend`; its files are `/memories/...` of `ctx`'s tenant.
    pub fn new(backend: Arc<dyn Backend>, ctx: FileContext) -> Self {
        Self {
            backend,
            ctx,
            schema: input_schema(),
        }
    }

    /// Runs one command: the reference's result text, or its refusal.
    async fn run(&self, cx: &CallContext, command: Command) -> Step<String> {
        match command {
            Command::View { path, view_range } => self.view(&path, view_range.as_deref()).await,
            Command::Create { path, file_text } => self.create(cx, &path, &file_text).await,
            Command::StrReplace {
                path,
                old_str,
                new_str,
            } => self.str_replace(cx, &path, &old_str, &new_str).await,
            Command::Insert {
                path,
                insert_line,
                insert_text,
            } => self.insert(cx, &path, insert_line, &insert_text).await,
            Command::Delete { path } => self.delete(cx, &path).await,
            Command::Rename { old_path, new_path } => self.rename(cx, &old_path, &new_path).await,
        }
    }

    /// The context of the mutation `operation` of `path` by call `cx`: the
    /// file tools' effect key, under `memory.OPERATION`.
    fn mutation(&self, cx: &CallContext, operation: &str, path: &VPath) -> FileContext {
        crate::tools::Call::new(&self.ctx, cx).mutation(&format!("memory.{operation}"), path)
    }

    /// What stands at `path`: a directory (`Some(true)`), a file, or nothing.
    async fn kind_of(&self, path: &VPath) -> Step<Option<bool>> {
        match self.backend.ls(&self.ctx, path, 1).await {
            Ok(_) => Ok(Some(true)),
            Err(e) if e.kind() == ErrorKind::NotADirectory => Ok(Some(false)),
            // A missing /memories is an empty folder that exists, as the
            // reference makes it on start.
            Err(e) if e.kind() == ErrorKind::NotFound => {
                Ok((path.as_str() == MEMORY_ROOT).then_some(true))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The text of the file at `path` (`shown` as the model wrote it).
    async fn text(&self, path: &VPath, shown: &str) -> Step<String> {
        match self.backend.read_bytes(&self.ctx, path).await {
            Ok(bytes) => String::from_utf8(bytes).or_else(|_| {
                refuse(format!(
                    "The file {shown} is not UTF-8 text; the memory tool reads and edits text files only."
                ))
            }),
            Err(e) if e.kind() == ErrorKind::NotFound => refuse(format!(
                "The file {shown} no longer exists (may have been deleted or renamed concurrently)."
            )),
            Err(e) => Err(e.into()),
        }
    }

    /// The text of the existing file `shown`, refused as the reference refuses a missing path or a directory.
    async fn existing_file(&self, path: &VPath, shown: &str) -> Step<String> {
        match self.kind_of(path).await? {
            None => refuse(missing(shown)),
            Some(true) => refuse(format!("The path {shown} is not a file.")),
            Some(false) => self.text(path, shown).await,
        }
    }

    async fn view(&self, shown: &str, range: Option<&[i64]>) -> Step<String> {
        let path = memory_path(shown)?;
        match self.kind_of(&path).await? {
            None => refuse(missing(shown)),
            Some(true) => self.view_dir(&path, shown).await,
            Some(false) => {
                let text = self.text(&path, shown).await?;
                let lines: Vec<&str> = text.split('\n').collect();
                if lines.len() > MAX_LINES {
                    return refuse(format!(
                        "File {shown} exceeds maximum line limit of 999,999 lines."
                    ));
                }
                let (start, end) = match range {
                    Some([first, last]) => {
                        let start = ((*first).max(1) - 1) as usize;
                        let end = if *last == -1 {
                            lines.len()
                        } else {
                            python_end(*last, lines.len())
                        };
                        (start.min(lines.len()), end)
                    }
                    _ => (0, lines.len()),
                };
                let shown_lines = if start < end {
                    &lines[start..end]
                } else {
                    &[][..]
                };
                let numbered: Vec<String> = shown_lines
                    .iter()
                    .enumerate()
                    .map(|(i, line)| numbered(start + i + 1, line))
                    .collect();
                Ok(format!(
                    "Here's the content of {shown} with line numbers:\n{}",
                    numbered.join("\n")
                ))
            }
        }
    }

    /// A directory two levels deep, hidden names left out, each with its size.
    async fn view_dir(&self, dir: &VPath, shown: &str) -> Step<String> {
        let files = self.sizes_beneath(dir).await?;
        let mut items = Vec::new();
        self.collect(dir, "", 1, &files, &mut items).await?;
        let mut lines = vec![format!(
            "{}\t{shown}",
            format_size(size_of_dir(dir, &files))
        )];
        lines.extend(
            items
                .into_iter()
                .map(|(size, rel)| format!("{size}\t{shown}/{rel}")),
        );
        Ok(format!(
            "Here're the files and directories up to 2 levels deep in {shown}, excluding hidden items:\n{}",
            lines.join("\n")
        ))
    }

    /// Every file beneath `dir` with its size (for directory sizes).
    async fn sizes_beneath(&self, dir: &VPath) -> Step<Vec<(String, u64)>> {
        match self.backend.glob(&self.ctx, "*", dir, usize::MAX).await {
            Ok(found) => Ok(found
                .files
                .into_iter()
                .map(|f| (f.path, f.size.unwrap_or(0)))
                .collect()),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(e.into()),
        }
    }

    async fn collect(
        &self,
        dir: &VPath,
        relative: &str,
        depth: usize,
        files: &[(String, u64)],
        items: &mut Vec<(String, String)>,
    ) -> Step<()> {
        let listing = match self.backend.ls(&self.ctx, dir, MAX_VIEW_ENTRIES).await {
            Ok(listing) => listing,
            // The reference skips a directory it cannot list; a missing
            // /memories lists as empty.
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        let mut entries = listing.entries;
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        for entry in entries {
            if entry.name.starts_with('.') {
                continue;
            }
            let rel = if relative.is_empty() {
                entry.name.clone()
            } else {
                format!("{relative}/{}", entry.name)
            };
            if entry.is_dir {
                let path = VPath::parse(&entry.path).map_err(Stop::from)?;
                items.push((format_size(size_of_dir(&path, files)), format!("{rel}/")));
                if depth < 2 {
                    Box::pin(self.collect(&path, &rel, depth + 1, files, items)).await?;
                }
            } else {
                items.push((format_size(entry.size.unwrap_or(0)), rel));
            }
        }
        Ok(())
    }

    async fn create(&self, cx: &CallContext, shown: &str, text: &str) -> Step<String> {
        let path = memory_path(shown)?;
        if self.kind_of(&path).await?.is_some() {
            return refuse(format!("File {shown} already exists"));
        }
        self.backend
            .write(&self.mutation(cx, "create", &path), &path, text)
            .await?;
        Ok(format!("File created successfully at: {shown}"))
    }

    async fn str_replace(
        &self,
        cx: &CallContext,
        shown: &str,
        old: &str,
        new: &str,
    ) -> Step<String> {
        let path = memory_path(shown)?;
        let text = self.existing_file(&path, shown).await?;
        let count = text.matches(old).count();
        if count == 0 {
            return refuse(format!(
                "No replacement was performed, old_str `{old}` did not appear verbatim in {shown}."
            ));
        }
        if count > 1 {
            let lines: Vec<String> = occurrence_lines(&text, old)
                .iter()
                .map(|n| n.to_string())
                .collect();
            return refuse(format!(
                "No replacement was performed. Multiple occurrences of old_str `{old}` in lines: {}. Please ensure it is unique",
                lines.join(", ")
            ));
        }
        let at = text.find(old).unwrap_or(0);
        let changed = text[..at].matches('\n').count();
        let replaced = text.replacen(old, new, 1);
        self.backend
            .write(&self.mutation(cx, "str_replace", &path), &path, &replaced)
            .await?;
        let lines: Vec<&str> = replaced.split('\n').collect();
        let first = changed.saturating_sub(2);
        let last = (changed + 3).min(lines.len());
        let snippet: Vec<String> = (first..last).map(|i| numbered(i + 1, lines[i])).collect();
        Ok(format!(
            "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n{}",
            snippet.join("\n")
        ))
    }

    async fn insert(&self, cx: &CallContext, shown: &str, line: i64, text: &str) -> Step<String> {
        let path = memory_path(shown)?;
        let content = self.existing_file(&path, shown).await?;
        let mut lines = split_lines(&content);
        if line < 0 || line as usize > lines.len() {
            return refuse(format!(
                "Invalid `insert_line` parameter: {line}. It should be within the range [0, {}].",
                lines.len()
            ));
        }
        lines.insert(line as usize, text.trim_end_matches('\n'));
        let mut joined = lines.join("\n");
        if !joined.ends_with('\n') {
            joined.push('\n');
        }
        self.backend
            .write(&self.mutation(cx, "insert", &path), &path, &joined)
            .await?;
        Ok(format!("The file {shown} has been edited."))
    }

    async fn delete(&self, cx: &CallContext, shown: &str) -> Step<String> {
        let path = memory_path(shown)?;
        if path.as_str() == MEMORY_ROOT {
            return refuse("Cannot delete the /memories directory itself");
        }
        let ctx = self.mutation(cx, "delete", &path);
        match self.kind_of(&path).await? {
            None => return refuse(format!("The path {shown} does not exist")),
            Some(false) => self.backend.delete(&ctx, &path).await?,
            Some(true) => self.backend.delete_tree(&ctx, &path).await?,
        }
        Ok(format!("Successfully deleted {shown}"))
    }

    async fn rename(&self, cx: &CallContext, old_shown: &str, new_shown: &str) -> Step<String> {
        let old = memory_path(old_shown)?;
        let new = memory_path(new_shown)?;
        if self.kind_of(&new).await?.is_some() {
            return refuse(format!("The destination {new_shown} already exists"));
        }
        let Some(is_dir) = self.kind_of(&old).await? else {
            return refuse(format!("The path {old_shown} does not exist"));
        };
        if old.as_str() == MEMORY_ROOT || new.starts_with(&old) {
            return refuse(format!(
                "Cannot move {old_shown} into itself or a folder beneath it"
            ));
        }
        if is_dir {
            self.copy_tree(cx, &old, &new).await?;
            self.backend
                .delete_tree(&self.mutation(cx, "rename.remove", &old), &old)
                .await?;
        } else {
            self.copy_file(cx, &old, &new).await?;
            self.backend
                .delete(&self.mutation(cx, "rename.remove", &old), &old)
                .await?;
        }
        Ok(format!("Successfully renamed {old_shown} to {new_shown}"))
    }

    async fn copy_file(&self, cx: &CallContext, from: &VPath, to: &VPath) -> Step<()> {
        let bytes = self.backend.read_bytes(&self.ctx, from).await?;
        self.backend
            .write_bytes(&self.mutation(cx, "rename.copy", to), to, &bytes)
            .await?;
        Ok(())
    }

    /// Copies the tree `from` to `to`: every file, and every directory
    /// (so an empty one survives where the backend keeps empty directories).
    async fn copy_tree(&self, cx: &CallContext, from: &VPath, to: &VPath) -> Step<()> {
        if self.backend.capabilities().make_dir {
            self.backend
                .make_dir(&self.mutation(cx, "rename.mkdir", to), to, true)
                .await?;
        }
        let listing = self.backend.ls(&self.ctx, from, usize::MAX).await?;
        for entry in listing.entries {
            let source = VPath::parse(&entry.path)?;
            let target = to.join(&entry.name)?;
            if entry.is_dir {
                Box::pin(self.copy_tree(cx, &source, &target)).await?;
            } else {
                self.copy_file(cx, &source, &target).await?;
            }
        }
        Ok(())
    }
}

#[async_trait]
impl Tool for MemoryTool {
    fn name(&self) -> &str {
        MEMORY_TOOL
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn input_schema(&self) -> &Value {
        &self.schema
    }

    fn native_type(&self) -> Option<&str> {
        Some(MEMORY_TOOL_TYPE)
    }

    fn annotations(&self) -> ToolAnnotations {
        // `view` reads, `delete` destroys; as a whole the tool may do both,
        // and a `create` run twice is refused the second time.
        ToolAnnotations {
            read_only: false,
            destructive: true,
            idempotent: false,
        }
    }

    fn open_world(&self) -> bool {
        false
    }

    fn validate(&self, args: &Value) -> Result<(), String> {
        parse(args.clone()).map(|_| ())
    }

    fn locks(&self, _args: &Value) -> Vec<LockKey> {
        let mut keys = vec![LockKey::new(format!(
            "memory\u{1f}{}\u{1f}{MEMORY_ROOT}",
            self.ctx.tenant
        ))];
        if let Ok(root) = VPath::parse(MEMORY_ROOT) {
            keys.extend(self.backend.locks(&self.ctx, &root));
        }
        keys
    }

    async fn call(&self, cx: &CallContext, args: Value) -> Result<ToolOutput, Error> {
        let command = match parse(args) {
            Ok(command) => command,
            Err(refusal) => return Ok(ToolOutput::refused(refusal)),
        };
        match self.run(cx, command).await {
            Ok(text) => Ok(ToolOutput::ok(text)),
            Err(Stop::Refused(text)) => Ok(ToolOutput::refused(text)),
            Err(Stop::Failed(e)) => Err(e),
        }
    }
}

/// The command in `args`, or the refusal saying what is wrong with them.
fn parse(args: Value) -> Result<Command, String> {
    serde_json::from_value(args).map_err(|e| {
        format!(
            "The arguments for {MEMORY_TOOL} are not valid: {e}. Send a `command` (view, create, str_replace, insert, delete or rename) with its fields."
        )
    })
}

/// The JSON Schema of the commands: one object, `command` naming which.
fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "command": {
                "type": "string",
                "enum": ["view", "create", "str_replace", "insert", "delete", "rename"],
                "description": "The memory command to run."
            },
            "path": {"type": "string", "description": "A path starting with /memories (every command but rename)."},
            "view_range": {
                "type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2,
                "description": "view: [start, end] lines, 1-based, end -1 for the last line."
            },
            "file_text": {"type": "string", "description": "create: the new file's content."},
            "old_str": {"type": "string", "description": "str_replace: the text to replace, exactly once in the file."},
            "new_str": {"type": "string", "description": "str_replace: the text to put in its place."},
            "insert_line": {"type": "integer", "description": "insert: the line after which to insert (0 for the top)."},
            "insert_text": {"type": "string", "description": "insert: the text to insert."},
            "old_path": {"type": "string", "description": "rename: the path to move."},
            "new_path": {"type": "string", "description": "rename: where to move it."}
        },
        "required": ["command"]
    })
}

/// The memory path `shown` names, or the reference's refusal.
fn memory_path(shown: &str) -> Step<VPath> {
    if !shown.starts_with(MEMORY_ROOT) {
        return refuse(format!("Path must start with /memories, got: {shown}"));
    }
    let escape = || format!("Path {shown} would escape /memories directory");
    let Ok(path) = VPath::parse(shown) else {
        return refuse(escape());
    };
    let inside = path.as_str() == MEMORY_ROOT
        || path
            .as_str()
            .strip_prefix(MEMORY_ROOT)
            .is_some_and(|rest| rest.starts_with('/'));
    if inside { Ok(path) } else { refuse(escape()) }
}

fn missing(shown: &str) -> String {
    format!("The path {shown} does not exist. Please provide a valid path.")
}

/// A line as a view shows it: its number right-aligned in six columns, a tab, the line.
fn numbered(number: usize, line: &str) -> String {
    format!("{number:>LINE_NUMBER_WIDTH$}\t{line}")
}

/// Python's slice end `[..last]` over `len` items (a negative end counts from the back).
fn python_end(last: i64, len: usize) -> usize {
    if last < 0 {
        len.saturating_sub(last.unsigned_abs() as usize)
    } else {
        (last as usize).min(len)
    }
}

/// The bytes of the files beneath `dir`.
fn size_of_dir(dir: &VPath, files: &[(String, u64)]) -> u64 {
    let prefix = if dir.as_str() == "/" {
        "/".to_owned()
    } else {
        format!("{}/", dir.as_str())
    };
    files
        .iter()
        .filter(|(path, _)| path.starts_with(&prefix))
        .map(|(_, size)| size)
        .sum()
}

/// A size as the reference writes it: `0B`, `512B`, `4K`, `1.5M`.
fn format_size(bytes: u64) -> String {
    if bytes == 0 {
        return "0B".to_owned();
    }
    const UNITS: [&str; 4] = ["B", "K", "M", "G"];
    let bits = 64 - bytes.leading_zeros() as usize;
    let i = ((bits - 1) / 10).min(UNITS.len() - 1);
    let size = bytes as f64 / 1024f64.powi(i as i32);
    if size.fract() == 0.0 {
        format!("{}{}", size as u64, UNITS[i])
    } else {
        format!("{size:.1}{}", UNITS[i])
    }
}

/// The 1-based lines where `needle` starts, overlapping occurrences included (as the reference counts them).
fn occurrence_lines(text: &str, needle: &str) -> Vec<usize> {
    let mut lines = Vec::new();
    let mut start = 0;
    while start <= text.len() {
        let Some(found) = text[start..].find(needle) else {
            break;
        };
        let at = start + found;
        lines.push(text[..at].matches('\n').count() + 1);
        // The next search starts one character on.
        match text[at..].chars().next() {
            Some(c) => start = at + c.len_utf8(),
            None => break,
        }
    }
    lines
}

/// Python's `str.splitlines()`: lines split at every line boundary Python
/// knows, the boundaries dropped, no empty line after a final one.
fn split_lines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let boundary = matches!(
            c,
            '\n' | '\r'
                | '\u{0b}'
                | '\u{0c}'
                | '\u{1c}'
                | '\u{1d}'
                | '\u{1e}'
                | '\u{85}'
                | '\u{2028}'
                | '\u{2029}'
        );
        if boundary {
            lines.push(&text[start..i]);
            let mut end = i + c.len_utf8();
            if c == '\r' && chars.peek().is_some_and(|&(_, n)| n == '\n') {
                chars.next();
                end += 1;
            }
            start = end;
        }
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_the_reference_writes_them() {
        for (bytes, text) in [
            (0, "0B"),
            (1, "1B"),
            (1023, "1023B"),
            (1024, "1K"),
            (1536, "1.5K"),
            (4096, "4K"),
            (1_048_576, "1M"),
            (1_572_864, "1.5M"),
            (5 << 30, "5G"),
            (5 << 40, "5120G"),
        ] {
            assert_eq!(format_size(bytes), text, "{bytes}");
        }
    }

    #[test]
    fn lines_split_as_python_splits_them() {
        assert_eq!(split_lines(""), Vec::<&str>::new());
        assert_eq!(split_lines("a\nb\n"), vec!["a", "b"]);
        assert_eq!(split_lines("a\r\nb\rc"), vec!["a", "b", "c"]);
        assert_eq!(split_lines("a\n\nb"), vec!["a", "", "b"]);
        assert_eq!(split_lines("a\u{2028}b"), vec!["a", "b"]);
    }

    #[test]
    fn overlapping_occurrences_are_each_counted_by_line() {
        assert_eq!(occurrence_lines("aaa\naa", "aa"), vec![1, 1, 2]);
        assert_eq!(occurrence_lines("x\ny\nx", "x"), vec![1, 3]);
        assert_eq!(occurrence_lines("é\né", "é"), vec![1, 2]);
    }

    #[test]
    fn paths_outside_memories_are_refused_with_the_references_words() {
        let text = |p: &str| match memory_path(p) {
            Ok(path) => path.to_string(),
            Err(Stop::Refused(t)) => t,
            Err(Stop::Failed(e)) => panic!("{e}"),
        };
        assert_eq!(text("/memories"), "/memories");
        assert_eq!(text("/memories/a/../b.md"), "/memories/b.md");
        assert_eq!(
            text("/etc/passwd"),
            "Path must start with /memories, got: /etc/passwd"
        );
        assert_eq!(
            text("/memories/../etc/passwd"),
            "Path /memories/../etc/passwd would escape /memories directory"
        );
        assert_eq!(
            text("/memoriesx"),
            "Path /memoriesx would escape /memories directory"
        );
        assert_eq!(python_end(-1, 5), 4);
        assert_eq!(python_end(9, 5), 5);
    }
}
