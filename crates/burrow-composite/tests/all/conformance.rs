//! The conformance suite on composites: alone, inside a mount beside another, and inside a nested mount over shadowed files.
//!
//! Each variant is its own module with its own `conformance_suite!`
//! invocation (the generated tests are plain items named after the
//! scenarios, so modules keep them apart). The scenarios work beneath the
//! fixture's root; in the mounted variants that root is a mount point whose
//! prefix, in the default (and in the outer mount), already holds files the
//! mount must shadow: if shadowing leaked, the scenarios would see them.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use burrow_backend::{Backend, FileContext, Limits, VPath};
use burrow_composite::CompositeBackend;
use burrow_conformance::{Fixture, StoreAccess};
use burrow_state::StateBackend;
use burrow_types::{FileData, FilesDocument};

use crate::support::Rebase;

/// Files a shadowed store holds beneath the scenarios' root (relative paths).
const SHADOWED: &[&str] = &[
    "a.txt",
    "a/b",
    "a/c.txt",
    "b/a.txt",
    "dir/file.txt",
    "x.txt",
    "zz.txt",
];

async fn with_shadowed(store: &StateBackend, under: &str) -> StateBackend {
    let root = VPath::parse(under).unwrap();
    for rel in SHADOWED {
        let path = root.join(rel).unwrap();
        store
            .write(&FileContext::default(), &path, "shadowed needle a b\n")
            .await
            .unwrap();
    }
    store.clone()
}

/// Every part of the mounted variants caps results at 500, so the limit
/// scenarios run too (lower breaks scenarios that list 64 files).
fn mounted_limits() -> Limits {
    Limits {
        max_results: 500,
        ..Limits::default()
    }
}

/// (b) A composite with `part` mounted at "/m" and another store at
/// "/zz_mount"; the default holds files under "/m". The scenarios run beneath "/m".
async fn mounted(part: StateBackend) -> CompositeBackend {
    let default = with_shadowed(&StateBackend::with_limits(mounted_limits()), "/m").await;
    let unrelated = with_shadowed(&StateBackend::with_limits(mounted_limits()), "/").await;
    CompositeBackend::builder(Arc::new(default))
        .mount("/m", Arc::new(part))
        .mount("/zz_mount", Arc::new(unrelated))
        .build()
        .expect("a valid composite")
}

/// (c) Nested mounts at "/m" and `part` at "/m/n"; the default holds files under
/// "/m/n" and the outer mount under its "/n". The scenarios run beneath "/m/n".
async fn nested(part: StateBackend) -> CompositeBackend {
    let default = with_shadowed(&StateBackend::new(), "/m/n").await;
    let outer = with_shadowed(&StateBackend::new(), "/n").await;
    CompositeBackend::builder(Arc::new(default))
        .mount("/m", Arc::new(outer))
        .mount("/m/n", Arc::new(part))
        .build()
        .expect("a valid composite")
}

/// Builds one variant's backend around the part the scenarios work in.
type Assemble = fn(StateBackend) -> Pin<Box<dyn Future<Output = Arc<dyn Backend>> + Send>>;

/// The store access of a variant: the StateBackend the scenarios' files land in,
/// seen from the composite at `prefix`. A planted file goes into a fresh part
/// loaded from a document (loading does not check the max file size), assembled
/// into the same variant; created_at is read from the part's document.
struct Part {
    part: StateBackend,
    limits: Limits,
    prefix: VPath,
    assemble: Assemble,
}

impl Part {
    /// `path` as the part sees it.
    fn inside(&self, path: &VPath) -> std::io::Result<VPath> {
        path.strip_prefix(&self.prefix).ok_or_else(|| {
            std::io::Error::other(format!("{path} is not beneath the mount {}", self.prefix))
        })
    }
}

