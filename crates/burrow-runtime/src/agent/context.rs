//! `ContextFiles`: the project instructions users already keep (AGENTS.md, CLAUDE.md, ...) read through the backend for every request, bounded.

use std::sync::Arc;

use async_trait::async_trait;
use burrow_backend::{Backend, Error, ErrorKind, FileContext, VPath};

use super::InstructionProvider;
use crate::message::Message;

/// The files read by default, in order.
pub const DEFAULT_CONTEXT_FILES: [&str; 2] = ["/AGENTS.md", "/CLAUDE.md"];

/// Most characters kept of each file by default.
pub const DEFAULT_CONTEXT_CHARS: usize = 20_000;

/// Context files as an instruction provider: each file that exists is added
/// under a heading naming its path; a file longer than the bound is cut with
/// a note saying how much was left out and how to read it.
pub struct ContextFiles {
    backend: Arc<dyn Backend>,
    ctx: FileContext,
    paths: Vec<VPath>,
    max_chars: usize,
}

impl std::fmt::Debug for ContextFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContextFiles")
            .field("paths", &self.paths)
            .field("max_chars", &self.max_chars)
            .finish_non_exhaustive()
    }
}

impl ContextFiles {
    /// `/AGENTS.md` and `/CLAUDE.md` of `backend`, read as `ctx`.
    pub fn new(backend: Arc<dyn Backend>, ctx: FileContext) -> Self {
        Self {
            backend,
            ctx,
            paths: DEFAULT_CONTEXT_FILES
                .iter()
                .filter_map(|p| VPath::parse(p).ok())
                .collect(),
            max_chars: DEFAULT_CONTEXT_CHARS,
        }
    }

    /// The same provider reading `paths` instead (in order); a path that does
    /// not parse is refused.
    pub fn with_paths<'a>(
        mut self,
        paths: impl IntoIterator<Item = &'a str>,
    ) -> Result<Self, Error> {
        self.paths = paths
            .into_iter()
            .map(VPath::parse)
            .collect::<Result<_, _>>()?;
        Ok(self)
    }

    /// The same provider keeping at most `max_chars` characters of each file.
    pub fn with_max_chars(mut self, max_chars: usize) -> Self {
        self.max_chars = max_chars;
        self
    }
}

#[async_trait]
impl InstructionProvider for ContextFiles {
    async fn instructions(&self, _history: &[Message]) -> Result<Option<String>, Error> {
        let mut out = String::new();
        for path in &self.paths {
            let bytes = match self.backend.read_bytes(&self.ctx, path).await {
                Ok(bytes) => bytes,
                // A missing file, a directory or one too large to read is no context.
                Err(e) if e.is_refusal() => {
                    if e.kind() == ErrorKind::TooLarge {
                        push_section(
                            &mut out,
                            path,
                            &format!(
                                "({path} is too large to load; read parts of it with read_file.)"
                            ),
                        );
                    }
                    continue;
                }
                Err(e) => return Err(e),
            };
            let Ok(text) = std::str::from_utf8(&bytes) else {
                continue;
            };
            let body = bounded(path, text, self.max_chars);
            push_section(&mut out, path, &body);
        }
        Ok((!out.is_empty()).then_some(out))
    }
}

fn push_section(out: &mut String, path: &VPath, body: &str) {
    if !out.is_empty() {
        out.push_str("\n\n");
    }
    out.push_str(&format!(
        "Contents of {path} (project instructions):\n\n{body}"
    ));
}

/// `text` (read from `path`) cut to `max_chars` characters, with a note
/// saying how much was left out and how to read the rest.
pub(crate) fn bounded(path: &VPath, text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        None => text.to_owned(),
        Some((at, _)) => {
            let left = text[at..].chars().count();
            format!(
                "{}\n[... {path} is cut here: {left} more characters are not shown; read it with read_file for the rest.]",
                &text[..at]
            )
        }
    }
}

/// What reading `path` for the model gave: its text, nothing (missing, a
/// directory, not UTF-8), or a note that it is too large to load.
pub(crate) enum Loaded {
    Text(String),
    Absent,
    TooLarge,
}

/// Reads `path` through `backend`; a refusal is no text, a failure an `Err`.
pub(crate) async fn load(
    backend: &dyn Backend,
    ctx: &FileContext,
    path: &VPath,
) -> Result<Loaded, Error> {
    match backend.read_bytes(ctx, path).await {
        Ok(bytes) => Ok(match String::from_utf8(bytes) {
            Ok(text) => Loaded::Text(text),
            Err(_) => Loaded::Absent,
        }),
        Err(e) if e.is_refusal() && e.kind() == ErrorKind::TooLarge => Ok(Loaded::TooLarge),
        Err(e) if e.is_refusal() => Ok(Loaded::Absent),
        Err(e) => Err(e),
    }
}
