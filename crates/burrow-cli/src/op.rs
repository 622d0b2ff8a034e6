//! `Op`: one operation of the contract, built from a subcommand or a batch line, and run against a backend.

use std::io::Read;
use std::path::Path;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use burrow::{Backend, Error, FileContext, GrepQuery, Result, VPath};
use serde_json::Value;

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
        recursive: bool,
    },
    Mkdir {
        path: String,
        parents: bool,
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
    /// `write` reads at most `max_input` bytes and one more: longer input
    /// is refused as TooLarge without being read whole (the backend would
    /// refuse it anyway), so memory stays bounded even for /dev/zero.
    /// An unreadable FILE is a failure (exit 2): the input broke, not the contract.
    pub fn from_command(command: Command, max_input: u64) -> Result<Option<Op>> {
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
                content: read_input(file.as_deref(), max_input)?,
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
            Command::Rm { path, recursive } => Op::Rm { path, recursive },
            Command::Mkdir { path, parents } => Op::Mkdir { path, parents },
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
            Command::Mcp { .. } => {
                return Err(Error::invalid_argument(
                    "mcp is a server, not a file operation.",
                ));
            }
            // `burrow state compact` is run by main before any backend is opened.
            #[cfg(feature = "state")]
            Command::State(_) => {
                return Err(Error::invalid_argument(
                    "state compact is housekeeping of a state file, not a file operation.",
                ));
            }
            // `burrow docker gc` is run by main before any backend is opened.
            #[cfg(feature = "docker")]
            Command::Docker(_) => {
                return Err(Error::invalid_argument(
                    "docker gc is engine housekeeping, not a file operation.",
                ));
            }
            // `burrow run` is run by main before any operation is built.
            #[cfg(feature = "run")]
            Command::Run { .. } => {
                return Err(Error::invalid_argument(
                    "run runs an agent, not a file operation.",
                ));
            }
            // `burrow thread ...` is run by main before any operation is built.
            #[cfg(feature = "run")]
            Command::Thread(_) => {
                return Err(Error::invalid_argument(
                    "thread works on session threads, not a file operation.",
                ));
            }
            // `burrow artifact ...` is run by main before any operation is built.
            #[cfg(feature = "artifacts")]
            Command::Artifact(_) => {
                return Err(Error::invalid_argument(
                    "artifact works on a session's artifact workspace, not a file operation.",
                ));
            }
            // `burrow serve` is run by main before any operation is built.
            #[cfg(feature = "serve")]
            Command::Serve { .. } => {
                return Err(Error::invalid_argument(
                    "serve serves session threads over HTTP, not a file operation.",
                ));
            }
        };
        Ok(Some(op))
    }

    /// The operation one batch line asks for; a line that does not parse is
    /// an InvalidArgument refusal naming what is wrong.
    pub fn from_json_line(line: &str) -> Result<Op> {
        parse_line(line)
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
            Op::Rm { path, recursive } => {
                let path = VPath::parse(&path)?;
                if recursive {
                    backend.delete_tree(ctx, &path).await?;
                } else {
                    backend.delete(ctx, &path).await?;
                }
                Output::Removed(path.as_str().to_owned())
            }
            Op::Mkdir { path, parents } => {
                let path = VPath::parse(&path)?;
                backend.make_dir(ctx, &path, parents).await?;
                Output::Made(path.as_str().to_owned())
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
                let timeout = check_timeout(timeout)?;
                let Some(sandbox) = backend.as_sandbox() else {
                    return Err(Error::unsupported(
                        "running commands; exec needs a sandbox backend such as docker:IMAGE",
                    ));
                };
                Output::Executed(sandbox.execute(ctx, &command, timeout).await?)
            }
        })
    }
}

/// The bytes for `write`: from the host file `file`, or stdin for `-` or
/// none; at most `max` bytes, or a TooLarge refusal.
fn read_input(file: Option<&Path>, max: u64) -> Result<Vec<u8>> {
    match file {
        None => read_bounded(std::io::stdin().lock(), max, "stdin"),
        Some(path) if path.as_os_str() == "-" => {
            read_bounded(std::io::stdin().lock(), max, "stdin")
        }
        Some(path) => {
            let shown = path.display();
            let file = std::fs::File::open(path)
                .map_err(|e| Error::failure(format!("cannot read {shown}: {e}"), e))?;
            read_bounded(file, max, &shown.to_string())
        }
    }
}

