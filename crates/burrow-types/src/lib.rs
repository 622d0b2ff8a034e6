//! Plain data types shared by every burrow crate, with JSON forms identical to the Python ones.
//!
//! # Key design decision
//!
//! These types are the wire: a `FileInfo` or a `FileData` document written by the
//! Python libraries burrow interoperates with must load here unchanged, and what
//! burrow writes must load there. So field names, optional-field handling (absent,
//! not `null`, where the Python `TypedDict` is `total=False`) and defaults follow
//! the Python definitions exactly, and this crate knows nothing of tokio, I/O or
//! HTTP: it is data and serde, nothing else.
//!
//! Three rules carry that decision through every module:
//!
//! - **Each Python kind maps to one serde shape.** A `TypedDict` key marked
//!   `NotRequired` is `Option` + `skip_serializing_if`; a dataclass or pydantic
//!   field is always written (`None` as `null`) and takes the Python default when
//!   missing on input; a `str` enum is a `snake_case` Rust enum. Fields that hold
//!   live Python objects (a hook's handler, a subagent's toolsets) have no JSON
//!   form and are left out. Timestamps are RFC 3339 strings.
//! - **The files document is read leniently and written strictly**
//!   ([`parse_files_document`], [`files_document_to_json`]). Legacy Python
//!   documents hold lone surrogates that `serde_json` refuses, so the
//!   [`filedata`] module reads them with a small decoder of its own; what burrow
//!   writes is strict UTF-8 JSON with no `\u0000`, which PostgreSQL `jsonb` takes.
//! - **Interop is proven against the real Python library**, by fixtures its own
//!   `StateBackend` wrote and by a check that it reads what burrow writes
//!   (`tests/fixtures/python/make_fixtures.py`).

mod agent;
mod file;
pub mod filedata;
mod harness;
mod hooks;
mod runtime_config;
mod shown;
mod skill;
mod team;
mod todo;
mod upload;

pub use agent::{
    CompiledSubAgent, ExecutionMode, SubAgentConfig, TaskComplexity, TaskHandle, TaskPriority,
    TaskStatus,
};
pub use file::{EditResult, ExecuteResponse, FileInfo, GrepMatch, WriteResult};
pub use filedata::{
    DocumentWriter, FileData, FileDataError, FilesDocument, files_document_to_json,
    parse_files_document, try_files_document_to_json,
};
pub use harness::{Checkpoint, ContextFile, MemoryFile, OutputStyle};
pub use hooks::{DEFAULT_HOOK_TIMEOUT_SECS, Hook, HookEvent};
pub use runtime_config::{DEFAULT_WORK_DIR, PackageManager, RuntimeConfig};
pub use shown::{Shown, shown};
pub use skill::{Skill, SkillDirectory, SkillFrontmatter};
pub use team::{DEFAULT_TEAM_MEMBER_MODEL, SharedTodoItem, TeamMember, TeamMessage};
pub use todo::{Todo, TodoStatus};
pub use upload::UploadedFile;
