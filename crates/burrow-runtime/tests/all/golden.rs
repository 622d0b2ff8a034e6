//! Golden tests of what every tool shows the model: one table of cases, each rendered to `tests/fixtures/snapshots/NAME.txt`.
//!
//! Run with `BURROW_BLESS=1` to rewrite the snapshots after a deliberate
//! change, then review the diff. A snapshot with no case, or a case with no
//! snapshot, fails the test.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use burrow_backend::Backend;
use burrow_runtime::tools::ToolConfig;
use serde_json::{Value, json};

use super::support::{Mode, Wrapped, ctx, p, state_with, toolset_with};

enum Step {
    /// A tool call by the agent.
    Call(&'static str, Value),
    /// A write by someone else, straight to the backend.
    Outside(&'static str, &'static str),
}

fn call(tool: &'static str, args: Value) -> Step {
    Step::Call(tool, args)
}

struct Case {
    name: &'static str,
    files: Vec<(&'static str, Vec<u8>)>,
    mode: Mode,
    sandbox: bool,
    config: fn(&mut ToolConfig),
    steps: Vec<Step>,
}

fn case(name: &'static str, files: &[(&'static str, &str)], steps: Vec<Step>) -> Case {
    Case {
        name,
        files: files
            .iter()
            .map(|(p, t)| (*p, t.as_bytes().to_vec()))
            .collect(),
        mode: Mode::Plain,
        sandbox: false,
        config: |_| {},
        steps,
    }
}

impl Case {
    fn config(mut self, f: fn(&mut ToolConfig)) -> Self {
        self.config = f;
        self
    }
    fn sandbox(mut self) -> Self {
        self.sandbox = true;
        self
    }
    fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }
    fn file(mut self, path: &'static str, bytes: Vec<u8>) -> Self {
        self.files.push((path, bytes));
        self
    }
}

fn numbered_lines(prefix: &str, n: usize) -> String {
    (1..=n).map(|i| format!("{prefix}{i}\n")).collect()
}

const CODE: &[(&str, &str)] = &[
    ("/README.md", "# demo\n"),
    ("/src/main.rs", "fn main() {\n    helper();\n}\n"),
    ("/src/lib.rs", "pub fn helper() {}\nfn Private() {}\n"),
    ("/src/util/mod.rs", "// no functions here\n"),
    ("/docs/guide.md", "Call fn main to start.\n"),
];

