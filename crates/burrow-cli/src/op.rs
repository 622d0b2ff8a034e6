//! `Op`: one operation of the contract, built from a subcommand or a batch line, and run against a backend.

use std::io::Read;
use std::path::Path;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use burrow::{Backend, Error, FileContext, GrepQuery, Result, VPath};
use serde::Deserialize;

use crate::cli::Command;
use crate::output::Output;

/// Default `--limit` of `ls` and `glob`.
pub const DEFAULT_LIST_LIMIT: usize = 1000;
/// Default `--limit` of `grep`.
pub const DEFAULT_MATCH_LIMIT: usize = 1000;
/// Default `--limit` of `read`.
pub const DEFAULT_READ_LIMIT: usize = 2000;

/// One operation, with its input already in hand.
///
/// The subcommands and the lines of `burrow batch` both become an `Op`, so
/// the two cannot drift apart: a batch line prints exactly what
/// `burrow --json` prints for the same operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Ls {
        path: String,
        limit: usize,
    },
    Read {
        path: String,
        offset: usize,
        limit: usize,
    },
    Cat {
        path: String,
    },
    Write {
        path: String,
        content: Vec<u8>,
    },
    Edit {
        path: String,
        old: String,
        new: String,
        replace_all: bool,
    },
    Rm {
        path: String,
    },
    Glob {
        pattern: String,
        under: String,
        limit: usize,
    },
    Grep {
        pattern: String,
        under: String,
        include: Option<String>,
        fixed: bool,
        ignore_case: bool,
        limit: usize,
    },
    Exec {
        command: String,
        timeout: Option<u64>,
    },
}

impl Op {
    /// The operation a subcommand asks for, reading `write`'s bytes from its
    /// FILE or stdin. `None` for `batch`, which is not one operation.
    ///
    /// An unreadable FILE is a failure (exit 2): the input broke, not the contract.
    pub fn from_command(command: Command) -> Result<Option<Op>> {
        let op = match command {
            Command::Ls { path, limit } => Op::Ls { path, limit },
            Command::Read {
                path,
                offset,
                limit,
            } => Op::Read {
                path,
                offset,
                limit,
            },
            Command::Cat { path } => Op::Cat { path },
            Command::Write { path, file } => Op::Write {
                path,
                content: read_input(file.as_deref())?,
            },
            Command::Edit {
                path,
                old,
                new,
                all,
            } => Op::Edit {
                path,
                old,
                new,
                replace_all: all,
            },
            Command::Rm { path } => Op::Rm { path },
            Command::Glob {
                pattern,
                under,
                limit,
            } => Op::Glob {
                pattern,
                under,
                limit,
            },
            Command::Grep {
                pattern,
                under,
                include,
                fixed,
                ignore_case,
                limit,
            } => Op::Grep {
                pattern,
                under,
                include,
                fixed,
                ignore_case,
                limit,
            },
            Command::Exec { command, timeout } => Op::Exec { command, timeout },
            Command::Batch => return Ok(None),
            // `burrow mcp` is served by main before any operation is built.
            #[cfg(feature = "mcp")]
            Command::Mcp => {
                return Err(Error::invalid_argument(
                    "mcp is a server, not a file operation.",
                ));
            }
        };
        Ok(Some(op))
    }

    /// The operation one batch line asks for; a line that does not parse is
    /// an InvalidArgument refusal naming what is wrong.
    pub fn from_json_line(line: &str) -> Result<Op> {
        let line: Line = serde_json::from_str(line)
            .map_err(|e| Error::invalid_argument(format!("not a batch operation: {e}.")))?;
        line.into_op()
    }

    /// Runs the operation on `backend` as `ctx`.
    pub async fn run(self, backend: &dyn Backend, ctx: &FileContext) -> Result<Output> {
        Ok(match self {
            Op::Ls { path, limit } => {
                let listing = backend.ls(ctx, &VPath::parse(&path)?, limit).await?;
                Output::Listing { listing, limit }
            }
            Op::Read {
                path,
                offset,
                limit,
            } => Output::Window(
                backend
                    .read(ctx, &VPath::parse(&path)?, offset, limit)
                    .await?,
            ),
            Op::Cat { path } => {
                Output::Bytes(backend.read_bytes(ctx, &VPath::parse(&path)?).await?)
            }
            Op::Write { path, content } => {
                let result = backend
                    .write_bytes(ctx, &VPath::parse(&path)?, &content)
                    .await?;
                Output::Written {
                    result,
                    bytes: content.len(),
                }
            }
            Op::Edit {
                path,
                old,
                new,
                replace_all,
            } => Output::Edited(
                backend
                    .edit(ctx, &VPath::parse(&path)?, &old, &new, replace_all)
                    .await?,
            ),
            Op::Rm { path } => {
                let path = VPath::parse(&path)?;
                backend.delete(ctx, &path).await?;
                Output::Removed(path.as_str().to_owned())
            }
            Op::Glob {
                pattern,
                under,
                limit,
            } => {
                let result = backend
                    .glob(ctx, &pattern, &VPath::parse(&under)?, limit)
                    .await?;
                Output::Globbed { result, limit }
            }
            Op::Grep {
                pattern,
                under,
                include,
                fixed,
                ignore_case,
                limit,
            } => {
                let query = GrepQuery {
                    pattern,
                    fixed_strings: fixed,
                    ignore_case,
                    include,
                };
                let result = backend
                    .grep(ctx, &query, &VPath::parse(&under)?, limit)
                    .await?;
                Output::Grepped { result, limit }
            }
            Op::Exec { command, timeout } => {
                let Some(sandbox) = backend.as_sandbox() else {
                    return Err(Error::unsupported(
                        "running commands; exec needs a sandbox backend such as docker:IMAGE",
                    ));
                };
                let timeout = timeout.map(Duration::from_secs);
                Output::Executed(sandbox.execute(ctx, &command, timeout).await?)
            }
        })
    }
}

