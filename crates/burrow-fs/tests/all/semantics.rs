//! What is particular to a real folder: special files, reserved temporary names, permissions, limits, ignore rules, concurrency.

use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;

use burrow_backend::{Backend, ErrorKind, GrepQuery};
use burrow_fs::{FsBackend, FsOptions, TEMP_PREFIX};

use super::support::{World, assert_refused, ctx, p};

fn mkfifo(path: &std::path::Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

#[tokio::test]
async fn a_fifo_is_refused_never_opened() {
    let w = World::new();
    w.put("a.txt", "hello\n");
    mkfifo(&w.host("pipe"));
    let b = &w.backend;
    // Opening a FIFO for reading would block forever: each of these returning proves it was not opened.
    let err = assert_refused(
        b.read(&ctx(), &p("/pipe"), 0, 10).await,
        ErrorKind::PermissionDenied,
    );
    assert!(err.message().contains("/pipe"));
    w.assert_no_host_path(&err);
    assert_refused(
        b.read_bytes(&ctx(), &p("/pipe")).await,
        ErrorKind::PermissionDenied,
    );
    assert_refused(
        b.edit(&ctx(), &p("/pipe"), "a", "b", false).await,
        ErrorKind::PermissionDenied,
    );
    assert_refused(
        b.write(&ctx(), &p("/pipe"), "x").await,
        ErrorKind::PermissionDenied,
    );
    let grep = b
        .grep(&ctx(), &GrepQuery::regex("."), &p("/"), 10)
        .await
        .unwrap();
    assert_eq!(grep.matches.len(), 1);
    assert!(
        b.grep(&ctx(), &GrepQuery::regex("."), &p("/pipe"), 10)
            .await
            .unwrap()
            .matches
            .is_empty()
    );
    let listing = b.ls(&ctx(), &p("/"), 10).await.unwrap();
    assert_eq!(listing.entries.len(), 1, "ls shows only the regular file");
    assert!(
        b.glob(&ctx(), "pipe", &p("/"), 10)
            .await
            .unwrap()
            .files
            .is_empty()
    );
    // A link to the FIFO is refused the same way.
    w.symlink("pipe", "pipe-link");
    assert_refused(
        b.read(&ctx(), &p("/pipe-link"), 0, 10).await,
        ErrorKind::PermissionDenied,
    );
    // Deleting unlinks it without opening it.
    b.delete(&ctx(), &p("/pipe")).await.unwrap();
    assert!(!w.host("pipe").exists());
}

#[tokio::test]
async fn names_starting_like_temporary_files_are_ordinary_names() {
    let w = World::new();
    let b = &w.backend;
    // A legal name is the user's, whatever its prefix: write, read, list,
    // glob, grep, edit and delete all work on it.
    let plain = format!("/{TEMP_PREFIX}x");
    let exact = format!("/d/{TEMP_PREFIX}0123456789abcdef");
    let nested = format!("/{TEMP_PREFIX}dir/inner.txt");
    for path in [&plain, &exact, &nested] {
        b.write(&ctx(), &p(path), "needle\n").await.unwrap();
        assert_eq!(b.read_bytes(&ctx(), &p(path)).await.unwrap(), b"needle\n");
    }
    let root: Vec<String> = b
        .ls(&ctx(), &p("/"), 10)
        .await
        .unwrap()
        .entries
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(
        root,
        [
            format!("{TEMP_PREFIX}dir"),
            format!("{TEMP_PREFIX}x"),
            "d".to_owned()
        ]
    );
    let globbed: Vec<String> = b
        .glob(&ctx(), &format!("{TEMP_PREFIX}*"), &p("/"), 10)
        .await
        .unwrap()
        .files
        .into_iter()
        .map(|f| f.path)
        .collect();
    assert_eq!(globbed, [plain.clone(), exact.clone()]);
    let grepped: Vec<String> = b
        .grep(&ctx(), &GrepQuery::fixed("needle"), &p("/"), 10)
        .await
        .unwrap()
        .matches
        .into_iter()
        .map(|m| m.path)
        .collect();
    assert_eq!(grepped, [nested.clone(), plain.clone(), exact.clone()]);
    b.edit(&ctx(), &p(&plain), "needle", "pin", false)
        .await
        .unwrap();
    assert_eq!(b.read_bytes(&ctx(), &p(&plain)).await.unwrap(), b"pin\n");
    b.delete(&ctx(), &p(&exact)).await.unwrap();
    assert!(!w.host(&exact[1..]).exists());
    // And the writes left no temporary file of their own behind.
    let mut names: Vec<String> = std::fs::read_dir(w.root())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            format!("{TEMP_PREFIX}dir"),
            format!("{TEMP_PREFIX}x"),
            "d".to_owned()
        ]
    );
}

