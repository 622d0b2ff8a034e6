//! The cost of a synchronous `task` beyond its child's own turns (issue 26: under 100 µs per task): a parent whose scripted model calls `task` 100 times in a row, each child answering in 3 turns, on the memory store, beside the same 100 children's turns run directly as runs of their own.
//!
//! `cargo bench -p burrow-runtime --bench subagent_task`. Each bench is one
//! whole workload; subtract and divide by 100 for the cost per task:
//!
//! - `tasks_100_memory`: one parent run of 101 requests, 100 of them a
//!   `task` call; each child a run in its own thread (`p/task-tN`) making 3
//!   requests (2 `read_file` calls, then its report).
//! - `children_direct_100_memory`: the baseline, the same 100 children (same
//!   model, instructions, tools, 3 requests each) run one after the other as
//!   runs of their own, each started by a message to a fresh thread.
//! - `parent_alone_100_memory`: the parent's own 101 turns with a
//!   `read_file` call where the `task` call was, to tell the parent's turn
//!   from the rest of a task's cost.
//!
//! `tasks - children_direct` is what a task costs beyond its child's turns
//! (the parent's turn that makes the call included);
//! `tasks - children_direct - parent_alone` is the task machinery alone.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use burrow_backend::{Backend, FileContext, VPath};
use burrow_runtime::agent::{Agent, Outcome};
use burrow_runtime::message::Message;
use burrow_runtime::model::{ModelRequest, ScriptedModel, ScriptedResponse};
use burrow_runtime::runner::Runner;
use burrow_runtime::session::{MemoryStore, Scope, SessionStore};
use burrow_runtime::subagent::{SubAgent, Tasks};
use burrow_runtime::tool::ToolRegistry;
use burrow_state::StateBackend;
use burrow_types::SubAgentConfig;
use serde_json::json;

