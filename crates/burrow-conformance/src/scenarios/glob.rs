//! Scenarios for `glob`: the dialect (anchoring, `**`, alternation, dot-files), files only, order, `under`, refusals.

use super::prelude::*;

/// Writes each of `rels` (content: its own name) beneath the root.
async fn files(b: &dyn Backend, cx: &Ctx, rels: &[&str]) -> Result<(), ScenarioError> {
    for rel in rels {
        put(b, cx, rel, rel).await?;
    }
    Ok(())
}

/// Checks that each (pattern, under, expected files) case globs to exactly those files.
async fn cases(
    b: &dyn Backend,
    cx: &Ctx,
    table: &[(&str, &str, &[&str])],
) -> Result<(), ScenarioError> {
    for (pattern, under, want) in table {
        let result = b
            .glob(&cx.ctx, pattern, &cx.p(under)?, BIG)
            .await
            .map_err(|e| {
                ScenarioError::new(format!(
                    "glob {pattern:?} under {under:?} was refused with {}: {:?}",
                    e.kind(),
                    e.message()
                ))
            })?;
        let want = sorted(abs(cx, want)?);
        ensure_eq!(
            paths(&result.files),
            want,
            "glob {pattern:?} under {under:?}"
        );
        ensure!(
            !result.truncated,
            "glob {pattern:?} under {under:?} with a large limit is not truncated"
        );
    }
    Ok(())
}

/// A pattern with no "/" matches the file name at any depth.
pub async fn glob_bare_pattern_matches_any_depth(b: &dyn Backend, cx: &Ctx) -> Outcome {
    files(
        b,
        cx,
        &["a.py", "x/b.py", "x/y/c.py", "a.pyc", "x/notpy.txt", "py"],
    )
    .await?;
    cases(
        b,
        cx,
        &[
            ("*.py", "", &["a.py", "x/b.py", "x/y/c.py"]),
            ("c.py", "", &["x/y/c.py"]),
            ("py", "", &["py"]),
        ],
    )
    .await?;
    passed()
}

/// A pattern starting with "/" is anchored at `under`; so is any pattern holding a "/".
pub async fn glob_slash_anchors_pattern(b: &dyn Backend, cx: &Ctx) -> Outcome {
    files(
        b,
        cx,
        &[
            "a.py",
            "x/b.py",
            "x/y/c.py",
            "src/a.rs",
            "src/x/b.rs",
            "other/src/c.rs",
        ],
    )
    .await?;
    cases(
        b,
        cx,
        &[
            ("/*.py", "", &["a.py"]),
            ("/x/*.py", "", &["x/b.py"]),
            ("x/*.py", "", &["x/b.py"]),
            ("./a.py", "", &["a.py"]),
            ("src/*.rs", "", &["src/a.rs"]),
            ("/*", "", &["a.py"]),
        ],
    )
    .await?;
    passed()
}

/// `**` spans segments (zero or more), `*` stays within one.
pub async fn glob_double_star_spans_segments(b: &dyn Backend, cx: &Ctx) -> Outcome {
    files(
        b,
        cx,
        &[
            "a.rs",
            "src/a.rs",
            "src/x/b.rs",
            "src/x/y/c.rs",
            "other/src/d.rs",
        ],
    )
    .await?;
    cases(
        b,
        cx,
        &[
            (
                "src/**/*.rs",
                "",
                &["src/a.rs", "src/x/b.rs", "src/x/y/c.rs"],
            ),
            (
                "**/*.rs",
                "",
                &[
                    "a.rs",
                    "src/a.rs",
                    "src/x/b.rs",
                    "src/x/y/c.rs",
                    "other/src/d.rs",
                ],
            ),
            ("**/src/*.rs", "", &["src/a.rs", "other/src/d.rs"]),
            ("src/*/*.rs", "", &["src/x/b.rs"]),
            ("src/*", "", &["src/a.rs"]),
            (
                "**",
                "",
                &[
                    "a.rs",
                    "src/a.rs",
                    "src/x/b.rs",
                    "src/x/y/c.rs",
                    "other/src/d.rs",
                ],
            ),
        ],
    )
    .await?;
    passed()
}

