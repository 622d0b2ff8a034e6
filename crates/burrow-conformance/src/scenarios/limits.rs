//! Scenarios for bounds: caller limits and `truncated` (exactly at the limit is not truncated), the backend's max results and max file size.

use super::prelude::*;

/// The largest max_file_size the suite will fill a file to (and one byte past).
const MAX_TESTED_FILE_SIZE: u64 = 64 * 1024 * 1024;
/// The largest max_results the suite will create files to exceed.
const MAX_TESTED_RESULTS: usize = 1000;

/// Five files beneath `dir`, named so byte order is f0..f4; returns their absolute paths in order.
async fn five(
    b: &dyn Backend,
    cx: &Ctx,
    dir: &str,
    text: &str,
) -> Result<Vec<String>, ScenarioError> {
    let mut out = Vec::new();
    for i in 0..5 {
        out.push(
            put(b, cx, &format!("{dir}/f{i}.txt"), text)
                .await?
                .as_str()
                .to_owned(),
        );
    }
    Ok(out)
}

/// `ls`: at most `limit` entries, the first ones in order; `truncated` only when more exist.
pub async fn limits_ls_truncation(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let all = five(b, cx, "d", "x").await?;
    for (limit, truncated) in [(5, false), (6, false), (4, true), (1, true), (0, true)] {
        let listing = b.ls(&cx.ctx, &cx.p("d")?, limit).await?;
        ensure_eq!(
            paths(&listing.entries),
            all[..limit.min(5)].to_vec(),
            "ls limit {limit}"
        );
        ensure_eq!(
            listing.truncated,
            truncated,
            "ls truncated at limit {limit} of 5 entries"
        );
    }
    passed()
}

/// `glob`: at most `limit` files, the first ones in order; `truncated` only when more match.
pub async fn limits_glob_truncation(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let all = five(b, cx, "g", "x").await?;
    for (limit, truncated) in [(5, false), (6, false), (4, true), (1, true), (0, true)] {
        let found = b.glob(&cx.ctx, "*.txt", &cx.root, limit).await?;
        ensure_eq!(
            paths(&found.files),
            all[..limit.min(5)].to_vec(),
            "glob limit {limit}"
        );
        ensure_eq!(
            found.truncated,
            truncated,
            "glob truncated at limit {limit} of 5 matches"
        );
    }
    passed()
}

/// `grep`: at most `limit` matches across files, the first ones in order; `truncated` only when more exist.
pub async fn limits_grep_truncation(b: &dyn Backend, cx: &Ctx) -> Outcome {
    put(b, cx, "r/a.txt", "hit 1\nmiss\nhit 2\n").await?;
    put(b, cx, "r/b.txt", "hit 3\n").await?;
    put(b, cx, "r/c.txt", "miss\nhit 4\nhit 5\n").await?;
    let all = b.grep(&cx.ctx, &re("hit"), &cx.root, BIG).await?;
    let lines: Vec<String> = all.matches.iter().map(|m| m.line.clone()).collect();
    ensure_eq!(
        lines,
        ["hit 1", "hit 2", "hit 3", "hit 4", "hit 5"],
        "all matches"
    );
    for (limit, truncated) in [
        (5, false),
        (6, false),
        (4, true),
        (3, true),
        (1, true),
        (0, true),
    ] {
        let result = b.grep(&cx.ctx, &re("hit"), &cx.root, limit).await?;
        ensure_eq!(
            hits(&result.matches),
            hits(&all.matches[..limit.min(5)]),
            "grep limit {limit}"
        );
        ensure_eq!(
            result.truncated,
            truncated,
            "grep truncated at limit {limit} of 5 matches"
        );
    }
    passed()
}

/// `read`: `truncated` only while lines remain after the window; limit 0 returns no lines.
pub async fn limits_read_truncation(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let path = put(b, cx, "five.txt", "1\n2\n3\n4\n5\n").await?;
    for (offset, limit, count, truncated) in [
        (0, 5, 5, false),
        (0, 6, 5, false),
        (0, 4, 4, true),
        (4, 1, 1, false),
        (3, 1, 1, true),
        (0, 0, 0, true),
    ] {
        let window = b.read(&cx.ctx, &path, offset, limit).await?;
        ensure_eq!(
            window.lines.len(),
            count,
            "lines at offset {offset} limit {limit}"
        );
        ensure_eq!(
            window.truncated,
            truncated,
            "truncated at offset {offset} limit {limit}"
        );
        ensure_eq!(
            window.total_lines,
            5,
            "total_lines at offset {offset} limit {limit}"
        );
    }
    passed()
}

