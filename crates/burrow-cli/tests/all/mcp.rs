//! `burrow mcp` end to end: the official Python MCP SDK drives the real binary over stdio (fixture `mcp_client.py`).
//!
//! Needs Python with the `mcp` package (`burrow_testkit::Part::McpClient`,
//! `$BURROW_MCP_PYTHON`, exported by `cargo xtask setup`); the test lives in a
//! module named `mcp_client` so `cargo xtask test` can report it as skipped without it.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use super::support::Workspace;

/// The interpreter with the MCP SDK; the test fails, naming the part, without it.
fn python() -> String {
    burrow_testkit::require(burrow_testkit::Part::McpClient)
}

fn client_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp_client.py")
}

fn run_client(ws: &Workspace) -> Value {
    let out = Command::new(python())
        .arg(client_script())
        .arg(env!("CARGO_BIN_EXE_burrow"))
        .arg(&ws.state)
        .current_dir(ws.dir())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the MCP client failed\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The recorded call number `i`, expecting a result (not a protocol error) with `is_error`.
fn result(report: &Value, i: usize, is_error: bool) -> &str {
    let call = &report["calls"][i];
    assert!(call.get("exception").is_none(), "call {i} raised: {call}");
    assert_eq!(call["is_error"], is_error, "call {i}: {call}");
    call["text"].as_str().unwrap()
}

/// The test that needs the MCP SDK (`burrow_testkit::Part::McpClient`).
mod mcp_client {
    use super::*;

    #[test]
    fn an_mcp_client_works_in_a_state_file_workspace() {
        python();
        let ws = Workspace::new();
        ws.put("/seed.txt", "seed\n");
        let report = run_client(&ws);

        let tools: Vec<&str> = report["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap())
            .collect();
        assert_eq!(
            tools,
            [
                "ls",
                "read_file",
                "write_file",
                "edit_file",
                "delete_path",
                "glob",
                "grep"
            ]
        );
        assert_eq!(
            report["schemas"]["edit_file"]["required"],
            serde_json::json!(["file_path", "old_string", "new_string"])
        );

        assert_eq!(
            result(&report, 0, false),
            "Created /notes.md (3 lines, 27 bytes)."
        );
        assert_eq!(
            report["calls"][0]["saved"], true,
            "the write is on disk before the result arrives"
        );
        assert_eq!(
            result(&report, 1, false),
            "     1\t# Notes\n     2\talpha\n     3\tsecond alpha"
        );
        assert_eq!(
            result(&report, 2, false),
            "Edited /notes.md: replaced 1 occurrence."
        );
        assert_eq!(report["calls"][2]["saved"], true);
        assert_eq!(
            result(&report, 3, false),
            "/notes.md:2:alpha\n/notes.md:3:beta"
        );
        assert_eq!(
            result(&report, 4, false),
            "/notes.md:1\n\nTotal: 1 matching line in 1 file."
        );
        assert_eq!(result(&report, 5, false), "/notes.md");
        assert_eq!(
            result(&report, 6, false),
            "/notes.md (19 bytes)\n/seed.txt (5 bytes)"
        );

        // Refusals are tool results with isError, one sentence the model can act on.
        let unread = result(&report, 7, true);
        assert!(unread.contains("not read /seed.txt"), "{unread}");
        assert!(unread.contains("read_file"), "{unread}");
        for i in [8, 9] {
            let text = result(&report, i, true);
            assert!(text.contains("climbs above the root"), "{text}");
        }
        let missing = result(&report, 10, true);
        assert!(missing.contains("/missing.txt does not exist"), "{missing}");
        // Consecutive edits need no re-read: the ledger knows what the agent wrote.
        result(&report, 11, false);

        // Everything the session changed is in the state file, and nothing else.
        let notes = ws.run(&["cat", "/notes.md"]);
        notes.assert_code(0);
        assert_eq!(notes.out(), "# Notes\ngamma\nbeta\n");
        assert_eq!(ws.run(&["cat", "/seed.txt"]).out(), "seed\n");
        let listing = ws.json_ok(&["ls", "/"]);
        assert_eq!(listing["entries"].as_array().unwrap().len(), 2, "{listing}");
    }
}
