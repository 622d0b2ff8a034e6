//! Commands in the container through exec: the agent's `sh -c` with output cap and timeout, and small argv helpers (listing, delete).
//!
//! The engine has no API to kill an exec. So every command runs under a
//! constant wrapper, `exec 2>&1; echo "$$"; exec sh -c -- "$1"`, given the
//! command as an argv element (never spliced into a script). The engine
//! starts each exec as the leader of its own session and process group, so
//! the PID the wrapper prints first is the group of everything the command
//! starts; at the timeout a second exec runs `kill -9 -PGID`. Merging stderr
//! into stdout inside the container keeps the two interleaved exactly as
//! written, whatever order the engine would forward two pipes in.

use std::time::Duration;

use bollard::Docker;
use bollard::exec::{CreateExecOptions, StartExecOptions, StartExecResults};
use burrow_backend::{Error, ExecuteResponse, Result, TIMEOUT_EXIT_CODE};
use futures::StreamExt;
use tokio::time::Instant;

use crate::engine;
use crate::paths::{gone, is_no_such_container};

/// The wrapper every `execute` runs: prints its PID (= process group), then becomes the command.
const WRAPPER: &str = "exec 2>&1; echo \"$$\"; exec sh -c -- \"$1\"";
/// Kills the process group given as `$1`.
const KILLER: &str = "kill -9 -\"$1\" 2>/dev/null || kill -9 \"$1\"";
/// How long output is still drained after a timeout's kill.
const DRAIN_GRACE: Duration = Duration::from_secs(10);
/// Output kept from an internal helper command.
const HELPER_CAP: usize = 64 << 20;

/// The instant `after` from now; never overflows (an unrepresentable one is about a century away).
fn later(after: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(after)
        .or_else(|| now.checked_add(Duration::from_secs(100 * 365 * 86_400)))
        .unwrap_or(now)
}

/// Where and as whom a command runs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ExecEnv<'a> {
    pub id: &'a str,
    pub work_dir: &'a str,
    pub env: &'a [String],
    pub user: Option<&'a str>,
}

/// Starts `argv` attached (stdout and stderr, no tty) and returns its id and output stream.
async fn start(
    docker: &Docker,
    at: ExecEnv<'_>,
    argv: Vec<String>,
) -> Result<(
    String,
    std::pin::Pin<
        Box<
            dyn futures::Stream<
                    Item = std::result::Result<
                        bollard::container::LogOutput,
                        bollard::errors::Error,
                    >,
                > + Send,
        >,
    >,
)> {
    let options = CreateExecOptions {
        attach_stdout: Some(true),
        attach_stderr: Some(true),
        tty: Some(false),
        cmd: Some(argv),
        env: Some(at.env.to_vec()),
        user: at.user.map(str::to_owned),
        working_dir: Some(at.work_dir.to_owned()),
        ..Default::default()
    };
    let created = docker
        .create_exec(at.id, options)
        .await
        .map_err(|e| exec_error("start a command in the sandbox", e))?;
    let started = docker
        .start_exec(&created.id, Some(StartExecOptions::default()))
        .await
        .map_err(|e| exec_error("start a command in the sandbox", e))?;
    match started {
        StartExecResults::Attached { output, .. } => Ok((created.id, output)),
        StartExecResults::Detached => Err(Error::failure_msg(
            "the Docker engine started a command detached although it was asked to attach",
        )),
    }
}

/// A failure for an exec error; a missing or stopped container says so.
fn exec_error(what: &str, e: bollard::errors::Error) -> Error {
    match engine::status(&e) {
        Some(404) if is_no_such_container(&e) => gone(e),
        Some(409) => Error::failure(
            "the sandbox container is not running (it was stopped or killed); start a new sandbox",
            e,
        ),
        _ => engine::failure(what, e),
    }
}

