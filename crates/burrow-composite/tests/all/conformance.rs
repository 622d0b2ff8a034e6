//! The conformance suite on composites: alone, inside a mount beside another, and inside a nested mount over shadowed files.
//!
//! Each variant is its own module with its own `conformance_suite!`
//! invocation (the generated tests are plain items named after the
//! scenarios, so modules keep them apart). The scenarios work beneath the
//! fixture's root; in the mounted variants that root is a mount point whose
//! prefix, in the default (and in the outer mount), already holds files the
//! mount must shadow: if shadowing leaked, the scenarios would see them.

use std::sync::Arc;

use burrow_backend::{Backend, FileContext, Limits, VPath};
use burrow_composite::CompositeBackend;
use burrow_conformance::Fixture;
use burrow_state::StateBackend;

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

/// (b) A composite with mounts at "/m" and "/zz_mount"; the default holds
/// files under "/m". The scenarios run beneath "/m". Every part caps results
/// at 500, so the limit scenarios run too (lower breaks scenarios that list 64 files).
async fn mounted() -> CompositeBackend {
    let limits = Limits {
        max_results: 500,
        ..Limits::default()
    };
    let default = with_shadowed(&StateBackend::with_limits(limits), "/m").await;
    let unrelated = with_shadowed(&StateBackend::with_limits(limits), "/").await;
    CompositeBackend::builder(Arc::new(default))
        .mount("/m", Arc::new(StateBackend::with_limits(limits)))
        .mount("/zz_mount", Arc::new(unrelated))
        .build()
        .expect("a valid composite")
}

/// (c) Nested mounts at "/m" and "/m/n"; the default holds files under
/// "/m/n" and the outer mount under its "/n". The scenarios run beneath "/m/n".
async fn nested() -> CompositeBackend {
    let default = with_shadowed(&StateBackend::new(), "/m/n").await;
    let outer = with_shadowed(&StateBackend::new(), "/n").await;
    CompositeBackend::builder(Arc::new(default))
        .mount("/m", Arc::new(outer))
        .mount("/m/n", Arc::new(StateBackend::new()))
        .build()
        .expect("a valid composite")
}

/// (a) A composite with nothing mounted: the default alone.
mod alone {
    use super::*;

    async fn make_fixture() -> Fixture {
        let c = CompositeBackend::builder(Arc::new(StateBackend::new()))
            .build()
            .expect("a valid composite");
        Fixture::new(Arc::new(c))
    }

    burrow_conformance::conformance_suite!(make_fixture, skips = {
        limits_read_past_max_size_is_too_large: "the fixture lends no store access to plant a file past the max file size (Fixture::with_store)",
        write_replace_keeps_created_at: "the fixture lends no store access to read created_at (Fixture::with_store)",
        delete_empty_directory_still_blocks_files: "directories are implicit here (capability empty_dirs is off)",
        delete_last_file_keeps_empty_directory: "directories are implicit here (capability empty_dirs is off)",
        host_fifo_is_never_opened: "the fixture lends no host access to make a FIFO (Fixture::with_host)",
        limits_max_results_caps_every_listing: "max_results is 10000; the suite creates at most 1000 files to exceed it (a fixture may lower it)",
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
        symlinks_climbing_relative_link_is_refused: "the backend cannot hold symbolic links (capability symlinks is off)",
        symlinks_leading_out_are_refused: "the backend cannot hold symbolic links (capability symlinks is off)",
        tenants_glob_and_grep_see_nothing: "the backend does not scope files by tenant (capability tenants is off)",
        tenants_ls_looks_missing: "the backend does not scope files by tenant (capability tenants is off)",
        tenants_mutations_look_missing: "the backend does not scope files by tenant (capability tenants is off)",
        tenants_read_looks_missing: "the backend does not scope files by tenant (capability tenants is off)",
        tenants_same_path_is_independent: "the backend does not scope files by tenant (capability tenants is off)",
    });
}

/// (b) Beneath the mount at "/m", beside "/zz_mount", over a default with files under "/m".
mod in_mount {
    use super::*;

    async fn make_fixture() -> Fixture {
        let c = mounted().await;
        Fixture::new(Arc::new(c)).with_root(VPath::parse("/m").unwrap())
    }

