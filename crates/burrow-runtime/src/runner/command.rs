//! A command from a surface (`Command`) and what carrying it out did (`CommandResult`): the typed result `Runner::execute` returns and a repeated command id gets again.
//!
//! The session store keeps a command's result as JSON (the store is generic
//! storage); this file is the one place that writes and reads that form, so
//! no caller parses it back by field. The JSON is the enum's serde form,
//! tagged by `type` (`posted`, `answered`, `stopped`, `rejected`), the same
//! names and fields the store has always held.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::error::{RunnerError, RunnerErrorKind, RunnerResult};

/// A command from a surface, carried out once per command id by
/// [`Runner::execute`](super::Runner::execute).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Command {
    /// Post a message (it starts, steers or answers a run).
    Send {
        /// The thread.
        thread: String,
        /// The text.
        text: String,
        /// The message's id (one is made when `None`).
        message_id: Option<String>,
    },
    /// Post a notice: for people, never a prompt or a reply.
    Notice {
        /// The thread.
        thread: String,
        /// The text.
        text: String,
    },
    /// Answer a request of a paused run.
    Answer {
        /// The thread.
        thread: String,
        /// The paused run.
        run_id: String,
        /// The request.
        request_id: String,
        /// For an approval: approved or not.
        approved: Option<bool>,
        /// The answer's text (an approval's reason).
        text: Option<String>,
    },
    /// Stop a run of this process.
    Stop {
        /// The run.
        run_id: String,
    },
}

/// What a command did: [`Runner::execute`](super::Runner::execute)'s result,
/// remembered for its command id (except a rejection) and given again to a
/// repeated delivery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum CommandResult {
    /// A [`Command::Send`] or [`Command::Notice`]: the message was posted.
    Posted {
        /// The thread it was posted to (its name within the workspace).
        thread: String,
        /// The posted message's id.
        message_id: String,
    },
    /// A [`Command::Answer`]: the request was answered.
    Answered {
        /// The paused run.
        run_id: String,
        /// The answered request.
        request_id: String,
        /// True when it was the run's last open request, so the run resumed.
        resumed: bool,
    },
    /// A [`Command::Stop`].
    Stopped {
        /// The run asked to stop.
        run_id: String,
        /// True when the run was running in this process and was stopped.
        #[serde(deserialize_with = "stopped_flag")]
        stopped: bool,
    },
    /// The command was refused and nothing was carried out; not remembered,
    /// so the same id may be tried again.
    Rejected {
        /// Why, as a kind.
        #[serde(with = "kind_name")]
        kind: RunnerErrorKind,
        /// One sentence saying why.
        message: String,
    },
}

impl CommandResult {
    /// A rejection of `kind` saying `message`.
    pub fn rejected(kind: RunnerErrorKind, message: impl Into<String>) -> Self {
        CommandResult::Rejected {
            kind,
            message: message.into(),
        }
    }

    /// The form the session store keeps.
    pub(super) fn to_stored(&self) -> Value {
        // A plain enum of strings and bools: serialising it cannot fail.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// A result as the session store kept it; a value no version of the
    /// runner wrote is a store error, not a guess.
    pub(super) fn from_stored(value: Value) -> RunnerResult<Self> {
        serde_json::from_value(value).map_err(|e| {
            RunnerError::new(
                RunnerErrorKind::Store,
                format!("the session store holds a command result the runner cannot read: {e}"),
            )
        })
    }
}

/// `stopped` as stored: a bool, or (before it was a bool) the stopped run's
/// thread key, which meant true.
fn stopped_flag<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Bool(b) => b,
        Value::Null => false,
        _ => true,
    })
}

/// A [`RunnerErrorKind`] as its stable name ([`RunnerErrorKind::as_str`]).
mod kind_name {
    use serde::{Deserialize, Deserializer, Serializer};

    use super::RunnerErrorKind;

    pub(super) fn serialize<S: Serializer>(
        kind: &RunnerErrorKind,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.serialize_str(kind.as_str())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<RunnerErrorKind, D::Error> {
        let name = String::deserialize(d)?;
        RunnerErrorKind::from_name(&name).ok_or_else(|| {
            serde::de::Error::custom(format!("no runner error kind is named {name:?}"))
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn each_result_is_stored_in_the_form_the_store_has_always_held() {
        let cases = [
            (
                CommandResult::Posted {
                    thread: "t1".into(),
                    message_id: "m1".into(),
                },
                json!({"type": "posted", "thread": "t1", "message_id": "m1"}),
            ),
            (
                CommandResult::Answered {
                    run_id: "r1".into(),
                    request_id: "q1".into(),
                    resumed: true,
                },
                json!({"type": "answered", "run_id": "r1", "request_id": "q1", "resumed": true}),
            ),
            (
                CommandResult::Stopped {
                    run_id: "r1".into(),
                    stopped: false,
                },
                json!({"type": "stopped", "run_id": "r1", "stopped": false}),
            ),
            (
                CommandResult::rejected(RunnerErrorKind::NotFound, "no such run"),
                json!({"type": "rejected", "kind": "not_found", "message": "no such run"}),
            ),
        ];
        for (result, stored) in cases {
            assert_eq!(result.to_stored(), stored);
            assert_eq!(CommandResult::from_stored(stored).unwrap(), result);
        }
    }

    #[test]
    fn a_stop_stored_with_its_thread_key_reads_as_stopped() {
        let stored = json!({"type": "stopped", "run_id": "r1",
            "stopped": {"scope": {"tenant": "acme", "workspace": "ws"}, "thread": "t1"}});
        assert_eq!(
            CommandResult::from_stored(stored).unwrap(),
            CommandResult::Stopped {
                run_id: "r1".into(),
                stopped: true
            }
        );
    }

    #[test]
    fn a_stored_value_no_runner_wrote_is_a_store_error() {
        for stored in [
            json!({"type": "exploded"}),
            json!({"type": "posted"}),
            json!({"type": "rejected", "kind": "no_such_kind", "message": "x"}),
            json!("posted"),
        ] {
            let e = CommandResult::from_stored(stored.clone()).unwrap_err();
            assert_eq!(e.kind(), RunnerErrorKind::Store, "{stored}");
            assert!(
                e.message()
                    .starts_with("the session store holds a command result")
            );
        }
    }
}
