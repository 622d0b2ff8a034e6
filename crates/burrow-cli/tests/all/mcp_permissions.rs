//! `burrow mcp --settings FILE` end to end: the official Python MCP SDK (fixture `mcp_permissions_client.py`) cannot read, list, glob or grep a denied folder, nor edit a locked file, with the rules in two layered files.
//!
//! Needs Python with the `mcp` package (`burrow_testkit::Part::McpClient`); the
//! test lives in a module named `mcp_client` so `cargo xtask test` reports it as
//! skipped without it.

use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};

use super::support::Workspace;

/// The test that needs the MCP SDK (`burrow_testkit::Part::McpClient`).
mod mcp_client {
    use super::*;

    #[test]
    fn an_mcp_client_cannot_see_a_denied_folder() {
        let python = burrow_testkit::require(burrow_testkit::Part::McpClient);
        let ws = Workspace::new();
        ws.put("/secrets/key.txt", "needle secret\n");
        ws.put("/app/.env", "needle env\n");
        ws.put("/app/main.rs", "needle main\n");
        let settings = ws.dir().join("settings.json");
        std::fs::write(
            &settings,
            json!({"permissions": {"deny": ["Read(/secrets)", "Read(.env)"]}}).to_string(),
        )
        .unwrap();
        // A second file layered over the first: its rule holds beside the first's.
        let locks = ws.dir().join("locks.json");
        std::fs::write(
            &locks,
            json!({"permissions": {"deny": ["Edit(/app/**)"]}}).to_string(),
        )
        .unwrap();
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/mcp_permissions_client.py");
        let out = Command::new(python)
            .arg(script)
            .arg(env!("CARGO_BIN_EXE_burrow"))
            .arg(&ws.state)
            .arg(&settings)
            .arg(&locks)
            .current_dir(ws.dir())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "the MCP client failed\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        for key in ["read", "write"] {
            assert_eq!(report[key]["is_error"], true, "{key}: {report}");
            let text = report[key]["text"].as_str().unwrap();
            assert!(
                text.contains("permission rule Read(/secrets)"),
                "{key}: {text}"
            );
        }
        for key in ["ls_root", "ls_parent", "glob", "grep"] {
            assert_eq!(report[key]["is_error"], false, "{key}: {report}");
            let text = report[key]["text"].as_str().unwrap();
            assert!(
                !text.contains("secret") && !text.contains(".env"),
                "{key}: {text}"
            );
        }
        assert!(
            report["grep"]["text"]
                .as_str()
                .unwrap()
                .contains("needle main")
        );
        assert_eq!(report["read_ok"]["is_error"], false);
        assert_eq!(report["edit_locked"]["is_error"], true, "{report}");
        let text = report["edit_locked"]["text"].as_str().unwrap();
        assert!(text.contains("permission rule Edit(/app/**)"), "{text}");
        // The files are untouched: the refused write and edit changed nothing.
        let cat = ws.run(&["cat", "/secrets/key.txt"]);
        cat.assert_code(0);
        assert_eq!(cat.out(), "needle secret\n");
        let cat = ws.run(&["cat", "/app/main.rs"]);
        cat.assert_code(0);
        assert_eq!(cat.out(), "needle main\n");
    }
}
