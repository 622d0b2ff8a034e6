//! The shared conformance suite and the model check, each on a fresh temporary folder.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use burrow_backend::{Backend, VPath};
use burrow_conformance::{Fixture, HostAccess, StoreAccess};
use burrow_fs::{FsBackend, FsOptions};

/// Lends the suite the host beneath the backend: real symlinks and FIFOs in the root folder.
struct Host {
    root: PathBuf,
}

impl Host {
    fn at(&self, path: &VPath) -> PathBuf {
        self.root.join(path.as_str().trim_start_matches('/'))
    }
}

impl HostAccess for Host {
    fn symlink(&self, link: &VPath, target: &Path) -> io::Result<()> {
        std::os::unix::fs::symlink(target, self.at(link))
    }

    fn fifo(&self, path: &VPath) -> io::Result<()> {
        let status = std::process::Command::new("mkfifo")
            .arg(self.at(path))
            .status()?;
        if status.success() {
            Ok(())
        } else {
            Err(io::Error::other("mkfifo failed"))
        }
    }

    fn host_root(&self) -> Option<String> {
        Some(self.root.to_string_lossy().into_owned())
    }
}

/// Lends the suite the folder beneath the backend: a file planted past the max
/// file size is written there directly. A folder keeps no `created_at` (a
/// replacing write renames a new file into place), so that hook is left out.
struct Folder {
    root: PathBuf,
    backend: Arc<FsBackend>,
}

impl StoreAccess for Folder {
    fn plant(&self, path: &VPath, bytes: &[u8]) -> io::Result<Arc<dyn Backend>> {
        let at = self.root.join(path.as_str().trim_start_matches('/'));
        if let Some(parent) = at.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(at, bytes)?;
        Ok(self.backend.clone())
    }
}

/// Every scenario runs with the default options but for `max_results`,
/// lowered to the most the suite will create files to exceed (so the
/// max-results scenario runs rather than skips).
async fn make_fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let backend =
        Arc::new(FsBackend::open_with(&root, FsOptions::default().with_max_results(1000)).unwrap());
    let folder = Folder {
        root: root.clone(),
        backend: backend.clone(),
    };
    Fixture::with_guard(backend, dir)
        .with_host(Host { root })
        .with_store(folder)
}

burrow_conformance::conformance_suite!(make_fixture,
    capability_skips = [empty_dirs_on, effect_keys_off, exec_off, tenants_off],
    skips = {
        write_replace_keeps_created_at: "a folder keeps no created_at: a replacing write renames a new file into place (ADR 0061)",
    },
);
