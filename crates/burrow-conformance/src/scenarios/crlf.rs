//! Scenarios for CRLF files: reading without "\r", bytes kept exactly, edits that keep line endings, grep over CRLF lines.

use super::prelude::*;

/// A "\r" before "\n" is not part of the line; read_bytes still returns it.
pub async fn crlf_read_strips_cr_keeps_bytes(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let path = put(b, cx, "w.txt", "a\r\nb\r\n\r\nc").await?;
    let window = b.read(&cx.ctx, &path, 0, BIG).await?;
    ensure_eq!(window.lines, ["a", "b", "", "c"], "lines of a CRLF file");
    ensure_eq!(window.total_lines, 4, "total_lines");
    ensure_eq!(
        bytes_of(b, cx, &path).await?,
        b"a\r\nb\r\n\r\nc".to_vec(),
        "read_bytes keeps \\r"
    );
    passed()
}

/// A lone "\r" is not a line break.
pub async fn crlf_lone_cr_is_not_a_line_break(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let path = put(b, cx, "mac.txt", "a\rb\rc\n").await?;
    let window = b.read(&cx.ctx, &path, 0, BIG).await?;
    ensure_eq!(window.lines, ["a\rb\rc"], "lines of a CR-only file");
    let result = b.grep(&cx.ctx, &re("b"), &cx.root, BIG).await?;
    ensure_eq!(
        hits(&result.matches),
        vec![(path.as_str().to_owned(), 1, "a\rb\rc".to_owned())],
        "grep"
    );
    passed()
}

/// In a CRLF file, "\n" in `old` and `new` matches and writes "\r\n".
pub async fn edit_crlf_preserves_endings(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let path = put(b, cx, "c.txt", "a\r\nb\r\nc\r\n").await?;
    let r = b.edit(&cx.ctx, &path, "a\nb", "x\ny\nz", false).await?;
    ensure_eq!(r.occurrences, Some(1), "occurrences");
    ensure_eq!(
        bytes_of(b, cx, &path).await?,
        b"x\r\ny\r\nz\r\nc\r\n".to_vec(),
        "content after a multi-line edit"
    );
    passed()
}

/// In a CRLF file, `old` written with "\r\n" matches too, and a one-line edit leaves every ending alone.
pub async fn edit_crlf_accepts_either_ending_in_old(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let path = put(b, cx, "c.txt", "one\r\ntwo\r\nthree\r\n").await?;
    b.edit(&cx.ctx, &path, "one\r\ntwo", "1\r\n2", false)
        .await?;
    ensure_eq!(
        bytes_of(b, cx, &path).await?,
        b"1\r\n2\r\nthree\r\n".to_vec(),
        "old given with CRLF"
    );
    b.edit(&cx.ctx, &path, "three", "3", false).await?;
    ensure_eq!(
        bytes_of(b, cx, &path).await?,
        b"1\r\n2\r\n3\r\n".to_vec(),
        "single-line edit"
    );
    b.edit(&cx.ctx, &path, "2\n", "", false).await?;
    ensure_eq!(
        bytes_of(b, cx, &path).await?,
        b"1\r\n3\r\n".to_vec(),
        "removing a whole line"
    );
    passed()
}

/// `replace_all` in a CRLF file keeps every ending.
pub async fn edit_crlf_replace_all(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let path = put(b, cx, "c.txt", "k\r\nv\r\nk\r\nv\r\n").await?;
    let r = b.edit(&cx.ctx, &path, "k\nv", "kv", true).await?;
    ensure_eq!(r.occurrences, Some(2), "occurrences");
    ensure_eq!(
        bytes_of(b, cx, &path).await?,
        b"kv\r\nkv\r\n".to_vec(),
        "content"
    );
    passed()
}

/// A file with mixed endings is not a CRLF file: `old` matches literally.
pub async fn edit_mixed_endings_match_literally(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let path = put(b, cx, "m.txt", "a\r\nb\nc\n").await?;
    let before = snapshot(b, cx).await?;
    expect_kind(
        b.edit(&cx.ctx, &path, "a\nb", "x", false).await,
        ErrorKind::InvalidArgument,
    )
    .map_err(|e| e.context("\"a\\nb\" is absent from \"a\\r\\nb\\n...\" in a mixed file"))?;
    ensure_unchanged(b, cx, &before, "an edit whose old text is absent").await?;
    b.edit(&cx.ctx, &path, "a\r\nb\n", "ab\n", false).await?;
    ensure_eq!(
        bytes_of(b, cx, &path).await?,
        b"ab\nc\n".to_vec(),
        "literal match in a mixed file"
    );
    passed()
}

/// grep sees CRLF lines without "\r": `$` anchors before it and the reported line has none.
pub async fn grep_crlf_lines_have_no_cr(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let path = put(b, cx, "g.txt", "alpha\r\nbeta\r\n").await?;
    let result = b.grep(&cx.ctx, &re("a$"), &cx.root, BIG).await?;
    ensure_eq!(
        hits(&result.matches),
        vec![
            (path.as_str().to_owned(), 1, "alpha".to_owned()),
            (path.as_str().to_owned(), 2, "beta".to_owned())
        ],
        "grep a$ in a CRLF file"
    );
    let result = b.grep(&cx.ctx, &re(r"\r"), &cx.root, BIG).await?;
    ensure_eq!(
        hits(&result.matches),
        Vec::<(String, u64, String)>::new(),
        "no line holds \\r"
    );
    passed()
}

/// `new` takes the file's line ending: "\r\n" in `new` is written as "\n" in an LF
/// file, and "\n" as "\r\n" in a CRLF file, so an edit never mixes endings.
pub async fn edit_new_takes_the_files_line_ending(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let lf = put(b, cx, "lf.txt", "a\nb\nc\n").await?;
    b.edit(&cx.ctx, &lf, "b", "x\r\ny", false).await?;
    ensure_eq!(
        bytes_of(b, cx, &lf).await?,
        b"a\nx\ny\nc\n".to_vec(),
        "CRLF in new, written into an LF file"
    );
    let crlf = put(b, cx, "crlf.txt", "a\r\nb\r\nc\r\n").await?;
    b.edit(&cx.ctx, &crlf, "b", "x\ny\r\nz", false).await?;
    ensure_eq!(
        bytes_of(b, cx, &crlf).await?,
        b"a\r\nx\r\ny\r\nz\r\nc\r\n".to_vec(),
        "LF and CRLF in new, written into a CRLF file"
    );
    passed()
}

/// An edit whose `old` and `new` are equal once line endings are normalised to the
/// file's is refused with InvalidArgument (it would change nothing), the file left as it was.
pub async fn edit_equal_once_normalised_is_refused(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let crlf = put(b, cx, "crlf.txt", "a\r\nb\r\n").await?;
    let lf = put(b, cx, "lf.txt", "a\nb\n").await?;
    for (path, old, new) in [(&crlf, "a\r\nb", "a\nb"), (&lf, "a\nb", "a\r\nb")] {
        let before = snapshot(b, cx).await?;
        expect_kind(
            b.edit(&cx.ctx, path, old, new, false).await,
            ErrorKind::InvalidArgument,
        )
        .map_err(|e| e.context(format!("edit {path} {old:?} -> {new:?}")))?;
        ensure_unchanged(b, cx, &before, "a refused edit").await?;
    }
    passed()
}
