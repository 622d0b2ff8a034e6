//! Scenarios for `grep`: regex and fixed strings, case, refusals, include, order, line numbers, hidden and ignored files.

use super::prelude::*;

type Hit = (String, u64, String);

/// (absolute path of `rel`, line number, line).
fn hit(cx: &Ctx, rel: &str, n: u64, line: &str) -> Result<Hit, ScenarioError> {
    Ok((cx.p(rel)?.as_str().to_owned(), n, line.to_owned()))
}

/// The hits of `query` beneath `under` (relative), with a large limit and no truncation.
async fn grep_all(
    b: &dyn Backend,
    cx: &Ctx,
    query: &GrepQuery,
    under: &str,
) -> Result<Vec<Hit>, ScenarioError> {
    let result = b
        .grep(&cx.ctx, query, &cx.p(under)?, BIG)
        .await
        .map_err(|e| {
            ScenarioError::new(format!(
                "grep {} was refused with {}: {:?}",
                show(query),
                e.kind(),
                e.message()
            ))
        })?;
    ensure!(
        !result.truncated,
        "grep {} with a large limit is not truncated",
        show(query)
    );
    Ok(hits(&result.matches))
}

/// The pattern is a Rust regex; each match is the whole line, with its 1-based number and absolute path.
pub async fn grep_regex_matches_whole_lines(b: &dyn Backend, cx: &Ctx) -> Outcome {
    put(
        b,
        cx,
        "src/a.rs",
        "fn main() {\n    foo();\n}\nfn foo() {}\n",
    )
    .await?;
    put(b, cx, "b.txt", "foofoo\nbar\n").await?;
    ensure_eq!(
        grep_all(b, cx, &re(r"fn \w+"), "").await?,
        vec![
            hit(cx, "src/a.rs", 1, "fn main() {")?,
            hit(cx, "src/a.rs", 4, "fn foo() {}")?
        ],
        "grep fn \\w+"
    );
    ensure_eq!(
        grep_all(b, cx, &re("fo+"), "").await?,
        vec![
            hit(cx, "b.txt", 1, "foofoo")?,
            hit(cx, "src/a.rs", 2, "    foo();")?,
            hit(cx, "src/a.rs", 4, "fn foo() {}")?,
        ],
        "grep fo+"
    );
    passed()
}

/// With `fixed_strings` the pattern is a literal: "a.c" does not match "abc", "(" is fine.
pub async fn grep_fixed_strings_are_literal(b: &dyn Backend, cx: &Ctx) -> Outcome {
    put(b, cx, "f.txt", "a.c\nabc\n(x)\n").await?;
    ensure_eq!(
        grep_all(b, cx, &GrepQuery::fixed("a.c"), "").await?,
        vec![hit(cx, "f.txt", 1, "a.c")?],
        "fixed a.c"
    );
    ensure_eq!(
        grep_all(b, cx, &re("a.c"), "").await?,
        vec![hit(cx, "f.txt", 1, "a.c")?, hit(cx, "f.txt", 2, "abc")?],
        "regex a.c"
    );
    ensure_eq!(
        grep_all(b, cx, &GrepQuery::fixed("("), "").await?,
        vec![hit(cx, "f.txt", 3, "(x)")?],
        "fixed ("
    );
    passed()
}

/// `ignore_case` folds case, for regexes, literals and non-ASCII letters.
pub async fn grep_ignore_case_folds_case(b: &dyn Backend, cx: &Ctx) -> Outcome {
    put(b, cx, "c.txt", "Hello\nHELLO\nhello\nhelp\nÉcole\nécole\n").await?;
    let n = |v: Vec<Hit>| v.into_iter().map(|h| h.1).collect::<Vec<_>>();
    ensure_eq!(
        n(grep_all(b, cx, &re("hello"), "").await?),
        [3],
        "case-sensitive by default"
    );
    ensure_eq!(
        n(grep_all(b, cx, &re("hello").case_insensitive(), "").await?),
        [1, 2, 3],
        "regex, ignore_case"
    );
    ensure_eq!(
        n(grep_all(b, cx, &GrepQuery::fixed("HeLLo").case_insensitive(), "").await?),
        [1, 2, 3],
        "fixed, ignore_case"
    );
    ensure_eq!(
        n(grep_all(b, cx, &re("ÉCOLE").case_insensitive(), "").await?),
        [5, 6],
        "non-ASCII, ignore_case"
    );
    passed()
}

