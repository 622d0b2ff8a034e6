//! The shared conformance suite and the model check, each scenario on a fresh container.

use std::io;
use std::path::Path;
use std::sync::Arc;

use burrow_backend::{Backend, VPath};
use burrow_conformance::{Fixture, HostAccess, StoreAccess};
use burrow_docker::DockerSandbox;

use super::support::{self, Removal};

/// Lends the suite the container beneath the backend: symlinks and FIFOs made inside it.
struct Container {
    id: String,
    work_dir: String,
}

impl Container {
    fn at(&self, path: &VPath) -> String {
        format!("{}{}", self.work_dir, path)
    }

    /// Runs `docker exec` as root with `argv` (test setup only).
    fn exec(&self, argv: &[&str]) -> io::Result<()> {
        let status = std::process::Command::new("docker")
            .args(["exec", "-u", "0:0", &self.id])
            .args(argv)
            .status()?;
        if status.success() {
            Ok(())
        } else {
            Err(io::Error::other(format!("docker exec {argv:?} failed")))
        }
    }

    /// Copies the host file or directory `target` to the same absolute path in the container,
    /// so a link to it reaches real content that must never be shown.
    fn mirror(&self, target: &Path) -> io::Result<()> {
        if !target.is_absolute() || !target.exists() {
            return Ok(());
        }
        let parent = target.parent().unwrap_or(Path::new("/"));
        self.exec(&["mkdir", "-p", &parent.to_string_lossy()])?;
        let status = std::process::Command::new("docker")
            .args([
                "cp",
                &target.to_string_lossy(),
                &format!("{}:{}", self.id, target.to_string_lossy()),
            ])
            .status()?;
        if status.success() {
            Ok(())
        } else {
            Err(io::Error::other("docker cp failed"))
        }
    }
}

impl Container {
    /// Writes `bytes` to `path` in the container (parents made), past any limit of the backend.
    fn put(&self, path: &VPath, bytes: &[u8]) -> io::Result<()> {
        use std::io::Write;
        let at = self.at(path);
        let mut child = std::process::Command::new("docker")
            .args(["exec", "-i", &self.id, "sh", "-c"])
            .arg(r#"mkdir -p "$(dirname "$1")" && cat > "$1""#)
            .args(["sh", &at])
            .stdin(std::process::Stdio::piped())
            .spawn()?;
        let mut stdin = child
            .stdin
            .take()
            .ok_or_else(|| io::Error::other("no stdin for docker exec"))?;
        stdin.write_all(bytes)?;
        drop(stdin);
        if child.wait()?.success() {
            Ok(())
        } else {
            Err(io::Error::other(format!("docker exec writing {at} failed")))
        }
    }
}

/// Lends the suite the container's file system: a file planted past the max file
/// size is written inside it. Files in a container have no created_at burrow keeps.
struct Planter {
    container: Container,
    backend: Arc<DockerSandbox>,
}

impl StoreAccess for Planter {
    fn plant(&self, path: &VPath, bytes: &[u8]) -> io::Result<Arc<dyn Backend>> {
        self.container.put(path, bytes)?;
        Ok(self.backend.clone())
    }
}

impl HostAccess for Container {
    fn symlink(&self, link: &VPath, target: &Path) -> io::Result<()> {
        self.mirror(target)?;
        self.exec(&["ln", "-s", &target.to_string_lossy(), &self.at(link)])
    }

    fn fifo(&self, path: &VPath) -> io::Result<()> {
        self.exec(&["mkfifo", &self.at(path)])
    }

    fn host_root(&self) -> Option<String> {
        Some(self.work_dir.clone())
    }
}

/// Low enough that the limits scenario exceeds it with few writes (each a round
/// trip to the engine: 1,001 of them outlasted the scenario guard on a loaded
/// machine), and at least the 100 the suite asks for.
const MAX_RESULTS: usize = 200;

/// A fresh container per scenario, removed when the scenario ends.
async fn make_fixture() -> Fixture {
    let sandbox =
        support::sandbox_with(support::options("conformance").with_max_results(MAX_RESULTS)).await;
    let container = || Container {
        id: sandbox.id().to_owned(),
        work_dir: sandbox.work_dir().to_owned(),
    };
    let (host, planter) = (container(), container());
    let removal = Removal(sandbox.id().to_owned());
    let backend: Arc<DockerSandbox> = Arc::new(sandbox);
    let planter = Planter {
        container: planter,
        backend: backend.clone(),
    };
    Fixture::with_guard(backend, removal)
        .with_host(host)
        .with_store(planter)
}

burrow_conformance::conformance_suite!(make_fixture,
    capability_skips = [effect_keys_off, empty_dirs_on, tenants_off],
    skips = {
        write_replace_keeps_created_at: "a container's files have no created_at the backend keeps (a replacing write puts a new file)",
    },
);
