//! The one integration-test binary of burrow-runtime: modules only, in `tests/all/`.

#[cfg(test)]
mod all {
    mod agent;
    mod call_ids;
    mod capability;
    mod checkpoint;
    mod compaction;
    #[cfg(feature = "failpoints")]
    mod crash;
    mod delete_tool;
    mod faulty;
    mod golden;
    mod guard;
    mod hook_events;
    mod hooks;
    mod instructions;
    mod live;
    #[cfg(feature = "mcp")]
    mod mcp;
    #[cfg(feature = "mcp")]
    mod mcp_servers;
    mod memory;
    #[cfg(feature = "otel")]
    mod metrics;
    mod model;
    mod pipeline;
    mod rewind;
    mod runner;
    mod runner_remote;
    mod schema;
    mod session;
    mod skills;
    mod skills_allowed_tools;
    mod spans;
    mod spill;
    mod subagent;
    mod subagent_ask;
    mod subagent_background;
    mod subagent_compaction;
    mod support;
    mod team;
    mod tool;
    mod toolset;
    mod uploads;
    mod uploads_resumed;
}
