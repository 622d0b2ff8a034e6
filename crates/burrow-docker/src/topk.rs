//! `TopK`: the `cap` smallest keys offered, kept sorted, so a walk in the engine's order costs memory in proportion to the limit (a local copy of burrow-object-store's, standing in for the shared bounded collector planned in `burrow-backend`).

use std::collections::BTreeMap;

/// The `cap` smallest distinct keys offered so far, each with its value
/// (the first offered for a key wins).
#[derive(Debug)]
pub(crate) struct TopK<K, V> {
    cap: usize,
    kept: BTreeMap<K, V>,
}

impl<K: Ord, V> TopK<K, V> {
    /// A collector keeping at most `cap` entries (a limit plus one, to tell truncation).
    pub fn new(cap: usize) -> Self {
        TopK {
            cap,
            kept: BTreeMap::new(),
        }
    }

    /// True when `key` would be kept if offered now (full collectors keep only smaller keys).
    pub fn wants(&self, key: &K) -> bool {
        if self.cap == 0 {
            return false;
        }
        self.kept.len() < self.cap || self.kept.last_key_value().is_some_and(|(max, _)| key < max)
    }

    /// Offers `key` with `value`; dropped unless it is among the `cap` smallest.
    pub fn offer(&mut self, key: K, value: V) {
        if !self.wants(&key) || self.kept.contains_key(&key) {
            return;
        }
        self.kept.insert(key, value);
        if self.kept.len() > self.cap {
            self.kept.pop_last();
        }
    }

    /// How many entries are kept.
    pub fn len(&self) -> usize {
        self.kept.len()
    }

    /// The kept entries, smallest key first.
    pub fn into_sorted(self) -> impl Iterator<Item = (K, V)> {
        self.kept.into_iter()
    }
}

/// The first `limit` values of `top` (collected with a cap of `limit + 1`) and whether more were there.
pub(crate) fn limited<K: Ord, V>(top: TopK<K, V>, limit: usize) -> (Vec<V>, bool) {
    let truncated = top.len() > limit;
    (
        top.into_sorted().take(limit).map(|(_, v)| v).collect(),
        truncated,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_smallest_whatever_the_order() {
        let mut top = TopK::new(3);
        for k in [9, 1, 8, 2, 7, 3, 2, 6] {
            top.offer(k, k * 10);
        }
        assert!(!top.wants(&4));
        assert!(top.wants(&0));
        assert_eq!(
            top.into_sorted().collect::<Vec<_>>(),
            [(1, 10), (2, 20), (3, 30)]
        );
        let mut none = TopK::new(0);
        none.offer(1, ());
        assert_eq!(none.len(), 0);
        let mut top = TopK::new(3);
        for k in [5, 4, 3, 2] {
            top.offer(k, ());
        }
        assert_eq!(limited(top, 2), (vec![(), ()], true));
    }
}