#[tokio::test]
async fn writes_leave_no_temporary_files_and_fit_long_names() {
    let w = World::new();
    let b = &w.backend;
    let long = format!("/{}", "n".repeat(255));
    b.write(&ctx(), &p(&long), "first").await.unwrap();
    b.write(&ctx(), &p(&long), "second").await.unwrap();
    b.edit(&ctx(), &p(&long), "second", "third", false)
        .await
        .unwrap();
    assert_eq!(b.read_bytes(&ctx(), &p(&long)).await.unwrap(), b"third");
    let on_disk: Vec<_> = std::fs::read_dir(w.root())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(on_disk.len(), 1, "temporary files left behind: {on_disk:?}");
}

#[tokio::test]
async fn replacing_keeps_permissions() {
    let w = World::new();
    w.put("run.sh", "echo hi\n");
    std::fs::set_permissions(w.host("run.sh"), std::fs::Permissions::from_mode(0o751)).unwrap();
    let b = &w.backend;
    b.write(&ctx(), &p("/run.sh"), "echo hello\n")
        .await
        .unwrap();
    let mode = || {
        std::fs::metadata(w.host("run.sh"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode(), 0o751);
    b.edit(&ctx(), &p("/run.sh"), "hello", "there", false)
        .await
        .unwrap();
    assert_eq!(mode(), 0o751);
    assert_eq!(
        std::fs::read_to_string(w.host("run.sh")).unwrap(),
        "echo there\n"
    );
}

#[tokio::test]
async fn crlf_files_stay_crlf_on_disk() {
    let w = World::new();
    w.put("win.txt", "one\r\ntwo\r\nthree\r\n");
    let b = &w.backend;
    b.edit(&ctx(), &p("/win.txt"), "one\ntwo", "uno\ndos\nmas", false)
        .await
        .unwrap();
    assert_eq!(
        std::fs::read(w.host("win.txt")).unwrap(),
        b"uno\r\ndos\r\nmas\r\nthree\r\n"
    );
    let window = b.read(&ctx(), &p("/win.txt"), 0, 10).await.unwrap();
    assert_eq!(window.lines, ["uno", "dos", "mas", "three"]);
}

#[tokio::test]
async fn files_past_the_max_size_are_refused_or_skipped() {
    let w = World::with_options(FsOptions::default().with_max_file_size(1024));
    let b = &w.backend;
    let big = "x".repeat(2000);
    assert_refused(
        b.write(&ctx(), &p("/big.txt"), &big).await,
        ErrorKind::TooLarge,
    );
    assert!(!w.host("big.txt").exists());
    w.put("big.txt", &format!("{big}\nneedle\n"));
    w.put("small.txt", "needle\n");
    assert_refused(
        b.read(&ctx(), &p("/big.txt"), 0, 10).await,
        ErrorKind::TooLarge,
    );
    assert_refused(
        b.read_bytes(&ctx(), &p("/big.txt")).await,
        ErrorKind::TooLarge,
    );
    assert_refused(
        b.edit(&ctx(), &p("/big.txt"), "needle", "pin", false).await,
        ErrorKind::TooLarge,
    );
    let grep = b
        .grep(&ctx(), &GrepQuery::fixed("needle"), &p("/"), 10)
        .await
        .unwrap();
    let files: Vec<&str> = grep.matches.iter().map(|m| m.path.as_str()).collect();
    assert_eq!(files, ["/small.txt"]);
    // An edit that would grow a file past the limit changes nothing.
    w.put("grow.txt", "seed\n");
    assert_refused(
        b.edit(&ctx(), &p("/grow.txt"), "seed", &big, false).await,
        ErrorKind::TooLarge,
    );
    assert_eq!(
        std::fs::read_to_string(w.host("grow.txt")).unwrap(),
        "seed\n"
    );
    assert_eq!(b.capabilities().limits.max_file_size, 1024);
}

#[tokio::test]
async fn empty_directories_are_real_and_times_are_rfc3339() {
    let w = World::new();
    std::fs::create_dir_all(w.host("empty/inner")).unwrap();
    w.put("f.txt", "x");
    let b = &w.backend;
    let listing = b.ls(&ctx(), &p("/"), 10).await.unwrap();
    assert_eq!(listing.entries[0].name, "empty");
    assert!(listing.entries[0].is_dir && listing.entries[0].size.is_none());
    let file = &listing.entries[1];
    assert_eq!(file.size, Some(1));
    let stamp: jiff::Timestamp = file.modified_at.as_deref().unwrap().parse().unwrap();
    let mtime = std::fs::metadata(w.host("f.txt"))
        .unwrap()
        .modified()
        .unwrap();
    assert_eq!(stamp, jiff::Timestamp::try_from(mtime).unwrap());
    assert!(
        b.ls(&ctx(), &p("/empty/inner"), 10)
            .await
            .unwrap()
            .entries
            .is_empty()
    );
    assert_refused(
        b.delete(&ctx(), &p("/empty")).await,
        ErrorKind::DirectoryNotEmpty,
    );
    b.delete(&ctx(), &p("/empty/inner")).await.unwrap();
    b.delete(&ctx(), &p("/empty")).await.unwrap();
    assert!(!w.host("empty").exists());
    let caps = b.capabilities();
    assert!(caps.empty_dirs && caps.modified_at && caps.symlinks);
    assert!(!caps.tenants && !caps.effect_keys && !caps.exec);
    // Edits from several processes serialise on the directory lock (ADR 0064).
    assert!(caps.conditional_writes);
}

#[tokio::test]
async fn ignore_files_apply_only_when_asked() {
    let plain = World::new();
    plain.put(".gitignore", "*.log\nbuild/\n");
    plain.put("src/.gitignore", "!keep.log\n");
    plain.put("app.log", "needle\n");
    plain.put("src/keep.log", "needle\n");
    plain.put("src/main.rs", "needle\n");
    plain.put("build/out.txt", "needle\n");
    plain.put(".env", "needle\n");
    let all = [
        "/.env",
        "/.gitignore",
        "/app.log",
        "/build/out.txt",
        "/src/.gitignore",
        "/src/keep.log",
        "/src/main.rs",
    ];
    let globbed = plain
        .backend
        .glob(&ctx(), "**", &p("/"), 100)
        .await
        .unwrap();
    assert_eq!(
        globbed
            .files
            .iter()
            .map(|f| f.path.as_str())
            .collect::<Vec<_>>(),
        all
    );
    let grep = plain
        .backend
        .grep(&ctx(), &GrepQuery::fixed("needle"), &p("/"), 100)
        .await
        .unwrap();
    assert_eq!(grep.matches.len(), 5);

    let respectful = FsBackend::open_with(
        plain.root(),
        FsOptions::default().with_respect_ignore_files(true),
    )
    .unwrap();
    let globbed = respectful.glob(&ctx(), "**", &p("/"), 100).await.unwrap();
    assert_eq!(
        globbed
            .files
            .iter()
            .map(|f| f.path.as_str())
            .collect::<Vec<_>>(),
        ["/src/keep.log", "/src/main.rs"]
    );
    let grep = respectful
        .grep(&ctx(), &GrepQuery::fixed("needle"), &p("/src"), 100)
        .await
        .unwrap();
    assert_eq!(
        grep.matches
            .iter()
            .map(|m| m.path.as_str())
            .collect::<Vec<_>>(),
        ["/src/keep.log", "/src/main.rs"]
    );
    // ls and read are never filtered.
    assert_eq!(
        respectful
            .ls(&ctx(), &p("/"), 100)
            .await
            .unwrap()
            .entries
            .len(),
        5
    );
    assert!(respectful.read(&ctx(), &p("/app.log"), 0, 1).await.is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_edits_of_one_file_lose_nothing() {
    let w = World::new();
    let lines: String = (0..32).map(|i| format!("line {i} todo\n")).collect();
    w.put("shared.txt", &lines);
    let b = Arc::new(w.backend.clone());
    let tasks: Vec<_> = (0..32)
        .map(|i| {
            let b = Arc::clone(&b);
            tokio::spawn(async move {
                b.edit(
                    &ctx(),
                    &p("/shared.txt"),
                    &format!("line {i} todo\n"),
                    &format!("line {i} done\n"),
                    false,
                )
                .await
                .unwrap()
            })
        })
        .collect();
    for t in tasks {
        assert_eq!(t.await.unwrap().occurrences, Some(1));
    }
    let want: String = (0..32).map(|i| format!("line {i} done\n")).collect();
    assert_eq!(std::fs::read_to_string(w.host("shared.txt")).unwrap(), want);
}

#[tokio::test]
async fn host_quirks_are_refused_or_hidden() {
    let w = World::new();
    let b = &w.backend;
    w.put("file.txt", "x");
    assert_refused(
        b.write(&ctx(), &p("/file.txt/child"), "x").await,
        ErrorKind::NotADirectory,
    );
    assert_refused(
        b.read(&ctx(), &p("/file.txt/child"), 0, 1).await,
        ErrorKind::NotFound,
    );
    assert_refused(
        b.ls(&ctx(), &p("/file.txt"), 1).await,
        ErrorKind::NotADirectory,
    );
    assert_refused(
        b.ls(&ctx(), &p("/file.txt/child"), 1).await,
        ErrorKind::NotFound,
    );
    std::fs::create_dir(w.host("dir")).unwrap();
    assert_refused(
        b.write(&ctx(), &p("/dir"), "x").await,
        ErrorKind::IsADirectory,
    );
    assert_refused(b.write(&ctx(), &p("/"), "x").await, ErrorKind::IsADirectory);
    // A name that is not UTF-8 cannot be a virtual path: it is not listed.
    use std::os::unix::ffi::OsStrExt;
    std::fs::write(
        w.root().join(std::ffi::OsStr::from_bytes(b"bad\xff.txt")),
        "needle",
    )
    .unwrap();
    let names: Vec<String> = b
        .ls(&ctx(), &p("/"), 10)
        .await
        .unwrap()
        .entries
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, ["dir", "file.txt"]);
    assert!(
        b.grep(&ctx(), &GrepQuery::fixed("needle"), &p("/"), 10)
            .await
            .unwrap()
            .matches
            .is_empty()
    );
    let err = FsBackend::open(w.root().join("missing")).unwrap_err();
    w.assert_no_host_path(&err);
    let shown = format!("{b:?}");
    assert!(
        !shown.contains(w.tmp.path().to_str().unwrap()),
        "Debug shows the host path: {shown}"
    );
}

#[tokio::test]
async fn fsync_and_open_or_create_work() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("made/here");
    let b = FsBackend::open_or_create(&root, FsOptions::default().with_fsync(true)).unwrap();
    assert!(b.options().fsync);
    b.write(&ctx(), &p("/a/b.txt"), "one\n").await.unwrap();
    b.edit(&ctx(), &p("/a/b.txt"), "one", "two", false)
        .await
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(root.join("a/b.txt")).unwrap(),
        "two\n"
    );
    assert_eq!(
        std::fs::read_dir(root.join("a")).unwrap().count(),
        1,
        "no temporary file left"
    );
}

#[tokio::test]
async fn a_page_of_ls_is_full_even_when_hidden_entries_sort_first() {
    let w = World::new();
    let b = &w.backend;
    // Entries ls does not show (links to nothing, links leading out) sort
    // before every file: the page must still be filled with files.
    for i in 0..40 {
        w.symlink(format!("nowhere-{i}"), &format!("a{i:02}"));
    }
    w.symlink(w.outside().join("secret.txt"), "b-out");
    for i in 0..10 {
        w.put(&format!("z{i:02}.txt"), "x");
    }
    let listing = b.ls(&ctx(), &p("/"), 5).await.unwrap();
    let names: Vec<&str> = listing.entries.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        ["z00.txt", "z01.txt", "z02.txt", "z03.txt", "z04.txt"]
    );
    assert!(listing.truncated);
    let all = b.ls(&ctx(), &p("/"), 10).await.unwrap();
    assert_eq!(all.entries.len(), 10);
    assert!(!all.truncated);
    let glob = b.glob(&ctx(), "z0*", &p("/"), 3).await.unwrap();
    let names: Vec<&str> = glob.files.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["z00.txt", "z01.txt", "z02.txt"]);
    assert!(glob.truncated);
}

