//! Scenarios for `write` and `write_bytes`: parents, replacement, directories in the way, and timestamps.

use super::prelude::*;

/// Writing creates missing parent directories, which `ls` then shows.
pub async fn write_creates_parent_directories(b: &dyn Backend, cx: &Ctx) -> Outcome {
    put(b, cx, "a/b/c/d.txt", "deep").await?;
    let a = b.ls(&cx.ctx, &cx.p("a")?, BIG).await?;
    ensure_eq!(paths(&a.entries), abs(cx, &["a/b"])?, "ls a");
    ensure!(
        a.entries.iter().all(|e| e.is_dir),
        "a/b is a directory: {}",
        show(&a.entries)
    );
    let c = b.ls(&cx.ctx, &cx.p("a/b/c")?, BIG).await?;
    ensure_eq!(paths(&c.entries), abs(cx, &["a/b/c/d.txt"])?, "ls a/b/c");
    ensure_eq!(
        lines_of(b, cx, &cx.p("a/b/c/d.txt")?).await?,
        ["deep"],
        "read back"
    );
    passed()
}

/// Replacing a file replaces all of it: nothing of a longer old content is left.
pub async fn write_replaces_whole_content(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let path = put(b, cx, "r.txt", "a long first content\nwith two lines\n").await?;
    put(b, cx, "r.txt", "short").await?;
    ensure_eq!(
        bytes_of(b, cx, &path).await?,
        b"short".to_vec(),
        "content after replace"
    );
    let listing = b.ls(&cx.ctx, &cx.p("")?, BIG).await?;
    let sizes: Vec<Option<u64>> = listing.entries.iter().map(|e| e.size).collect();
    ensure_eq!(sizes, [Some(5)], "ls size after replace");
    put_bytes(b, cx, "r.txt", &[1, 2, 3]).await?;
    ensure_eq!(
        bytes_of(b, cx, &path).await?,
        vec![1u8, 2, 3],
        "write_bytes replaces text"
    );
    passed()
}

/// `write` and `write_bytes` return the path written and no error.
pub async fn write_returns_written_path(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let path = cx.p("w/out.txt")?;
    let r = b.write(&cx.ctx, &path, "x").await?;
    ensure_eq!(
        r.path.as_deref(),
        Some(path.as_str()),
        "WriteResult.path of write"
    );
    ensure_eq!(r.error, None, "WriteResult.error of write");
    let r = b.write_bytes(&cx.ctx, &path, b"y").await?;
    ensure_eq!(
        r.path.as_deref(),
        Some(path.as_str()),
        "WriteResult.path of write_bytes"
    );
    ensure_eq!(r.error, None, "WriteResult.error of write_bytes");
    passed()
}

/// Writing where a directory stands: IsADirectory, nothing changed.
pub async fn write_over_directory_is_a_directory(b: &dyn Backend, cx: &Ctx) -> Outcome {
    put(b, cx, "d/inner.txt", "keep").await?;
    let before = snapshot(b, cx).await?;
    let d = cx.p("d")?;
    expect_kind(
        b.write(&cx.ctx, &d, "clobber").await,
        ErrorKind::IsADirectory,
    )?;
    expect_kind(
        b.write_bytes(&cx.ctx, &d, b"clobber").await,
        ErrorKind::IsADirectory,
    )?;
    ensure_unchanged(b, cx, &before, "a write over a directory").await?;
    passed()
}

/// Writing where a parent is a file: NotADirectory, nothing changed.
pub async fn write_under_file_is_not_a_directory(b: &dyn Backend, cx: &Ctx) -> Outcome {
    put(b, cx, "f.txt", "keep").await?;
    let before = snapshot(b, cx).await?;
    for rel in ["f.txt/x", "f.txt/x/y.txt"] {
        expect_kind(
            b.write(&cx.ctx, &cx.p(rel)?, "nope").await,
            ErrorKind::NotADirectory,
        )
        .map_err(|e| e.context(format!("write {rel}")))?;
    }
    ensure_unchanged(b, cx, &before, "a write beneath a file").await?;
    passed()
}

/// Writing "/": IsADirectory.
pub async fn write_root_is_a_directory(b: &dyn Backend, cx: &Ctx) -> Outcome {
    expect_kind(
        b.write(&cx.ctx, &VPath::root(), "x").await,
        ErrorKind::IsADirectory,
    )?;
    expect_kind(
        b.write_bytes(&cx.ctx, &VPath::root(), b"x").await,
        ErrorKind::IsADirectory,
    )?;
    let listing = b.ls(&cx.ctx, &VPath::root(), BIG).await?;
    if cx.root.is_root() {
        ensure_eq!(
            paths(&listing.entries),
            Vec::<String>::new(),
            "ls / after refused writes of /"
        );
    }
    passed()
}

/// Writing the same content twice is fine and leaves one file.
pub async fn write_same_content_twice(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let path = put(b, cx, "twice/t.txt", "same\n").await?;
    put(b, cx, "twice/t.txt", "same\n").await?;
    ensure_eq!(bytes_of(b, cx, &path).await?, b"same\n".to_vec(), "content");
    let listing = b.ls(&cx.ctx, &cx.p("twice")?, BIG).await?;
    ensure_eq!(
        paths(&listing.entries),
        abs(cx, &["twice/t.txt"])?,
        "ls twice"
    );
    passed()
}

