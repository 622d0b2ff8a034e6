//! Shadowing: under a mount the default's files are invisible, mutations never reach them, and pages are filled with visible results.

use burrow_backend::{Backend, ErrorKind, GrepQuery};

use crate::support::{composite, ctx, p, paths, put};

/// A composite whose default holds 50 files under the mount at "/a" (all
/// shadowed, sorting before everything else) and 12 visible files, and whose
/// mount holds 3. Returns it with the visible paths in order.
async fn crowded() -> (burrow_composite::CompositeBackend, Vec<String>) {
    let (c, default, mounts) = composite(&["/a"]);
    for i in 0..50 {
        put(
            &default,
            &format!("/a/f{i:02}.txt"),
            "needle in the default\n",
        )
        .await;
    }
    let mut visible = Vec::new();
    for i in 0..3 {
        put(&mounts[0], &format!("/m{i}.txt"), "needle in the mount\n").await;
        visible.push(format!("/a/m{i}.txt"));
    }
    for i in 0..12 {
        put(&default, &format!("/z{i:02}.txt"), "needle at the top\n").await;
        visible.push(format!("/z{i:02}.txt"));
    }
    (c, visible)
}

#[tokio::test]
async fn glob_pages_are_never_short_and_truncated_is_exact() {
    let (c, visible) = crowded().await;
    for limit in 0..=20 {
        let r = c.glob(&ctx(), "**", &p("/"), limit).await.unwrap();
        let want: Vec<String> = visible.iter().take(limit).cloned().collect();
        assert_eq!(paths(&r.files, |f| &f.path), want, "limit {limit}");
        assert_eq!(r.truncated, visible.len() > limit, "limit {limit}");
    }
    let r = c.glob(&ctx(), "*.txt", &p("/"), 10).await.unwrap();
    assert_eq!(r.files.len(), 10);
    assert!(r.truncated);
    // Under the mount only the mount's files exist.
    let r = c.glob(&ctx(), "*", &p("/a"), 10).await.unwrap();
    assert_eq!(
        paths(&r.files, |f| &f.path),
        ["/a/m0.txt", "/a/m1.txt", "/a/m2.txt"]
    );
    assert!(!r.truncated);
    let r = c.glob(&ctx(), "f*.txt", &p("/"), 10).await.unwrap();
    assert!(r.files.is_empty() && !r.truncated);
}

#[tokio::test]
async fn grep_pages_are_never_short_and_truncated_is_exact() {
    let (c, visible) = crowded().await;
    for limit in 0..=20 {
        let r = c
            .grep(&ctx(), &GrepQuery::fixed("needle"), &p("/"), limit)
            .await
            .unwrap();
        let want: Vec<String> = visible.iter().take(limit).cloned().collect();
        assert_eq!(paths(&r.matches, |m| &m.path), want, "limit {limit}");
        assert_eq!(r.truncated, visible.len() > limit, "limit {limit}");
        assert!(
            r.matches
                .iter()
                .all(|m| m.line_number == 1 && !m.line.contains("default"))
        );
    }
    let q = GrepQuery::fixed("needle").with_include("*.txt");
    let r = c.grep(&ctx(), &q, &p("/"), 10).await.unwrap();
    assert_eq!(r.matches.len(), 10);
    assert!(r.truncated);
    let r = c
        .grep(&ctx(), &GrepQuery::fixed("default"), &p("/"), 10)
        .await
        .unwrap();
    assert!(r.matches.is_empty() && !r.truncated);
}

#[tokio::test]
async fn ls_under_a_mount_shows_only_the_mount() {
    let (c, _) = crowded().await;
    let l = c.ls(&ctx(), &p("/a"), 10).await.unwrap();
    assert_eq!(
        paths(&l.entries, |e| &e.path),
        ["/a/m0.txt", "/a/m1.txt", "/a/m2.txt"]
    );
    let l = c.ls(&ctx(), &p("/"), 10).await.unwrap();
    assert_eq!(l.entries.len(), 10);
    assert_eq!(l.entries[0].path, "/a");
    assert!(l.entries[0].is_dir);
    assert!(l.truncated);
    let l = c.ls(&ctx(), &p("/"), 13).await.unwrap();
    assert_eq!(l.entries.len(), 13);
    assert!(!l.truncated);
}

#[tokio::test]
async fn mutations_never_reach_shadowed_files_and_deleting_never_reveals_them() {
    let (c, default, mounts) = composite(&["/m"]);
    put(&default, "/m/same.txt", "the default's copy").await;
    put(&default, "/m/only-default.txt", "shadowed").await;

    let e = c
        .read(&ctx(), &p("/m/only-default.txt"), 0, 10)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    let e = c
        .edit(
            &ctx(),
            &p("/m/only-default.txt"),
            "shadowed",
            "changed",
            false,
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    let e = c
        .delete(&ctx(), &p("/m/only-default.txt"))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);

    put(&c, "/m/same.txt", "the mount's copy").await;
    assert_eq!(
        c.read_bytes(&ctx(), &p("/m/same.txt")).await.unwrap(),
        b"the mount's copy"
    );
    c.delete(&ctx(), &p("/m/same.txt")).await.unwrap();
    let e = c.read_bytes(&ctx(), &p("/m/same.txt")).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(c.ls(&ctx(), &p("/m"), 10).await.unwrap().entries.is_empty());
    assert!(
        c.glob(&ctx(), "**", &p("/"), 10)
            .await
            .unwrap()
            .files
            .is_empty()
    );

    // The default's files are exactly as they were.
    assert_eq!(
        default.read_bytes(&ctx(), &p("/m/same.txt")).await.unwrap(),
        b"the default's copy"
    );
    assert_eq!(
        default
            .read_bytes(&ctx(), &p("/m/only-default.txt"))
            .await
            .unwrap(),
        b"shadowed"
    );
    assert_eq!(mounts[0].file_count(), 0);
}

#[tokio::test]
async fn an_outer_mount_is_shadowed_by_a_nested_one() {
    let (c, _, mounts) = composite(&["/m", "/m/n"]);
    for i in 0..50 {
        put(&mounts[0], &format!("/n/hidden{i:02}.txt"), "needle").await;
    }
    put(&mounts[0], "/o.txt", "needle").await;
    put(&mounts[1], "/inner.txt", "needle").await;
    let all = ["/m/n/inner.txt", "/m/o.txt"];
    for under in ["/", "/m"] {
        for limit in 0..=3 {
            let g = c.glob(&ctx(), "**", &p(under), limit).await.unwrap();
            let want: Vec<&str> = all.iter().copied().take(limit).collect();
            assert_eq!(
                paths(&g.files, |f| &f.path),
                want,
                "glob under {under} limit {limit}"
            );
            assert_eq!(g.truncated, limit < 2, "glob under {under} limit {limit}");
            let r = c
                .grep(&ctx(), &GrepQuery::fixed("needle"), &p(under), limit)
                .await
                .unwrap();
            assert_eq!(
                paths(&r.matches, |m| &m.path),
                want,
                "grep under {under} limit {limit}"
            );
            assert_eq!(r.truncated, limit < 2, "grep under {under} limit {limit}");
        }
    }
    let l = c.ls(&ctx(), &p("/m/n"), 100).await.unwrap();
    assert_eq!(paths(&l.entries, |e| &e.path), ["/m/n/inner.txt"]);
}
