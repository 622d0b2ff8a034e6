//! Test support for the backend specs: runs the real binary with any `--backend` flags (and environment) in a temporary folder.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use serde_json::Value;
use tempfile::TempDir;

use super::support::Run;

/// A temporary folder (the working directory) and the `--backend` flags every run gets.
#[derive(Clone)]
pub struct On {
    dir: Arc<TempDir>,
    backends: Vec<String>,
    tenant: Option<String>,
    env: Vec<(String, String)>,
}

impl On {
    /// `--backend SPEC` for each of `specs`; `{dir}` in a spec becomes the
    /// temporary folder, so specs can name files in it.
    pub fn new(specs: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().display().to_string();
        let backends = specs.iter().map(|s| s.replace("{dir}", &root)).collect();
        On {
            dir: Arc::new(dir),
            backends,
            tenant: None,
            env: Vec::new(),
        }
    }

    /// The same folder and flags, run as `--tenant tenant`.
    pub fn as_tenant(&self, tenant: &str) -> On {
        On {
            tenant: Some(tenant.to_owned()),
            ..self.clone()
        }
    }

    /// The same folder, with other `--backend` flags (`{dir}` expanded).
    pub fn with_specs(&self, specs: &[&str]) -> On {
        let root = self.dir().display().to_string();
        On {
            backends: specs.iter().map(|s| s.replace("{dir}", &root)).collect(),
            ..self.clone()
        }
    }

    /// Runs every command with `key=value` in its environment.
    pub fn with_env(mut self, key: &str, value: &str) -> On {
        self.env.push((key.to_owned(), value.to_owned()));
        self
    }

    /// The temporary folder.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// `name` in the temporary folder.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir().join(name)
    }

    /// Runs `burrow --backend ... ARGS...` with `stdin`.
    pub fn run_with_stdin(&self, args: &[&str], stdin: &[u8]) -> Run {
        let mut all: Vec<&str> = Vec::new();
        for backend in &self.backends {
            all.extend(["--backend", backend.as_str()]);
        }
        if let Some(tenant) = &self.tenant {
            all.extend(["--tenant", tenant.as_str()]);
        }
        all.extend_from_slice(args);
        run_binary(self.dir(), &all, stdin, &self.env)
    }

    /// Runs `burrow --backend ... ARGS...` with empty stdin.
    pub fn run(&self, args: &[&str]) -> Run {
        self.run_with_stdin(args, b"")
    }

    /// Runs with `--json` and expects success.
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

    /// The exact bytes of `path`, through `burrow cat`.
    pub fn cat(&self, path: &str) -> Vec<u8> {
        let run = self.run(&["cat", path]);
        run.assert_code(0);
        run.stdout
    }

    /// The paths `ls PATH --json` lists, in order.
    pub fn ls(&self, path: &str) -> Vec<String> {
        paths(&self.json_ok(&["ls", path]))
    }
}

/// The paths of an `ls --json` (`entries`), `glob --json` (`paths`) or
/// `grep --json` (`matches`) result, in order.
pub fn paths(result: &Value) -> Vec<String> {
    if let Some(paths) = result.get("paths") {
        return paths
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_str().unwrap().to_owned())
            .collect();
    }
    result
        .get("entries")
        .or_else(|| result.get("matches"))
        .and_then(Value::as_array)
        .unwrap_or_else(|| panic!("not an ls, glob or grep result: {result}"))
        .iter()
        .map(|e| e["path"].as_str().unwrap().to_owned())
        .collect()
}

/// Runs the binary in `cwd` with `args` and `env`, feeding `stdin` from a
/// thread so a child writing lots of output never deadlocks against us.
fn run_binary(cwd: &Path, args: &[&str], stdin: &[u8], env: &[(String, String)]) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_burrow"))
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
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
