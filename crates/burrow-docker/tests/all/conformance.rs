//! The shared conformance suite and the model check, each scenario on a fresh container.

use std::io;
use std::path::Path;
use std::sync::Arc;

use burrow_backend::VPath;
use burrow_conformance::{Fixture, HostAccess};
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

/// A fresh container per scenario, removed when the scenario ends.
async fn make_fixture() -> Fixture {
    let sandbox =
        support::sandbox_with(support::options("conformance").with_max_results(1000)).await;
    let host = Container {
        id: sandbox.id().to_owned(),
        work_dir: sandbox.work_dir().to_owned(),
    };
    let removal = Removal(sandbox.id().to_owned());
    let backend: Arc<DockerSandbox> = Arc::new(sandbox);
    Fixture::with_guard(backend, removal).with_host(host)
}

burrow_conformance::conformance_suite!(make_fixture, skips = {
    limits_read_past_max_size_is_too_large: "the fixture lends no store access to plant a file past the max file size (Fixture::with_store)",
    write_replace_keeps_created_at: "the fixture lends no store access to read created_at (Fixture::with_store)",
    delete_last_file_removes_implicit_directories: "the backend keeps empty directories (capability empty_dirs is on)",
    replay_delete_returns_recorded_outcome: "the backend does not record effect keys (capability effect_keys is off; the runtime guards retries)",
    replay_different_key_applies_again: "the backend does not record effect keys (capability effect_keys is off; the runtime guards retries)",
    replay_edit_returns_recorded_outcome: "the backend does not record effect keys (capability effect_keys is off; the runtime guards retries)",
    replay_keys_are_per_tenant: "the backend does not record effect keys (capability effect_keys is off; the runtime guards retries)",
    replay_write_same_key_applies_once: "the backend does not record effect keys (capability effect_keys is off; the runtime guards retries)",
    tenants_glob_and_grep_see_nothing: "the backend does not scope files by tenant (capability tenants is off)",
    tenants_ls_looks_missing: "the backend does not scope files by tenant (capability tenants is off)",
    tenants_mutations_look_missing: "the backend does not scope files by tenant (capability tenants is off)",
    tenants_read_looks_missing: "the backend does not scope files by tenant (capability tenants is off)",
    tenants_same_path_is_independent: "the backend does not scope files by tenant (capability tenants is off)",
});
