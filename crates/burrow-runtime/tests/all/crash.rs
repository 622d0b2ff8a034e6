//! Crash points (feature `failpoints`): a run crashed at each step of its tool calls (before the PreToolUse hooks, after the decision, recorded started, after the tool, before and after each commit), then taken over by another runner. On every store: a denied or undecided call never runs without its hooks deciding allow, no side effect happens twice, every call has exactly one result, and the thread completes its next message.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use burrow_runtime::agent::{Agent, Outcome};
use burrow_runtime::failpoint::{CrashPoint, Failpoint};
use burrow_runtime::hooks::{Hook, HookEvent, HookOutput, Hooks};
use burrow_runtime::message::Message;
use burrow_runtime::model::{ScriptedModel, ScriptedResponse};
use burrow_runtime::runner::{Runner, RunnerConfig};
use burrow_runtime::session::{RunStatus, Scope, load_history};
use burrow_runtime::tool::{FnTool, ToolAnnotations, ToolOutput, ToolRegistry};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::agent::assert_valid_history;
use super::runner::{Fixture, memory, sqlite};

/// A store a crash scenario runs on; each crash point gets a fresh one.
#[derive(Debug, Clone, Copy)]
enum Store {
    Memory,
    /// A real SQLite file in a temporary folder.
    Sqlite,
    /// A fresh schema of the test server (`BURROW_POSTGRES_URL`).
    #[cfg(feature = "postgres")]
    Postgres,
}

impl Store {
    async fn fresh(self) -> Fixture {
        match self {
            Store::Memory => memory(),
            Store::Sqlite => sqlite(),
            #[cfg(feature = "postgres")]
            Store::Postgres => super::runner::postgres().await,
        }
    }
}

/// The crash scenarios, one table: each runs on memory, SQLite and PostgreSQL
/// (PostgreSQL's in a module of that name, so a missing server is skipped
/// or, under CI, fails).
macro_rules! on_every_store {
    ($($name:ident),* $(,)?) => {
        $(mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn memory() {
                super::$name(super::Store::Memory).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$name(super::Store::Sqlite).await;
            }
        })*
        #[cfg(feature = "postgres")]
        mod postgres {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                super::$name(super::Store::Postgres).await;
            })*
        }
    };
}

on_every_store!(
    a_run_crashed_at_any_step_of_a_call_is_recovered_with_every_invariant,
    a_batch_the_tool_call_limit_refused_before_a_crash_is_refused_again_on_repair,
    an_unanswered_question_of_a_crashed_run_says_it_went_unanswered,
    a_denied_call_costs_its_batch_no_extra_commit,
    a_run_without_hooks_crashed_at_any_step_is_recovered_with_every_invariant,
    without_hooks_an_answer_is_saved_with_its_first_call_s_start,
);

/// What the hooks decided and the tools did, across both runners.
#[derive(Debug, Default)]
struct Book {
    /// Per call: how many times a PreToolUse hook allowed it.
    allowed: HashMap<String, usize>,
    /// Per call: how many times its tool ran.
    executed: HashMap<String, usize>,
    /// Per effect: how many times it took effect (`put` applies its effect key once).
    effects: HashMap<String, usize>,
}

type Shared = Arc<Mutex<Book>>;

#[derive(Deserialize, JsonSchema)]
struct Tag {
    tag: String,
}

