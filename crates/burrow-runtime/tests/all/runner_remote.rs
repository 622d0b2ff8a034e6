//! Runs driven from another runner over the same store (ADR 0180): a stop requested through the store stops the holder's run, a paused run is stopped under the stopper's own claim, and a waiter takes over a thread whose holder's claim lapsed. Every scenario runs on every store of the runner tests (memory, SQLite and, with feature `postgres`, PostgreSQL).

use std::sync::Arc;
use std::time::Duration;

use burrow_runtime::agent::{Agent, Outcome};
use burrow_runtime::model::{ScriptedModel, ScriptedResponse};
use burrow_runtime::runner::{Runner, RunnerConfig, StopRequest, Taken};
use burrow_runtime::session::{RunStatus, Scope};
use serde_json::json;

#[cfg(feature = "postgres")]
use super::runner::postgres;
use super::runner::{Fixture, hanging_agent, memory, on_every_store, sqlite};
use super::support::start_run;

const POLL: Duration = Duration::from_millis(5);

on_every_store!(
    a_stop_requested_by_another_runner_stops_the_holders_run,
    a_paused_run_is_stopped_by_another_runner_under_its_own_claim,
    a_waiter_takes_over_a_thread_whose_holders_claim_lapsed,
);

fn text_agent(reply: &'static str) -> Agent {
    Agent::new(Arc::new(ScriptedModel::new(move |_| {
        Ok(ScriptedResponse::text(reply))
    })))
}

async fn a_stop_requested_by_another_runner_stops_the_holders_run(fx: Fixture) {
    let t = Scope::new("acme", "ws").thread("t1");
    let (agent, started) = hanging_agent();
    let holder = Runner::new(agent, fx.store.clone());
    let stopper = Runner::new(text_agent("unused"), fx.store.clone());
    assert_eq!(stopper.request_stop(&t).await.unwrap(), StopRequest::Idle);
    let run = start_run(&holder, &t, "alice", "hang").await;
    started.await.unwrap();
    let asked = stopper.request_stop(&t).await.unwrap();
    assert_eq!(
        asked,
        StopRequest::Requested {
            run_id: run.run_id().to_owned()
        }
    );
    assert!(matches!(run.wait().await.outcome, Outcome::Stopped { .. }));
    let record = stopper.wait_settled(&t, run.run_id(), POLL).await.unwrap();
    assert_eq!(record.status, RunStatus::Stopped);
    holder.drain().await;
    // A later run of the thread is not stopped by the old request.
    let next = Runner::new(text_agent("fine"), fx.store.clone());
    let later = start_run(&next, &t, "alice", "again").await;
    assert_eq!(later.wait().await.outcome, Outcome::Completed);
}

async fn a_paused_run_is_stopped_by_another_runner_under_its_own_claim(fx: Fixture) {
    let t = Scope::new("acme", "ws").thread("t1");
    let asking = Agent::new(Arc::new(ScriptedModel::from_responses(vec![
        ScriptedResponse::calls().call("q1", "ask_user", json!({"question": "Which?"})),
    ])));
    let config = RunnerConfig::default().with_ask_user(true);
    let holder = Runner::with_config(asking, fx.store.clone(), config);
    let run = start_run(&holder, &t, "alice", "ask").await;
    assert!(matches!(run.wait().await.outcome, Outcome::Paused { .. }));
    holder.drain().await;
    let stopper = Runner::new(text_agent("unused"), fx.store.clone());
    let stopped = stopper.request_stop(&t).await.unwrap();
    assert_eq!(
        stopped,
        StopRequest::Stopped {
            run_id: run.run_id().to_owned()
        }
    );
    let record = fx.store.run(&t.scope, run.run_id()).await.unwrap().unwrap();
    assert_eq!(record.status, RunStatus::Stopped);
    assert_eq!(record.reason.as_deref(), Some("stopped"));
    assert!(
        fx.store.claim(&t).await.unwrap().is_none(),
        "the stopper released its claim"
    );
}

async fn a_waiter_takes_over_a_thread_whose_holders_claim_lapsed(fx: Fixture) {
    let t = Scope::new("acme", "ws").thread("t1");
    let (agent, started) = hanging_agent();
    let holder = Runner::new(agent, fx.store.clone());
    let left = start_run(&holder, &t, "alice", "hang").await;
    started.await.unwrap();
    let waiter = Runner::new(text_agent("taken over"), fx.store.clone());
    let sent = waiter.send(&t, "alice", "second", None).await.unwrap();
    assert!(
        sent.run.is_none(),
        "the holder's live claim keeps the thread"
    );
    // The holder stops renewing as far as the store can tell: its claim lapses.
    fx.clock.advance(Duration::from_secs(31));
    let taken = waiter.wait_taken(&t, sent.seq, POLL).await.unwrap();
    let Taken::Here(run) = taken else {
        panic!("the waiter did not take the thread over: {taken:?}");
    };
    assert_eq!(run.wait().await.outcome, Outcome::Completed);
    let abandoned = fx
        .store
        .run(&t.scope, left.run_id())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(abandoned.status, RunStatus::Failed);
    assert_eq!(abandoned.reason.as_deref(), Some("abandoned"));
    holder.aclose().await;
    waiter.drain().await;
}
