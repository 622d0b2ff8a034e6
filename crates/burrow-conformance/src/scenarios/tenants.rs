//! Scenarios for tenant isolation: another tenant's file looks exactly like a missing one, to every operation.

use super::prelude::*;

fn no_tenants() -> Outcome {
    skipped("the backend does not scope files by tenant (capability tenants is off)")
}

/// What `ctx` gets for one operation: success, or the refusal kind and message.
fn seen<T>(result: Result<T, burrow_backend::Error>) -> Result<T, (ErrorKind, String)> {
    result.map_err(|e| (e.kind(), e.message().to_owned()))
}

/// Reading another tenant's file is NotFound with the same message as a truly missing file.
pub async fn tenants_read_looks_missing(b: &dyn Backend, cx: &Ctx) -> Outcome {
    if !cx.caps.tenants {
        return no_tenants();
    }
    let path = cx.p("secret/plan.txt")?;
    b.write(&cx.other, &path, "theirs\n").await?;
    let read_theirs = seen(b.read(&cx.ctx, &path, 0, 10).await);
    let bytes_theirs = seen(b.read_bytes(&cx.ctx, &path).await);
    b.delete(&cx.other, &path).await?;
    let read_missing = seen(b.read(&cx.ctx, &path, 0, 10).await);
    let bytes_missing = seen(b.read_bytes(&cx.ctx, &path).await);
    ensure_eq!(
        read_theirs,
        read_missing,
        "read of another tenant's file vs a missing one"
    );
    ensure_eq!(
        bytes_theirs,
        bytes_missing,
        "read_bytes of another tenant's file vs a missing one"
    );
    ensure!(
        matches!(read_missing, Err((ErrorKind::NotFound, _))),
        "read of a missing file is NotFound: {}",
        show(&read_missing)
    );
    passed()
}

/// Listing another tenant's directory is NotFound as for a missing one; the root shows nothing of theirs.
pub async fn tenants_ls_looks_missing(b: &dyn Backend, cx: &Ctx) -> Outcome {
    if !cx.caps.tenants {
        return no_tenants();
    }
    let path = cx.p("theirs/dir/file.txt")?;
    b.write(&cx.other, &path, "x").await?;
    let theirs = seen(b.ls(&cx.ctx, &cx.p("theirs")?, BIG).await);
    let root = b.ls(&cx.ctx, &VPath::root(), BIG).await?;
    ensure!(
        root.entries.iter().all(|e| !e.path.contains("theirs")),
        "ls / shows another tenant's entries: {}",
        show(&root.entries)
    );
    b.delete(&cx.other, &path).await?;
    if cx.caps.empty_dirs {
        b.delete(&cx.other, &cx.p("theirs/dir")?).await?;
        b.delete(&cx.other, &cx.p("theirs")?).await?;
    }
    let missing = seen(b.ls(&cx.ctx, &cx.p("theirs")?, BIG).await);
    ensure_eq!(
        theirs,
        missing,
        "ls of another tenant's directory vs a missing one"
    );
    passed()
}

/// glob and grep never return another tenant's files.
pub async fn tenants_glob_and_grep_see_nothing(b: &dyn Backend, cx: &Ctx) -> Outcome {
    if !cx.caps.tenants {
        return no_tenants();
    }
    b.write(&cx.other, &cx.p("theirs/a.txt")?, "needle\n")
        .await?;
    b.write(&cx.other, &cx.p("both/b.txt")?, "needle\n").await?;
    let mine = put(b, cx, "both/mine.txt", "needle\n").await?;
    let found = b.glob(&cx.ctx, "**", &cx.root, BIG).await?;
    ensure_eq!(
        paths(&found.files),
        [mine.as_str().to_owned()],
        "glob ** sees only my files"
    );
    let result = b.grep(&cx.ctx, &re("needle"), &cx.root, BIG).await?;
    ensure_eq!(
        hits(&result.matches),
        vec![(mine.as_str().to_owned(), 1, "needle".to_owned())],
        "grep sees only my files"
    );
    let under = b
        .grep(&cx.ctx, &re("needle"), &cx.p("theirs")?, BIG)
        .await?;
    ensure_eq!(
        under.matches.len(),
        0,
        "grep under another tenant's directory"
    );
    let listing = b.ls(&cx.ctx, &cx.p("both")?, BIG).await?;
    ensure_eq!(
        paths(&listing.entries),
        [mine.as_str().to_owned()],
        "ls of a directory both tenants use"
    );
    passed()
}

/// Editing or deleting another tenant's file is NotFound as for a missing one, and their file is untouched.
pub async fn tenants_mutations_look_missing(b: &dyn Backend, cx: &Ctx) -> Outcome {
    if !cx.caps.tenants {
        return no_tenants();
    }
    let path = cx.p("theirs.txt")?;
    let missing = cx.p("nobodys.txt")?;
    b.write(&cx.other, &path, "old text\n").await?;
    let edit_theirs = seen(b.edit(&cx.ctx, &path, "old", "new", false).await).map(|_| ());
    let edit_missing = seen(b.edit(&cx.ctx, &missing, "old", "new", false).await).map(|_| ());
    ensure_eq!(
        edit_theirs.map_err(|(k, m)| (k, m.replace("theirs", "X"))),
        edit_missing.map_err(|(k, m)| (k, m.replace("nobodys", "X"))),
        "edit of another tenant's file vs a missing one"
    );
    let delete_theirs = seen(b.delete(&cx.ctx, &path).await);
    let delete_missing = seen(b.delete(&cx.ctx, &missing).await);
    ensure_eq!(
        delete_theirs.map_err(|(k, m)| (k, m.replace("theirs", "X"))),
        delete_missing.map_err(|(k, m)| (k, m.replace("nobodys", "X"))),
        "delete of another tenant's file vs a missing one"
    );
    ensure_eq!(
        b.read_bytes(&cx.other, &path).await?,
        b"old text\n".to_vec(),
        "their file is untouched"
    );
    passed()
}

/// Two tenants may hold the same path with different content, and even a file where the other has a directory.
pub async fn tenants_same_path_is_independent(b: &dyn Backend, cx: &Ctx) -> Outcome {
    if !cx.caps.tenants {
        return no_tenants();
    }
    let path = cx.p("same.txt")?;
    b.write(&cx.ctx, &path, "mine").await?;
    b.write(&cx.other, &path, "theirs").await?;
    ensure_eq!(
        b.read_bytes(&cx.ctx, &path).await?,
        b"mine".to_vec(),
        "my content"
    );
    ensure_eq!(
        b.read_bytes(&cx.other, &path).await?,
        b"theirs".to_vec(),
        "their content"
    );
    b.delete(&cx.ctx, &path).await?;
    ensure_eq!(
        b.read_bytes(&cx.other, &path).await?,
        b"theirs".to_vec(),
        "their file survives my delete"
    );
    b.write(&cx.other, &cx.p("x/y.txt")?, "their dir").await?;
    b.write(&cx.ctx, &cx.p("x")?, "my file where they have a directory")
        .await?;
    ensure_eq!(
        b.read_bytes(&cx.other, &cx.p("x/y.txt")?).await?,
        b"their dir".to_vec(),
        "their file beneath x"
    );
    ensure_eq!(
        bytes_of(b, cx, &cx.p("x")?).await?,
        b"my file where they have a directory".to_vec(),
        "my file x"
    );
    passed()
}