fn cases() -> Vec<Case> {
    vec![
        case("ls_workspace", CODE, vec![call("ls", json!({})), call("ls", json!({"path": "/src"}))]),
        case("ls_empty_workspace", &[], vec![call("ls", json!({}))]),
        case(
            "ls_refusals",
            CODE,
            vec![
                call("ls", json!({"path": "/missing"})),
                call("ls", json!({"path": "/README.md"})),
                call("ls", json!({"path": "../up"})),
            ],
        ),
        case(
            "ls_capped",
            &[("/a", "1"), ("/b", "2"), ("/c", "3"), ("/d", "4"), ("/e", "5"), ("/f", "6")],
            vec![call("ls", json!({}))],
        )
        .config(|c| c.max_entries = 4),
        case(
            "ls_capped_uncounted",
            &[("/a", "1"), ("/b", "2"), ("/c", "3"), ("/d", "4"), ("/e", "5"), ("/f", "6")],
            vec![call("ls", json!({}))],
        )
        .config(|c| {
            c.max_entries = 2;
            c.count_limit = 3;
        }),
        case(
            "read_file_basic",
            &[("/a.txt", "alpha\nbeta\n\ngamma")],
            vec![call("read_file", json!({"file_path": "/a.txt"}))],
        ),
        case(
            "read_file_paging",
            &[("/five.txt", "one\ntwo\nthree\nfour\nfive\n")],
            vec![
                call("read_file", json!({"file_path": "/five.txt", "limit": 2})),
                call("read_file", json!({"file_path": "/five.txt", "offset": 2, "limit": 2})),
                call("read_file", json!({"file_path": "/five.txt", "offset": 4})),
                call("read_file", json!({"file_path": "/five.txt", "offset": 5})),
                call("read_file", json!({"file_path": "/five.txt", "limit": 0})),
            ],
        ),
        case("read_file_default_limit", &[], vec![call("read_file", json!({"file_path": "/long.txt"}))])
            .file("/long.txt", numbered_lines("l", 2005).into_bytes()),
        case("read_file_long_line", &[], vec![call("read_file", json!({"file_path": "/wide.txt"}))])
            .file("/wide.txt", format!("{}\nshort\n{}é\n", "a".repeat(2010), "b".repeat(2000)).into_bytes()),
        case(
            "read_file_char_budget",
            &[],
            vec![
                call("read_file", json!({"file_path": "/log.txt"})),
                call("read_file", json!({"file_path": "/log.txt", "offset": 6})),
            ],
        )
        .file("/log.txt", numbered_lines("a log line number ", 12).into_bytes())
        .config(|c| c.large_result_chars = 150),
        case(
            "read_file_special",
            &[("/empty.txt", ""), ("/src/x.rs", "x\n"), ("/crlf.txt", "one\r\ntwo\r\n")],
            vec![
                call("read_file", json!({"file_path": "/empty.txt"})),
                call("read_file", json!({"file_path": "/empty.txt", "offset": 3})),
                call("read_file", json!({"file_path": "/blob.bin"})),
                call("read_file", json!({"file_path": "/src"})),
                call("read_file", json!({"file_path": "/"})),
                call("read_file", json!({"file_path": "/missing.txt"})),
                call("read_file", json!({"file_path": "/crlf.txt"})),
            ],
        )
        .file("/blob.bin", vec![0x89, b'P', b'N', b'G', 0xff, 0x00, 0x01]),
        case(
            "write_file",
            &[("/src/x.rs", "x\n")],
            vec![
                call("write_file", json!({"file_path": "/notes/todo.md", "content": "- one\n- two\n"})),
                call("read_file", json!({"file_path": "/notes/todo.md"})),
                call("write_file", json!({"file_path": "/empty.txt", "content": ""})),
                call("write_file", json!({"file_path": "/src", "content": "x"})),
                call("write_file", json!({"file_path": "/src/x.rs/y", "content": "x"})),
            ],
        ),
        case(
            "delete_path",
            &[("/notes/a.md", "a\n"), ("/notes/sub/b.md", "b\n"), ("/keep.txt", "k\n")],
            vec![
                call("delete_path", json!({"path": "/keep.txt"})),
                call("delete_path", json!({"path": "/notes"})),
                call("delete_path", json!({"path": "/notes", "recursive": true})),
                call("ls", json!({})),
                call("delete_path", json!({"path": "/notes"})),
                call("delete_path", json!({"path": "/", "recursive": true})),
                call("delete_path", json!({"path": "/keep.txt/x"})),
            ],
        ),
        case(
            "write_file_guard",
            &[("/a.txt", "old\n")],
            vec![
                call("write_file", json!({"file_path": "/a.txt", "content": "new\n"})),
                call("read_file", json!({"file_path": "/a.txt"})),
                call("write_file", json!({"file_path": "/a.txt", "content": "new\n"})),
                call("write_file", json!({"file_path": "/a.txt", "content": "newer\n"})),
                Step::Outside("/a.txt", "someone else's\n"),
                call("write_file", json!({"file_path": "/a.txt", "content": "mine\n"})),
                call("read_file", json!({"file_path": "/a.txt"})),
            ],
        ),
        case(
            "edit_file_guard",
            &[("/app.py", "def main():\n    print('hi')\n")],
            vec![
                call("edit_file", json!({"file_path": "/app.py", "old_string": "hi", "new_string": "hello"})),
                call("read_file", json!({"file_path": "/app.py", "offset": 1, "limit": 1})),
                call("edit_file", json!({"file_path": "/app.py", "old_string": "hi", "new_string": "hello"})),
                call("edit_file", json!({"file_path": "/app.py", "old_string": "hello", "new_string": "hello, world"})),
                Step::Outside("/app.py", "def main():\n    pass\n"),
                call("edit_file", json!({"file_path": "/app.py", "old_string": "world", "new_string": "there"})),
                call("read_file", json!({"file_path": "/app.py"})),
                call("edit_file", json!({"file_path": "/app.py", "old_string": "pass", "new_string": "return 0"})),
                call("read_file", json!({"file_path": "/app.py"})),
            ],
        ),
        case(
            "edit_file_refusals",
            &[("/t.txt", "a b a b a\n"), ("/crlf.txt", "one\r\ntwo\r\nthree\r\n")],
            vec![
                call("edit_file", json!({"file_path": "/missing.txt", "old_string": "a", "new_string": "b"})),
                call("read_file", json!({"file_path": "/t.txt"})),
                call("edit_file", json!({"file_path": "/t.txt", "old_string": "zzz", "new_string": "y"})),
                call("edit_file", json!({"file_path": "/t.txt", "old_string": "a", "new_string": "c"})),
                call("edit_file", json!({"file_path": "/t.txt", "old_string": "a", "new_string": "a"})),
                call("edit_file", json!({"file_path": "/t.txt", "old_string": "", "new_string": "x"})),
                call("edit_file", json!({"file_path": "/t.txt", "old_string": "a", "new_string": "c", "replace_all": true})),
                call("read_file", json!({"file_path": "/t.txt"})),
                call("read_file", json!({"file_path": "/crlf.txt"})),
                call("edit_file", json!({"file_path": "/crlf.txt", "old_string": "one\ntwo", "new_string": "1\n2"})),
                call("read_file", json!({"file_path": "/crlf.txt"})),
            ],
        ),
        case(
            "glob",
            CODE,
            vec![
                call("glob", json!({"pattern": "*.rs"})),
                call("glob", json!({"pattern": "/*.md"})),
                call("glob", json!({"pattern": "util/*", "path": "/src"})),
                call("glob", json!({"pattern": "*.py"})),
                call("glob", json!({"pattern": "../*"})),
                call("glob", json!({"pattern": "[abc"})),
                call("glob", json!({"pattern": "*", "path": "/README.md"})),
            ],
        ),
        case(
            "glob_capped",
            &[("/a.rs", ""), ("/b.rs", ""), ("/c.rs", ""), ("/d.rs", ""), ("/e.rs", "")],
            vec![call("glob", json!({"pattern": "*.rs"}))],
        )
        .config(|c| c.max_entries = 2),
        case(
            "grep_modes",
            CODE,
            vec![
                call("grep", json!({"pattern": "fn \\w+"})),
                call("grep", json!({"pattern": "fn \\w+", "output_mode": "content"})),
                call("grep", json!({"pattern": "fn \\w+", "output_mode": "count"})),
                call("grep", json!({"pattern": "fn \\w+", "glob": "*.rs", "output_mode": "content"})),
                call("grep", json!({"pattern": "FN PRIVATE", "ignore_case": true, "output_mode": "content"})),
                call("grep", json!({"pattern": "helper()", "fixed_strings": true, "output_mode": "content"})),
                call("grep", json!({"pattern": "fn", "path": "/src/main.rs", "output_mode": "content"})),
            ],
        ),
        case(
            "grep_refusals",
            CODE,
            vec![
                call("grep", json!({"pattern": "class \\w+"})),
                call("grep", json!({"pattern": "fn", "glob": "*.py"})),
                call("grep", json!({"pattern": "fn ("})),
                call("grep", json!({"pattern": "fn", "path": "/../x"})),
                call("grep", json!({"pattern": "fn", "glob": "../*"})),
            ],
        ),
        case(
            "grep_capped",
            &[],
            vec![
                call("grep", json!({"pattern": "match", "output_mode": "content"})),
                call("grep", json!({"pattern": "match"})),
                call("grep", json!({"pattern": "match", "output_mode": "count"})),
            ],
        )
        .file("/a.txt", numbered_lines("match ", 4).into_bytes())
        .file("/b.txt", numbered_lines("match ", 2).into_bytes())
        .file("/c.txt", numbered_lines("match ", 1).into_bytes())
        .config(|c| {
            c.max_entries = 2;
            c.max_grep_lines = 3;
        }),
        case(
            "grep_capped_uncounted",
            &[],
            vec![
                call("grep", json!({"pattern": "match", "output_mode": "content"})),
                call("grep", json!({"pattern": "match", "output_mode": "count"})),
            ],
        )
        .file("/a.txt", numbered_lines("match ", 4).into_bytes())
        .file("/b.txt", numbered_lines("match ", 4).into_bytes())
        .config(|c| {
            c.max_grep_lines = 3;
            c.count_limit = 5;
        }),
        case("grep_long_line", &[], vec![call("grep", json!({"pattern": "needle", "output_mode": "content"}))])
            .file("/wide.txt", format!("needle {}\n", "z".repeat(2100)).into_bytes()),
        case(
            "execute",
            &[],
            vec![
                call("execute", json!({"command": "echo hello"})),
                call("execute", json!({"command": "fail"})),
                call("execute", json!({"command": "quiet"})),
                call("execute", json!({"command": "sleep", "timeout": 5})),
                call("execute", json!({"command": "flood 3"})),
                call("execute", json!({"command": "echo x", "timeout": 0})),
                call(
                    "execute",
                    json!({"command": "echo x", "timeout": 18446744073709551615u64}),
                ),
            ],
        )
        .sandbox(),
        case("execute_unavailable", &[], vec![call("execute", json!({"command": "echo hello"}))]),
        case(
            "bad_arguments",
            &[("/a.txt", "a\n")],
            vec![
                call("rm", json!({"path": "/a.txt"})),
                call("read_file", json!({})),
                call("read_file", json!({"file_path": "/a.txt", "offset": "ten"})),
                call("ls", json!({"dir": "/"})),
                call("grep", json!({"pattern": "a", "output_mode": "lines"})),
                call("read_file", json!(["/a.txt"])),
                call("read_file", json!("/a.txt")),
                call("ls", Value::Null),
            ],
        ),
        case(
            "path_refusals",
            &[("/a.txt", "a\n")],
            vec![
                call("read_file", json!({"file_path": "../etc/passwd"})),
                call("write_file", json!({"file_path": "/a/../../x", "content": "x"})),
                call("edit_file", json!({"file_path": "/a\u{0}b", "old_string": "a", "new_string": "b"})),
                call("read_file", json!({"file_path": "notes/../a.txt"})),
            ],
        ),
        case(
            "spill_grep",
            &[],
            vec![
                call("grep", json!({"pattern": "hit", "output_mode": "content"})),
                call("read_file", json!({"file_path": "/.burrow/large_results/grep-29243df8529afe9a.txt", "limit": 3})),
                call("ls", json!({"path": "/.burrow/large_results"})),
            ],
        )
        .file("/data.txt", numbered_lines("a hit on line ", 40).into_bytes())
        .config(|c| {
            c.large_result_chars = 300;
            c.preview_chars = 120;
        }),
        case("spill_refused", &[], vec![call("grep", json!({"pattern": "hit", "output_mode": "content"}))])
            .file("/data.txt", numbered_lines("a hit on line ", 40).into_bytes())
            .mode(Mode::ReadOnly)
            .config(|c| {
                c.large_result_chars = 300;
                c.preview_chars = 120;
            }),
        case("spill_execute", &[], vec![call("execute", json!({"command": "flood 40"}))])
            .sandbox()
            .config(|c| {
                c.large_result_chars = 300;
                c.preview_chars = 100;
            }),
    ]
}

