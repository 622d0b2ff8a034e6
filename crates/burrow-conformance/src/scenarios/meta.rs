//! Scenarios for what is common to every method: constant capabilities, lock keys, and refusal messages.

use super::prelude::*;

/// `capabilities()` is constant for the life of the backend.
pub async fn capabilities_are_constant(b: &dyn Backend, cx: &Ctx) -> Outcome {
    ensure_eq!(b.capabilities(), cx.caps, "capabilities read twice");
    put(b, cx, "c/x.txt", "x").await?;
    b.delete(&cx.ctx, &cx.p("c/x.txt")?).await?;
    ensure_eq!(b.capabilities(), cx.caps, "capabilities after mutations");
    ensure_eq!(
        cx.caps.exec,
        b.as_sandbox().is_some(),
        "capability exec agrees with as_sandbox()"
    );
    passed()
}

/// Two mutations of the same path by the same tenant share a lock key, whatever the run or effect key.
pub async fn locks_same_path_share_a_key(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let path = cx.p("locked/file.txt")?;
    let first = b.locks(&cx.ctx, &path);
    ensure!(
        !first.is_empty(),
        "a mutation of {path} holds at least one lock key"
    );
    let again = b.locks(
        &cx.ctx.with_run_id("another-run").with_effect_key("k1"),
        &cx.p("locked//./file.txt")?,
    );
    ensure!(
        first.iter().any(|k| again.contains(k)),
        "two mutations of {path} by one tenant share a key: {} vs {}",
        show(&first),
        show(&again)
    );
    ensure_eq!(b.locks(&cx.ctx, &path), first, "lock keys are stable");
    passed()
}

/// Refusals name the virtual path, in one line, and never the host path beneath the backend.
pub async fn errors_name_virtual_paths_only(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let dir = put(b, cx, "errs/dir/inner.txt", "x")
        .await?
        .parent()
        .unwrap_or_else(VPath::root);
    let file = put(b, cx, "errs/file.txt", "x").await?;
    let bin = put_bytes(b, cx, "errs/bin.dat", &[0xff, 0xfe, 0xfd]).await?;
    let missing = cx.p("errs/missing.txt")?;
    let named = [
        (
            missing.clone(),
            expect_kind(b.read(&cx.ctx, &missing, 0, 1).await, ErrorKind::NotFound)?,
        ),
        (
            missing.clone(),
            expect_kind(b.read_bytes(&cx.ctx, &missing).await, ErrorKind::NotFound)?,
        ),
        (
            missing.clone(),
            expect_kind(b.delete(&cx.ctx, &missing).await, ErrorKind::NotFound)?,
        ),
        (
            dir.clone(),
            expect_kind(b.read(&cx.ctx, &dir, 0, 1).await, ErrorKind::IsADirectory)?,
        ),
        (
            dir.clone(),
            expect_kind(b.write(&cx.ctx, &dir, "x").await, ErrorKind::IsADirectory)?,
        ),
        (
            file.clone(),
            expect_kind(b.ls(&cx.ctx, &file, 1).await, ErrorKind::NotADirectory)?,
        ),
        (
            bin.clone(),
            expect_kind(b.read(&cx.ctx, &bin, 0, 1).await, ErrorKind::NotText)?,
        ),
    ];
    let mut messages: Vec<String> = Vec::new();
    for (path, err) in &named {
        ensure!(
            err.message().contains(path.as_str()),
            "the {} refusal names the virtual path {path}: {:?}",
            err.kind(),
            err.message()
        );
        messages.push(err.message().to_owned());
    }
    for result in [
        b.grep(&cx.ctx, &re("("), &cx.root, 1).await.map(|_| ()),
        b.glob(&cx.ctx, "[", &cx.root, 1).await.map(|_| ()),
        b.edit(&cx.ctx, &file, "absent", "x", false)
            .await
            .map(|_| ()),
        b.read(&cx.ctx, &file, 9, 1).await.map(|_| ()),
    ] {
        messages.push(expect_refusal(result)?.message().to_owned());
    }
    let host_root = cx.host().and_then(|h| h.host_root());
    for message in &messages {
        ensure!(!message.trim().is_empty(), "a refusal message is not empty");
        ensure!(
            !message.contains('\n'),
            "a refusal message is one line: {message:?}"
        );
        if let Some(root) = &host_root {
            ensure!(
                !message.contains(root.as_str()),
                "a refusal message shows the host path {root:?}: {message:?}"
            );
        }
    }
    passed()
}
