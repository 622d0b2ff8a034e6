//! Capabilities wrap a run and each tool call: order of nesting, refusals before a call or a run, output rewritten after a call, failures observed, and calls that never ran left alone.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use burrow_runtime::agent::{
    Agent, CallInfo, CallWork, Capability, FailureReason, Outcome, RunFailure, RunInfo,
};
use burrow_runtime::message::{Message, ToolResult};
use burrow_runtime::model::{ScriptedModel, ScriptedResponse};
use burrow_runtime::tool::{ToolOutput, ToolRegistry};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::agent::assert_valid_history;

/// Records every call it gets, under its name, into a shared log.
struct Recorder {
    name: &'static str,
    log: Arc<Mutex<Vec<String>>>,
    refuse_run: bool,
    refuse_tool: Option<&'static str>,
    suffix: Option<&'static str>,
}

impl Recorder {
    fn new(name: &'static str, log: &Arc<Mutex<Vec<String>>>) -> Self {
        Self {
            name,
            log: log.clone(),
            refuse_run: false,
            refuse_tool: None,
            suffix: None,
        }
    }

    fn note(&self, what: String) {
        self.log
            .lock()
            .unwrap()
            .push(format!("{}:{what}", self.name));
    }
}

#[async_trait]
impl Capability for Recorder {
    fn name(&self) -> &str {
        self.name
    }

    async fn before_run(&self, run: &RunInfo) -> Result<(), RunFailure> {
        assert!(!run.run_id.is_empty());
        self.note("before_run".into());
        if self.refuse_run {
            return Err(RunFailure::new("budget_exhausted", "no budget left"));
        }
        Ok(())
    }

    async fn after_run(&self, _run: &RunInfo, outcome: &Outcome) {
        self.note(format!("after_run {}", outcome.name()));
    }

    async fn before_call(&self, call: &CallInfo<'_>) -> Result<(), String> {
        self.note(format!("before {}", call.call_id));
        match self.refuse_tool {
            Some(tool) if tool == call.tool => Err(format!("{} is switched off here", call.tool)),
            _ => Ok(()),
        }
    }

    fn around_call<'a>(&'a self, call: CallInfo<'a>, work: CallWork<'a>) -> CallWork<'a> {
        Box::pin(async move {
            self.note(format!("enter {}", call.call_id));
            let result = work.await;
            self.note(format!("leave {}", call.call_id));
            result
        })
    }

    async fn after_call(&self, call: &CallInfo<'_>, output: &mut ToolOutput) {
        self.note(format!("after {}", call.call_id));
        if let Some(suffix) = self.suffix {
            output.text.push_str(suffix);
        }
    }

    async fn on_call_error(&self, call: &CallInfo<'_>, error: &str) {
        self.note(format!("error {} {error}", call.call_id));
    }
}

#[derive(Deserialize, JsonSchema)]
struct Word {
    word: String,
}

fn tools(ran: &Arc<Mutex<Vec<String>>>) -> ToolRegistry {
    let mut tools = ToolRegistry::new();
    let log = ran.clone();
    tools.add_typed("echo", "Echoes a word.", move |w: Word, _| {
        let log = log.clone();
        async move {
            log.lock().unwrap().push(format!("tool:echo {}", w.word));
            Ok(ToolOutput::ok(w.word))
        }
    });
    let log = ran.clone();
    tools.add_typed("broken", "Fails.", move |_: Word, _| {
        let log = log.clone();
        async move {
            log.lock().unwrap().push("tool:broken".to_owned());
            Err(burrow_backend::Error::failure_msg("the disk is gone"))
        }
    });
    tools
}

fn result<'a>(history: &'a [Message], id: &str) -> &'a ToolResult {
    history
        .iter()
        .find_map(|m| match m {
            Message::ToolResult(r) if r.call_id == id => Some(r),
            _ => None,
        })
        .unwrap()
}

fn agent(answers: Vec<ScriptedResponse>, tools: ToolRegistry) -> Agent {
    Agent::new(Arc::new(ScriptedModel::from_responses(answers))).with_tools(tools)
}

#[tokio::test]
async fn capabilities_nest_in_registration_order_around_the_run_and_each_call() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let answers = vec![
        ScriptedResponse::calls().call("c1", "echo", json!({"word": "hi"})),
        ScriptedResponse::text("done"),
    ];
    let agent = agent(answers, tools(&log))
        .with_capability(Arc::new(Recorder::new("outer", &log)))
        .with_capability(Arc::new(Recorder::new("inner", &log)));
    let mut history = Vec::new();
    let result = agent.run(&mut history, "go").await;
    assert_eq!(result.outcome, Outcome::Completed);
    assert_eq!(
        *log.lock().unwrap(),
        [
            "outer:before_run",
            "inner:before_run",
            "outer:before c1",
            "inner:before c1",
            "outer:enter c1",
            "inner:enter c1",
            "tool:echo hi",
            "inner:leave c1",
            "outer:leave c1",
            "inner:after c1",
            "outer:after c1",
            "inner:after_run completed",
            "outer:after_run completed",
        ]
    );
    assert_valid_history(&history);
}

