//! Who is asking (`FileContext`) and what a mutation serialises on (`LockKey`).

use serde::{Deserialize, Serialize};

use crate::path::VPath;

/// The tenant used when none is given.
pub const DEFAULT_TENANT: &str = "default";

/// Who is asking, passed to every operation.
///
/// A backend shared by many runs scopes every key by `tenant`; a mutation that
/// carries an `effect_key` is applied at most once per (tenant, key) on a
/// backend whose capabilities say `effect_keys`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FileContext {
    /// The tenant whose files these are.
    pub tenant: String,
    /// The run making the call, if any (for logs and per-run resolvers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// A key that makes a retried mutation a no-op that returns the first outcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect_key: Option<String>,
}

impl Default for FileContext {
    fn default() -> Self {
        Self::for_tenant(DEFAULT_TENANT)
    }
}

impl FileContext {
    /// A context for `tenant`, with no run id and no effect key.
    pub fn for_tenant(tenant: impl Into<String>) -> Self {
        Self {
            tenant: tenant.into(),
            run_id: None,
            effect_key: None,
        }
    }

    /// The same context carrying `effect_key`.
    pub fn with_effect_key(&self, effect_key: impl Into<String>) -> Self {
        Self {
            effect_key: Some(effect_key.into()),
            ..self.clone()
        }
    }

    /// The same context carrying `run_id`.
    pub fn with_run_id(&self, run_id: impl Into<String>) -> Self {
        Self {
            run_id: Some(run_id.into()),
            ..self.clone()
        }
    }
}

/// A key that mutations serialise on: two mutations whose keys meet run in call order.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct LockKey(String);

impl LockKey {
    /// The key for mutating `path` of `tenant` on a backend known by `scope`
    /// (so equal paths on two different backends do not collide).
    pub fn for_path(scope: &str, tenant: &str, path: &VPath) -> Self {
        LockKey(format!("{scope}\u{1f}{tenant}\u{1f}{path}"))
    }

    /// A key from an opaque string.
    pub fn new(key: impl Into<String>) -> Self {
        LockKey(key.into())
    }

    /// The key as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}
