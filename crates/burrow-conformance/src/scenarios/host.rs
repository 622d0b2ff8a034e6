//! Scenarios that need a real file system beneath the backend (lent by the fixture's `HostAccess`): symlinks that lead out, FIFOs.

use std::path::Path;
use std::time::Duration;

use super::prelude::*;

/// How long one operation near a special file may take before the scenario calls it hung.
const LIVENESS: Duration = Duration::from_secs(20);
/// The content of the file outside the backend's root.
const SECRET: &str = "burrow-secret\n";

/// Runs `op`, failing if it does not finish within [`LIVENESS`] (a FIFO opened for reading blocks forever).
async fn live<T>(what: &str, op: impl Future<Output = T>) -> Result<T, ScenarioError> {
    tokio::time::timeout(LIVENESS, op).await.map_err(|_| {
        ScenarioError::new(format!(
            "{what} did not return within {} s (was a special file opened?)",
            LIVENESS.as_secs()
        ))
    })
}

/// The host access the symlink scenarios need, or why they skip.
fn symlink_host(cx: &Ctx) -> Result<&dyn HostAccess, String> {
    if !cx.caps.symlinks {
        return Err(
            "the backend cannot hold symbolic links (capability symlinks is off)".to_owned(),
        );
    }
    cx.host().ok_or_else(|| {
        "the fixture lends no host access to make symbolic links (Fixture::with_host)".to_owned()
    })
}

/// A directory outside the backend's root holding `secret.txt`.
fn outside_dir() -> Result<tempfile::TempDir, ScenarioError> {
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("secret.txt"), SECRET)?;
    Ok(dir)
}

/// Fails if `message` shows the host path `host`.
fn no_host_path(message: &str, host: &Path) -> Result<(), ScenarioError> {
    let host = host.to_string_lossy();
    ensure!(
        !message.contains(host.as_ref()),
        "a refusal shows the host path {host:?}: {message:?}"
    );
    Ok(())
}

/// Links leading out of the root (to a directory, to a file) are refused, never followed, by every operation.
pub async fn symlinks_leading_out_are_refused(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let host = match symlink_host(cx) {
        Ok(h) => h,
        Err(reason) => return skipped(reason),
    };
    let outside = outside_dir()?;
    put(b, cx, "links/plain.txt", "plain\n").await?;
    let dir_link = cx.p("links/out")?;
    let file_link = cx.p("links/out-file")?;
    host.symlink(&dir_link, outside.path())?;
    host.symlink(&file_link, &outside.path().join("secret.txt"))?;
    let inside = cx.p("links/out/secret.txt")?;
    let mut messages = Vec::new();
    for path in [&inside, &file_link] {
        messages.push(
            expect_refusal(live("read", b.read(&cx.ctx, path, 0, 10)).await?)
                .map_err(|e| e.context(format!("read {path}")))?,
        );
        messages.push(
            expect_refusal(live("read_bytes", b.read_bytes(&cx.ctx, path)).await?)
                .map_err(|e| e.context(format!("read_bytes {path}")))?,
        );
        messages.push(
            expect_refusal(live("edit", b.edit(&cx.ctx, path, "burrow", "x", false)).await?)
                .map_err(|e| e.context(format!("edit {path}")))?,
        );
    }
    messages.push(
        expect_refusal(live("ls", b.ls(&cx.ctx, &dir_link, BIG)).await?)
            .map_err(|e| e.context("ls of a link leading out"))?,
    );
    messages.push(
        expect_refusal(live("write", b.write(&cx.ctx, &cx.p("links/out/new.txt")?, "x")).await?)
            .map_err(|e| e.context("write through a link"))?,
    );
    messages.push(
        expect_refusal(live("delete", b.delete(&cx.ctx, &inside)).await?)
            .map_err(|e| e.context("delete through a link"))?,
    );
    for err in &messages {
        no_host_path(err.message(), outside.path())?;
    }
    ensure_eq!(
        std::fs::read_to_string(outside.path().join("secret.txt"))?,
        SECRET,
        "the outside file is untouched"
    );
    ensure!(
        !outside.path().join("new.txt").exists(),
        "nothing was written outside the root"
    );
    let found = live("glob", b.glob(&cx.ctx, "**", &cx.p("links")?, BIG)).await??;
    ensure!(
        found.files.iter().all(|f| !f.path.contains("secret")),
        "glob follows a link out: {}",
        show(&paths(&found.files))
    );
    match live(
        "grep",
        b.grep(&cx.ctx, &re("burrow-secret"), &cx.p("links")?, BIG),
    )
    .await?
    {
        Ok(result) => ensure_eq!(
            hits(&result.matches),
            Vec::<(String, u64, String)>::new(),
            "grep follows a link out"
        ),
        Err(e) => ensure!(
            e.is_refusal(),
            "grep under a directory holding links failed: {:?}",
            e.message()
        ),
    }
    passed()
}

