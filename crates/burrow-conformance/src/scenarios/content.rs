//! Scenarios for unusual content: empty files, binary (not UTF-8) files, text holding NUL, Unicode text.

use super::prelude::*;

/// Bytes that are not UTF-8: every byte value, with invalid sequences.
fn binary() -> Vec<u8> {
    let mut bytes: Vec<u8> = (0..=255u8).collect();
    bytes.extend_from_slice(b"\nneedle\n\xff\xfe\r\n\x00");
    bytes
}

/// An empty file reads as zero lines, whatever the offset, with no error.
pub async fn empty_file_reads_zero_lines(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let path = put(b, cx, "empty.txt", "").await?;
    for offset in [0, 1, 5, usize::MAX] {
        let window = b.read(&cx.ctx, &path, offset, 10).await?;
        ensure_eq!(
            window.lines,
            Vec::<String>::new(),
            "lines at offset {offset}"
        );
        ensure_eq!(window.total_lines, 0, "total_lines at offset {offset}");
        ensure!(
            !window.truncated,
            "an empty file is never truncated (offset {offset})"
        );
    }
    ensure_eq!(
        bytes_of(b, cx, &path).await?,
        Vec::<u8>::new(),
        "read_bytes of an empty file"
    );
    passed()
}

/// An empty file is listed with size 0 and globbed like any file.
pub async fn empty_file_is_listed_with_size_zero(b: &dyn Backend, cx: &Ctx) -> Outcome {
    put(b, cx, "e/empty.txt", "").await?;
    put_bytes(b, cx, "e/empty.bin", b"").await?;
    let listing = b.ls(&cx.ctx, &cx.p("e")?, BIG).await?;
    let sizes: Vec<(String, Option<u64>, bool)> = listing
        .entries
        .iter()
        .map(|e| (e.name.clone(), e.size, e.is_dir))
        .collect();
    ensure_eq!(
        sizes,
        vec![
            ("empty.bin".to_owned(), Some(0), false),
            ("empty.txt".to_owned(), Some(0), false)
        ],
        "ls of empty files"
    );
    let found = b.glob(&cx.ctx, "empty.*", &cx.root, BIG).await?;
    ensure_eq!(
        paths(&found.files),
        abs(cx, &["e/empty.bin", "e/empty.txt"])?,
        "glob finds empty files"
    );
    passed()
}

/// grep finds nothing in an empty file, not even with a pattern that matches any line.
pub async fn empty_file_grep_finds_nothing(b: &dyn Backend, cx: &Ctx) -> Outcome {
    put(b, cx, "empty.txt", "").await?;
    for pattern in ["", "^", "^$", ".*"] {
        let result = b.grep(&cx.ctx, &re(pattern), &cx.root, BIG).await?;
        ensure_eq!(
            hits(&result.matches),
            Vec::<(String, u64, String)>::new(),
            "grep {pattern:?} in an empty file"
        );
    }
    passed()
}

/// Editing an empty file: the old text is absent (InvalidArgument), the file stays empty.
pub async fn empty_file_edit_is_refused(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let path = put(b, cx, "empty.txt", "").await?;
    let before = snapshot(b, cx).await?;
    expect_kind(
        b.edit(&cx.ctx, &path, "x", "y", false).await,
        ErrorKind::InvalidArgument,
    )?;
    ensure_unchanged(b, cx, &before, "an edit of an empty file").await?;
    passed()
}

/// read_bytes returns every byte exactly as written, for all 256 byte values.
pub async fn binary_read_bytes_is_exact(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let bytes = binary();
    let path = put_bytes(b, cx, "bin/all.bin", &bytes).await?;
    ensure_eq!(
        bytes_of(b, cx, &path).await?,
        bytes,
        "read_bytes of binary content"
    );
    let listing = b.ls(&cx.ctx, &cx.p("bin")?, BIG).await?;
    let sizes: Vec<Option<u64>> = listing.entries.iter().map(|e| e.size).collect();
    ensure_eq!(
        sizes,
        [Some(bytes.len() as u64)],
        "ls size of binary content"
    );
    passed()
}

