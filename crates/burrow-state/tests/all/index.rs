//! The directory index: implicit directories appear and vanish with their files, listings stay sorted.

use burrow_backend::{Backend, ErrorKind, FileContext, VPath};
use burrow_state::StateBackend;

fn p(s: &str) -> VPath {
    VPath::parse(s).unwrap()
}

async fn names(b: &StateBackend, dir: &str) -> Vec<(String, bool)> {
    let listing = b
        .ls(&FileContext::default(), &p(dir), usize::MAX)
        .await
        .unwrap();
    listing
        .entries
        .into_iter()
        .map(|e| (e.path, e.is_dir))
        .collect()
}

#[tokio::test]
async fn implicit_directories_appear_with_first_file_and_vanish_with_last() {
    let b = StateBackend::new();
    let ctx = FileContext::default();
    assert!(names(&b, "/").await.is_empty());
    assert_eq!(
        b.ls(&ctx, &p("/a"), 10).await.unwrap_err().kind(),
        ErrorKind::NotFound
    );

    b.write(&ctx, &p("/a/b/c.txt"), "one").await.unwrap();
    b.write(&ctx, &p("/a/b/d.txt"), "two").await.unwrap();
    assert_eq!(names(&b, "/").await, [("/a".to_owned(), true)]);
    assert_eq!(names(&b, "/a").await, [("/a/b".to_owned(), true)]);
    assert_eq!(
        names(&b, "/a/b").await,
        [
            ("/a/b/c.txt".to_owned(), false),
            ("/a/b/d.txt".to_owned(), false)
        ]
    );

    b.delete(&ctx, &p("/a/b/c.txt")).await.unwrap();
    assert_eq!(names(&b, "/a").await, [("/a/b".to_owned(), true)]);
    b.delete(&ctx, &p("/a/b/d.txt")).await.unwrap();
    assert!(names(&b, "/").await.is_empty());
    for gone in ["/a", "/a/b"] {
        assert_eq!(
            b.ls(&ctx, &p(gone), 10).await.unwrap_err().kind(),
            ErrorKind::NotFound,
            "{gone}"
        );
    }
    // The names are free again, for a file as well as for a directory.
    b.write(&ctx, &p("/a"), "now a file").await.unwrap();
    assert_eq!(names(&b, "/").await, [("/a".to_owned(), false)]);
    assert_eq!(b.file_count(), 1);
}

#[tokio::test]
async fn a_directory_with_files_cannot_be_deleted_and_keeps_its_siblings() {
    let b = StateBackend::new();
    let ctx = FileContext::default();
    b.write(&ctx, &p("/d/x/1.txt"), "1").await.unwrap();
    b.write(&ctx, &p("/d/y.txt"), "y").await.unwrap();
    let err = b.delete(&ctx, &p("/d/x")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DirectoryNotEmpty);
    assert_eq!(
        b.delete(&ctx, &p("/")).await.unwrap_err().kind(),
        ErrorKind::InvalidPath
    );
    assert_eq!(
        b.delete(&ctx, &p("/d/zz")).await.unwrap_err().kind(),
        ErrorKind::NotFound
    );
    b.delete(&ctx, &p("/d/x/1.txt")).await.unwrap();
    assert_eq!(names(&b, "/d").await, [("/d/y.txt".to_owned(), false)]);
}

#[tokio::test]
async fn ls_of_a_directory_with_many_siblings_is_sorted_and_bounded() {
    let b = StateBackend::new();
    let ctx = FileContext::default();
    // Written in reverse order, with a nested directory and a look-alike outside.
    for i in (0..3000).rev() {
        b.write(&ctx, &p(&format!("/many/f{i:05}.txt")), "x")
            .await
            .unwrap();
    }
    b.write(&ctx, &p("/many/sub/deep.txt"), "x").await.unwrap();
    b.write(&ctx, &p("/many-not/x.txt"), "x").await.unwrap();

    let all = b.ls(&ctx, &p("/many"), usize::MAX).await.unwrap();
    assert!(!all.truncated);
    assert_eq!(all.entries.len(), 3001);
    let paths: Vec<&str> = all.entries.iter().map(|e| e.path.as_str()).collect();
    let mut sorted = paths.clone();
    sorted.sort_unstable();
    assert_eq!(paths, sorted);
    assert_eq!(paths[0], "/many/f00000.txt");
    assert_eq!(paths[3000], "/many/sub");
    assert!(all.entries[3000].is_dir && all.entries[3000].size.is_none());
    assert_eq!(all.entries[0].size, Some(1));
    assert!(all.entries[0].modified_at.is_some());

    let page = b.ls(&ctx, &p("/many"), 10).await.unwrap();
    assert!(page.truncated);
    assert_eq!(page.entries.len(), 10);
    assert_eq!(page.entries[9].path, "/many/f00009.txt");

    let exact = b.ls(&ctx, &p("/many"), 3001).await.unwrap();
    assert!(!exact.truncated);
    assert_eq!(
        names(&b, "/").await,
        [("/many".to_owned(), true), ("/many-not".to_owned(), true)]
    );
}

#[tokio::test]
async fn glob_and_grep_scan_only_beneath_their_directory() {
    let b = StateBackend::new();
    let ctx = FileContext::default();
    for path in ["/a/x.rs", "/a/in/y.rs", "/a-b/z.rs", "/ab/w.rs", "/a.rs"] {
        b.write(&ctx, &p(path), "fn main() {}\n").await.unwrap();
    }
    let found = b.glob(&ctx, "*.rs", &p("/a"), 100).await.unwrap();
    let paths: Vec<&str> = found.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["/a/in/y.rs", "/a/x.rs"]);

    let all = b.glob(&ctx, "*.rs", &p("/"), 100).await.unwrap();
    let paths: Vec<&str> = all.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        paths,
        ["/a-b/z.rs", "/a.rs", "/a/in/y.rs", "/a/x.rs", "/ab/w.rs"]
    );

    let hits = b
        .grep(
            &ctx,
            &burrow_backend::GrepQuery::fixed("main"),
            &p("/a"),
            100,
        )
        .await
        .unwrap();
    let paths: Vec<&str> = hits.matches.iter().map(|m| m.path.as_str()).collect();
    assert_eq!(paths, ["/a/in/y.rs", "/a/x.rs"]);
}

#[tokio::test]
async fn a_file_blocks_paths_beneath_it_and_a_directory_blocks_a_file() {
    let b = StateBackend::new();
    let ctx = FileContext::default();
    b.write(&ctx, &p("/f"), "file").await.unwrap();
    b.write(&ctx, &p("/d/g"), "file").await.unwrap();
    let err = b.write(&ctx, &p("/f/x/y"), "no").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotADirectory);
    assert!(err.message().contains("/f "), "{}", err.message());
    assert_eq!(
        b.write(&ctx, &p("/d"), "no").await.unwrap_err().kind(),
        ErrorKind::IsADirectory
    );
    assert_eq!(
        b.write(&ctx, &p("/"), "no").await.unwrap_err().kind(),
        ErrorKind::IsADirectory
    );
    assert_eq!(
        b.ls(&ctx, &p("/f"), 10).await.unwrap_err().kind(),
        ErrorKind::NotADirectory
    );
    // Nothing changed.
    assert_eq!(b.file_count(), 2);
    assert_eq!(
        names(&b, "/").await,
        [("/d".to_owned(), true), ("/f".to_owned(), false)]
    );
}
