//! What glob, ls and grep ask of the engine, through a byte-counting proxy in front of its socket: glob names only, never content; ls stats only the entries it returns; grep reads only files that hold the pattern.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use burrow_backend::{Backend, FileContext, GrepQuery, Sandbox, VPath};
use burrow_docker::{Docker, DockerSandbox};
use burrow_testkit::{Part, require};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, UnixStream};

use super::support::{self, IMAGE, Removal};

/// The size of the file whose content glob must not fetch.
const BIG: u64 = 8 << 20;

/// Copies `from` to `to`, adding every byte to `count`.
async fn pipe(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    count: Arc<AtomicU64>,
) {
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                count.fetch_add(n as u64, Ordering::SeqCst);
                if to.write_all(&buf[..n]).await.is_err() {
                    break;
                }
            }
        }
    }
    let _ = to.shutdown().await;
}

/// A TCP proxy to the engine's unix socket; returns its address and the count of bytes the engine sent.
async fn counting_proxy() -> (String, Arc<AtomicU64>) {
    let socket = std::env::var("DOCKER_HOST")
        .ok()
        .and_then(|h| h.strip_prefix("unix://").map(str::to_owned))
        .unwrap_or_else(|| "/var/run/docker.sock".to_owned());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = format!("http://{}", listener.local_addr().unwrap());
    let from_engine = Arc::new(AtomicU64::new(0));
    let count = from_engine.clone();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let Ok(engine) = UnixStream::connect(&socket).await else {
                continue;
            };
            let (client_read, client_write) = client.into_split();
            let (engine_read, engine_write) = engine.into_split();
            tokio::spawn(pipe(client_read, engine_write, Arc::new(AtomicU64::new(0))));
            tokio::spawn(pipe(engine_read, client_write, count.clone()));
        }
    });
    (addr, from_engine)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn glob_lists_names_without_downloading_content() {
    require(Part::Docker);
    let (addr, from_engine) = counting_proxy().await;
    let docker = Docker::connect_with_http(&addr, 60, bollard::API_DEFAULT_VERSION).unwrap();
    let docker = burrow_docker::negotiate(docker, &support::options("traffic-glob"))
        .await
        .unwrap();
    let sandbox = DockerSandbox::start_on(docker, IMAGE, support::options("traffic-glob"))
        .await
        .unwrap();
    let _removal = Removal(sandbox.id().to_owned());
    let cx = FileContext::default();
    let made = sandbox
        .execute(
            &cx,
            "mkdir -p d && dd if=/dev/urandom of=d/big.bin bs=1048576 count=8 2>/dev/null && echo hi > d/small.txt && ln -s big.bin d/link.bin",
            None,
        )
        .await
        .unwrap();
    assert_eq!(made.exit_code, Some(0), "{}", made.output);

    let before = from_engine.load(Ordering::SeqCst);
    let found = sandbox
        .glob(&cx, "**/*", &VPath::root(), 100)
        .await
        .unwrap();
    let sent = from_engine.load(Ordering::SeqCst) - before;

    let files: Vec<(&str, Option<u64>)> = found
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.size))
        .collect();
    assert_eq!(
        files,
        [
            ("/d/big.bin", Some(BIG)),
            ("/d/link.bin", Some(BIG)),
            ("/d/small.txt", Some(3)),
        ]
    );
    assert!(!found.truncated);
    assert!(
        sent < BIG / 8,
        "glob received {sent} bytes from the engine for a tree of {BIG} bytes of content"
    );
}