/// `?` and `[..]` match one character within a segment.
pub async fn glob_single_character_classes(b: &dyn Backend, cx: &Ctx) -> Outcome {
    files(b, cx, &["a.txt", "b.txt", "c.txt", "ab.txt", "d/a.txt"]).await?;
    cases(
        b,
        cx,
        &[
            ("?.txt", "", &["a.txt", "b.txt", "c.txt", "d/a.txt"]),
            ("/?.txt", "", &["a.txt", "b.txt", "c.txt"]),
            ("[ab].txt", "", &["a.txt", "b.txt", "d/a.txt"]),
            ("/[!a].txt", "", &["b.txt", "c.txt"]),
            ("/??.txt", "", &["ab.txt"]),
            ("d?a.txt", "", &[]),
        ],
    )
    .await?;
    passed()
}

/// `{a,b}` alternates.
pub async fn glob_alternation(b: &dyn Backend, cx: &Ctx) -> Outcome {
    files(
        b,
        cx,
        &[
            "a.rs",
            "Cargo.toml",
            "d/b.toml",
            "c.md",
            "src/x",
            "docs/y",
            "other/z",
        ],
    )
    .await?;
    cases(
        b,
        cx,
        &[
            ("*.{rs,toml}", "", &["a.rs", "Cargo.toml", "d/b.toml"]),
            ("/{src,docs}/*", "", &["src/x", "docs/y"]),
            ("{c.md,a.rs}", "", &["c.md", "a.rs"]),
        ],
    )
    .await?;
    passed()
}

/// Dot-files and dot-directories match like any other.
pub async fn glob_dotfiles_match(b: &dyn Backend, cx: &Ctx) -> Outcome {
    files(
        b,
        cx,
        &[".env", ".git/config", "d/.hidden.txt", "visible.txt"],
    )
    .await?;
    cases(
        b,
        cx,
        &[
            (
                "*",
                "",
                &[".env", ".git/config", "d/.hidden.txt", "visible.txt"],
            ),
            (".*", "", &[".env", "d/.hidden.txt"]),
            ("*.txt", "", &["d/.hidden.txt", "visible.txt"]),
            ("**/config", "", &[".git/config"]),
            (".git/*", "", &[".git/config"]),
        ],
    )
    .await?;
    passed()
}

/// Files only, never directories, even when a directory's name matches.
pub async fn glob_returns_files_only(b: &dyn Backend, cx: &Ctx) -> Outcome {
    files(b, cx, &["x.py/inner.txt", "y.py"]).await?;
    cases(
        b,
        cx,
        &[
            ("*.py", "", &["y.py"]),
            ("x.py", "", &[]),
            ("**", "", &["x.py/inner.txt", "y.py"]),
        ],
    )
    .await?;
    let all = b.glob(&cx.ctx, "**", &cx.root, BIG).await?;
    ensure!(
        all.files.iter().all(|f| !f.is_dir),
        "glob returned a directory: {}",
        show(&all.files)
    );
    passed()
}

/// Results are sorted by full path bytes: "/a-x" < "/a.txt" < "/a/b" < "/a0" (not directory-first walk order).
pub async fn glob_sorted_by_full_path(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let names = ["a0", "a/b", "a.txt", "a-x", "A", "é", "a/c/d", "b"];
    files(b, cx, &names).await?;
    let found = b.glob(&cx.ctx, "**", &cx.root, BIG).await?;
    ensure_eq!(
        paths(&found.files),
        sorted(abs(cx, &names)?),
        "glob ** order"
    );
    passed()
}

/// File entries carry name, absolute path, is_dir false and the byte size.
pub async fn glob_entry_fields(b: &dyn Backend, cx: &Ctx) -> Outcome {
    put(b, cx, "g/sub/file.txt", "12345").await?;
    let found = b.glob(&cx.ctx, "*.txt", &cx.root, BIG).await?;
    let [entry] = found.files.as_slice() else {
        fail!("expected one file, got {}", show(&found.files));
    };
    ensure_eq!(entry.name, "file.txt", "name");
    ensure_eq!(entry.path, cx.p("g/sub/file.txt")?.as_str(), "path");
    ensure!(!entry.is_dir, "is_dir is false for a file");
    ensure_eq!(entry.size, Some(5), "size");
    passed()
}

/// The pattern matches the path relative to `under`; results are absolute.
pub async fn glob_is_relative_to_under(b: &dyn Backend, cx: &Ctx) -> Outcome {
    files(
        b,
        cx,
        &[
            "proj/src/a.rs",
            "proj/a.rs",
            "src/b.rs",
            "proj/src/deep/c.rs",
        ],
    )
    .await?;
    cases(
        b,
        cx,
        &[
            ("src/*.rs", "proj", &["proj/src/a.rs"]),
            ("/*.rs", "proj", &["proj/a.rs"]),
            (
                "*.rs",
                "proj",
                &["proj/a.rs", "proj/src/a.rs", "proj/src/deep/c.rs"],
            ),
            ("/a.rs", "proj/src", &["proj/src/a.rs"]),
            ("src/*.rs", "", &["src/b.rs"]),
        ],
    )
    .await?;
    passed()
}

