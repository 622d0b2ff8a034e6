//! Test support: a temporary folder with a state file, and a runner for the real `burrow` binary.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;
use tempfile::TempDir;

/// A temporary folder holding `state.json` (absent until the first write).
pub struct Workspace {
    dir: TempDir,
    pub state: PathBuf,
}

impl Workspace {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state.json");
        Workspace { dir, state }
    }

    /// The folder itself.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The `--backend` value of this workspace's state file.
    pub fn spec(&self) -> String {
        format!("state:{}", self.state.display())
    }

    /// Runs `burrow --backend state:FILE ARGS...` with empty stdin.
    pub fn run(&self, args: &[&str]) -> Run {
        self.run_with_stdin(args, b"")
    }

    /// Runs `burrow --backend state:FILE ARGS...` with `stdin`.
    pub fn run_with_stdin(&self, args: &[&str], stdin: &[u8]) -> Run {
        let spec = self.spec();
        let mut all = vec!["--backend", spec.as_str()];
        all.extend_from_slice(args);
        burrow_in(self.dir(), &all, stdin)
    }

    /// Runs `burrow --backend state:FILE --json ARGS...` and expects success.
    pub fn json_ok(&self, args: &[&str]) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let run = self.run(&all);
        run.assert_code(0);
        run.json()
    }

    /// Writes `text` to `path` through the binary, and expects success.
    pub fn put(&self, path: &str, text: &str) {
        self.run_with_stdin(&["write", path], text.as_bytes())
            .assert_code(0);
    }

    /// The names of the entries of the folder, sorted.
    pub fn dir_entries(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

/// Runs the binary in `cwd` with exactly `args`, feeding `stdin` from a
/// thread so a child writing lots of output never deadlocks against us.
pub fn burrow_in(cwd: &Path, args: &[&str], stdin: &[u8]) -> Run {
    burrow_in_env(cwd, args, stdin, &[])
}

/// [`burrow_in`] with the environment variables `env` set. `BURROW_LOG` is
/// unset unless `env` sets it, so the log is the default whatever the
/// tests' own environment says.
pub fn burrow_in_env(cwd: &Path, args: &[&str], stdin: &[u8], env: &[(&str, &str)]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_burrow"));
    command.env_remove("BURROW_LOG");
    command.envs(env.iter().copied());
    let mut child = command
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdin.take().unwrap();
    let input = stdin.to_vec();
    let feeder = std::thread::spawn(move || {
        // The child may exit without reading (e.g. a usage error).
        let _ = pipe.write_all(&input);
    });
    let output = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    Run {
        code: output.status.code().unwrap(),
        stdout: output.stdout,
        stderr: String::from_utf8(output.stderr).unwrap(),
        args: args.iter().map(|s| s.to_string()).collect(),
    }
}

/// What one run of the binary did.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: Vec<u8>,
    pub stderr: String,
    pub args: Vec<String>,
}

impl Run {
    /// stdout as text.
    pub fn out(&self) -> String {
        String::from_utf8(self.stdout.clone()).unwrap()
    }

    /// stdout as one JSON value.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout of {:?} is not JSON ({e}): {}",
                self.args,
                self.out()
            )
        })
    }

    /// Panics with everything the run printed unless it exited with `code`.
    pub fn assert_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code,
            code,
            "burrow {:?}\nstdout: {}\nstderr: {}",
            self.args,
            String::from_utf8_lossy(&self.stdout),
            self.stderr
        );
        self
    }

    /// Expects a `--json` refusal or failure of `kind`, returning its message.
    pub fn assert_json_error(&self, code: i32, kind: &str) -> String {
        self.assert_code(code);
        let value = self.json();
        let object = value.as_object().unwrap();
        assert_eq!(object.len(), 1, "{value}");
        let error = object["error"].as_object().unwrap();
        let mut keys: Vec<&str> = error.keys().map(String::as_str).collect();
        keys.sort();
        assert_eq!(keys, ["kind", "message"], "{value}");
        assert_eq!(error["kind"], kind, "{value}");
        let message = error["message"].as_str().unwrap().to_owned();
        assert!(!message.is_empty());
        message
    }
}

/// Replaces every `modified_at` / `created_at` string in `value` by "<time>".
pub fn mask_times(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                if (key == "modified_at" || key == "created_at") && v.is_string() {
                    *v = Value::String("<time>".into());
                } else {
                    mask_times(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(mask_times),
        _ => {}
    }
}

/// Writes a scripted model's answers, one JSON line each, to `dir/name`: its model spec.
pub fn script(dir: &Path, name: &str, answers: &[Value]) -> String {
    let path = dir.join(name);
    let text: String = answers.iter().map(|a| format!("{a}\n")).collect();
    std::fs::write(&path, text).unwrap();
    format!("scripted:{}", path.display())
}

/// The SQLite session spec of a test folder.
pub fn session_spec(dir: &Path) -> String {
    format!("sqlite:{}", dir.join("session.db").display())
}

/// `burrow --json thread show THREAD` on the folder's SQLite session.
pub fn show_thread(dir: &Path, thread: &str) -> Value {
    let run = burrow_in(
        dir,
        &[
            "--json",
            "thread",
            "show",
            thread,
            "--session",
            &session_spec(dir),
        ],
        b"",
    );
    run.assert_code(0);
    run.json()
}

/// Every stdout line of a `--json` run, parsed.
pub fn json_lines(run: &Run) -> Vec<Value> {
    run.out()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The `tool_result` event of the call `id` among a `--json` run's `events`.
pub fn tool_result(events: &[Value], id: &str) -> Value {
    events
        .iter()
        .find(|e| e["type"] == "tool_result" && e["id"] == id)
        .unwrap_or_else(|| panic!("no result of {id}: {events:?}"))
        .clone()
}
