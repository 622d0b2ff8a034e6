//! `burrow mcp --settings FILE` end to end: the official Python MCP SDK (fixture `mcp_permissions_client.py`) cannot read, list, glob or grep a denied folder, nor edit a locked file, with the rules in two layered files; the tool rules and modes, and the PreToolUse/PostToolUse hooks of the settings around each client call.
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

/// The tool rules and modes of `burrow mcp --settings`.
mod tool_rules {
    use super::*;

    /// Through the Python MCP SDK (fixture `mcp_rules_client.py`; `burrow_testkit::Part::McpClient`).
    pub(super) mod mcp_client {
        use super::*;

        /// Runs the fixture over a workspace holding /app/main.rs with `permissions`,
        /// making `calls`; the report: the listed tools and each call's result.
        fn serve(permissions: Value, calls: Value) -> (Value, Workspace) {
            let ws = Workspace::new();
            let (report, _stderr) =
                serve_settings(&ws, json!({ "permissions": permissions }), &[], calls);
            (report, ws)
        }

        /// Runs the fixture over `ws` (given /app/main.rs) with the settings
        /// `settings`, the files `files` (name, text) written beside it, making
        /// `calls`; the report and burrow's stderr.
        pub(crate) fn serve_settings(
            ws: &Workspace,
            settings: Value,
            files: &[(&str, Value)],
            calls: Value,
        ) -> (Value, String) {
            let python = burrow_testkit::require(burrow_testkit::Part::McpClient);
            ws.put("/app/main.rs", "needle main\n");
            for (name, value) in files {
                std::fs::write(ws.dir().join(name), value.to_string()).unwrap();
            }
            let settings_file = ws.dir().join("settings.json");
            std::fs::write(&settings_file, settings.to_string()).unwrap();
            let settings = settings_file;
            let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/mcp_rules_client.py");
            let mut child = Command::new(python)
                .arg(script)
                .arg(env!("CARGO_BIN_EXE_burrow"))
                .arg(&ws.state)
                .arg(&settings)
                .current_dir(ws.dir())
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            use std::io::Write as _;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(calls.to_string().as_bytes())
                .unwrap();
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "the MCP client failed\nstdout: {}\nstderr: {}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            (
                serde_json::from_slice(&out.stdout).unwrap(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            )
        }

        fn listed(report: &Value, name: &str) -> bool {
            report["tools"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t == name)
        }

        #[test]
        fn tool_rules_deny_and_an_ask_is_refused_naming_the_rule() {
            let (report, ws) = serve(
                json!({"deny": ["write_file(/out/**)", "glob"], "ask": ["edit_file"]}),
                json!({
                    "denied": ["write_file", {"file_path": "/out/x.txt", "content": "x"}],
                    "allowed": ["write_file", {"file_path": "/ok.txt", "content": "ok\n"}],
                    "asked": ["edit_file", {"file_path": "/app/main.rs", "old_string": "main", "new_string": "changed"}],
                    "read": ["read_file", {"file_path": "/app/main.rs"}],
                }),
            );
            let results = &report["results"];
            assert!(
                !listed(&report, "glob"),
                "a bare deny withholds the tool: {report}"
            );
            assert!(listed(&report, "write_file"), "{report}");
            assert_eq!(results["denied"]["is_error"], true, "{report}");
            let text = results["denied"]["text"].as_str().unwrap();
            assert!(text.contains("write_file(/out/**)"), "{text}");
            assert_eq!(results["allowed"]["is_error"], false, "{report}");
            assert_eq!(results["asked"]["is_error"], true, "{report}");
            let text = results["asked"]["text"].as_str().unwrap();
            assert!(
                text.contains("edit_file") && text.contains("approval"),
                "{text}"
            );
            assert_eq!(results["read"]["is_error"], false, "{report}");
            // Only the allowed write happened.
            assert_eq!(ws.run(&["cat", "/ok.txt"]).out(), "ok\n");
            ws.run(&["cat", "/out/x.txt"]).assert_code(1);
            assert_eq!(ws.run(&["cat", "/app/main.rs"]).out(), "needle main\n");
        }

        #[test]
        fn plan_mode_offers_no_changing_tool_and_dont_ask_refuses_what_is_not_allowed() {
            let (report, _ws) = serve(
                json!({"defaultMode": "plan"}),
                json!({"read": ["read_file", {"file_path": "/app/main.rs"}]}),
            );
            for name in ["write_file", "edit_file"] {
                assert!(!listed(&report, name), "plan offers no {name}: {report}");
            }
            assert!(listed(&report, "grep"), "{report}");
            assert_eq!(report["results"]["read"]["is_error"], false, "{report}");

            let (report, ws) = serve(
                json!({"allow": ["read_file"], "defaultMode": "dontAsk"}),
                json!({
                    "read": ["read_file", {"file_path": "/app/main.rs"}],
                    "write": ["write_file", {"file_path": "/new.txt", "content": "x"}],
                }),
            );
            let results = &report["results"];
            assert_eq!(results["read"]["is_error"], false, "{report}");
            assert_eq!(results["write"]["is_error"], true, "{report}");
            assert!(
                results["write"]["text"]
                    .as_str()
                    .unwrap()
                    .contains("dontAsk"),
                "{report}"
            );
            ws.run(&["cat", "/new.txt"]).assert_code(1);
        }

