//! How a `Runner` is set up: the live channel, claim TTL, `ask_user`, the agent name, the agent of each thread, turn context and evaluators, run labels and the test failpoint.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::claim::DEFAULT_CLAIM_TTL;

use super::live::{FanoutChannel, LiveChannel};
use super::turn::{TurnContext, TurnEvaluator};
use crate::agent::Agent;
use crate::session::ThreadKey;

/// What makes the agent of each run segment in a thread from the runner's
/// agent: a runner serving many threads and tenants gives each agent what
/// must know its thread (a `task` tool whose children are runs of the
/// thread's scope, an artifact workspace named after the thread; ADR 0405).
pub type AgentForThread = Arc<dyn Fn(&Agent, &ThreadKey) -> Agent + Send + Sync>;

/// How a runner is set up.
#[derive(Clone)]
#[non_exhaustive]
pub struct RunnerConfig {
    /// Where runs' live frames go (an in-process fan-out by default).
    pub live: Arc<dyn LiveChannel>,
    /// How long a thread claim lasts without renewal (30 s). It is renewed
    /// every third of it; it must exceed the clock skew between runners.
    pub claim_ttl: Duration,
    /// Whether the agent gets the `ask_user` tool, which pauses its run until someone answers.
    pub ask_user: bool,
    /// The author name the runner records its own actions under.
    pub agent_name: String,
    /// Entered around each turn, inside its span.
    pub turn_context: Option<Arc<dyn TurnContext>>,
    /// Given each turn as it ends, to judge it in the background.
    pub evaluators: Vec<Arc<dyn TurnEvaluator>>,
    /// Kept in the record of every run this runner starts
    /// ([`RunRecord::labels`](crate::session::RunRecord::labels)), for
    /// example the model it runs with, so that a process answering the run
    /// later can set itself up alike. A run resumed keeps its own.
    pub run_labels: BTreeMap<String, String>,
    /// Takes a checkpoint (the files' pre-images) before every batch that
    /// changes files (ADR 0295); none by default.
    pub checkpoints: Option<crate::checkpoint::Checkpointer>,
    /// Makes the agent of each segment (and of each repair of a run left
    /// behind) in a thread; `None`: the runner's agent, as it is.
    pub agent_for_thread: Option<AgentForThread>,
    /// Where this runner's runs crash, in crash-recovery tests (feature `failpoints`).
    #[cfg(feature = "failpoints")]
    pub failpoint: Option<Arc<dyn crate::failpoint::Failpoint>>,
}

impl Default for RunnerConfig {
    fn default() -> Self {
        Self {
            live: Arc::new(FanoutChannel::default()),
            claim_ttl: DEFAULT_CLAIM_TTL,
            ask_user: false,
            agent_name: "assistant".to_owned(),
            turn_context: None,
            evaluators: Vec::new(),
            run_labels: BTreeMap::new(),
            checkpoints: None,
            agent_for_thread: None,
            #[cfg(feature = "failpoints")]
            failpoint: None,
        }
    }
}

impl RunnerConfig {
    /// The same config taking a checkpoint before every batch that changes files.
    pub fn with_checkpoints(mut self, checkpointer: crate::checkpoint::Checkpointer) -> Self {
        self.checkpoints = Some(checkpointer);
        self
    }

    /// The same config with live frames going to `live`.
    pub fn with_live(mut self, live: Arc<dyn LiveChannel>) -> Self {
        self.live = live;
        self
    }

    /// The same config with claims lasting `ttl`.
    pub fn with_claim_ttl(mut self, ttl: Duration) -> Self {
        self.claim_ttl = ttl;
        self
    }

    /// The same config with `context` entered around each turn.
    pub fn with_turn_context(mut self, context: Arc<dyn TurnContext>) -> Self {
        self.turn_context = Some(context);
        self
    }

    /// The same config with one more evaluator of ended turns.
    pub fn with_evaluator(mut self, evaluator: Arc<dyn TurnEvaluator>) -> Self {
        self.evaluators.push(evaluator);
        self
    }

    /// The same config with one more label on the runs it starts (the same name replaces).
    pub fn with_run_label(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.run_labels.insert(name.into(), value.into());
        self
    }

    /// The same config with runs crashing where `failpoint` says (feature `failpoints`).
    #[cfg(feature = "failpoints")]
    pub fn with_failpoint(mut self, failpoint: Arc<dyn crate::failpoint::Failpoint>) -> Self {
        self.failpoint = Some(failpoint);
        self
    }

    /// The same config making each thread's agent with `agent_for`, given
    /// the runner's agent and the thread, as each segment starts (ADR 0405).
    pub fn with_agent_for_thread(mut self, agent_for: AgentForThread) -> Self {
        self.agent_for_thread = Some(agent_for);
        self
    }

    /// The same config with (or without) the `ask_user` tool.
    pub fn with_ask_user(mut self, ask_user: bool) -> Self {
        self.ask_user = ask_user;
        self
    }
}

impl std::fmt::Debug for RunnerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunnerConfig")
            .field("claim_ttl", &self.claim_ttl)
            .field("ask_user", &self.ask_user)
            .field("agent_name", &self.agent_name)
            .field("agent_for_thread", &self.agent_for_thread.is_some())
            .finish_non_exhaustive()
    }
}