/// An answer of three calls: `c1` a charge the hook denies, `c2` a charge it
/// allows (not idempotent), `c3` a put it allows (idempotent: its effect is
/// keyed by the run and call, so a replay takes effect once); then "done".
/// Any other prompt is answered "ok". Without `hooked`, the agent has no
/// PreToolUse hook (its answers are saved with their first call's start,
/// ADR 0350) and the answer is `c2` and `c3` only.
fn agent(book: &Shared, hooked: bool) -> Agent {
    let mut tools = ToolRegistry::new();
    let b = book.clone();
    tools.add(FnTool::new("charge", "Charges.", move |a: Tag, cx| {
        let mut book = b.lock().unwrap();
        *book.executed.entry(cx.call_id.clone()).or_default() += 1;
        *book.effects.entry(format!("charge {}", a.tag)).or_default() += 1;
        async move { Ok(ToolOutput::ok(format!("charged {}", a.tag))) }
    }));
    let b = book.clone();
    tools.add(
        FnTool::new("put", "Puts, once per effect key.", move |a: Tag, cx| {
            let mut book = b.lock().unwrap();
            *book.executed.entry(cx.call_id.clone()).or_default() += 1;
            let key = format!("put {} {} {}", cx.run_id, cx.call_id, a.tag);
            book.effects.entry(key).or_insert(1);
            async move { Ok(ToolOutput::ok(format!("put {}", a.tag))) }
        })
        .with_annotations(ToolAnnotations {
            read_only: false,
            destructive: false,
            idempotent: true,
        }),
    );
    let mut hooks = Hooks::new();
    let b = book.clone();
    hooks.add(
        Hook::handler(HookEvent::PreToolUse, None, move |input| {
            let deny = input.tool_input.as_ref().and_then(|i| i["tag"].as_str()) == Some("deny");
            if !deny {
                let call = input.tool_use_id.clone().unwrap_or_default();
                *b.lock().unwrap().allowed.entry(call).or_default() += 1;
            }
            async move {
                Ok(if deny {
                    HookOutput::deny("charging that is not allowed")
                } else {
                    HookOutput::allow()
                })
            }
        })
        .unwrap(),
    );
    let model = ScriptedModel::new(move |request| {
        let last_user = request.messages.iter().rev().find_map(|m| match m {
            Message::User { text } => Some(text.clone()),
            _ => None,
        });
        let answered = matches!(request.messages.last(), Some(Message::ToolResult(_)));
        if last_user.as_deref() == Some("go") && !answered {
            let calls = if hooked {
                ScriptedResponse::calls().call("c1", "charge", json!({"tag": "deny"}))
            } else {
                ScriptedResponse::calls()
            };
            Ok(calls.call("c2", "charge", json!({"tag": "a"})).call(
                "c3",
                "put",
                json!({"tag": "b"}),
            ))
        } else if answered {
            Ok(ScriptedResponse::text("done"))
        } else {
            Ok(ScriptedResponse::text("ok"))
        }
    });
    let agent = Agent::new(Arc::new(model)).with_tools(tools);
    if hooked {
        agent.with_hooks(hooks)
    } else {
        agent
    }
}

/// Records every point a run reaches; crashes at `at`, once, if set.
#[derive(Debug, Default)]
struct Points {
    at: Option<CrashPoint>,
    seen: Mutex<BTreeSet<CrashPoint>>,
    crashed: tokio::sync::Notify,
}

impl Failpoint for Points {
    fn crash(&self, point: &CrashPoint) -> bool {
        self.seen.lock().unwrap().insert(point.clone());
        let crash = self.at.as_ref() == Some(point);
        if crash {
            self.crashed.notify_one();
        }
        crash
    }
}

/// A claim long enough that the crashed runner never renews it during a test.
const DEAD_TTL: Duration = Duration::from_secs(300);

/// Every crash point of the scenario's run on `store`, from a run that never crashes.
async fn every_point(store: Store, hooked: bool) -> Vec<CrashPoint> {
    let fx = store.fresh().await;
    let book = Shared::default();
    let points = Arc::new(Points::default());
    let runner = Runner::with_config(
        agent(&book, hooked),
        fx.store.clone(),
        RunnerConfig::default().with_failpoint(points.clone()),
    );
    let t = Scope::new("acme", "ws").thread("t1");
    let sent = runner.send(&t, "alice", "go", None).await.unwrap();
    assert_eq!(sent.run.unwrap().wait().await.outcome, Outcome::Completed);
    runner.drain().await;
    let seen: Vec<CrashPoint> = points.seen.lock().unwrap().iter().cloned().collect();
    seen
}

