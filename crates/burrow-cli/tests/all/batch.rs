//! `burrow batch`: the data-driven cases in tests/fixtures/batch, plus order, notes and saving.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::support::{Workspace, mask_times};

fn cases() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/batch");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    cases
}

/// True when `actual` matches `expected`, whose strings may be the
/// wildcards described in tests/fixtures/batch/README.md.
fn matches(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::String(e), Value::String(a)) => match e.as_str() {
            "<any>" => !a.is_empty(),
            _ => match e.strip_suffix("...") {
                Some(prefix) => a.starts_with(prefix),
                None => e == a,
            },
        },
        (Value::Array(e), Value::Array(a)) => {
            e.len() == a.len() && e.iter().zip(a).all(|(e, a)| matches(e, a))
        }
        (Value::Object(e), Value::Object(a)) => {
            e.len() == a.len()
                && e.iter()
                    .all(|(k, e)| a.get(k).is_some_and(|a| matches(e, a)))
        }
        _ => expected == actual,
    }
}

fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

#[test]
fn fixture_cases() {
    let cases = cases();
    assert!(cases.len() >= 6, "the fixture folder holds the cases");
    for case in cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let input = std::fs::read(case.join("input.jsonl")).unwrap();
        let expected = json_lines(&std::fs::read_to_string(case.join("output.jsonl")).unwrap());
        let exit: i32 = std::fs::read_to_string(case.join("exit"))
            .map(|s| s.trim().parse().unwrap())
            .unwrap_or(0);
        let ws = Workspace::new();
        let run = ws.run_with_stdin(&["batch"], &input);
        assert_eq!(run.code, exit, "{name}: exit code; stderr: {}", run.stderr);
        let mut actual = json_lines(&run.out());
        actual.iter_mut().for_each(mask_times);
        assert_eq!(
            actual.len(),
            expected.len(),
            "{name}: line count\n{}",
            run.out()
        );
        for (i, (e, a)) in expected.iter().zip(&actual).enumerate() {
            assert!(
                matches(e, a),
                "{name}: output line {}\nexpected {e}\nactual   {a}",
                i + 1
            );
        }
    }
}

#[test]
fn order_is_kept_over_many_lines() {
    let ws = Workspace::new();
    let mut input = String::new();
    for i in 0..300 {
        input.push_str(&format!(
            "{{\"op\": \"write\", \"path\": \"/f/{i:03}.txt\", \"content\": \"n{i}\"}}\n"
        ));
        input.push_str(&format!(
            "{{\"op\": \"cat\", \"path\": \"/f/{i:03}.txt\"}}\n"
        ));
        if i % 7 == 0 {
            input.push_str("not json\n");
        }
    }
    let run = ws.run_with_stdin(&["batch"], input.as_bytes());
    run.assert_code(1);
    let lines = json_lines(&run.out());
    let mut lines = lines.iter();
    use base64::Engine as _;
    for i in 0..300 {
        assert_eq!(lines.next().unwrap()["path"], format!("/f/{i:03}.txt"));
        let b64 = base64::engine::general_purpose::STANDARD.encode(format!("n{i}"));
        assert_eq!(lines.next().unwrap(), &json!({"content_b64": b64}));
        if i % 7 == 0 {
            assert_eq!(lines.next().unwrap()["error"]["kind"], "invalid_argument");
        }
    }
    assert!(lines.next().is_none());
}