/// A malformed regex, or one over the compiled-size limit: InvalidArgument with the compiler's reason.
pub async fn grep_bad_regex_is_invalid_argument(b: &dyn Backend, cx: &Ctx) -> Outcome {
    put(b, cx, "x.txt", "x\n").await?;
    for pattern in [
        "(",
        "[a-",
        "a{2,1}",
        r"\p{NoSuchClass}",
        r"\w{1000}{1000}",
        "(?<name",
    ] {
        let err = expect_kind(
            b.grep(&cx.ctx, &re(pattern), &cx.root, BIG).await,
            ErrorKind::InvalidArgument,
        )
        .map_err(|e| e.context(format!("grep {pattern:?}")))?;
        let reason = compiler_reason(pattern);
        ensure!(
            err.message().contains(&reason),
            "the refusal of {pattern:?} gives the regex compiler's reason ({reason:?}): {:?}",
            err.message()
        );
    }
    passed()
}

/// The regex compiler's own reason for refusing `pattern`: the `error: ...` line of
/// a parse error, or the kind of a compile error ("exceeds size limit").
fn compiler_reason(pattern: &str) -> String {
    match regex::RegexBuilder::new(pattern)
        .size_limit(1 << 20)
        .build()
    {
        Ok(_) => String::from("(the regex crate accepts it)"),
        Err(regex::Error::CompiledTooBig(_)) => String::from("exceeds size limit"),
        Err(e) => {
            let text = e.to_string();
            text.lines()
                .rev()
                .find_map(|l| l.trim().strip_prefix("error: "))
                .unwrap_or(text.trim())
                .to_owned()
        }
    }
}

/// A pattern of 1000 bytes is accepted; 1001 bytes (regex or fixed): InvalidArgument.
pub async fn grep_pattern_length_limit(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let at_limit = "a".repeat(1000);
    put(b, cx, "long.txt", &format!("{at_limit}\nshort\n")).await?;
    ensure_eq!(
        grep_all(b, cx, &re(&at_limit), "").await?,
        vec![hit(cx, "long.txt", 1, &at_limit)?],
        "1000-byte pattern"
    );
    let over = "a".repeat(1001);
    for query in [re(&over), GrepQuery::fixed(&over)] {
        expect_kind(
            b.grep(&cx.ctx, &query, &cx.root, BIG).await,
            ErrorKind::InvalidArgument,
        )
        .map_err(|e| {
            e.context(format!(
                "1001-byte pattern, fixed_strings {}",
                query.fixed_strings
            ))
        })?;
    }
    passed()
}

/// `include` filters file paths as `glob` does (bare names at any depth, "/" anchors).
pub async fn grep_include_filters_like_glob(b: &dyn Backend, cx: &Ctx) -> Outcome {
    for rel in [
        "src/a.rs",
        "src/b.txt",
        "top.rs",
        "deep/er/c.rs",
        ".hidden.rs",
    ] {
        put(b, cx, rel, "needle\n").await?;
    }
    let found = |v: Vec<Hit>| v.into_iter().map(|h| h.0).collect::<Vec<_>>();
    for (include, want) in [
        (
            "*.rs",
            vec![".hidden.rs", "deep/er/c.rs", "src/a.rs", "top.rs"],
        ),
        ("/top.rs", vec!["top.rs"]),
        ("/*.rs", vec![".hidden.rs", "top.rs"]),
        ("src/*", vec!["src/a.rs", "src/b.txt"]),
        ("*.{txt,md}", vec!["src/b.txt"]),
        ("*.py", vec![]),
    ] {
        let got = found(grep_all(b, cx, &re("needle").with_include(include), "").await?);
        ensure_eq!(
            got,
            sorted(abs(cx, &want)?),
            "grep with include {include:?}"
        );
    }
    let got = found(grep_all(b, cx, &re("needle").with_include("/a.rs"), "src").await?);
    ensure_eq!(got, abs(cx, &["src/a.rs"])?, "include is relative to under");
    passed()
}

