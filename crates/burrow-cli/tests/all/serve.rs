//! `burrow serve` through the binary: `serve token add` prints a token once and appends its line; a server on a SQLite session answers that token through reqwest, shares its threads with `burrow thread show`, and shuts down on SIGTERM; `--pg-pool` is refused when 0 or no number, and a server on the real PostgreSQL with it answers.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::support::{burrow_in, script, session_spec};

#[test]
fn token_add_prints_a_token_once_and_appends_its_hash_line() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    let tokens_arg = tokens.to_str().unwrap();
    let first = burrow_in(
        dir.path(),
        &[
            "serve", "token", "add", "--tokens", tokens_arg, "--tenant", "acme", "--name", "alice",
        ],
        b"",
    );
    first.assert_code(0);
    let token = first.out().trim().to_owned();
    assert!(token.starts_with("bt_") && token.len() == 67, "{token}");
    let second = burrow_in(
        dir.path(),
        &[
            "--json", "serve", "token", "add", "--tokens", tokens_arg, "--tenant", "beta",
            "--name", "bob",
        ],
        b"",
    );
    second.assert_code(0);
    assert_eq!(second.json()["tenant"], "beta");
    let text = std::fs::read_to_string(&tokens).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(lines[0].ends_with(" acme alice"));
    assert_eq!(lines[0].split(' ').next().unwrap().len(), 64);
    // The token itself is never written down.
    assert!(!text.contains(&token[3..]));
    let bad = burrow_in(
        dir.path(),
        &[
            "serve", "token", "add", "--tokens", tokens_arg, "--tenant", "a b", "--name", "x",
        ],
        b"",
    );
    bad.assert_code(2);
    assert_eq!(std::fs::read_to_string(&tokens).unwrap(), text);
}

#[test]
fn serve_without_tokens_or_session_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let model = script(dir.path(), "m.jsonl", &[json!({"text": "hi"})]);
    let run = burrow_in(
        dir.path(),
        &[
            "serve",
            "--model",
            &model,
            "--session",
            &session_spec(dir.path()),
        ],
        b"",
    );
    run.assert_code(2);
    let empty = dir.path().join("tokens");
    std::fs::write(&empty, "").unwrap();
    let run = burrow_in(
        dir.path(),
        &[
            "serve",
            "--model",
            &model,
            "--session",
            &session_spec(dir.path()),
            "--tokens",
            empty.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ],
        b"",
    );
    run.assert_code(2);
}

#[test]
fn a_pg_pool_of_zero_or_no_number_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let model = script(dir.path(), "m.jsonl", &[json!({"text": "hi"})]);
    let tokens = dir.path().join("tokens");
    for bad in ["0", "many", "-3"] {
        let run = burrow_in(
            dir.path(),
            &[
                "serve",
                "--model",
                &model,
                "--session",
                &session_spec(dir.path()),
                "--tokens",
                tokens.to_str().unwrap(),
                "--listen",
                "127.0.0.1:0",
                &format!("--pg-pool={bad}"),
            ],
            b"",
        );
        run.assert_code(2);
        let first = run.stderr.lines().next().unwrap_or_default();
        assert!(first.starts_with("burrow: "), "{bad}: {}", run.stderr);
        assert!(first.contains("--pg-pool"), "{bad}: {}", run.stderr);
        // Refused before anything was opened.
        assert!(!dir.path().join("session.db").exists(), "{bad}");
    }
}

#[test]
fn a_served_thread_runs_is_shown_by_the_cli_and_sigterm_ends_the_server() {
    let dir = tempfile::tempdir().unwrap();
    served_thread_runs(dir.path(), &session_spec(dir.path()), &[]);
}

/// Needs the real PostgreSQL server (BURROW_POSTGRES_URL).
mod postgres {
    use burrow_testkit::{Part, require};

    #[test]
    fn a_server_on_postgresql_with_a_pg_pool_answers() {
        let url = require(Part::Postgres);
        let dir = tempfile::tempdir().unwrap();
        super::served_thread_runs(dir.path(), &url, &["--pg-pool", "8"]);
    }
}

/// Serves `session` with `extra` options, runs thread t1 through the API as a fresh
/// tenant's token, checks `burrow thread show` sees it under that tenant only, and ends the
/// server with SIGTERM.
fn served_thread_runs(dir: &std::path::Path, session: &str, extra: &[&str]) {
    // Unique on a PostgreSQL other tests share.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let tenant = format!("acme{}x{nanos}", std::process::id());
    let tenant = tenant.as_str();
    let thread = format!("t{nanos}");
    let thread = thread.as_str();
    let tokens = dir.join("tokens");
    let add = burrow_in(
        dir,
        &[
            "--tenant",
            tenant,
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
    let model = script(dir, "m.jsonl", &[json!({"text": "served hello"})]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_burrow"))
        .args([
            "serve",
            "--session",
            session,
            "--model",
            &model,
            "--tokens",
            tokens.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ])
        .args(extra)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let base = line
        .trim()
        .strip_prefix("burrow: serving on ")
        .unwrap_or_else(|| panic!("{line}"))
        .to_owned();
    let client = reqwest::blocking::Client::new();
    let unauthorized = client.get(format!("{base}/v1/threads")).send().unwrap();
    assert_eq!(unauthorized.status().as_u16(), 401);
    let posted: Value = client
        .post(format!("{base}/v1/threads/{thread}/messages"))
        .bearer_auth(&token)
        .json(&json!({"content": "hello there"}))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(posted["action"], "started");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let view: Value = client
            .get(format!("{base}/v1/threads/{thread}"))
            .bearer_auth(&token)
            .send()
            .unwrap()
            .json()
            .unwrap();
        if view["runs"][0]["status"] == "completed" {
            break;
        }
        assert!(Instant::now() < deadline, "{view}");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The CLI sees the server's thread under the token's tenant.
    let shown = {
        let run = burrow_in(
            dir,
            &[
                "--json",
                "--tenant",
                tenant,
                "thread",
                "show",
                thread,
                "--session",
                session,
            ],
            b"",
        );
        run.assert_code(0);
        run.json()
    };
    assert!(shown["history"].to_string().contains("served hello"));
    // Not under another tenant's.
    let other = burrow_in(
        dir,
        &["--json", "thread", "show", thread, "--session", session],
        b"",
    );
    other.assert_code(1);
    let sent = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
}
