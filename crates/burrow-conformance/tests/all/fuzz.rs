//! Fuzz targets on stable Rust: random inputs (proptest) for `VPath::parse`, `Glob`, `apply_edit`, the FileData decoder and grep, each checking invariants, failing seeds kept as regression cases.
//!
//! cargo-fuzz needs nightly for its sanitizers; these machines have stable Rust
//! only, so each target is a proptest strategy plus an invariant check. A plain
//! test run tries [`QUICK_CASES`] inputs per target after replaying the seeds
//! kept in `fuzz/regressions/<target>.txt` (proptest writes a failing seed
//! there). `cargo xtask fuzz [SECONDS]` sets `BURROW_FUZZ_SECONDS` and runs this
//! test alone: each target then draws fresh random inputs for its share of the
//! time. What the runs found is in docs/fuzzing.md.

use std::time::{Duration, Instant};

use burrow_backend::{Backend, ErrorKind, FileContext, GrepQuery, VPath, glob::Glob, text};
use burrow_state::StateBackend;
use burrow_types::filedata::{
    FileData, FilesDocument, files_document_to_json, parse_files_document,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, TestCaseError, TestRunner};

/// Inputs each target tries in a plain test run.
const QUICK_CASES: u32 = 256;

/// One run of `strategy` through `check` under the target `name`: `cases` inputs,
/// after the kept regression seeds; a failure is shrunk, its seed kept, and reported.
fn run<S>(
    name: &str,
    cases: u32,
    strategy: S,
    check: impl Fn(S::Value) -> Result<(), TestCaseError>,
) -> Result<(), String>
where
    S: Strategy,
    S::Value: std::fmt::Debug,
{
    let file: &'static str = Box::leak(
        format!("{}/fuzz/regressions/{name}.txt", env!("CARGO_MANIFEST_DIR")).into_boxed_str(),
    );
    let config = Config {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(file))),
        max_shrink_iters: 4096,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    runner
        .run(&strategy, check)
        .map_err(|e| format!("fuzz target {name}: {e}"))
}

fn block_on<F: Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(f)
}

fn vpath(cases: u32) -> Result<(), String> {
    let input = prop_oneof![
        "[a-c./\\\\~ \\x00\\n\\x1b]{0,24}",
        any::<String>(),
        (1usize..1500).prop_map(|n| "ab/".repeat(n)),
        (250usize..260).prop_map(|n| format!("/{}", "x".repeat(n))),
    ];
    run("vpath", cases, input, |input| {
        match VPath::parse(&input) {
            Ok(p) => {
                let s = p.as_str();
                prop_assert!(s.starts_with('/'), "{s:?} is absolute");
                prop_assert!(s == "/" || !s.ends_with('/'), "{s:?} has no trailing /");
                prop_assert!(!s.contains("//"), "{s:?} has no empty segment");
                prop_assert!(
                    s.split('/').all(|seg| seg != "." && seg != ".."),
                    "{s:?} has no . or .. segment"
                );
                prop_assert!(!s.contains('\0'), "{s:?} holds no NUL");
                prop_assert!(s.len() <= 4096, "{} bytes", s.len());
                prop_assert_eq!(format!("{p}"), s, "Display is as_str");
                let again =
                    VPath::parse(s).map_err(|e| TestCaseError::fail(e.message().to_owned()))?;
                prop_assert_eq!(again.as_str(), s, "parse(as_str()) round-trips");
            }
            Err(e) => {
                prop_assert_eq!(e.kind(), ErrorKind::InvalidPath);
                prop_assert!(
                    !e.message().chars().any(char::is_control),
                    "printable refusal: {:?}",
                    e.message()
                );
            }
        }
        Ok(())
    })
}

