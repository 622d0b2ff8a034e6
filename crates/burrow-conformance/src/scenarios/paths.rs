//! Scenarios for hostile and odd paths: names a shell, a URL, a glob or a host would treat specially are ordinary names here.
//!
//! Decision (ADR 0031): every character but "/" and NUL is legal in a name,
//! including "\n", "\r", tabs and other control characters, and names are
//! compared as bytes: no Unicode normalisation, no case folding.

use super::prelude::*;

/// Names every backend must store, list, glob, grep and delete exactly.
pub fn hostile_names() -> Vec<String> {
    let mut names: Vec<String> = [
        "foo..bar.txt",
        "[...slug]",
        "[id].tsx",
        "(group)",
        "...",
        "..x",
        "x..",
        ".hidden",
        "a b c.txt",
        " leading space",
        "trailing space ",
        "it's \"quoted\".txt",
        "back\\slash",
        "~",
        "~user",
        "C:",
        "C:\\Windows\\x",
        "new\nline",
        "tab\there",
        "cr\rhere",
        "esc\u{1b}[31mred",
        "$HOME",
        "`cmd`",
        "$(rm -rf x)",
        "semi;colon",
        "pipe|amp&",
        "*",
        "?",
        "{a,b}",
        "#hash",
        "%20encoded",
        "50% off",
        "+plus=eq",
        "@at!bang",
        "-rf",
        "--",
        "a:b",
        "\u{e9}",
        "e\u{301}",
        "🦀",
        "👨‍👩‍👧",
        "文件名",
        "שלום",
        "Ａ全角",
        "\u{200b}zero-width",
        "CON",
        "nul.txt",
        "x.",
        "<>",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    names.push(format!("{}.txt", "n".repeat(251)));
    names.push("€".repeat(85));
    names
}

/// Every hostile name can be written, then read back exactly.
pub async fn paths_hostile_names_write_and_read(b: &dyn Backend, cx: &Ctx) -> Outcome {
    for (i, name) in hostile_names().iter().enumerate() {
        let rel = format!("h/{name}");
        let path = cx.p(&rel)?;
        let text = format!("content of #{i}\n");
        b.write(&cx.ctx, &path, &text).await.map_err(|e| {
            ScenarioError::new(format!(
                "write of name {} was refused with {}: {:?}",
                show(name),
                e.kind(),
                e.message()
            ))
        })?;
        ensure_eq!(
            lines_of(b, cx, &path).await?,
            [format!("content of #{i}")],
            "read of name {}",
            show(name)
        );
        ensure_eq!(
            bytes_of(b, cx, &path).await?,
            text.as_bytes().to_vec(),
            "read_bytes of name {}",
            show(name)
        );
    }
    passed()
}

/// ls, glob and grep report every hostile name exactly, in byte order.
pub async fn paths_hostile_names_listed_exactly(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let names = hostile_names();
    for name in &names {
        put(b, cx, &format!("h/{name}"), "needle\n").await?;
    }
    let want = sorted(abs(
        cx,
        &names.iter().map(|n| format!("h/{n}")).collect::<Vec<_>>(),
    )?);
    let listing = b.ls(&cx.ctx, &cx.p("h")?, BIG).await?;
    ensure_eq!(paths(&listing.entries), want, "ls of hostile names");
    let listed_names: Vec<String> =
        sorted(listing.entries.iter().map(|e| e.name.clone()).collect());
    ensure_eq!(listed_names, sorted(names.clone()), "entry names");
    let found = b.glob(&cx.ctx, "**", &cx.p("h")?, BIG).await?;
    ensure_eq!(paths(&found.files), want, "glob ** of hostile names");
    let result = b.grep(&cx.ctx, &re("needle"), &cx.p("h")?, BIG).await?;
    let grepped: Vec<String> = result.matches.iter().map(|m| m.path.clone()).collect();
    ensure_eq!(grepped, want, "grep of hostile names");
    passed()
}

/// Every hostile name can be edited and deleted, and is then gone.
pub async fn paths_hostile_names_edit_and_delete(b: &dyn Backend, cx: &Ctx) -> Outcome {
    for name in hostile_names() {
        let path = put(b, cx, &format!("h/{name}"), "before\n").await?;
        b.edit(&cx.ctx, &path, "before", "after", false).await?;
        ensure_eq!(
            bytes_of(b, cx, &path).await?,
            b"after\n".to_vec(),
            "edit of name {}",
            show(&name)
        );
        b.delete(&cx.ctx, &path).await?;
        expect_kind(b.read_bytes(&cx.ctx, &path).await, ErrorKind::NotFound)
            .map_err(|e| e.context(format!("read_bytes after deleting name {}", show(&name))))?;
    }
    passed()
}

/// Hostile names work as directory segments too, and a ".." inside a segment is an ordinary name.
pub async fn paths_hostile_names_as_directories(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let dirs = [
        "[...slug]",
        "..x",
        "x..",
        "...",
        "a b",
        "new\nline",
        "🦀",
        "back\\slash",
        "~",
        "C:",
    ];
    for dir in dirs {
        put(b, cx, &format!("hd/{dir}/inner.txt"), dir).await?;
    }
    let listing = b.ls(&cx.ctx, &cx.p("hd")?, BIG).await?;
    let want = sorted(abs(cx, &dirs.map(|d| format!("hd/{d}")))?);
    ensure_eq!(
        paths(&listing.entries),
        want,
        "ls of hostile directory names"
    );
    ensure!(
        listing.entries.iter().all(|e| e.is_dir),
        "every entry is a directory: {}",
        show(&listing.entries)
    );
    for dir in dirs {
        let inner = b.ls(&cx.ctx, &cx.p(&format!("hd/{dir}"))?, BIG).await?;
        ensure_eq!(
            paths(&inner.entries),
            abs(cx, &[format!("hd/{dir}/inner.txt")])?,
            "ls of {}",
            show(dir)
        );
        ensure_eq!(
            bytes_of(b, cx, &cx.p(&format!("hd/{dir}/inner.txt"))?).await?,
            dir.as_bytes().to_vec(),
            "content"
        );
    }
    let found = b.glob(&cx.ctx, "inner.txt", &cx.p("hd")?, BIG).await?;
    ensure_eq!(
        found.files.len(),
        dirs.len(),
        "glob inner.txt finds one per directory"
    );
    passed()
}

/// Names differing only in case are different files.
pub async fn paths_case_sensitive(b: &dyn Backend, cx: &Ctx) -> Outcome {
    for name in ["readme.md", "README.md", "Readme.md"] {
        put(b, cx, &format!("c/{name}"), name).await?;
    }
    for name in ["readme.md", "README.md", "Readme.md"] {
        ensure_eq!(
            bytes_of(b, cx, &cx.p(&format!("c/{name}"))?).await?,
            name.as_bytes().to_vec(),
            "content of {name}"
        );
    }
    let listing = b.ls(&cx.ctx, &cx.p("c")?, BIG).await?;
    ensure_eq!(
        listing.entries.len(),
        3,
        "three distinct files: {}",
        show(&listing.entries)
    );
    passed()
}

/// Names are bytes: NFC "é" and NFD "e\u{301}" are two different files.
pub async fn paths_no_unicode_normalisation(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let nfc = put(b, cx, "u/caf\u{e9}.txt", "nfc").await?;
    let nfd = put(b, cx, "u/cafe\u{301}.txt", "nfd").await?;
    ensure_eq!(
        bytes_of(b, cx, &nfc).await?,
        b"nfc".to_vec(),
        "the NFC name"
    );
    ensure_eq!(
        bytes_of(b, cx, &nfd).await?,
        b"nfd".to_vec(),
        "the NFD name"
    );
    let listing = b.ls(&cx.ctx, &cx.p("u")?, BIG).await?;
    ensure_eq!(
        paths(&listing.entries),
        sorted(vec![nfc.as_str().to_owned(), nfd.as_str().to_owned()]),
        "ls"
    );
    b.delete(&cx.ctx, &nfd).await?;
    ensure_eq!(
        bytes_of(b, cx, &nfc).await?,
        b"nfc".to_vec(),
        "the NFC name survives deleting the NFD one"
    );
    passed()
}

/// A 255-byte name, a 200-level deep path and a path of about 3900 bytes all work.
pub async fn paths_long_names_and_deep_paths(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let long_name = format!("{}.txt", "L".repeat(251));
    let deep = format!("{}f.txt", "d/".repeat(200));
    let budget = 3900usize.saturating_sub(cx.root.as_str().len());
    let segment = "s".repeat(240);
    let mut long_path = String::new();
    while long_path.len() + segment.len() + 1 + 6 < budget {
        long_path.push_str(&segment);
        long_path.push('/');
    }
    long_path.push_str("end.md");
    for rel in [long_name.as_str(), deep.as_str(), long_path.as_str()] {
        let path = put(b, cx, rel, "far\n").await?;
        ensure_eq!(
            lines_of(b, cx, &path).await?,
            ["far"],
            "read of a {}-byte path",
            path.as_str().len()
        );
        let parent = path.parent().unwrap_or_else(VPath::root);
        let listing = b.ls(&cx.ctx, &parent, BIG).await?;
        ensure!(
            listing.entries.iter().any(|e| e.path == path.as_str()),
            "ls of the parent of a {}-byte path shows it",
            path.as_str().len()
        );
    }
    let found = b.glob(&cx.ctx, "*.{txt,md}", &cx.root, BIG).await?;
    ensure_eq!(found.files.len(), 3, "glob finds the far files");
    let result = b
        .grep(&cx.ctx, &GrepQuery::fixed("far"), &cx.root, BIG)
        .await?;
    ensure_eq!(result.matches.len(), 3, "grep finds the far files");
    for rel in [long_name.as_str(), deep.as_str(), long_path.as_str()] {
        b.delete(&cx.ctx, &cx.p(rel)?).await?;
    }
    passed()
}

/// Different spellings of one path ("a//b/./c/", "x/../a/b/c") reach the same file.
pub async fn paths_normalised_spellings_are_one_file(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let canonical = put(b, cx, "n/a/b/c.txt", "one").await?;
    for spelling in ["n//a/./b/c.txt/", "n/x/../a/b/c.txt", "./n/a/b/c.txt"] {
        let path = cx.p(spelling)?;
        ensure_eq!(path.as_str(), canonical.as_str(), "{spelling:?} normalises");
        ensure_eq!(
            bytes_of(b, cx, &path).await?,
            b"one".to_vec(),
            "read via {spelling:?}"
        );
    }
    passed()
}

/// VPath: climbing above "/", NUL and over-long input are InvalidPath with a
/// printable message; the rest normalises, and the backend stores each
/// normalised path as exactly that file (every spelling of `/a/b` is one file;
/// `C:\x`, `~` and `..` inside a name are plain name bytes).
pub async fn paths_vpath_parsing_rules(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let long_segment = format!("/{}", "x".repeat(256));
    let long_path = "ab/".repeat(1400);
    for input in [
        "..",
        "/..",
        "a/../../b",
        "/a/b/../../../c",
        "a\0b",
        long_segment.as_str(),
        long_path.as_str(),
        "../\n\x1b[2J",
    ] {
        let err = expect_kind(VPath::parse(input), ErrorKind::InvalidPath)
            .map_err(|e| e.context(format!("parse {}", show(input))))?;
        ensure!(
            !err.message().chars().any(char::is_control),
            "the refusal shows no control characters: {:?}",
            err.message()
        );
        ensure!(
            err.message().len() < 400,
            "the refusal shows the input cut down: {} bytes",
            err.message().len()
        );
    }
    for (input, want) in [
        ("", "/"),
        ("a/b", "/a/b"),
        ("/a/b/", "/a/b"),
        ("//a/./b", "/a/b"),
        ("/a/x/../b", "/a/b"),
        ("C:\\x", "/C:\\x"),
        ("~/n", "/~/n"),
        ("foo..bar", "/foo..bar"),
    ] {
        ensure_eq!(VPath::parse(input)?.as_str(), want, "parse {input:?}");
    }
    let at_limit = format!("/{}", "y".repeat(255));
    ensure!(
        VPath::parse(&at_limit).is_ok(),
        "a 255-byte segment is accepted"
    );
    // On the backend: each spelling, joined beneath the root, writes one file.
    let base = cx.root.as_str().trim_end_matches('/').to_owned();
    let under = |rel: &str| VPath::parse(&format!("{base}/{rel}"));
    for (i, spelling) in ["a/b", "a/b/", "/a/./b", "a/x/../b"].iter().enumerate() {
        let path = under(spelling)?;
        b.write(&cx.ctx, &path, &format!("spelling {i}\n")).await?;
    }
    for name in ["C:\\x", "~/n", "foo..bar"] {
        b.write(&cx.ctx, &under(name)?, name).await?;
    }
    let listing = b.ls(&cx.ctx, &cx.root, BIG).await?;
    ensure_eq!(
        paths(&listing.entries),
        abs(cx, &["C:\\x", "a", "foo..bar", "~"])?,
        "ls of the root after writing every spelling"
    );
    let a = b.ls(&cx.ctx, &cx.p("a")?, BIG).await?;
    ensure_eq!(paths(&a.entries), abs(cx, &["a/b"])?, "ls a: one file b");
    ensure_eq!(
        bytes_of(b, cx, &cx.p("a/b")?).await?,
        b"spelling 3\n".to_vec(),
        "the last spelling written is the content of /a/b"
    );
    ensure_eq!(
        bytes_of(b, cx, &under("C:\\x")?).await?,
        b"C:\\x".to_vec(),
        "a backslash is a name byte, not a separator"
    );
    ensure_eq!(
        bytes_of(b, cx, &under("~/n")?).await?,
        b"~/n".to_vec(),
        "~ is a plain directory name"
    );
    passed()
}
