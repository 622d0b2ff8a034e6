//! Small helpers the scenarios share: writing fixtures, reading back, and snapshots that prove a refused mutation changed nothing.

use std::collections::BTreeMap;

use burrow_backend::{Backend, ErrorKind, FileInfo, GrepMatch, GrepQuery, VPath};

use crate::fixture::Ctx;
use crate::outcome::{ScenarioError, show};

/// A limit large enough for any scenario's files, yet far from overflow.
pub const BIG: usize = 100_000;

/// Writes `text` to `rel` beneath the scenario's root with `write`; returns the path.
#[track_caller]
pub fn put<'a>(
    b: &'a dyn Backend,
    cx: &'a Ctx,
    rel: &'a str,
    text: &'a str,
) -> impl Future<Output = Result<VPath, ScenarioError>> + Send + 'a {
    let at = std::panic::Location::caller();
    async move {
        let path = cx.p(rel)?;
        b.write(&cx.ctx, &path, text).await.map_err(|e| {
            here(
                at,
                format!(
                    "setting up {path}: write was refused with {}: {:?}",
                    e.kind(),
                    e.message()
                ),
            )
        })?;
        Ok(path)
    }
}

/// Writes exact `bytes` to `rel` beneath the scenario's root with `write_bytes`; returns the path.
#[track_caller]
pub fn put_bytes<'a>(
    b: &'a dyn Backend,
    cx: &'a Ctx,
    rel: &'a str,
    bytes: &'a [u8],
) -> impl Future<Output = Result<VPath, ScenarioError>> + Send + 'a {
    let at = std::panic::Location::caller();
    async move {
        let path = cx.p(rel)?;
        b.write_bytes(&cx.ctx, &path, bytes).await.map_err(|e| {
            here(
                at,
                format!(
                    "setting up {path}: write_bytes was refused with {}: {:?}",
                    e.kind(),
                    e.message()
                ),
            )
        })?;
        Ok(path)
    }
}

/// Every line of the text file at `path`.
#[track_caller]
pub fn lines_of<'a>(
    b: &'a dyn Backend,
    cx: &'a Ctx,
    path: &'a VPath,
) -> impl Future<Output = Result<Vec<String>, ScenarioError>> + Send + 'a {
    let at = std::panic::Location::caller();
    async move {
        match b.read(&cx.ctx, path, 0, BIG).await {
            Ok(window) => Ok(window.lines),
            Err(e) => Err(here(
                at,
                format!(
                    "read {path} was refused with {}: {:?}",
                    e.kind(),
                    e.message()
                ),
            )),
        }
    }
}

/// The exact bytes of the file at `path`.
#[track_caller]
pub fn bytes_of<'a>(
    b: &'a dyn Backend,
    cx: &'a Ctx,
    path: &'a VPath,
) -> impl Future<Output = Result<Vec<u8>, ScenarioError>> + Send + 'a {
    let at = std::panic::Location::caller();
    async move {
        b.read_bytes(&cx.ctx, path).await.map_err(|e| {
            here(
                at,
                format!(
                    "read_bytes {path} was refused with {}: {:?}",
                    e.kind(),
                    e.message()
                ),
            )
        })
    }
}

/// True when `path` reads as NotFound.
pub async fn is_missing(b: &dyn Backend, cx: &Ctx, path: &VPath) -> Result<bool, ScenarioError> {
    match b.read_bytes(&cx.ctx, path).await {
        Ok(_) => Ok(false),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(true),
        Err(e) if e.kind() == ErrorKind::IsADirectory => Ok(false),
        Err(e) => Err(ScenarioError::new(format!(
            "read_bytes {path}: expected bytes or NotFound, got {}: {:?}",
            e.kind(),
            e.message()
        ))),
    }
}

/// The paths of `entries`, in the order given.
pub fn paths(entries: &[FileInfo]) -> Vec<String> {
    entries.iter().map(|e| e.path.clone()).collect()
}

/// (path, line number, line) of each grep match, in the order given.
pub fn hits(matches: &[GrepMatch]) -> Vec<(String, u64, String)> {
    matches
        .iter()
        .map(|m| (m.path.clone(), m.line_number, m.line.clone()))
        .collect()
}