fn glob(cases: u32) -> Result<(), String> {
    let input = (
        "[a-c*?/{},\\[\\]!.\\\\-]{0,14}",
        // Relative paths as a VPath gives them: no empty, "." or ".." segment.
        prop::collection::vec(
            "([a-c][a-c.]{0,2}|\\.[a-c]{1,2})(/([a-c][a-c.]{0,2}|\\.[a-c]{1,2})){0,3}",
            0..6,
        ),
    );
    run("glob", cases, input, |(pattern, paths)| {
        let Ok(glob) = Glob::new(&pattern) else {
            return Ok(());
        };
        // "." and ".." are path specials, not names (see docs/fuzzing.md).
        let literal = !pattern.is_empty()
            && pattern != "."
            && pattern != ".."
            && pattern.chars().all(|c| c.is_ascii_lowercase() || c == '.');
        for path in &paths {
            let matched = glob.is_match(path);
            if literal {
                let name = path.rsplit('/').next().unwrap_or_default();
                prop_assert_eq!(
                    matched,
                    name == pattern,
                    "a literal pattern {:?} matches the file name at any depth ({:?})",
                    pattern,
                    path
                );
            }
        }
        Ok(())
    })
}

fn edit(cases: u32) -> Result<(), String> {
    let content = prop_oneof![
        "[ab\\r\\n é]{0,24}".prop_map(String::into_bytes),
        prop::collection::vec(any::<u8>(), 0..24),
    ];
    let input = (content, "[ab\\r\\n]{0,3}", "[ab\\r\\n]{0,3}", any::<bool>());
    run("edit", cases, input, |(bytes, old, new, all)| {
        let path = VPath::parse("/f.txt").unwrap();
        let pure = text::apply_edit(&path, &bytes, &old, &new, all);
        let b = StateBackend::new();
        let ctx = FileContext::for_tenant("fuzz");
        let (on_backend, after) = block_on(async {
            b.write_bytes(&ctx, &path, &bytes).await.unwrap();
            let r = b.edit(&ctx, &path, &old, &new, all).await;
            (r, b.read_bytes(&ctx, &path).await.unwrap())
        });
        match (pure, on_backend) {
            (Ok((out, count)), Ok(r)) => {
                prop_assert!(count >= 1, "a successful edit replaced something");
                prop_assert!(
                    all || count == 1,
                    "without replace_all exactly one occurrence"
                );
                prop_assert_eq!(r.occurrences, Some(count as u64));
                prop_assert_eq!(&after, &out, "the backend wrote apply_edit's content");
            }
            (Err(e), Err(f)) => {
                prop_assert!(e.is_refusal(), "a refusal, not a failure: {}", e.message());
                prop_assert_eq!(e.kind(), f.kind());
                prop_assert_eq!(&after, &bytes, "a refused edit changes nothing");
            }
            (pure, backend) => {
                return Err(TestCaseError::fail(format!(
                    "apply_edit and the backend disagree: {pure:?} vs {backend:?}"
                )));
            }
        }
        Ok(())
    })
}

fn filedata(cases: u32) -> Result<(), String> {
    let input = (
        prop::collection::vec(any::<u8>(), 0..40),
        "[ab\\n\\r\\x00é]{0,20}",
        "[{}\\[\\]\":,a0-9\\\\u nulltrue]{0,40}",
    );
    run("filedata", cases, input, |(bytes, text, json)| {
        let _ = parse_files_document(&json);
        for content in [bytes.clone(), text.into_bytes()] {
            let data = FileData::from_bytes(&content, "t0".into(), "t1".into());
            prop_assert_eq!(
                data.to_bytes().ok(),
                Some(content.clone()),
                "FileData round-trips"
            );
            let mut doc = FilesDocument::new();
            doc.insert("/f".into(), data);
            let written = files_document_to_json(&doc);
            let back = parse_files_document(&written)
                .map_err(|e| TestCaseError::fail(format!("reading back {written:?}: {e}")))?;
            let got = back.get("/f").and_then(|d| d.to_bytes().ok());
            prop_assert_eq!(got, Some(content), "the document round-trips");
        }
        Ok(())
    })
}

/// The lines `read` splits `text` into: on "\n", a final "\n" ending the last line,
/// a "\r" before "\n" not part of the line (a lone "\r" is).
fn read_lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n')
        .map(|l| match l.strip_suffix('\n') {
            Some(l) => l.strip_suffix('\r').unwrap_or(l),
            None => l,
        })
        .collect()
}