impl StoreAccess for Part {
    fn plant(&self, path: &VPath, bytes: &[u8]) -> std::io::Result<Arc<dyn Backend>> {
        let stamp = "2026-01-01T00:00:00Z".to_owned();
        let doc: FilesDocument = [(
            self.inside(path)?.as_str().to_owned(),
            FileData::from_bytes(bytes, stamp.clone(), stamp),
        )]
        .into_iter()
        .collect();
        let part = StateBackend::from_files_with_limits(doc, self.limits)
            .map_err(|e| std::io::Error::other(e.message().to_owned()))?;
        let assemble = self.assemble;
        Ok(tokio::task::block_in_place(|| {
            tokio::runtime::Handle::current().block_on(assemble(part))
        }))
    }

    fn created_at(&self, path: &VPath) -> Option<String> {
        let inside = self.inside(path).ok()?;
        self.part
            .files()
            .get(inside.as_str())
            .map(|data| data.created_at.clone())
    }
}

/// A fixture of the variant `assemble` over a fresh part with `limits`, mounted
/// at `prefix` as the scenarios see it, working beneath `root`.
async fn fixture(assemble: Assemble, limits: Limits, prefix: &str, root: &str) -> Fixture {
    let part = StateBackend::with_limits(limits);
    let backend = assemble(part.clone()).await;
    Fixture::new(backend)
        .with_root(VPath::parse(root).unwrap())
        .with_store(Part {
            part,
            limits,
            prefix: VPath::parse(prefix).unwrap(),
            assemble,
        })
}

/// (a) A composite with nothing mounted: the default alone.
mod alone {
    use super::*;

    async fn make_fixture() -> Fixture {
        fixture(
            |part| {
                Box::pin(async move {
                    let c = CompositeBackend::builder(Arc::new(part))
                        .build()
                        .expect("a valid composite");
                    Arc::new(c) as Arc<dyn Backend>
                })
            },
            Limits::default(),
            "/",
            "/",
        )
        .await
    }

    burrow_conformance::conformance_suite!(make_fixture,
        capability_skips = [effect_keys_off, empty_dirs_off, exec_off, symlinks_off, tenants_off],
        skips = {
            host_fifo_is_never_opened: "the parts are StateBackends, which hold no special files (the fixture lends no host access)",
            limits_max_results_caps_every_listing: "max_results is 10000; the suite creates at most 1000 files to exceed it (the mounted variants lower it)",
        },
    );
}

/// (b) Beneath the mount at "/m", beside "/zz_mount", over a default with files under "/m".
mod in_mount {
    use super::*;

    async fn make_fixture() -> Fixture {
        fixture(
            |part| Box::pin(async move { Arc::new(mounted(part).await) as Arc<dyn Backend> }),
            mounted_limits(),
            "/m",
            "/m",
        )
        .await
    }

    burrow_conformance::conformance_suite!(make_fixture,
        capability_skips = [effect_keys_off, empty_dirs_off, exec_off, symlinks_off, tenants_off],
        skips = {
            host_fifo_is_never_opened: "the parts are StateBackends, which hold no special files (the fixture lends no host access)",
        },
    );
}

/// (c) Beneath the nested mount at "/m/n", over files in the default and in the outer mount.
mod in_nested_mount {
    use super::*;

    async fn make_fixture() -> Fixture {
        fixture(
            |part| Box::pin(async move { Arc::new(nested(part).await) as Arc<dyn Backend> }),
            Limits::default(),
            "/m/n",
            "/m/n",
        )
        .await
    }

    burrow_conformance::conformance_suite!(make_fixture,
        capability_skips = [effect_keys_off, empty_dirs_off, exec_off, symlinks_off, tenants_off],
        skips = {
            host_fifo_is_never_opened: "the parts are StateBackends, which hold no special files (the fixture lends no host access)",
            limits_max_results_caps_every_listing: "max_results is 10000; the suite creates at most 1000 files to exceed it (the mounted variants lower it)",
        },
    );
}

/// (b) again, seen through an adapter that makes the mount point "/": the
/// scenarios about "/" itself (ls of an empty root, writing or deleting "/")
/// then run against the mount point.
mod rebased {
    use super::*;

