//! The escape table: every way a path could lead out of the root, against every operation.

use burrow_backend::{Backend, ErrorKind, GrepQuery};

use super::support::{SECRET, World, assert_refused, ctx, p};

/// A world with every kind of escaping link, plus a few harmless ones.
fn hostile_world() -> World {
    let w = World::new();
    let outside = w.outside();
    w.put("inside.txt", "inside\n");
    w.put("sub/file.txt", "sub file\n");
    w.put("deep/er/x.txt", "x\n");
    // Absolute links: to the secret, to the outside folder, and even to a file inside.
    w.symlink(outside.join("secret.txt"), "abs-file");
    w.symlink(&outside, "abs-dir");
    w.symlink(w.host("inside.txt"), "abs-inside");
    w.symlink("/etc/passwd", "abs-etc");
    // Relative links that climb, from the top and from deeper down.
    w.symlink("../outside/secret.txt", "rel-file");
    w.symlink("../outside", "rel-dir");
    w.symlink("../../../outside/secret.txt", "deep/er/rel-file");
    w.symlink("sub/../../outside/secret.txt", "sneaky");
    // Loops and dangling links.
    w.symlink("loop-b", "loop-a");
    w.symlink("loop-a", "loop-b");
    w.symlink("missing.txt", "dangling");
    w
}

/// Links whose target lies outside the root (or is absolute): refused with PermissionDenied.
const ESCAPING_FILES: [&str; 6] = [
    "/abs-file",
    "/abs-inside",
    "/abs-etc",
    "/rel-file",
    "/deep/er/rel-file",
    "/sneaky",
];
/// Paths through a symlinked parent directory that leads out.
const THROUGH_DIRS: [&str; 2] = ["/abs-dir/secret.txt", "/rel-dir/secret.txt"];

#[tokio::test]
async fn reads_through_escaping_links_are_refused() {
    let w = hostile_world();
    let b = &w.backend;
    for path in ESCAPING_FILES.iter().chain(&THROUGH_DIRS) {
        let path = p(path);
        let err = assert_refused(
            b.read(&ctx(), &path, 0, 100).await,
            ErrorKind::PermissionDenied,
        );
        w.assert_no_host_path(&err);
        assert!(err.message().contains(path.as_str()), "{}", err.message());
        let err = assert_refused(
            b.read_bytes(&ctx(), &path).await,
            ErrorKind::PermissionDenied,
        );
        w.assert_no_host_path(&err);
    }
    for dir in ["/abs-dir", "/rel-dir"] {
        let err = assert_refused(
            b.ls(&ctx(), &p(dir), 100).await,
            ErrorKind::PermissionDenied,
        );
        w.assert_no_host_path(&err);
    }
}

