//! The one integration-test binary of burrow-cli: modules only, in `tests/all/`; each test runs the real `burrow` executable.

// `cfg(test)` so clippy treats the helper functions as test code too. The
// shared helpers and most modules work on `state:FILE.json`, so a build
// without `state` runs none; each backend's module also needs its feature.
// The s3 and docker modules skip, saying why, without their test servers.
#[cfg(test)]
#[cfg(feature = "state")]
mod all {
    #[cfg(all(feature = "artifacts", feature = "sqlite"))]
    mod artifact;
    mod batch;
    mod commands;
    #[cfg(all(feature = "composite", feature = "fs", feature = "sqlite"))]
    mod composite;
    mod concurrency;
    #[cfg(all(feature = "run", feature = "fs", feature = "sqlite"))]
    mod crash;
    #[cfg(all(feature = "docker", feature = "composite", feature = "sqlite"))]
    mod docker;
    mod exit_codes;
    #[cfg(feature = "fs")]
    mod fs;
    mod help;
    #[cfg(feature = "mcp")]
    mod hostile;
    mod json;
    #[cfg(feature = "mcp")]
    mod mcp;
    #[cfg(feature = "mcp")]
    mod mcp_permissions;
    #[cfg(all(feature = "run", feature = "fs", feature = "sqlite"))]
    mod rewind_workspace;
    #[cfg(feature = "run")]
    mod run;
    #[cfg(all(
        feature = "artifacts",
        feature = "openai",
        feature = "fs",
        feature = "sqlite"
    ))]
    mod run_artifacts;
    #[cfg(all(
        feature = "artifacts",
        feature = "openai",
        feature = "fs",
        feature = "sqlite"
    ))]
    mod run_artifacts_continued;
    #[cfg(all(feature = "run", feature = "sqlite"))]
    mod run_background_tasks;
    #[cfg(all(
        any(feature = "openai", feature = "anthropic"),
        feature = "fs",
        feature = "sqlite"
    ))]
    mod run_compaction;
    #[cfg(all(feature = "run", feature = "fs"))]
    mod run_hooks;
    #[cfg(all(feature = "run", feature = "fs"))]
    mod run_mcp;
    #[cfg(feature = "run")]
    mod run_output;
    #[cfg(feature = "run")]
    mod run_permissions;
    #[cfg(all(any(feature = "openai", feature = "anthropic"), feature = "fs"))]
    mod run_providers;
    #[cfg(all(feature = "run", feature = "fs", feature = "composite"))]
    mod run_skills;
    #[cfg(all(feature = "run", feature = "sqlite"))]
    mod run_task_questions;
    mod run_tasks;
    #[cfg(all(feature = "run", feature = "sqlite"))]
    mod run_team;
    #[cfg(all(feature = "run", feature = "sqlite"))]
    mod run_todos;
    mod run_uploads;
    #[cfg(all(feature = "openai", feature = "fs", feature = "sqlite"))]
    mod run_uploads_resumed;
    #[cfg(feature = "s3")]
    mod s3;
    #[cfg(all(feature = "serve", feature = "sqlite"))]
    mod serve;
    #[cfg(all(feature = "serve", feature = "sqlite"))]
    mod serve_checkpoints;
    #[cfg(all(feature = "serve", feature = "sqlite"))]
    mod serve_settings;
    #[cfg(all(feature = "serve", feature = "sqlite"))]
    mod serve_tasks;
    #[cfg(feature = "run")]
    mod session;
    mod spec_support;
    #[cfg(feature = "sqlite")]
    mod sqlite;
    mod state_file;
    mod state_journal;
    mod support;
    #[cfg(all(feature = "openai", feature = "fs", feature = "sqlite"))]
    mod thread_checkpoint;
    #[cfg(all(feature = "openai", feature = "fs", feature = "sqlite"))]
    mod thread_compact_rewound;
}