/// Replacing a file moves its `modified_at` forward: never backwards, and not
/// left unchanged (created_at is kept, but the trait has no way to show it;
/// backends test that themselves).
///
/// A backend's clock may be coarse (S3 reports whole seconds), so the file is
/// replaced again, a tenth of a second apart, until the stamp moves, for at
/// most `STAMP_PATIENCE` tries; a stamp that never moves fails.
pub async fn write_replace_moves_modified_at_forward(b: &dyn Backend, cx: &Ctx) -> Outcome {
    if !cx.caps.modified_at {
        return skipped("the backend does not report modified_at (capability modified_at is off)");
    }
    let path = put(b, cx, "t/stamp.txt", "one").await?;
    let first = stamp_of(b, cx, &path).await?;
    let second = replace_until_moved(b, cx, &path, first, |b, cx, path, i| async move {
        b.write(&cx.ctx, path, &format!("two-{i}"))
            .await
            .map(|_| ())
    })
    .await
    .map_err(|e| e.context("replace by write"))?;
    let _ = replace_until_moved(b, cx, &path, second, |b, cx, path, i| async move {
        let old = if i == 0 {
            "two-".to_owned()
        } else {
            format!("three-{}", i - 1)
        };
        b.edit(&cx.ctx, path, &old, &format!("three-{i}"), false)
            .await
            .map(|_| ())
    })
    .await
    .map_err(|e| e.context("replace by edit"))?;
    passed()
}

/// Replacing a file (write, edit) keeps its `created_at`.
///
/// The trait does not show created_at, so the fixture reads it from the store
/// ([`StoreAccess::created_at`](crate::StoreAccess::created_at)); a fixture that
/// cannot skips this scenario. Where the backend reports `modified_at`, each
/// replacement is repeated until that stamp moves, so the clock has visibly moved
/// on and a created_at reset to "now" would differ.
pub async fn write_replace_keeps_created_at(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let Some(store) = cx.store() else {
        return skipped(
            "the fixture lends no store access to read created_at (Fixture::with_store)",
        );
    };
    let path = put(b, cx, "t/born.txt", "one").await?;
    let Some(born) = store.created_at(&path) else {
        return skipped("the fixture's store access does not show created_at");
    };
    if cx.caps.modified_at {
        let first = stamp_of(b, cx, &path).await?;
        let second = replace_until_moved(b, cx, &path, first, |b, cx, path, i| async move {
            b.write(&cx.ctx, path, &format!("two-{i}"))
                .await
                .map(|_| ())
        })
        .await
        .map_err(|e| e.context("replace by write"))?;
        ensure_eq!(
            store.created_at(&path),
            Some(born.clone()),
            "created_at after replacing writes"
        );
        let _ = replace_until_moved(b, cx, &path, second, |b, cx, path, i| async move {
            let old = if i == 0 {
                "two-".to_owned()
            } else {
                format!("three-{}", i - 1)
            };
            b.edit(&cx.ctx, path, &old, &format!("three-{i}"), false)
                .await
                .map(|_| ())
        })
        .await
        .map_err(|e| e.context("replace by edit"))?;
    } else {
        b.write(&cx.ctx, &path, "two-0").await?;
        ensure_eq!(
            store.created_at(&path),
            Some(born.clone()),
            "created_at after a replacing write"
        );
        b.edit(&cx.ctx, &path, "two-", "three-", false).await?;
    }
    ensure_eq!(
        store.created_at(&path),
        Some(born),
        "created_at after replacing edits"
    );
    passed()
}

/// How many times [`write_replace_moves_modified_at_forward`] replaces the file before
/// it calls the stamp stuck (a tenth of a second apart: 3 s in all).
const STAMP_PATIENCE: usize = 30;

/// Replaces the file at `path` with `replace(b, cx, path, try)` until its stamp is
/// past `before`; fails when it goes backwards or never moves.
async fn replace_until_moved<'a, F, Fut>(
    b: &'a dyn Backend,
    cx: &'a Ctx,
    path: &'a VPath,
    before: jiff::Timestamp,
    replace: F,
) -> Result<jiff::Timestamp, ScenarioError>
where
    F: Fn(&'a dyn Backend, &'a Ctx, &'a VPath, usize) -> Fut,
    Fut: Future<Output = burrow_backend::Result<()>>,
{
    for i in 0..STAMP_PATIENCE {
        if i > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        replace(b, cx, path, i).await?;
        let now = stamp_of(b, cx, path).await?;
        ensure!(
            now >= before,
            "modified_at went backwards on replace: {before} then {now}"
        );
        if now > before {
            return Ok(now);
        }
    }
    fail!("modified_at stayed {before} over {STAMP_PATIENCE} replacements, 0.1 s apart")
}

/// The modified_at of the file at `path`, from `ls` of its parent.
async fn stamp_of(
    b: &dyn Backend,
    cx: &Ctx,
    path: &VPath,
) -> Result<jiff::Timestamp, ScenarioError> {
    let parent = path.parent().unwrap_or_else(VPath::root);
    let listing = b.ls(&cx.ctx, &parent, BIG).await?;
    let Some(entry) = listing.entries.iter().find(|e| e.path == path.as_str()) else {
        fail!(
            "ls {parent} does not show {path}: {}",
            show(&listing.entries)
        );
    };
    let Some(ts) = &entry.modified_at else {
        fail!("{path} has no modified_at although the capability says it does");
    };
    ts.parse::<jiff::Timestamp>()
        .map_err(|e| ScenarioError::new(format!("modified_at {ts:?} is not RFC 3339: {e}")))
}
