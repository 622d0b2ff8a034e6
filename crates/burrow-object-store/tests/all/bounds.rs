//! ls, glob and grep cost memory in proportion to their limit, not to the store: a generated store lists 300,000 objects lazily and out of key order (ls: one directory of 300,000, page by page), and a child process's peak memory is measured.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use burrow_backend::{Backend, FileContext, GrepQuery, VPath};
use burrow_object_store::ObjectStoreBackend;
use burrow_object_store::object_store::list::{
    PaginatedListOptions, PaginatedListResult, PaginatedListStore,
};
use burrow_object_store::object_store::memory::InMemory;
use burrow_object_store::object_store::path::Path;
use burrow_object_store::object_store::{
    CopyOptions, Error, GetOptions, GetResult, GetResultPayload, ListResult, MultipartUpload,
    ObjectMeta, ObjectStore, ObjectStoreExt, PutMultipartOptions, PutOptions, PutPayload,
    PutResult, Result,
};
use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;

/// The peak resident memory of this process (VmHWM), in bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .expect("VmHWM in /proc/self/status");
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .expect("a number of KiB");
    kib * 1024
}

/// How many objects the generated store holds.
const OBJECTS: usize = 300_000;

/// A read-only store of `OBJECTS` generated files `d{i % 100}/f{i}.txt`
/// ("needle {i}\n"), listed lazily in a scrambled order (not key order).
#[derive(Debug)]
struct Generated {
    /// An object's metadata to copy the timestamp from.
    template: ObjectMeta,
}

impl Generated {
    async fn new() -> Generated {
        let store = InMemory::new();
        let at = Path::from("x");
        store.put(&at, PutPayload::from("x")).await.unwrap();
        Generated {
            template: store.head(&at).await.unwrap(),
        }
    }
}

impl fmt::Display for Generated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Generated")
    }
}

fn meta(template: &ObjectMeta, i: usize) -> ObjectMeta {
    let mut m = template.clone();
    m.location = Path::from(format!("t/d{:02}/f{i:06}.txt", i % 100));
    m.size = format!("needle {i}\n").len() as u64;
    m
}

fn unsupported(what: &str) -> Error {
    Error::NotImplemented {
        operation: what.into(),
        implementer: "Generated".into(),
    }
}

#[async_trait]
impl ObjectStore for Generated {
    async fn put_opts(&self, _: &Path, _: PutPayload, _: PutOptions) -> Result<PutResult> {
        Err(unsupported("put"))
    }

    async fn put_multipart_opts(
        &self,
        _: &Path,
        _: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        Err(unsupported("put_multipart"))
    }

    async fn get_opts(&self, location: &Path, _: GetOptions) -> Result<GetResult> {
        let name = location.as_ref();
        let i: usize = name
            .rsplit('/')
            .next()
            .and_then(|f| f.strip_prefix('f'))
            .and_then(|f| f.strip_suffix(".txt"))
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| Error::NotFound {
                path: name.to_owned(),
                source: "no such object".into(),
            })?;
        let bytes = Bytes::from(format!("needle {i}\n"));
        let m = meta(&self.template, i);
        Ok(GetResult {
            range: 0..m.size,
            meta: m,
            attributes: Default::default(),
            payload: GetResultPayload::Stream(futures::stream::once(async { Ok(bytes) }).boxed()),
            extensions: Default::default(),
        })
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        locations.map(|_| Err(unsupported("delete"))).boxed()
    }

    fn list(&self, _: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        let template = self.template.clone();
        // 7919 is prime (and not a factor of 300,000), so i * 7919 mod 300,000 visits every object once, out of order.
        futures::stream::iter((0..OBJECTS).map(move |i| Ok(meta(&template, (i * 7919) % OBJECTS))))
            .boxed()
    }

    async fn list_with_delimiter(&self, _: Option<&Path>) -> Result<ListResult> {
        Err(unsupported("list_with_delimiter"))
    }

    async fn copy_opts(&self, _: &Path, _: &Path, _: CopyOptions) -> Result<()> {
        Err(unsupported("copy"))
    }
}

