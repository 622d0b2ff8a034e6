//! `burrow run --upload FILE`: files stored as /uploads/NAME before the run, an `upload` event each with --json, readable by the agent's tools, and a name that is not a plain file name refused before anything is written or run.

use serde_json::json;

use super::support::{burrow_in, json_lines, script};

#[test]
fn uploads_are_stored_evented_and_read_by_the_agent() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("work")).unwrap();
    std::fs::write(d.join("data.csv"), "a,b\n1,2\n").unwrap();
    std::fs::write(d.join("empty.txt"), "").unwrap();
    let model = script(
        d,
        "read.jsonl",
        &[
            json!({"tool_calls": [{"id": "r1", "name": "read_file", "arguments": {"file_path": "/uploads/data.csv"}}]}),
            json!({"text": "two columns"}),
        ],
    );
    let backend = format!("fs:{}", d.join("work").display());
    let run = burrow_in(
        d,
        &[
            "--json",
            "--backend",
            &backend,
            "run",
            "summarise",
            "--upload",
            "data.csv",
            "--upload",
            "empty.txt",
            "--model",
            &model,
        ],
        b"",
    );
    run.assert_code(0);
    let events = json_lines(&run);
    assert_eq!(
        events[0],
        json!({"type": "upload", "path": "/uploads/data.csv", "original_name": "data.csv", "size": 8,
               "line_count": 2, "mime_type": "text/csv", "encoding": "utf-8"})
    );
    assert_eq!(events[1]["path"], "/uploads/empty.txt");
    assert_eq!(events[1]["line_count"], 0);
    let read = events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["id"] == "r1")
        .unwrap();
    assert_eq!(read["is_error"], false, "{read}");
    assert!(read["content"].as_str().unwrap().contains("1,2"), "{read}");
    assert_eq!(
        std::fs::read_to_string(d.join("work/uploads/data.csv")).unwrap(),
        "a,b\n1,2\n"
    );
}

#[test]
fn a_name_that_is_not_a_plain_file_name_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("work")).unwrap();
    std::fs::write(d.join("ok.txt"), "fine").unwrap();
    std::fs::write(d.join("tab\there.txt"), "x").unwrap();
    // A model that would fail the run if it were ever asked.
    let model = script(d, "none.jsonl", &[]);
    let backend = format!("fs:{}", d.join("work").display());
    let run = burrow_in(
        d,
        &[
            "--backend",
            &backend,
            "run",
            "go",
            "--upload",
            "ok.txt",
            "--upload",
            "tab\there.txt",
            "--model",
            &model,
        ],
        b"",
    );
    run.assert_code(1);
    let err = run.stderr.clone();
    assert!(err.contains("holds a control character"), "{err}");
    assert!(
        !err.contains(&d.display().to_string()),
        "no host path: {err}"
    );
    assert!(
        !d.join("work/uploads").exists(),
        "nothing was written, not even ok.txt"
    );
}