/// The absolute path strings of `rels` beneath the scenario's root.
#[track_caller]
pub fn abs<S: AsRef<str>>(cx: &Ctx, rels: &[S]) -> Result<Vec<String>, ScenarioError> {
    rels.iter()
        .map(|r| cx.p(r.as_ref()).map(|p| p.as_str().to_owned()))
        .collect()
}

/// `v` sorted (byte order for strings).
pub fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort();
    v
}

/// A regex grep query for `pattern`.
pub fn re(pattern: &str) -> GrepQuery {
    GrepQuery::regex(pattern)
}

/// Everything observable beneath the scenario's root: each directory, and
/// each file with its bytes. Timestamps are left out.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Snapshot {
    /// Directory paths.
    pub dirs: Vec<String>,
    /// File path -> bytes.
    pub files: BTreeMap<String, Vec<u8>>,
}

/// Takes a [`Snapshot`] beneath the scenario's root, walking it with `ls`.
pub async fn snapshot(b: &dyn Backend, cx: &Ctx) -> Result<Snapshot, ScenarioError> {
    let mut snap = Snapshot::default();
    let mut todo = vec![cx.root.clone()];
    while let Some(dir) = todo.pop() {
        let listing = match b.ls(&cx.ctx, &dir, BIG).await {
            Ok(l) => l,
            Err(e) if e.kind() == ErrorKind::NotFound && dir == cx.root => continue,
            Err(e) => {
                return Err(ScenarioError::new(format!(
                    "snapshot: ls {dir} was refused with {}: {:?}",
                    e.kind(),
                    e.message()
                )));
            }
        };
        if listing.truncated {
            return Err(ScenarioError::new(format!(
                "snapshot: ls {dir} was truncated at {BIG} entries"
            )));
        }
        for entry in listing.entries {
            let path = VPath::parse(&entry.path).map_err(|e| {
                ScenarioError::new(format!(
                    "ls {dir} returned an entry path {:?} that does not parse: {}",
                    entry.path,
                    e.message()
                ))
            })?;
            if entry.is_dir {
                snap.dirs.push(entry.path.clone());
                todo.push(path);
            } else {
                let bytes = bytes_of(b, cx, &path).await?;
                snap.files.insert(entry.path, bytes);
            }
        }
    }
    snap.dirs.sort();
    Ok(snap)
}

/// Fails unless the backend still holds exactly `before` beneath the root.
#[track_caller]
pub fn ensure_unchanged<'a>(
    b: &'a dyn Backend,
    cx: &'a Ctx,
    before: &'a Snapshot,
    after_what: &'a str,
) -> impl Future<Output = Result<(), ScenarioError>> + Send + 'a {
    let at = std::panic::Location::caller();
    async move {
        let after = snapshot(b, cx)
            .await
            .map_err(|e| here(at, e.message().to_owned()))?;
        if &after == before {
            return Ok(());
        }
        Err(here(at, describe_change(before, &after, after_what)))
    }
}

fn describe_change(before: &Snapshot, after: &Snapshot, after_what: &str) -> String {
    let mut diffs = Vec::new();
    for d in &before.dirs {
        if !after.dirs.contains(d) {
            diffs.push(format!("directory {d} disappeared"));
        }
    }
    for d in &after.dirs {
        if !before.dirs.contains(d) {
            diffs.push(format!("directory {d} appeared"));
        }
    }
    for (p, bytes) in &before.files {
        match after.files.get(p) {
            None => diffs.push(format!("file {p} disappeared")),
            Some(now) if now != bytes => diffs.push(format!(
                "file {p} changed from {} to {}",
                show(&String::from_utf8_lossy(bytes)),
                show(&String::from_utf8_lossy(now))
            )),
            Some(_) => {}
        }
    }
    for p in after.files.keys() {
        if !before.files.contains_key(p) {
            diffs.push(format!("file {p} appeared"));
        }
    }
    format!(
        "{after_what} must leave everything as it was, but: {}",
        diffs.join("; ")
    )
}

/// A failure located at `at` (a scenario line captured before an `.await`).
fn here(at: &'static std::panic::Location<'static>, message: String) -> ScenarioError {
    ScenarioError::at(message, at)
}