/// The exit code of a finished exec; a failure if the container died under it.
async fn exit_code(docker: &Docker, container: &str, exec_id: &str) -> Result<i64> {
    let deadline = later(Duration::from_secs(5));
    loop {
        let inspected = docker
            .inspect_exec(exec_id)
            .await
            .map_err(|e| exec_error("report a command's exit code", e))?;
        if inspected.running != Some(true)
            && let Some(code) = inspected.exit_code
        {
            if code > 128 {
                settle(docker, container).await?;
            } else {
                ensure_running(docker, container).await?;
            }
            return Ok(code);
        }
        if Instant::now() >= deadline {
            ensure_running(docker, container).await?;
            return Err(Error::failure_msg(
                "the Docker engine did not report the command's exit code",
            ));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Checks the container over half a second: a command killed by a signal
/// may have died with its container, which the engine notices a moment later.
async fn settle(docker: &Docker, container: &str) -> Result<()> {
    for _ in 0..10 {
        ensure_running(docker, container).await?;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// A failure unless the container is still running.
pub(crate) async fn ensure_running(docker: &Docker, container: &str) -> Result<()> {
    let inspected = docker
        .inspect_container(container, None)
        .await
        .map_err(|e| exec_error("look at the sandbox container", e))?;
    let running = inspected
        .state
        .as_ref()
        .and_then(|s| s.running)
        .unwrap_or(false);
    if running {
        Ok(())
    } else {
        Err(Error::failure_msg(
            "the sandbox container stopped while a command ran (killed from outside, or out of memory); start a new sandbox",
        ))
    }
}

/// Runs `argv` to its end and returns its exit code and combined output (for the backend's own helpers).
pub(crate) async fn run_argv(
    docker: &Docker,
    at: ExecEnv<'_>,
    argv: Vec<String>,
) -> Result<(i64, Vec<u8>)> {
    let (exec_id, mut output) = start(docker, at, argv).await?;
    let mut out = Vec::new();
    while let Some(frame) = output.next().await {
        let frame = frame.map_err(|e| exec_error("read a command's output", e))?;
        let bytes = frame.into_bytes();
        if out.len() + bytes.len() > HELPER_CAP {
            return Err(Error::failure_msg(
                "a helper command in the sandbox printed more than 64 MiB",
            ));
        }
        out.extend_from_slice(&bytes);
    }
    let code = exit_code(docker, at.id, &exec_id).await?;
    Ok((code, out))
}

/// The NUL-ended records a helper command prints, read as they arrive, so
/// memory holds one frame and one record, not the whole output.
pub(crate) struct Records {
    exec_id: String,
    output: std::pin::Pin<
        Box<
            dyn futures::Stream<
                    Item = std::result::Result<
                        bollard::container::LogOutput,
                        bollard::errors::Error,
                    >,
                > + Send,
        >,
    >,
    buf: Vec<u8>,
    /// Where the unread part of `buf` starts.
    at: usize,
    ended: bool,
}

impl Records {
    /// The next record without its NUL (a last one without a NUL too), or `None` at the end.
    pub async fn next(&mut self) -> Result<Option<Vec<u8>>> {
        loop {
            if let Some(i) = self.buf[self.at..].iter().position(|&b| b == 0) {
                let record = self.buf[self.at..self.at + i].to_vec();
                self.at += i + 1;
                return Ok(Some(record));
            }
            if self.ended {
                let rest = self.buf.split_off(self.at);
                self.at = 0;
                return Ok((!rest.is_empty()).then_some(rest));
            }
            match self.output.next().await {
                Some(frame) => {
                    let frame = frame.map_err(|e| exec_error("read a command's output", e))?;
                    self.buf.drain(..self.at);
                    self.at = 0;
                    self.buf.extend_from_slice(&frame.into_bytes());
                    if self.buf.len() > HELPER_CAP {
                        return Err(Error::failure_msg(
                            "a helper command in the sandbox printed a record longer than 64 MiB",
                        ));
                    }
                }
                None => self.ended = true,
            }
        }
    }

    /// Drains what is left and returns the command's exit code.
    pub async fn exit_code(mut self, docker: &Docker, id: &str) -> Result<i64> {
        while let Some(frame) = self.output.next().await {
            frame.map_err(|e| exec_error("read a command's output", e))?;
        }
        exit_code(docker, id, &self.exec_id).await
    }
}

/// Starts `argv` and returns its output as NUL-ended [`Records`].
pub(crate) async fn records(
    docker: &Docker,
    at: ExecEnv<'_>,
    argv: Vec<String>,
) -> Result<Records> {
    let (exec_id, output) = start(docker, at, argv).await?;
    Ok(Records {
        exec_id,
        output,
        buf: Vec::new(),
        at: 0,
        ended: false,
    })
}

/// Output kept up to a cap; the rest is counted and dropped.
#[derive(Debug)]
struct Capped {
    cap: usize,
    kept: Vec<u8>,
    truncated: bool,
}

impl Capped {
    fn push(&mut self, bytes: &[u8]) {
        let room = self.cap - self.kept.len();
        if bytes.len() <= room {
            self.kept.extend_from_slice(bytes);
        } else {
            self.kept.extend_from_slice(&bytes[..room]);
            self.truncated = true;
        }
    }
}

/// The state of the wrapper's first line (the process group id).
#[derive(Debug)]
enum Group {
    Reading(Vec<u8>),
    Known(String),
}

impl Group {
    /// Feeds `bytes`; returns what follows the first line, once it is known.
    fn feed<'a>(&mut self, bytes: &'a [u8]) -> Option<&'a [u8]> {
        match self {
            Group::Known(_) => Some(bytes),
            Group::Reading(head) => match bytes.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    head.extend_from_slice(&bytes[..i]);
                    let pgid = String::from_utf8_lossy(head).trim().to_owned();
                    *self = Group::Known(pgid);
                    Some(&bytes[i + 1..])
                }
                None => {
                    head.extend_from_slice(bytes);
                    None
                }
            },
        }
    }

    fn pgid(&self) -> Option<&str> {
        match self {
            Group::Known(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => Some(p),
            _ => None,
        }
    }
}

/// Runs `sh -c command` in the work dir: output capped at `cap`, the process group killed at `timeout`.
pub(crate) async fn execute(
    docker: &Docker,
    at: ExecEnv<'_>,
    command: &str,
    cap: usize,
    timeout: Duration,
) -> Result<ExecuteResponse> {
    let argv = vec![
        "sh".to_owned(),
        "-c".to_owned(),
        WRAPPER.to_owned(),
        "burrow-exec".to_owned(),
        command.to_owned(),
    ];
    let (exec_id, mut output) = start(docker, at, argv).await?;
    let mut kept = Capped {
        cap,
        kept: Vec::new(),
        truncated: false,
    };
    let mut group = Group::Reading(Vec::new());
    let deadline = later(timeout);
    let mut timed_out = false;
    let mut drain_until = None;
    // The kill runs while the output keeps being drained: an engine that cannot
    // forward a flooding command's output will not start another exec either.
    let mut kill_started = false;
    let mut killing: Killing<'_> = None;
    loop {
        if timed_out
            && !kill_started
            && let Some(pgid) = group.pgid()
        {
            kill_started = true;
            killing = Some(Box::pin(kill(docker, at, pgid.to_owned())));
        }
        let until = drain_until.unwrap_or(deadline);
        // Checked before every frame: a command that floods output is always ready to read.
        if Instant::now() >= until {
            if timed_out {
                break;
            }
            timed_out = true;
            drain_until = Some(later(DRAIN_GRACE));
            continue;
        }
        tokio::select! {
            biased;
            killed = run_kill(&mut killing), if killing.is_some() => {
                killing = None;
                killed?;
            }
            frame = output.next() => {
                let Some(frame) = frame else { break };
                let frame = frame.map_err(|e| exec_error("read a command's output", e))?;
                let bytes = frame.into_bytes();
                if let Some(rest) = group.feed(&bytes) {
                    kept.push(rest);
                }
            }
            () = tokio::time::sleep_until(until) => {}
        }
    }
    // Closing the output first lets the engine start a kill still waiting on it.
    drop(output);
    if let Some(k) = killing {
        let _ = tokio::time::timeout(DRAIN_GRACE, k).await;
    }
    let mut text = String::from_utf8_lossy(&kept.kept).into_owned();
    if kept.truncated {
        text.push_str(&format!(
            "\n[output truncated: only the first {cap} bytes are kept]"
        ));
    }
    if timed_out {
        ensure_running(docker, at.id).await?;
        text.push_str(&format!(
            "\n[command timed out after {} s and was killed]",
            timeout.as_secs_f64()
        ));
        return Ok(ExecuteResponse {
            output: text,
            exit_code: Some(TIMEOUT_EXIT_CODE),
            truncated: kept.truncated,
        });
    }
    let code = exit_code(docker, at.id, &exec_id).await?;
    Ok(ExecuteResponse {
        output: text,
        exit_code: Some(i32::try_from(code).unwrap_or(-1)),
        truncated: kept.truncated,
    })
}

/// A kill in progress, polled beside the output.
type Killing<'a> = Option<std::pin::Pin<Box<dyn Future<Output = Result<()>> + Send + 'a>>>;

/// Drives the kill in progress, if any.
async fn run_kill(killing: &mut Killing<'_>) -> Result<()> {
    match killing {
        Some(k) => k.await,
        None => Ok(()),
    }
}

/// Kills the process group `pgid` from a second exec.
async fn kill(docker: &Docker, at: ExecEnv<'_>, pgid: String) -> Result<()> {
    let argv = vec![
        "sh".to_owned(),
        "-c".to_owned(),
        KILLER.to_owned(),
        "burrow-kill".to_owned(),
        pgid,
    ];
    run_argv(docker, at, argv).await.map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_keeps_exactly_the_cap() {
        let mut c = Capped {
            cap: 5,
            kept: Vec::new(),
            truncated: false,
        };
        c.push(b"abc");
        c.push(b"de");
        assert!(!c.truncated);
        c.push(b"f");
        assert!(c.truncated);
        assert_eq!(c.kept, b"abcde");
    }

    #[test]
    fn deadlines_never_overflow() {
        let now = Instant::now();
        for d in [Duration::ZERO, Duration::from_secs(u64::MAX), Duration::MAX] {
            assert!(later(d) >= now);
        }
        assert!(later(Duration::MAX) > now + Duration::from_secs(365 * 86_400));
    }

    #[test]
    fn group_line_is_split_off() {
        let mut g = Group::Reading(Vec::new());
        assert_eq!(g.feed(b"12"), None);
        assert_eq!(g.feed(b"3\nout"), Some(&b"out"[..]));
        assert_eq!(g.pgid(), Some("123"));
        assert_eq!(g.feed(b"more"), Some(&b"more"[..]));
    }
}
