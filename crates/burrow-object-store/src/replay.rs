//! The replay guard: a mutation carrying an effect key claims a record object with a create-only put, applies, then stores its outcome there; a repeat returns it.
//!
//! Records live at `{root}/.burrow-effects/{tenant}/{escaped key}`, beside
//! the tenants' file spaces and never inside one, so no listing shows them.
//! A record is small JSON: the operation and its state: `pending` while the
//! first call runs, then the success value or the refusal's kind and
//! message (what the caller saw). A failure records nothing: the claim is
//! removed, so a retry after a failure really runs again.
//!
//! The claim is a `PutMode::Create` put: of two calls racing with one key,
//! exactly one creates the record and applies; the other finds it. A call
//! that finds a pending record younger than
//! [`crate::ObjectStoreOptions::pending_effect_ttl`] is refused with
//! Conflict (the first call is still running); an older one was left by a
//! process that died mid-change, and is taken over with a conditional put
//! on its version. If that process died after its put but before its
//! record, the change is applied a second time: the one window object
//! storage leaves open.

use burrow_backend::{Error, ErrorKind, FileContext, Result};
use bytes::Bytes;
use object_store::path::Path;
use object_store::{ObjectStoreExt, PutMode, UpdateVersion};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::backend::ObjectStoreBackend;
use crate::store::{fail, lost_race};

/// An effect record as stored (JSON).
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    op: String,
    #[serde(flatten)]
    state: State,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
enum State {
    Pending,
    Ok { value: serde_json::Value },
    Refused { kind: String, message: String },
}

fn encode(record: &Record) -> Result<Bytes> {
    serde_json::to_vec(record)
        .map(Bytes::from)
        .map_err(|e| Error::failure("the outcome of a change could not be recorded", e))
}

impl ObjectStoreBackend {
    /// Runs `apply` at most once per effect key of `ctx` (always, without one).
    pub(crate) async fn guarded<T, F>(
        &self,
        ctx: &FileContext,
        op: &str,
        shown: &burrow_backend::VPath,
        apply: F,
    ) -> Result<T>
    where
        T: Serialize + DeserializeOwned,
        F: Future<Output = Result<T>>,
    {
        let Some(effect_key) = ctx
            .effect_key
            .as_deref()
            .filter(|_| self.options.conditional_creates)
        else {
            return apply.await;
        };
        let key = self.keys.effect(&ctx.tenant, effect_key)?;
        let claimed = match self.claim(&key, op, effect_key, shown).await? {
            Claim::Replay(outcome) => return outcome,
            Claim::Mine(version) => version,
        };
        let result = apply.await;
        let state = match &result {
            Ok(value) => State::Ok {
                value: serde_json::to_value(value).map_err(|e| {
                    Error::failure("the outcome of a change could not be recorded", e)
                })?,
            },
            Err(e) if e.is_refusal() => State::Refused {
                kind: e.kind().as_str().to_owned(),
                message: e.message().to_owned(),
            },
            Err(_) => {
                // Nothing to replay: let a retry run again. Best effort; a
                // leftover claim only delays a retry until it goes stale.
                let _ = self.store.inner.delete(&key).await;
                return result;
            }
        };
        let record = encode(&Record {
            op: op.to_owned(),
            state,
        })?;
        let mode = if self.options.conditional_puts {
            PutMode::Update(claimed)
        } else {
            PutMode::Overwrite
        };
        self.store
            .put(&key, record, mode)
            .await
            .map_err(|e| fail("record the outcome of the change to", shown, e))?;
        result
    }

    /// Creates the pending record at `key`, or finds what is there.
    async fn claim<T: DeserializeOwned>(
        &self,
        key: &Path,
        op: &str,
        effect_key: &str,
        shown: &burrow_backend::VPath,
    ) -> Result<Claim<T>> {
        let pending = encode(&Record {
            op: op.to_owned(),
            state: State::Pending,
        })?;
        match self.store.put(key, pending.clone(), PutMode::Create).await {
            Ok(put) => {
                return Ok(Claim::Mine(UpdateVersion {
                    e_tag: put.e_tag,
                    version: put.version,
                }));
            }
            Err(e) if lost_race(&e) => {}
            Err(e) => return Err(fail("record the effect key of a change to", shown, e)),
        }
        let Some(found) = self.store.get(key, shown, u64::MAX).await? else {
            // Removed after a failure in between: this call may run.
            return match self.store.put(key, pending, PutMode::Create).await {
                Ok(put) => Ok(Claim::Mine(UpdateVersion {
                    e_tag: put.e_tag,
                    version: put.version,
                })),
                Err(e) if lost_race(&e) => Err(in_progress(effect_key)),
                Err(e) => Err(fail("record the effect key of a change to", shown, e)),
            };
        };
        let record: Record = serde_json::from_slice(&found.bytes)
            .map_err(|e| Error::failure("an effect record in the object store is unreadable", e))?;
        if record.op != op {
            return Err(Error::invalid_argument(format!(
                "the effect key \"{effect_key}\" was already used by a {}, not a {op}; use a new effect key for a new change.",
                record.op
            )));
        }
        match record.state {
            State::Ok { value } => Ok(Claim::Replay(serde_json::from_value(value).map_err(|e| {
                Error::failure("an effect record in the object store is unreadable", e)
            }))),
            State::Refused { kind, message } => {
                Ok(Claim::Replay(Err(match ErrorKind::from_name(&kind) {
                    Some(kind) if kind != ErrorKind::Failure => Error::refusal(kind, message),
                    _ => Error::failure_msg(format!(
                        "an effect record in the object store has an unknown refusal kind \"{kind}\"."
                    )),
                })))
            }
            State::Pending => {
                let age_ms = jiff::Timestamp::now().as_millisecond()
                    - found.meta.last_modified.timestamp_millis();
                if age_ms
                    < i64::try_from(self.options.pending_effect_ttl.as_millis()).unwrap_or(i64::MAX)
                {
                    return Err(in_progress(effect_key));
                }
                let version = UpdateVersion {
                    e_tag: found.meta.e_tag.clone(),
                    version: found.meta.version.clone(),
                };
                let mode = if self.options.conditional_puts {
                    PutMode::Update(version)
                } else {
                    PutMode::Overwrite
                };
                match self.store.put(key, pending, mode).await {
                    Ok(put) => Ok(Claim::Mine(UpdateVersion {
                        e_tag: put.e_tag,
                        version: put.version,
                    })),
                    Err(e) if lost_race(&e) => Err(in_progress(effect_key)),
                    Err(e) => Err(fail("record the effect key of a change to", shown, e)),
                }
            }
        }
    }
}

enum Claim<T> {
    /// This call holds the record (at this version) and applies the change.
    Mine(UpdateVersion),
    /// The key was used before: its outcome.
    Replay(Result<T>),
}

fn in_progress(effect_key: &str) -> Error {
    Error::refusal(
        ErrorKind::Conflict,
        format!(
            "a change with the effect key \"{effect_key}\" is still being applied; retry in a moment."
        ),
    )
}
