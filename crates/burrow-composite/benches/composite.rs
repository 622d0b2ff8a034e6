//! CompositeBackend benchmarks: the cost of routing (1,000 reads through 8 mounts vs the backend directly) and of fanning grep out over 4 mounts.
//!
//! `reads` does the same 1,000 reads of one StateBackend directly, through a
//! composite where it is one of 8 mounts, and through a composite where it is
//! the default beneath 8 mounts (the target was under 5% more time). `grep_*` search the same
//! 1,000 files held by one StateBackend or split over 4 mounts, once for a
//! common word (the limit stops the search early) and once for a rare one
//! (every file is searched).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, LazyLock};

use burrow_backend::{Backend, FileContext, GrepQuery, VPath};
use burrow_composite::CompositeBackend;
use burrow_state::StateBackend;
use divan::Bencher;
use tokio::runtime::Runtime;

fn main() {
    divan::main();
}

const FILES: usize = 1_000;
const MOUNTS: usize = 8;
const GREP_MOUNTS: usize = 4;

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a tokio runtime")
}

fn p(s: &str) -> VPath {
    VPath::parse(s).expect("a valid path")
}

/// 20 lines; every 50th file holds the rare word.
fn content(i: usize) -> String {
    let mut text = String::new();
    for line in 0..20 {
        text.push_str(&format!("line {line} of file {i}: common words here\n"));
    }
    if i.is_multiple_of(50) {
        text.push_str("a rare_word appears\n");
    }
    text
}

fn fill(rt: &Runtime, backend: &StateBackend, paths: &[VPath]) {
    let ctx = FileContext::default();
    rt.block_on(async {
        for (i, path) in paths.iter().enumerate() {
            backend.write(&ctx, path, &content(i)).await.expect("write");
        }
    });
}

/// The target store with 1,000 files; a composite where it is mounted at
/// "/m7" beside 7 other mounts (each holding one file) over a default; and a
/// composite where it is the default beneath those 8 mounts.
fn read_setup(rt: &Runtime) -> (StateBackend, CompositeBackend, CompositeBackend) {
    let target = StateBackend::new();
    let paths: Vec<VPath> = (0..FILES)
        .map(|i| p(&format!("/src/file_{i:04}.rs")))
        .collect();
    fill(rt, &target, &paths);
    let others: Vec<StateBackend> = (0..MOUNTS)
        .map(|_| {
            let other = StateBackend::new();
            fill(rt, &other, &[p("/one.txt")]);
            other
        })
        .collect();
    let mut mounted = CompositeBackend::builder(Arc::new(StateBackend::new()));
    let mut as_default = CompositeBackend::builder(Arc::new(target.clone()));
    for (m, other) in others.iter().enumerate() {
        let backend: Arc<dyn Backend> = if m == MOUNTS - 1 {
            Arc::new(target.clone())
        } else {
            Arc::new(other.clone())
        };
        mounted = mounted.mount(format!("/m{m}"), backend);
        as_default = as_default.mount(format!("/m{m}"), Arc::new(other.clone()));
    }
    (
        target,
        mounted.build().expect("a composite"),
        as_default.build().expect("a composite"),
    )
}

/// The same 1,000 reads, through `&dyn Backend` either way: `direct`, through
/// the composite where the store is the last of 8 mounts (`mount`, the
/// routing worst case), and where it is the composite's default (`default`).
///
/// The stores are built once and shared by the three, so each measures the
/// same memory (building them per benchmark made the first one measured
/// look faster than the rest).
#[divan::bench(args = ["direct", "mount", "default"])]
fn reads(bencher: Bencher, via: &str) {
    static SETUP: LazyLock<(StateBackend, CompositeBackend, CompositeBackend)> =
        LazyLock::new(|| read_setup(&runtime()));
    let rt = runtime();
    let (target, mounted, as_default) = &*SETUP;
    let (backend, prefix): (&dyn Backend, String) = match via {
        "direct" => (target, String::new()),
        "mount" => (mounted, format!("/m{}", MOUNTS - 1)),
        _ => (as_default, String::new()),
    };
    let ctx = FileContext::default();
    let paths: Vec<VPath> = (0..FILES)
        .map(|i| p(&format!("{prefix}/src/file_{i:04}.rs")))
        .collect();
    bencher.bench_local(|| {
        rt.block_on(async {
            for path in &paths {
                divan::black_box(backend.read(&ctx, path, 0, 100).await.expect("read"));
            }
        })
    });
}

/// One store holding "/pK/file_NNNN.rs", and a composite with the same files
/// split over mounts at "/p0" .. "/p3".
fn grep_setup(rt: &Runtime) -> (StateBackend, CompositeBackend) {
    let single = StateBackend::new();
    let all: Vec<VPath> = (0..FILES)
        .map(|i| p(&format!("/p{}/file_{i:04}.rs", i % GREP_MOUNTS)))
        .collect();
    fill(rt, &single, &all);
    let mut builder = CompositeBackend::builder(Arc::new(StateBackend::new()));
    for m in 0..GREP_MOUNTS {
        let mount = StateBackend::new();
        let ctx = FileContext::default();
        rt.block_on(async {
            for i in (m..FILES).step_by(GREP_MOUNTS) {
                mount
                    .write(&ctx, &p(&format!("/file_{i:04}.rs")), &content(i))
                    .await
                    .expect("write");
            }
        });
        builder = builder.mount(format!("/p{m}"), Arc::new(mount));
    }
    (single, builder.build().expect("a composite"))
}

fn grep_bench(bencher: Bencher, through_composite: bool, query: GrepQuery) {
    let rt = runtime();
    let (single, composite) = grep_setup(&rt);
    let backend: &dyn Backend = if through_composite {
        &composite
    } else {
        &single
    };
    let ctx = FileContext::default();
    let root = VPath::root();
    bencher.bench_local(|| {
        rt.block_on(async {
            divan::black_box(backend.grep(&ctx, &query, &root, 100).await.expect("grep"));
        })
    });
}

#[divan::bench]
fn grep_common_single(bencher: Bencher) {
    grep_bench(bencher, false, GrepQuery::fixed("common"));
}

#[divan::bench]
fn grep_common_4_mounts(bencher: Bencher) {
    grep_bench(bencher, true, GrepQuery::fixed("common"));
}

#[divan::bench]
fn grep_rare_single(bencher: Bencher) {
    grep_bench(bencher, false, GrepQuery::fixed("rare_word"));
}

#[divan::bench]
fn grep_rare_4_mounts(bencher: Bencher) {
    grep_bench(bencher, true, GrepQuery::fixed("rare_word"));
}
