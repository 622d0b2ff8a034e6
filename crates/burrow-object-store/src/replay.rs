//! The replay guard: a mutation carrying an effect key claims a record object with a create-only put, records what it is about to change, applies, then stores its outcome there; a repeat returns it, and never writes twice.
//!
//! Records live at `{root}/.burrow-effects/{tenant}/{escaped key}`, beside
//! the tenants' file spaces and never inside one, so no listing shows them.
//! A record is small JSON: the operation, the virtual path, and its state:
//! `pending` while the first call runs, then the success value or the
//! refusal's kind and message (what the caller saw). A record answers only
//! a call with the same operation **and** path; any other use of its key is
//! refused with InvalidArgument and changes nothing.
//!
//! # Never twice (ADR 0090)
//!
//! The claim is a `PutMode::Create` put: of two calls racing with one key,
//! exactly one creates the record and applies; the other finds it. Before
//! each put (or delete) of the data, the claimant writes its **intent** into
//! the pending record: the version the object must still have (or "absent")
//! and the outcome the change will return, with a conditional put on its
//! claim (a claimant that lost its claim stops there, unwritten). The data
//! put itself carries a tag (user metadata `burrow-effect`, a digest of the
//! record key). A later call that finds the record still pending can
//! therefore tell what happened, whatever the first call's fate:
//!
//! - the object carries this key's tag (or, for a delete, is gone): the
//!   change landed; its recorded outcome is returned and recorded;
//! - the object is still at the intended version (or absent): it did not
//!   land; the claim may be taken over once it is stale (or released);
//! - anything else (it landed and was changed since, or another writer
//!   came between): undecidable, so it is refused with Conflict rather
//!   than risk a second write, and that refusal is recorded.
//!
//! A failure before any data put removes the claim (a retry runs afresh);
//! after one, the claim is marked released, so a retry judges the intent at
//! once. If recording the outcome fails after the change landed, the call
//! still returns its outcome (the change is applied); a retry finds the tag
//! and replays it.
//!
//! A claim is stale when the store's own clock says it is older than
//! [`crate::ObjectStoreOptions::pending_effect_ttl`]: the record's
//! last-modified time is compared with the last-modified time of a probe
//! object put just then (both store timestamps; the local clock is never
//! used).

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use burrow_backend::{Error, ErrorKind, FileContext, Result, VPath};
use bytes::Bytes;
use object_store::path::Path;
use object_store::{
    Attribute, AttributeValue, Attributes, ObjectMeta, ObjectStoreExt, PutMode, UpdateVersion,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::backend::ObjectStoreBackend;
use crate::store::{Store, fail, lost_race};

/// The user-metadata name of the tag a keyed change puts on the object it writes.
pub const EFFECT_TAG: &str = "burrow-effect";

/// An effect record as stored (JSON). A local encoding: the shared
/// replay-record encoding of `burrow-backend` can replace it once it exists.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    op: String,
    /// The virtual path the change is about (absent in records of older versions: they match nothing).
    #[serde(default)]
    path: Option<String>,
    #[serde(flatten)]
    state: State,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
enum State {
    Pending {
        /// What the claimant is about to change, once it knows.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        intent: Option<Intent>,
        /// The claimant gave up after a failure: judge the intent now, no need to wait.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        released: bool,
    },
    Ok {
        value: serde_json::Value,
    },
    Refused {
        kind: String,
        message: String,
    },
}

/// The change a claimant is about to make: the object's version it requires and the outcome it will return.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Intent {
    /// The object's version before the change; `None`: it must not exist.
    before: Option<Version>,
    outcome: serde_json::Value,
}

/// An object version as recorded (ETag and, on a versioned bucket, the version id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Version {
    e_tag: Option<String>,
    version: Option<String>,
}

impl Version {
    fn of(meta: &ObjectMeta) -> Version {
        Version {
            e_tag: meta.e_tag.clone(),
            version: meta.version.clone(),
        }
    }

    fn from_update(v: &UpdateVersion) -> Version {
        Version {
            e_tag: v.e_tag.clone(),
            version: v.version.clone(),
        }
    }
}

fn encode(record: &Record) -> Result<Bytes> {
    serde_json::to_vec(record)
        .map(Bytes::from)
        .map_err(|e| Error::failure("the outcome of a change could not be recorded", e))
}

fn to_value<T: Serialize>(value: &T) -> Result<serde_json::Value> {
    serde_json::to_value(value)
        .map_err(|e| Error::failure("the outcome of a change could not be recorded", e))
}