/// Crashes the run at `at`, lets another runner take the thread over, and checks the invariants.
async fn crash_and_recover(fx: Fixture, at: CrashPoint, hooked: bool) {
    let t = Scope::new("acme", "ws").thread("t1");
    let book = Shared::default();
    let points = Arc::new(Points {
        at: Some(at.clone()),
        ..Points::default()
    });
    let dying = Runner::with_config(
        agent(&book, hooked),
        fx.store.clone(),
        RunnerConfig::default()
            .with_claim_ttl(DEAD_TTL)
            .with_failpoint(points.clone()),
    );
    let first = dying.send(&t, "alice", "go", None).await.unwrap();
    let left = first.run.expect("the message starts a run");
    tokio::time::timeout(Duration::from_secs(60), points.crashed.notified())
        .await
        .unwrap_or_else(|_| panic!("the run never reached {at:?}"));
    // The dead runner's claim lapses; another runner takes the thread over.
    fx.clock.advance(DEAD_TTL + Duration::from_secs(1));
    let next = Runner::new(agent(&book, hooked), fx.store.clone());
    let sent = next.send(&t, "alice", "next?", None).await.unwrap();
    let run = sent.run.expect("the thread is taken over");
    assert_eq!(run.wait().await.outcome, Outcome::Completed, "at {at:?}");
    next.drain().await;

    {
        let book = book.lock().unwrap();
        let executed = |call: &str| book.executed.get(call).copied().unwrap_or(0);
        let allowed = |call: &str| book.allowed.get(call).copied().unwrap_or(0);
        assert_eq!(executed("c1"), 0, "at {at:?}: the denied call never ran");
        for call in ["c2", "c3"].into_iter().filter(|_| hooked) {
            assert!(
                executed(call) <= allowed(call),
                "at {at:?}: {call} ran {} times on {} allow decisions",
                executed(call),
                allowed(call)
            );
        }
        assert!(executed("c2") <= 1, "at {at:?}: a charge never runs twice");
        for (effect, n) in &book.effects {
            assert_eq!(*n, 1, "at {at:?}: {effect} took effect {n} times");
        }
    }
    let history = load_history(fx.store.as_ref(), &t).await.unwrap();
    assert_valid_history(&history);
    let last = history.iter().rev().find_map(|m| match m {
        Message::Assistant { .. } => Some(m.clone()),
        _ => None,
    });
    assert!(
        matches!(&last, Some(Message::Assistant { parts }) if format!("{parts:?}").contains("\"ok\"")),
        "at {at:?}: the thread answered its next message: {last:?}"
    );
    let left = fx
        .store
        .run(&t.scope, left.run_id())
        .await
        .unwrap()
        .unwrap();
    assert!(
        left.status == RunStatus::Completed || left.reason.as_deref() == Some("abandoned"),
        "at {at:?}: the crashed run ended {:?} {:?}",
        left.status,
        left.reason
    );
    drop(dying);
}

async fn a_run_crashed_at_any_step_of_a_call_is_recovered_with_every_invariant(store: Store) {
    let points = every_point(store, true).await;
    assert!(
        points.len() >= 20,
        "every step of the three calls and of each commit is a point: {points:?}"
    );
    for at in points {
        crash_and_recover(store.fresh().await, at, true).await;
    }
}

/// The same without a PreToolUse hook, where the answer rides in the
/// commit that records its first call started (ADR 0350): a crash before
/// that commit loses the answer, and the next run asks the model again.
async fn a_run_without_hooks_crashed_at_any_step_is_recovered_with_every_invariant(store: Store) {
    let points = every_point(store, false).await;
    assert!(
        points.len() >= 12,
        "every step of the two calls and of each commit is a point: {points:?}"
    );
    for at in points {
        crash_and_recover(store.fresh().await, at, false).await;
    }
}

/// An agent whose answer to "go" is three `charge` calls (counted in `book`)
/// and a limit of two tool calls, or (with `ask`) one `ask_user` call; any
/// answer after results is "done", any other prompt "ok".
fn limited_or_asking_agent(book: &Shared, ask: bool) -> Agent {
    let mut tools = ToolRegistry::new();
    let b = book.clone();
    tools.add(FnTool::new("charge", "Charges.", move |a: Tag, cx| {
        *b.lock()
            .unwrap()
            .executed
            .entry(cx.call_id.clone())
            .or_default() += 1;
        async move { Ok(ToolOutput::ok(format!("charged {}", a.tag))) }
    }));
    let model = ScriptedModel::new(move |request| {
        let last_user = request.messages.iter().rev().find_map(|m| match m {
            Message::User { text } => Some(text.clone()),
            _ => None,
        });
        let answered = matches!(request.messages.last(), Some(Message::ToolResult(_)));
        if last_user.as_deref() == Some("go") && !answered {
            Ok(if ask {
                ScriptedResponse::calls().call("q1", "ask_user", json!({"question": "which?"}))
            } else {
                ScriptedResponse::calls()
                    .call("c1", "charge", json!({"tag": "a"}))
                    .call("c2", "charge", json!({"tag": "b"}))
                    .call("c3", "charge", json!({"tag": "c"}))
            })
        } else if answered {
            Ok(ScriptedResponse::text("done"))
        } else {
            Ok(ScriptedResponse::text("ok"))
        }
    });
    Agent::new(Arc::new(model))
        .with_tools(tools)
        .with_max_tool_calls(2)
}

