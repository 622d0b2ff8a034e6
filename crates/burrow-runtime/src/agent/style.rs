//! Output styles: instructions on how the agent answers (tone, format), given in code or kept as a markdown file in the workspace, bounded.
//!
//! A style file is `DIR/NAME.md` ([`DEFAULT_STYLE_DIR`] unless configured),
//! optionally opening with Claude Code's frontmatter (`---`, `name:`,
//! `description:`, `---`); the rest is the instructions. A style file is
//! read through the backend for every request, so an edit applies to the
//! next one; a style named but missing fails the run
//! (`instructions_failed`) rather than being silently left out
//! (docs/adr/0136).

use std::sync::Arc;

use async_trait::async_trait;
use burrow_backend::{Backend, Error, ErrorKind, FileContext, VPath};

use super::InstructionProvider;
use super::context::{Loaded, bounded, load};
use crate::message::Message;

/// Where style files live by default.
pub const DEFAULT_STYLE_DIR: &str = "/.burrow/output-styles";

/// Most characters of a style shown by default.
pub const DEFAULT_STYLE_CHARS: usize = 10_000;

/// An output style (seed 001's `OutputStyle`); as a provider, its content
/// under a heading naming it, cut at [`DEFAULT_STYLE_CHARS`] with a note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputStyle {
    /// Its name.
    pub name: String,
    /// What it is for (one line).
    pub description: String,
    /// The instructions.
    pub content: String,
}

impl OutputStyle {
    /// A style given in code.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        content: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            content: content.into(),
        }
    }

    /// The style `text` (a style file's content, frontmatter optional) holds;
    /// the frontmatter's `name` wins over `name`.
    pub fn parse(name: &str, text: &str) -> Self {
        let mut style = OutputStyle::new(name, "", text);
        let Some(rest) = text
            .strip_prefix("---\n")
            .or_else(|| text.strip_prefix("---\r\n"))
        else {
            return style;
        };
        let mut offset = text.len() - rest.len();
        for line in rest.split_inclusive('\n') {
            offset += line.len();
            let line = line.trim_end_matches(['\n', '\r']);
            if line.trim() == "---" {
                style.content = text[offset..].trim_start_matches(['\n', '\r']).to_owned();
                return style;
            }
            if let Some((key, value)) = line.split_once(':') {
                let value = value.trim().trim_matches('"').to_owned();
                match key.trim() {
                    "name" if !value.is_empty() => style.name = value,
                    "description" => style.description = value,
                    _ => {}
                }
            }
        }
        // No closing line: not frontmatter, all of it is the style.
        OutputStyle::new(name, "", text)
    }

    fn render(&self, source: &str, max_chars: usize, path: Option<&VPath>) -> String {
        let content = match path {
            Some(path) => bounded(path, &self.content, max_chars),
            None => cut(&self.content, max_chars),
        };
        format!(
            "Output style \"{}\"{source} (follow it in every answer):\n\n{content}",
            self.name
        )
    }
}

/// `text` cut to `max_chars` characters with a note.
fn cut(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        None => text.to_owned(),
        Some((at, _)) => format!(
            "{}\n[... the style is cut here: {} more characters are not shown.]",
            &text[..at],
            text[at..].chars().count()
        ),
    }
}

#[async_trait]
impl InstructionProvider for OutputStyle {
    async fn instructions(&self, _history: &[Message]) -> Result<Option<String>, Error> {
        Ok((!self.content.trim().is_empty()).then(|| self.render("", DEFAULT_STYLE_CHARS, None)))
    }
}

/// An output style kept as a file in the workspace, read for every request.
pub struct OutputStyleFile {
    backend: Arc<dyn Backend>,
    ctx: FileContext,
    name: String,
    path: VPath,
    max_chars: usize,
}

impl std::fmt::Debug for OutputStyleFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutputStyleFile")
            .field("name", &self.name)
            .field("path", &self.path)
            .field("max_chars", &self.max_chars)
            .finish_non_exhaustive()
    }
}

impl OutputStyleFile {
    /// The style `name`, kept in `DEFAULT_STYLE_DIR/NAME.md` of `backend`,
    /// read as `ctx`; a name that is not one path segment is refused.
    pub fn new(
        backend: Arc<dyn Backend>,
        ctx: FileContext,
        name: impl Into<String>,
    ) -> Result<Self, Error> {
        let name = name.into();
        let path = Self::path_in(DEFAULT_STYLE_DIR, &name)?;
        Ok(Self {
            backend,
            ctx,
            name,
            path,
            max_chars: DEFAULT_STYLE_CHARS,
        })
    }

    fn path_in(dir: &str, name: &str) -> Result<VPath, Error> {
        let fine = !name.is_empty()
            && name.len() <= 100
            && !name.starts_with('.')
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !fine {
            return Err(Error::refusal(
                ErrorKind::InvalidArgument,
                format!(
                    "the output style name {name:?} cannot name a file: use 1 to 100 letters, digits, '-', '_' or '.', not starting with '.'."
                ),
            ));
        }
        VPath::parse(dir)?.join(&format!("{name}.md"))
    }

    /// The same style, kept under `dir` instead.
    pub fn with_dir(mut self, dir: &str) -> Result<Self, Error> {
        self.path = Self::path_in(dir, &self.name)?;
        Ok(self)
    }

    /// The same style, at most `max_chars` characters of it shown.
    pub fn with_max_chars(mut self, max_chars: usize) -> Self {
        self.max_chars = max_chars;
        self
    }

    /// The style file's path.
    pub fn path(&self) -> &VPath {
        &self.path
    }

    /// The style as the file holds it now; a missing file is a refusal naming it.
    pub async fn load(&self) -> Result<OutputStyle, Error> {
        match load(self.backend.as_ref(), &self.ctx, &self.path).await? {
            Loaded::Text(text) => Ok(OutputStyle::parse(&self.name, &text)),
            Loaded::Absent => Err(Error::refusal(
                ErrorKind::NotFound,
                format!(
                    "the output style {} has no text file at {}.",
                    self.name, self.path
                ),
            )),
            Loaded::TooLarge => Err(Error::refusal(
                ErrorKind::TooLarge,
                format!("the output style file {} is too large to load.", self.path),
            )),
        }
    }
}

#[async_trait]
impl InstructionProvider for OutputStyleFile {
    async fn instructions(&self, _history: &[Message]) -> Result<Option<String>, Error> {
        let style = self.load().await?;
        if style.content.trim().is_empty() {
            return Ok(None);
        }
        let source = format!(" (from {})", self.path);
        Ok(Some(style.render(
            &source,
            self.max_chars,
            Some(&self.path),
        )))
    }
}
