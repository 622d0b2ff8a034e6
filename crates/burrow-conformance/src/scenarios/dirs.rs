//! Scenarios for `make_dir` and `delete_tree`: made directories that stay, trees removed whole, and what stands beneath a file.

use super::prelude::*;

const NO_MAKE_DIR: &str = "the backend cannot make directories (capability make_dir is off)";

/// A made directory is listed as a directory, lists empty, outlives its last file and goes when deleted.
pub async fn make_dir_is_listed_and_stays(b: &dyn Backend, cx: &Ctx) -> Outcome {
    if !cx.caps.make_dir {
        return skipped(NO_MAKE_DIR);
    }
    put(b, cx, "keep.txt", "k").await?;
    let m = cx.p("m")?;
    b.make_dir(&cx.ctx, &m, false).await?;
    let top = b.ls(&cx.ctx, &cx.root, BIG).await?;
    ensure_eq!(
        paths(&top.entries),
        abs(cx, &["keep.txt", "m"])?,
        "ls after mkdir"
    );
    ensure!(
        top.entries.iter().any(|e| e.is_dir && e.path == m.as_str()),
        "the made directory is listed as a directory"
    );
    let inside = b.ls(&cx.ctx, &m, BIG).await?;
    ensure_eq!(
        paths(&inside.entries),
        Vec::<String>::new(),
        "ls of the made directory"
    );
    let f = put(b, cx, "m/f.txt", "x").await?;
    b.delete(&cx.ctx, &f).await?;
    let inside = b.ls(&cx.ctx, &m, BIG).await?;
    ensure_eq!(
        paths(&inside.entries),
        Vec::<String>::new(),
        "ls of the made directory after its last file went"
    );
    let found = b.glob(&cx.ctx, "**", &cx.root, BIG).await?;
    ensure_eq!(
        paths(&found.files),
        abs(cx, &["keep.txt"])?,
        "glob lists no directories"
    );
    expect_kind(b.read(&cx.ctx, &m, 0, 10).await, ErrorKind::IsADirectory)?;
    expect_kind(b.write(&cx.ctx, &m, "file?").await, ErrorKind::IsADirectory)?;
    b.delete(&cx.ctx, &m).await?;
    expect_kind(b.ls(&cx.ctx, &m, BIG).await, ErrorKind::NotFound)?;
    passed()
}

/// Without `parents` a missing parent is NotFound and an existing directory AlreadyExists; with it both are fine.
pub async fn make_dir_parents(b: &dyn Backend, cx: &Ctx) -> Outcome {
    if !cx.caps.make_dir {
        return skipped(NO_MAKE_DIR);
    }
    put(b, cx, "x.txt", "x").await?;
    let deep = cx.p("p/q/r")?;
    let before = snapshot(b, cx).await?;
    expect_kind(b.make_dir(&cx.ctx, &deep, false).await, ErrorKind::NotFound)?;
    ensure_unchanged(b, cx, &before, "mkdir with a missing parent").await?;
    b.make_dir(&cx.ctx, &deep, true).await?;
    let q = b.ls(&cx.ctx, &cx.p("p/q")?, BIG).await?;
    ensure_eq!(
        paths(&q.entries),
        abs(cx, &["p/q/r"])?,
        "ls p/q after mkdir -p"
    );
    let after = snapshot(b, cx).await?;
    b.make_dir(&cx.ctx, &deep, true).await?;
    expect_kind(
        b.make_dir(&cx.ctx, &deep, false).await,
        ErrorKind::AlreadyExists,
    )?;
    expect_kind(
        b.make_dir(&cx.ctx, &cx.p("p")?, false).await,
        ErrorKind::AlreadyExists,
    )?;
    b.make_dir(&cx.ctx, &VPath::root(), true).await?;
    expect_kind(
        b.make_dir(&cx.ctx, &VPath::root(), false).await,
        ErrorKind::AlreadyExists,
    )?;
    ensure_unchanged(b, cx, &after, "mkdir of existing directories").await?;
    b.make_dir(&cx.ctx, &cx.p("p/q/r/s")?, false).await?;
    let r = b.ls(&cx.ctx, &deep, BIG).await?;
    ensure_eq!(
        paths(&r.entries),
        abs(cx, &["p/q/r/s"])?,
        "ls p/q/r after mkdir s"
    );
    passed()
}

/// A file at the path is AlreadyExists, a file among its parents NotADirectory; nothing is made.
pub async fn make_dir_over_a_file_is_refused(b: &dyn Backend, cx: &Ctx) -> Outcome {
    if !cx.caps.make_dir {
        return skipped(NO_MAKE_DIR);
    }
    let f = put(b, cx, "d/f.txt", "x").await?;
    let before = snapshot(b, cx).await?;
    for parents in [false, true] {
        expect_kind(
            b.make_dir(&cx.ctx, &f, parents).await,
            ErrorKind::AlreadyExists,
        )
        .map_err(|e| e.context(format!("mkdir over a file, parents {parents}")))?;
        expect_kind(
            b.make_dir(&cx.ctx, &cx.p("d/f.txt/sub")?, parents).await,
            ErrorKind::NotADirectory,
        )
        .map_err(|e| e.context(format!("mkdir beneath a file, parents {parents}")))?;
    }
    ensure_unchanged(b, cx, &before, "mkdir over and beneath a file").await?;
    ensure_eq!(
        bytes_of(b, cx, &f).await?,
        b"x".to_vec(),
        "the file in the way"
    );
    passed()
}