    async fn make_fixture() -> Fixture {
        fixture(
            |part| {
                Box::pin(async move {
                    Arc::new(Rebase {
                        inner: Arc::new(mounted(part).await) as Arc<dyn Backend>,
                        prefix: VPath::parse("/m").unwrap(),
                    }) as Arc<dyn Backend>
                })
            },
            mounted_limits(),
            "/",
            "/",
        )
        .await
    }

    burrow_conformance::conformance_suite!(make_fixture,
        capability_skips = [effect_keys_off, empty_dirs_off, exec_off, symlinks_off, tenants_off],
        skips = {
            host_fifo_is_never_opened: "the parts are StateBackends, which hold no special files (the fixture lends no host access)",
        },
    );
}

/// The geometries the suite runs in hold their mount points as directories no
/// change can remove: in the nested variant "/m" holds the mount "/m/n", so
/// deleting it (or a tree above it) is DirectoryNotEmpty or a mount-point
/// refusal, and nothing in any part is removed; making a mount point, or the
/// directory a mount implies, is "already exists" without `parents`, a no-op
/// with it. The generic scenarios cannot reach this, because each works beneath
/// one mount point.
mod mount_geometry {
    use super::*;
    use burrow_backend::ErrorKind;

    fn p(path: &str) -> VPath {
        VPath::parse(path).unwrap()
    }

    async fn file_count(backend: &dyn Backend, under: &str) -> usize {
        let ctx = FileContext::default();
        let found = backend.glob(&ctx, "*", &p(under), 1000).await.unwrap();
        assert!(!found.truncated);
        found.files.len()
    }

    #[tokio::test]
    async fn a_tree_holding_a_mount_point_cannot_be_deleted() {
        let part = StateBackend::new();
        let ctx = FileContext::default();
        part.write(&ctx, &p("/inside.txt"), "kept\n").await.unwrap();
        let c = nested(part.clone()).await;
        let before = file_count(&c, "/").await;
        assert_eq!(
            before, 1,
            "the nested variant shadows the other parts' files"
        );

        let e = c.delete_tree(&ctx, &p("/m")).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidPath, "{}", e.message());
        assert!(e.message().contains("mount point"), "{}", e.message());
        let e = c.delete_tree(&ctx, &p("/m/n")).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidPath, "{}", e.message());
        assert_eq!(
            file_count(&c, "/").await,
            before,
            "a refusal removes nothing"
        );
        assert_eq!(file_count(&part, "/").await, 1);

        let c = mounted(StateBackend::with_limits(mounted_limits())).await;
        for mount in ["/m", "/zz_mount"] {
            let e = c.make_dir(&ctx, &p(mount), false).await.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::AlreadyExists, "mkdir {mount}");
            c.make_dir(&ctx, &p(mount), true).await.unwrap();
        }
    }

    #[tokio::test]
    async fn a_directory_above_a_mount_point_is_not_empty() {
        let default = StateBackend::new();
        let ctx = FileContext::default();
        default
            .write(&ctx, &p("/top/own.txt"), "own\n")
            .await
            .unwrap();
        let c = CompositeBackend::builder(Arc::new(default.clone()))
            .mount("/top/deep/m", Arc::new(nested(StateBackend::new()).await))
            .build()
            .expect("a valid composite");
        for above in ["/top", "/top/deep"] {
            let e = c.delete_tree(&ctx, &p(above)).await.unwrap_err();
            assert_eq!(
                e.kind(),
                ErrorKind::DirectoryNotEmpty,
                "{above}: {}",
                e.message()
            );
            assert!(e.message().starts_with(above), "{}", e.message());
        }
        assert_eq!(
            file_count(&default, "/").await,
            1,
            "a refusal removes nothing"
        );
        let e = c.make_dir(&ctx, &p("/top/deep"), false).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::AlreadyExists);
    }
}