/// `under` "a" does not reach into prefix siblings "ab" and "a.b".
pub async fn glob_under_excludes_prefix_siblings(b: &dyn Backend, cx: &Ctx) -> Outcome {
    files(b, cx, &["a/x", "a/w", "ab/y", "a.b/z", "abc", "a b/v"]).await?;
    cases(
        b,
        cx,
        &[("**", "a", &["a/w", "a/x"]), ("*", "a", &["a/w", "a/x"])],
    )
    .await?;
    passed()
}

/// A pattern that climbs: InvalidPath.
pub async fn glob_climbing_pattern_is_invalid_path(b: &dyn Backend, cx: &Ctx) -> Outcome {
    put(b, cx, "d/x.txt", "x").await?;
    for pattern in ["../*", "../../etc/*", "/../x", "a/../../x", ".."] {
        for under in ["", "d"] {
            expect_kind(
                b.glob(&cx.ctx, pattern, &cx.p(under)?, BIG).await,
                ErrorKind::InvalidPath,
            )
            .map_err(|e| e.context(format!("glob {pattern:?} under {under:?}")))?;
        }
    }
    passed()
}

/// A malformed, empty or over-long pattern: InvalidArgument.
pub async fn glob_malformed_pattern_is_invalid_argument(b: &dyn Backend, cx: &Ctx) -> Outcome {
    put(b, cx, "x.txt", "x").await?;
    let long = "a".repeat(1001);
    for pattern in ["[", "a[b", "{a,b", "", "a\0b", long.as_str()] {
        expect_kind(
            b.glob(&cx.ctx, pattern, &cx.root, BIG).await,
            ErrorKind::InvalidArgument,
        )
        .map_err(|e| e.context(format!("glob {}", show(pattern))))?;
    }
    passed()
}

/// A missing `under`: no files, not truncated, no error.
pub async fn glob_missing_under_is_empty(b: &dyn Backend, cx: &Ctx) -> Outcome {
    put(b, cx, "x.txt", "x").await?;
    for under in ["nope", "nope/deeper"] {
        let found = b.glob(&cx.ctx, "**", &cx.p(under)?, BIG).await?;
        ensure_eq!(
            paths(&found.files),
            Vec::<String>::new(),
            "glob under missing {under}"
        );
        ensure!(
            !found.truncated,
            "glob under missing {under} is not truncated"
        );
    }
    passed()
}

/// `under` a file: NotADirectory.
pub async fn glob_under_file_is_not_a_directory(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let f = put(b, cx, "f.txt", "x").await?;
    expect_kind(
        b.glob(&cx.ctx, "*", &f, BIG).await,
        ErrorKind::NotADirectory,
    )?;
    passed()
}

/// Matching is case-sensitive.
pub async fn glob_is_case_sensitive(b: &dyn Backend, cx: &Ctx) -> Outcome {
    files(b, cx, &["a.txt", "B.TXT", "Readme.md"]).await?;
    cases(
        b,
        cx,
        &[
            ("*.txt", "", &["a.txt"]),
            ("*.TXT", "", &["B.TXT"]),
            ("readme.md", "", &[]),
        ],
    )
    .await?;
    passed()
}

/// A backslash escapes a metacharacter, so hostile names can be globbed literally.
pub async fn glob_escaped_metacharacters(b: &dyn Backend, cx: &Ctx) -> Outcome {
    files(
        b,
        cx,
        &[
            "[...slug]/page.tsx",
            "s/page.tsx",
            "star*.txt",
            "starx.txt",
            "foo..bar.txt",
        ],
    )
    .await?;
    cases(
        b,
        cx,
        &[
            ("\\[...slug\\]/page.tsx", "", &["[...slug]/page.tsx"]),
            ("star\\*.txt", "", &["star*.txt"]),
            ("star*.txt", "", &["star*.txt", "starx.txt"]),
            ("**/page.tsx", "", &["[...slug]/page.tsx", "s/page.tsx"]),
            ("*..*", "", &["foo..bar.txt"]),
        ],
    )
    .await?;
    passed()
}
