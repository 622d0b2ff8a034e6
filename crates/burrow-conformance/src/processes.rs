//! Concurrency across processes: several copies of a backend's test binary edit one shared file at once, and no update is lost.
//!
//! For backends that several processes share (a folder, a SQLite file, a bucket):
//! the in-process concurrency scenarios cannot show that two *processes* never lose
//! an update. A backend's test calls these helpers in one `#[test]` that plays two
//! roles: started normally it is the parent, which writes [`initial_text`] to a
//! file, calls [`run_editor_processes`] with its own full test name (the binary
//! re-runs itself [`PROCESS_EDITORS`] times with [`EDITOR_VAR`] set) and then
//! [`check_every_slot`]; started as an editor ([`editor_role`] is `Some`) it opens
//! the same store and runs [`edit_my_slots`]. For example:
//!
//! ```ignore
//! #[test]
//! fn edits_from_processes_lose_no_update() {
//!     use burrow_conformance::processes::*;
//!     let rt = tokio::runtime::Runtime::new().unwrap();
//!     if let Some(editor) = editor_role() {
//!         let dir = std::env::var("MY_DIR").unwrap();
//!         let b = MyBackend::open(&dir);
//!         return rt.block_on(edit_my_slots(&b, &ctx(), &path(), editor)).unwrap();
//!     }
//!     let dir = tempfile::tempdir().unwrap();
//!     let b = MyBackend::open(dir.path());
//!     rt.block_on(b.write(&ctx(), &path(), &initial_text())).unwrap();
//!     run_editor_processes("all::processes::edits_from_processes_lose_no_update",
//!         &[("MY_DIR", dir.path().to_str().unwrap())]).unwrap();
//!     rt.block_on(check_every_slot(&b, &ctx(), &path())).unwrap();
//! }
//! ```

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use burrow_backend::{Backend, ErrorKind, FileContext, VPath};

use crate::outcome::ScenarioError;

/// The variable that makes a re-run test binary an editor (its value: the editor's number).
pub const EDITOR_VAR: &str = "BURROW_CONFORMANCE_EDITOR";
/// The file whose appearance starts every editor at once.
pub const GO_VAR: &str = "BURROW_CONFORMANCE_GO";
/// How many editor processes run at once.
pub const PROCESS_EDITORS: usize = 4;
/// How many slots each editor updates, one edit each.
pub const SLOTS_PER_EDITOR: usize = 50;
/// How often an editor retries an edit refused with Conflict.
const CONFLICT_RETRIES: usize = 200;
/// How long an editor waits for the start signal before it gives up.
const START_PATIENCE: Duration = Duration::from_secs(60);

fn slot(editor: usize, slot: usize) -> String {
    format!("slot-{editor:02}-{slot:02}")
}

/// The shared file's first content: one `slot-EE-SS: empty` line per editor and slot.
pub fn initial_text() -> String {
    (0..PROCESS_EDITORS)
        .flat_map(|e| (0..SLOTS_PER_EDITOR).map(move |s| format!("{}: empty\n", slot(e, s))))
        .collect()
}

/// `Some(editor)` in an editor process started by [`run_editor_processes`], `None` in the parent.
pub fn editor_role() -> Option<usize> {
    std::env::var(EDITOR_VAR).ok()?.parse().ok()
}

/// Starts [`PROCESS_EDITORS`] copies of this test binary, each running only the test
/// `test` (its full name) with [`EDITOR_VAR`] and `env` set, starts them together and
/// waits for them all; fails naming each editor that failed, with its output.
pub fn run_editor_processes(test: &str, env: &[(&str, &str)]) -> Result<(), ScenarioError> {
    let exe = std::env::current_exe()
        .map_err(|e| ScenarioError::new(format!("cannot find this test binary: {e}")))?;
    let go = go_file();
    let _ = std::fs::remove_file(&go);
    let mut children = Vec::new();
    for editor in 0..PROCESS_EDITORS {
        let mut command = Command::new(&exe);
        command
            .args([test, "--exact", "--nocapture", "--test-threads=1"])
            .env(EDITOR_VAR, editor.to_string())
            .env(GO_VAR, &go);
        for (key, value) in env {
            command.env(key, value);
        }
        let child = command
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| ScenarioError::new(format!("cannot start editor {editor}: {e}")))?;
        children.push(child);
    }
    std::fs::write(&go, b"go")
        .map_err(|e| ScenarioError::new(format!("cannot write the start signal: {e}")))?;
    let mut problems = Vec::new();
    for (editor, child) in children.into_iter().enumerate() {
        match child.wait_with_output() {
            Ok(out) => {
                let stdout = String::from_utf8_lossy(&out.stdout);
                if !out.status.success() || !stdout.contains("1 passed") {
                    problems.push(format!(
                        "editor {editor} failed ({}):\n{stdout}\n{}",
                        out.status,
                        String::from_utf8_lossy(&out.stderr)
                    ));
                }
            }
            Err(e) => problems.push(format!("editor {editor}: {e}")),
        }
    }
    let _ = std::fs::remove_file(&go);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(ScenarioError::new(problems.join("\n")))
    }
}

/// A start-signal file unique to this parent process.
fn go_file() -> PathBuf {
    std::env::temp_dir().join(format!("burrow-conformance-go-{}", std::process::id()))
}

/// In an editor: waits for the start signal, then replaces each of its slots'
/// `empty` by `done`, one edit per slot, retrying an edit refused with Conflict.
pub async fn edit_my_slots(
    b: &dyn Backend,
    ctx: &FileContext,
    path: &VPath,
    editor: usize,
) -> Result<(), ScenarioError> {
    if let Some(go) = std::env::var_os(GO_VAR) {
        let start = Instant::now();
        while !std::path::Path::new(&go).exists() {
            if start.elapsed() > START_PATIENCE {
                return Err(ScenarioError::new("the start signal never came"));
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    for s in 0..SLOTS_PER_EDITOR {
        let old = format!("{}: empty", slot(editor, s));
        let new = format!("{}: done", slot(editor, s));
        let mut landed = false;
        for _ in 0..CONFLICT_RETRIES {
            match b.edit(ctx, path, &old, &new, false).await {
                Ok(_) => {
                    landed = true;
                    break;
                }
                Err(e) if e.kind() == ErrorKind::Conflict => continue,
                Err(e) => {
                    return Err(ScenarioError::new(format!(
                        "editor {editor}: the edit of {old:?} was refused with {}: {}",
                        e.kind(),
                        e.message()
                    )));
                }
            }
        }
        if !landed {
            return Err(ScenarioError::new(format!(
                "editor {editor}: the edit of {old:?} met Conflict {CONFLICT_RETRIES} times"
            )));
        }
    }
    Ok(())
}

/// In the parent, after the editors: every slot of every editor reads `done`.
pub async fn check_every_slot(
    b: &dyn Backend,
    ctx: &FileContext,
    path: &VPath,
) -> Result<(), ScenarioError> {
    let bytes = b.read_bytes(ctx, path).await?;
    let text = String::from_utf8_lossy(&bytes);
    let lost: Vec<&str> = text.lines().filter(|l| l.ends_with(": empty")).collect();
    if lost.is_empty() && text.lines().count() == PROCESS_EDITORS * SLOTS_PER_EDITOR {
        Ok(())
    } else {
        Err(ScenarioError::new(format!(
            "edits from {PROCESS_EDITORS} processes lost {} update(s): {}",
            lost.len(),
            lost.join(", ")
        )))
    }
}
