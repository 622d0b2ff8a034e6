//! The call pipeline and panics: a panicking PreToolUse handler denies its call, a panic anywhere else in the loop (a capability, a model adapter, an observer, a store) ends the run `failed/panicked` with a valid history and a released thread, and refusals go to PostToolUseFailure.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use burrow_runtime::agent::{Agent, Capability, FailureReason, FnProvider, Outcome, RunInfo};
use burrow_runtime::hooks::{Hook, HookEvent, HookOutput, Hooks};
use burrow_runtime::message::Message;
use burrow_runtime::model::{ScriptedModel, ScriptedResponse};
use burrow_runtime::runner::Runner;
use burrow_runtime::session::{RunStatus, Scope, load_history};
use burrow_runtime::tool::{ToolOutput, ToolRegistry};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::agent::assert_valid_history;
use super::runner::Fixture;
use super::support::start_run;

#[derive(Deserialize, JsonSchema)]
struct Nothing {}

/// A registry with `charge` (counted) and `refuse` (always a refusal, counted).
fn counted_tools(charges: Arc<AtomicUsize>) -> ToolRegistry {
    let mut tools = ToolRegistry::new();
    let c = charges.clone();
    tools.add_typed("charge", "Charges.", move |_: Nothing, _| {
        c.fetch_add(1, Ordering::SeqCst);
        async { Ok(ToolOutput::ok("charged")) }
    });
    tools.add_typed("refuse", "Refuses.", move |_: Nothing, _| {
        charges.fetch_add(1, Ordering::SeqCst);
        async { Ok(ToolOutput::refused("no such account.")) }
    });
    tools
}

/// A model that calls `tool` once, then answers "done".
fn calls_once(tool: &'static str) -> Arc<ScriptedModel> {
    Arc::new(ScriptedModel::from_responses(vec![
        ScriptedResponse::calls().call("c1", tool, json!({})),
        ScriptedResponse::text("done"),
    ]))
}

fn result_of<'a>(history: &'a [Message], call: &str) -> &'a str {
    history
        .iter()
        .find_map(|m| match m {
            Message::ToolResult(r) if r.call_id == call => Some(r.content.as_str()),
            _ => None,
        })
        .expect("the call has a result")
}

/// A hook handler's body that panics with `what`.
fn broken(what: &str) -> Result<HookOutput, String> {
    panic!("{what}")
}

#[tokio::test]
async fn a_panicking_pre_tool_use_handler_denies_the_call_and_the_run_goes_on() {
    let charges = Arc::new(AtomicUsize::new(0));
    let mut hooks = Hooks::new();
    hooks.add(
        Hook::handler(HookEvent::PreToolUse, Some("charge"), |_| async {
            broken("the policy table is corrupt")
        })
        .unwrap(),
    );
    let agent = Agent::new(calls_once("charge"))
        .with_tools(counted_tools(charges.clone()))
        .with_hooks(hooks);
    let mut history = Vec::new();
    let result = agent.run(&mut history, "charge it").await;
    assert_eq!(result.outcome, Outcome::Completed);
    assert_eq!(
        charges.load(Ordering::SeqCst),
        0,
        "the denied call never ran"
    );
    assert_valid_history(&history);
    let text = result_of(&history, "c1");
    assert!(text.contains("denied"), "{text}");
    assert!(text.contains("the policy table is corrupt"), "{text}");
}

#[tokio::test]
async fn a_panicking_instruction_provider_fails_the_run_panicked_with_a_valid_history() {
    let agent = Agent::new(calls_once("charge"))
        .with_tools(counted_tools(Arc::new(AtomicUsize::new(0))))
        .with_provider(Arc::new(FnProvider(
            |history: &[Message]| -> Option<String> {
                if history.len() > 1 {
                    panic!("the provider broke");
                }
                None
            },
        )));
    let mut history = Vec::new();
    let result = agent.run(&mut history, "charge it").await;
    match &result.outcome {
        Outcome::Failed { reason, message } => {
            assert_eq!(*reason, FailureReason::Panicked);
            assert!(message.contains("the provider broke"), "{message}");
        }
        other => panic!("the run ended {other:?}"),
    }
    assert_eq!(result.outcome.reason(), Some("panicked"));
    assert_valid_history(&history);
}