/// `delete_tree` removes a directory with every file and directory beneath it, and no prefix sibling.
pub async fn delete_tree_removes_everything_beneath(b: &dyn Backend, cx: &Ctx) -> Outcome {
    for rel in [
        "d/a.txt",
        "d/sub/b.txt",
        "d/sub/deep/c.txt",
        "d.b",
        "db/x",
        "d-x/y",
    ] {
        put(b, cx, rel, rel).await?;
    }
    let d = cx.p("d")?;
    b.delete_tree(&cx.ctx, &d).await?;
    expect_kind(b.ls(&cx.ctx, &d, BIG).await, ErrorKind::NotFound)?;
    expect_kind(
        b.read(&cx.ctx, &cx.p("d/sub/b.txt")?, 0, 10).await,
        ErrorKind::NotFound,
    )?;
    let found = b.glob(&cx.ctx, "**", &cx.root, BIG).await?;
    ensure_eq!(
        paths(&found.files),
        abs(cx, &["d-x/y", "d.b", "db/x"])?,
        "files after delete_tree d"
    );
    let top = b.ls(&cx.ctx, &cx.root, BIG).await?;
    ensure_eq!(
        paths(&top.entries),
        abs(cx, &["d-x", "d.b", "db"])?,
        "ls after delete_tree d"
    );
    passed()
}

/// `delete_tree` of a file removes that file; of a subdirectory, leaves its parent and siblings.
pub async fn delete_tree_of_a_file_or_subdirectory(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let f = put(b, cx, "top/f.txt", "f").await?;
    put(b, cx, "top/keep.txt", "k").await?;
    put(b, cx, "top/sub/x.txt", "x").await?;
    put(b, cx, "top/sub/y/z.txt", "z").await?;
    b.delete_tree(&cx.ctx, &f).await?;
    expect_kind(b.read_bytes(&cx.ctx, &f).await, ErrorKind::NotFound)?;
    b.delete_tree(&cx.ctx, &cx.p("top/sub")?).await?;
    let top = b.ls(&cx.ctx, &cx.p("top")?, BIG).await?;
    ensure_eq!(paths(&top.entries), abs(cx, &["top/keep.txt"])?, "ls top");
    passed()
}

/// `delete_tree` of a missing path (or one beneath a file) is NotFound, of "/" InvalidPath; nothing goes.
pub async fn delete_tree_refusals_change_nothing(b: &dyn Backend, cx: &Ctx) -> Outcome {
    put(b, cx, "d/x.txt", "x").await?;
    put(b, cx, "f.txt", "f").await?;
    let before = snapshot(b, cx).await?;
    for rel in ["nope", "d/nope", "nope/deeper", "f.txt/child"] {
        expect_kind(
            b.delete_tree(&cx.ctx, &cx.p(rel)?).await,
            ErrorKind::NotFound,
        )
        .map_err(|e| e.context(format!("delete_tree {rel}")))?;
    }
    expect_kind(
        b.delete_tree(&cx.ctx, &VPath::root()).await,
        ErrorKind::InvalidPath,
    )?;
    ensure_unchanged(b, cx, &before, "refused delete_tree").await?;
    passed()
}

/// `delete_tree` removes made directories, empty or not, with the files among them.
pub async fn delete_tree_removes_made_directories(b: &dyn Backend, cx: &Ctx) -> Outcome {
    if !cx.caps.make_dir {
        return skipped(NO_MAKE_DIR);
    }
    b.make_dir(&cx.ctx, &cx.p("a/b/c")?, true).await?;
    b.make_dir(&cx.ctx, &cx.p("a/e")?, true).await?;
    put(b, cx, "a/b/f.txt", "f").await?;
    put(b, cx, "keep/k.txt", "k").await?;
    let a = cx.p("a")?;
    expect_kind(b.delete(&cx.ctx, &a).await, ErrorKind::DirectoryNotEmpty)?;
    b.delete_tree(&cx.ctx, &a).await?;
    expect_kind(b.ls(&cx.ctx, &a, BIG).await, ErrorKind::NotFound)?;
    let top = b.ls(&cx.ctx, &cx.root, BIG).await?;
    ensure_eq!(
        paths(&top.entries),
        abs(cx, &["keep"])?,
        "ls after delete_tree a"
    );
    passed()
}

/// Nothing stands beneath a file: reading, listing or deleting there is NotFound, writing there NotADirectory.
pub async fn beneath_a_file_is_not_found(b: &dyn Backend, cx: &Ctx) -> Outcome {
    put(b, cx, "dir/file.txt", "x").await?;
    let child = cx.p("dir/file.txt/child")?;
    let before = snapshot(b, cx).await?;
    expect_kind(b.read(&cx.ctx, &child, 0, 10).await, ErrorKind::NotFound)
        .map_err(|e| e.context("read beneath a file"))?;
    expect_kind(b.read_bytes(&cx.ctx, &child).await, ErrorKind::NotFound)
        .map_err(|e| e.context("read_bytes beneath a file"))?;
    expect_kind(b.ls(&cx.ctx, &child, BIG).await, ErrorKind::NotFound)
        .map_err(|e| e.context("ls beneath a file"))?;
    expect_kind(b.delete(&cx.ctx, &child).await, ErrorKind::NotFound)
        .map_err(|e| e.context("delete beneath a file"))?;
    expect_kind(
        b.write(&cx.ctx, &child, "y").await,
        ErrorKind::NotADirectory,
    )
    .map_err(|e| e.context("write beneath a file"))?;
    ensure_unchanged(b, cx, &before, "operations beneath a file").await?;
    passed()
}
