//! Scenarios for `edit`: one or all occurrences, every refusal (each leaving the file byte-identical), literal matching.

use super::prelude::*;

/// Replaces the one occurrence and returns path and count 1.
pub async fn edit_replaces_single_occurrence(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let path = put(b, cx, "e.txt", "alpha\nbeta\ngamma\n").await?;
    let r = b.edit(&cx.ctx, &path, "beta", "BETA", false).await?;
    ensure_eq!(r.path.as_deref(), Some(path.as_str()), "EditResult.path");
    ensure_eq!(r.occurrences, Some(1), "EditResult.occurrences");
    ensure_eq!(r.error, None, "EditResult.error");
    ensure_eq!(
        bytes_of(b, cx, &path).await?,
        b"alpha\nBETA\ngamma\n".to_vec(),
        "content after edit"
    );
    passed()
}

/// With `replace_all`, every occurrence is replaced and counted (also when there is just one).
pub async fn edit_replace_all_counts_every_occurrence(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let path = put(b, cx, "all.txt", "x = 1; x = 2;\nx\n").await?;
    let r = b.edit(&cx.ctx, &path, "x", "y", true).await?;
    ensure_eq!(r.occurrences, Some(3), "occurrences replaced");
    ensure_eq!(
        bytes_of(b, cx, &path).await?,
        b"y = 1; y = 2;\ny\n".to_vec(),
        "content"
    );
    let r = b.edit(&cx.ctx, &path, "1", "one", true).await?;
    ensure_eq!(r.occurrences, Some(1), "replace_all of a single occurrence");
    passed()
}

/// Occurrences are counted without overlap, left to right ("aa" in "aaaa" is 2).
pub async fn edit_counts_non_overlapping(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let path = put(b, cx, "ov.txt", "aaaa").await?;
    let r = b.edit(&cx.ctx, &path, "aa", "b", true).await?;
    ensure_eq!(r.occurrences, Some(2), "occurrences of aa in aaaa");
    ensure_eq!(bytes_of(b, cx, &path).await?, b"bb".to_vec(), "content");
    let path = put(b, cx, "ov3.txt", "aaa").await?;
    let r = b.edit(&cx.ctx, &path, "aa", "b", false).await?;
    ensure_eq!(
        r.occurrences,
        Some(1),
        "aa occurs once, without overlap, in aaa"
    );
    ensure_eq!(bytes_of(b, cx, &path).await?, b"ba".to_vec(), "content");
    passed()
}

/// `old` and `new` are literal text: regex and replacement syntax mean nothing.
pub async fn edit_is_literal(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let path = put(b, cx, "lit.txt", "a.*b and axxb and (x)\n").await?;
    b.edit(&cx.ctx, &path, "a.*b", "$0${1}\\1", false).await?;
    ensure_eq!(
        bytes_of(b, cx, &path).await?,
        b"$0${1}\\1 and axxb and (x)\n".to_vec(),
        "literal replacement"
    );
    b.edit(&cx.ctx, &path, "(x)", "[y]", false).await?;
    ensure_eq!(
        bytes_of(b, cx, &path).await?,
        b"$0${1}\\1 and axxb and [y]\n".to_vec(),
        "parentheses are literal"
    );
    passed()
}

/// `new` may be empty (deleting text), and an edit keeps a missing final newline missing.
pub async fn edit_to_empty_and_no_final_newline(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let path = put(b, cx, "cut.txt", "keep DROP keep").await?;
    b.edit(&cx.ctx, &path, " DROP", "", false).await?;
    ensure_eq!(
        bytes_of(b, cx, &path).await?,
        b"keep keep".to_vec(),
        "content after deleting text"
    );
    b.edit(&cx.ctx, &path, "keep keep", "", false).await?;
    ensure_eq!(
        bytes_of(b, cx, &path).await?,
        Vec::<u8>::new(),
        "all text removed leaves an empty file"
    );
    let window = b.read(&cx.ctx, &path, 0, 10).await?;
    ensure_eq!(window.total_lines, 0, "the emptied file has zero lines");
    passed()
}

/// Empty `old`: InvalidArgument, file byte-identical.
pub async fn edit_empty_old_is_refused(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let path = put(b, cx, "r.txt", "content\n").await?;
    let before = snapshot(b, cx).await?;
    expect_kind(
        b.edit(&cx.ctx, &path, "", "x", false).await,
        ErrorKind::InvalidArgument,
    )?;
    expect_kind(
        b.edit(&cx.ctx, &path, "", "x", true).await,
        ErrorKind::InvalidArgument,
    )?;
    ensure_unchanged(b, cx, &before, "an edit with empty old text").await?;
    passed()
}

