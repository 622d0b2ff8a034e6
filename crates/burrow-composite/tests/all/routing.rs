//! Routing: longest prefix wins, paths re-prefixed both ways, mount points as directories, builder refusals, locks, capabilities, execute.

use std::sync::Arc;

use burrow_backend::{Backend, Capabilities, ErrorKind, FileContext, Limits, Sandbox, VPath};
use burrow_composite::CompositeBackend;
use burrow_state::StateBackend;

use crate::support::{EchoSandbox, composite, ctx, p, paths, put};

#[tokio::test]
async fn routes_to_the_longest_prefix_relative_to_the_mount() {
    let (c, default, mounts) = composite(&["/memories", "/memories/deep"]);
    put(&c, "/a.txt", "top").await;
    let w = c
        .write(&ctx(), &p("/memories/notes.md"), "note\n")
        .await
        .unwrap();
    assert_eq!(w.path.as_deref(), Some("/memories/notes.md"));
    put(&c, "/memories/deep/x.md", "deep").await;

    // Each backend saw the path relative to its mount.
    assert_eq!(
        default.read_bytes(&ctx(), &p("/a.txt")).await.unwrap(),
        b"top"
    );
    assert_eq!(
        mounts[0].read_bytes(&ctx(), &p("/notes.md")).await.unwrap(),
        b"note\n"
    );
    assert_eq!(
        mounts[1].read_bytes(&ctx(), &p("/x.md")).await.unwrap(),
        b"deep"
    );
    assert_eq!(default.file_count(), 1);
    assert_eq!(mounts[0].file_count(), 1);

    let e = c
        .edit(&ctx(), &p("/memories/notes.md"), "note", "memo", false)
        .await
        .unwrap();
    assert_eq!(e.path.as_deref(), Some("/memories/notes.md"));
    assert_eq!(e.occurrences, Some(1));
    let w = c
        .read(&ctx(), &p("/memories/notes.md"), 0, 10)
        .await
        .unwrap();
    assert_eq!(w.lines, ["memo"]);

    let l = c.ls(&ctx(), &p("/memories"), 100).await.unwrap();
    assert_eq!(
        paths(&l.entries, |e| &e.path),
        ["/memories/deep", "/memories/notes.md"]
    );
    assert!(l.entries[0].is_dir && !l.entries[1].is_dir);

    c.delete(&ctx(), &p("/memories/notes.md")).await.unwrap();
    assert_eq!(mounts[0].file_count(), 0);
}

/// Making or deleting a mount point (or a directory above one) is refused or a no-op, never
/// routed; beneath a mount both are the mounted backend's, at its own paths.
#[tokio::test]
async fn make_dir_and_delete_tree_around_mount_points() {
    let (c, default, mounts) = composite(&["/a/b"]);
    for path in ["/a", "/a/b"] {
        let e = c.make_dir(&ctx(), &p(path), false).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::AlreadyExists, "mkdir {path}");
        c.make_dir(&ctx(), &p(path), true).await.unwrap();
    }
    put(&mounts[0], "/in/x.txt", "x").await;
    let e = c.delete_tree(&ctx(), &p("/a/b")).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidPath);
    assert!(e.message().contains("mount point"), "{}", e.message());
    let e = c.delete_tree(&ctx(), &p("/a")).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::DirectoryNotEmpty);
    assert_eq!(
        mounts[0].file_count(),
        1,
        "a refused delete_tree removes nothing"
    );

    c.make_dir(&ctx(), &p("/a/b/made/deeper"), true)
        .await
        .unwrap();
    let made = mounts[0].ls(&ctx(), &p("/made"), 10).await.unwrap();
    assert_eq!(paths(&made.entries, |e| &e.path), ["/made/deeper"]);
    c.delete_tree(&ctx(), &p("/a/b/in")).await.unwrap();
    assert_eq!(mounts[0].file_count(), 0);
    c.delete_tree(&ctx(), &p("/a/b/made")).await.unwrap();
    let root = c.ls(&ctx(), &p("/a/b"), 10).await.unwrap();
    assert!(root.entries.is_empty(), "{:?}", root.entries);

    c.make_dir(&ctx(), &p("/top"), false).await.unwrap();
    let own = default.ls(&ctx(), &p("/"), 10).await.unwrap();
    assert_eq!(paths(&own.entries, |e| &e.path), ["/top"]);
}

#[tokio::test]
async fn refusals_name_composite_paths() {
    let (c, _, mounts) = composite(&["/memories"]);
    let e = c
        .read(&ctx(), &p("/memories/missing.md"), 0, 10)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(
        e.message()
            .starts_with("/memories/missing.md does not exist"),
        "{}",
        e.message()
    );

    put(&mounts[0], "/f", "x").await;
    let e = c.write(&ctx(), &p("/memories/f/g"), "x").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotADirectory);
    assert!(e.message().contains("/memories/f"), "{}", e.message());
}

