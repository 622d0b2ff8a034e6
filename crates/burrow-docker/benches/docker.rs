//! Benchmarks of DockerSandbox against a real engine: start to first command, small writes and reads through the archive API, and an `execute("true")` round trip beside `docker exec` from the docker CLI.
//!
//! Needs the `burrow-test-busybox:latest` image (`cargo xtask setup`). Run
//! with `cargo bench -p burrow-docker`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::OnceLock;

use burrow_backend::{Backend, FileContext, Sandbox, VPath};
use burrow_docker::{DockerOptions, DockerSandbox};

const IMAGE: &str = "burrow-test-busybox:latest";

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a tokio runtime")
    })
}

fn options() -> DockerOptions {
    DockerOptions::default().with_label("burrow.bench", "1")
}

/// The sandbox the per-operation benchmarks share; `main` removes it at the end.
static SHARED: OnceLock<DockerSandbox> = OnceLock::new();

fn sandbox() -> &'static DockerSandbox {
    SHARED.get_or_init(|| {
        runtime()
            .block_on(DockerSandbox::start_with(IMAGE, options()))
            .expect("start the benchmark sandbox (run `cargo xtask setup` for its image)")
    })
}

/// A sandbox that is closed when dropped (outside the timed region: divan drops outputs afterwards).
struct Started(DockerSandbox);

impl Drop for Started {
    fn drop(&mut self) {
        let _ = runtime().block_on(self.0.close());
    }
}

fn main() {
    divan::main();
    if let Some(sandbox) = SHARED.get() {
        let _ = runtime().block_on(sandbox.close());
    }
}

/// `DockerSandbox::start` (create, start, make the work dir) then `execute("true")`.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn start_to_first_command() -> Started {
    runtime().block_on(async {
        let sandbox = DockerSandbox::start_with(IMAGE, options())
            .await
            .expect("start");
        let r = sandbox
            .execute(&FileContext::default(), "true", None)
            .await
            .expect("execute");
        assert_eq!(r.exit_code, Some(0));
        Started(sandbox)
    })
}

/// One `execute("true")` round trip: create, start and attach an exec, then its exit code.
#[divan::bench(sample_count = 100, sample_size = 1)]
fn execute_true(bencher: divan::Bencher) {
    let sandbox = sandbox();
    let ctx = FileContext::default();
    bencher.bench_local(|| {
        runtime().block_on(async {
            let r = sandbox.execute(&ctx, "true", None).await.expect("execute");
            assert_eq!(r.exit_code, Some(0));
        })
    });
}

/// The reference: `docker exec CID true` from the docker CLI (a process per call).
#[divan::bench(sample_count = 100, sample_size = 1)]
fn docker_cli_exec_true(bencher: divan::Bencher) {
    let id = sandbox().id().to_owned();
    bencher.bench_local(|| {
        let status = std::process::Command::new("docker")
            .args(["exec", &id, "true"])
            .status()
            .expect("docker exec");
        assert!(status.success());
    });
}

/// 1,000 writes of a small file (one per sample) through the archive API.
#[divan::bench(sample_count = 1000, sample_size = 1)]
fn write_small_file(bencher: divan::Bencher) {
    let sandbox = sandbox();
    let ctx = FileContext::default();
    let mut n = 0u32;
    bencher.bench_local(|| {
        n += 1;
        let path = VPath::parse(&format!("/bench/w/{}.txt", n % 1000)).expect("path");
        runtime()
            .block_on(sandbox.write(&ctx, &path, "a small file\nof two lines\n"))
            .expect("write");
    });
}

/// 1,000 reads of a small file (one per sample) through the archive API.
#[divan::bench(sample_count = 1000, sample_size = 1)]
fn read_small_file(bencher: divan::Bencher) {
    let sandbox = sandbox();
    let ctx = FileContext::default();
    let paths: Vec<VPath> = (0..50)
        .map(|i| VPath::parse(&format!("/bench/r/{i}.txt")).expect("path"))
        .collect();
    for path in &paths {
        runtime()
            .block_on(sandbox.write(&ctx, path, "a small file\nof two lines\n"))
            .expect("write");
    }
    let mut n = 0usize;
    bencher.bench_local(|| {
        n += 1;
        let window = runtime()
            .block_on(sandbox.read(&ctx, &paths[n % paths.len()], 0, 100))
            .expect("read");
        assert_eq!(window.total_lines, 2);
    });
}
