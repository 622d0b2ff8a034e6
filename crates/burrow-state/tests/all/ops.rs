//! StateBackend's own choices: one workspace for every tenant, per-store lock keys, limits, atomic edits.

use std::sync::Arc;

use burrow_backend::{Backend, ErrorKind, FileContext, GrepQuery, Limits, VPath};
use burrow_state::StateBackend;

fn p(s: &str) -> VPath {
    VPath::parse(s).unwrap()
}

#[tokio::test]
async fn tenants_share_one_workspace_and_one_lock_key_per_path() {
    let b = StateBackend::new();
    let (alice, bob) = (
        FileContext::for_tenant("alice"),
        FileContext::for_tenant("bob"),
    );
    b.write(&alice, &p("/notes.md"), "hello\n").await.unwrap();
    let seen = b.read(&bob, &p("/notes.md"), 0, 10).await.unwrap();
    assert_eq!(seen.lines, ["hello"]);
    assert!(!b.capabilities().tenants);

    assert_eq!(
        b.locks(&alice, &p("/notes.md")),
        b.locks(&bob, &p("/notes.md"))
    );
    assert_ne!(
        b.locks(&alice, &p("/notes.md")),
        b.locks(&alice, &p("/other.md"))
    );
    let other = StateBackend::new();
    assert_ne!(
        b.locks(&alice, &p("/notes.md")),
        other.locks(&alice, &p("/notes.md"))
    );
    assert!(b.lock_scope().starts_with("state"));
    // A clone is the same store: same files, same keys.
    let clone = b.clone();
    assert_eq!(clone.locks(&alice, &p("/x")), b.locks(&alice, &p("/x")));
    assert_eq!(
        clone.read_bytes(&bob, &p("/notes.md")).await.unwrap(),
        b"hello\n"
    );
}

#[tokio::test]
async fn capabilities_say_what_an_in_memory_store_offers() {
    let limits = Limits {
        max_file_size: 8,
        max_results: 2,
    };
    let caps = StateBackend::with_limits(limits).capabilities();
    assert!(!caps.exec && !caps.empty_dirs && !caps.tenants && !caps.effect_keys && !caps.symlinks);
    assert!(caps.modified_at && caps.conditional_writes);
    assert_eq!(caps.limits, limits);
    assert_eq!(StateBackend::new().limits(), Limits::default());
}

#[tokio::test]
async fn limits_bound_sizes_and_results() {
    let b = StateBackend::with_limits(Limits {
        max_file_size: 8,
        max_results: 2,
    });
    let ctx = FileContext::default();
    let err = b.write(&ctx, &p("/big"), "123456789").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TooLarge);
    assert_eq!(
        b.read(&ctx, &p("/big"), 0, 1).await.unwrap_err().kind(),
        ErrorKind::NotFound
    );

    b.write(&ctx, &p("/ok"), "abc").await.unwrap();
    let err = b
        .edit(&ctx, &p("/ok"), "b", "bbbbbbbb", false)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TooLarge);
    assert_eq!(b.read_bytes(&ctx, &p("/ok")).await.unwrap(), b"abc");

    for name in ["/a", "/b", "/c"] {
        b.write(&ctx, &p(name), "x\n").await.unwrap();
    }
    let listing = b.ls(&ctx, &p("/"), 100).await.unwrap();
    assert_eq!(listing.entries.len(), 2);
    assert!(listing.truncated);
    let globbed = b.glob(&ctx, "*", &p("/"), 100).await.unwrap();
    assert_eq!(globbed.files.len(), 2);
    assert!(globbed.truncated);
    let grepped = b
        .grep(&ctx, &GrepQuery::fixed("x"), &p("/"), 100)
        .await
        .unwrap();
    assert_eq!(grepped.matches.len(), 2);
    assert!(grepped.truncated);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_edits_of_one_file_lose_nothing() {
    let b = Arc::new(StateBackend::new());
    let ctx = FileContext::default();
    let text: String = (0..32).map(|i| format!("item {i}: todo\n")).collect();
    b.write(&ctx, &p("/list.txt"), &text).await.unwrap();
    let tasks: Vec<_> = (0..32)
        .map(|i| {
            let b = Arc::clone(&b);
            tokio::spawn(async move {
                let ctx = FileContext::default();
                b.edit(
                    &ctx,
                    &p("/list.txt"),
                    &format!("item {i}: todo"),
                    &format!("item {i}: done"),
                    false,
                )
                .await
            })
        })
        .collect();
    for task in tasks {
        assert_eq!(task.await.unwrap().unwrap().occurrences, Some(1));
    }
    let window = b.read(&ctx, &p("/list.txt"), 0, 100).await.unwrap();
    assert_eq!(window.total_lines, 32);
    assert!(
        window.lines.iter().all(|l| l.ends_with(": done")),
        "{:?}",
        window.lines
    );
}

