//! glob and grep across mounts agree with one flat backend holding the same visible files, for every pattern shape.

use burrow_backend::{Backend, ErrorKind, GrepQuery};
use burrow_composite::CompositeBackend;
use burrow_state::StateBackend;

use crate::support::{composite, ctx, p, paths, put};

const VISIBLE: &[&str] = &[
    "/top.rs",
    "/src/lib.rs",
    "/src/m/x.rs",
    "/m/a.rs",
    "/m/src/b.rs",
    "/m/src/deep/c.txt",
    "/m/n/d.rs",
    "/m/n/src/e.rs",
    "/d/m/f.rs",
    "/d/m/src/g.txt",
    "/d/h.txt",
    "/d/.hidden.rs",
];

/// Files the parts hold where a mount shadows them.
const SHADOWED: &[(usize, &str)] = &[
    (0, "/m/a.rs"),
    (0, "/m/zz.rs"),
    (0, "/m/n/d.rs"),
    (0, "/d/m/src/hidden.rs"),
    (1, "/n/shadow.rs"),
    (1, "/n/src/e2.rs"),
];

async fn fixture() -> (CompositeBackend, StateBackend) {
    let (c, default, mounts) = composite(&["/m", "/m/n", "/d/m"]);
    let parts = [
        default,
        mounts[0].clone(),
        mounts[1].clone(),
        mounts[2].clone(),
    ];
    for (part, path) in SHADOWED {
        put(&parts[*part], path, "fn shadowed() {}\nneedle\n").await;
    }
    let flat = StateBackend::new();
    for (i, path) in VISIBLE.iter().enumerate() {
        let text = format!("fn f{i}() {{}}\nneedle {path}\n\tneedle again\n");
        put(&c, path, &text).await;
        put(&flat, path, &text).await;
    }
    (c, flat)
}

const UNDERS: &[&str] = &["/", "/m", "/m/n", "/d", "/src", "/missing"];

#[tokio::test]
async fn glob_matches_a_flat_backend() {
    let (c, flat) = fixture().await;
    let patterns = [
        "*.rs",
        "**/*.rs",
        "**",
        "*",
        "m/*.rs",
        "/m/src/*.rs",
        "m/**",
        "m/n/*.rs",
        "*/src/*.rs",
        "**/src/**",
        "{m,d}/**/*.txt",
        "d/m/*",
        "n/*",
        "src/*",
        "x/*",
        "*/m/*.rs",
        ".hidden.rs",
        "m",
        "m/n",
    ];
    for under in UNDERS {
        for pattern in patterns {
            for limit in [0, 1, 2, 3, 5, 100] {
                let got = c.glob(&ctx(), pattern, &p(under), limit).await.unwrap();
                let want = flat.glob(&ctx(), pattern, &p(under), limit).await.unwrap();
                assert_eq!(
                    paths(&got.files, |f| &f.path),
                    paths(&want.files, |f| &f.path),
                    "glob {pattern} under {under} limit {limit}"
                );
                assert_eq!(
                    got.truncated, want.truncated,
                    "glob {pattern} under {under} limit {limit}"
                );
            }
        }
    }
}

#[tokio::test]
async fn grep_matches_a_flat_backend() {
    let (c, flat) = fixture().await;
    let queries = [
        GrepQuery::fixed("needle"),
        GrepQuery::regex("^fn f1"),
        GrepQuery::regex("NEEDLE AGAIN").case_insensitive(),
        GrepQuery::fixed("needle").with_include("*.rs"),
        GrepQuery::fixed("needle").with_include("m/**"),
        GrepQuery::fixed("needle").with_include("/m/n/*.rs"),
        GrepQuery::fixed("needle").with_include("*/src/*"),
        GrepQuery::fixed("needle").with_include("x/*"),
        GrepQuery::fixed("shadowed"),
    ];
    for under in UNDERS.iter().chain(&["/m/a.rs", "/d/m/f.rs"]) {
        for query in &queries {
            for limit in [0, 1, 2, 5, 7, 100] {
                let got = c.grep(&ctx(), query, &p(under), limit).await.unwrap();
                let want = flat.grep(&ctx(), query, &p(under), limit).await.unwrap();
                assert_eq!(
                    got.matches, want.matches,
                    "grep {query:?} under {under} limit {limit}"
                );
                assert_eq!(
                    got.truncated, want.truncated,
                    "grep {query:?} under {under} limit {limit}"
                );
            }
        }
    }
}

#[tokio::test]
async fn bad_patterns_are_refused_before_any_backend_is_asked() {
    let (c, _) = fixture().await;
    let e = c.glob(&ctx(), "../*", &p("/"), 10).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidPath);
    let e = c.glob(&ctx(), "[", &p("/"), 10).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    let e = c
        .grep(&ctx(), &GrepQuery::regex("("), &p("/"), 10)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    let e = c
        .grep(
            &ctx(),
            &GrepQuery::fixed("x").with_include("../*"),
            &p("/m"),
            10,
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidPath);
    let e = c.glob(&ctx(), "*", &p("/m/a.rs"), 10).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotADirectory);
    assert!(e.message().contains("/m/a.rs"), "{}", e.message());
}

#[tokio::test]
async fn ls_matches_a_flat_backend_where_every_mount_holds_files() {
    let (c, flat) = fixture().await;
    let shape = |l: &burrow_backend::Listing| -> Vec<(String, bool, Option<u64>)> {
        l.entries
            .iter()
            .map(|e| (e.path.clone(), e.is_dir, e.size))
            .collect()
    };
    for dir in [
        "/", "/m", "/m/n", "/m/src", "/d", "/d/m", "/src", "/m/n/src",
    ] {
        for limit in [0, 1, 2, 3, 100] {
            let got = c.ls(&ctx(), &p(dir), limit).await.unwrap();
            let want = flat.ls(&ctx(), &p(dir), limit).await.unwrap();
            assert_eq!(shape(&got), shape(&want), "ls {dir} limit {limit}");
            assert_eq!(got.truncated, want.truncated, "ls {dir} limit {limit}");
        }
    }
}
