//! `state:FILE.json`'s journal: kills at random instants and at each compaction step, a damaged or torn journal, concurrent batches, `burrow state compact`.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use serde_json::{Value, json};

use super::support::burrow_in;

/// The document every test here works on, named relative to its folder.
const SPEC: &str = "state:state.json";

/// The journal's header length (`burrow::state_journal::HEADER_LEN`).
const HEADER_LEN: usize = 20;

/// `burrow --backend state:state.json ARGS` in `dir`, expected to succeed.
fn ok(dir: &Path, args: &[&str], stdin: &[u8]) -> super::support::Run {
    let mut all = vec!["--backend", SPEC];
    all.extend_from_slice(args);
    let run = burrow_in(dir, &all, stdin);
    run.assert_code(0);
    run
}

/// Starts `burrow --backend state:state.json --json batch` in `dir` with
/// `env` set, its stdin, stdout and stderr piped.
fn spawn_batch(dir: &Path, env: &[(&str, &str)]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_burrow"))
        .args(["--backend", SPEC, "--json", "batch"])
        .current_dir(dir)
        .env_remove("BURROW_LOG")
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Runs a batch of `input` with `env`, letting it end however it ends;
/// returns its exit status and the lines it printed.
fn batch_with_env(dir: &Path, input: &str, env: &[(&str, &str)]) -> (ExitStatus, Vec<Value>) {
    let mut child = spawn_batch(dir, env);
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_owned();
    let feeder = thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let output = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    let lines = output
        .stdout
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    (output.status, lines)
}

fn write_line(path: &str, content: &str) -> String {
    json!({"op": "write", "path": path, "content": content}).to_string() + "\n"
}

fn edit_line(path: &str, old: &str, new: &str) -> String {
    json!({"op": "edit", "path": path, "old": old, "new": new}).to_string() + "\n"
}

/// A small xorshift generator: the trials differ, and a failing trial's
/// seed is in its message.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Writes in the kill trials.
const WRITES: usize = 1000;

/// The kill trials' batch, two lines per step `i`: a write of
/// `/f/{i:04}.txt`, then an edit adding the line `i` to `/log.txt` (an
/// operation that, unlike its journal record, would show if applied twice).
fn trial_lines() -> Vec<String> {
    let mut lines = Vec::with_capacity(2 * WRITES);
    for i in 0..WRITES {
        lines.push(write_line(
            &format!("/f/{i:04}.txt"),
            &format!("file {i}\n"),
        ));
        lines.push(edit_line("/log.txt", "<end>", &format!("{i}\n<end>")));
    }
    lines
}

/// One trial: a batch fed a few lines at a time, killed (SIGKILL) once it
/// has printed a random number of results or after a random time; returns
/// how many results it printed, each checked to be a success.
fn killed_batch(dir: &Path, rng: &mut Rng, lines: &[String]) -> usize {
    let mut child = spawn_batch(dir, &[]);
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let kill_after = rng.below(lines.len() as u64) as usize;
    let chunk = 1 + rng.below(20) as usize;
    let owned = lines.to_vec();
    let feeder = thread::spawn(move || {
        for part in owned.chunks(chunk) {
            if stdin.write_all(part.concat().as_bytes()).is_err() || stdin.flush().is_err() {
                return;
            }
            thread::sleep(Duration::from_micros(200));
        }
    });
    let (reached, at_count) = mpsc::channel();
    let reader = thread::spawn(move || {
        let mut printed = Vec::new();
        let mut told = false;
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            printed.push(line);
            if printed.len() == kill_after && !told {
                told = true;
                let _ = reached.send(());
            }
        }
        if !told {
            let _ = reached.send(());
        }
        printed
    });
    // Half the trials die at a result count, half at a time (mid-group).
    if rng.below(2) == 0 {
        let _ = at_count.recv();
    } else {
        thread::sleep(Duration::from_micros(rng.below(400_000)));
    }
    thread::sleep(Duration::from_micros(rng.below(2_000)));
    let _ = child.kill();
    let _ = child.wait();
    feeder.join().unwrap();
    let printed = reader.join().unwrap();
    for (i, line) in printed.iter().enumerate() {
        let value: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert!(value["error"].is_null(), "line {i}: {line}");
    }
    printed.len()
}