fn from_value<T: DeserializeOwned>(value: serde_json::Value) -> Result<T> {
    serde_json::from_value(value)
        .map_err(|e| Error::failure("an effect record in the object store is unreadable", e))
}

/// What the guard decided for one call.
pub(crate) enum Guard<T> {
    /// No effect key (or a store without create-only puts): apply unguarded.
    Free,
    /// The key was used before for this change: its outcome.
    Replay(Result<T>),
    /// This call holds the claim: apply with this fence, then [`Fence::finish`].
    Mine(Fence),
}

/// The claim a call holds while it applies a keyed change.
pub(crate) struct Fence {
    store: Store,
    record: Path,
    op: String,
    path: VPath,
    /// The record's version this call last put (its claim); `None` without conditional puts.
    held: Mutex<Option<UpdateVersion>>,
    conditional: bool,
    /// The tag's value, when the store keeps user metadata.
    tag: Option<String>,
    /// True once an intent was recorded (a data put may have happened).
    intended: AtomicBool,
    /// The outcome the claimant this call took over from intended, if any.
    prior: Option<serde_json::Value>,
}

impl Fence {
    fn held(&self) -> Option<UpdateVersion> {
        self.held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn hold(&self, e_tag: Option<String>, version: Option<String>) {
        *self
            .held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) =
            Some(UpdateVersion { e_tag, version });
    }

    fn mode(&self) -> PutMode {
        match self.held() {
            Some(v) if self.conditional => PutMode::Update(v),
            _ => PutMode::Overwrite,
        }
    }

    /// The attributes a data put carries: this key's tag.
    pub fn attributes(&self) -> Attributes {
        let mut attributes = Attributes::new();
        if let Some(tag) = &self.tag {
            attributes.insert(
                Attribute::Metadata(EFFECT_TAG.into()),
                AttributeValue::from(tag.clone()),
            );
        }
        attributes
    }

    /// True when `attributes` carry this key's tag: the change landed.
    pub fn tagged(&self, attributes: &Attributes) -> bool {
        let Some(tag) = &self.tag else {
            return false;
        };
        attributes
            .get(&Attribute::Metadata(EFFECT_TAG.into()))
            .is_some_and(|v| v.as_ref() == tag)
    }

    async fn put_record(&self, state: State) -> object_store::Result<()> {
        let bytes = encode(&Record {
            op: self.op.clone(),
            path: Some(self.path.to_string()),
            state,
        })
        .map_err(|e| object_store::Error::Generic {
            store: "burrow",
            source: e.into(),
        })?;
        let put = self.store.put(&self.record, bytes, self.mode()).await?;
        self.hold(put.e_tag, put.version);
        Ok(())
    }

    /// Records that the object (now at `before`, or absent) is about to be
    /// changed to give `outcome`; call before every data put or delete.
    /// Conflict when another call took the claim over (nothing is written).
    pub async fn intend<T: Serialize>(
        &self,
        before: Option<&UpdateVersion>,
        outcome: &T,
    ) -> Result<()> {
        let intent = Intent {
            before: before.map(Version::from_update),
            outcome: to_value(outcome)?,
        };
        match self
            .put_record(State::Pending {
                intent: Some(intent),
                released: false,
            })
            .await
        {
            Ok(()) => {
                self.intended.store(true, Ordering::Release);
                Ok(())
            }
            Err(e) if lost_race(&e) || matches!(e, object_store::Error::NotFound { .. }) => {
                Err(taken_over(&self.path))
            }
            Err(e) => Err(fail("record the intent of the change to", &self.path, e)),
        }
    }

    /// Ends the call: records `result` (a failure records nothing to replay) and returns it.
    pub async fn finish<T: Serialize>(self, result: Result<T>) -> Result<T> {
        let state = match &result {
            Ok(value) => State::Ok {
                value: to_value(value)?,
            },
            Err(e) if e.is_refusal() => State::Refused {
                kind: e.kind().as_str().to_owned(),
                message: e.message().to_owned(),
            },
            Err(_) if !self.intended.load(Ordering::Acquire) => {
                // Nothing was written: let a retry run again. Best effort; a
                // leftover claim only delays a retry until it goes stale.
                let _ = self.store.inner.delete(&self.record).await;
                return result;
            }
            Err(_) => {
                // A put may have landed: keep the intent for a retry to judge, at once.
                if let Err(e) = self.mark_released().await {
                    tracing::warn!(error = %e, "could not release an effect claim after a failure");
                }
                return result;
            }
        };
        if let Err(e) = self.put_record(state).await {
            // The change is applied (or refused) all the same; a retry replays it from the tag and intent.
            tracing::warn!(path = %self.path, error = %e, "could not record the outcome of a keyed change");
        }
        result
    }

