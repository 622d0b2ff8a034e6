//! Scenarios for concurrency: many edits of one file lose no update; concurrent writes and deletes keep the tree consistent.
//!
//! Every concurrent operation runs in a task of its own (`tokio::spawn`) on a
//! multi-threaded runtime, released together by a barrier: so two tasks truly
//! run at once on two threads, and a read-modify-write with no await in it
//! is interleaved too (futures joined on one task would only ever interleave
//! at awaits).

use std::sync::Arc;

use burrow_backend::FileContext;
use tokio::runtime::{Handle, RuntimeFlavor};
use tokio::sync::Barrier;

use super::prelude::*;

/// Runs `count` tasks, task `i` running `op(backend, ctx, i)`, each spawned on the
/// current multi-threaded runtime and all started together; returns every error.
async fn spawn_together<F, Fut>(
    b: &dyn Backend,
    cx: &Ctx,
    count: usize,
    op: F,
) -> Result<Vec<String>, ScenarioError>
where
    F: Fn(Arc<dyn Backend>, FileContext, usize) -> Fut,
    Fut: Future<Output = Result<(), String>> + Send + 'static,
{
    let _ = b;
    let flavor = Handle::try_current().map(|h| h.runtime_flavor());
    ensure!(
        matches!(flavor, Ok(RuntimeFlavor::MultiThread)),
        "the concurrency scenarios run on a multi-threaded tokio runtime (got {flavor:?})"
    );
    let shared = cx.shared()?;
    let barrier = Arc::new(Barrier::new(count));
    let handles: Vec<_> = (0..count)
        .map(|i| {
            let barrier = Arc::clone(&barrier);
            let work = op(Arc::clone(&shared), cx.ctx.clone(), i);
            tokio::spawn(async move {
                barrier.wait().await;
                work.await
            })
        })
        .collect();
    let mut errors = Vec::new();
    for (i, handle) in handles.into_iter().enumerate() {
        match handle.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => errors.push(e),
            Err(e) => errors.push(format!("task {i} panicked or was cancelled: {e}")),
        }
    }
    Ok(errors)
}

/// How many tasks edit one file at once.
const EDITORS: usize = 32;
/// How often one task retries an edit refused with Conflict before giving up.
const CONFLICT_RETRIES: usize = 100;

/// 32 tasks each replace their own slot line of one file at once: every update lands.
///
/// An edit may be refused with Conflict (a concurrent change won) and is
/// then retried; an edit that returned success must be in the final content.
pub async fn concurrency_edits_lose_no_update(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let text: String = (0..EDITORS)
        .map(|i| format!("slot-{i:02}: empty\n"))
        .collect();
    let path = put(b, cx, "shared.txt", &text).await?;
    let errors = spawn_together(b, cx, EDITORS, |b, ctx, i| {
        let path = path.clone();
        async move {
            let old = format!("slot-{i:02}: empty");
            let new = format!("slot-{i:02}: done-{i:02}");
            for _ in 0..CONFLICT_RETRIES {
                match b.edit(&ctx, &path, &old, &new, false).await {
                    Ok(r) if r.occurrences == Some(1) => return Ok(()),
                    Ok(r) => return Err(format!("edit of slot {i} reported {}", show(&r))),
                    Err(e) if e.kind() == ErrorKind::Conflict => continue,
                    Err(e) => {
                        return Err(format!(
                            "edit of slot {i} was refused with {}: {:?}",
                            e.kind(),
                            e.message()
                        ));
                    }
                }
            }
            Err(format!(
                "edit of slot {i} met Conflict {CONFLICT_RETRIES} times"
            ))
        }
    })
    .await?;
    ensure!(
        errors.is_empty(),
        "concurrent edits failed: {}",
        errors.join("; ")
    );
    let want: Vec<String> = (0..EDITORS)
        .map(|i| format!("slot-{i:02}: done-{i:02}"))
        .collect();
    ensure_eq!(
        lines_of(b, cx, &path).await?,
        want,
        "every slot was updated (no lost update)"
    );
    passed()
}

