//! CompositeBackend benchmarks: the cost of fanning grep out over 4 mounts.
//!
//! `grep_*` search the same 1,000 files held by one StateBackend or split
//! over 4 mounts, once for a common word (the limit stops the search early)
//! and once for a rare one (every file is searched). The cost of routing a
//! read is measured by `benches/routing.rs`, interleaved.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use burrow_backend::{Backend, FileContext, GrepQuery, VPath};
use burrow_composite::CompositeBackend;
use burrow_state::StateBackend;
use divan::Bencher;
use tokio::runtime::Runtime;

fn main() {
    divan::main();
}

const FILES: usize = 1_000;
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
