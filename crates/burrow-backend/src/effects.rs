//! `EffectRecord`: the one encoding of what a mutation under an effect key did (operation, path, outcome), and the check a repeat must pass.
//!
//! A mutation carrying an effect key is applied at most once per (tenant,
//! key): a backend with `effect_keys` records the outcome and a repeat gets
//! it back. The record names the operation *and the path*, so the same key
//! sent again for another operation or another path is refused
//! (InvalidArgument) instead of replaying the first path's result as if it
//! were this one's. What is recorded is what the caller saw: the success
//! value, or a refusal's kind and message; a failure records nothing, so a
//! retry after one really runs again.
//!
//! The encoding is JSON: `{"op":"edit","path":"/a.txt","state":"ok","value":{..}}`,
//! `"state":"refused"` with `"kind"` and `"message"`, or `"state":"pending"`
//! while the first call runs (for stores that claim a record before
//! applying). A record written before paths were recorded (no `"path"`) is
//! checked by operation alone.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorKind, Result};
use crate::path::VPath;
use crate::shown;

/// What one mutation under an effect key recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EffectRecord {
    /// The operation: "write", "edit", "delete", ...
    pub op: String,
    /// The path it was applied to; `None` only in records older than this field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// What it did.
    #[serde(flatten)]
    pub outcome: EffectOutcome,
}

/// The outcome part of an [`EffectRecord`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum EffectOutcome {
    /// The first call is still running (or died running).
    Pending,
    /// It succeeded with this value.
    Ok {
        /// The success value, as JSON.
        value: serde_json::Value,
    },
    /// It was refused.
    Refused {
        /// The refusal's kind, as [`ErrorKind::as_str`] names it.
        kind: String,
        /// The refusal's message.
        message: String,
    },
}

fn unrecordable(e: serde_json::Error) -> Error {
    Error::failure("the outcome of a change could not be recorded", e)
}

impl EffectRecord {
    /// The record a store claims before applying `op` to `path`.
    pub fn pending(op: &str, path: &VPath) -> Self {
        Self {
            op: op.to_owned(),
            path: Some(path.as_str().to_owned()),
            outcome: EffectOutcome::Pending,
        }
    }

    /// The record of `op` on `path` ending with `result`; `Ok(None)` for a
    /// failure, which records nothing.
    pub fn of<T: Serialize>(op: &str, path: &VPath, result: &Result<T>) -> Result<Option<Self>> {
        let outcome = match result {
            Ok(value) => EffectOutcome::Ok {
                value: serde_json::to_value(value).map_err(unrecordable)?,
            },
            Err(e) if e.is_refusal() => EffectOutcome::Refused {
                kind: e.kind().as_str().to_owned(),
                message: e.message().to_owned(),
            },
            Err(_) => return Ok(None),
        };
        Ok(Some(Self {
            op: op.to_owned(),
            path: Some(path.as_str().to_owned()),
            outcome,
        }))
    }

    /// The record as JSON bytes.
    pub fn encode(&self) -> Result<Vec<u8>> {
        serde_json::to_vec(self).map_err(unrecordable)
    }

    /// A record from its JSON bytes; Failure when they are not one.
    pub fn decode(bytes: &[u8]) -> Result<Self> {
        serde_json::from_slice(bytes)
            .map_err(|e| Error::failure("a recorded outcome of a change is unreadable", e))
    }

    /// True while the first call has not recorded its outcome.
    pub fn is_pending(&self) -> bool {
        self.outcome == EffectOutcome::Pending
    }

    /// Refuses (InvalidArgument) a repeat of `effect_key` for an operation or
    /// a path other than the recorded ones.
    pub fn check(&self, effect_key: &str, op: &str, path: &VPath) -> Result<()> {
        let same_path = self.path.as_deref().is_none_or(|p| p == path.as_str());
        if self.op == op && same_path {
            return Ok(());
        }
        let recorded = match &self.path {
            Some(p) => format!("a {} of {}", self.op, shown(p)),
            None => format!("a {}", self.op),
        };
        Err(Error::invalid_argument(format!(
            "the effect key {:#} was already used by {recorded}, not a {op} of {}; use a new effect key for a new change.",
            shown(effect_key),
            shown(path.as_str()),
        )))
    }

