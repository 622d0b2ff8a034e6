//! Scenarios for `Sandbox::execute`: exit codes, interleaved output, the output cap, timeouts, and the workspace as working directory.

use std::time::Duration;

use burrow_backend::{DEFAULT_EXEC_OUTPUT_CAP, ExecuteResponse, Sandbox, TIMEOUT_EXIT_CODE};

use super::prelude::*;

/// Room allowed beyond the output cap for a truncation note.
const NOTE_ROOM: usize = 1000;
/// How long a command that must be cut off at its timeout may take in all before the scenario calls it hung.
const LIVENESS: Duration = Duration::from_secs(60);

/// The sandbox, `None` when the backend does not run commands.
fn sandbox<'a>(b: &'a dyn Backend, cx: &Ctx) -> Result<Option<&'a dyn Sandbox>, ScenarioError> {
    if !cx.caps.exec {
        return Ok(None);
    }
    match b.as_sandbox() {
        Some(s) => Ok(Some(s)),
        None => Err(ScenarioError::new(
            "capability exec is on but as_sandbox() returns None",
        )),
    }
}

fn no_exec() -> Outcome {
    skipped("the backend does not run commands (capability exec is off)")
}

/// `path` relative to the workspace ("/"), single-quoted for sh.
fn sh_rel(path: &VPath) -> String {
    let rel = path.relative_to(&VPath::root()).unwrap_or_default();
    format!("'{}'", rel.replace('\'', "'\\''"))
}

/// Runs `command`, failing the scenario if it does not return within [`LIVENESS`].
async fn run(
    s: &dyn Sandbox,
    cx: &Ctx,
    command: &str,
    timeout: Option<Duration>,
) -> Result<ExecuteResponse, ScenarioError> {
    match tokio::time::timeout(LIVENESS, s.execute(&cx.ctx, command, timeout)).await {
        Ok(result) => Ok(result?),
        Err(_) => Err(ScenarioError::new(format!(
            "execute {command:?} did not return within {} s",
            LIVENESS.as_secs()
        ))),
    }
}

/// Exit codes come back as the command set them; a failing command is no error.
pub async fn sandbox_exit_codes(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let Some(s) = sandbox(b, cx)? else {
        return no_exec();
    };
    for (command, code) in [
        ("true", 0),
        ("false", 1),
        ("exit 3", 3),
        ("echo out; exit 7", 7),
        ("exit 255", 255),
    ] {
        let r = run(s, cx, command, None).await?;
        ensure_eq!(r.exit_code, Some(code), "exit code of {command:?}");
    }
    let r = run(s, cx, "echo out; exit 7", None).await?;
    ensure_eq!(r.output, "out\n", "output of a failing command");
    passed()
}

/// stdout and stderr are interleaved as produced, in one output.
pub async fn sandbox_output_interleaves_stderr(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let Some(s) = sandbox(b, cx)? else {
        return no_exec();
    };
    let r = run(
        s,
        cx,
        "echo one; echo two 1>&2; echo three; echo four 1>&2",
        None,
    )
    .await?;
    ensure_eq!(r.output, "one\ntwo\nthree\nfour\n", "interleaved output");
    ensure_eq!(r.exit_code, Some(0), "exit code");
    ensure!(!r.truncated, "short output is not truncated");
    passed()
}

/// Output is capped at 100,000 bytes with `truncated`; exactly the cap is not truncated.
pub async fn sandbox_output_is_capped(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let Some(s) = sandbox(b, cx)? else {
        return no_exec();
    };
    let cap = DEFAULT_EXEC_OUTPUT_CAP;
    let r = run(
        s,
        cx,
        &format!("head -c {cap} /dev/zero | tr '\\0' b"),
        None,
    )
    .await?;
    ensure_eq!(r.output.len(), cap, "output of exactly the cap");
    ensure!(!r.truncated, "output of exactly the cap is not truncated");
    let r = run(
        s,
        cx,
        &format!("head -c {} /dev/zero | tr '\\0' a", cap * 3),
        None,
    )
    .await?;
    ensure!(r.truncated, "output past the cap is truncated");
    ensure!(
        r.output.len() <= cap + NOTE_ROOM,
        "capped output is {} bytes",
        r.output.len()
    );
    ensure!(
        r.output.starts_with(&"a".repeat(1000)),
        "capped output keeps the start of the output"
    );
    ensure_eq!(
        r.exit_code,
        Some(0),
        "exit code of a command whose output was capped"
    );
    passed()
}

