//! The shared conformance suite and the model check, each on a fresh temporary folder.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use burrow_backend::VPath;
use burrow_conformance::{Fixture, HostAccess};
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

/// Every scenario runs with the default options but for `max_results`,
/// lowered to the most the suite will create files to exceed (so the
/// max-results scenario runs rather than skips).
async fn make_fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let backend = FsBackend::open_with(&root, FsOptions::default().with_max_results(1000)).unwrap();
    Fixture::with_guard(Arc::new(backend), dir).with_host(Host { root })
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
    sandbox_command_files_are_visible: "the backend does not run commands (capability exec is off)",
    sandbox_cwd_is_the_workspace: "the backend does not run commands (capability exec is off)",
    sandbox_exit_codes: "the backend does not run commands (capability exec is off)",
    sandbox_fifo_is_never_opened: "the backend does not run commands (capability exec is off)",
    sandbox_flood_stays_bounded: "the backend does not run commands (capability exec is off)",
    sandbox_output_interleaves_stderr: "the backend does not run commands (capability exec is off)",
    sandbox_output_is_capped: "the backend does not run commands (capability exec is off)",
    sandbox_timeout_exits_124_with_note: "the backend does not run commands (capability exec is off)",
    sandbox_timeout_kills_background_children: "the backend does not run commands (capability exec is off)",
    tenants_glob_and_grep_see_nothing: "the backend does not scope files by tenant (capability tenants is off)",
    tenants_ls_looks_missing: "the backend does not scope files by tenant (capability tenants is off)",
    tenants_mutations_look_missing: "the backend does not scope files by tenant (capability tenants is off)",
    tenants_read_looks_missing: "the backend does not scope files by tenant (capability tenants is off)",
    tenants_same_path_is_independent: "the backend does not scope files by tenant (capability tenants is off)",
});