    /// What a repeat of `op` on `path` under `effect_key` returns: the
    /// [`check`](Self::check) refusal, Conflict while the record is pending,
    /// else the recorded value or refusal.
    pub fn replay<T: DeserializeOwned>(
        &self,
        effect_key: &str,
        op: &str,
        path: &VPath,
    ) -> Result<T> {
        self.check(effect_key, op, path)?;
        match &self.outcome {
            EffectOutcome::Pending => Err(Error::refusal(
                ErrorKind::Conflict,
                format!(
                    "a change with the effect key {:#} is still running; try again once it is done.",
                    shown(effect_key)
                ),
            )),
            EffectOutcome::Ok { value } => T::deserialize(value)
                .map_err(|e| Error::failure("a recorded outcome of a change is unreadable", e)),
            EffectOutcome::Refused { kind, message } => match ErrorKind::from_name(kind) {
                Some(kind) if kind != ErrorKind::Failure => {
                    Err(Error::refusal(kind, message.clone()))
                }
                _ => Err(Error::failure_msg(
                    "a recorded outcome of a change has an unknown refusal kind",
                )),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use burrow_types::WriteResult;

    use super::*;

    fn p(s: &str) -> VPath {
        VPath::parse(s).unwrap()
    }

    #[test]
    fn a_record_round_trips_and_replays() {
        let ok: Result<WriteResult> = Ok(WriteResult::written("/a"));
        let record = EffectRecord::of("write", &p("/a"), &ok).unwrap().unwrap();
        let bytes = record.encode().unwrap();
        let back = EffectRecord::decode(&bytes).unwrap();
        assert_eq!(back, record);
        let json: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(json["op"], "write");
        assert_eq!(json["path"], "/a");
        assert_eq!(json["state"], "ok");
        let replayed: WriteResult = back.replay("k", "write", &p("/a")).unwrap();
        assert_eq!(replayed, WriteResult::written("/a"));

        let refused: Result<()> = Err(Error::not_found(p("/a")));
        let record = EffectRecord::of("delete", &p("/a"), &refused)
            .unwrap()
            .unwrap();
        let err = record.replay::<()>("k", "delete", &p("/a")).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NotFound);
        assert_eq!(err.message(), Error::not_found(p("/a")).message());

        let failed: Result<()> = Err(Error::failure_msg("disk"));
        assert_eq!(EffectRecord::of("delete", &p("/a"), &failed).unwrap(), None);
    }

    #[test]
    fn the_same_key_for_another_path_or_operation_is_refused() {
        let ok: Result<WriteResult> = Ok(WriteResult::written("/a"));
        let record = EffectRecord::of("write", &p("/a"), &ok).unwrap().unwrap();
        for (op, path) in [("write", "/b"), ("edit", "/a"), ("edit", "/b")] {
            let err = record
                .replay::<WriteResult>("k\n1", op, &p(path))
                .unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{op} {path}");
            assert!(err.message().contains("/a") && err.message().contains(path));
            assert!(!err.message().contains('\n'), "{}", err.message());
        }
    }

    #[test]
    fn pending_and_older_records() {
        let pending = EffectRecord::pending("edit", &p("/a"));
        assert!(pending.is_pending());
        let err = pending.replay::<()>("k", "edit", &p("/a")).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Conflict);
        // A record from before paths were recorded is checked by operation alone.
        let old = EffectRecord::decode(br#"{"op":"delete","state":"ok","value":null}"#).unwrap();
        assert_eq!(old.path, None);
        old.replay::<()>("k", "delete", &p("/any")).unwrap();
        assert!(old.check("k", "write", &p("/any")).is_err());
        assert_eq!(
            EffectRecord::decode(b"not json").unwrap_err().kind(),
            ErrorKind::Failure
        );
    }
}