/// All of `input` when it holds at most `max` bytes; reads `max + 1` bytes
/// at most, so an endless input is refused rather than held.
fn read_bounded(input: impl Read, max: u64, name: &str) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    input
        .take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| Error::failure(format!("cannot read {name}: {e}"), e))?;
    if bytes.len() as u64 > max {
        return Err(Error::refusal(
            burrow::ErrorKind::TooLarge,
            format!(
                "the input ({name}) is larger than the largest file this backend takes ({max} bytes); nothing was written."
            ),
        ));
    }
    Ok(bytes)
}

/// The ops a batch line can name, for messages.
const OPS: &str = "ls, read, cat, write, edit, rm, mkdir, glob, grep, exec";

/// The fields of one batch line, taken one by one with their types checked,
/// so a refusal names the op and the field at fault. `null` counts as absent.
struct Fields {
    op: String,
    map: serde_json::Map<String, Value>,
    allowed: &'static [&'static str],
}

impl Fields {
    fn take(&mut self, name: &str) -> Option<Value> {
        match self.map.remove(name) {
            None | Some(Value::Null) => None,
            Some(value) => Some(value),
        }
    }

    fn wrong(&self, name: &str, wanted: &str, got: &Value) -> Error {
        Error::invalid_argument(format!(
            "{}: the field `{name}` must be {wanted}, not {}.",
            self.op,
            kind_of(got)
        ))
    }

    fn string(&mut self, name: &str) -> Result<Option<String>> {
        match self.take(name) {
            None => Ok(None),
            Some(Value::String(text)) => Ok(Some(text)),
            Some(other) => Err(self.wrong(name, "a string", &other)),
        }
    }

    fn needed(&mut self, name: &str) -> Result<String> {
        self.string(name)?.ok_or_else(|| {
            Error::invalid_argument(format!("{} needs the field `{name}` (a string).", self.op))
        })
    }

    fn number(&mut self, name: &str) -> Result<Option<u64>> {
        match self.take(name) {
            None => Ok(None),
            Some(Value::Number(n)) if n.as_u64().is_some() => Ok(n.as_u64()),
            Some(other) => Err(self.wrong(name, "a whole number of at least 0", &other)),
        }
    }

    fn count(&mut self, name: &str, default: usize) -> Result<usize> {
        // A count beyond usize means "as many as there are".
        Ok(self
            .number(name)?
            .map_or(default, |n| usize::try_from(n).unwrap_or(usize::MAX)))
    }