/// Checks a document (as its file paths under /f and the text of /log.txt)
/// after a trial whose batch printed `printed` results: the changes that
/// survived are a prefix of the batch holding every printed one, with each
/// edit applied exactly once.
fn check_prefix(files: &[String], log: &str, printed: usize, trial: usize) {
    let want_files: Vec<String> = (0..files.len()).map(|i| format!("/f/{i:04}.txt")).collect();
    assert_eq!(files, want_files, "trial {trial}: files are not a prefix");
    let logged: Vec<&str> = log.lines().collect();
    let (end, entries) = logged.split_last().unwrap();
    assert_eq!(*end, "<end>", "trial {trial}: {log}");
    let want_entries: Vec<String> = (0..entries.len()).map(|i| i.to_string()).collect();
    assert_eq!(
        entries, want_entries,
        "trial {trial}: an edit was lost or applied twice"
    );
    assert!(
        files.len() == entries.len() || files.len() == entries.len() + 1,
        "trial {trial}: {} files, {} edits",
        files.len(),
        entries.len()
    );
    let durable = files.len() + entries.len();
    eprintln!("trial {trial}: {printed} results printed, {durable} changes kept");
    assert!(
        durable >= printed,
        "trial {trial}: {printed} results printed, {durable} kept"
    );
}

/// The files under /f and the text of /log.txt of the document `dir/state.json`.
fn document_files(dir: &Path) -> (Vec<String>, String) {
    let doc: Value = serde_json::from_slice(&std::fs::read(dir.join("state.json")).unwrap())
        .unwrap_or_else(|e| panic!("state.json does not parse: {e}"));
    let object = doc.as_object().unwrap();
    let files: Vec<String> = object
        .keys()
        .filter(|k| k.starts_with("/f/"))
        .cloned()
        .collect();
    for path in &files {
        let i: usize = path[3..7].parse().unwrap();
        assert_eq!(object[path]["content"], json!([format!("file {i}"), ""]));
    }
    let log = object["/log.txt"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect::<Vec<_>>()
        .join("\n");
    (files, log)
}

/// Runs `trials` kill trials, each in a fresh folder; `check` gets the
/// folder (compacted by `burrow state compact`), the printed count and
/// the trial's number.
fn kill_trials(trials: usize, check: impl Fn(&Path, usize, usize)) {
    let lines = trial_lines();
    let seed = 0x9e37_79b9_7f4a_7c15_u64;
    for trial in 0..trials {
        let mut rng = Rng(seed ^ (trial as u64 + 1).wrapping_mul(0x2545_f491_4f6c_dd1d));
        let dir = tempfile::tempdir().unwrap();
        ok(dir.path(), &["write", "/log.txt"], b"<end>");
        let printed = killed_batch(dir.path(), &mut rng, &lines);
        // The document parses as it was left, before any compaction by hand.
        let left = std::fs::read(dir.path().join("state.json")).unwrap();
        serde_json::from_slice::<Value>(&left)
            .unwrap_or_else(|e| panic!("trial {trial}: state.json as left does not parse: {e}"));
        ok(dir.path(), &["state", "compact", "state.json"], b"");
        let journal = std::fs::read(dir.path().join("state.json.journal")).unwrap();
        assert_eq!(
            journal.len(),
            HEADER_LEN,
            "trial {trial}: the journal was cut"
        );
        check(dir.path(), printed, trial);
    }
}

#[test]
fn a_batch_killed_at_random_instants_keeps_every_printed_result() {
    kill_trials(50, |dir, printed, trial| {
        let (files, log) = document_files(dir);
        check_prefix(&files, &log, printed, trial);
        // burrow reads what it compacted.
        let cat = ok(dir, &["cat", "/log.txt"], b"");
        assert_eq!(cat.out(), log, "trial {trial}");
    });
}

/// The steps of a compaction at which `BURROW_STATE_FAILPOINT` aborts burrow
/// (after its results were printed), and `after_append` (records synced,
/// nothing printed yet).
const STEPS: &[&str] = &[
    "after_append",
    "after_temp_write",
    "after_temp_fsync",
    "after_fold_mark",
    "after_rename",
    "after_journal_cut",
];

#[test]
fn a_kill_at_each_compaction_step_keeps_every_change_once() {
    for step in STEPS {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path();
        ok(dir, &["write", "/keep.txt"], b"kept\n");
        ok(dir, &["write", "/log.txt"], b"a\n");
        let input = write_line("/new.txt", "new\n") + &edit_line("/log.txt", "a", "aa");
        let (status, printed) = batch_with_env(dir, &input, &[("BURROW_STATE_FAILPOINT", step)]);
        assert!(status.code().is_none(), "{step}: burrow was not aborted");
        let want_printed = if *step == "after_append" { 0 } else { 2 };
        assert_eq!(printed.len(), want_printed, "{step}: {printed:?}");
        // What the kill left parses, and holds (with its journal) every
        // change, each once.
        let left = std::fs::read(dir.join("state.json")).unwrap();
        serde_json::from_slice::<Value>(&left)
            .unwrap_or_else(|e| panic!("{step}: state.json does not parse: {e}"));
        assert_eq!(ok(dir, &["cat", "/new.txt"], b"").out(), "new\n", "{step}");
        assert_eq!(ok(dir, &["cat", "/log.txt"], b"").out(), "aa\n", "{step}");
        assert_eq!(
            ok(dir, &["cat", "/keep.txt"], b"").out(),
            "kept\n",
            "{step}"
        );
        ok(dir, &["state", "compact", "state.json"], b"");
        let doc: Value =
            serde_json::from_slice(&std::fs::read(dir.join("state.json")).unwrap()).unwrap();
        assert_eq!(doc["/new.txt"]["content"], json!(["new", ""]), "{step}");
        assert_eq!(doc["/log.txt"]["content"], json!(["aa", ""]), "{step}");
        assert_eq!(doc["/keep.txt"]["content"], json!(["kept", ""]), "{step}");
    }
}

/// A folder whose journal holds the records of /b, /c and /d (one group,
/// in that order) over a document holding /a: the batch is aborted after
/// its append, so nothing compacts them.
fn journal_with_three_records() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    ok(dir.path(), &["write", "/a"], b"a\n");
    let input = write_line("/b", "b\n") + &write_line("/c", "c\n") + &write_line("/d", "d\n");
    let (status, _) = batch_with_env(
        dir.path(),
        &input,
        &[("BURROW_STATE_FAILPOINT", "after_append")],
    );
    assert!(status.code().is_none());
    dir
}

