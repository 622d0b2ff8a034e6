//! `MemoryFiles`: what an agent remembers across runs, one file per agent name under a configurable directory, read through the backend for every request, bounded.
//!
//! The file of agent `NAME` is `DIR/NAME/MEMORY.md` (`DIR` is
//! [`DEFAULT_MEMORY_DIR`] unless configured). The agent keeps it with the
//! ordinary file tools; each request shows what it holds now, so a change
//! made in one turn is seen in the next (docs/adr/0136).

use std::sync::Arc;

use async_trait::async_trait;
use burrow_backend::{Backend, Error, ErrorKind, FileContext, VPath};

use super::InstructionProvider;
use super::context::{Loaded, bounded, load};
use crate::message::Message;

/// Where memory files live by default.
pub const DEFAULT_MEMORY_DIR: &str = "/.burrow/memory";

/// The file name of each agent's memory in its directory.
pub const MEMORY_FILE_NAME: &str = "MEMORY.md";

/// Most characters of a memory file shown by default.
pub const DEFAULT_MEMORY_CHARS: usize = 20_000;

/// A loaded memory file (seed 001's `MemoryFile`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryFile {
    /// The agent it belongs to (`main`, `code-reviewer`, ...).
    pub agent_name: String,
    /// Its path in the backend.
    pub path: String,
    /// Its content (whole, as read).
    pub content: String,
}

/// The memory of one agent as an instruction provider.
pub struct MemoryFiles {
    backend: Arc<dyn Backend>,
    ctx: FileContext,
    agent_name: String,
    path: VPath,
    max_chars: usize,
}

impl std::fmt::Debug for MemoryFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryFiles")
            .field("agent_name", &self.agent_name)
            .field("path", &self.path)
            .field("max_chars", &self.max_chars)
            .finish_non_exhaustive()
    }
}

/// Refuses an agent name that is not one path segment of letters, digits, `-`, `_` and `.`.
fn check_name(agent_name: &str) -> Result<(), Error> {
    let fine = !agent_name.is_empty()
        && agent_name.len() <= 100
        && agent_name != "."
        && agent_name != ".."
        && agent_name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if fine {
        Ok(())
    } else {
        Err(Error::refusal(
            ErrorKind::InvalidArgument,
            format!(
                "the agent name {agent_name:?} cannot name a memory file: use 1 to 100 letters, digits, '-', '_' or '.' (not \".\" or \"..\")."
            ),
        ))
    }
}

impl MemoryFiles {
    /// The memory of agent `agent_name` in `backend` (under
    /// [`DEFAULT_MEMORY_DIR`]), read as `ctx`; a name that is not one path
    /// segment is refused.
    pub fn new(
        backend: Arc<dyn Backend>,
        ctx: FileContext,
        agent_name: impl Into<String>,
    ) -> Result<Self, Error> {
        let agent_name = agent_name.into();
        check_name(&agent_name)?;
        let path = VPath::parse(DEFAULT_MEMORY_DIR)?
            .join(&agent_name)?
            .join(MEMORY_FILE_NAME)?;
        Ok(Self {
            backend,
            ctx,
            agent_name,
            path,
            max_chars: DEFAULT_MEMORY_CHARS,
        })
    }

    /// The same memory kept under `dir` instead (`dir/NAME/MEMORY.md`).
    pub fn with_dir(mut self, dir: &str) -> Result<Self, Error> {
        self.path = VPath::parse(dir)?
            .join(&self.agent_name)?
            .join(MEMORY_FILE_NAME)?;
        Ok(self)
    }

    /// The same memory, at most `max_chars` characters of it shown.
    pub fn with_max_chars(mut self, max_chars: usize) -> Self {
        self.max_chars = max_chars;
        self
    }

    /// The memory file's path.
    pub fn path(&self) -> &VPath {
        &self.path
    }

    /// The memory file as it is now; `None` when there is none yet.
    pub async fn load(&self) -> Result<Option<MemoryFile>, Error> {
        Ok(
            match load(self.backend.as_ref(), &self.ctx, &self.path).await? {
                Loaded::Text(content) => Some(MemoryFile {
                    agent_name: self.agent_name.clone(),
                    path: self.path.to_string(),
                    content,
                }),
                Loaded::Absent | Loaded::TooLarge => None,
            },
        )
    }
}

#[async_trait]
impl InstructionProvider for MemoryFiles {
    async fn instructions(&self, _history: &[Message]) -> Result<Option<String>, Error> {
        let path = &self.path;
        let body = match load(self.backend.as_ref(), &self.ctx, path).await? {
            Loaded::Absent => return Ok(None),
            Loaded::Text(text) if text.trim().is_empty() => return Ok(None),
            Loaded::Text(text) => bounded(path, &text, self.max_chars),
            Loaded::TooLarge => {
                format!("({path} is too large to load; read parts of it with read_file.)")
            }
        };
        Ok(Some(format!(
            "Your memory (agent {}, kept in {path}; change it with the file tools to remember something for later runs):\n\n{body}",
            self.agent_name
        )))
    }
}
