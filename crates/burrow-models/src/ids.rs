//! Call ids an adapter makes up for tool calls a server sent without one: unique across turns, runs and processes.
//!
//! Some OpenAI-compatible servers stream tool calls with no `id` (or an
//! empty one). The runtime keys a call's effects and its result by that id,
//! so a made-up id must never repeat: each answer's decoder gets its own
//! [`CallIds`], whose ids share a fresh UUIDv7 (time-ordered, 74 random
//! bits) and end with the call's number within the answer:
//! `call_burrow_<uuid>_<n>`. Two turns, two runs or two processes never
//! make up the same id (docs/adr/0231).

/// The ids one answer makes up.
#[derive(Debug, Clone)]
pub struct CallIds {
    prefix: String,
    next: usize,
}

impl Default for CallIds {
    fn default() -> Self {
        Self::new()
    }
}

impl CallIds {
    /// Ids under a fresh unique prefix.
    pub fn new() -> Self {
        Self {
            prefix: format!("call_burrow_{}", uuid::Uuid::now_v7().simple()),
            next: 0,
        }
    }

    /// The next made-up id (`call_burrow_<uuid>_0`, `_1`, ...).
    pub fn make(&mut self) -> String {
        let id = format!("{}_{}", self.prefix, self.next);
        self.next += 1;
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_never_repeat_within_or_across_answers() {
        let mut seen = std::collections::HashSet::new();
        for _ in 0..100 {
            let mut ids = CallIds::new();
            for _ in 0..3 {
                let id = ids.make();
                assert!(id.starts_with("call_burrow_"), "{id}");
                assert!(
                    id.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
                    "{id}"
                );
                assert!(seen.insert(id), "an id repeated");
            }
        }
    }
}
