//! Running agents in session threads: the `Runner` (claims, steering, pauses, resumes, stops, deduplicated commands) and live output fanned out to watchers.
//!
//! # Key design decision: the store decides, the runner only asks
//!
//! Every step that must happen once (a message consumed, a run started or
//! ended, a tool call started or finished, a command carried out) is one
//! fenced commit of the session store ([`crate::session`]): the claim's token
//! is checked in the same transaction as the write, so a runner that lost its
//! claim cannot write over its successor, and a cursor that only moves
//! forward is saved with the write that consumes a message. What lives only in
//! the process (the run's task, its live frames, the timer that renews its
//! claim) is rebuilt from the store by the next claimant, in this process or
//! another.
//!
//! - **Messages.** [`Runner::send`] posts the message and moves the thread's
//!   `asked` cursor in one commit, then tries to claim the thread. Idle: the
//!   oldest untaken messages of one author start a run. Running here or in
//!   another process: the run's observer delivers the same author's messages
//!   before its next model request; another author's wait for the next turn,
//!   which the releasing runner hands over to. Paused: the oldest untaken
//!   message answers the open requests and the same run resumes.
//! - **Claims.** One per thread, with a fresh holder id per claimant, renewed
//!   every third of the TTL; a lost claim cancels the run; the next claimant
//!   records a run left `running` as `failed/abandoned`, after giving its
//!   unanswered calls their results: from the records, or through the call
//!   pipeline (a call never allowed is decided again by its hooks, a started
//!   idempotent call replayed under its effect keys; ADR 0241).
//! - **Tool calls.** Each call is recorded started (with its effect key)
//!   before it runs and finished after; the history refers to the recorded
//!   result instead of copying it.

mod approval;
mod ask;
mod carry;
mod checkpoints;
mod claim;
mod command;
mod config;
mod durable;
mod engine;
mod error;
mod handback;
mod ledger;
pub mod live;
mod observer;
mod pairing;
mod remote;
mod retry;
mod segment;
mod takeover;
mod turn;

pub use ask::{ASK_USER, AskArgs, PendingRequest, RequestKind};
pub(crate) use ask::{ask_in_run, asked_in_batch};
pub use carry::Carried;
pub use claim::DEFAULT_CLAIM_TTL;
pub use command::{Command, CommandResult};
pub use config::{AgentForThread, RunnerConfig};
pub use durable::{NOT_RUN, OUTCOME_UNKNOWN, QUESTION_UNANSWERED};
pub use engine::{ASKED, Resumed, RunHandle, Runner, Sent, TAKEN, last_seen};
pub use error::{RunnerError, RunnerErrorKind, RunnerResult};
pub use handback::HANDED_OVER;
pub use live::{
    DEFAULT_LIVE_BUFFER, FanoutChannel, LiveChannel, LiveEvent, LiveFrame, NullChannel, emit_draft,
    with_live,
};
pub use remote::{StopRequest, Taken, stop_cursor};
pub use turn::{EndedTurn, TurnContext, TurnEvaluator, TurnGuard, TurnInfo};
