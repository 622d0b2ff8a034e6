//! Scenarios for `read` and `read_bytes`: the line split, windows, offsets, directories and missing files.

use super::prelude::*;

/// Lines split on "\n" only; a final "\n" does not make an extra line.
pub async fn read_line_split_table(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let cases: [(&str, &[&str]); 9] = [
        ("a", &["a"]),
        ("a\n", &["a"]),
        ("a\nb", &["a", "b"]),
        ("a\nb\n", &["a", "b"]),
        ("\n", &[""]),
        ("\n\n", &["", ""]),
        ("a\n\n", &["a", ""]),
        ("one\rtwo\nthree", &["one\rtwo", "three"]),
        ("x\r", &["x\r"]),
    ];
    for (i, (text, want)) in cases.iter().enumerate() {
        let path = put(b, cx, &format!("split/{i}.txt"), text).await?;
        let window = b.read(&cx.ctx, &path, 0, BIG).await?;
        ensure_eq!(window.lines, *want, "read of {text:?}");
        ensure_eq!(window.total_lines, want.len(), "total_lines of {text:?}");
        ensure_eq!(window.offset, 0, "offset of {text:?}");
        ensure!(
            !window.truncated,
            "read of all of {text:?} is not truncated"
        );
    }
    passed()
}

/// `read` returns at most `limit` lines from `offset`, the total, and `truncated` while lines remain.
pub async fn read_window_offset_and_limit(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let text: String = (0..10).map(|i| format!("line-{i}\n")).collect();
    let path = put(b, cx, "ten.txt", &text).await?;
    let line = |i: usize| format!("line-{i}");
    for (offset, limit, first, count, truncated) in [
        (3, 4, 3, 4, true),
        (6, 4, 6, 4, false),
        (9, 100, 9, 1, false),
        (0, 10, 0, 10, false),
        (0, 9, 0, 9, true),
        (0, 1, 0, 1, true),
    ] {
        let window = b.read(&cx.ctx, &path, offset, limit).await?;
        let want: Vec<String> = (first..first + count).map(line).collect();
        ensure_eq!(window.lines, want, "read offset {offset} limit {limit}");
        ensure_eq!(
            window.offset,
            offset,
            "offset echoed for offset {offset} limit {limit}"
        );
        ensure_eq!(
            window.total_lines,
            10,
            "total_lines for offset {offset} limit {limit}"
        );
        ensure_eq!(
            window.truncated,
            truncated,
            "truncated for offset {offset} limit {limit}"
        );
    }
    passed()
}

/// An offset at or past the end of a non-empty file: InvalidArgument naming the line count.
pub async fn read_offset_past_end_is_invalid_argument(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let path = put(b, cx, "three.txt", "a\nb\nc\n").await?;
    for offset in [3, 4, 1000, usize::MAX] {
        let err = expect_kind(
            b.read(&cx.ctx, &path, offset, 10).await,
            ErrorKind::InvalidArgument,
        )
        .map_err(|e| e.context(format!("read offset {offset} of a 3-line file")))?;
        ensure!(
            err.message().contains('3'),
            "the refusal names the line count 3: {:?}",
            err.message()
        );
    }
    passed()
}

/// `read` and `read_bytes` of a directory: IsADirectory (the root included).
pub async fn read_directory_is_a_directory(b: &dyn Backend, cx: &Ctx) -> Outcome {
    put(b, cx, "d/x.txt", "x").await?;
    let d = cx.p("d")?;
    expect_kind(b.read(&cx.ctx, &d, 0, 10).await, ErrorKind::IsADirectory)?;
    expect_kind(b.read_bytes(&cx.ctx, &d).await, ErrorKind::IsADirectory)?;
    expect_kind(
        b.read(&cx.ctx, &VPath::root(), 0, 10).await,
        ErrorKind::IsADirectory,
    )?;
    expect_kind(
        b.read_bytes(&cx.ctx, &VPath::root()).await,
        ErrorKind::IsADirectory,
    )?;
    passed()
}

/// `read` and `read_bytes` of a missing file: NotFound, also beneath a missing directory.
pub async fn read_missing_is_not_found(b: &dyn Backend, cx: &Ctx) -> Outcome {
    put(b, cx, "here/x.txt", "x").await?;
    for rel in [
        "nope.txt",
        "here/nope.txt",
        "nope/deeper/x.txt",
        "here/x.tx",
        "here/x.txt.bak",
    ] {
        let path = cx.p(rel)?;
        expect_kind(b.read(&cx.ctx, &path, 0, 10).await, ErrorKind::NotFound)
            .map_err(|e| e.context(format!("read {rel}")))?;
        expect_kind(b.read_bytes(&cx.ctx, &path).await, ErrorKind::NotFound)
            .map_err(|e| e.context(format!("read_bytes {rel}")))?;
    }
    passed()
}

/// Reading changes nothing (no file, no directory, no content appears).
pub async fn read_has_no_side_effects(b: &dyn Backend, cx: &Ctx) -> Outcome {
    put(b, cx, "r/a.txt", "a\nb\n").await?;
    let before = snapshot(b, cx).await?;
    let _ = b.read(&cx.ctx, &cx.p("r/a.txt")?, 1, 1).await?;
    let _ = b.read_bytes(&cx.ctx, &cx.p("r/a.txt")?).await?;
    let _ = b.read(&cx.ctx, &cx.p("r/missing/x.txt")?, 0, 1).await;
    let _ = b.ls(&cx.ctx, &cx.p("r/missing")?, 10).await;
    let _ = b.glob(&cx.ctx, "**", &cx.p("r/none")?, 10).await?;
    let _ = b.grep(&cx.ctx, &re("a"), &cx.p("r/none")?, 10).await?;
    ensure_unchanged(b, cx, &before, "reading").await?;
    passed()
}
