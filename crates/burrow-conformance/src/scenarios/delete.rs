//! Scenarios for `delete`: files, non-empty and empty directories, the root, and implicit directories.

use super::prelude::*;

/// Deleting a file removes it, and only it.
pub async fn delete_removes_file(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let gone = put(b, cx, "d/gone.txt", "x").await?;
    put(b, cx, "d/kept.txt", "y").await?;
    b.delete(&cx.ctx, &gone).await?;
    expect_kind(b.read(&cx.ctx, &gone, 0, 10).await, ErrorKind::NotFound)?;
    expect_kind(b.read_bytes(&cx.ctx, &gone).await, ErrorKind::NotFound)?;
    let listing = b.ls(&cx.ctx, &cx.p("d")?, BIG).await?;
    ensure_eq!(
        paths(&listing.entries),
        abs(cx, &["d/kept.txt"])?,
        "ls d after delete"
    );
    let found = b.glob(&cx.ctx, "**", &cx.root, BIG).await?;
    ensure_eq!(
        paths(&found.files),
        abs(cx, &["d/kept.txt"])?,
        "glob ** after delete"
    );
    passed()
}

/// A deleted file can be written again, with fresh content.
pub async fn delete_then_write_again(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let path = put(b, cx, "again.txt", "first version, long\n").await?;
    b.delete(&cx.ctx, &path).await?;
    put(b, cx, "again.txt", "2nd").await?;
    ensure_eq!(
        bytes_of(b, cx, &path).await?,
        b"2nd".to_vec(),
        "content after delete and write"
    );
    passed()
}

/// Deleting a missing path: NotFound.
pub async fn delete_missing_is_not_found(b: &dyn Backend, cx: &Ctx) -> Outcome {
    put(b, cx, "d/x.txt", "x").await?;
    let before = snapshot(b, cx).await?;
    for rel in ["nope.txt", "d/nope.txt", "nope/deeper.txt"] {
        expect_kind(b.delete(&cx.ctx, &cx.p(rel)?).await, ErrorKind::NotFound)
            .map_err(|e| e.context(format!("delete {rel}")))?;
    }
    ensure_unchanged(b, cx, &before, "deleting missing paths").await?;
    passed()
}

/// Deleting "/": InvalidPath.
pub async fn delete_root_is_invalid_path(b: &dyn Backend, cx: &Ctx) -> Outcome {
    put(b, cx, "x.txt", "x").await?;
    let before = snapshot(b, cx).await?;
    expect_kind(
        b.delete(&cx.ctx, &VPath::root()).await,
        ErrorKind::InvalidPath,
    )?;
    ensure_unchanged(b, cx, &before, "deleting /").await?;
    passed()
}

/// A directory with entries, direct or deeper: DirectoryNotEmpty, every file kept.
pub async fn delete_non_empty_directory_is_refused(b: &dyn Backend, cx: &Ctx) -> Outcome {
    put(b, cx, "d/a.txt", "a").await?;
    put(b, cx, "n/sub/deep.txt", "b").await?;
    let before = snapshot(b, cx).await?;
    for rel in ["d", "n", "n/sub"] {
        expect_kind(
            b.delete(&cx.ctx, &cx.p(rel)?).await,
            ErrorKind::DirectoryNotEmpty,
        )
        .map_err(|e| e.context(format!("delete {rel}")))?;
    }
    ensure_unchanged(b, cx, &before, "deleting non-empty directories").await?;
    passed()
}

/// Deleting "a" does not touch its prefix siblings "ab" and "a.b", and vice versa.
pub async fn delete_prefix_sibling_untouched(b: &dyn Backend, cx: &Ctx) -> Outcome {
    put(b, cx, "a/x", "1").await?;
    let ab = put(b, cx, "ab", "2").await?;
    put(b, cx, "a.b", "3").await?;
    expect_kind(
        b.delete(&cx.ctx, &cx.p("a")?).await,
        ErrorKind::DirectoryNotEmpty,
    )?;
    b.delete(&cx.ctx, &ab).await?;
    let found = b.glob(&cx.ctx, "**", &cx.root, BIG).await?;
    ensure_eq!(
        paths(&found.files),
        abs(cx, &["a.b", "a/x"])?,
        "files after deleting ab"
    );
    passed()
}