/// The bytes for `write`: from the host file `file`, or stdin for `-` or none.
fn read_input(file: Option<&Path>) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    match file {
        None => read_stdin(&mut bytes)?,
        Some(path) if path.as_os_str() == "-" => read_stdin(&mut bytes)?,
        Some(path) => {
            bytes = std::fs::read(path)
                .map_err(|e| Error::failure(format!("cannot read {}: {e}", path.display()), e))?;
        }
    }
    Ok(bytes)
}

fn read_stdin(into: &mut Vec<u8>) -> Result<()> {
    std::io::stdin()
        .lock()
        .read_to_end(into)
        .map(drop)
        .map_err(|e| Error::failure(format!("cannot read stdin: {e}"), e))
}

/// One line of `burrow batch`, as JSON: the subcommands' argument and
/// option names as fields (DESIGN.md §7), with `replace_all` for `--all`
/// and `content` / `content_b64` for `write`'s bytes.
#[derive(Debug, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase", deny_unknown_fields)]
enum Line {
    Ls {
        #[serde(default = "root")]
        path: String,
        #[serde(default = "list_limit")]
        limit: usize,
    },
    Read {
        path: String,
        #[serde(default)]
        offset: usize,
        #[serde(default = "read_limit")]
        limit: usize,
    },
    Cat {
        path: String,
    },
    Write {
        path: String,
        #[serde(default)]
        content: Option<String>,
        #[serde(default)]
        content_b64: Option<String>,
    },
    Edit {
        path: String,
        old: String,
        new: String,
        #[serde(default, alias = "all")]
        replace_all: bool,
    },
    Rm {
        path: String,
    },
    Glob {
        pattern: String,
        #[serde(default = "root")]
        under: String,
        #[serde(default = "list_limit")]
        limit: usize,
    },
    Grep {
        pattern: String,
        #[serde(default = "root")]
        under: String,
        #[serde(default)]
        include: Option<String>,
        #[serde(default)]
        fixed: bool,
        #[serde(default)]
        ignore_case: bool,
        #[serde(default = "match_limit")]
        limit: usize,
    },
    Exec {
        command: String,
        #[serde(default)]
        timeout: Option<u64>,
    },
}

fn root() -> String {
    "/".to_owned()
}
fn list_limit() -> usize {
    DEFAULT_LIST_LIMIT
}
fn read_limit() -> usize {
    DEFAULT_READ_LIMIT
}
fn match_limit() -> usize {
    DEFAULT_MATCH_LIMIT
}

impl Line {
    fn into_op(self) -> Result<Op> {
        Ok(match self {
            Line::Ls { path, limit } => Op::Ls { path, limit },
            Line::Read {
                path,
                offset,
                limit,
            } => Op::Read {
                path,
                offset,
                limit,
            },
            Line::Cat { path } => Op::Cat { path },
            Line::Write {
                path,
                content,
                content_b64,
            } => {
                let content = match (content, content_b64) {
                    (Some(text), None) => text.into_bytes(),
                    (None, Some(b64)) => BASE64.decode(b64.as_bytes()).map_err(|e| {
                        Error::invalid_argument(format!("content_b64 is not valid base64 ({e})."))
                    })?,
                    _ => {
                        return Err(Error::invalid_argument(
                            "write needs exactly one of content (text) or content_b64 (bytes).",
                        ));
                    }
                };
                Op::Write { path, content }
            }
            Line::Edit {
                path,
                old,
                new,
                replace_all,
            } => Op::Edit {
                path,
                old,
                new,
                replace_all,
            },
            Line::Rm { path } => Op::Rm { path },
            Line::Glob {
                pattern,
                under,
                limit,
            } => Op::Glob {
                pattern,
                under,
                limit,
            },
            Line::Grep {
                pattern,
                under,
                include,
                fixed,
                ignore_case,
                limit,
            } => Op::Grep {
                pattern,
                under,
                include,
                fixed,
                ignore_case,
                limit,
            },
            Line::Exec { command, timeout } => Op::Exec { command, timeout },
        })
    }
}
