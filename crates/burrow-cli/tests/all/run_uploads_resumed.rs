//! Uploads listed in a later run of a thread (ADR 0296), on a SQLite session and an fs backend with the local OpenAI wire server: a `burrow run --session` without `--upload` lists the file the thread's first run uploaded, described as at upload, and stops listing it once it is deleted.

use burrow_testkit::http::ReplayServer;

use super::run_providers::{KEY, body, burrow, chat};

const MODEL: &str = "openai:gpt-test";
const LISTED: &str = "- /uploads/data.csv (8 bytes, 2 lines, text/csv)";

/// The system text the server's first request carried.
fn system(server: &ReplayServer) -> String {
    body(server, 0)["messages"][0]["content"].to_string()
}

#[test]
fn a_later_run_of_the_thread_lists_the_earlier_uploads() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    std::fs::write(dir.path().join("data.csv"), "a,b\n1,2\n").unwrap();
    let spec = format!("sqlite:{}", dir.path().join("s.db").display());
    let session = ["--session", spec.as_str(), "--thread", "t1"];

    let first = ReplayServer::start(vec![chat(Some("Read it."), None)]);
    let mut args = vec!["run", "ONE", "--model", MODEL, "--upload", "data.csv"];
    args.extend_from_slice(&session);
    let out = burrow(dir.path(), &first, Some(KEY), &args);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(system(&first).contains(LISTED), "{}", system(&first));

    let second = ReplayServer::start(vec![chat(Some("Still there."), None)]);
    let mut args = vec!["run", "TWO", "--model", MODEL];
    args.extend_from_slice(&session);
    let out = burrow(dir.path(), &second, Some(KEY), &args);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let said = system(&second);
    assert!(
        said.contains("## Uploaded files") && said.contains(LISTED),
        "{said}"
    );

    // The folder is the record: a deleted upload is listed no more.
    std::fs::remove_file(work.join("uploads/data.csv")).unwrap();
    let third = ReplayServer::start(vec![chat(Some("Gone."), None)]);
    let mut args = vec!["run", "THREE", "--model", MODEL];
    args.extend_from_slice(&session);
    let out = burrow(dir.path(), &third, Some(KEY), &args);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(
        !system(&third).contains("Uploaded files"),
        "{}",
        system(&third)
    );
}