    fn flag(&mut self, name: &str) -> Result<bool> {
        match self.take(name) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(b),
            Some(other) => Err(self.wrong(name, "true or false", &other)),
        }
    }

    /// Refuses any field left over.
    fn done(self) -> Result<()> {
        match self.map.keys().next() {
            None => Ok(()),
            Some(extra) => Err(Error::invalid_argument(format!(
                "{} has no field `{extra}`; its fields are: {}.",
                self.op,
                self.allowed.join(", ")
            ))),
        }
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.as_i64().is_some_and(|n| n < 0) => "a negative number",
        Value::Number(n) if n.as_f64().is_some_and(|f| f.fract() == 0.0) && n.is_f64() => {
            "a number too large"
        }
        Value::Number(n) if n.is_f64() => "a fraction",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The op one batch line (a JSON object) names, with its fields: the
/// subcommands' argument and option names, `replace_all`
/// (or `all`) for `--all`, and `content` / `content_b64` for `write`'s bytes.
fn parse_line(line: &str) -> Result<Op> {
    match quick_line(line) {
        Some(op) => Ok(op),
        None => parse_value_line(line),
    }
}

/// [`parse_line`] through a `serde_json::Value`, each field checked by itself.
fn parse_value_line(line: &str) -> Result<Op> {
    let value: Value = serde_json::from_str(line)
        .map_err(|e| Error::invalid_argument(format!("not a JSON value ({e}).")))?;
    let Value::Object(mut map) = value else {
        return Err(Error::invalid_argument(format!(
            "a batch line must be a JSON object with an \"op\", not {}.",
            kind_of(&value)
        )));
    };
    let op = match map.remove("op") {
        Some(Value::String(op)) => op,
        None | Some(Value::Null) => {
            return Err(Error::invalid_argument(format!(
                "a batch line needs \"op\": one of {OPS}."
            )));
        }
        Some(other) => {
            return Err(Error::invalid_argument(format!(
                "\"op\" must be a string (one of {OPS}), not {}.",
                kind_of(&other)
            )));
        }
    };
    let allowed: &'static [&'static str] = match op.as_str() {
        "ls" => &["path", "limit"],
        "read" => &["path", "offset", "limit"],
        "cat" => &["path"],
        "rm" => &["path", "recursive"],
        "mkdir" => &["path", "parents"],
        "write" => &["path", "content", "content_b64"],
        "edit" => &["path", "old", "new", "replace_all"],
        "glob" => &["pattern", "under", "limit"],
        "grep" => &[
            "pattern",
            "under",
            "include",
            "fixed",
            "ignore_case",
            "limit",
        ],
        "exec" => &["command", "timeout"],
        _ => {
            let shown: String = op.chars().take(100).collect();
            return Err(Error::invalid_argument(format!(
                "unknown op {shown:?}; the ops are {OPS}."
            )));
        }
    };
    let mut f = Fields { op, map, allowed };
    let op = match f.op.as_str() {
        "ls" => Op::Ls {
            path: f.string("path")?.unwrap_or_else(root),
            limit: f.count("limit", DEFAULT_LIST_LIMIT)?,
        },
        "read" => Op::Read {
            path: f.needed("path")?,
            offset: f.count("offset", 0)?,
            limit: f.count("limit", DEFAULT_READ_LIMIT)?,
        },
        "cat" => Op::Cat {
            path: f.needed("path")?,
        },
        "rm" => Op::Rm {
            path: f.needed("path")?,
            recursive: f.flag("recursive")?,
        },
        "mkdir" => Op::Mkdir {
            path: f.needed("path")?,
            parents: f.flag("parents")?,
        },
        "write" => {
            let path = f.needed("path")?;
            let content = match (f.string("content")?, f.string("content_b64")?) {
                (Some(text), None) => text.into_bytes(),
                (None, Some(b64)) => BASE64.decode(b64.as_bytes()).map_err(|e| {
                    Error::invalid_argument(format!(
                        "write: content_b64 is not valid base64 ({e})."
                    ))
                })?,
                _ => {
                    return Err(Error::invalid_argument(
                        "write needs exactly one of content (text) or content_b64 (bytes).",
                    ));
                }
            };
            Op::Write { path, content }
        }
        "edit" => {
            let path = f.needed("path")?;
            let old = f.needed("old")?;
            let new = f.needed("new")?;
            let replace_all = f.flag("replace_all")? | f.flag("all")?;
            Op::Edit {
                path,
                old,
                new,
                replace_all,
            }
        }
        "glob" => Op::Glob {
            pattern: f.needed("pattern")?,
            under: f.string("under")?.unwrap_or_else(root),
            limit: f.count("limit", DEFAULT_LIST_LIMIT)?,
        },
        "grep" => Op::Grep {
            pattern: f.needed("pattern")?,
            under: f.string("under")?.unwrap_or_else(root),
            include: f.string("include")?,
            fixed: f.flag("fixed")?,
            ignore_case: f.flag("ignore_case")?,
            limit: f.count("limit", DEFAULT_MATCH_LIMIT)?,
        },
        _ => Op::Exec {
            command: f.needed("command")?,
            timeout: f.number("timeout")?,
        },
    };
    f.done()?;
    Ok(op)
}

/// The fields of the commonest batch lines (`write` of text, `read`,
/// `edit`), parsed straight into their types: no `Value` tree, no map.
/// Anything it does not take whole (another op, a field of another op, a
/// wrong type, a duplicate key, bad JSON) goes the way of [`parse_line`]'s
/// checks, which give the refusal; so both ways take the same lines to the
/// same `Op`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct QuickLine {
    op: String,
    path: Option<String>,
    content: Option<String>,
    offset: Option<u64>,
    limit: Option<u64>,
    old: Option<String>,
    new: Option<String>,
    replace_all: Option<bool>,
    all: Option<bool>,
}