/// Filtering happens before the limit: non-matching files never use up the limit.
pub async fn limits_filter_before_limit(b: &dyn Backend, cx: &Ctx) -> Outcome {
    for i in 0..30 {
        put(b, cx, &format!("a/{i:02}.txt"), "miss\n").await?;
    }
    put(b, cx, "z/1.md", "hit\n").await?;
    put(b, cx, "z/2.md", "hit\n").await?;
    let found = b.glob(&cx.ctx, "*.md", &cx.root, 2).await?;
    ensure_eq!(
        paths(&found.files),
        abs(cx, &["z/1.md", "z/2.md"])?,
        "glob *.md limit 2"
    );
    ensure!(!found.truncated, "exactly 2 of 2 matches is not truncated");
    let found = b.glob(&cx.ctx, "*.md", &cx.root, 1).await?;
    ensure_eq!(
        paths(&found.files),
        abs(cx, &["z/1.md"])?,
        "glob *.md limit 1"
    );
    ensure!(found.truncated, "1 of 2 matches is truncated");
    let result = b.grep(&cx.ctx, &re("hit"), &cx.root, 2).await?;
    ensure_eq!(
        result.matches.len(),
        2,
        "grep limit 2 after 30 non-matching files"
    );
    ensure!(
        !result.truncated,
        "exactly 2 of 2 grep matches is not truncated"
    );
    let result = b
        .grep(&cx.ctx, &re("hit").with_include("*.md"), &cx.root, 2)
        .await?;
    ensure_eq!(result.matches.len(), 2, "grep with include, limit 2");
    ensure!(
        !result.truncated,
        "exactly 2 of 2 included matches is not truncated"
    );
    passed()
}

/// A huge caller limit (usize::MAX) is fine: no overflow, everything returned.
pub async fn limits_huge_limit_is_fine(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let all = five(b, cx, "h", "x\ny\n").await?;
    let listing = b.ls(&cx.ctx, &cx.p("h")?, usize::MAX).await?;
    ensure_eq!(paths(&listing.entries), all, "ls with usize::MAX");
    ensure!(!listing.truncated, "ls with usize::MAX is not truncated");
    let found = b.glob(&cx.ctx, "**", &cx.root, usize::MAX).await?;
    ensure_eq!(paths(&found.files), all, "glob with usize::MAX");
    let result = b.grep(&cx.ctx, &re("x"), &cx.root, usize::MAX).await?;
    ensure_eq!(result.matches.len(), 5, "grep with usize::MAX");
    let window = b.read(&cx.ctx, &cx.p("h/f0.txt")?, 1, usize::MAX).await?;
    ensure_eq!(window.lines, ["y"], "read with usize::MAX");
    passed()
}

/// The backend's max_results bounds ls, glob and grep whatever the caller asks, with `truncated`.
pub async fn limits_max_results_caps_every_listing(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let max = cx.caps.limits.max_results;
    if max > MAX_TESTED_RESULTS {
        return skipped(format!(
            "max_results is {max}; the suite creates at most {MAX_TESTED_RESULTS} files to exceed it (a fixture may lower it)"
        ));
    }
    for i in 0..=max {
        put(b, cx, &format!("m/{i:05}.txt"), "hit\n").await?;
    }
    let listing = b.ls(&cx.ctx, &cx.p("m")?, max + 10).await?;
    ensure_eq!(listing.entries.len(), max, "ls returns max_results entries");
    ensure!(listing.truncated, "ls past max_results is truncated");
    let found = b.glob(&cx.ctx, "*.txt", &cx.root, max + 10).await?;
    ensure_eq!(found.files.len(), max, "glob returns max_results files");
    ensure!(found.truncated, "glob past max_results is truncated");
    let result = b.grep(&cx.ctx, &re("hit"), &cx.root, max + 10).await?;
    ensure_eq!(
        result.matches.len(),
        max,
        "grep returns max_results matches"
    );
    ensure!(result.truncated, "grep past max_results is truncated");
    passed()
}

/// The max file size is the largest file accepted.
fn max_file_size(cx: &Ctx) -> Result<usize, String> {
    let max = cx.caps.limits.max_file_size;
    if max > MAX_TESTED_FILE_SIZE {
        return Err(format!(
            "max_file_size is {max} bytes; the suite writes files of at most {MAX_TESTED_FILE_SIZE} bytes (a fixture may lower it)"
        ));
    }
    usize::try_from(max).map_err(|_| "max_file_size does not fit in memory".to_owned())
}