/// Without `empty_dirs`, a directory disappears with its last file, and so do its emptied parents.
pub async fn delete_last_file_removes_implicit_directories(b: &dyn Backend, cx: &Ctx) -> Outcome {
    if cx.caps.empty_dirs {
        return skipped("the backend keeps empty directories (capability empty_dirs is on)");
    }
    let last = put(b, cx, "top/mid/leaf/only.txt", "x").await?;
    put(b, cx, "top/keep.txt", "y").await?;
    b.delete(&cx.ctx, &last).await?;
    for rel in ["top/mid/leaf", "top/mid"] {
        expect_kind(b.ls(&cx.ctx, &cx.p(rel)?, BIG).await, ErrorKind::NotFound)
            .map_err(|e| e.context(format!("ls {rel} after its last file went")))?;
        expect_kind(b.delete(&cx.ctx, &cx.p(rel)?).await, ErrorKind::NotFound)
            .map_err(|e| e.context(format!("delete {rel} after its last file went")))?;
    }
    let top = b.ls(&cx.ctx, &cx.p("top")?, BIG).await?;
    ensure_eq!(paths(&top.entries), abs(cx, &["top/keep.txt"])?, "ls top");
    passed()
}

/// With `empty_dirs`, a directory stays (empty) after its last file is deleted; then it can be deleted itself.
pub async fn delete_last_file_keeps_empty_directory(b: &dyn Backend, cx: &Ctx) -> Outcome {
    if !cx.caps.empty_dirs {
        return skipped("directories are implicit here (capability empty_dirs is off)");
    }
    let last = put(b, cx, "top/mid/only.txt", "x").await?;
    b.delete(&cx.ctx, &last).await?;
    let mid = b.ls(&cx.ctx, &cx.p("top/mid")?, BIG).await?;
    ensure_eq!(
        paths(&mid.entries),
        Vec::<String>::new(),
        "ls of the emptied directory"
    );
    ensure!(!mid.truncated, "ls of an empty directory is not truncated");
    let top = b.ls(&cx.ctx, &cx.p("top")?, BIG).await?;
    ensure_eq!(paths(&top.entries), abs(cx, &["top/mid"])?, "ls top");
    ensure!(
        top.entries.iter().all(|e| e.is_dir),
        "top/mid is still a directory"
    );
    expect_kind(
        b.delete(&cx.ctx, &cx.p("top")?).await,
        ErrorKind::DirectoryNotEmpty,
    )
    .map_err(|e| e.context("top still holds the empty directory mid"))?;
    b.delete(&cx.ctx, &cx.p("top/mid")?).await?;
    expect_kind(
        b.ls(&cx.ctx, &cx.p("top/mid")?, BIG).await,
        ErrorKind::NotFound,
    )?;
    b.delete(&cx.ctx, &cx.p("top")?).await?;
    expect_kind(b.ls(&cx.ctx, &cx.p("top")?, BIG).await, ErrorKind::NotFound)?;
    passed()
}

/// With `empty_dirs`, an empty directory is still a directory: writing, reading or editing it as a file is refused.
pub async fn delete_empty_directory_still_blocks_files(b: &dyn Backend, cx: &Ctx) -> Outcome {
    if !cx.caps.empty_dirs {
        return skipped("directories are implicit here (capability empty_dirs is off)");
    }
    let last = put(b, cx, "e/only.txt", "x").await?;
    b.delete(&cx.ctx, &last).await?;
    let e = cx.p("e")?;
    expect_kind(
        b.write(&cx.ctx, &e, "file now?").await,
        ErrorKind::IsADirectory,
    )?;
    expect_kind(b.read(&cx.ctx, &e, 0, 10).await, ErrorKind::IsADirectory)?;
    expect_kind(b.read_bytes(&cx.ctx, &e).await, ErrorKind::IsADirectory)?;
    expect_kind(
        b.edit(&cx.ctx, &e, "x", "y", false).await,
        ErrorKind::IsADirectory,
    )?;
    let found = b.glob(&cx.ctx, "**", &cx.root, BIG).await?;
    ensure_eq!(
        paths(&found.files),
        Vec::<String>::new(),
        "glob lists no directories"
    );
    passed()
}