#[test]
fn a_flipped_byte_mid_journal_is_a_failure_naming_the_file_that_changes_nothing() {
    let dir = journal_with_three_records();
    let dir = dir.path();
    let journal_path = dir.join("state.json.journal");
    let mut journal = std::fs::read(&journal_path).unwrap();
    let middle = HEADER_LEN + (journal.len() - HEADER_LEN) / 2;
    journal[middle] ^= 0x20;
    std::fs::write(&journal_path, &journal).unwrap();
    let doc = std::fs::read(dir.join("state.json")).unwrap();
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    entries.sort();
    let host = dir.display().to_string();
    for (args, stdin) in [
        (&["--json", "cat", "/a"][..], &b""[..]),
        (&["--json", "write", "/e"][..], &b"e"[..]),
        (&["--json", "state", "compact", "state.json"][..], &b""[..]),
    ] {
        let mut all = vec!["--backend", SPEC];
        all.extend_from_slice(args);
        let message = burrow_in(dir, &all, stdin).assert_json_error(2, "failure");
        assert!(message.contains("state.json"), "{message}");
        assert!(message.contains("journal"), "{message}");
        assert!(!message.contains(&host), "a host path in: {message}");
    }
    assert_eq!(std::fs::read(&journal_path).unwrap(), journal);
    assert_eq!(std::fs::read(dir.join("state.json")).unwrap(), doc);
    let mut after: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    after.sort();
    assert_eq!(after, entries);
}

#[test]
fn a_journal_missing_its_last_byte_drops_the_last_record_and_keeps_the_rest() {
    let dir = journal_with_three_records();
    let dir = dir.path();
    let journal_path = dir.join("state.json.journal");
    let journal = std::fs::read(&journal_path).unwrap();
    std::fs::write(&journal_path, &journal[..journal.len() - 1]).unwrap();
    assert_eq!(ok(dir, &["cat", "/c"], b"").out(), "c\n");
    burrow_in(dir, &["--backend", SPEC, "--json", "cat", "/d"], b"")
        .assert_json_error(1, "not_found");
    // The next append replaces the torn record.
    ok(dir, &["write", "/e"], b"e\n");
    assert_eq!(ok(dir, &["cat", "/e"], b"").out(), "e\n");
    ok(dir, &["state", "compact", "state.json"], b"");
    let doc: Value =
        serde_json::from_slice(&std::fs::read(dir.join("state.json")).unwrap()).unwrap();
    let mut keys: Vec<&String> = doc.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["/a", "/b", "/c", "/e"]);
}