    async fn mark_released(&self) -> object_store::Result<()> {
        let Some(found) = self.store.inner.get(&self.record).await.ok() else {
            return Ok(());
        };
        let bytes = found.bytes().await?;
        let Ok(Record {
            state: State::Pending { intent, .. },
            ..
        }) = serde_json::from_slice::<Record>(&bytes)
        else {
            return Ok(());
        };
        self.put_record(State::Pending {
            intent,
            released: true,
        })
        .await
    }
}

/// How a pending record's intent compares with the object now.
enum Landing {
    Landed,
    NotLanded,
    Unknown,
}

static PROBES: AtomicU64 = AtomicU64::new(0);

impl ObjectStoreBackend {
    /// Decides how a mutation `op` of `path` with `ctx`'s effect key runs.
    pub(crate) async fn guard<T: DeserializeOwned>(
        &self,
        ctx: &FileContext,
        op: &str,
        path: &VPath,
    ) -> Result<Guard<T>> {
        let Some(effect_key) = ctx
            .effect_key
            .as_deref()
            .filter(|_| self.options.conditional_creates)
        else {
            return Ok(Guard::Free);
        };
        let record = self.keys.effect(&ctx.tenant, effect_key)?;
        let fence = Fence {
            store: self.store.clone(),
            tag: self
                .options
                .conditional_puts
                .then(|| hex(&Sha256::digest(record.as_ref().as_bytes()))),
            record,
            op: op.to_owned(),
            path: path.clone(),
            held: Mutex::new(None),
            conditional: self.options.conditional_puts,
            intended: AtomicBool::new(false),
            prior: None,
        };
        self.claim(ctx, fence, effect_key).await
    }

    /// Creates the pending record, or finds what is there and judges it.
    async fn claim<T: DeserializeOwned>(
        &self,
        ctx: &FileContext,
        mut fence: Fence,
        effect_key: &str,
    ) -> Result<Guard<T>> {
        let path = fence.path.clone();
        let pending = encode(&Record {
            op: fence.op.clone(),
            path: Some(path.to_string()),
            state: State::Pending {
                intent: None,
                released: false,
            },
        })?;
        match self
            .store
            .put(&fence.record, pending.clone(), PutMode::Create)
            .await
        {
            Ok(put) => {
                fence.hold(put.e_tag, put.version);
                return Ok(Guard::Mine(fence));
            }
            Err(e) if lost_race(&e) => {}
            Err(e) => return Err(fail("record the effect key of a change to", &path, e)),
        }
        let Some(found) = self.store.get(&fence.record, &path, u64::MAX).await? else {
            // Removed after a failure in between: this call may run.
            return match self
                .store
                .put(&fence.record, pending, PutMode::Create)
                .await
            {
                Ok(put) => {
                    fence.hold(put.e_tag, put.version);
                    Ok(Guard::Mine(fence))
                }
                Err(e) if lost_race(&e) => Err(in_progress(effect_key)),
                Err(e) => Err(fail("record the effect key of a change to", &path, e)),
            };
        };
        let record: Record = serde_json::from_slice(&found.bytes)
            .map_err(|e| Error::failure("an effect record in the object store is unreadable", e))?;
        if record.op != fence.op || record.path.as_deref() != Some(path.as_str()) {
            let what = match &record.path {
                Some(p) => format!("a {} of {p}", record.op),
                None => format!("a {}", record.op),
            };
            return Err(Error::invalid_argument(format!(
                "the effect key \"{effect_key}\" was already used by {what}, not a {} of {path}; use a new effect key for a new change.",
                fence.op
            )));
        }
        let (intent, released) = match record.state {
            State::Ok { value } => return Ok(Guard::Replay(from_value(value))),
            State::Refused { kind, message } => {
                return Ok(Guard::Replay(Err(replayed_refusal(&kind, message))));
            }
            State::Pending { intent, released } => (intent, released),
        };
        let landing = match &intent {
            Some(intent) => self.landing(ctx, &fence, intent).await?,
            None => Landing::NotLanded,
        };
        if let (Landing::Landed, Some(intent)) = (&landing, &intent) {
            fence.hold(found.meta.e_tag.clone(), found.meta.version.clone());
            let value = intent.outcome.clone();
            let _ = fence
                .put_record(State::Ok {
                    value: value.clone(),
                })
                .await;
            return Ok(Guard::Replay(from_value(value)));
        }
        if !released && !self.stale(&found.meta, &path).await? {
            return Err(in_progress(effect_key));
        }
        // Stale or released: take the record over (conditionally, so of two takers one wins).
        fence.hold(found.meta.e_tag.clone(), found.meta.version.clone());
        fence.prior = intent.map(|i| i.outcome);
        let state = match landing {
            Landing::Unknown => State::Refused {
                kind: ErrorKind::Conflict.as_str().to_owned(),
                message: undecidable(effect_key, &path),
            },
            _ => State::Pending {
                intent: None,
                released: false,
            },
        };
        let refused = matches!(state, State::Refused { .. });
        match fence.put_record(state).await {
            Ok(()) if refused => Ok(Guard::Replay(Err(Error::refusal(
                ErrorKind::Conflict,
                undecidable(effect_key, &path),
            )))),
            Ok(()) => Ok(Guard::Mine(fence)),
            Err(e) if lost_race(&e) => Err(in_progress(effect_key)),
            Err(e) => Err(fail("record the effect key of a change to", &path, e)),
        }
    }