/// A command that floods output stays bounded; an endless flood ends at the timeout with 124.
pub async fn sandbox_flood_stays_bounded(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let Some(s) = sandbox(b, cx)? else {
        return no_exec();
    };
    let cap = DEFAULT_EXEC_OUTPUT_CAP;
    let r = run(s, cx, "yes flood | head -c 20000000", None).await?;
    ensure!(r.truncated, "a 20 MB flood is truncated");
    ensure!(
        r.output.len() <= cap + NOTE_ROOM,
        "flood output is {} bytes",
        r.output.len()
    );
    ensure_eq!(r.exit_code, Some(0), "exit code of a finite flood");
    let r = run(s, cx, "yes endless", Some(Duration::from_secs(2))).await?;
    ensure_eq!(
        r.exit_code,
        Some(TIMEOUT_EXIT_CODE),
        "exit code of an endless flood"
    );
    ensure!(r.truncated, "an endless flood is truncated");
    ensure!(
        r.output.len() <= cap + NOTE_ROOM,
        "endless flood output is {} bytes",
        r.output.len()
    );
    passed()
}

/// At the timeout the command is killed: exit code 124 and a note in the output.
pub async fn sandbox_timeout_exits_124_with_note(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let Some(s) = sandbox(b, cx)? else {
        return no_exec();
    };
    let r = run(
        s,
        cx,
        "echo before; sleep 30; echo slept-to-the-end",
        Some(Duration::from_secs(1)),
    )
    .await?;
    ensure_eq!(
        r.exit_code,
        Some(TIMEOUT_EXIT_CODE),
        "exit code after the timeout"
    );
    ensure!(
        r.output.starts_with("before\n"),
        "the output keeps what the command printed before its timeout: {}",
        show(&r.output)
    );
    ensure!(
        !r.output.contains("slept-to-the-end"),
        "the command was killed, not waited for: {}",
        show(&r.output)
    );
    let note = r.output["before\n".len()..].to_lowercase();
    ensure!(
        note.contains("timed out") || note.contains("timeout"),
        "after the command's own output comes a note that says it timed out: {}",
        show(&r.output)
    );
    passed()
}

/// The whole process group is killed: a background child holding the output open does not keep execute waiting.
pub async fn sandbox_timeout_kills_background_children(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let Some(s) = sandbox(b, cx)? else {
        return no_exec();
    };
    let r = run(
        s,
        cx,
        "sleep 40 & sleep 40 & echo started; wait",
        Some(Duration::from_secs(1)),
    )
    .await?;
    ensure_eq!(
        r.exit_code,
        Some(TIMEOUT_EXIT_CODE),
        "exit code after the timeout"
    );
    ensure!(
        r.output.starts_with("started\n"),
        "output before the timeout is kept: {:?}",
        r.output
    );
    passed()
}

/// Commands run in the workspace: a file written through the backend is there for `cat`.
pub async fn sandbox_cwd_is_the_workspace(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let Some(s) = sandbox(b, cx)? else {
        return no_exec();
    };
    let path = put(b, cx, "ws/hello.txt", "hi from burrow\n").await?;
    let r = run(s, cx, &format!("cat {}", sh_rel(&path)), None).await?;
    ensure_eq!(
        r.output,
        "hi from burrow\n",
        "cat of a file written through the backend"
    );
    ensure_eq!(r.exit_code, Some(0), "exit code");
    passed()
}

/// Files a command makes are visible to read, ls, glob and grep.
pub async fn sandbox_command_files_are_visible(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let Some(s) = sandbox(b, cx)? else {
        return no_exec();
    };
    let dir = cx.p("made")?;
    let r = run(
        s,
        cx,
        &format!(
            "mkdir -p {d} && printf 'x\\ny\\n' > {d}/made.txt",
            d = sh_rel(&dir)
        ),
        None,
    )
    .await?;
    ensure_eq!(
        r.exit_code,
        Some(0),
        "exit code of the command: output {:?}",
        r.output
    );
    let path = cx.p("made/made.txt")?;
    ensure_eq!(
        lines_of(b, cx, &path).await?,
        ["x", "y"],
        "read of a file the command made"
    );
    let listing = b.ls(&cx.ctx, &dir, BIG).await?;
    ensure_eq!(
        paths(&listing.entries),
        [path.as_str().to_owned()],
        "ls of the directory the command made"
    );
    let found = b.glob(&cx.ctx, "made.txt", &cx.root, BIG).await?;
    ensure_eq!(paths(&found.files), [path.as_str().to_owned()], "glob");
    let result = b.grep(&cx.ctx, &re("^y$"), &cx.root, BIG).await?;
    ensure_eq!(
        hits(&result.matches),
        vec![(path.as_str().to_owned(), 2, "y".to_owned())],
        "grep"
    );
    passed()
}

/// A FIFO made by a command is neither file nor directory: read is refused without opening it, grep passes it by.
pub async fn sandbox_fifo_is_never_opened(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let Some(s) = sandbox(b, cx)? else {
        return no_exec();
    };
    put(b, cx, "fifo/plain.txt", "needle\n").await?;
    let fifo = cx.p("fifo/pipe")?;
    let r = run(s, cx, &format!("mkfifo {}", sh_rel(&fifo)), None).await?;
    ensure_eq!(r.exit_code, Some(0), "mkfifo: output {:?}", r.output);
    super::host::special_file_is_refused(b, cx, &fifo).await?;
    passed()
}