/// Concurrent `replace_all` edits of different tokens in one file all land.
pub async fn concurrency_replace_all_edits_all_land(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let tokens: Vec<String> = (0..16).map(|i| format!("<t{i:02}>")).collect();
    let text = format!("{}\n{}\n", tokens.join(" "), tokens.join(","));
    let path = put(b, cx, "tokens.txt", &text).await?;
    let errors = spawn_together(b, cx, tokens.len(), |b, ctx, i| {
        let path = path.clone();
        let t = tokens[i].clone();
        async move {
            let new = t.replace('<', "[").replace('>', "]");
            for _ in 0..CONFLICT_RETRIES {
                match b.edit(&ctx, &path, &t, &new, true).await {
                    Ok(r) if r.occurrences == Some(2) => return Ok(()),
                    Ok(r) => return Err(format!("edit of {t} reported {}", show(&r))),
                    Err(e) if e.kind() == ErrorKind::Conflict => continue,
                    Err(e) => {
                        return Err(format!(
                            "edit of {t} was refused with {}: {:?}",
                            e.kind(),
                            e.message()
                        ));
                    }
                }
            }
            Err(format!("edit of {t} met Conflict {CONFLICT_RETRIES} times"))
        }
    })
    .await?;
    ensure!(
        errors.is_empty(),
        "concurrent edits failed: {}",
        errors.join("; ")
    );
    let done: Vec<String> = tokens
        .iter()
        .map(|t| t.replace('<', "[").replace('>', "]"))
        .collect();
    ensure_eq!(
        lines_of(b, cx, &path).await?,
        [done.join(" "), done.join(",")],
        "every token was replaced"
    );
    passed()
}

/// Concurrent writes of new files, in new directories and in one shared new directory, all appear.
pub async fn concurrency_writes_create_every_file(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let mut rels = Vec::new();
    for i in 0..32 {
        rels.push(format!("c/own{i:02}/deep/file.txt"));
        rels.push(format!("c/shared/new/{i:02}.txt"));
    }
    let mut targets = Vec::new();
    for rel in &rels {
        targets.push((rel.clone(), cx.p(rel)?));
    }
    let errors = spawn_together(b, cx, targets.len(), |b, ctx, i| {
        let (rel, path) = targets[i].clone();
        async move {
            b.write(&ctx, &path, &rel).await.map(|_| ()).map_err(|e| {
                format!(
                    "write {rel} was refused with {}: {:?}",
                    e.kind(),
                    e.message()
                )
            })
        }
    })
    .await?;
    ensure!(
        errors.is_empty(),
        "concurrent writes failed: {}",
        errors.join("; ")
    );
    let found = b.glob(&cx.ctx, "**", &cx.p("c")?, BIG).await?;
    ensure_eq!(
        paths(&found.files),
        sorted(abs(cx, &rels)?),
        "glob after concurrent writes"
    );
    let shared = b.ls(&cx.ctx, &cx.p("c/shared/new")?, BIG).await?;
    ensure_eq!(shared.entries.len(), 32, "ls of the shared directory");
    let c = b.ls(&cx.ctx, &cx.p("c")?, BIG).await?;
    ensure_eq!(
        c.entries.len(),
        33,
        "ls of c: 32 own directories and shared"
    );
    for rel in &rels {
        ensure_eq!(
            bytes_of(b, cx, &cx.p(rel)?).await?,
            rel.as_bytes().to_vec(),
            "content of {rel}"
        );
    }
    passed()
}

/// Concurrent deletes and overwrites of different files in one directory keep exactly the survivors.
pub async fn concurrency_deletes_and_writes_interleave(b: &dyn Backend, cx: &Ctx) -> Outcome {
    for i in 0..32 {
        put(b, cx, &format!("m/{i:02}.txt"), "old").await?;
    }
    let mut targets = Vec::new();
    for i in 0..32 {
        targets.push(cx.p(&format!("m/{i:02}.txt"))?);
    }
    let errors = spawn_together(b, cx, targets.len(), |b, ctx, i| {
        let path = targets[i].clone();
        async move {
            let result = if i % 2 == 0 {
                b.delete(&ctx, &path).await
            } else {
                b.write(&ctx, &path, "new").await.map(|_| ())
            };
            result.map_err(|e| {
                format!(
                    "op on {path} was refused with {}: {:?}",
                    e.kind(),
                    e.message()
                )
            })
        }
    })
    .await?;
    ensure!(
        errors.is_empty(),
        "concurrent operations failed: {}",
        errors.join("; ")
    );
    let want: Vec<String> = (0..32)
        .filter(|i| i % 2 == 1)
        .map(|i| format!("m/{i:02}.txt"))
        .collect();
    let listing = b.ls(&cx.ctx, &cx.p("m")?, BIG).await?;
    ensure_eq!(paths(&listing.entries), abs(cx, &want)?, "survivors");
    for rel in &want {
        ensure_eq!(
            bytes_of(b, cx, &cx.p(rel)?).await?,
            b"new".to_vec(),
            "content of {rel}"
        );
    }
    passed()
}

/// What one concurrent change beneath the tree being deleted was.
#[derive(Clone)]
enum Beneath {
    /// A write of a new file (`rel`, content `rel`).
    Write(String),
    /// A `make_dir` with `parents` (`rel`).
    MakeDir(String),
}

