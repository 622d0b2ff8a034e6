//! `burrow thread rewind` and the thread's workspace (ADR 0359), through the binary on a SQLite session and an fs backend with a scripted model: a rewind whose `--backend` is not the one the thread's runs recorded is refused naming both and changes nothing (no file, no checkpoint, no history entry, no folder made), the same folder named relatively rewinds; with the `failpoints` feature, a rewind SIGKILLed after its intent and after restoring the files is finished by running it again, with one rewind entry each and the bytes exact.

use std::path::Path;

use serde_json::{Value, json};

use super::support::{Run, burrow_in, script, session_spec};

/// Bytes no text path would keep: NUL, CRLF, a byte that is not UTF-8.
const ORIGINAL: &[u8] = b"\x00\x01 original bytes\r\n\xff";

/// The scripted model of one run: it reads /a.txt (a file is read before it
/// is overwritten), writes `content` to it, then says done.
fn writes(dir: &Path, name: &str, content: &str) -> String {
    script(
        dir,
        name,
        &[
            json!({"tool_calls": [{"id": "r", "name": "read_file",
                "arguments": {"file_path": "/a.txt"}}]}),
            json!({"tool_calls": [{"id": "w", "name": "write_file",
                "arguments": {"file_path": "/a.txt", "content": content}}]}),
            json!({"text": "done"}),
        ],
    )
}

/// `burrow --backend fs:DIR/work ARGS...` in `dir`.
fn in_work(dir: &Path, args: &[&str]) -> Run {
    let spec = format!("fs:{}", dir.join("work").display());
    let mut all = vec!["--backend", spec.as_str()];
    all.extend_from_slice(args);
    burrow_in(dir, &all, b"")
}

/// Runs thread t1 once with `model`, which writes /a.txt.
fn run_t1(dir: &Path, model: &str) {
    let session = session_spec(dir);
    in_work(
        dir,
        &[
            "run",
            "go",
            "--model",
            model,
            "--session",
            &session,
            "--thread",
            "t1",
        ],
    )
    .assert_code(0);
}

fn checkpoints(dir: &Path) -> Vec<Value> {
    let session = session_spec(dir);
    let listed = in_work(
        dir,
        &[
            "--json",
            "thread",
            "checkpoints",
            "t1",
            "--session",
            &session,
        ],
    );
    listed.assert_code(0);
    listed.json()["checkpoints"].as_array().unwrap().clone()
}

fn shown(dir: &Path) -> Value {
    let session = session_spec(dir);
    let run = in_work(
        dir,
        &["--json", "thread", "show", "t1", "--session", &session],
    );
    run.assert_code(0);
    run.json()
}

/// How many rewind entries the thread's history holds.
fn rewinds(dir: &Path) -> usize {
    shown(dir)["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            e["message"]
                .to_string()
                .contains("The conversation was rewound here")
        })
        .count()
}

fn a_txt(dir: &Path) -> Vec<u8> {
    std::fs::read(dir.join("work/a.txt")).unwrap()
}

/// A thread whose one run rewrote /a.txt (its bytes were ORIGINAL): the
/// checkpoint before that write.
fn written_thread(dir: &Path) -> String {
    std::fs::create_dir(dir.join("work")).unwrap();
    std::fs::write(dir.join("work/a.txt"), ORIGINAL).unwrap();
    run_t1(dir, &writes(dir, "m1.jsonl", "changed"));
    assert_eq!(a_txt(dir), b"changed");
    let ks = checkpoints(dir);
    assert_eq!(ks.len(), 1, "{ks:?}");
    assert_eq!(ks[0]["files"], json!(["/a.txt"]));
    ks[0]["id"].as_str().unwrap().to_owned()
}

#[test]
fn a_rewind_through_another_backend_is_refused_and_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let k = written_thread(dir);
    let session = session_spec(dir);
    let work = format!("fs:{}", dir.join("work").display());
    let other = format!("fs:{}", dir.join("other").display());
    // `burrow --backend B... --json thread rewind t1 --to K EXTRA...`.
    let rewind = |backends: &[&str], extra: &[&str]| {
        let mut args: Vec<&str> = Vec::new();
        for b in backends {
            args.extend(["--backend", b]);
        }
        args.extend([
            "--json",
            "thread",
            "rewind",
            "t1",
            "--to",
            &k,
            "--session",
            &session,
        ]);
        args.extend_from_slice(extra);
        burrow_in(dir, &args, b"")
    };
    let said = rewind(&[&other], &[]).assert_json_error(1, "invalid_argument");
    assert_eq!(
        said,
        format!(
            "thread t1's runs changed the files of --backend {work}, not of --backend {other}; \
             give the thread's --backend (or rewind with --conversation-only), nothing was changed"
        )
    );
    // A mount the runs did not have is another workspace too.
    let mount = "/m=memory:";
    let said = rewind(&[&work, mount], &[]).assert_json_error(1, "invalid_argument");
    assert!(
        said.contains(&format!("not of --backend {work} {mount};")),
        "{said}"
    );
    // Nothing changed: the file, the checkpoints (a rewind saves one first),
    // the history, and the other folder was never made.
    assert_eq!(a_txt(dir), b"changed");
    assert_eq!(checkpoints(dir).len(), 1);
    assert_eq!(rewinds(dir), 0);
    assert!(!dir.join("other").exists());
    // The same folder named relatively is the thread's workspace.
    let done = rewind(&["fs:./work"], &[]);
    done.assert_code(0);
    assert_eq!(done.json()["rewound"]["restored"], json!(["/a.txt"]));
    assert_eq!(a_txt(dir), ORIGINAL);
    assert_eq!(rewinds(dir), 1);
    // A rewind that touches no file may name any backend.
    std::fs::write(dir.join("work/a.txt"), "kept").unwrap();
    let conv = rewind(&[&other], &["--conversation-only"]);
    conv.assert_code(0);
    assert_eq!(conv.json()["rewound"]["restored"], json!([]));
    assert_eq!(a_txt(dir), b"kept");
    assert_eq!(rewinds(dir), 2);
}

