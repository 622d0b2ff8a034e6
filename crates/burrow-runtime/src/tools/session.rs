//! Per-session tool state: the read ledger that keeps an agent from editing blind or over someone else's change.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, MutexGuard, PoisonError};

use burrow_backend::VPath;
use sha2::{Digest, Sha256};

/// The SHA-256 of a file's bytes, as the agent last saw them.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint([u8; 32]);

impl Fingerprint {
    /// The fingerprint of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Fingerprint(Sha256::digest(bytes).into())
    }

    /// The first 8 bytes as 16 hex digits, for names and logs.
    pub fn short_hex(&self) -> String {
        self.0[..8].iter().map(|b| format!("{b:02x}")).collect()
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fingerprint({}..)", self.short_hex())
    }
}

/// What the ledger says about a file the agent wants to change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LedgerCheck {
    /// The agent read the file and it is byte-identical to what it read.
    Current,
    /// The agent never read the file in this session.
    NeverRead,
    /// The file changed since the agent last read (or wrote) it.
    Changed,
}

/// The files an agent has seen in this session, by path, with the fingerprint of what it saw.
///
/// `read_file` records a file (the whole file's bytes, even when it read only
/// a window: the agent chose which part to look at); a successful
/// `write_file` or `edit_file` records what it wrote, so consecutive edits
/// need no re-read. `edit_file`, and `write_file` over an existing file, are
/// refused unless the file's current bytes match the recorded fingerprint.
#[derive(Debug, Default)]
pub struct ReadLedger {
    seen: HashMap<VPath, Fingerprint>,
}

impl ReadLedger {
    /// Records that the agent has seen `path` holding bytes with fingerprint `fp`.
    pub fn record(&mut self, path: &VPath, fp: Fingerprint) {
        self.seen.insert(path.clone(), fp);
    }

    /// Forgets `path` (e.g. after it was found missing).
    pub fn forget(&mut self, path: &VPath) {
        self.seen.remove(path);
    }

    /// Forgets `dir` and every path beneath it (after the tree was deleted).
    pub fn forget_tree(&mut self, dir: &VPath) {
        self.seen.retain(|path, _| !path.starts_with(dir));
    }

    /// Compares the file's current fingerprint with what the agent saw.
    pub fn check(&self, path: &VPath, current: Fingerprint) -> LedgerCheck {
        match self.seen.get(path) {
            None => LedgerCheck::NeverRead,
            Some(seen) if *seen == current => LedgerCheck::Current,
            Some(_) => LedgerCheck::Changed,
        }
    }

    /// True when the agent has seen `path` in this session.
    pub fn has_seen(&self, path: &VPath) -> bool {
        self.seen.contains_key(path)
    }

    /// How many files the agent has seen.
    pub fn len(&self) -> usize {
        self.seen.len()
    }

    /// True when the agent has seen no file yet.
    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }
}

/// The state one agent session keeps across tool calls.
///
/// Shared by reference between concurrent calls; the mutation gate makes a
/// guarded change (check the ledger, change the file, record the result)
/// one step that no other change of this session interleaves with.
#[derive(Debug, Default)]
pub struct ToolSession {
    ledger: Mutex<ReadLedger>,
    mutation_gate: tokio::sync::Mutex<()>,
}

impl ToolSession {
    /// A session that has read nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The read ledger. A poisoned lock is recovered: the ledger holds plain
    /// data that a panic elsewhere cannot leave half-updated.
    pub fn ledger(&self) -> MutexGuard<'_, ReadLedger> {
        self.ledger.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Held for the whole of a guarded change.
    pub(crate) async fn mutation_gate(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.mutation_gate.lock().await
    }
}