#[test]
fn a_batch_line_prints_what_json_prints() {
    let ws = Workspace::new();
    ws.put("/a.txt", "alpha\nbeta\n");
    let cases: &[(&str, &[&str])] = &[
        (
            r#"{"op": "read", "path": "/a.txt", "offset": 1}"#,
            &["read", "/a.txt", "--offset", "1"],
        ),
        (r#"{"op": "grep", "pattern": "a$"}"#, &["grep", "a$"]),
        (r#"{"op": "cat", "path": "/a.txt"}"#, &["cat", "/a.txt"]),
        (r#"{"op": "ls", "path": "/"}"#, &["ls", "/"]),
        (r#"{"op": "read", "path": "/nope"}"#, &["read", "/nope"]),
        (r#"{"op": "glob", "pattern": "../x"}"#, &["glob", "../x"]),
    ];
    for (line, args) in cases {
        let batch = ws.run_with_stdin(&["batch"], line.as_bytes());
        let mut with_json = vec!["--json"];
        with_json.extend_from_slice(args);
        let single = ws.run(&with_json);
        assert_eq!(batch.out(), single.out(), "{line}");
        assert_eq!(batch.code, single.code, "{line}");
    }
}

#[test]
fn truncation_is_on_stdout_not_stderr() {
    let ws = Workspace::new();
    ws.put("/a", "x");
    ws.put("/b", "x");
    let input = "{\"op\": \"ls\"}\n{\"op\": \"ls\", \"limit\": 1}\n";
    let run = ws.run_with_stdin(&["batch"], input.as_bytes());
    run.assert_code(0);
    let lines = json_lines(&run.out());
    assert_eq!(lines[0]["truncated"], false);
    assert_eq!(lines[1]["truncated"], true);
    assert_eq!(lines[1]["entries"].as_array().unwrap().len(), 1);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
}

#[test]
fn a_line_that_is_not_utf8_is_one_error_line() {
    let ws = Workspace::new();
    let input = b"{\"op\": \"cat\", \"path\": \"/\xff\"}\n{\"op\": \"ls\"}\n";
    let run = ws.run_with_stdin(&["batch"], input);
    run.assert_code(1);
    let lines = json_lines(&run.out());
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["error"]["kind"], "invalid_argument");
    assert_eq!(lines[0]["error"]["message"], "line 1: not UTF-8 text.");
    assert_eq!(lines[1], json!({"entries": [], "truncated": false}));
}

#[test]
fn successful_mutations_are_saved_once_refusals_save_nothing() {
    let ws = Workspace::new();
    let refused = "{\"op\": \"rm\", \"path\": \"/nope\"}\n{\"op\": \"edit\", \"path\": \"/nope\", \"old\": \"a\", \"new\": \"b\"}\n";
    ws.run_with_stdin(&["batch"], refused.as_bytes())
        .assert_code(1);
    assert!(!ws.state.exists(), "no successful mutation, no file");
    let mixed = "{\"op\": \"write\", \"path\": \"/kept.txt\", \"content\": \"kept\"}\n{\"op\": \"rm\", \"path\": \"/nope\"}\n";
    ws.run_with_stdin(&["batch"], mixed.as_bytes())
        .assert_code(1);
    assert_eq!(ws.run(&["cat", "/kept.txt"]).stdout, b"kept");
    assert_eq!(
        ws.dir_entries(),
        ["state.json", "state.json.journal", "state.json.lock"]
    );
}

#[test]
fn an_empty_batch_prints_nothing_and_succeeds() {
    let ws = Workspace::new();
    let run = ws.run_with_stdin(&["batch"], b"");
    run.assert_code(0);
    assert!(run.stdout.is_empty());
    assert!(!ws.state.exists());
}

#[test]
fn a_printed_result_survives_a_killed_batch() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};
    let ws = Workspace::new();
    let mut child = Command::new(env!("CARGO_BIN_EXE_burrow"))
        .args(["--backend", &ws.spec(), "batch"])
        .current_dir(ws.dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut answers = Vec::new();
    for i in 0..3 {
        writeln!(
            stdin,
            "{{\"op\": \"write\", \"path\": \"/kept{i}.txt\", \"content\": \"kept {i}\"}}"
        )
        .unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        answers.push(line);
    }
    // Killed before its input ends: no save at the end can happen.
    child.kill().unwrap();
    child.wait().unwrap();
    for (i, answer) in answers.iter().enumerate() {
        assert_eq!(
            serde_json::from_str::<Value>(answer).unwrap()["path"],
            format!("/kept{i}.txt")
        );
        assert_eq!(
            ws.run(&["cat", &format!("/kept{i}.txt")]).stdout,
            format!("kept {i}").as_bytes(),
            "a reported write was lost"
        );
    }
}