/// The op of `line` when [`QuickLine`] takes it whole; `None` otherwise.
fn quick_line(line: &str) -> Option<Op> {
    let q: QuickLine = serde_json::from_str(line).ok()?;
    let count = |n: Option<u64>, default: usize| {
        n.map_or(default, |n| usize::try_from(n).unwrap_or(usize::MAX))
    };
    match q.op.as_str() {
        "write"
            if q.offset.is_none()
                && q.limit.is_none()
                && q.old.is_none()
                && q.new.is_none()
                && q.replace_all.is_none()
                && q.all.is_none() =>
        {
            Some(Op::Write {
                path: q.path?,
                content: q.content?.into_bytes(),
            })
        }
        "read"
            if q.content.is_none()
                && q.old.is_none()
                && q.new.is_none()
                && q.replace_all.is_none()
                && q.all.is_none() =>
        {
            Some(Op::Read {
                path: q.path?,
                offset: count(q.offset, 0),
                limit: count(q.limit, DEFAULT_READ_LIMIT),
            })
        }
        "edit" if q.content.is_none() && q.offset.is_none() && q.limit.is_none() => {
            Some(Op::Edit {
                path: q.path?,
                old: q.old?,
                new: q.new?,
                replace_all: q.replace_all.unwrap_or(false) | q.all.unwrap_or(false),
            })
        }
        _ => None,
    }
}

fn root() -> String {
    "/".to_owned()
}

/// Refuses a timeout of 0 (a command that may not run at all) and one too
/// large to add to a clock (one rule for the CLI, batch and MCP).
pub fn check_timeout(timeout: Option<u64>) -> Result<Option<Duration>> {
    match timeout {
        None => Ok(None),
        Some(0) => Err(Error::invalid_argument(
            "the timeout must be at least 1 second; leave it out for the default of 120 seconds.",
        )),
        Some(s) if s > MAX_TIMEOUT_SECS => Err(Error::invalid_argument(format!(
            "the timeout must be at most {MAX_TIMEOUT_SECS} seconds (7 days)."
        ))),
        Some(s) => Ok(Some(Duration::from_secs(s))),
    }
}

/// The longest `exec` timeout: 7 days.
pub const MAX_TIMEOUT_SECS: u64 = 7 * 24 * 60 * 60;

#[cfg(test)]
mod tests {
    use super::*;

    /// The quick parse takes a line to the `Op` the checked parse does, and
    /// leaves to the checked parse every line it cannot take whole.
    #[test]
    fn the_quick_parse_agrees_with_the_checked_one() {
        let lines = [
            r#"{"op":"write","path":"/a.txt","content":"x\ny\n"}"#,
            r#"{"content":"\u00e9","op":"write","path":"/a.txt"}"#,
            r#"{"op":"write","path":"/a.txt","content":null,"content_b64":"eA=="}"#,
            r#"{"op":"write","path":"/a.txt","content":"x","limit":3}"#,
            r#"{"op":"write","path":"/a.txt"}"#,
            r#"{"op":"read","path":"/a.txt"}"#,
            r#"{"op":"read","path":"/a.txt","offset":2,"limit":null}"#,
            r#"{"op":"read","path":"/a.txt","limit":99999999999999999999}"#,
            r#"{"op":"read","path":"/a.txt","limit":5.0}"#,
            r#"{"op":"read","path":"/a.txt","limit":-1}"#,
            r#"{"op":"read","path":"/a.txt","path":"/b.txt"}"#,
            r#"{"op":"read","path":7}"#,
            r#"{"op":"edit","path":"/a.txt","old":"a","new":"b"}"#,
            r#"{"op":"edit","path":"/a.txt","old":"a","new":"b","all":true}"#,
            r#"{"op":"edit","path":"/a.txt","old":"a","new":"b","replace_all":"yes"}"#,
            r#"{"op":"edit","path":"/a.txt","old":"a","new":"b","content":"c"}"#,
            r#"{"op":"edit","path":"/a.txt","old":"a"}"#,
            r#"{"op":"glob","pattern":"*"}"#,
            r#"{"op":"read","path":"/a.txt","extra":1}"#,
            r#"{"op":"read","path":"/a.txt"} trailing"#,
            r#"["op"]"#,
        ];
        let mut quick = 0;
        for line in lines {
            let checked = parse_value_line(line).map_err(|e| e.message().to_owned());
            match quick_line(line) {
                Some(op) => {
                    quick += 1;
                    assert_eq!(Ok(op), checked, "{line}");
                }
                None => assert_eq!(
                    parse_line(line).map_err(|e| e.message().to_owned()),
                    checked,
                    "{line}"
                ),
            }
        }
        assert_eq!(quick, 6, "the quick parse took the plain lines");
    }
}
