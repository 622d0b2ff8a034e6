//! burrow's grep reports exactly the lines `rg --crlf` reports, for a table of patterns over text fixtures.
//!
//! ripgrep is the reference for what a grep pattern matches in a line
//! (`burrow_backend::grep`'s module docs). The fixtures cover LF, CRLF, a lone
//! CR, "\r\r\n", empty lines, no final newline, whitespace-only lines and
//! non-ASCII text. `\A` and `\z` are left out: ripgrep gives them no
//! line-by-line meaning of its own (its answers depend on how it buffers).
//! Nor is `$^`: ripgrep 13 reports no line for it, not even an empty LF line
//! where it reports `^$`; burrow matches it as the regex crate matches it
//! on the line, as `^$` (the grep unit tests and fuzz target check that).
//!
//! One answer of ripgrep 13 is not followed ([`RG_QUIRKS`]): it reports `x$`
//! (and `x$\B`) on the line "x\r\r\n" but not `\w$` or `\w+$`; burrow reports none of
//! them (only a "\r" that ends a line is passed over by `$`).

use std::path::Path;
use std::process::Command;

use burrow_backend::{CompiledGrep, GrepCollector, GrepQuery, VPath};

const FIXTURES: &[(&str, &str)] = &[
    ("lf.txt", "a\n#b\nc\n"),
    ("crlf.txt", "one\r\n#two\r\n\r\nthree x\r\n  \r\n"),
    ("lone-cr.txt", "a\rb\nx\r\n\r\ny\r"),
    ("cr-cr.txt", "x\r\r\nend\r\n\r"),
    ("empty-lines.txt", "\n\n\nz\n\n"),
    ("no-final-newline.txt", "last line, no newline: x"),
    (
        "unicode.txt",
        "héllo wörld\nÉTÉ été\nnaïve café\n日本語 text\nΣίσυφος\n",
    ),
    ("empty.txt", ""),
    ("mixed.txt", "lf\ncrlf\r\n\nend"),
    ("spaces.txt", "   \n\t\nx y\n a b \n"),
];

/// (pattern, fixed_strings, ignore_case)
const QUERIES: &[(&str, bool, bool)] = &[
    ("^[^#]*", false, false),
    (r"\s*", false, false),
    ("x*", false, false),
    ("^", false, false),
    ("$", false, false),
    ("a|", false, false),
    ("(?m)^$", false, false),
    ("^$", false, false),
    ("", false, false),
    ("x$", false, false),
    ("y$", false, false),
    ("b$", false, false),
    ("a.b", false, false),
    (r"a\sb", false, false),
    (r"\bx\b", false, false),
    (r"\w+$", false, false),
    (r"\s+$", false, false),
    ("[^a]$", false, false),
    ("^#", false, false),
    ("^[^#]+$", false, false),
    (r"\S", false, false),
    ("é", false, false),
    (r"\w{3} \w", false, false),
    ("(?-m)^x", false, false),
    ("#", true, false),
    ("x", true, false),
    (".", true, false),
    ("$", true, false),
    ("é", true, false),
    ("a b", true, false),
    ("ÉTÉ", false, true),
    ("É", true, true),
    ("X", true, true),
    ("HELLO", false, true),
    ("σ", false, true),
    ("^[a-z]+$", false, true),
    // Looks after `$` see the position before a dropped "\r".
    (r"a$\b", false, false),
    (r"x$\B", false, false),
];

/// (pattern, file, line number) that ripgrep 13 reports and burrow does not, on purpose.
const RG_QUIRKS: &[(&str, &str, u64)] = &[("x$", "cr-cr.txt", 1), (r"x$\B", "cr-cr.txt", 1)];

/// (file name, line number, line as `read` returns it)
type Hit = (String, u64, String);

fn burrow(dir: &Path, query: &GrepQuery) -> Vec<Hit> {
    let grep = CompiledGrep::new(query).unwrap();
    let mut names: Vec<&str> = FIXTURES.iter().map(|(name, _)| *name).collect();
    names.sort_unstable();
    let mut collector = GrepCollector::new(10_000);
    for name in names {
        let path = VPath::parse(name).unwrap();
        collector.search(&grep, &path, &std::fs::read(dir.join(name)).unwrap());
    }
    let result = collector.finish();
    assert!(!result.truncated);
    result
        .matches
        .into_iter()
        .map(|m| {
            (
                m.path.trim_start_matches('/').to_owned(),
                m.line_number,
                m.line,
            )
        })
        .collect()
}

fn ripgrep(rg: &str, dir: &Path, query: &GrepQuery) -> Vec<Hit> {
    let mut command = Command::new(rg);
    command.current_dir(dir).args([
        "--no-config",
        "--crlf",
        "--no-heading",
        "-n",
        "--with-filename",
        "--no-ignore",
        "--hidden",
        "--color=never",
    ]);
    if query.fixed_strings {
        command.arg("-F");
    }
    if query.ignore_case {
        command.arg("-i");
    }
    let out = command
        .arg("-e")
        .arg(&query.pattern)
        .arg(".")
        .output()
        .unwrap();
    assert!(
        out.status.code() == Some(0) || out.status.code() == Some(1),
        "rg failed on {query:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let mut hits: Vec<Hit> = stdout
        .split_terminator('\n')
        .map(|record| {
            // rg ends each printed line with "\r\n" under --crlf when the line had no "\n".
            let record = record.strip_suffix('\r').unwrap_or(record);
            let (name, rest) = record.split_once(':').unwrap();
            let (number, line) = rest.split_once(':').unwrap();
            let name = name.trim_start_matches("./").to_owned();
            (name, number.parse().unwrap(), line.to_owned())
        })
        .collect();
    hits.sort();
    hits
}

#[test]
fn grep_reports_the_lines_ripgrep_reports() {
    let rg = burrow_testkit::require(burrow_testkit::Part::Ripgrep);
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in FIXTURES {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let mut differences = Vec::new();
    for &(pattern, fixed_strings, ignore_case) in QUERIES {
        let query = GrepQuery {
            pattern: pattern.to_owned(),
            fixed_strings,
            ignore_case,
            include: None,
        };
        let mut want = ripgrep(&rg, dir.path(), &query);
        want.retain(|(name, number, _)| !RG_QUIRKS.contains(&(pattern, name.as_str(), *number)));
        let got = burrow(dir.path(), &query);
        if got != want {
            differences.push(format!("{query:?}\n  rg:     {want:?}\n  burrow: {got:?}"));
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}