#[tokio::test]
async fn a_panicking_post_tool_use_handler_fails_the_run_and_every_call_keeps_one_result() {
    let charges = Arc::new(AtomicUsize::new(0));
    let mut hooks = Hooks::new();
    hooks.add(
        Hook::handler(HookEvent::PostToolUse, None, |_| async {
            broken("the audit log is gone")
        })
        .unwrap(),
    );
    let agent = Agent::new(calls_once("charge"))
        .with_tools(counted_tools(charges.clone()))
        .with_hooks(hooks);
    let mut history = Vec::new();
    let result = agent.run(&mut history, "charge it").await;
    assert_eq!(result.outcome.name(), "failed");
    assert_eq!(result.outcome.reason(), Some("panicked"));
    assert_eq!(charges.load(Ordering::SeqCst), 1);
    assert_valid_history(&history);
}

#[tokio::test]
async fn a_refusal_goes_to_post_tool_use_failure_and_a_result_to_post_tool_use() {
    let post = Arc::new(AtomicUsize::new(0));
    let failure = Arc::new(AtomicUsize::new(0));
    let mut hooks = Hooks::new();
    let p = post.clone();
    hooks.add(
        Hook::handler(HookEvent::PostToolUse, None, move |_| {
            p.fetch_add(1, Ordering::SeqCst);
            async { Ok(HookOutput::allow()) }
        })
        .unwrap(),
    );
    let f = failure.clone();
    hooks.add(
        Hook::handler(HookEvent::PostToolUseFailure, None, move |input| {
            assert_eq!(input.error.as_deref(), Some("no such account."));
            f.fetch_add(1, Ordering::SeqCst);
            async { Ok(HookOutput::allow()) }
        })
        .unwrap(),
    );
    let agent = Agent::new(calls_once("refuse"))
        .with_tools(counted_tools(Arc::new(AtomicUsize::new(0))))
        .with_hooks(hooks.clone());
    let result = agent.run(&mut Vec::new(), "refuse it").await;
    assert_eq!(result.outcome, Outcome::Completed);
    assert_eq!(
        (post.load(Ordering::SeqCst), failure.load(Ordering::SeqCst)),
        (0, 1)
    );
    let agent = Agent::new(calls_once("charge"))
        .with_tools(counted_tools(Arc::new(AtomicUsize::new(0))))
        .with_hooks(hooks);
    agent.run(&mut Vec::new(), "charge it").await;
    assert_eq!(
        (post.load(Ordering::SeqCst), failure.load(Ordering::SeqCst)),
        (1, 1)
    );
}

/// A capability whose `before_run` panics on the first run only.
struct PanicsOnce(AtomicUsize);

#[async_trait]
impl Capability for PanicsOnce {
    fn name(&self) -> &str {
        "panics-once"
    }

    async fn before_run(&self, _run: &RunInfo) -> Result<(), burrow_runtime::agent::RunFailure> {
        if self.0.fetch_add(1, Ordering::SeqCst) == 0 {
            panic!("the capability broke");
        }
        Ok(())
    }
}

async fn a_panicking_capability_ends_the_run_panicked_and_the_thread_takes_the_next_message(
    fx: Fixture,
) {
    let t = Scope::new("acme", "ws").thread("t1");
    let agent = Agent::new(Arc::new(ScriptedModel::new(|_| {
        Ok(ScriptedResponse::text("ok"))
    })))
    .with_capability(Arc::new(PanicsOnce(AtomicUsize::new(0))));
    let runner = Runner::new(agent, fx.store.clone());
    let first = start_run(&runner, &t, "alice", "one").await;
    let ended = first.wait().await;
    assert_eq!(ended.outcome.reason(), Some("panicked"));
    runner.drain().await;
    the_run_is_recorded_panicked_and_the_thread_goes_on(&fx, &runner, &t, first.run_id(), "two")
        .await;
}

/// After a run that ended `failed/panicked`: its record says so, its claim is
/// released, and the thread's next message (`next`) starts a run that
/// completes with a valid history, which is returned.
async fn the_run_is_recorded_panicked_and_the_thread_goes_on(
    fx: &Fixture,
    runner: &Runner,
    t: &burrow_runtime::session::ThreadKey,
    run_id: &str,
    next: &str,
) -> Vec<Message> {
    let run = fx.store.run(&t.scope, run_id).await.unwrap().unwrap();
    assert_eq!(run.status, RunStatus::Failed);
    assert_eq!(run.reason.as_deref(), Some("panicked"));
    assert_eq!(
        fx.store.claim(t).await.unwrap(),
        None,
        "the claim is released, not left to be renewed forever"
    );
    let second = start_run(runner, t, "alice", next).await;
    assert_eq!(second.wait().await.outcome, Outcome::Completed);
    runner.drain().await;
    let history = load_history(fx.store.as_ref(), t).await.unwrap();
    assert_valid_history(&history);
    history
}