async fn render(case: &Case) -> String {
    let files: Vec<(&str, &[u8])> = case.files.iter().map(|(p, b)| (*p, b.as_slice())).collect();
    let state = state_with(&files).await;
    let backend: Arc<dyn Backend> = Arc::new(Wrapped::new(state, case.mode, case.sandbox));
    let mut config = ToolConfig::default();
    (case.config)(&mut config);
    let tools = toolset_with(backend.clone(), config);
    let mut out = String::new();
    for step in &case.steps {
        match step {
            Step::Call(tool, args) => {
                out.push_str(&format!("=== {tool} {args}\n"));
                match tools.call(tool, args.clone()).await {
                    Ok(o) if o.is_error => out.push_str(&format!("--- refused\n{}\n\n", o.text)),
                    Ok(o) => out.push_str(&format!("--- ok\n{}\n\n", o.text)),
                    Err(e) => out.push_str(&format!("--- FAILURE\n{e}\n\n")),
                }
            }
            Step::Outside(path, text) => {
                backend.write(&ctx(), &p(path), text).await.unwrap();
                out.push_str(&format!("=== (someone else writes {path})\n\n"));
            }
        }
    }
    out
}

fn snapshots_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/snapshots")
}

#[tokio::test]
async fn every_tool_renders_as_its_snapshot() {
    let bless = std::env::var_os("BURROW_BLESS").is_some_and(|v| v == "1");
    let dir = snapshots_dir();
    let cases = cases();
    let mut names = BTreeSet::new();
    let mut failures = Vec::new();
    for case in &cases {
        assert!(names.insert(case.name), "two cases are named {}", case.name);
        let actual = render(case).await;
        assert!(
            !actual.contains("--- FAILURE"),
            "{}: a call failed:\n{actual}",
            case.name
        );
        let path = dir.join(format!("{}.txt", case.name));
        if bless {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &actual).unwrap();
            continue;
        }
        match std::fs::read_to_string(&path) {
            Ok(expected) if expected == actual => {}
            Ok(expected) => failures.push(format!(
                "{}: differs from {}\n{}",
                case.name,
                path.display(),
                first_difference(&expected, &actual)
            )),
            Err(_) => failures.push(format!("{}: no snapshot at {}", case.name, path.display())),
        }
    }
    for entry in std::fs::read_dir(&dir).unwrap() {
        let file = entry.unwrap().file_name().to_string_lossy().into_owned();
        let stem = file.trim_end_matches(".txt");
        if !names.contains(stem) {
            failures.push(format!(
                "snapshot {file} has no case; delete it or add the case"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} snapshot(s) differ (rerun with BURROW_BLESS=1 after a deliberate change, then review the diff):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

fn first_difference(expected: &str, actual: &str) -> String {
    let mut exp = expected.lines();
    let mut act = actual.lines();
    for n in 1.. {
        match (exp.next(), act.next()) {
            (None, None) => return "(they differ only in line endings)".into(),
            (e, a) if e == a => continue,
            (e, a) => {
                return format!(
                    "first difference at line {n}:\n  expected: {}\n  actual:   {}",
                    e.unwrap_or("<end>"),
                    a.unwrap_or("<end>")
                );
            }
        }
    }
    unreachable!()
}