fn grep(cases: u32) -> Result<(), String> {
    let atom = proptest::sample::select(
        &[
            "a", "b", "#", " ", "[^#]", "[^a]", "\\s", "\\S", ".", "^", "$", "(a|b)",
        ][..],
    );
    let quantifier = proptest::sample::select(&["", "*", "+", "?"][..]);
    let composed = prop::collection::vec((atom, quantifier), 1..4).prop_map(|parts| {
        parts
            .into_iter()
            .map(|(a, q)| format!("{a}{q}"))
            .collect::<String>()
    });
    let pattern = prop_oneof!["[ab#^$.*+?|()\\[\\]\\\\s]{0,6}", composed];
    // "\r" only as part of "\r\n": with a lone "\r" a line holds a character that
    // grep (like `rg --crlf`) lets no pattern match, which this line-by-line model
    // cannot express; the ripgrep comparison in burrow-backend covers lone "\r".
    let token = proptest::sample::select(&["a", "b", "#", " ", "\n", "\r\n"][..]);
    let content = prop::collection::vec(token, 0..30).prop_map(|t| t.concat());
    let input = (content, pattern);
    run("grep", cases, input, |(content, pattern)| {
        let path = VPath::parse("/f.txt").unwrap();
        let b = StateBackend::new();
        let ctx = FileContext::for_tenant("fuzz");
        let got = block_on(async {
            b.write(&ctx, &path, &content).await.unwrap();
            b.grep(
                &ctx,
                &GrepQuery::regex(pattern.as_str()),
                &VPath::root(),
                1000,
            )
            .await
        });
        let model = regex::RegexBuilder::new(&pattern)
            .multi_line(true)
            .size_limit(1 << 20)
            .build();
        match (model, got) {
            (Ok(re), Ok(result)) => {
                let want: Vec<(u64, String)> = read_lines(&content)
                    .into_iter()
                    .enumerate()
                    .filter(|(_, line)| re.is_match(line))
                    .map(|(i, line)| (i as u64 + 1, line.to_owned()))
                    .collect();
                let found: Vec<(u64, String)> = result
                    .matches
                    .iter()
                    .map(|m| (m.line_number, m.line.clone()))
                    .collect();
                prop_assert_eq!(
                    found,
                    want,
                    "grep {:?} over {:?}: every line the regex matches",
                    pattern,
                    content
                );
            }
            (Err(_), Err(e)) => prop_assert_eq!(e.kind(), ErrorKind::InvalidArgument),
            (model, got) => {
                return Err(TestCaseError::fail(format!(
                    "the regex crate says {:?}, grep says {:?}",
                    model.map(|_| "valid"),
                    got.map(|r| r.matches.len())
                )));
            }
        }
        Ok(())
    })
}

/// A fuzz target: runs that many random inputs.
type Target = fn(u32) -> Result<(), String>;

/// The targets, by name.
const TARGETS: &[(&str, Target)] = &[
    ("vpath", vpath),
    ("glob", glob),
    ("edit", edit),
    ("filedata", filedata),
    ("grep", grep),
];

/// Every target holds: `QUICK_CASES` inputs each, or, under `cargo xtask fuzz SECONDS`
/// (`BURROW_FUZZ_SECONDS`), fresh batches until each target's share of the time is up.
#[test]
fn fuzz_targets_hold() {
    let budget = std::env::var("BURROW_FUZZ_SECONDS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok());
    let mut failures = Vec::new();
    for (name, target) in TARGETS {
        let Some(seconds) = budget else {
            if let Err(e) = target(QUICK_CASES) {
                failures.push(e);
            }
            continue;
        };
        let share = Duration::from_secs(seconds) / TARGETS.len() as u32;
        let start = Instant::now();
        let mut batches = 0u64;
        while start.elapsed() < share {
            batches += 1;
            if let Err(e) = target(2000) {
                failures.push(e);
                break;
            }
        }
        eprintln!(
            "fuzz {name}: {batches} batches of 2000 inputs in {:?}",
            start.elapsed()
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