    /// Whether the change a pending record intended is visible in the object now.
    async fn landing(&self, ctx: &FileContext, fence: &Fence, intent: &Intent) -> Result<Landing> {
        let key = self.keys.key(&ctx.tenant, &fence.path)?;
        let now = self.store.head_attributes(&key, &fence.path).await?;
        Ok(match (&now, &intent.before) {
            (Some((_, attributes)), _) if fence.tagged(attributes) => Landing::Landed,
            (None, None) => Landing::NotLanded,
            (Some((meta, _)), Some(before)) if Version::of(meta) == *before => Landing::NotLanded,
            (None, Some(_)) if fence.op == "delete" => Landing::Landed,
            _ => Landing::Unknown,
        })
    }

    /// True when the store's clock says the record of `meta` is older than the TTL.
    ///
    /// Puts a probe object beside the records and compares its last-modified
    /// time with the record's: two timestamps of one store.
    async fn stale(&self, meta: &ObjectMeta, path: &VPath) -> Result<bool> {
        let probe = self.keys.clock_probe(&format!(
            "{}-{}",
            std::process::id(),
            PROBES.fetch_add(1, Ordering::Relaxed)
        ))?;
        self.store
            .put(&probe, Bytes::new(), PutMode::Overwrite)
            .await
            .map_err(|e| fail("read the clock of the store for", path, e))?;
        let now = self.store.head(&probe, path).await?;
        let _ = self.store.inner.delete(&probe).await;
        let Some(now) = now else {
            return Err(Error::failure_msg(format!(
                "the object store lost a probe object while judging a pending change to {path}."
            )));
        };
        let age_ms = now
            .last_modified
            .timestamp_millis()
            .saturating_sub(meta.last_modified.timestamp_millis());
        let ttl_ms = i64::try_from(self.options.pending_effect_ttl.as_millis()).unwrap_or(i64::MAX);
        Ok(age_ms >= ttl_ms)
    }
}

/// The outcome of a change with this fence's key that another claimant
/// landed (seen by its tag after a lost race): what that claimant intended.
pub(crate) fn landed_outcome<T: DeserializeOwned>(
    fence: Option<&Fence>,
    path: &VPath,
) -> Result<T> {
    match fence.and_then(|f| f.prior.clone()) {
        Some(value) => from_value(value),
        None => Err(Error::refusal(
            ErrorKind::Conflict,
            format!(
                "{path} was changed by another call with the same effect key meanwhile; read it to see the outcome."
            ),
        )),
    }
}

fn replayed_refusal(kind: &str, message: String) -> Error {
    match ErrorKind::from_name(kind) {
        Some(kind) if kind != ErrorKind::Failure => Error::refusal(kind, message),
        _ => Error::failure_msg(format!(
            "an effect record in the object store has an unknown refusal kind \"{kind}\"."
        )),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn in_progress(effect_key: &str) -> Error {
    Error::refusal(
        ErrorKind::Conflict,
        format!(
            "a change with the effect key \"{effect_key}\" is still being applied; retry in a moment."
        ),
    )
}

fn taken_over(path: &VPath) -> Error {
    Error::refusal(
        ErrorKind::Conflict,
        format!(
            "the change to {path} was taken over by a retry with the same effect key; nothing was written by this call."
        ),
    )
}

fn undecidable(effect_key: &str, path: &VPath) -> String {
    format!(
        "a change with the effect key \"{effect_key}\" was interrupted and {path} has changed since, so whether it was applied cannot be told; read {path} and use a new effect key if the change is still wanted."
    )
}