/// `old` absent: InvalidArgument, file byte-identical.
pub async fn edit_absent_old_is_refused(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let path = put(b, cx, "r.txt", "content\n").await?;
    let before = snapshot(b, cx).await?;
    for all in [false, true] {
        expect_kind(
            b.edit(&cx.ctx, &path, "missing", "x", all).await,
            ErrorKind::InvalidArgument,
        )
        .map_err(|e| e.context(format!("replace_all {all}")))?;
    }
    expect_kind(
        b.edit(&cx.ctx, &path, "Content", "x", false).await,
        ErrorKind::InvalidArgument,
    )
    .map_err(|e| e.context("matching is case-sensitive"))?;
    ensure_unchanged(b, cx, &before, "an edit whose old text is absent").await?;
    passed()
}

/// `old` equal to `new`: InvalidArgument, file byte-identical.
pub async fn edit_old_equal_to_new_is_refused(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let path = put(b, cx, "r.txt", "same same\n").await?;
    let before = snapshot(b, cx).await?;
    expect_kind(
        b.edit(&cx.ctx, &path, "same", "same", true).await,
        ErrorKind::InvalidArgument,
    )?;
    expect_kind(
        b.edit(&cx.ctx, &path, "same same", "same same", false)
            .await,
        ErrorKind::InvalidArgument,
    )?;
    ensure_unchanged(b, cx, &before, "an edit whose old and new text are equal").await?;
    passed()
}

/// Several occurrences without `replace_all`: InvalidArgument giving the count, file byte-identical.
pub async fn edit_ambiguous_old_is_refused_with_count(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let path = put(b, cx, "r.txt", "dup\ndup\ndup\n").await?;
    let before = snapshot(b, cx).await?;
    let err = expect_kind(
        b.edit(&cx.ctx, &path, "dup", "one", false).await,
        ErrorKind::InvalidArgument,
    )?;
    ensure!(
        err.message().contains('3'),
        "the refusal gives the count 3: {:?}",
        err.message()
    );
    ensure_unchanged(b, cx, &before, "an ambiguous edit").await?;
    passed()
}

/// Editing a missing file: NotFound, and no file appears.
pub async fn edit_missing_is_not_found(b: &dyn Backend, cx: &Ctx) -> Outcome {
    put(b, cx, "d/other.txt", "x").await?;
    let before = snapshot(b, cx).await?;
    for rel in ["d/none.txt", "none/deeper.txt"] {
        expect_kind(
            b.edit(&cx.ctx, &cx.p(rel)?, "x", "y", false).await,
            ErrorKind::NotFound,
        )
        .map_err(|e| e.context(format!("edit {rel}")))?;
    }
    ensure_unchanged(b, cx, &before, "an edit of a missing file").await?;
    passed()
}

/// Editing a directory: IsADirectory, nothing changed.
pub async fn edit_directory_is_a_directory(b: &dyn Backend, cx: &Ctx) -> Outcome {
    put(b, cx, "d/x.txt", "x").await?;
    let before = snapshot(b, cx).await?;
    expect_kind(
        b.edit(&cx.ctx, &cx.p("d")?, "x", "y", false).await,
        ErrorKind::IsADirectory,
    )?;
    expect_kind(
        b.edit(&cx.ctx, &VPath::root(), "x", "y", true).await,
        ErrorKind::IsADirectory,
    )?;
    ensure_unchanged(b, cx, &before, "an edit of a directory").await?;
    passed()
}

/// Multi-line `old` and `new` in an LF file match and write "\n" only.
pub async fn edit_multiline_in_lf_file(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let path = put(b, cx, "lf.txt", "fn a() {\n    1\n}\n").await?;
    b.edit(&cx.ctx, &path, "{\n    1\n}", "{\n    2\n    3\n}", false)
        .await?;
    ensure_eq!(
        bytes_of(b, cx, &path).await?,
        b"fn a() {\n    2\n    3\n}\n".to_vec(),
        "an LF file stays LF"
    );
    passed()
}

/// Unicode text is matched and replaced as text, byte-exact.
pub async fn edit_unicode_text(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let path = put(b, cx, "u.txt", "café 🦀 naïve 文件\n").await?;
    b.edit(&cx.ctx, &path, "🦀", "🐚", false).await?;
    b.edit(&cx.ctx, &path, "文件", "ファイル", false).await?;
    let nfd = "cafe\u{301}";
    expect_kind(
        b.edit(&cx.ctx, &path, nfd, "x", false).await,
        ErrorKind::InvalidArgument,
    )
    .map_err(|e| e.context("an NFD spelling does not match NFC text (no normalisation)"))?;
    ensure_eq!(
        String::from_utf8_lossy(&bytes_of(b, cx, &path).await?).into_owned(),
        "café 🐚 naïve ファイル\n",
        "content"
    );
    passed()
}