/// How many links the big directory of `ls_stats_only_the_entries_it_returns` holds.
const LINKS: usize = 300;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ls_stats_only_the_entries_it_returns() {
    require(Part::Docker);
    let (addr, from_engine) = counting_proxy().await;
    let docker = Docker::connect_with_http(&addr, 60, bollard::API_DEFAULT_VERSION).unwrap();
    let docker = burrow_docker::negotiate(docker, &support::options("traffic-ls"))
        .await
        .unwrap();
    let sandbox = DockerSandbox::start_on(docker, IMAGE, support::options("traffic-ls"))
        .await
        .unwrap();
    let _removal = Removal(sandbox.id().to_owned());
    let cx = FileContext::default();
    let script = format!(
        "echo hi > t.txt && mkdir few many && ln -s ../t.txt few/l000 && ln -s ../t.txt few/l001 \
         && i=0 && while [ $i -lt {LINKS} ]; do ln -s ../t.txt many/l$(printf %03d $i); i=$((i+1)); done"
    );
    let made = sandbox.execute(&cx, &script, None).await.unwrap();
    assert_eq!(made.exit_code, Some(0), "{}", made.output);

    let mut sent = Vec::new();
    for dir in ["/few", "/many"] {
        let before = from_engine.load(Ordering::SeqCst);
        let listed = sandbox
            .ls(&cx, &VPath::parse(dir).unwrap(), 1)
            .await
            .unwrap();
        sent.push(from_engine.load(Ordering::SeqCst) - before);
        let entries: Vec<(&str, bool, Option<u64>)> = listed
            .entries
            .iter()
            .map(|e| (e.path.as_str(), e.is_dir, e.size))
            .collect();
        assert_eq!(entries, [(format!("{dir}/l000").as_str(), false, Some(3))]);
        assert!(listed.truncated, "{dir} holds more than one entry");
    }
    // Following a link costs two stats (some hundred bytes each); listing
    // {LINKS} names costs a few bytes each. Far less than a stat per link:
    let (few, many) = (sent[0], sent[1]);
    assert!(
        many < few + (LINKS as u64) * 100,
        "ls with limit 1 received {many} bytes for {LINKS} links, {few} bytes for 2: it followed links it did not return"
    );
}

/// Files of 64 KiB beneath the grep test's folder, of which three hold the word.
const HAYSTACKS: usize = 40;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grep_reads_only_the_files_that_hold_the_pattern() {
    require(Part::Docker);
    let (addr, from_engine) = counting_proxy().await;
    let docker = Docker::connect_with_http(&addr, 60, bollard::API_DEFAULT_VERSION).unwrap();
    let docker = burrow_docker::negotiate(docker, &support::options("traffic-grep"))
        .await
        .unwrap();
    let sandbox = DockerSandbox::start_on(docker, IMAGE, support::options("traffic-grep"))
        .await
        .unwrap();
    let _removal = Removal(sandbox.id().to_owned());
    let cx = FileContext::default();
    // 64 KiB of "hay" lines per file; the word in files 07, 20 and 33.
    let script = format!(
        "mkdir -p hay/sub && i=0 && while [ $i -lt 16384 ]; do echo hay; i=$((i+1)); done > hay.txt \
         && i=0 && while [ $i -lt {HAYSTACKS} ]; do n=$(printf %02d $i); cp hay.txt hay/sub/f$n.txt; \
         case $n in 07|20|33) echo 'a zyzzogeton here' >> hay/sub/f$n.txt ;; esac; i=$((i+1)); done \
         && rm hay.txt"
    );
    let made = sandbox.execute(&cx, &script, None).await.unwrap();
    assert_eq!(made.exit_code, Some(0), "{}", made.output);

    let before = from_engine.load(Ordering::SeqCst);
    let found = sandbox
        .grep(
            &cx,
            &GrepQuery::regex("zyzz(o|a)geton"),
            &VPath::parse("/hay").unwrap(),
            100,
        )
        .await
        .unwrap();
    let sent = from_engine.load(Ordering::SeqCst) - before;
    let hits: Vec<(&str, u64)> = found
        .matches
        .iter()
        .map(|m| (m.path.as_str(), m.line_number))
        .collect();
    assert_eq!(
        hits,
        [
            ("/hay/sub/f07.txt", 16385),
            ("/hay/sub/f20.txt", 16385),
            ("/hay/sub/f33.txt", 16385)
        ]
    );
    assert!(!found.truncated);
    // The three files that hold it are read (3 x 64 KiB); the subtree is
    // {HAYSTACKS} x 64 KiB, which an archive of it would send whole.
    let subtree = (HAYSTACKS as u64) * (64 << 10);
    assert!(
        sent < subtree / 4,
        "grep received {sent} bytes from the engine for 3 matching files of 64 KiB in a {subtree}-byte subtree"
    );
    // A pattern with no small set of required literals is answered by the
    // archive of the subtree: the same matches, every byte sent.
    let before = from_engine.load(Ordering::SeqCst);
    let walked = sandbox
        .grep(
            &cx,
            &GrepQuery::regex("[a-z]+zogeton"),
            &VPath::parse("/hay").unwrap(),
            100,
        )
        .await
        .unwrap();
    let archived = from_engine.load(Ordering::SeqCst) - before;
    assert_eq!(walked, found);
    assert!(
        archived > subtree,
        "the archive walk received {archived} bytes"
    );
    println!(
        "grep over {HAYSTACKS} files of 64 KiB, 3 matching: {sent} bytes from the engine (archive walk: {archived})"
    );
}