/// A bad `include` is refused as `glob` refuses it: malformed InvalidArgument, climbing InvalidPath.
pub async fn grep_bad_include_is_refused(b: &dyn Backend, cx: &Ctx) -> Outcome {
    put(b, cx, "x.txt", "x\n").await?;
    expect_kind(
        b.grep(&cx.ctx, &re("x").with_include("["), &cx.root, BIG)
            .await,
        ErrorKind::InvalidArgument,
    )?;
    expect_kind(
        b.grep(&cx.ctx, &re("x").with_include("../*"), &cx.root, BIG)
            .await,
        ErrorKind::InvalidPath,
    )?;
    passed()
}

/// Results come in path order (full path bytes: "/a-x" < "/a.txt" < "/a/b" < "/a0"), then line order.
pub async fn grep_results_in_path_then_line_order(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let names = ["a0", "a/b", "a.txt", "a-x", "é", "B"];
    for name in names {
        put(b, cx, name, "hit one\nmiss\nhit two\n").await?;
    }
    let mut want = Vec::new();
    for path in sorted(abs(cx, &names)?) {
        want.push((path.clone(), 1, "hit one".to_owned()));
        want.push((path, 3, "hit two".to_owned()));
    }
    ensure_eq!(grep_all(b, cx, &re("hit"), "").await?, want, "grep order");
    passed()
}

/// A match's line number, minus one, is a `read` offset that returns the same line.
pub async fn grep_line_numbers_are_read_offsets(b: &dyn Backend, cx: &Ctx) -> Outcome {
    put(b, cx, "n/lf.txt", "x1\n\nx2\nno\n\nx3").await?;
    put(b, cx, "n/crlf.txt", "x1\r\n\r\nx2\r\nno\r\nx3\r\n").await?;
    put(b, cx, "n/cr.txt", "x1\rstill one\nx2\n").await?;
    let result = b.grep(&cx.ctx, &re("x"), &cx.p("n")?, BIG).await?;
    ensure_eq!(
        result.matches.len(),
        8,
        "matches: {}",
        show(&result.matches)
    );
    for m in &result.matches {
        let path = VPath::parse(&m.path)?;
        let offset = usize::try_from(m.line_number.saturating_sub(1)).unwrap_or(usize::MAX);
        ensure!(m.line_number >= 1, "line numbers are 1-based: {}", show(m));
        let window = b.read(&cx.ctx, &path, offset, 1).await?;
        ensure_eq!(
            window.lines,
            std::slice::from_ref(&m.line),
            "read at offset {offset} of {}",
            m.path
        );
    }
    passed()
}

/// The empty pattern matches every line, and a final "\n" adds no line; "^$" finds only real empty lines.
pub async fn grep_sees_read_lines_exactly(b: &dyn Backend, cx: &Ctx) -> Outcome {
    put(b, cx, "l/one.txt", "a\n").await?;
    put(b, cx, "l/gap.txt", "a\n\nb").await?;
    ensure_eq!(
        grep_all(b, cx, &re(""), "l").await?,
        vec![
            hit(cx, "l/gap.txt", 1, "a")?,
            hit(cx, "l/gap.txt", 2, "")?,
            hit(cx, "l/gap.txt", 3, "b")?,
            hit(cx, "l/one.txt", 1, "a")?,
        ],
        "empty pattern"
    );
    ensure_eq!(
        grep_all(b, cx, &re("^$"), "l").await?,
        vec![hit(cx, "l/gap.txt", 2, "")?],
        "^$"
    );
    passed()
}

/// A pattern never matches across lines ("a\nb" finds nothing, and is no error).
pub async fn grep_pattern_never_spans_lines(b: &dyn Backend, cx: &Ctx) -> Outcome {
    put(b, cx, "ml.txt", "a\nb\n").await?;
    ensure_eq!(
        grep_all(b, cx, &re(r"a\nb"), "").await?,
        Vec::<Hit>::new(),
        "regex a\\nb"
    );
    ensure_eq!(
        grep_all(b, cx, &GrepQuery::fixed("a\nb"), "").await?,
        Vec::<Hit>::new(),
        "fixed a<LF>b"
    );
    ensure_eq!(
        grep_all(b, cx, &re(r"a\s+b"), "").await?,
        Vec::<Hit>::new(),
        "regex a\\s+b"
    );
    passed()
}