    burrow_conformance::conformance_suite!(make_fixture, skips = {
        limits_read_past_max_size_is_too_large: "the fixture lends no store access to plant a file past the max file size (Fixture::with_store)",
        write_replace_keeps_created_at: "the fixture lends no store access to read created_at (Fixture::with_store)",
        delete_empty_directory_still_blocks_files: "directories are implicit here (capability empty_dirs is off)",
        delete_last_file_keeps_empty_directory: "directories are implicit here (capability empty_dirs is off)",
        host_fifo_is_never_opened: "the fixture lends no host access to make a FIFO (Fixture::with_host)",
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
        symlinks_climbing_relative_link_is_refused: "the backend cannot hold symbolic links (capability symlinks is off)",
        symlinks_leading_out_are_refused: "the backend cannot hold symbolic links (capability symlinks is off)",
        tenants_glob_and_grep_see_nothing: "the backend does not scope files by tenant (capability tenants is off)",
        tenants_ls_looks_missing: "the backend does not scope files by tenant (capability tenants is off)",
        tenants_mutations_look_missing: "the backend does not scope files by tenant (capability tenants is off)",
        tenants_read_looks_missing: "the backend does not scope files by tenant (capability tenants is off)",
        tenants_same_path_is_independent: "the backend does not scope files by tenant (capability tenants is off)",
    });
}

/// (c) Beneath the nested mount at "/m/n", over files in the default and in the outer mount.
mod in_nested_mount {
    use super::*;

    async fn make_fixture() -> Fixture {
        let c = nested().await;
        Fixture::new(Arc::new(c)).with_root(VPath::parse("/m/n").unwrap())
    }

    burrow_conformance::conformance_suite!(make_fixture, skips = {
        limits_read_past_max_size_is_too_large: "the fixture lends no store access to plant a file past the max file size (Fixture::with_store)",
        write_replace_keeps_created_at: "the fixture lends no store access to read created_at (Fixture::with_store)",
        delete_empty_directory_still_blocks_files: "directories are implicit here (capability empty_dirs is off)",
        delete_last_file_keeps_empty_directory: "directories are implicit here (capability empty_dirs is off)",
        host_fifo_is_never_opened: "the fixture lends no host access to make a FIFO (Fixture::with_host)",
        limits_max_results_caps_every_listing: "max_results is 10000; the suite creates at most 1000 files to exceed it (a fixture may lower it)",
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
        symlinks_climbing_relative_link_is_refused: "the backend cannot hold symbolic links (capability symlinks is off)",
        symlinks_leading_out_are_refused: "the backend cannot hold symbolic links (capability symlinks is off)",
        tenants_glob_and_grep_see_nothing: "the backend does not scope files by tenant (capability tenants is off)",
        tenants_ls_looks_missing: "the backend does not scope files by tenant (capability tenants is off)",
        tenants_mutations_look_missing: "the backend does not scope files by tenant (capability tenants is off)",
        tenants_read_looks_missing: "the backend does not scope files by tenant (capability tenants is off)",
        tenants_same_path_is_independent: "the backend does not scope files by tenant (capability tenants is off)",
    });
}

/// (b) again, seen through an adapter that makes the mount point "/": the
/// scenarios about "/" itself (ls of an empty root, writing or deleting "/")
/// then run against the mount point.
mod rebased {
    use super::*;

    async fn make_fixture() -> Fixture {
        let rebased = Rebase {
            inner: Arc::new(mounted().await) as Arc<dyn Backend>,
            prefix: VPath::parse("/m").unwrap(),
        };
        Fixture::new(Arc::new(rebased))
    }

    burrow_conformance::conformance_suite!(make_fixture, skips = {
        limits_read_past_max_size_is_too_large: "the fixture lends no store access to plant a file past the max file size (Fixture::with_store)",
        write_replace_keeps_created_at: "the fixture lends no store access to read created_at (Fixture::with_store)",
        delete_empty_directory_still_blocks_files: "directories are implicit here (capability empty_dirs is off)",
        delete_last_file_keeps_empty_directory: "directories are implicit here (capability empty_dirs is off)",
        host_fifo_is_never_opened: "the fixture lends no host access to make a FIFO (Fixture::with_host)",
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
        symlinks_climbing_relative_link_is_refused: "the backend cannot hold symbolic links (capability symlinks is off)",
        symlinks_leading_out_are_refused: "the backend cannot hold symbolic links (capability symlinks is off)",
        tenants_glob_and_grep_see_nothing: "the backend does not scope files by tenant (capability tenants is off)",
        tenants_ls_looks_missing: "the backend does not scope files by tenant (capability tenants is off)",
        tenants_mutations_look_missing: "the backend does not scope files by tenant (capability tenants is off)",
        tenants_read_looks_missing: "the backend does not scope files by tenant (capability tenants is off)",
        tenants_same_path_is_independent: "the backend does not scope files by tenant (capability tenants is off)",
    });
}
