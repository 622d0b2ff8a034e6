//! ObjectStoreBackend benchmarks: 1,000 writes, reads and edits, a glob and a grep, beside raw object_store put/get of the same objects (the limit).
//!
//! Run with `cargo bench -p burrow-object-store`. The divan table times the
//! InMemory store. After it, the same workload runs on the local S3 server
//! when `BURROW_S3_ENDPOINT` is set (`cargo xtask setup` starts one and
//! prints it), timed per operation and compared with raw `put`/`get` of the
//! same keys: the target is within 1.3x of raw for writes and reads.
//!
//! `write` replaces files this handle wrote (one conditional PUT each);
//! `create` writes new files in a fresh directory, which first checks that no
//! directory stands at the path and that no ancestor is a file.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use burrow_backend::{Backend, FileContext, GrepQuery, VPath};
use burrow_object_store::object_store::aws::AmazonS3Builder;
use burrow_object_store::object_store::memory::InMemory;
use burrow_object_store::object_store::path::Path;
use burrow_object_store::object_store::{ObjectStoreExt, PutPayload};
use burrow_object_store::{ObjectStoreBackend, ObjectStoreOptions};
use tokio::runtime::Runtime;

const OPS: usize = 1_000;

fn main() {
    divan::main();
    compare_on_s3();
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn ctx() -> FileContext {
    FileContext::for_tenant("bench")
}

/// The i-th file: ~1 KiB of text, one line of which holds the edit token.
fn content(i: usize) -> String {
    let mut text = format!("token-0 file {i}\n");
    for line in 0..20 {
        text.push_str(&format!(
            "    let value_{line:02} = compute(input, {i:05}); // filler\n"
        ));
    }
    text
}

fn path(i: usize) -> VPath {
    VPath::parse(&format!("/src/m{:02}/f{i:04}.rs", i % 10)).unwrap()
}

/// The raw key of the same object, as the backend lays it out.
fn raw_key(backend: &ObjectStoreBackend, i: usize) -> Path {
    let root = &backend.options().root;
    let key = format!("bench/src/m{:02}/f{i:04}.rs", i % 10);
    Path::parse(if root.is_empty() {
        key
    } else {
        format!("{root}/{key}")
    })
    .unwrap()
}

/// A backend holding the 1,000 files.
fn filled(rt: &Runtime, backend: ObjectStoreBackend) -> ObjectStoreBackend {
    rt.block_on(async {
        for i in 0..OPS {
            backend.write(&ctx(), &path(i), &content(i)).await.unwrap();
        }
    });
    backend
}

// One workload, used by divan (InMemory) and by the S3 comparison.

async fn raw_puts(backend: &ObjectStoreBackend) {
    let store = backend.store();
    for i in 0..OPS {
        store
            .put(&raw_key(backend, i), PutPayload::from(content(i)))
            .await
            .unwrap();
    }
}

async fn raw_gets(backend: &ObjectStoreBackend) {
    let store = backend.store();
    for i in 0..OPS {
        let body = store
            .get(&raw_key(backend, i))
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        assert!(!body.is_empty());
    }
}

async fn writes(backend: &ObjectStoreBackend) {
    for i in 0..OPS {
        backend.write(&ctx(), &path(i), &content(i)).await.unwrap();
    }
}

/// Writes 1,000 new files beneath `/new{round}` (a fresh directory each round).
async fn creates(backend: &ObjectStoreBackend, round: usize) {
    for i in 0..OPS {
        let path = VPath::parse(&format!("/new{round}/m{:02}/f{i:04}.rs", i % 10)).unwrap();
        backend.write(&ctx(), &path, &content(i)).await.unwrap();
    }
}

async fn reads(backend: &ObjectStoreBackend) {
    for i in 0..OPS {
        let bytes = backend.read_bytes(&ctx(), &path(i)).await.unwrap();
        assert!(!bytes.is_empty());
    }
}

/// Edits every file's token from `token-{n}` to `token-{n+1}` (n counts the rounds).
async fn edits(backend: &ObjectStoreBackend, round: usize) {
    let (old, new) = (format!("token-{round} "), format!("token-{} ", round + 1));
    for i in 0..OPS {
        let r = backend
            .edit(&ctx(), &path(i), &old, &new, false)
            .await
            .unwrap();
        assert_eq!(r.occurrences, Some(1));
    }
}

async fn glob(backend: &ObjectStoreBackend) {
    let found = backend
        .glob(&ctx(), "**/*.rs", &VPath::parse("/src").unwrap(), 10_000)
        .await
        .unwrap();
    assert_eq!(found.files.len(), OPS);
}

async fn grep(backend: &ObjectStoreBackend) {
    let query = GrepQuery::regex(r"^token-\d+ file \d*7$");
    let found = backend
        .grep(&ctx(), &query, &VPath::parse("/src").unwrap(), 10_000)
        .await
        .unwrap();
    assert_eq!(found.matches.len(), OPS / 10);
}

// InMemory, timed by divan.

#[divan::bench_group(sample_count = 20, sample_size = 1)]
mod in_memory {
    use super::*;

    fn setup() -> (Runtime, ObjectStoreBackend) {
        let rt = runtime();
        let backend = filled(&rt, ObjectStoreBackend::new(Arc::new(InMemory::new())));
        (rt, backend)
    }

    #[divan::bench]
    fn raw_put_1000(b: divan::Bencher) {
        let (rt, backend) = setup();
        b.bench_local(|| rt.block_on(raw_puts(&backend)));
    }

    #[divan::bench]
    fn write_1000(b: divan::Bencher) {
        let (rt, backend) = setup();
        b.bench_local(|| rt.block_on(writes(&backend)));
    }

    #[divan::bench]
    fn create_1000(b: divan::Bencher) {
        let (rt, backend) = setup();
        let round = AtomicUsize::new(0);
        b.bench_local(|| rt.block_on(creates(&backend, round.fetch_add(1, Ordering::Relaxed))));
    }

    #[divan::bench]
    fn raw_get_1000(b: divan::Bencher) {
        let (rt, backend) = setup();
        b.bench_local(|| rt.block_on(raw_gets(&backend)));
    }

    #[divan::bench]
    fn read_1000(b: divan::Bencher) {
        let (rt, backend) = setup();
        b.bench_local(|| rt.block_on(reads(&backend)));
    }

    #[divan::bench]
    fn edit_1000(b: divan::Bencher) {
        let (rt, backend) = setup();
        let round = AtomicUsize::new(0);
        b.bench_local(|| rt.block_on(edits(&backend, round.fetch_add(1, Ordering::Relaxed))));
    }

    #[divan::bench]
    fn glob_1000_files(b: divan::Bencher) {
        let (rt, backend) = setup();
        b.bench_local(|| rt.block_on(glob(&backend)));
    }

    #[divan::bench]
    fn grep_1000_files(b: divan::Bencher) {
        let (rt, backend) = setup();
        b.bench_local(|| rt.block_on(grep(&backend)));
    }
}

// The local S3 server, timed by hand (each workload takes seconds there).

/// The median of `runs` timings of `f`.
fn median<F: Future<Output = ()>>(
    rt: &Runtime,
    runs: usize,
    mut f: impl FnMut(usize) -> F,
) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|run| {
            let start = Instant::now();
            rt.block_on(f(run));
            start.elapsed()
        })
        .collect();
    times.sort();
    times[runs / 2]
}