        #[test]
        fn bypass_permissions_runs_an_ask_without_approval() {
            let (report, ws) = serve(
                json!({"ask": ["write_file"], "defaultMode": "bypassPermissions"}),
                json!({"write": ["write_file", {"file_path": "/new.txt", "content": "x\n"}]}),
            );
            assert_eq!(report["results"]["write"]["is_error"], false, "{report}");
            assert_eq!(ws.run(&["cat", "/new.txt"]).out(), "x\n");
        }
    }
}

/// The tool hooks of `burrow mcp --settings` (ADR 0367), through the Python MCP SDK.
mod hooks {
    use super::*;

    /// Through the Python MCP SDK (`burrow_testkit::Part::McpClient`).
    mod mcp_client {
        use super::super::tool_rules::mcp_client::serve_settings;
        use super::*;

        fn decision(decision: &str, reason: &str) -> Value {
            json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                "permissionDecision": decision, "permissionDecisionReason": reason}})
        }

        #[test]
        fn pre_and_post_tool_use_hooks_decide_rewrite_and_follow_each_client_call() {
            let ws = Workspace::new();
            ws.put("/app/other.rs", "needle other\n");
            let command =
                |file: &str| json!([{"type": "command", "command": format!("cat {file}")}]);
            let settings = json!({
                "hooks": {
                    "PreToolUse": [
                        {"matcher": "write_file", "hooks": command("deny.json")},
                        {"matcher": "grep", "hooks": command("ask.json")},
                        {"matcher": "read_file", "hooks": command("rewrite.json")}],
                    "PostToolUse": [{"matcher": "ls", "hooks": [{"type": "command",
                        "command": "cat > post-input.json; cat context.json"}]}],
                    "Stop": [{"hooks": [{"type": "command", "command": "touch stop-ran"}]}]},
                "permissions": {"deny": ["edit_file"]}});
            let files = [
                ("deny.json", decision("deny", "no writes today")),
                ("ask.json", decision("ask", "a person reads grep output")),
                (
                    "rewrite.json",
                    json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                        "permissionDecision": "allow", "updatedInput": {"file_path": "/app/other.rs"}}}),
                ),
                (
                    "context.json",
                    json!({"hookSpecificOutput": {"hookEventName": "PostToolUse",
                        "additionalContext": "a hook saw this listing"}}),
                ),
            ];
            let (report, stderr) = serve_settings(
                &ws,
                settings,
                &files,
                json!({
                    "write": ["write_file", {"file_path": "/new.txt", "content": "x"}],
                    "grep": ["grep", {"pattern": "needle"}],
                    "read": ["read_file", {"file_path": "/app/main.rs"}],
                    "ls": ["ls", {"path": "/app"}],
                }),
            );
            let results = &report["results"];
            // A PreToolUse deny refuses the call with its reason; nothing is written.
            assert_eq!(results["write"]["is_error"], true, "{report}");
            assert!(
                results["write"]["text"]
                    .as_str()
                    .unwrap()
                    .contains("denied by a hook: no writes today"),
                "{report}"
            );
            ws.run(&["cat", "/new.txt"]).assert_code(1);
            // An ask is refused: the client cannot approve its own call.
            assert_eq!(results["grep"]["is_error"], true, "{report}");
            let text = results["grep"]["text"].as_str().unwrap();
            assert!(
                text.contains("a person reads grep output") && text.contains("cannot ask"),
                "{text}"
            );
            // An allowed call runs with the hook's updatedInput.
            assert_eq!(results["read"]["is_error"], false, "{report}");
            let text = results["read"]["text"].as_str().unwrap();
            assert!(
                text.contains("needle other") && !text.contains("needle main"),
                "{text}"
            );
            // PostToolUse: its context follows the result; it read the call and the response.
            assert_eq!(results["ls"]["is_error"], false, "{report}");
            let text = results["ls"]["text"].as_str().unwrap();
            assert!(
                text.contains("main.rs") && text.ends_with("a hook saw this listing"),
                "{text}"
            );
            let input: Value = serde_json::from_str(
                &std::fs::read_to_string(ws.dir().join("post-input.json")).unwrap(),
            )
            .unwrap();
            assert_eq!(input["hook_event_name"], "PostToolUse", "{input}");
            assert_eq!(input["tool_name"], "ls", "{input}");
            assert!(
                input["tool_response"]["content"]
                    .as_str()
                    .unwrap()
                    .contains("main.rs"),
                "{input}"
            );
            // The rules still hold beside the hooks; a Stop hook has no run to follow here.
            assert!(
                !report["tools"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|t| t == "edit_file")
            );
            assert!(!ws.dir().join("stop-ran").exists());
            assert!(
                stderr.contains("the settings name Stop hooks, which burrow mcp does not run"),
                "{stderr}"
            );
        }
    }
}