/// Needs the `failpoints` feature: the binary's rewind stops for good where
/// BURROW_FAILPOINT_REWIND says, and the test kills it there.
#[cfg(feature = "failpoints")]
mod crash {
    use std::path::Path;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    use serde_json::json;

    use super::super::support::session_spec;
    use super::{ORIGINAL, a_txt, in_work, rewinds, run_t1, shown, writes, written_thread};

    /// How long the test waits for the other process before it fails.
    const PATIENCE: Duration = Duration::from_secs(60);

    /// Starts `burrow thread rewind t1 --to K` stopping at `step`, waits until
    /// `reached` says it got there (the process still alive), and SIGKILLs it.
    fn kill_rewind_at(dir: &Path, k: &str, step: &str, reached: impl Fn() -> bool) {
        let work = format!("fs:{}", dir.join("work").display());
        let mut child = Command::new(env!("CARGO_BIN_EXE_burrow"))
            .args([
                "--backend",
                &work,
                "thread",
                "rewind",
                "t1",
                "--to",
                k,
                "--session",
                &session_spec(dir),
                "--claim-ttl",
                "1",
            ])
            .env("BURROW_FAILPOINT_REWIND", step)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + PATIENCE;
        while !reached() {
            assert!(
                child.try_wait().unwrap().is_none(),
                "the rewind ended before it reached {step}"
            );
            assert!(Instant::now() < deadline, "the rewind never reached {step}");
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(child.try_wait().unwrap().is_none(), "it ended at {step}");
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// Runs the rewind again until the killed one's claim lapses; its JSON.
    fn rewind_again(dir: &Path, k: &str) -> serde_json::Value {
        let session = session_spec(dir);
        let deadline = Instant::now() + PATIENCE;
        loop {
            let run = in_work(
                dir,
                &[
                    "--json",
                    "thread",
                    "rewind",
                    "t1",
                    "--to",
                    k,
                    "--session",
                    &session,
                ],
            );
            if run.code == 0 {
                return run.json();
            }
            // Only the dead process's claim may stand in the way.
            let said = run.json();
            assert_eq!(said["error"]["kind"], "busy", "{said}");
            assert!(Instant::now() < deadline, "{said}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    #[test]
    fn a_rewind_killed_midway_is_finished_by_running_it_again() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();

        // Killed once the files are restored, before the conversation moved.
        let k1 = written_thread(dir);
        kill_rewind_at(dir, &k1, "restored", || a_txt(dir) == ORIGINAL);
        let left = shown(dir);
        assert!(left["thread"]["rewind"].is_object(), "{left}");
        assert_eq!(rewinds(dir), 0);
        let done = rewind_again(dir, &k1);
        assert_eq!(done["rewound"]["finished_earlier"], json!(k1), "{done}");
        assert_eq!(a_txt(dir), ORIGINAL);
        assert_eq!(rewinds(dir), 1);
        assert!(shown(dir)["thread"]["rewind"].is_null());

        // Killed right after its intent: no file restored yet.
        run_t1(dir, &writes(dir, "m2.jsonl", "changed again"));
        assert_eq!(a_txt(dir), b"changed again");
        let ks = super::checkpoints(dir);
        let k2 = ks.last().unwrap()["id"].as_str().unwrap().to_owned();
        kill_rewind_at(dir, &k2, "begun", || {
            shown(dir)["thread"]["rewind"].is_object()
        });
        assert_eq!(a_txt(dir), b"changed again");
        let done = rewind_again(dir, &k2);
        assert_eq!(done["rewound"]["finished_earlier"], json!(k2), "{done}");
        assert_eq!(a_txt(dir), ORIGINAL);
        assert_eq!(rewinds(dir), 2);
    }
}
