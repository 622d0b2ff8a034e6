//! Runs a command hook: `sh -c` in its own process group, the event as JSON on stdin, stdout read whole up to 1 MiB and stderr capped, the group killed at the timeout and when the hook exits.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

/// Most characters of a hook's stderr (and of its plain-text stdout) that are kept.
pub const HOOK_OUTPUT_CAP: usize = 10_000;

/// Most bytes of a hook's stdout read as its decision: more is a failure of the hook.
pub const HOOK_DECISION_LIMIT: usize = 1 << 20;

/// How a command hook ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CommandEnd {
    /// It exited with `code`; `stdout` is `None` when it printed more than
    /// [`HOOK_DECISION_LIMIT`] bytes.
    Exited {
        code: i32,
        stdout: Option<String>,
        stderr: String,
    },
    /// It could not start, was killed by a signal, or timed out.
    Failed(String),
}

/// Runs `command` with `input` on stdin, in `cwd`, for at most `timeout`.
pub(crate) async fn run(command: &str, input: &[u8], cwd: &Path, timeout: Duration) -> CommandEnd {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => {
            return CommandEnd::Failed(format!(
                "the hook command could not start: {}",
                start_error(&e)
            ));
        }
    };
    let pid = child.id();
    // Dropped before the hook ends (the run was cancelled): the whole group goes.
    let mut group = GroupGuard(pid);
    let (Some(mut stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        kill_group(pid);
        return CommandEnd::Failed("the hook command's pipes could not be opened".to_owned());
    };
    let input = input.to_vec();
    let feed = async move {
        // A hook that does not read its input is no error.
        let _ = stdin.write_all(&input).await;
        drop(stdin);
    };
    let work = async {
        let (_, status, out, err) = tokio::join!(
            feed,
            async {
                let status = child.wait().await;
                // The hook's leftovers (background children holding the
                // pipes open) do not outlive it.
                kill_group(pid);
                status
            },
            read_whole(stdout, HOOK_DECISION_LIMIT),
            read_capped(stderr),
        );
        (status, out, err)
    };
    let ended = tokio::time::timeout(timeout, work).await;
    group.0 = None;
    match ended {
        Ok((Ok(status), stdout, stderr)) => match status.code() {
            Some(code) => CommandEnd::Exited {
                code,
                stdout,
                stderr,
            },
            None => CommandEnd::Failed("the hook command was killed by a signal".to_owned()),
        },
        Ok((Err(e), _, _)) => {
            CommandEnd::Failed(format!("the hook command could not be waited for: {e}"))
        }
        Err(_) => {
            kill_group(pid);
            CommandEnd::Failed(format!(
                "the hook timed out after {} s and was killed with its children",
                timeout.as_secs_f64()
            ))
        }
    }
}

/// Kills the hook's process group when dropped while the hook still runs.
struct GroupGuard(Option<u32>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        kill_group(self.0.take());
    }
}

/// Kills the process group `pid` leads (the hook and everything it started).
fn kill_group(pid: Option<u32>) {
    if let Some(pid) = pid {
        crate::process_group::kill_group(pid);
    }
}

/// Why a hook could not start, in words (no host path: the hook's folder is the user's own).
fn start_error(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "its folder or the shell (sh) does not exist".to_owned(),
        std::io::ErrorKind::PermissionDenied => {
            "its folder or the shell (sh) may not be used".to_owned()
        }
        _ => e.to_string(),
    }
}

/// Reads a pipe to its end; `None` when it carried more than `limit` bytes
/// (the rest is drained, so a flood never blocks the hook nor grows memory).
async fn read_whole(mut pipe: impl AsyncRead + Unpin, limit: usize) -> Option<String> {
    let mut kept = Vec::new();
    let mut over = false;
    let mut buf = [0u8; 8192];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) if over || kept.len() + n > limit => {
                over = true;
                kept = Vec::new();
            }
            Ok(n) => kept.extend_from_slice(&buf[..n]),
        }
    }
    (!over).then(|| String::from_utf8_lossy(&kept).into_owned())
}

/// Reads a pipe to its end, keeping the first [`HOOK_OUTPUT_CAP`] characters
/// (the rest is drained, so a flood never blocks the hook nor grows memory).
async fn read_capped(mut pipe: impl AsyncRead + Unpin) -> String {
    let byte_cap = HOOK_OUTPUT_CAP * 4;
    let mut kept = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = byte_cap.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    let text = String::from_utf8_lossy(&kept);
    match text.char_indices().nth(HOOK_OUTPUT_CAP) {
        Some((at, _)) => text[..at].to_owned(),
        None => text.into_owned(),
    }
}