/// A relative link that climbs above the root ("../../..") is refused like an absolute one.
pub async fn symlinks_climbing_relative_link_is_refused(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let host = match symlink_host(cx) {
        Ok(h) => h,
        Err(reason) => return skipped(reason),
    };
    let outside = outside_dir()?;
    put(b, cx, "climb/plain.txt", "plain\n").await?;
    let link = cx.p("climb/up")?;
    host.symlink(&link, Path::new(&"../".repeat(64)))?;
    let host_abs = outside.path().join("secret.txt");
    let rel = host_abs
        .to_string_lossy()
        .trim_start_matches('/')
        .to_owned();
    let through = cx.p(&format!("climb/up/{rel}"))?;
    expect_refusal(live("read", b.read(&cx.ctx, &through, 0, 10)).await?)
        .map_err(|e| e.context("read through a climbing link"))?;
    expect_refusal(live("read_bytes", b.read_bytes(&cx.ctx, &through)).await?)
        .map_err(|e| e.context("read_bytes through a climbing link"))?;
    expect_refusal(live("ls", b.ls(&cx.ctx, &link, BIG)).await?)
        .map_err(|e| e.context("ls of a climbing link"))?;
    let target = cx.p(&format!(
        "climb/up/{}",
        outside
            .path()
            .join("planted.txt")
            .to_string_lossy()
            .trim_start_matches('/')
    ))?;
    expect_refusal(live("write", b.write(&cx.ctx, &target, "x")).await?)
        .map_err(|e| e.context("write through a climbing link"))?;
    ensure!(
        !outside.path().join("planted.txt").exists(),
        "nothing was written outside the root"
    );
    passed()
}

/// A FIFO beneath the root is neither file nor directory: refused without being opened, passed by grep.
pub async fn host_fifo_is_never_opened(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let Some(host) = cx.host() else {
        return skipped("the fixture lends no host access to make a FIFO (Fixture::with_host)");
    };
    put(b, cx, "fifo/plain.txt", "needle\n").await?;
    let fifo = cx.p("fifo/pipe")?;
    if let Err(e) = host.fifo(&fifo) {
        if e.kind() == std::io::ErrorKind::Unsupported {
            return skipped("the fixture's host access cannot make FIFOs");
        }
        return Err(e.into());
    }
    special_file_is_refused(b, cx, &fifo).await?;
    passed()
}

/// Checks that the special file at `path` (beside `plain.txt` holding "needle") is refused and never opened.
pub(crate) async fn special_file_is_refused(
    b: &dyn Backend,
    cx: &Ctx,
    path: &VPath,
) -> Result<(), ScenarioError> {
    expect_refusal(live("read", b.read(&cx.ctx, path, 0, 10)).await?)
        .map_err(|e| e.context(format!("read {path}")))?;
    expect_refusal(live("read_bytes", b.read_bytes(&cx.ctx, path)).await?)
        .map_err(|e| e.context(format!("read_bytes {path}")))?;
    expect_refusal(live("edit", b.edit(&cx.ctx, path, "a", "b", false)).await?)
        .map_err(|e| e.context(format!("edit {path}")))?;
    let dir = path.parent().unwrap_or_else(VPath::root);
    let result = live("grep", b.grep(&cx.ctx, &re("needle"), &dir, BIG)).await??;
    let plain = dir.join("plain.txt")?;
    ensure_eq!(
        hits(&result.matches),
        vec![(plain.as_str().to_owned(), 1, "needle".to_owned())],
        "grep beside a special file"
    );
    let found = live("glob", b.glob(&cx.ctx, "plain.txt", &dir, BIG)).await??;
    ensure_eq!(
        paths(&found.files),
        [plain.as_str().to_owned()],
        "glob beside a special file"
    );
    Ok(())
}