/// A file of exactly max_file_size bytes is accepted and read back.
pub async fn limits_file_at_max_size_is_accepted(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let max = match max_file_size(cx) {
        Ok(max) => max,
        Err(reason) => return skipped(reason),
    };
    let bytes = vec![b'x'; max];
    let path = put_bytes(b, cx, "max.txt", &bytes).await?;
    let back = bytes_of(b, cx, &path).await?;
    ensure!(
        back == bytes,
        "read_bytes of a max-size file returns it ({} bytes back of {max})",
        back.len()
    );
    let window = b.read(&cx.ctx, &path, 0, 1).await?;
    ensure_eq!(window.total_lines, 1, "total_lines of a max-size file");
    passed()
}

/// One byte past max_file_size: TooLarge, nothing written (a new file stays missing, an old one keeps its bytes).
pub async fn limits_write_past_max_size_is_too_large(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let max = match max_file_size(cx) {
        Ok(max) => max,
        Err(reason) => return skipped(reason),
    };
    let old = put(b, cx, "old.txt", "keep me\n").await?;
    let before = snapshot(b, cx).await?;
    let big = vec![b'y'; max + 1];
    let text = String::from_utf8(big.clone()).map_err(|e| ScenarioError::new(e.to_string()))?;
    expect_kind(
        b.write_bytes(&cx.ctx, &cx.p("new/big.bin")?, &big).await,
        ErrorKind::TooLarge,
    )
    .map_err(|e| e.context("write_bytes of a new file"))?;
    expect_kind(b.write(&cx.ctx, &old, &text).await, ErrorKind::TooLarge)
        .map_err(|e| e.context("write over a file"))?;
    ensure_unchanged(b, cx, &before, "a write past the max file size").await?;
    passed()
}

/// An edit that would grow a file past max_file_size: TooLarge, file unchanged.
pub async fn limits_edit_past_max_size_is_too_large(b: &dyn Backend, cx: &Ctx) -> Outcome {
    let max = match max_file_size(cx) {
        Ok(max) => max,
        Err(reason) => return skipped(reason),
    };
    if max == 0 {
        return skipped("max_file_size is 0: no file can hold text to edit");
    }
    let text = "a".repeat(max);
    let path = put(b, cx, "grow.txt", &text).await?;
    expect_kind(
        b.edit(&cx.ctx, &path, "a", "aa", true).await,
        ErrorKind::TooLarge,
    )?;
    let back = bytes_of(b, cx, &path).await?;
    ensure!(
        back == text.as_bytes(),
        "the file keeps its {} bytes after a refused edit (now {})",
        text.len(),
        back.len()
    );
    passed()
}

/// A file already past the max file size is refused by `read` and `read_bytes`
/// with TooLarge, and stays listed with its size.
///
/// No mutation can make such a file (they refuse it), so the fixture plants it
/// beneath the backend ([`StoreAccess::plant`](crate::StoreAccess::plant)); a
/// fixture that cannot skips this scenario.
pub async fn limits_read_past_max_size_is_too_large(_b: &dyn Backend, cx: &Ctx) -> Outcome {
    let Some(store) = cx.store() else {
        return skipped(
            "the fixture lends no store access to plant a file past the max file size (Fixture::with_store)",
        );
    };
    let max = match max_file_size(cx) {
        Ok(max) => max,
        Err(reason) => return skipped(reason),
    };
    let path = cx.p("big/over.txt")?;
    let planted = match store.plant(&path, &vec![b'x'; max + 1]) {
        Ok(planted) => planted,
        Err(e) if e.kind() == std::io::ErrorKind::Unsupported => {
            return skipped(format!(
                "the fixture's store access cannot plant a file past the max file size: {e}"
            ));
        }
        Err(e) => fail!("planting a file of {} bytes at {path} failed: {e}", max + 1),
    };
    let b = planted.as_ref();
    expect_kind(b.read(&cx.ctx, &path, 0, 10).await, ErrorKind::TooLarge)
        .map_err(|e| e.context("read of a file past the max file size"))?;
    expect_kind(b.read_bytes(&cx.ctx, &path).await, ErrorKind::TooLarge)
        .map_err(|e| e.context("read_bytes of a file past the max file size"))?;
    let listing = b.ls(&cx.ctx, &cx.p("big")?, BIG).await?;
    let sizes: Vec<(String, Option<u64>)> = listing
        .entries
        .iter()
        .map(|e| (e.path.clone(), e.size))
        .collect();
    ensure_eq!(
        sizes,
        vec![(path.as_str().to_owned(), Some(max as u64 + 1))],
        "ls of the planted file's directory"
    );
    passed()
}