#[tokio::test]
async fn mount_points_and_their_ancestors_are_directories() {
    let (c, default, mounts) = composite(&["/a/b"]);
    // The default has nothing at /a, yet /a and /a/b exist.
    let root = c.ls(&ctx(), &p("/"), 100).await.unwrap();
    assert_eq!(paths(&root.entries, |e| &e.path), ["/a"]);
    assert!(root.entries[0].is_dir);
    let a = c.ls(&ctx(), &p("/a"), 100).await.unwrap();
    assert_eq!(paths(&a.entries, |e| &e.path), ["/a/b"]);
    assert!(
        c.ls(&ctx(), &p("/a/b"), 100)
            .await
            .unwrap()
            .entries
            .is_empty()
    );

    // ls of the mount point is the mounted backend's root.
    put(&mounts[0], "/in.txt", "x").await;
    let b = c.ls(&ctx(), &p("/a/b"), 100).await.unwrap();
    assert_eq!(paths(&b.entries, |e| &e.path), ["/a/b/in.txt"]);

    for path in ["/a", "/a/b"] {
        let e = c.write(&ctx(), &p(path), "x").await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::IsADirectory, "write {path}");
        let e = c.write_bytes(&ctx(), &p(path), b"x").await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::IsADirectory, "write_bytes {path}");
        let e = c.read(&ctx(), &p(path), 0, 1).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::IsADirectory, "read {path}");
        let e = c.edit(&ctx(), &p(path), "x", "y", false).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::IsADirectory, "edit {path}");
    }
    let e = c.delete(&ctx(), &p("/a/b")).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidPath);
    assert!(e.message().contains("mount point"), "{}", e.message());
    let e = c.delete(&ctx(), &p("/a")).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::DirectoryNotEmpty);
    assert_eq!(
        c.delete(&ctx(), &p("/")).await.unwrap_err().kind(),
        ErrorKind::InvalidPath
    );
    assert_eq!(default.file_count(), 0);
    assert_eq!(mounts[0].file_count(), 1);
}

#[tokio::test]
async fn a_default_file_where_a_mount_implies_a_directory_is_shadowed() {
    let (c, default, _) = composite(&["/a/b"]);
    put(&default, "/a", "a file in the default").await;
    put(&default, "/z.txt", "z").await;
    let root = c.ls(&ctx(), &p("/"), 100).await.unwrap();
    assert_eq!(paths(&root.entries, |e| &e.path), ["/a", "/z.txt"]);
    assert!(root.entries[0].is_dir && root.entries[0].size.is_none());
    assert_eq!(
        c.read(&ctx(), &p("/a"), 0, 1).await.unwrap_err().kind(),
        ErrorKind::IsADirectory
    );
    assert_eq!(c.ls(&ctx(), &p("/a"), 10).await.unwrap().entries.len(), 1);
    let g = c.glob(&ctx(), "**", &p("/"), 10).await.unwrap();
    assert_eq!(paths(&g.files, |f| &f.path), ["/z.txt"]);
}

#[tokio::test]
async fn ls_merges_mount_points_with_the_default_once_each() {
    let (c, default, _) = composite(&["/b", "/d/e"]);
    for path in ["/a.txt", "/b/shadowed.txt", "/c.txt", "/d/f.txt"] {
        put(&default, path, "x").await;
    }
    let l = c.ls(&ctx(), &p("/"), 100).await.unwrap();
    assert_eq!(
        paths(&l.entries, |e| &e.path),
        ["/a.txt", "/b", "/c.txt", "/d"]
    );
    assert!(!l.truncated);
    let l = c.ls(&ctx(), &p("/"), 2).await.unwrap();
    assert_eq!(paths(&l.entries, |e| &e.path), ["/a.txt", "/b"]);
    assert!(l.truncated);
    let l = c.ls(&ctx(), &p("/"), 4).await.unwrap();
    assert!(!l.truncated);
    let l = c.ls(&ctx(), &p("/d"), 100).await.unwrap();
    assert_eq!(paths(&l.entries, |e| &e.path), ["/d/e", "/d/f.txt"]);
    // A file standing where ls is asked: NotADirectory, in composite paths.
    let e = c.ls(&ctx(), &p("/a.txt"), 10).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotADirectory);
    assert_eq!(
        c.ls(&ctx(), &p("/nope"), 10).await.unwrap_err().kind(),
        ErrorKind::NotFound
    );
    let e = c.ls(&ctx(), &p("/b/nope"), 10).await.unwrap_err();
    assert!(e.message().starts_with("/b/nope"), "{}", e.message());
}

