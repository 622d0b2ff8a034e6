//! StateBackend benchmarks: per-operation cost at 1,000 and 10,000 files of 50 lines, and a mixed workload.
//!
//! The per-operation benches should cost about the same at both sizes: that
//! is the point of the directory index. `write`, `read` and `edit` touch a
//! different file each call, cycling through a working set of 1,000 files
//! spread over the whole store (every file at 1,000, every tenth at 10,000),
//! so the two sizes differ in store size only. `write_every_file`,
//! `read_every_file` and `edit_every_file` cycle through every file instead:
//! at 10,000 files (15 MB of content) their working set outgrows the per-core
//! L2 cache that holds 1,000 files (1.5 MB), and they show what that costs.
//! `write_one_file`, `create_delete`, `glob_dir` and `grep_dir` measure the
//! index alone. `glob_all` and `grep_all` scan every file by nature and grow
//! with the store.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use burrow_backend::{Backend, FileContext, GrepQuery, VPath};
use burrow_state::StateBackend;
use divan::Bencher;
use tokio::runtime::Runtime;

fn main() {
    divan::main();
}

const SIZES: &[usize] = &[1_000, 10_000];
/// Files per directory: /src/dNNN/file_NNNNN.rs.
const PER_DIR: usize = 100;
/// How many distinct files the working-set benches touch, at any store size.
const WORKING_SET: usize = 1_000;
/// The step through the working set: prime, so consecutive calls land far apart.
const STRIDE: usize = 7919;

/// Cycles through `set` files spread evenly over a store of `n`: the index
/// of the next file each call.
struct Cycle {
    n: usize,
    set: usize,
    at: usize,
}

impl Cycle {
    /// The working set of 1,000 files of a store of `n`.
    fn working_set(n: usize) -> Cycle {
        Cycle {
            n,
            set: WORKING_SET.min(n),
            at: 0,
        }
    }

    /// Every file of a store of `n`.
    fn every_file(n: usize) -> Cycle {
        Cycle { n, set: n, at: 0 }
    }

    fn next(&mut self) -> usize {
        self.at = (self.at + STRIDE) % self.set;
        self.at * (self.n / self.set)
    }
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a tokio runtime")
}

fn path(i: usize) -> VPath {
    VPath::parse(&format!("/src/d{:03}/file_{i:05}.rs", i / PER_DIR)).expect("a valid path")
}

/// 50 lines; the first holds a generation counter that `edit` bumps.
fn content(i: usize) -> String {
    let mut text = format!("// file {i} generation 0\n");
    for line in 1..50 {
        text.push_str(&format!(
            "    let value_{line} = compute({i}, {line}); // padding text\n"
        ));
    }
    text
}

fn populated(rt: &Runtime, n: usize) -> (StateBackend, Vec<VPath>) {
    let backend = StateBackend::new();
    let ctx = FileContext::default();
    let paths: Vec<VPath> = (0..n).map(path).collect();
    rt.block_on(async {
        for (i, p) in paths.iter().enumerate() {
            backend.write(&ctx, p, &content(i)).await.expect("write");
        }
    });
    (backend, paths)
}

/// Replacing an existing file, cycling through the working set.
#[divan::bench(args = SIZES, sample_count = 1000, sample_size = 10)]
fn write(bencher: Bencher, n: usize) {
    bench_write(bencher, n, Cycle::working_set(n));
}

/// Replacing an existing file, cycling through every file of the store.
#[divan::bench(args = SIZES, sample_count = 1000, sample_size = 10)]
fn write_every_file(bencher: Bencher, n: usize) {
    bench_write(bencher, n, Cycle::every_file(n));
}

fn bench_write(bencher: Bencher, n: usize, mut cycle: Cycle) {
    let rt = runtime();
    let (backend, paths) = populated(&rt, n);
    let ctx = FileContext::default();
    let text = content(7);
    bencher.bench_local(|| {
        rt.block_on(backend.write(&ctx, &paths[cycle.next()], &text))
            .expect("write")
    });
}

/// Replacing the same file again and again: the index cost alone, with the
/// file's memory in cache at both sizes (compare with `write`).
#[divan::bench(args = SIZES, sample_count = 1000, sample_size = 10)]
fn write_one_file(bencher: Bencher, n: usize) {
    let rt = runtime();
    let (backend, paths) = populated(&rt, n);
    let ctx = FileContext::default();
    let text = content(7);
    let target = &paths[n / 2];
    bencher.bench_local(|| {
        rt.block_on(backend.write(&ctx, target, &text))
            .expect("write")
    });
}

/// Creating a file in a new directory, then deleting it (the store keeps its size).
#[divan::bench(args = SIZES, sample_count = 1000, sample_size = 10)]
fn create_delete(bencher: Bencher, n: usize) {
    let rt = runtime();
    let (backend, _) = populated(&rt, n);
    let ctx = FileContext::default();
    let fresh = VPath::parse("/new/dir/fresh.rs").expect("path");
    let text = content(0);
    bencher.bench_local(|| {
        rt.block_on(async {
            backend.write(&ctx, &fresh, &text).await.expect("write");
            backend.delete(&ctx, &fresh).await.expect("delete");
        })
    });
}