fn compare_on_s3() {
    let Some(endpoint) = std::env::var("BURROW_S3_ENDPOINT")
        .ok()
        .filter(|e| !e.is_empty())
    else {
        println!(
            "note: BURROW_S3_ENDPOINT is not set; skipped the S3 comparison (cargo xtask setup starts a local server and prints it)."
        );
        return;
    };
    let rt = runtime();
    let builder = AmazonS3Builder::new()
        .with_endpoint(&endpoint)
        .with_allow_http(true)
        .with_region("us-east-1")
        .with_access_key_id("burrow-bench")
        .with_secret_access_key("burrow-bench");
    // A fresh bucket: the test server lists by scanning a whole bucket.
    let bucket = format!("burrow-bench-{}", std::process::id());
    create_bucket(&endpoint, &bucket);
    let url = format!("s3://{bucket}/bench");
    let backend =
        ObjectStoreBackend::from_s3_builder(builder, &url, ObjectStoreOptions::default()).unwrap();
    let backend = filled(&rt, backend);
    let runs = 3;
    let per_op = |d: Duration| d / OPS as u32;
    let raw_put = median(&rt, runs, |_| raw_puts(&backend));
    let write = median(&rt, runs, |_| writes(&backend));
    let create = median(&rt, runs, |run| creates(&backend, run));
    let raw_get = median(&rt, runs, |_| raw_gets(&backend));
    let read = median(&rt, runs, |_| reads(&backend));
    let edit = median(&rt, runs, |run| edits(&backend, run));
    let globbed = median(&rt, runs, |_| glob(&backend));
    let grepped = median(&rt, runs, |_| grep(&backend));
    println!("S3 server at {endpoint}, {OPS} operations each, median of {runs} runs:");
    println!("  raw put   {:>10.2?} per op", per_op(raw_put));
    println!(
        "  write     {:>10.2?} per op  ({:.2}x raw put)",
        per_op(write),
        ratio(write, raw_put)
    );
    println!(
        "  create    {:>10.2?} per op  ({:.2}x raw put)",
        per_op(create),
        ratio(create, raw_put)
    );
    println!("  raw get   {:>10.2?} per op", per_op(raw_get));
    println!(
        "  read      {:>10.2?} per op  ({:.2}x raw get)",
        per_op(read),
        ratio(read, raw_get)
    );
    println!(
        "  edit      {:>10.2?} per op  ({:.2}x raw get + put)",
        per_op(edit),
        ratio(edit, raw_get + raw_put)
    );
    println!("  glob      {globbed:>10.2?} for {OPS} files");
    println!("  grep      {grepped:>10.2?} for {OPS} files");
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64()
}

/// Creates the bench bucket with an unsigned `PUT /bucket` (enough for the local test server).
fn create_bucket(endpoint: &str, bucket: &str) {
    use std::io::{Read, Write};
    let authority = endpoint.trim_start_matches("http://").trim_end_matches('/');
    let mut stream = std::net::TcpStream::connect(authority).unwrap();
    write!(stream, "PUT /{bucket} HTTP/1.1\r\nHost: {authority}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(
        answer.starts_with("HTTP/1.1 200") || answer.starts_with("HTTP/1.1 409"),
        "{answer}"
    );
}