/// A model adapter whose first request panics once `go` fires (after a
/// watcher has attached), then answers "ok".
fn panics_on_its_first_request(go: tokio::sync::oneshot::Receiver<()>) -> Arc<ScriptedModel> {
    let go = Arc::new(tokio::sync::Mutex::new(Some(go)));
    let requests = Arc::new(AtomicUsize::new(0));
    Arc::new(ScriptedModel::new_async(move |_| {
        let (go, n) = (go.clone(), requests.fetch_add(1, Ordering::SeqCst));
        async move {
            if n == 0 {
                if let Some(rx) = go.lock().await.take() {
                    let _ = rx.await;
                }
                panic!("the model adapter broke");
            }
            Ok(ScriptedResponse::text("ok"))
        }
    }))
}

async fn a_panicking_model_adapter_ends_the_run_panicked_releases_the_claim_ends_its_watchers_and_the_thread_goes_on(
    fx: Fixture,
) {
    use burrow_runtime::runner::LiveEvent;
    use futures::StreamExt;
    let t = Scope::new("acme", "ws").thread("t1");
    let (go_tx, go_rx) = tokio::sync::oneshot::channel();
    let runner = Runner::new(
        Agent::new(panics_on_its_first_request(go_rx)),
        fx.store.clone(),
    );
    let first = start_run(&runner, &t, "alice", "one").await;
    // The watcher attaches while the model request is in flight.
    let watcher = runner.watch(&t.scope, first.run_id());
    go_tx.send(()).unwrap();
    let frames: Vec<_> =
        tokio::time::timeout(std::time::Duration::from_secs(60), watcher.collect())
            .await
            .expect("the watcher gets the end frame instead of hanging");
    assert_eq!(
        frames.last().map(|f| &f.event),
        Some(&LiveEvent::End {
            outcome: Some("failed".into()),
            reason: Some("panicked".into()),
        }),
        "{frames:?}"
    );
    let ended = first.wait().await;
    assert_eq!(ended.outcome.reason(), Some("panicked"), "{ended:?}");
    runner.drain().await;
    let history = the_run_is_recorded_panicked_and_the_thread_goes_on(
        &fx,
        &runner,
        &t,
        first.run_id(),
        "two",
    )
    .await;
    assert_eq!(
        history.last(),
        Some(&Message::assistant_text("ok")),
        "{history:?}"
    );
}

/// An observer (a driver following the run from inside the loop) that panics
/// once the answer is in the history, before its calls run.
struct PanicsWhenAnswered;

#[async_trait]
impl burrow_runtime::agent::RunObserver for PanicsWhenAnswered {
    async fn answered(
        &self,
        _history: &[Message],
    ) -> Result<(), burrow_runtime::agent::RunFailure> {
        panic!("the observer broke");
    }
}

/// A panicking observer ends the run `failed/panicked` before any call of the
/// answer runs, and the history it leaves has one result per call.
#[tokio::test]
async fn a_panicking_observer_ends_the_run_panicked_and_no_call_runs() {
    let charges = Arc::new(AtomicUsize::new(0));
    let agent = Agent::new(calls_once("charge")).with_tools(counted_tools(charges.clone()));
    let mut history = Vec::new();
    let options = burrow_runtime::agent::RunOptions {
        observer: Some(burrow_runtime::agent::Observer(Arc::new(
            PanicsWhenAnswered,
        ))),
        ..Default::default()
    };
    let result = agent
        .run_with(&mut history, Some("charge it".into()), options, &mut |_| {})
        .await;
    assert_eq!(result.outcome.reason(), Some("panicked"), "{result:?}");
    assert_eq!(charges.load(Ordering::SeqCst), 0, "no call ran");
    assert_valid_history(&history);
}

/// A store that panics while it records a call started: the run ends
/// `failed/panicked`, the call never runs, the claim is released, and the
/// thread completes its next message with a valid history.
async fn a_panicking_store_ends_the_run_panicked_and_the_thread_goes_on(fx: Fixture) {
    let t = Scope::new("acme", "ws").thread("t1");
    let charges = Arc::new(AtomicUsize::new(0));
    let store = super::faulty::Faulty::panicking_at_a_call_start(fx.store.clone());
    let model = Arc::new(ScriptedModel::from_responses(vec![
        ScriptedResponse::calls().call("c1", "charge", json!({})),
        ScriptedResponse::text("done"),
    ]));
    let agent = Agent::new(model).with_tools(counted_tools(charges.clone()));
    let runner = Runner::new(agent, store);
    let first = start_run(&runner, &t, "alice", "charge it").await;
    let ended = first.wait().await;
    assert_eq!(ended.outcome.reason(), Some("panicked"), "{ended:?}");
    runner.drain().await;
    assert_eq!(charges.load(Ordering::SeqCst), 0, "the call never ran");
    the_run_is_recorded_panicked_and_the_thread_goes_on(
        &fx,
        &runner,
        &t,
        first.run_id(),
        "and now?",
    )
    .await;
}

