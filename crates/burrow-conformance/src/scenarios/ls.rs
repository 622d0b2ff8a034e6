//! Scenarios for `ls`: direct children only, entry fields, byte order, the root, files and missing paths.

use super::prelude::*;

/// "/" always exists, even in an empty backend.
pub async fn ls_root_exists_on_empty_backend(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let listing = b.ls(&cx.ctx, &VPath::root(), BIG).await?;
    if cx.root.is_root() {
        ensure_eq!(
            paths(&listing.entries),
            Vec::<String>::new(),
            "ls / of a fresh backend"
        );
        ensure!(
            !listing.truncated,
            "ls / of a fresh backend is not truncated"
        );
    }
    passed()
}

/// The entries directly beneath `dir`, not deeper ones.
pub async fn ls_lists_direct_children_only(b: &dyn Backend, cx: &Ctx) -> Outcome {
    put(b, cx, "d/a.txt", "hello").await?;
    put(b, cx, "d/sub/b.txt", "x").await?;
    put(b, cx, "d/sub/deeper/c.txt", "y").await?;
    let listing = b.ls(&cx.ctx, &cx.p("d")?, BIG).await?;
    ensure_eq!(
        paths(&listing.entries),
        abs(cx, &["d/a.txt", "d/sub"])?,
        "ls d"
    );
    ensure!(
        !listing.truncated,
        "ls d with a large limit is not truncated"
    );
    let sub = b.ls(&cx.ctx, &cx.p("d/sub")?, BIG).await?;
    ensure_eq!(
        paths(&sub.entries),
        abs(cx, &["d/sub/b.txt", "d/sub/deeper"])?,
        "ls d/sub"
    );
    passed()
}

/// Files have is_dir false and their byte size; directories is_dir true and no size; names are the last segment.
pub async fn ls_entry_fields(b: &dyn Backend, cx: &Ctx) -> Outcome {
    put(b, cx, "d/file.txt", "hello").await?;
    put(b, cx, "d/dir/inner.txt", "x").await?;
    let listing = b.ls(&cx.ctx, &cx.p("d")?, BIG).await?;
    let [dir, file] = listing.entries.as_slice() else {
        fail!("ls d: expected 2 entries, got {}", show(&listing.entries));
    };
    ensure_eq!(dir.name, "dir", "name of the directory entry");
    ensure_eq!(
        dir.path,
        cx.p("d/dir")?.as_str(),
        "path of the directory entry"
    );
    ensure!(
        dir.is_dir,
        "d/dir is reported as a directory: {}",
        show(dir)
    );
    ensure_eq!(dir.size, None, "a directory entry has no size");
    ensure_eq!(file.name, "file.txt", "name of the file entry");
    ensure_eq!(
        file.path,
        cx.p("d/file.txt")?.as_str(),
        "path of the file entry"
    );
    ensure!(
        !file.is_dir,
        "d/file.txt is reported as a file: {}",
        show(file)
    );
    ensure_eq!(file.size, Some(5), "size of a 5-byte file");
    passed()
}

/// A file's size is its byte count, not its character or line count.
pub async fn ls_size_is_byte_count(b: &dyn Backend, cx: &Ctx) -> Outcome {
    put(b, cx, "s/ascii", "abc\n").await?;
    put(b, cx, "s/accent", "é").await?;
    put(b, cx, "s/crab", "🦀\r\n").await?;
    put_bytes(b, cx, "s/binary", &[0u8; 300]).await?;
    let listing = b.ls(&cx.ctx, &cx.p("s")?, BIG).await?;
    let sizes: Vec<(String, Option<u64>)> = listing
        .entries
        .iter()
        .map(|e| (e.name.clone(), e.size))
        .collect();
    let want = vec![
        ("accent".to_owned(), Some(2)),
        ("ascii".to_owned(), Some(4)),
        ("binary".to_owned(), Some(300)),
        ("crab".to_owned(), Some(6)),
    ];
    ensure_eq!(sizes, want, "ls sizes in bytes");
    passed()
}

/// Entries are sorted by full path in byte order ("/d/a" < "/d/a-x" < "/d/a.txt" < "/d/a0" < "/d/é").
pub async fn ls_sorted_by_byte_order(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let names = [
        "b", "B", "a.txt", "a-x", "a0", "é", "Z", "_u", "~t", "10", "9",
    ];
    for name in names {
        put(b, cx, &format!("d/{name}"), name).await?;
    }
    put(b, cx, "d/a/inner", "dir").await?;
    let mut want = abs(cx, &names.map(|n| format!("d/{n}")))?;
    want.push(cx.p("d/a")?.as_str().to_owned());
    let listing = b.ls(&cx.ctx, &cx.p("d")?, BIG).await?;
    ensure_eq!(
        paths(&listing.entries),
        sorted(want),
        "ls sorts by path bytes"
    );
    passed()
}

/// `ls` of a file: NotADirectory.
pub async fn ls_of_file_is_not_a_directory(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let f = put(b, cx, "f.txt", "x").await?;
    expect_kind(b.ls(&cx.ctx, &f, BIG).await, ErrorKind::NotADirectory)?;
    passed()
}

/// `ls` of a missing path: NotFound, also deep beneath a missing directory.
pub async fn ls_of_missing_is_not_found(b: &dyn Backend, cx: &Ctx) -> Outcome {
    put(b, cx, "here/x", "x").await?;
    for rel in ["nope", "nope/deeper/still", "here/nope"] {
        let err = expect_kind(b.ls(&cx.ctx, &cx.p(rel)?, BIG).await, ErrorKind::NotFound)
            .map_err(|e| e.context(format!("ls {rel}")))?;
        ensure!(
            !err.message().is_empty(),
            "the NotFound message for {rel} is not empty"
        );
    }
    passed()
}

/// A sibling sharing a name prefix ("a" and "ab", "a.b") is not a child: prefix-keyed stores must not confuse them.
pub async fn ls_prefix_sibling_is_not_a_child(b: &dyn Backend, cx: &Ctx) -> Outcome {
    put(b, cx, "p/a/x", "1").await?;
    put(b, cx, "p/ab", "2").await?;
    put(b, cx, "p/a.b/y", "3").await?;
    put(b, cx, "p/a b/z", "4").await?;
    let a = b.ls(&cx.ctx, &cx.p("p/a")?, BIG).await?;
    ensure_eq!(paths(&a.entries), abs(cx, &["p/a/x"])?, "ls p/a");
    let p = b.ls(&cx.ctx, &cx.p("p")?, BIG).await?;
    ensure_eq!(
        paths(&p.entries),
        abs(cx, &["p/a", "p/a b", "p/a.b", "p/ab"])?,
        "ls p"
    );
    passed()
}

/// Listings report `modified_at` as an RFC 3339 timestamp for files, where the backend says it knows it.
pub async fn ls_reports_modified_at(b: &dyn Backend, cx: &Ctx) -> Outcome {
    if !cx.caps.modified_at {
        return skipped("the backend does not report modified_at (capability modified_at is off)");
    }
    put(b, cx, "m/a.txt", "x").await?;
    let listing = b.ls(&cx.ctx, &cx.p("m")?, BIG).await?;
    let [entry] = listing.entries.as_slice() else {
        fail!("ls m: expected one entry, got {}", show(&listing.entries));
    };
    let Some(ts) = &entry.modified_at else {
        fail!(
            "the file entry has no modified_at although the capability says it does: {}",
            show(entry)
        );
    };
    ensure!(
        ts.parse::<jiff::Timestamp>().is_ok(),
        "modified_at {ts:?} is not an RFC 3339 timestamp"
    );
    passed()
}
