//! The shared conformance suite on a `LocalFileSystem` store in a temporary folder per scenario.

use std::sync::Arc;

use burrow_conformance::Fixture;
use burrow_object_store::{ObjectStoreBackend, ObjectStoreOptions};

async fn make_fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("temp dir");
    let options = ObjectStoreOptions::default().with_max_results(200);
    let backend = ObjectStoreBackend::local_with(dir.path(), options).expect("backend");
    Fixture::with_guard(Arc::new(backend), dir)
}

burrow_conformance::conformance_suite!(make_fixture, skips = {
    limits_read_past_max_size_is_too_large: "the fixture lends no store access to plant a file past the max file size (Fixture::with_store)",
    write_replace_keeps_created_at: "the fixture lends no store access to read created_at (Fixture::with_store)",
    delete_empty_directory_still_blocks_files: "directories are implicit here (capability empty_dirs is off)",
    delete_last_file_keeps_empty_directory: "directories are implicit here (capability empty_dirs is off)",
    host_fifo_is_never_opened: "the fixture lends no host access to make a FIFO (Fixture::with_host)",
    sandbox_command_files_are_visible: "the backend does not run commands (capability exec is off)",
    sandbox_cwd_is_the_workspace: "the backend does not run commands (capability exec is off)",
    sandbox_exit_codes: "the backend does not run commands (capability exec is off)",
    sandbox_fifo_is_never_opened: "the backend does not run commands (capability exec is off)",
    sandbox_flood_stays_bounded: "the backend does not run commands (capability exec is off)",
    sandbox_output_interleaves_stderr: "the backend does not run commands (capability exec is off)",
    sandbox_output_is_capped: "the backend does not run commands (capability exec is off)",
    sandbox_timeout_exits_124_with_note: "the backend does not run commands (capability exec is off)",
    sandbox_timeout_kills_background_children: "the backend does not run commands (capability exec is off)",
    symlinks_climbing_relative_link_is_refused: "the backend cannot hold symbolic links (capability symlinks is off)",
    symlinks_leading_out_are_refused: "the backend cannot hold symbolic links (capability symlinks is off)",
});