/// Runs "go" to its crash at `at`, lets another runner take the thread over
/// with "next?", and returns the results of the crashed run's calls.
async fn crash_then_take_over(
    fx: &Fixture,
    book: &Shared,
    ask: bool,
    at: CrashPoint,
) -> HashMap<String, String> {
    let t = Scope::new("acme", "ws").thread("t1");
    let points = Arc::new(Points {
        at: Some(at.clone()),
        ..Points::default()
    });
    let dying = Runner::with_config(
        limited_or_asking_agent(book, ask),
        fx.store.clone(),
        RunnerConfig::default()
            .with_claim_ttl(DEAD_TTL)
            .with_ask_user(ask)
            .with_failpoint(points.clone()),
    );
    dying.send(&t, "alice", "go", None).await.unwrap();
    tokio::time::timeout(Duration::from_secs(60), points.crashed.notified())
        .await
        .unwrap_or_else(|_| panic!("the run never reached {at:?}"));
    fx.clock.advance(DEAD_TTL + Duration::from_secs(1));
    let next = Runner::with_config(
        limited_or_asking_agent(book, ask),
        fx.store.clone(),
        RunnerConfig::default().with_ask_user(ask),
    );
    let sent = next.send(&t, "alice", "next?", None).await.unwrap();
    let run = sent.run.expect("the thread is taken over");
    assert_eq!(run.wait().await.outcome, Outcome::Completed, "at {at:?}");
    next.drain().await;
    drop(dying);
    let history = load_history(fx.store.as_ref(), &t).await.unwrap();
    assert_valid_history(&history);
    history
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult(r) => Some((r.call_id.clone(), r.content.clone())),
            _ => None,
        })
        .collect()
}

/// Every point of the run of "go" on `store`, from a run that never crashes.
async fn commit_points(store: Store, ask: bool) -> Vec<CrashPoint> {
    let fx = store.fresh().await;
    let book = Shared::default();
    let points = Arc::new(Points::default());
    let runner = Runner::with_config(
        limited_or_asking_agent(&book, ask),
        fx.store.clone(),
        RunnerConfig::default()
            .with_ask_user(ask)
            .with_failpoint(points.clone()),
    );
    let t = Scope::new("acme", "ws").thread("t1");
    let sent = runner.send(&t, "alice", "go", None).await.unwrap();
    sent.run.unwrap().wait().await;
    runner.drain().await;
    let seen: Vec<CrashPoint> = points.seen.lock().unwrap().iter().cloned().collect();
    seen
}

async fn a_batch_the_tool_call_limit_refused_before_a_crash_is_refused_again_on_repair(
    store: Store,
) {
    let points = commit_points(store, false).await;
    assert!(
        points
            .iter()
            .any(|p| matches!(p, CrashPoint::BeforeCommit { .. })),
        "{points:?}"
    );
    for at in points {
        let book = Shared::default();
        let results = crash_then_take_over(&store.fresh().await, &book, false, at.clone()).await;
        assert!(
            book.lock().unwrap().executed.is_empty(),
            "at {at:?}: a call over the limit never runs"
        );
        // Crashed before its answer was saved, the batch is not in the history at all.
        let refused: Vec<Option<&str>> = ["c1", "c2", "c3"]
            .iter()
            .map(|c| results.get(*c).map(String::as_str))
            .collect();
        let limit = "The call was not run: the run reached its limit of 2 tool calls.";
        assert!(
            refused == [None; 3] || refused == [Some(limit); 3],
            "at {at:?}: {refused:?}"
        );
    }
}

async fn an_unanswered_question_of_a_crashed_run_says_it_went_unanswered(store: Store) {
    let points = commit_points(store, true).await;
    let started = CrashPoint::Started {
        call_id: "q1".to_owned(),
    };
    let ended = CrashPoint::ToolEnded {
        call_id: "q1".to_owned(),
    };
    assert!(
        points.contains(&started) && points.contains(&ended),
        "{points:?}"
    );
    for at in [started, ended] {
        let book = Shared::default();
        let results = crash_then_take_over(&store.fresh().await, &book, true, at.clone()).await;
        assert_eq!(
            results["q1"],
            burrow_runtime::runner::QUESTION_UNANSWERED,
            "at {at:?}"
        );
    }
}