#[test]
fn an_edit_replayed_over_a_file_another_program_changed_is_refused_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    ok(dir, &["write", "/a.txt"], b"one\n");
    ok(dir, &["write", "/b.txt"], b"b\n");
    let (status, _) = batch_with_env(
        dir,
        &edit_line("/a.txt", "one", "two"),
        &[("BURROW_STATE_FAILPOINT", "after_append")],
    );
    assert!(status.code().is_none());
    // The edit is in the journal only, and burrow reads it from there.
    assert_eq!(ok(dir, &["cat", "/a.txt"], b"").out(), "two\n");
    // Another program rewrites the document, changing the file the journal edits.
    let theirs = r#"{"/a.txt": {"content": ["uno", ""]}, "/b.txt": {"content": ["b", ""]}}"#;
    std::fs::write(dir.join("state.json"), theirs).unwrap();
    let journal = std::fs::read(dir.join("state.json.journal")).unwrap();
    let host = dir.display().to_string();
    for (args, stdin) in [
        (&["--json", "cat", "/b.txt"][..], &b""[..]),
        (&["--json", "write", "/c.txt"][..], &b"c"[..]),
        (&["--json", "state", "compact", "state.json"][..], &b""[..]),
    ] {
        let mut all = vec!["--backend", SPEC];
        all.extend_from_slice(args);
        let message = burrow_in(dir, &all, stdin).assert_json_error(2, "failure");
        assert!(message.contains("state.json"), "{message}");
        assert!(message.contains("/a.txt"), "{message}");
        assert!(!message.contains(&host), "a host path in: {message}");
    }
    assert_eq!(
        std::fs::read(dir.join("state.json.journal")).unwrap(),
        journal
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("state.json")).unwrap(),
        theirs
    );
    // The document holding /a.txt as the edit found it: the journal replays.
    let before = r#"{"/a.txt": {"content": ["one", ""]}, "/b.txt": {"content": ["b", ""]}}"#;
    std::fs::write(dir.join("state.json"), before).unwrap();
    assert_eq!(ok(dir, &["cat", "/a.txt"], b"").out(), "two\n");
}

#[test]
fn state_compact_folds_the_journal_and_says_how_many_records() {
    let dir = journal_with_three_records();
    let dir = dir.path();
    let before: Value =
        serde_json::from_slice(&std::fs::read(dir.join("state.json")).unwrap()).unwrap();
    assert!(
        before.get("/b").is_none(),
        "the document alone is as of the last compaction"
    );
    let run = ok(dir, &["--json", "state", "compact", "state.json"], b"");
    assert_eq!(run.json(), json!({"records": 3}));
    let after: Value =
        serde_json::from_slice(&std::fs::read(dir.join("state.json")).unwrap()).unwrap();
    assert_eq!(after.as_object().unwrap().len(), 4, "{after}");
    let again = ok(dir, &["state", "compact", "state.json"], b"");
    assert_eq!(again.out(), "state.json: nothing to compact\n");
    // A document that does not exist: nothing to do, nothing created.
    let empty = tempfile::tempdir().unwrap();
    let run = burrow_in(
        empty.path(),
        &["--json", "state", "compact", "none.json"],
        b"",
    );
    run.assert_code(0);
    assert_eq!(run.json(), json!({"records": 0}));
    assert_eq!(std::fs::read_dir(empty.path()).unwrap().count(), 0);
}