/// `delete_tree` of a 40-file tree while 40 writes and directories are made beneath it: one serial order.
///
/// Every change either lands before the removal (and is gone with the
/// tree) or after it (and stands, whole); the only refusal a change may meet
/// is Conflict. No file of the original tree remains, and every directory
/// listed holds a surviving file or is (above) a directory that was made.
pub async fn concurrency_delete_tree_excludes_changes_beneath(
    b: &dyn Backend,
    cx: &Ctx,
) -> Outcome {
    const DIRS: [&str; 4] = ["t/a", "t/a/x", "t/b", "t/b/y/z"];
    let mut original = Vec::new();
    for i in 0..40 {
        let rel = format!("{}/f{i:02}.txt", DIRS[i % DIRS.len()]);
        put(b, cx, &rel, &rel).await?;
        original.push(rel);
    }
    let mut changes = Vec::new();
    for i in 0..40 {
        let dir = DIRS[i % DIRS.len()];
        changes.push(match i % 4 {
            0 if cx.caps.make_dir => Beneath::MakeDir(format!("{dir}/made{i:02}/deep")),
            1 => Beneath::Write(format!("{dir}/new{i:02}/n.txt")),
            _ => Beneath::Write(format!("{dir}/n{i:02}.txt")),
        });
    }
    let mut targets = Vec::new();
    for change in &changes {
        let rel = match change {
            Beneath::Write(rel) | Beneath::MakeDir(rel) => rel,
        };
        targets.push((change.clone(), cx.p(rel)?));
    }
    let t = cx.p("t")?;
    let landed = Arc::new(std::sync::Mutex::new(vec![None; changes.len() + 1]));
    let errors = spawn_together(b, cx, changes.len() + 1, |b, ctx, i| {
        let t = t.clone();
        let target = i.checked_sub(1).map(|k| targets[k].clone());
        let landed = Arc::clone(&landed);
        async move {
            let (what, result) = match target {
                None => ("delete_tree t".to_owned(), b.delete_tree(&ctx, &t).await),
                Some((Beneath::Write(rel), path)) => (
                    format!("write {rel}"),
                    b.write(&ctx, &path, &rel).await.map(|_| ()),
                ),
                Some((Beneath::MakeDir(rel), path)) => (
                    format!("make_dir -p {rel}"),
                    b.make_dir(&ctx, &path, true).await,
                ),
            };
            let ok = match result {
                Ok(()) => true,
                Err(e) if e.kind() == ErrorKind::Conflict => false,
                Err(e) => {
                    return Err(format!(
                        "{what} was refused with {}: {:?}",
                        e.kind(),
                        e.message()
                    ));
                }
            };
            if let Ok(mut landed) = landed.lock() {
                landed[i] = Some(ok);
            }
            Ok(())
        }
    })
    .await?;
    ensure!(
        errors.is_empty(),
        "changes beside delete_tree failed: {}",
        errors.join("; ")
    );
    let landed: Vec<bool> = landed
        .lock()
        .map_err(|_| ScenarioError::new("a task panicked holding the outcomes"))?
        .iter()
        .map(|o| o.unwrap_or(false))
        .collect();
    let found = b.glob(&cx.ctx, "**", &cx.root, BIG).await?;
    let files = paths(&found.files);
    if !landed[0] {
        // A documented refusal (Conflict) removes nothing.
        for rel in &original {
            ensure_eq!(
                bytes_of(b, cx, &cx.p(rel)?).await?,
                rel.as_bytes().to_vec(),
                "{rel} after a refused delete_tree"
            );
        }
        return passed();
    }
    let mut allowed = Vec::new();
    let mut made = Vec::new();
    for (k, (change, path)) in targets.iter().enumerate() {
        match change {
            Beneath::Write(rel) if landed[k + 1] => allowed.push((path.as_str().to_owned(), rel)),
            Beneath::MakeDir(_) if landed[k + 1] => made.push(path.as_str().to_owned()),
            _ => {}
        }
    }
    for file in &files {
        let Some((_, rel)) = allowed.iter().find(|(p, _)| p == file) else {
            fail!("{file} stands after delete_tree t, and no write that succeeded made it");
        };
        ensure_eq!(
            bytes_of(b, cx, &VPath::parse(file)?).await?,
            rel.as_bytes().to_vec(),
            "content of {file}, written after delete_tree t"
        );
    }
    let mut stack = vec![cx.root.clone()];
    while let Some(dir) = stack.pop() {
        let listing = b.ls(&cx.ctx, &dir, BIG).await;
        let listing = match listing {
            Err(e) if e.kind() == ErrorKind::NotFound && dir == cx.root => continue,
            other => other?,
        };
        for entry in listing.entries.iter().filter(|e| e.is_dir) {
            let beneath = format!("{}/", entry.path);
            let holds = files.iter().any(|f| f.starts_with(&beneath))
                || made
                    .iter()
                    .any(|m| *m == entry.path || m.starts_with(&beneath));
            ensure!(
                holds,
                "{} is listed after delete_tree t, but holds no file and was not made",
                entry.path
            );
            stack.push(VPath::parse(&entry.path)?);
        }
    }
    passed()
}
