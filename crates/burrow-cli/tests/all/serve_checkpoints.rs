//! `burrow serve` checkpoints its runs (ADR 0359), through the binary on a SQLite session and a SQLite workspace with a scripted model: a run posted as a token's tenant that rewrites a file leaves a checkpoint holding its earlier bytes, the run's record names the server's workspace, and `burrow thread rewind` as that tenant restores the bytes where the server wrote them (the server's own tenant of the workspace).

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::support::{burrow_in, burrow_in_env, script, session_spec};

/// Bytes no text path would keep.
const ORIGINAL: &[u8] = b"\x00\x01 served bytes\r\n\xff";

#[test]
fn a_served_run_checkpoints_and_thread_rewind_restores_the_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let session = session_spec(dir);
    let workspace = format!("sqlite:{}", dir.join("ws.db").display());
    // The file as it was, in the server's tenant of the workspace (the default).
    let put = burrow_in_env(
        dir,
        &["--backend", &workspace, "write", "/a.txt"],
        ORIGINAL,
        &[],
    );
    put.assert_code(0);
    let tokens = dir.join("tokens");
    let add = burrow_in(
        dir,
        &[
            "--tenant",
            "acme",
            "serve",
            "token",
            "add",
            "--tokens",
            tokens.to_str().unwrap(),
            "--name",
            "alice",
        ],
        b"",
    );
    add.assert_code(0);
    let token = add.out().trim().to_owned();
    let model = script(
        dir,
        "m.jsonl",
        &[
            json!({"tool_calls": [{"id": "r", "name": "read_file",
                "arguments": {"file_path": "/a.txt"}}]}),
            json!({"tool_calls": [{"id": "w", "name": "write_file",
                "arguments": {"file_path": "/a.txt", "content": "served change"}}]}),
            json!({"text": "done"}),
        ],
    );
    let (mut child, base) = super::serve::spawn_serve(
        dir,
        &[
            "--backend",
            &workspace,
            "serve",
            "--session",
            &session,
            "--model",
            &model,
            "--tokens",
            tokens.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ],
    );
    let client = reqwest::blocking::Client::new();
    let posted: Value = client
        .post(format!("{base}/v1/threads/t1/messages"))
        .bearer_auth(&token)
        .json(&json!({"content": "change it"}))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(posted["action"], "started", "{posted}");
    let deadline = Instant::now() + Duration::from_secs(60);
    let view = loop {
        let view: Value = client
            .get(format!("{base}/v1/threads/t1"))
            .bearer_auth(&token)
            .send()
            .unwrap()
            .json()
            .unwrap();
        if view["runs"][0]["status"] == "completed" {
            break view;
        }
        assert!(view["runs"][0]["status"] != "failed", "{view}");
        assert!(Instant::now() < deadline, "{view}");
        std::thread::sleep(Duration::from_millis(50));
    };
    let cat = |tenant: &str| {
        let run = burrow_in(
            dir,
            &["--backend", &workspace, "--tenant", tenant, "cat", "/a.txt"],
            b"",
        );
        run.assert_code(0);
        run.stdout
    };
    assert_eq!(cat("default"), b"served change", "{view}");

    // The run left a checkpoint holding the file's earlier bytes.
    let listed = burrow_in(
        dir,
        &[
            "--json",
            "--tenant",
            "acme",
            "thread",
            "checkpoints",
            "t1",
            "--session",
            &session,
        ],
        b"",
    );
    listed.assert_code(0);
    let ks = listed.json()["checkpoints"].as_array().unwrap().clone();
    assert_eq!(ks.len(), 1, "{ks:?}");
    assert_eq!(ks[0]["files"], json!(["/a.txt"]));
    assert_eq!(ks[0]["metadata"]["tools"], json!(["write_file"]));
    let k = ks[0]["id"].as_str().unwrap().to_owned();

    // The rewind, as the token's tenant, restores the bytes in the server's
    // tenant of the workspace, where the run wrote them.
    let rewound = burrow_in(
        dir,
        &[
            "--backend",
            &workspace,
            "--tenant",
            "acme",
            "--json",
            "thread",
            "rewind",
            "t1",
            "--to",
            &k,
            "--session",
            &session,
        ],
        b"",
    );
    rewound.assert_code(0);
    assert_eq!(rewound.json()["rewound"]["restored"], json!(["/a.txt"]));
    assert_eq!(cat("default"), ORIGINAL);
    // Nothing was written in the token's tenant of the workspace.
    let other = burrow_in(
        dir,
        &[
            "--backend",
            &workspace,
            "--tenant",
            "acme",
            "--json",
            "cat",
            "/a.txt",
        ],
        b"",
    );
    other.assert_json_error(1, "not_found");

    let sent = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    assert_eq!(child.wait().unwrap().code(), Some(0));
}
