//! FsBackend benchmarks: grep over 10,000 files against `rg -j2`, and 1,000 writes, reads and edits.
//!
//! Run with `cargo bench -p burrow-fs`. The grep corpus is written once and
//! searched warm (the page cache holds it after the first run). After the
//! divan table, the same grep is timed against `rg -j2 REGEX DIR` on the same
//! folder when `rg` is installed, and the ratio printed (target: within 2x).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use burrow_backend::{Backend, FileContext, GrepQuery, VPath};
use burrow_fs::{FsBackend, FsOptions};
use tempfile::TempDir;

/// The regex searched for: a few lines per file match.
const REGEX: &str = r"fn handle_[a-z]+_\d+\(";
const FILES: usize = 10_000;
const OPS: usize = 1_000;

fn main() {
    divan::main();
    compare_with_ripgrep();
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// One ~2.4 KiB source-like file (50 lines of ~48 bytes), two of whose lines match `REGEX`.
fn corpus_file(i: usize) -> String {
    let mut text = String::with_capacity(2500);
    for line in 0..50 {
        let body = match line {
            7 => format!("fn handle_request_{i}(ctx: &Context) -> Result<()> {{"),
            31 => format!("fn handle_event_{line}(ev: Event) -> bool {{ true }}"),
            _ => format!("    let value_{line:02} = compute(input, {i:05}, {line:02}); // x"),
        };
        text.push_str(&body);
        text.push('\n');
    }
    text
}

/// The grep corpus: 10,000 files in 100 directories, written once.
fn corpus() -> &'static TempDir {
    static CORPUS: OnceLock<TempDir> = OnceLock::new();
    CORPUS.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..FILES {
            let sub = dir.path().join(format!("pkg{:03}", i / 100));
            if i % 100 == 0 {
                std::fs::create_dir_all(&sub).unwrap();
            }
            std::fs::write(sub.join(format!("mod{i:05}.rs")), corpus_file(i)).unwrap();
        }
        dir
    })
}

/// Greps the corpus for `regex`, checking the number of matching lines.
fn grep_once(rt: &tokio::runtime::Runtime, backend: &FsBackend, regex: &str, want: usize) -> usize {
    let query = GrepQuery::regex(regex);
    let found = rt
        .block_on(backend.grep(&FileContext::default(), &query, &VPath::root(), 100_000))
        .unwrap();
    assert_eq!(found.matches.len(), want);
    found.matches.len()
}

#[divan::bench(sample_count = 20, sample_size = 1)]
fn grep_10k_files(bencher: divan::Bencher) {
    let rt = runtime();
    let backend = FsBackend::open_with(
        corpus().path(),
        FsOptions::default().with_max_results(100_000),
    )
    .unwrap();
    grep_once(&rt, &backend, REGEX, 2 * FILES);
    bencher.bench_local(|| grep_once(&rt, &backend, REGEX, 2 * FILES));
}

#[divan::bench(sample_count = 20, sample_size = 1)]
fn glob_10k_files(bencher: divan::Bencher) {
    let rt = runtime();
    let backend = FsBackend::open_with(
        corpus().path(),
        FsOptions::default().with_max_results(100_000),
    )
    .unwrap();
    bencher.bench_local(|| {
        let found = rt
            .block_on(backend.glob(&FileContext::default(), "**/*.rs", &VPath::root(), 100_000))
            .unwrap();
        assert_eq!(found.files.len(), FILES);
    });
}

/// A 50-line file.
fn fifty_lines(tag: &str) -> String {
    (0..50)
        .map(|i| format!("line {i:02} of a fifty-line file, tagged {tag}\n"))
        .collect()
}

fn paths() -> Vec<VPath> {
    (0..OPS)
        .map(|i| VPath::parse(&format!("/d{:02}/f{i:04}.txt", i % 20)).unwrap())
        .collect()
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn write_1000_files(bencher: divan::Bencher) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let backend = FsBackend::open(dir.path()).unwrap();
    let (paths, content) = (paths(), fifty_lines("w"));
    bencher.bench_local(|| {
        rt.block_on(async {
            for path in &paths {
                backend
                    .write(&FileContext::default(), path, &content)
                    .await
                    .unwrap();
            }
        })
    });
}

fn filled(rt: &tokio::runtime::Runtime, dir: &Path) -> (FsBackend, Vec<VPath>) {
    let backend = FsBackend::open(dir).unwrap();
    let paths = paths();
    rt.block_on(async {
        for path in &paths {
            backend
                .write(&FileContext::default(), path, &fifty_lines("alpha"))
                .await
                .unwrap();
        }
    });
    (backend, paths)
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn read_1000_files(bencher: divan::Bencher) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let (backend, paths) = filled(&rt, dir.path());
    bencher.bench_local(|| {
        rt.block_on(async {
            for path in &paths {
                let window = backend
                    .read(&FileContext::default(), path, 0, 100)
                    .await
                    .unwrap();
                assert_eq!(window.total_lines, 50);
            }
        })
    });
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn edit_1000_files(bencher: divan::Bencher) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let (backend, paths) = filled(&rt, dir.path());
    let mut flip = false;
    bencher.bench_local(|| {
        let (old, new) = if flip {
            ("beta", "alpha")
        } else {
            ("alpha", "beta")
        };
        flip = !flip;
        rt.block_on(async {
            for path in &paths {
                let done = backend
                    .edit(&FileContext::default(), path, old, new, true)
                    .await
                    .unwrap();
                assert_eq!(done.occurrences, Some(50));
            }
        })
    });
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Times our grep and `rg -j2` on the same warm folder, for a regex that
/// matches two lines in every file and one that matches a single line in
/// all, and prints both and their ratio.
fn compare_with_ripgrep() {
    let rg_present = Command::new("rg")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !rg_present {
        println!("note: rg (ripgrep) is not installed; skipped the comparison with `rg -j2`.");
        return;
    }
    compare(REGEX, 2 * FILES);
    compare(r"fn handle_request_4242\(", 1);
}

fn compare(regex: &str, want: usize) {
    const RUNS: usize = 20;
    let dir = corpus().path();
    let rg = || {
        let start = Instant::now();
        let out = Command::new("rg")
            .args(["-j2", "--no-config", regex])
            .arg(dir)
            .stderr(Stdio::null())
            .output()
            .unwrap();
        let elapsed = start.elapsed();
        let lines = out.stdout.iter().filter(|&&b| b == b'\n').count();
        assert_eq!(lines, want, "rg found a different number of lines");
        elapsed
    };
    let rt = runtime();
    let backend =
        FsBackend::open_with(dir, FsOptions::default().with_max_results(100_000)).unwrap();
    let ours = || {
        let start = Instant::now();
        grep_once(&rt, &backend, regex, want);
        start.elapsed()
    };
    // Warm both (and the page cache) first, then alternate them so both see
    // the same machine load (this machine may be shared).
    rg();
    ours();
    let (mut rg_times, mut our_times) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        rg_times.push(rg());
        our_times.push(ours());
    }
    let (rg_median, ours_median) = (median(rg_times), median(our_times));
    println!(
        "grep of {regex:?} ({want} matching lines) over {FILES} files (~2.4 KiB each, warm), median of {RUNS} runs:\n  \
         FsBackend::grep ({} threads): {:.1} ms\n  rg -j2 (process, incl. start-up): {:.1} ms\n  ratio: {:.2}x (target: within 2x)",
        backend.options().threads,
        ours_median.as_secs_f64() * 1e3,
        rg_median.as_secs_f64() * 1e3,
        ours_median.as_secs_f64() / rg_median.as_secs_f64(),
    );
}