#[tokio::test]
async fn grep_of_a_file_filters_on_its_name() {
    let b = StateBackend::new();
    let ctx = FileContext::default();
    b.write(&ctx, &p("/src/lib.rs"), "pub fn a() {}\nfn b() {}\n")
        .await
        .unwrap();
    let q = GrepQuery::regex(r"^pub fn").with_include("*.rs");
    let hits = b.grep(&ctx, &q, &p("/src/lib.rs"), 10).await.unwrap();
    assert_eq!(hits.matches.len(), 1);
    assert_eq!(
        (hits.matches[0].path.as_str(), hits.matches[0].line_number),
        ("/src/lib.rs", 1)
    );
    let anchored = GrepQuery::regex("fn").with_include("/lib.rs");
    assert_eq!(
        b.grep(&ctx, &anchored, &p("/src/lib.rs"), 10)
            .await
            .unwrap()
            .matches
            .len(),
        2
    );
    let other = GrepQuery::regex("fn").with_include("*.py");
    assert!(
        b.grep(&ctx, &other, &p("/src/lib.rs"), 10)
            .await
            .unwrap()
            .matches
            .is_empty()
    );
    let missing = b
        .grep(&ctx, &GrepQuery::regex("fn"), &p("/nope"), 10)
        .await
        .unwrap();
    assert!(missing.matches.is_empty() && !missing.truncated);
}

#[tokio::test]
async fn reads_refuse_directories_and_missing_files() {
    let b = StateBackend::new();
    let ctx = FileContext::default();
    b.write(&ctx, &p("/d/f"), "").await.unwrap();
    for (path, kind) in [
        ("/d", ErrorKind::IsADirectory),
        ("/", ErrorKind::IsADirectory),
        ("/nope", ErrorKind::NotFound),
    ] {
        assert_eq!(
            b.read(&ctx, &p(path), 0, 1).await.unwrap_err().kind(),
            kind,
            "{path}"
        );
        assert_eq!(
            b.read_bytes(&ctx, &p(path)).await.unwrap_err().kind(),
            kind,
            "{path}"
        );
        assert_eq!(
            b.edit(&ctx, &p(path), "a", "b", false)
                .await
                .unwrap_err()
                .kind(),
            kind,
            "{path}"
        );
    }
    let empty = b.read(&ctx, &p("/d/f"), 5, 1).await.unwrap();
    assert_eq!((empty.total_lines, empty.lines.len()), (0, 0));
    assert_eq!(
        b.glob(&ctx, "*", &p("/d/f"), 1).await.unwrap_err().kind(),
        ErrorKind::NotADirectory
    );
    assert!(
        b.glob(&ctx, "*", &p("/nope"), 1)
            .await
            .unwrap()
            .files
            .is_empty()
    );
}

#[tokio::test]
async fn path_refusals_keep_the_path_as_a_field() {
    let b = StateBackend::new();
    let ctx = FileContext::default();
    b.write(&ctx, &p("/dir/a.txt"), "a\n").await.unwrap();
    let not_empty = b.delete(&ctx, &p("/dir")).await.unwrap_err();
    assert_eq!(not_empty.kind(), ErrorKind::DirectoryNotEmpty);
    assert_eq!(not_empty.path(), Some(&p("/dir")));
    // Beneath a file: the refusal is about the file in the way.
    let beneath = b.write(&ctx, &p("/dir/a.txt/b"), "x").await.unwrap_err();
    assert_eq!(beneath.kind(), ErrorKind::NotADirectory);
    assert_eq!(beneath.path(), Some(&p("/dir/a.txt")));
    // A composite mounting the store at /m re-prefixes it in the message.
    let moved = beneath.map_path(|inner| inner.under_prefix(&p("/m")));
    assert!(
        moved.message().starts_with("/m/dir/a.txt is a file"),
        "{}",
        moved.message()
    );
    let root = b.delete(&ctx, &p("/")).await.unwrap_err();
    assert_eq!(root.kind(), ErrorKind::InvalidPath);
    assert_eq!(
        root.message(),
        burrow_backend::Error::root_cannot_be_deleted().message()
    );
    assert_eq!(
        b.read(&ctx, &p("/dir/a.txt"), 0, 10).await.unwrap().lines,
        ["a"]
    );
}
