//! Shared test helpers: a temporary folder with a workspace root and an outside secret beside it.

use std::path::{Path, PathBuf};

use burrow_backend::{Error, ErrorKind, FileContext, VPath};
use burrow_fs::{FsBackend, FsOptions};
use tempfile::TempDir;

/// What the outside file holds: no read, grep or glob may ever return it.
pub const SECRET: &str = "SECRET-OUTSIDE-THE-ROOT";

/// A temporary folder holding `root/` (the workspace) and `outside/secret.txt`.
pub struct World {
    pub tmp: TempDir,
    pub backend: FsBackend,
}

impl World {
    pub fn new() -> World {
        World::with_options(FsOptions::default())
    }

    pub fn with_options(options: FsOptions) -> World {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("root")).unwrap();
        std::fs::create_dir(tmp.path().join("outside")).unwrap();
        std::fs::write(tmp.path().join("outside/secret.txt"), format!("{SECRET}\n")).unwrap();
        let backend = FsBackend::open_with(tmp.path().join("root"), options).unwrap();
        World { tmp, backend }
    }

    /// The host path of the workspace root.
    pub fn root(&self) -> PathBuf {
        self.tmp.path().join("root")
    }

    /// The host path of the folder beside the root.
    pub fn outside(&self) -> PathBuf {
        self.tmp.path().join("outside")
    }

    /// The host path of `rel` inside the root.
    pub fn host(&self, rel: &str) -> PathBuf {
        self.root().join(rel)
    }

    /// Makes the root-relative `link` a symbolic link to `target`.
    pub fn symlink(&self, target: impl AsRef<Path>, link: &str) {
        std::os::unix::fs::symlink(target, self.host(link)).unwrap();
    }

    /// Writes a file on the host, creating parents.
    pub fn put(&self, rel: &str, content: &str) {
        let path = self.host(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    /// Asserts that `err` names no host path of this world.
    pub fn assert_no_host_path(&self, err: &Error) {
        let tmp = self.tmp.path().to_string_lossy().to_string();
        assert!(
            !err.message().contains(&tmp),
            "message shows a host path: {}",
            err.message()
        );
        assert!(
            !err.message().contains("/tmp"),
            "message shows a host path: {}",
            err.message()
        );
    }

    /// Asserts the outside secret is still exactly as written.
    pub fn assert_outside_intact(&self) {
        let got = std::fs::read_to_string(self.outside().join("secret.txt")).unwrap();
        assert_eq!(got, format!("{SECRET}\n"));
        let names: Vec<_> = std::fs::read_dir(self.outside())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(
            names,
            ["secret.txt"],
            "something was created outside the root"
        );
    }
}

pub fn ctx() -> FileContext {
    FileContext::default()
}

pub fn p(path: &str) -> VPath {
    VPath::parse(path).unwrap()
}

/// Asserts `result` is a refusal of `kind`.
#[track_caller]
pub fn assert_refused<T: std::fmt::Debug>(result: Result<T, Error>, kind: ErrorKind) -> Error {
    match result {
        Ok(v) => panic!("expected a {kind} refusal, got {v:?}"),
        Err(e) => {
            assert_eq!(e.kind(), kind, "wrong kind: {}", e.message());
            assert!(e.is_refusal());
            e
        }
    }
}
