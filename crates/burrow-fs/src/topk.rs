//! A bounded collector of the `k` smallest items seen, so a listing or search holds memory in proportion to its limit, not to the folder.
//!
//! Local to burrow-fs for now; it is meant to be swapped for the shared
//! bounded top-k collector of `burrow-backend` once that exists.

use std::collections::BinaryHeap;

/// Keeps the `k` smallest items pushed (by `Ord`), and whether any was dropped.
#[derive(Debug)]
pub(crate) struct TopK<T: Ord> {
    k: usize,
    heap: BinaryHeap<T>,
    dropped: bool,
}

impl<T: Ord> TopK<T> {
    /// A collector keeping at most `k` items.
    pub(crate) fn new(k: usize) -> Self {
        Self {
            k,
            heap: BinaryHeap::with_capacity(k.min(1024)),
            dropped: false,
        }
    }

    /// Offers `item`: kept if it is among the `k` smallest so far.
    pub(crate) fn push(&mut self, item: T) {
        if self.heap.len() < self.k {
            self.heap.push(item);
            return;
        }
        self.dropped = true;
        if let Some(mut largest) = self.heap.peek_mut()
            && item < *largest
        {
            *largest = item;
        }
    }

    /// How many items are held (never more than `k`).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.heap.len()
    }

    /// True when `k` items are held: only a smaller item can still get in.
    pub(crate) fn is_full(&self) -> bool {
        self.heap.len() >= self.k
    }

    /// The largest item held.
    pub(crate) fn largest(&self) -> Option<&T> {
        self.heap.peek()
    }

    /// True when some item pushed is not held (more than `k` were offered).
    pub(crate) fn dropped(&self) -> bool {
        self.dropped
    }

    /// The items held, smallest first.
    pub(crate) fn into_sorted_vec(self) -> Vec<T> {
        self.heap.into_sorted_vec()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::TopK;

    proptest! {
        #[test]
        fn holds_at_most_k_and_keeps_exactly_the_k_smallest(
            items in proptest::collection::vec(0u16..500, 0..300),
            k in 0usize..40,
        ) {
            let mut top = TopK::new(k);
            for (i, item) in items.iter().enumerate() {
                top.push(*item);
                prop_assert!(top.len() <= k);
                prop_assert_eq!(top.len(), (i + 1).min(k));
            }
            let dropped = top.dropped();
            let mut sorted = items.clone();
            sorted.sort_unstable();
            sorted.truncate(k);
            prop_assert_eq!(top.into_sorted_vec(), sorted);
            prop_assert_eq!(dropped, items.len() > k);
        }
    }
}