#[tokio::test]
async fn path_refusals_keep_the_path_as_a_field() {
    let w = World::new();
    w.put("dir/a.txt", "a\n");
    mkfifo(&w.host("pipe"));
    w.symlink("/etc/passwd", "out");
    w.symlink("missing.txt", "dangling");
    let b = &w.backend;
    let mount = p("/mnt");
    let refusals = [
        (
            "/pipe",
            assert_refused(
                b.read_bytes(&ctx(), &p("/pipe")).await,
                ErrorKind::PermissionDenied,
            ),
        ),
        (
            "/out",
            assert_refused(
                b.read_bytes(&ctx(), &p("/out")).await,
                ErrorKind::PermissionDenied,
            ),
        ),
        (
            "/dangling",
            assert_refused(
                b.write(&ctx(), &p("/dangling"), "x").await,
                ErrorKind::PermissionDenied,
            ),
        ),
        (
            "/dir",
            assert_refused(
                b.delete(&ctx(), &p("/dir")).await,
                ErrorKind::DirectoryNotEmpty,
            ),
        ),
    ];
    for (path, err) in refusals {
        assert_eq!(err.path(), Some(&p(path)), "{}", err.message());
        // A composite mounting the folder at /mnt re-prefixes the field.
        let moved = err.map_path(|inner| inner.under_prefix(&mount));
        let shown = format!("/mnt{path}");
        assert!(moved.message().contains(&shown), "{}", moved.message());
    }
    let root = assert_refused(b.delete(&ctx(), &p("/")).await, ErrorKind::InvalidPath);
    assert_eq!(
        root.message(),
        burrow_backend::Error::root_cannot_be_deleted().message()
    );
    assert!(w.host("dir/a.txt").exists());
}
