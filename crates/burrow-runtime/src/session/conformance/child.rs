//! The second-process hook: the test binary re-runs itself on the same test as a child that opens the same store and carries out a list of operations.

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{OpenChild, ScenarioError};
use crate::session::clock::ManualClock;
use crate::session::types::{Claim, CommandKey, Commit, ThreadKey};
use crate::session::{SessionStore, StoreError};

/// The variable that makes a re-run test binary a child (its value: the request, JSON).
pub const CHILD_VAR: &str = "BURROW_SESSION_CHILD";

/// The line prefix a child prints its answers after.
const ANSWER_PREFIX: &str = "BURROW_SESSION_CHILD_ANSWERS ";

/// One operation a child carries out on its store.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum ChildOp {
    /// `commit`.
    Commit {
        /// The thread.
        thread: ThreadKey,
        /// The commit.
        commit: Commit,
    },
    /// `acquire_claim`.
    Acquire {
        /// The thread.
        thread: ThreadKey,
        /// The holder.
        holder: String,
        /// The TTL in milliseconds.
        ttl_ms: u64,
    },
    /// `release_claim`.
    Release {
        /// The thread.
        thread: ThreadKey,
        /// The claim.
        claim: Claim,
    },
    /// `record_command`.
    RecordCommand {
        /// The key.
        key: CommandKey,
        /// The result.
        result: Value,
    },
}

/// What one op gave: its JSON answer, or the error's kind and sentence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChildAnswer {
    /// The op succeeded with this value.
    Ok(Value),
    /// The op failed: `(kind, message)`.
    Err(String, String),
}

impl ChildAnswer {
    /// The value, or a scenario failure naming the error.
    pub fn ok(self) -> Result<Value, ScenarioError> {
        match self {
            ChildAnswer::Ok(v) => Ok(v),
            ChildAnswer::Err(kind, message) => Err(ScenarioError::new(format!(
                "the child's operation failed: {kind}: {message}"
            ))),
        }
    }

    /// The error kind's name, if it failed.
    pub fn err_kind(&self) -> Option<&str> {
        match self {
            ChildAnswer::Ok(_) => None,
            ChildAnswer::Err(kind, _) => Some(kind),
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct ChildRequest {
    test: String,
    locator: String,
    now_ms: i64,
    ops: Vec<ChildOp>,
}

fn answer<T: Serialize>(r: Result<T, StoreError>) -> ChildAnswer {
    match r {
        Ok(v) => ChildAnswer::Ok(serde_json::to_value(v).unwrap_or(Value::Null)),
        Err(e) => ChildAnswer::Err(e.kind().as_str().to_string(), e.message().to_string()),
    }
}

async fn carry_out(store: &dyn SessionStore, ops: Vec<ChildOp>) -> Vec<ChildAnswer> {
    let mut out = Vec::new();
    for op in ops {
        out.push(match op {
            ChildOp::Commit { thread, commit } => answer(store.commit(&thread, commit).await),
            ChildOp::Acquire {
                thread,
                holder,
                ttl_ms,
            } => answer(
                store
                    .acquire_claim(&thread, &holder, Duration::from_millis(ttl_ms))
                    .await,
            ),
            ChildOp::Release { thread, claim } => {
                answer(store.release_claim(&thread, &claim).await)
            }
            ChildOp::RecordCommand { key, result } => {
                answer(store.record_command(&key, result).await)
            }
        });
    }
    out
}

/// In a child process started for test `test`: opens the store and carries
/// out the request, printing the answers; `None` in any other process.
#[doc(hidden)]
pub async fn run_child_role(
    test: &str,
    child: Option<OpenChild>,
) -> Option<Result<(), ScenarioError>> {
    let raw = std::env::var(CHILD_VAR).ok()?;
    let request: ChildRequest = match serde_json::from_str(&raw) {
        Ok(r) => r,
        Err(e) => return Some(Err(ScenarioError::new(format!("bad child request: {e}")))),
    };
    if request.test != test {
        return None;
    }
    let Some(open) = child else {
        return Some(Err(ScenarioError::new(
            "this suite was started as a child but names no `child` opener",
        )));
    };
    let clock = Arc::new(ManualClock::new(request.now_ms));
    let store = match open(request.locator.clone(), clock).await {
        Ok(s) => s,
        Err(e) => {
            return Some(Err(ScenarioError::new(format!(
                "the child cannot open the store: {e}"
            ))));
        }
    };
    let answers = carry_out(&*store, request.ops).await;
    match serde_json::to_string(&answers) {
        Ok(line) => {
            // libtest may have printed the test's name on this line already.
            println!("\n{ANSWER_PREFIX}{line}");
            Some(Ok(()))
        }
        Err(e) => Some(Err(ScenarioError::new(format!(
            "cannot encode answers: {e}"
        )))),
    }
}

/// Runs `ops` in a child: this test binary re-run on the current test.
pub(crate) fn run_in_child(
    test: &str,
    locator: &str,
    now_ms: i64,
    ops: &[ChildOp],
) -> Result<Vec<ChildAnswer>, ScenarioError> {
    let test = test.to_string();
    let request = ChildRequest {
        test: test.clone(),
        locator: locator.to_string(),
        now_ms,
        ops: ops.to_vec(),
    };
    let json = serde_json::to_string(&request)
        .map_err(|e| ScenarioError::new(format!("cannot encode the child request: {e}")))?;
    let exe = std::env::current_exe()
        .map_err(|e| ScenarioError::new(format!("cannot find this test binary: {e}")))?;
    let out = Command::new(exe)
        .args([test.as_str(), "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_VAR, json)
        .output()
        .map_err(|e| ScenarioError::new(format!("cannot start the child process: {e}")))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.split_once(ANSWER_PREFIX).map(|(_, rest)| rest))
        .ok_or_else(|| {
            ScenarioError::new(format!(
                "the child process ({}) printed no answers; stdout: {stdout}; stderr: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ))
        })?;
    serde_json::from_str(line)
        .map_err(|e| ScenarioError::new(format!("cannot read the child's answers: {e}")))
}