#[tokio::test]
async fn after_call_rewrites_what_the_model_reads_outermost_last() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let answers = vec![
        ScriptedResponse::calls().call("c1", "echo", json!({"word": "hi"})),
        ScriptedResponse::text("done"),
    ];
    let mut outer = Recorder::new("outer", &log);
    outer.suffix = Some(" [outer]");
    let mut inner = Recorder::new("inner", &log);
    inner.suffix = Some(" [inner]");
    let agent = agent(answers, tools(&log))
        .with_capability(Arc::new(outer))
        .with_capability(Arc::new(inner));
    let mut history = Vec::new();
    agent.run(&mut history, "go").await;
    assert_eq!(result(&history, "c1").content, "hi [inner] [outer]");
}

#[tokio::test]
async fn a_refused_call_does_not_run_and_its_siblings_do() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let answers = vec![
        ScriptedResponse::calls()
            .call("c1", "broken", json!({"word": "x"}))
            .call("c2", "echo", json!({"word": "hi"})),
        ScriptedResponse::text("done"),
    ];
    let mut guard = Recorder::new("guard", &log);
    guard.refuse_tool = Some("broken");
    let agent = agent(answers, tools(&log)).with_capability(Arc::new(guard));
    let mut history = Vec::new();
    let result_ = agent.run(&mut history, "go").await;
    assert_eq!(result_.outcome, Outcome::Completed);
    let refused = result(&history, "c1");
    assert!(refused.is_error);
    assert_eq!(refused.content, "broken is switched off here");
    assert_eq!(result(&history, "c2").content, "hi");
    let log = log.lock().unwrap();
    assert!(!log.iter().any(|l| l == "tool:broken"), "{log:?}");
    // Nothing but before_call saw the refused call.
    assert!(
        !log.iter()
            .any(|l| l.ends_with(" c1") && !l.starts_with("guard:before")),
        "{log:?}"
    );
    assert_valid_history(&history);
}

#[tokio::test]
async fn a_failing_call_is_observed_and_still_ends_the_run() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let answers = vec![ScriptedResponse::calls().call("c1", "broken", json!({"word": "x"}))];
    let agent = agent(answers, tools(&log)).with_capability(Arc::new(Recorder::new("obs", &log)));
    let mut history = Vec::new();
    let result_ = agent.run(&mut history, "go").await;
    assert!(matches!(
        result_.outcome,
        Outcome::Failed {
            reason: FailureReason::ToolFailure,
            ..
        }
    ));
    let log = log.lock().unwrap();
    assert!(
        log.iter()
            .any(|l| l.starts_with("obs:error c1") && l.contains("the disk is gone")),
        "{log:?}"
    );
    assert!(!log.iter().any(|l| l == "obs:after c1"), "{log:?}");
    assert_eq!(log.last().unwrap(), "obs:after_run failed");
    assert_valid_history(&history);
}

#[tokio::test]
async fn a_capability_that_refuses_the_run_stops_it_before_any_request() {
    let log = Arc::new(Mutex::new(Vec::new()));
    // No answers at all: a request would fail the run as "model_error".
    let mut budget = Recorder::new("budget", &log);
    budget.refuse_run = true;
    let agent = agent(Vec::new(), tools(&log))
        .with_capability(Arc::new(Recorder::new("first", &log)))
        .with_capability(Arc::new(budget))
        .with_capability(Arc::new(Recorder::new("never", &log)));
    let mut history = Vec::new();
    let result_ = agent.run(&mut history, "go").await;
    let Outcome::Failed { reason, message } = &result_.outcome else {
        panic!("{:?}", result_.outcome)
    };
    assert_eq!(reason.as_str(), "budget_exhausted");
    assert_eq!(message, "no budget left");
    assert_eq!(result_.turns, 0);
    assert_eq!(
        *log.lock().unwrap(),
        [
            "first:before_run",
            "budget:before_run",
            "budget:after_run failed",
            "first:after_run failed",
        ]
    );
}

#[tokio::test]
async fn around_call_can_answer_without_running_the_tool() {
    struct Cache;
    #[async_trait]
    impl Capability for Cache {
        fn name(&self) -> &str {
            "cache"
        }
        fn around_call<'a>(&'a self, _call: CallInfo<'a>, _work: CallWork<'a>) -> CallWork<'a> {
            Box::pin(async { Ok(ToolOutput::ok("from the cache")) })
        }
    }
    let log = Arc::new(Mutex::new(Vec::new()));
    let answers = vec![
        ScriptedResponse::calls().call("c1", "echo", json!({"word": "hi"})),
        ScriptedResponse::text("done"),
    ];
    let agent = agent(answers, tools(&log)).with_capability(Arc::new(Cache));
    let mut history = Vec::new();
    agent.run(&mut history, "go").await;
    assert_eq!(result(&history, "c1").content, "from the cache");
    assert!(log.lock().unwrap().is_empty(), "the tool ran");
}