#[test]
fn builder_refuses_bad_mounts() {
    let s = || -> Arc<dyn Backend> { Arc::new(StateBackend::new()) };
    let kind = |r: burrow_backend::Result<CompositeBackend>| r.err().map(|e| e.kind());
    assert_eq!(
        kind(CompositeBackend::builder(s()).mount("/", s()).build()),
        Some(ErrorKind::InvalidArgument)
    );
    assert_eq!(
        kind(
            CompositeBackend::builder(s())
                .mount("/m", s())
                .mount("m/", s())
                .build()
        ),
        Some(ErrorKind::AlreadyExists)
    );
    assert_eq!(
        kind(CompositeBackend::builder(s()).mount("/..", s()).build()),
        Some(ErrorKind::InvalidPath)
    );
    assert_eq!(
        kind(CompositeBackend::builder(s()).mount("a\0b", s()).build()),
        Some(ErrorKind::InvalidPath)
    );
    let nested = CompositeBackend::builder(s())
        .mount("/m/n", s())
        .mount("/m", s())
        .build()
        .unwrap();
    assert_eq!(nested.mount_prefixes(), [p("/m"), p("/m/n")]);
}

#[test]
fn locks_come_from_the_routed_backend_and_never_collide_across_mounts() {
    let shared: Arc<dyn Backend> = Arc::new(StateBackend::new());
    let c = CompositeBackend::builder(Arc::new(StateBackend::new()))
        .mount("/x", shared.clone())
        .mount("/y", shared.clone())
        .build()
        .unwrap();
    let cx = ctx();
    let at_x = c.locks(&cx, &p("/x/f"));
    let at_y = c.locks(&cx, &p("/y/f"));
    assert_eq!(at_x.len(), 1);
    assert_ne!(at_x, at_y);
    assert_eq!(at_x, c.locks(&cx, &p("/x/f")));
    assert!(
        at_x[0]
            .as_str()
            .ends_with(shared.locks(&cx, &p("/f"))[0].as_str())
    );
    assert_ne!(c.locks(&cx, &p("/x/f")), c.locks(&cx, &p("/x/g")));
    let default_keys = c.locks(&cx, &p("/f"));
    assert_eq!(default_keys, c.default_backend().locks(&cx, &p("/f")));
}

#[test]
fn capabilities_compose() {
    let small = Limits {
        max_file_size: 100,
        max_results: 7,
    };
    let c = CompositeBackend::builder(Arc::new(StateBackend::new()))
        .mount("/m", Arc::new(StateBackend::with_limits(small)))
        .build()
        .unwrap();
    let caps = c.capabilities();
    let state = StateBackend::new().capabilities();
    assert_eq!(caps.modified_at, state.modified_at);
    assert_eq!(caps.conditional_writes, state.conditional_writes);
    assert!(!caps.exec && !caps.tenants);
    assert_eq!(caps.limits, small);
    assert!(c.as_sandbox().is_none());

    let sandbox = CompositeBackend::builder(Arc::new(EchoSandbox {
        files: StateBackend::new(),
        name: "default",
    }))
    .build()
    .unwrap();
    assert!(sandbox.capabilities().exec);
    assert!(sandbox.as_sandbox().is_some());
    let minimal = CompositeBackend::builder(Arc::new(StateBackend::new()))
        .mount("/m", Arc::new(Minimal(StateBackend::new())))
        .build()
        .unwrap();
    assert!(!minimal.capabilities().modified_at);
}

/// A StateBackend that claims nothing optional.
struct Minimal(StateBackend);

#[async_trait::async_trait]
impl Backend for Minimal {
    fn capabilities(&self) -> Capabilities {
        Capabilities::minimal()
    }
    async fn ls(
        &self,
        c: &FileContext,
        d: &burrow_backend::VPath,
        l: usize,
    ) -> burrow_backend::Result<burrow_backend::Listing> {
        self.0.ls(c, d, l).await
    }
    async fn read(
        &self,
        c: &FileContext,
        p: &burrow_backend::VPath,
        o: usize,
        l: usize,
    ) -> burrow_backend::Result<burrow_backend::LineWindow> {
        self.0.read(c, p, o, l).await
    }
    async fn read_bytes(
        &self,
        c: &FileContext,
        p: &burrow_backend::VPath,
    ) -> burrow_backend::Result<Vec<u8>> {
        self.0.read_bytes(c, p).await
    }
    async fn write_bytes(
        &self,
        c: &FileContext,
        p: &burrow_backend::VPath,
        b: &[u8],
    ) -> burrow_backend::Result<burrow_backend::WriteResult> {
        self.0.write_bytes(c, p, b).await
    }
    async fn edit(
        &self,
        c: &FileContext,
        p: &burrow_backend::VPath,
        o: &str,
        n: &str,
        a: bool,
    ) -> burrow_backend::Result<burrow_backend::EditResult> {
        self.0.edit(c, p, o, n, a).await
    }
    async fn delete(
        &self,
        c: &FileContext,
        p: &burrow_backend::VPath,
    ) -> burrow_backend::Result<()> {
        self.0.delete(c, p).await
    }
    async fn glob(
        &self,
        c: &FileContext,
        pat: &str,
        u: &burrow_backend::VPath,
        l: usize,
    ) -> burrow_backend::Result<burrow_backend::GlobResult> {
        self.0.glob(c, pat, u, l).await
    }
    async fn grep(
        &self,
        c: &FileContext,
        q: &burrow_backend::GrepQuery,
        u: &burrow_backend::VPath,
        l: usize,
    ) -> burrow_backend::Result<burrow_backend::GrepResult> {
        self.0.grep(c, q, u, l).await
    }
}

