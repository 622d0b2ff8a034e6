//! Benchmark: the cost of routing, 1,000 reads through a composite with 8 mounts vs the same StateBackend directly, measured interleaved.
//!
//! Why not divan here: divan measures one variant after another, and on a
//! shared VM the machine's speed drifts by more than the 5 % being
//! measured between one variant and the next. So each round times the
//! same 1,000 reads three ways back to back (direct; through the composite
//! where the store is the last of 8 mounts, the routing worst case; through
//! a composite where it is the default beneath those 8 mounts), rotating
//! which goes first, and the figure is the median of the per-round ratios.
//! Files of 50 lines (the benchmarks' standard), and of 20 lines, where a
//! read costs less and the routing's share is larger.
//! Run with `cargo bench -p burrow-composite --bench routing`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Instant;

use burrow_backend::{Backend, FileContext, VPath};
use burrow_composite::CompositeBackend;
use burrow_state::StateBackend;
use tokio::runtime::Runtime;

const FILES: usize = 1_000;
const MOUNTS: usize = 8;
const ROUNDS: usize = 200;

fn p(s: &str) -> VPath {
    VPath::parse(s).expect("a valid path")
}

fn content(i: usize, lines: usize) -> String {
    (0..lines)
        .map(|line| format!("line {line} of file {i}: common words here\n"))
        .collect()
}

/// One way of reaching the store: the backend and the paths of its 1,000 files as that backend sees them.
struct Arm {
    name: &'static str,
    backend: Arc<dyn Backend>,
    paths: Vec<VPath>,
}

fn arms(rt: &Runtime, lines: usize) -> Vec<Arm> {
    let ctx = FileContext::default();
    let target = StateBackend::new();
    let files: Vec<VPath> = (0..FILES)
        .map(|i| p(&format!("/src/file_{i:04}.rs")))
        .collect();
    rt.block_on(async {
        for (i, path) in files.iter().enumerate() {
            target
                .write(&ctx, path, &content(i, lines))
                .await
                .expect("write");
        }
    });
    let mut mounted = CompositeBackend::builder(Arc::new(StateBackend::new()));
    let mut as_default = CompositeBackend::builder(Arc::new(target.clone()));
    for m in 0..MOUNTS {
        let other = StateBackend::new();
        rt.block_on(other.write(&ctx, &p("/one.txt"), "one\n"))
            .expect("write");
        let at_m: Arc<dyn Backend> = if m == MOUNTS - 1 {
            Arc::new(target.clone())
        } else {
            Arc::new(other.clone())
        };
        mounted = mounted.mount(format!("/m{m}"), at_m);
        as_default = as_default.mount(format!("/m{m}"), Arc::new(other));
    }
    let last = format!("/m{}", MOUNTS - 1);
    vec![
        Arm {
            name: "direct",
            backend: Arc::new(target),
            paths: files.clone(),
        },
        Arm {
            name: "last of 8 mounts",
            backend: Arc::new(mounted.build().expect("a composite")),
            paths: files.iter().map(|f| p(&format!("{last}{f}"))).collect(),
        },
        Arm {
            name: "default beneath 8 mounts",
            backend: Arc::new(as_default.build().expect("a composite")),
            paths: files,
        },
    ]
}

/// Nanoseconds for one pass of 1,000 reads through `arm`.
fn pass(rt: &Runtime, arm: &Arm) -> f64 {
    let ctx = FileContext::default();
    let start = Instant::now();
    rt.block_on(async {
        for path in &arm.paths {
            std::hint::black_box(arm.backend.read(&ctx, path, 0, 100).await.expect("read"));
        }
    });
    start.elapsed().as_nanos() as f64
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn measure(rt: &Runtime, lines: usize) {
    let arms = arms(rt, lines);
    for arm in &arms {
        pass(rt, arm); // warm-up
    }
    let mut times: Vec<Vec<f64>> = vec![Vec::with_capacity(ROUNDS); arms.len()];
    for round in 0..ROUNDS {
        for k in 0..arms.len() {
            let a = (round + k) % arms.len();
            times[a].push(pass(rt, &arms[a]));
        }
    }
    println!("files of {lines} lines, {ROUNDS} rounds of 1,000 reads each way:");
    for (a, arm) in arms.iter().enumerate() {
        let ratio = median(
            times[a]
                .iter()
                .zip(&times[0])
                .map(|(t, direct)| t / direct)
                .collect(),
        );
        println!(
            "  {:<26} median {:>8.1} µs   fastest {:>8.1} µs   vs direct {:+.1} %",
            arm.name,
            median(times[a].clone()) / 1e3,
            times[a].iter().copied().fold(f64::INFINITY, f64::min) / 1e3,
            (ratio - 1.0) * 100.0
        );
    }
}

fn main() {
    // `cargo test --benches` runs bench targets with no "--bench": do nothing then.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a tokio runtime");
    for lines in [50, 20] {
        measure(&rt, lines);
    }
}