/// `read` of content that is not UTF-8: NotText (also when only one byte is bad).
pub async fn binary_read_is_not_text(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let all = put_bytes(b, cx, "all.bin", &binary()).await?;
    let latin1 = put_bytes(b, cx, "latin1.txt", b"caf\xe9\n").await?;
    let late = put_bytes(
        b,
        cx,
        "late.txt",
        &[b"ok line\n".repeat(100), vec![0xc3]].concat(),
    )
    .await?;
    for path in [&all, &latin1, &late] {
        expect_kind(b.read(&cx.ctx, path, 0, 10).await, ErrorKind::NotText)
            .map_err(|e| e.context(format!("read {path}")))?;
    }
    passed()
}

/// grep skips files that are not UTF-8 text or hold a NUL, even when the pattern is in them.
pub async fn binary_grep_skips_non_text(b: &dyn Backend, cx: &Ctx) -> Outcome {
    put_bytes(b, cx, "all.bin", &binary()).await?;
    put_bytes(b, cx, "nul.txt", b"needle\nwith a \x00 inside\n").await?;
    put_bytes(b, cx, "bad-end.txt", b"needle\n\xff").await?;
    let text = put(b, cx, "text.txt", "needle\n").await?;
    let result = b.grep(&cx.ctx, &re("needle"), &cx.root, BIG).await?;
    ensure_eq!(
        hits(&result.matches),
        vec![(text.as_str().to_owned(), 1, "needle".to_owned())],
        "grep skips binary files and files with NUL"
    );
    passed()
}

/// `edit` of content that is not UTF-8: NotText, bytes unchanged.
pub async fn binary_edit_is_not_text(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let path = put_bytes(b, cx, "all.bin", &binary()).await?;
    let before = snapshot(b, cx).await?;
    expect_kind(
        b.edit(&cx.ctx, &path, "needle", "pin", false).await,
        ErrorKind::NotText,
    )?;
    expect_kind(
        b.edit(&cx.ctx, &path, "needle", "pin", true).await,
        ErrorKind::NotText,
    )?;
    ensure_unchanged(b, cx, &before, "an edit of binary content").await?;
    passed()
}

/// Text holding NUL is valid UTF-8: `read` returns it, `edit` works on it, only grep skips it.
pub async fn nul_text_reads_as_text(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let path = put(b, cx, "nul.txt", "a\0b\nc\n").await?;
    let window = b.read(&cx.ctx, &path, 0, BIG).await?;
    ensure_eq!(window.lines, ["a\0b", "c"], "lines of text with NUL");
    b.edit(&cx.ctx, &path, "c", "d", false).await?;
    ensure_eq!(
        bytes_of(b, cx, &path).await?,
        b"a\0b\nd\n".to_vec(),
        "edit of text with NUL"
    );
    passed()
}

/// Unicode text round-trips byte-exact through write, read, ls sizes and grep.
pub async fn unicode_text_round_trips(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let lines = [
        "héllo wörld",
        "🦀 crab",
        "文件 名字",
        "שלום",
        "e\u{301} (NFD) vs é (NFC)",
        "zero\u{200d}width",
        "\u{feff}bom-like",
    ];
    let text = format!("{}\n", lines.join("\n"));
    let path = put(b, cx, "u/text.txt", &text).await?;
    let window = b.read(&cx.ctx, &path, 0, BIG).await?;
    ensure_eq!(window.lines, lines, "lines of Unicode text");
    ensure_eq!(
        bytes_of(b, cx, &path).await?,
        text.as_bytes().to_vec(),
        "bytes of Unicode text"
    );
    let listing = b.ls(&cx.ctx, &cx.p("u")?, BIG).await?;
    let sizes: Vec<Option<u64>> = listing.entries.iter().map(|e| e.size).collect();
    ensure_eq!(sizes, [Some(text.len() as u64)], "ls size in bytes");
    let result = b.grep(&cx.ctx, &re("🦀|文件"), &cx.root, BIG).await?;
    let numbers: Vec<u64> = result.matches.iter().map(|m| m.line_number).collect();
    ensure_eq!(numbers, [2, 3], "grep of Unicode text");
    passed()
}

/// A leading byte-order mark is content like any other: kept by read_bytes and by `read`.
pub async fn unicode_bom_is_content(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let path = put(b, cx, "bom.txt", "\u{feff}first\nsecond\n").await?;
    let window = b.read(&cx.ctx, &path, 0, BIG).await?;
    ensure_eq!(
        window.lines,
        ["\u{feff}first", "second"],
        "lines of a file with a BOM"
    );
    ensure_eq!(
        bytes_of(b, cx, &path).await?,
        "\u{feff}first\nsecond\n".as_bytes().to_vec(),
        "bytes"
    );
    passed()
}