/// The flat directory `t/flat/` of the paged listing: `OBJECTS` files
/// `f{i}.txt`, pages of at most `max_keys`, scrambled within and across pages,
/// and one subdirectory `a-sub` (first by name) on the last page. Page tokens are page numbers.
#[async_trait]
impl PaginatedListStore for Generated {
    async fn list_paginated(
        &self,
        prefix: Option<&str>,
        opts: PaginatedListOptions,
    ) -> Result<PaginatedListResult> {
        assert_eq!(
            prefix,
            Some("t/flat/"),
            "ls of /flat lists the prefix t/flat/"
        );
        assert_eq!(
            opts.delimiter.as_deref(),
            Some("/"),
            "one level: a delimiter"
        );
        let size = opts.max_keys.unwrap_or(1000).clamp(1, 1000);
        let page: usize = opts.page_token.map_or(0, |t| t.parse().unwrap());
        let start = page * size;
        let end = (start + size).min(OBJECTS);
        let objects = (start..end)
            .map(|j| {
                let mut m = self.template.clone();
                let i = (j * 7919) % OBJECTS;
                m.location = Path::from(format!("t/flat/f{i:06}.txt"));
                m
            })
            .collect();
        let last = end == OBJECTS;
        Ok(PaginatedListResult {
            result: ListResult {
                common_prefixes: if last {
                    vec![Path::from("t/flat/a-sub")]
                } else {
                    Vec::new()
                },
                objects,
                extensions: Default::default(),
            },
            page_token: (!last).then(|| (page + 1).to_string()),
        })
    }
}

/// Far less than one entry per listed object would take (300,000 entries of well over 100 bytes).
const BOUND: u64 = 48 << 20;

#[test]
fn ls_glob_and_grep_hold_only_their_limit() {
    // In a child process of its own, so its peak memory is its alone.
    let exe = std::env::current_exe().expect("this test binary");
    let out = std::process::Command::new(exe)
        .args([
            "all::bounds::bounded_child",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .output()
        .expect("run the child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "the child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Run by `ls_glob_and_grep_hold_only_their_limit` in a child process.
#[tokio::test]
#[ignore = "runs as a child of ls_glob_and_grep_hold_only_their_limit, which measures its memory alone"]
async fn bounded_child() {
    let generated = Arc::new(Generated::new().await);
    let backend = ObjectStoreBackend::new(generated.clone()).with_paged_listing(generated);
    let ctx = FileContext::for_tenant("t");
    // The directory is listed a page at a time (the store refuses list_with_delimiter).
    let listed = backend
        .ls(&ctx, &VPath::parse("/flat").unwrap(), 3)
        .await
        .unwrap();
    assert!(listed.truncated);
    let names: Vec<(&str, bool)> = listed
        .entries
        .iter()
        .map(|e| (e.path.as_str(), e.is_dir))
        .collect();
    // The subdirectory came on the last of 300 pages, the files scrambled across them.
    assert_eq!(
        names,
        [
            ("/flat/a-sub", true),
            ("/flat/f000000.txt", false),
            ("/flat/f000001.txt", false)
        ]
    );
    let globbed = backend
        .glob(&ctx, "**/*.txt", &VPath::root(), 10)
        .await
        .unwrap();
    assert!(globbed.truncated);
    assert_eq!(globbed.files.len(), 10);
    assert_eq!(globbed.files[0].path, "/d00/f000000.txt");
    assert_eq!(globbed.files[1].path, "/d00/f000100.txt");
    let query = GrepQuery::regex("needle");
    let grepped = backend.grep(&ctx, &query, &VPath::root(), 5).await.unwrap();
    assert!(grepped.truncated);
    let paths: Vec<&str> = grepped.matches.iter().map(|m| m.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/d00/f000000.txt",
            "/d00/f000100.txt",
            "/d00/f000200.txt",
            "/d00/f000300.txt",
            "/d00/f000400.txt"
        ]
    );
    let peak = peak_rss();
    println!("peak resident memory: {peak} bytes");
    assert!(
        peak < BOUND,
        "ls, glob and grep over {OBJECTS} objects peaked at {peak} bytes"
    );
}