/// A missing `under`: no matches, no error.
pub async fn grep_missing_under_is_empty(b: &dyn Backend, cx: &Ctx) -> Outcome {
    put(b, cx, "x.txt", "x\n").await?;
    for under in ["nope", "nope/deeper"] {
        ensure_eq!(
            grep_all(b, cx, &re("x"), under).await?,
            Vec::<Hit>::new(),
            "grep under missing {under}"
        );
    }
    passed()
}

/// `under` may be a file: that file alone is searched.
pub async fn grep_under_a_file_searches_it(b: &dyn Backend, cx: &Ctx) -> Outcome {
    put(b, cx, "d/one.txt", "x here\n").await?;
    put(b, cx, "d/two.txt", "x there\n").await?;
    ensure_eq!(
        grep_all(b, cx, &re("x"), "d/one.txt").await?,
        vec![hit(cx, "d/one.txt", 1, "x here")?],
        "grep under a file"
    );
    passed()
}

/// `under` "a" does not reach into prefix siblings "ab" and "a.b".
pub async fn grep_under_excludes_prefix_siblings(b: &dyn Backend, cx: &Ctx) -> Outcome {
    for rel in ["a/x", "ab/y", "a.b/z", "abc"] {
        put(b, cx, rel, "needle\n").await?;
    }
    ensure_eq!(
        grep_all(b, cx, &re("needle"), "a").await?,
        vec![hit(cx, "a/x", 1, "needle")?],
        "grep under a"
    );
    passed()
}

/// Hidden files and directories are searched like any other (no ripgrep-style hidden filter).
pub async fn grep_searches_hidden_files(b: &dyn Backend, cx: &Ctx) -> Outcome {
    put(b, cx, ".env", "TOKEN=x\n").await?;
    put(b, cx, ".config/app.toml", "TOKEN=y\n").await?;
    let got: Vec<String> = grep_all(b, cx, &re("TOKEN"), "")
        .await?
        .into_iter()
        .map(|h| h.0)
        .collect();
    ensure_eq!(
        got,
        abs(cx, &[".config/app.toml", ".env"])?,
        "hidden files are searched"
    );
    passed()
}

/// A .gitignore (or .ignore) file is just a file: what it lists is still searched and globbed.
pub async fn grep_and_glob_ignore_no_ignore_files(b: &dyn Backend, cx: &Ctx) -> Outcome {
    put(b, cx, ".gitignore", "ignored.txt\nbuild/\n").await?;
    put(b, cx, ".ignore", "also.txt\n").await?;
    for rel in ["ignored.txt", "build/out.txt", "also.txt"] {
        put(b, cx, rel, "needle\n").await?;
    }
    let got: Vec<String> = grep_all(b, cx, &re("needle"), "")
        .await?
        .into_iter()
        .map(|h| h.0)
        .collect();
    ensure_eq!(
        got,
        abs(cx, &["also.txt", "build/out.txt", "ignored.txt"])?,
        "grep ignores .gitignore"
    );
    let found = b.glob(&cx.ctx, "*.txt", &cx.root, BIG).await?;
    ensure_eq!(
        paths(&found.files),
        abs(cx, &["also.txt", "build/out.txt", "ignored.txt"])?,
        "glob ignores .gitignore"
    );
    passed()
}

/// A pattern that can match the empty string (`^[^#]*`, `\s*`, `x*`) matches every
/// line, empty lines included, as ripgrep reports it.
pub async fn grep_empty_matching_patterns_match_every_line(b: &dyn Backend, cx: &Ctx) -> Outcome {
    put(b, cx, "e.txt", "a\n# c\n\nb x\n").await?;
    let every = vec![
        hit(cx, "e.txt", 1, "a")?,
        hit(cx, "e.txt", 2, "# c")?,
        hit(cx, "e.txt", 3, "")?,
        hit(cx, "e.txt", 4, "b x")?,
    ];
    for pattern in ["^[^#]*", r"\s*", "x*", "", "(?:)"] {
        ensure_eq!(
            grep_all(b, cx, &re(pattern), "").await?,
            every,
            "grep {pattern:?}: every line"
        );
    }
    passed()
}
