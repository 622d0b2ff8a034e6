//! Call ids unique in a history: a model that repeats an id within an answer, reuses one from an earlier turn or sends none has its calls renamed deterministically before anything runs, and the history keeps the new names, so the provider always sees consistent ids (ADR 0253); the ids are counted once and kept beside the history (ADR 0284).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::message::{AssistantPart, Message};

/// The id given to a call that came without one (then numbered like any repeat).
const NO_ID: &str = "call";

/// The call ids of one history, kept beside it from run to run, so that a
/// run's first answer costs only its own calls and what the history gained
/// since the last run, not the whole history (ADR 0284).
///
/// Pass a clone in [`RunOptions::call_ids`](super::RunOptions) with every
/// run on the same history. Without one, a run counts the history's ids
/// once, at its first answer with calls; the renaming is the same either way.
///
/// # Behavior
/// - Between runs the history may grow (messages appended) and be truncated;
///   the index follows both: ids of truncated messages are forgotten.
/// - A history changed otherwise (a message replaced, inserted or removed
///   before its end, a different history) is counted again from the start
///   when its first or last counted message no longer looks the same (its
///   kind, length and ids). A change that leaves both alike is not seen, so
///   keep one `CallIds` per history and start a new one
///   (`CallIds::default()`) when the history is rewritten, e.g. compacted.
/// - Clones share one index: a clone is the same index, not a copy.
#[derive(Debug, Clone, Default)]
pub struct CallIds(Arc<Mutex<UsedIds>>);

impl CallIds {
    /// An index of no ids yet (for a new or not yet counted history).
    pub fn new() -> Self {
        Self::default()
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, UsedIds> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The ids a history uses (its calls' and results'), counted message by
/// message as the history grows, so each answer costs only its own calls.
///
/// Ids are kept as 64-bit hashes: two different ids with one hash make a
/// fresh id look used, so it is renamed although it need not be, which is
/// safe (the names stay unique) and as deterministic as the hash.
#[derive(Debug, Default)]
pub(crate) struct UsedIds {
    /// Every id occurrence counted, in history order: `(message position, hash)`.
    log: Vec<(usize, u64)>,
    /// How often each hash occurs in `log`.
    counts: HashMap<u64, u32, BuildHasherDefault<Prehashed>>,
    /// One mark per counted message (its kind, length and ids), to tell a
    /// history changed under the index from one that only grew or shrank.
    marks: Vec<u64>,
}

impl UsedIds {
    /// Counts what `history` gained since the last count, forgets what it
    /// lost, and counts it all again if its first or last counted message
    /// changed (a history rewritten, not only grown or cut).
    fn catch_up(&mut self, history: &[Message]) {
        let kept = self.marks.len().min(history.len());
        if kept < self.marks.len() {
            self.forget_from(kept);
        }
        let looks_same = |at: usize| self.marks[at] == mark(&history[at]);
        if kept > 0 && !(looks_same(kept - 1) && looks_same(0)) {
            // Rewritten (compacted, replaced), not grown or cut: count it again.
            *self = Self::default();
        }
        let from = self.marks.len();
        self.marks.reserve(history.len() - from);
        for (at, message) in history.iter().enumerate().skip(from) {
            self.count(at, message);
        }
    }

    fn count(&mut self, at: usize, message: &Message) {
        match message {
            Message::ToolResult(r) => self.insert(at, key(&r.call_id)),
            other => {
                for call in other.tool_calls() {
                    self.insert(at, key(&call.id));
                }
            }
        }
        self.marks.push(mark(message));
    }

    fn insert(&mut self, at: usize, hash: u64) {
        self.log.push((at, hash));
        *self.counts.entry(hash).or_insert(0) += 1;
    }

    fn contains(&self, id: &str) -> bool {
        self.counts.contains_key(&key(id))
    }

    /// Forgets the messages from position `len` on.
    fn forget_from(&mut self, len: usize) {
        while let Some(&(at, hash)) = self.log.last() {
            if at < len {
                break;
            }
            self.log.pop();
            if let Some(n) = self.counts.get_mut(&hash) {
                *n -= 1;
                if *n == 0 {
                    self.counts.remove(&hash);
                }
            }
        }
        self.marks.truncate(len);
    }

    /// Renames the calls of `answer` whose id is empty or is used already (by a
    /// call or a result of `history`, or by an earlier call of `answer`): the id
    /// gets the first free suffix `-2`, `-3`, ... (an empty id becomes `call-N`): letters,
    /// digits, `_` and `-` only, as Anthropic requires of a `tool_use` id.
    /// The same history and answer always give the same names. The answer is
    /// counted as the message after `history` (the caller appends it next).
    /// Returns how many calls were renamed.
    pub(crate) fn make_unique(&mut self, history: &[Message], answer: &mut Message) -> usize {
        let Message::Assistant { parts } = answer else {
            return 0;
        };
        if !parts
            .iter()
            .any(|p| matches!(p, AssistantPart::ToolCall(_)))
        {
            return 0;
        }
        self.catch_up(history);
        let at = history.len();
        let mut renamed = 0;
        for part in parts.iter_mut() {
            let AssistantPart::ToolCall(call) = part else {
                continue;
            };
            if !call.id.is_empty() && !self.contains(&call.id) {
                self.insert(at, key(&call.id));
                continue;
            }
            let base = if call.id.is_empty() {
                NO_ID.to_owned()
            } else {
                call.id.clone()
            };
            let fresh = (2u64..)
                .map(|n| format!("{base}-{n}"))
                .find(|id| !self.contains(id))
                .unwrap_or_else(|| base.clone());
            tracing::debug!(from = %call.id, to = %fresh, "a call id the model used already was renamed");
            self.insert(at, key(&fresh));
            call.id = fresh;
            renamed += 1;
        }
        self.marks.push(mark(answer));
        renamed
    }
}

/// An id's hash: FNV-1a over its bytes, then a finaliser that spreads the
/// bits (a fixed function: the same id always has the same hash).
fn key(id: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    spread(h)
}

/// The splitmix64 finaliser.
fn spread(mut h: u64) -> u64 {
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// What a message looks like to the index: its kind, its length and its ids.
fn mark(message: &Message) -> u64 {
    let (kind, len, ids) = match message {
        Message::System { text } => (1u64, text.len(), 0),
        Message::User { text } => (2, text.len(), 0),
        Message::Assistant { parts } => (
            3,
            parts.len(),
            message
                .tool_calls()
                .fold(0u64, |acc, c| spread(acc ^ key(&c.id))),
        ),
        Message::ToolResult(r) => (4, r.content.len(), key(&r.call_id)),
        Message::Compaction(c) => (5, c.text.len(), 0),
    };
    spread(kind.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (len as u64) ^ ids.rotate_left(17))
}

/// The hasher of a map whose keys are hashes already: it passes them through.
#[derive(Debug, Default)]
pub(crate) struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is expected; anything else is folded in.
        for &b in bytes {
            self.0 = spread(self.0 ^ u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}