/// Reading 100 lines of a file, cycling through the working set.
#[divan::bench(args = SIZES, sample_count = 1000, sample_size = 10)]
fn read(bencher: Bencher, n: usize) {
    bench_read(bencher, n, Cycle::working_set(n));
}

/// Reading 100 lines of a file, cycling through every file of the store.
#[divan::bench(args = SIZES, sample_count = 1000, sample_size = 10)]
fn read_every_file(bencher: Bencher, n: usize) {
    bench_read(bencher, n, Cycle::every_file(n));
}

fn bench_read(bencher: Bencher, n: usize, mut cycle: Cycle) {
    let rt = runtime();
    let (backend, paths) = populated(&rt, n);
    let ctx = FileContext::default();
    bencher.bench_local(|| {
        rt.block_on(backend.read(&ctx, &paths[cycle.next()], 0, 100))
            .expect("read")
    });
}

/// Replacing one unique occurrence in a file, cycling through the working set.
#[divan::bench(args = SIZES, sample_count = 1000, sample_size = 10)]
fn edit(bencher: Bencher, n: usize) {
    bench_edit(bencher, n, Cycle::working_set(n));
}

/// Replacing one unique occurrence in a file, cycling through every file of the store.
#[divan::bench(args = SIZES, sample_count = 1000, sample_size = 10)]
fn edit_every_file(bencher: Bencher, n: usize) {
    bench_edit(bencher, n, Cycle::every_file(n));
}

fn bench_edit(bencher: Bencher, n: usize, mut cycle: Cycle) {
    let rt = runtime();
    let (backend, paths) = populated(&rt, n);
    let ctx = FileContext::default();
    let mut generations = vec![0u64; n];
    bencher.bench_local(|| {
        let k = cycle.next();
        let g = generations[k];
        generations[k] += 1;
        let (old, new) = (
            format!("generation {g}\n"),
            format!("generation {}\n", g + 1),
        );
        rt.block_on(backend.edit(&ctx, &paths[k], &old, &new, false))
            .expect("edit")
    });
}

/// A glob under one directory of 100 files: a range scan, the same cost at any store size.
#[divan::bench(args = SIZES)]
fn glob_dir(bencher: Bencher, n: usize) {
    let rt = runtime();
    let (backend, _) = populated(&rt, n);
    let ctx = FileContext::default();
    let under = VPath::parse("/src/d003").expect("path");
    bencher.bench_local(|| {
        rt.block_on(backend.glob(&ctx, "*.rs", &under, 1000))
            .expect("glob")
    });
}

/// A glob of the whole store matching ten files: scans every path.
#[divan::bench(args = SIZES)]
fn glob_all(bencher: Bencher, n: usize) {
    let rt = runtime();
    let (backend, _) = populated(&rt, n);
    let ctx = FileContext::default();
    bencher.bench_local(|| {
        rt.block_on(backend.glob(&ctx, "**/file_0000?.rs", &VPath::root(), 1000))
            .expect("glob")
    });
}

/// A grep under one directory of 100 files (5,000 lines).
#[divan::bench(args = SIZES)]
fn grep_dir(bencher: Bencher, n: usize) {
    let rt = runtime();
    let (backend, _) = populated(&rt, n);
    let ctx = FileContext::default();
    let under = VPath::parse("/src/d003").expect("path");
    let query = GrepQuery::regex(r"generation \d+$");
    bencher.bench_local(|| {
        rt.block_on(backend.grep(&ctx, &query, &under, 1000))
            .expect("grep")
    });
}

/// A grep of the whole store for a rare line: searches every line of every file.
#[divan::bench(args = SIZES)]
fn grep_all(bencher: Bencher, n: usize) {
    let rt = runtime();
    let (backend, _) = populated(&rt, n);
    let ctx = FileContext::default();
    let query = GrepQuery::regex(r"compute\(42, 7\)");
    bencher.bench_local(|| {
        rt.block_on(backend.grep(&ctx, &query, &VPath::root(), 100))
            .expect("grep")
    });
}

/// 1,000 writes, 1,000 reads and 1,000 edits on a fresh store, in one iteration.
#[divan::bench(sample_count = 30)]
fn mixed_3000_ops(bencher: Bencher) {
    let rt = runtime();
    let ctx = FileContext::default();
    let paths: Vec<VPath> = (0..1000).map(path).collect();
    let texts: Vec<String> = (0..1000).map(content).collect();
    bencher
        .with_inputs(StateBackend::new)
        .bench_local_values(|backend| {
            rt.block_on(async {
                for (p, text) in paths.iter().zip(&texts) {
                    backend.write(&ctx, p, text).await.expect("write");
                }
                for p in &paths {
                    backend.read(&ctx, p, 0, 100).await.expect("read");
                }
                for p in &paths {
                    backend
                        .edit(&ctx, p, "generation 0\n", "generation 1\n", false)
                        .await
                        .expect("edit");
                }
            });
            backend
        });
}