fn main() {
    divan::main();
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Tasks the parent starts, one per turn.
const TASKS: usize = 100;
/// Model requests of each child: `CHILD_TURNS - 1` with a `read_file` call, then the report.
const CHILD_TURNS: usize = 3;
const INSTRUCTIONS: &str = "You look at files and report.";
const PROMPT: &str = "Look at /a.txt.";

/// The tool results in the request's history.
fn results(request: &ModelRequest<'_>) -> usize {
    request
        .messages
        .iter()
        .filter(|m| matches!(m, Message::ToolResult(_)))
        .count()
}

/// The file tools over a backend holding `/a.txt`.
fn file_tools(rt: &tokio::runtime::Runtime) -> ToolRegistry {
    let backend = Arc::new(StateBackend::new());
    rt.block_on(backend.write(
        &FileContext::default(),
        &VPath::parse("/a.txt").unwrap(),
        "one line\n",
    ))
    .unwrap();
    let mut tools = ToolRegistry::new();
    tools.add_file_tools(backend, FileContext::default());
    tools
}

/// The child's model: `read_file` until its history holds `CHILD_TURNS - 1` results, then its report.
fn child_model() -> Arc<ScriptedModel> {
    Arc::new(ScriptedModel::new(|request| {
        let n = results(&request);
        Ok(if n + 1 < CHILD_TURNS {
            ScriptedResponse::calls().call(
                format!("r{n}"),
                "read_file",
                json!({"file_path": "/a.txt"}),
            )
        } else {
            ScriptedResponse::text("the file says: one line")
        })
    }))
}

/// A parent's model calling `tool` with `args` once per turn until `TASKS` results came back.
fn parent_model(tool: &'static str, args: serde_json::Value) -> Arc<ScriptedModel> {
    Arc::new(ScriptedModel::new(move |request| {
        let n = results(&request);
        Ok(if n < TASKS {
            ScriptedResponse::calls().call(format!("t{n}"), tool, args.clone())
        } else {
            ScriptedResponse::text("done")
        })
    }))
}

fn scope() -> Scope {
    Scope::new("bench", "ws")
}

/// Runs `agent` in a fresh thread `thread` of `store` to its end, checking it made `turns` requests.
async fn run_one(runner: &Runner, thread: &str, prompt: &str, turns: usize) {
    let sent = runner
        .send(&scope().thread(thread), "user", prompt, None)
        .await
        .unwrap();
    let result = sent.run.unwrap().wait().await;
    assert_eq!(result.outcome, Outcome::Completed, "{thread}");
    assert_eq!(result.turns, turns, "{thread}");
}

/// The parent with the `task` tool, its children on `store`.
fn tasks_parent(rt: &tokio::runtime::Runtime, store: Arc<dyn SessionStore>) -> Runner {
    let scout = SubAgent::new(SubAgentConfig::new(
        "scout",
        "Looks at files.",
        INSTRUCTIONS,
    ))
    .with_model(child_model());
    let args = json!({"description": "look", "prompt": PROMPT, "subagent_type": "scout"});
    let model = parent_model("task", args);
    let tasks = Tasks::new(vec![scout], model.clone(), store.clone(), scope())
        .with_tools(file_tools(rt))
        .with_child_max_turns(CHILD_TURNS + 1);
    let agent = tasks.install(
        Agent::new(model)
            .with_instructions("You are a benchmark.")
            .with_max_turns(usize::MAX),
    );
    Runner::new(agent, store)
}

/// The child as an agent of its own.
fn child_runner(rt: &tokio::runtime::Runtime, store: Arc<dyn SessionStore>) -> Runner {
    let agent = Agent::new(child_model())
        .with_tools(file_tools(rt))
        .with_instructions(INSTRUCTIONS)
        .with_max_turns(CHILD_TURNS + 1);
    Runner::new(agent, store)
}

/// The parent calling `read_file` where it called `task`.
fn plain_parent(rt: &tokio::runtime::Runtime, store: Arc<dyn SessionStore>) -> Runner {
    let model = parent_model("read_file", json!({"file_path": "/a.txt"}));
    let agent = Agent::new(model)
        .with_tools(file_tools(rt))
        .with_instructions("You are a benchmark.")
        .with_max_turns(usize::MAX);
    Runner::new(agent, store)
}

fn memory() -> Arc<dyn SessionStore> {
    Arc::new(MemoryStore::new())
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn tasks_100_memory(bencher: divan::Bencher) {
    let rt = runtime();
    bencher
        .with_inputs(|| {
            let store = memory();
            (store.clone(), tasks_parent(&rt, store))
        })
        .bench_local_values(|(store, runner)| {
            rt.block_on(async {
                run_one(&runner, "p", "go", TASKS + 1).await;
                runner.drain().await;
            });
            (store, runner)
        });
    // Every child ran once, in its own thread, to its end.
    let store = memory();
    let runner = tasks_parent(&rt, store.clone());
    rt.block_on(async {
        run_one(&runner, "p", "go", TASKS + 1).await;
        runner.drain().await;
        for i in [0, TASKS - 1] {
            let runs = store
                .runs(&scope().thread(format!("p/task-t{i}")))
                .await
                .unwrap();
            assert_eq!(runs.len(), 1);
            assert_eq!(runs[0].status.as_str(), "completed");
        }
    });
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn children_direct_100_memory(bencher: divan::Bencher) {
    let rt = runtime();
    bencher
        .with_inputs(|| {
            let store = memory();
            (store.clone(), child_runner(&rt, store))
        })
        .bench_local_values(|(store, runner)| {
            rt.block_on(async {
                for i in 0..TASKS {
                    run_one(&runner, &format!("d{i}"), PROMPT, CHILD_TURNS).await;
                }
                runner.drain().await;
            });
            (store, runner)
        });
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn parent_alone_100_memory(bencher: divan::Bencher) {
    let rt = runtime();
    bencher
        .with_inputs(|| {
            let store = memory();
            (store.clone(), plain_parent(&rt, store))
        })
        .bench_local_values(|(store, runner)| {
            rt.block_on(async {
                run_one(&runner, "p", "go", TASKS + 1).await;
                runner.drain().await;
            });
            (store, runner)
        });
}