mod on_every_store {
    use super::super::runner::on_every_store;
    #[cfg(feature = "postgres")]
    use super::super::runner::postgres;
    use super::super::runner::{memory, sqlite};
    use super::*;

    on_every_store!(
        a_panicking_capability_ends_the_run_panicked_and_the_thread_takes_the_next_message,
        a_panicking_model_adapter_ends_the_run_panicked_releases_the_claim_ends_its_watchers_and_the_thread_goes_on,
        a_call_whose_hook_was_deciding_at_the_crash_never_runs_without_it,
        a_panicking_store_ends_the_run_panicked_and_the_thread_goes_on,
    );
}

/// Crash point "a PreToolUse hook is running": runner A's hook never returns
/// (its process is as good as dead), its claim lapses, runner B takes the
/// thread over. The call was never allowed, so it is decided again, by B's
/// hooks: it runs once they allow it, never before, and the thread completes
/// its next message with one result per call.
async fn a_call_whose_hook_was_deciding_at_the_crash_never_runs_without_it(fx: Fixture) {
    let t = Scope::new("acme", "ws").thread("t1");
    let charges = Arc::new(AtomicUsize::new(0));
    let (entered_tx, entered_rx) = tokio::sync::oneshot::channel::<()>();
    let entered = Arc::new(std::sync::Mutex::new(Some(entered_tx)));
    let mut hooks = Hooks::new();
    hooks.add(
        Hook::handler(HookEvent::PreToolUse, Some("charge"), move |_| {
            let tx = entered.lock().unwrap().take();
            async move {
                if let Some(tx) = tx {
                    let _ = tx.send(());
                }
                std::future::pending::<Result<HookOutput, String>>().await
            }
        })
        .unwrap(),
    );
    let dying = Agent::new(calls_once("charge"))
        .with_tools(counted_tools(charges.clone()))
        .with_hooks(hooks);
    let a = Runner::new(dying, fx.store.clone());
    let left = start_run(&a, &t, "alice", "charge it").await;
    entered_rx.await.unwrap();
    fx.clock.advance(std::time::Duration::from_secs(31));

    // B's hook decides: it allows, counting its decisions and what had run before.
    let decided = Arc::new(AtomicUsize::new(0));
    let ran_before = Arc::new(AtomicUsize::new(usize::MAX));
    let mut hooks = Hooks::new();
    let (d, c, r) = (decided.clone(), charges.clone(), ran_before.clone());
    hooks.add(
        Hook::handler(HookEvent::PreToolUse, Some("charge"), move |_| {
            d.fetch_add(1, Ordering::SeqCst);
            r.store(c.load(Ordering::SeqCst), Ordering::SeqCst);
            async { Ok(HookOutput::allow()) }
        })
        .unwrap(),
    );
    let b = Runner::new(
        Agent::new(Arc::new(ScriptedModel::new(|_| {
            Ok(ScriptedResponse::text("taken over"))
        })))
        .with_tools(counted_tools(charges.clone()))
        .with_hooks(hooks),
        fx.store.clone(),
    );
    let sent = b.send(&t, "alice", "are you there?", None).await.unwrap();
    assert_eq!(sent.run.unwrap().wait().await.outcome, Outcome::Completed);
    b.drain().await;
    assert_eq!(
        decided.load(Ordering::SeqCst),
        1,
        "the call was decided again"
    );
    assert_eq!(
        ran_before.load(Ordering::SeqCst),
        0,
        "the undecided call never ran before its hooks allowed it"
    );
    assert_eq!(charges.load(Ordering::SeqCst), 1, "then it ran, once");
    let run = fx
        .store
        .run(&t.scope, left.run_id())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(run.reason.as_deref(), Some("abandoned"));
    let calls = fx.store.tool_calls(&t.scope, left.run_id()).await.unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].attempts, 1, "recorded started once, once allowed");
    let history = load_history(fx.store.as_ref(), &t).await.unwrap();
    assert_valid_history(&history);
    assert_eq!(result_of(&history, "c1"), "charged");
}