#[tokio::test]
async fn writes_past_the_smallest_size_limit_are_refused() {
    let small = Limits {
        max_file_size: 10,
        max_results: 100,
    };
    let default = StateBackend::new();
    let c = CompositeBackend::builder(Arc::new(default.clone()))
        .mount("/m", Arc::new(StateBackend::with_limits(small)))
        .build()
        .unwrap();
    let e = c
        .write(&ctx(), &p("/big.txt"), &"x".repeat(11))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::TooLarge);
    assert_eq!(default.file_count(), 0);
    put(&c, "/ok.txt", "0123456789").await;
}

#[tokio::test]
async fn execute_goes_to_the_default_sandbox_or_a_named_mount() {
    let tenant = FileContext::for_tenant("acme").with_effect_key("k1");
    let c = CompositeBackend::builder(Arc::new(EchoSandbox {
        files: StateBackend::new(),
        name: "default",
    }))
    .mount(
        "/box",
        Arc::new(EchoSandbox {
            files: StateBackend::new(),
            name: "box",
        }),
    )
    .mount("/plain", Arc::new(StateBackend::new()))
    .build()
    .unwrap();
    let out = c
        .as_sandbox()
        .unwrap()
        .execute(&tenant, "ls", None)
        .await
        .unwrap();
    assert_eq!(out.output, "default ran ls for acme");
    let out = c
        .execute_in(&p("/box"), &tenant, "pwd", None)
        .await
        .unwrap();
    assert_eq!(out.output, "box ran pwd for acme");
    let e = c
        .execute_in(&p("/plain"), &tenant, "pwd", None)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported);
    let e = c
        .execute_in(&p("/nothing"), &tenant, "pwd", None)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);

    let (plain, _, _) = composite(&["/m"]);
    let e = plain.execute(&ctx(), "ls", None).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported);
}

#[tokio::test]
async fn execute_goes_to_the_mount_that_is_a_sandbox() {
    let tenant = FileContext::for_tenant("acme");
    let echo = |name| EchoSandbox {
        files: StateBackend::new(),
        name,
    };
    let c = CompositeBackend::builder(Arc::new(StateBackend::new()))
        .mount("/box", Arc::new(echo("box")))
        .mount("/plain", Arc::new(StateBackend::new()))
        .build()
        .unwrap();
    assert!(c.capabilities().exec);
    assert_eq!(c.exec_prefix(), Some(&p("/box")));
    let out = c
        .as_sandbox()
        .unwrap()
        .execute(&tenant, "make", None)
        .await
        .unwrap();
    assert_eq!(out.output, "box ran make for acme");

    // Two mounted sandboxes and a default that is none: which is meant cannot be told.
    let two = CompositeBackend::builder(Arc::new(StateBackend::new()))
        .mount("/a", Arc::new(echo("a")))
        .mount("/b", Arc::new(echo("b")))
        .build()
        .unwrap();
    assert!(!two.capabilities().exec);
    assert!(two.as_sandbox().is_none());
    assert_eq!(two.exec_prefix(), None);
    let e = Sandbox::execute(&two, &tenant, "make", None)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported);
    assert!(e.message().contains("/a, /b"), "{}", e.message());
    let out = two
        .execute_in(&p("/b"), &tenant, "make", None)
        .await
        .unwrap();
    assert_eq!(out.output, "b ran make for acme");

    // A default that is a sandbox wins over mounted ones.
    let both = CompositeBackend::builder(Arc::new(echo("default")))
        .mount("/a", Arc::new(echo("a")))
        .build()
        .unwrap();
    assert_eq!(both.exec_prefix(), Some(&VPath::root()));
}