#[tokio::test]
async fn mutations_through_escaping_links_are_refused_and_change_nothing() {
    let w = hostile_world();
    let b = &w.backend;
    for path in ESCAPING_FILES.iter().chain(&THROUGH_DIRS) {
        let path = p(path);
        let err = assert_refused(
            b.write(&ctx(), &path, "pwned").await,
            ErrorKind::PermissionDenied,
        );
        w.assert_no_host_path(&err);
        let err = assert_refused(
            b.edit(&ctx(), &path, "SECRET", "pwned", false).await,
            ErrorKind::PermissionDenied,
        );
        w.assert_no_host_path(&err);
    }
    for path in [
        "/abs-dir/new.txt",
        "/rel-dir/new.txt",
        "/abs-dir/a/b/new.txt",
        "/rel-dir/a/new.txt",
    ] {
        let err = assert_refused(
            b.write(&ctx(), &p(path), "pwned").await,
            ErrorKind::PermissionDenied,
        );
        w.assert_no_host_path(&err);
    }
    for path in THROUGH_DIRS {
        assert_refused(
            b.delete(&ctx(), &p(path)).await,
            ErrorKind::PermissionDenied,
        );
    }
    w.assert_outside_intact();
    // The links themselves are untouched by the refused writes.
    assert!(
        std::fs::symlink_metadata(w.host("abs-file"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(
        std::fs::symlink_metadata(w.host("rel-file"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[tokio::test]
async fn deleting_an_escaping_link_removes_the_link_only() {
    let w = hostile_world();
    for path in ["/abs-file", "/rel-file", "/abs-dir", "/rel-dir", "/sneaky"] {
        w.backend.delete(&ctx(), &p(path)).await.unwrap();
        assert!(
            std::fs::symlink_metadata(w.host(&path[1..])).is_err(),
            "{path} still there"
        );
    }
    w.assert_outside_intact();
}

#[tokio::test]
async fn listings_and_searches_never_show_or_follow_escaping_links() {
    let w = hostile_world();
    let b = &w.backend;
    let listing = b.ls(&ctx(), &p("/"), 1000).await.unwrap();
    let names: Vec<&str> = listing.entries.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        ["deep", "inside.txt", "sub"],
        "only real, reachable entries are listed"
    );

    let glob = b.glob(&ctx(), "**", &p("/"), 1000).await.unwrap();
    let paths: Vec<&str> = glob.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["/deep/er/x.txt", "/inside.txt", "/sub/file.txt"]);

    let grep = b
        .grep(&ctx(), &GrepQuery::fixed(SECRET), &p("/"), 1000)
        .await
        .unwrap();
    assert!(
        grep.matches.is_empty(),
        "grep read outside content: {:?}",
        grep.matches
    );
    let grep = b
        .grep(&ctx(), &GrepQuery::regex("."), &p("/"), 1000)
        .await
        .unwrap();
    let files: Vec<&str> = grep.matches.iter().map(|m| m.path.as_str()).collect();
    assert_eq!(files, ["/deep/er/x.txt", "/inside.txt", "/sub/file.txt"]);

    for under in ["/abs-dir", "/rel-dir"] {
        assert_refused(
            b.glob(&ctx(), "**", &p(under), 100).await,
            ErrorKind::PermissionDenied,
        );
        assert_refused(
            b.grep(&ctx(), &GrepQuery::fixed(SECRET), &p(under), 100)
                .await,
            ErrorKind::PermissionDenied,
        );
    }
    for under in ESCAPING_FILES {
        assert_refused(
            b.grep(&ctx(), &GrepQuery::fixed(SECRET), &p(under), 100)
                .await,
            ErrorKind::PermissionDenied,
        );
    }
}

#[tokio::test]
async fn loops_and_dangling_links_are_refused_without_hanging() {
    let w = hostile_world();
    let b = &w.backend;
    for path in ["/loop-a", "/loop-b"] {
        let err = assert_refused(
            b.read(&ctx(), &p(path), 0, 10).await,
            ErrorKind::PermissionDenied,
        );
        w.assert_no_host_path(&err);
        assert_refused(
            b.write(&ctx(), &p(path), "x").await,
            ErrorKind::PermissionDenied,
        );
    }
    assert_refused(
        b.read(&ctx(), &p("/dangling"), 0, 10).await,
        ErrorKind::NotFound,
    );
    assert_refused(
        b.write(&ctx(), &p("/dangling"), "x").await,
        ErrorKind::PermissionDenied,
    );
    assert!(!w.host("missing.txt").exists());
}

#[tokio::test]
async fn links_that_stay_inside_are_followed() {
    let w = World::new();
    w.put("real/a.txt", "alpha\n");
    w.symlink("real/a.txt", "link.txt");
    w.symlink("real", "dirlink");
    w.symlink("../real/a.txt", "real/up.txt");
    let b = &w.backend;
    assert_eq!(
        b.read(&ctx(), &p("/link.txt"), 0, 10).await.unwrap().lines,
        ["alpha"]
    );
    assert_eq!(
        b.read(&ctx(), &p("/dirlink/a.txt"), 0, 10)
            .await
            .unwrap()
            .lines,
        ["alpha"]
    );
    assert_eq!(
        b.read(&ctx(), &p("/real/up.txt"), 0, 10)
            .await
            .unwrap()
            .lines,
        ["alpha"]
    );
    let listing = b.ls(&ctx(), &p("/dirlink"), 10).await.unwrap();
    assert_eq!(listing.entries[0].path, "/dirlink/a.txt");

    // A write through an inside link replaces the target's content and keeps the link.
    b.write(&ctx(), &p("/link.txt"), "beta\n").await.unwrap();
    assert_eq!(
        std::fs::read_to_string(w.host("real/a.txt")).unwrap(),
        "beta\n"
    );
    assert!(
        std::fs::symlink_metadata(w.host("link.txt"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    b.edit(&ctx(), &p("/dirlink/a.txt"), "beta", "gamma", false)
        .await
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(w.host("real/a.txt")).unwrap(),
        "gamma\n"
    );
    b.write(&ctx(), &p("/dirlink/new.txt"), "n").await.unwrap();
    assert_eq!(
        std::fs::read_to_string(w.host("real/new.txt")).unwrap(),
        "n"
    );

    // Walks list links to files, but do not descend into linked directories.
    let glob = b.glob(&ctx(), "*.txt", &p("/"), 100).await.unwrap();
    let paths: Vec<&str> = glob.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        paths,
        ["/link.txt", "/real/a.txt", "/real/new.txt", "/real/up.txt"]
    );
}

#[tokio::test]
async fn dot_dot_inside_names_is_an_ordinary_name() {
    let w = World::new();
    let b = &w.backend;
    for name in [
        "/foo..bar.txt",
        "/..hidden",
        "/a../b..",
        "/...",
        "/[...slug]/page.txt",
        "/..\\x",
    ] {
        b.write(&ctx(), &p(name), name).await.unwrap();
        assert_eq!(
            std::fs::read_to_string(w.host(&name[1..])).unwrap(),
            name,
            "{name}"
        );
        assert_eq!(
            b.read_bytes(&ctx(), &p(name)).await.unwrap(),
            name.as_bytes()
        );
    }
    w.assert_outside_intact();
    let glob = b.glob(&ctx(), "**", &p("/"), 100).await.unwrap();
    assert_eq!(glob.files.len(), 6);
    // A ".." segment that climbs never reaches the backend: VPath refuses it.
    for climbing in [
        "../outside/secret.txt",
        "/a/../../outside",
        "/..",
        "sub/../../x",
    ] {
        assert_eq!(
            burrow_backend::VPath::parse(climbing).unwrap_err().kind(),
            ErrorKind::InvalidPath
        );
    }
    // A glob that climbs is refused too.
    assert_refused(
        b.glob(&ctx(), "../outside/*", &p("/"), 10).await,
        ErrorKind::InvalidPath,
    );
    assert_refused(
        b.grep(
            &ctx(),
            &GrepQuery::fixed(SECRET).with_include("../**"),
            &p("/"),
            10,
        )
        .await,
        ErrorKind::InvalidPath,
    );
}