/// How many commits a run of "go" on `store` makes when its answer is `calls`
/// (`charge` calls by tag; the hook denies tag `deny`), counted by the commit points.
async fn commits_of(store: Store, calls: &[(&str, &str)]) -> usize {
    commits_with(store, calls, true).await
}

/// [`commits_of`], with or without the PreToolUse hook.
async fn commits_with(store: Store, calls: &[(&str, &str)], hooked: bool) -> usize {
    let mut tools = ToolRegistry::new();
    tools.add(FnTool::new("charge", "Charges.", |a: Tag, _| async move {
        Ok(ToolOutput::ok(format!("charged {}", a.tag)))
    }));
    let mut hooks = Hooks::new();
    hooks.add(
        Hook::handler(HookEvent::PreToolUse, None, |input| {
            let deny = input.tool_input.as_ref().and_then(|i| i["tag"].as_str()) == Some("deny");
            async move {
                Ok(if deny {
                    HookOutput::deny("no")
                } else {
                    HookOutput::allow()
                })
            }
        })
        .unwrap(),
    );
    let answer: Vec<(String, String)> = calls
        .iter()
        .map(|(id, tag)| ((*id).to_owned(), (*tag).to_owned()))
        .collect();
    let model = ScriptedModel::new(move |request| {
        if matches!(request.messages.last(), Some(Message::ToolResult(_))) {
            return Ok(ScriptedResponse::text("done"));
        }
        let mut r = ScriptedResponse::calls();
        for (id, tag) in &answer {
            // `bad`: arguments the tool's schema refuses, so the call never starts.
            let args = if tag == "bad" {
                json!({ "tag": 5 })
            } else {
                json!({ "tag": tag })
            };
            r = r.call(id, "charge", args);
        }
        Ok(r)
    });
    let agent = Agent::new(Arc::new(model)).with_tools(tools);
    let agent = if hooked {
        agent.with_hooks(hooks)
    } else {
        agent
    };
    let fx = store.fresh().await;
    let points = Arc::new(Points::default());
    let runner = Runner::with_config(
        agent,
        fx.store.clone(),
        RunnerConfig::default().with_failpoint(points.clone()),
    );
    let t = Scope::new("acme", "ws").thread("t1");
    let sent = runner.send(&t, "alice", "go", None).await.unwrap();
    assert_eq!(sent.run.unwrap().wait().await.outcome, Outcome::Completed);
    runner.drain().await;
    let seen = points.seen.lock().unwrap();
    seen.iter()
        .filter(|p| matches!(p, CrashPoint::AfterCommit { .. }))
        .count()
}

async fn a_denied_call_costs_its_batch_no_extra_commit(store: Store) {
    // Two allowed calls: the run's start, the answer, each start, the first
    // finish, the results (with the last finish), the end.
    let allowed = commits_of(store, &[("c2", "a"), ("c3", "b")]).await;
    assert_eq!(allowed, 7);
    // A denied call among them is never recorded, and the last allowed
    // call's finish still rides in the results' commit.
    assert_eq!(
        commits_of(store, &[("c1", "deny"), ("c2", "a"), ("c3", "b")]).await,
        allowed
    );
    assert_eq!(
        commits_of(store, &[("c2", "a"), ("c1", "deny"), ("c3", "b")]).await,
        allowed
    );
}

async fn without_hooks_an_answer_is_saved_with_its_first_call_s_start(store: Store) {
    // With the hook: the run's start, the answer, the call's start, the
    // results (with the finish), the end.
    let hooked = commits_with(store, &[("c2", "a")], true).await;
    assert_eq!(hooked, 5);
    // Without: the answer rides in the start's commit (ADR 0350).
    assert_eq!(commits_with(store, &[("c2", "a")], false).await, hooked - 1);
    // Two calls: one commit less than with the hook, the second start its own.
    assert_eq!(
        commits_with(store, &[("c2", "a"), ("c3", "b")], false).await,
        commits_with(store, &[("c2", "a"), ("c3", "b")], true).await - 1
    );
    // A call that never starts (arguments refused): the answer rides with the results.
    assert_eq!(
        commits_with(store, &[("c2", "bad")], false).await,
        hooked - 2
    );
}