#[test]
fn four_batches_fed_slowly_lose_no_update() {
    const PROCESSES: usize = 4;
    const EACH: usize = 50;
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let mut todo = String::new();
    for i in 0..PROCESSES {
        for j in 0..EACH {
            todo.push_str(&format!("p{i}-{j} todo\n"));
        }
    }
    ok(dir, &["write", "/todo.txt"], todo.as_bytes());
    thread::scope(|scope| {
        for i in 0..PROCESSES {
            scope.spawn(move || {
                let mut child = spawn_batch(dir, &[]);
                let mut stdin = child.stdin.take().unwrap();
                let stdout = child.stdout.take().unwrap();
                let reader = thread::spawn(move || BufReader::new(stdout).lines().count());
                for j in 0..EACH {
                    let lines = edit_line(
                        "/todo.txt",
                        &format!("p{i}-{j} todo"),
                        &format!("p{i}-{j} done"),
                    ) + &write_line(&format!("/out/p{i}-{j}.txt"), "x");
                    stdin.write_all(lines.as_bytes()).unwrap();
                    stdin.flush().unwrap();
                    thread::sleep(Duration::from_millis(1));
                }
                drop(stdin);
                assert!(child.wait().unwrap().success());
                assert_eq!(reader.join().unwrap(), 2 * EACH);
            });
        }
    });
    let text = ok(dir, &["cat", "/todo.txt"], b"").out();
    assert_eq!(text.matches(" todo").count(), 0, "{text}");
    assert_eq!(text.matches(" done").count(), PROCESSES * EACH);
    let listing = ok(dir, &["--json", "ls", "/out"], b"").json();
    assert_eq!(
        listing["entries"].as_array().unwrap().len(),
        PROCESSES * EACH
    );
}

#[test]
fn entries_without_timestamps_load_and_stay_without_them_until_written() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    std::fs::write(
        dir.join("state.json"),
        r#"{"/a.txt": {"content": ["hello", ""]}, "/b.txt": {"content": ["b"], "created_at": null, "modified_at": null}}"#,
    )
    .unwrap();
    assert_eq!(ok(dir, &["cat", "/a.txt"], b"").out(), "hello\n");
    let listing = ok(dir, &["--json", "ls", "/"], b"").json();
    for entry in listing["entries"].as_array().unwrap() {
        assert!(
            entry.get("modified_at").is_none_or(Value::is_null),
            "{entry}"
        );
    }
    ok(dir, &["write", "/c.txt"], b"c\n");
    ok(dir, &["edit", "/b.txt", "--old", "b", "--new", "bb"], b"");
    let doc: Value =
        serde_json::from_slice(&std::fs::read(dir.join("state.json")).unwrap()).unwrap();
    let a = doc["/a.txt"].as_object().unwrap();
    assert!(
        !a.contains_key("created_at") && !a.contains_key("modified_at"),
        "{doc}"
    );
    // The next write of a file fills in modified_at; created_at stays unknown.
    let b = doc["/b.txt"].as_object().unwrap();
    assert!(b["modified_at"].is_string(), "{doc}");
    assert!(!b.contains_key("created_at"), "{doc}");
    assert!(doc["/c.txt"]["created_at"].is_string(), "{doc}");
}

/// The tests that need Python with pydantic-ai-backend (`burrow_testkit::Part::PythonInterop`).
mod python {
    use super::*;

    /// Loads `dir/state.json` in the Python StateBackend and returns its
    /// files under /f and the text of /log.txt as Python reads them.
    fn python_files(python: &str, dir: &Path) -> (Vec<String>, String) {
        let script = r#"
import json, sys
from pydantic_ai_backends import StateBackend
with open(sys.argv[1], encoding="utf-8") as f:
    state = StateBackend(files=json.load(f))
files = sorted(p for p in state.files if p.startswith("/f/"))
for p in files:
    assert state.read_bytes(p).decode() == "file %d\n" % int(p[3:7]), p
print(json.dumps({"files": files, "log": state.read_bytes("/log.txt").decode()}))
"#;
        let out = Command::new(python)
            .arg("-c")
            .arg(script)
            .arg(dir.join("state.json"))
            .output()
            .unwrap_or_else(|e| panic!("running {python}: {e}"));
        assert!(
            out.status.success(),
            "the Python peer cannot load the document: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let value: Value = serde_json::from_slice(&out.stdout).unwrap();
        let files = value["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap().to_owned())
            .collect();
        (files, value["log"].as_str().unwrap().to_owned())
    }

    #[test]
    fn killed_batches_load_in_the_python_peer_after_state_compact() {
        let python = burrow_testkit::require(burrow_testkit::Part::PythonInterop);
        kill_trials(50, |dir, printed, trial| {
            let (files, log) = python_files(&python, dir);
            check_prefix(&files, log.trim_end_matches('\n'), printed, trial);
            assert_eq!(document_files(dir).0, files, "trial {trial}");
        });
    }
}
