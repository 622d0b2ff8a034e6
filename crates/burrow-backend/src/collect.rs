//! `Smallest`: a bounded collector of results offered in any order, keeping only the `limit + 1` first by path (then line).
//!
//! A backend that searches files in parallel, in batches, or in whatever
//! order its store lists them must still return the first `limit` results in
//! path order and say whether more exist. Gathering everything and sorting
//! would cost memory in proportion to the store; this keeps at most
//! `limit + 1` entries (a max-heap: a new entry smaller than the largest kept
//! replaces it), so memory follows `limit` alone.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use burrow_types::{FileInfo, GrepMatch};

use crate::path::VPath;
use crate::results::{GlobResult, GrepResult, Listing};

/// Where a result sorts: by its full path in byte order, then (for a grep
/// match) by line number.
pub trait ResultOrder {
    /// The result's path.
    fn order_path(&self) -> &str;
    /// Its line number; 0 for results that are not lines.
    fn order_line(&self) -> u64 {
        0
    }
}

impl ResultOrder for FileInfo {
    fn order_path(&self) -> &str {
        &self.path
    }
}

impl ResultOrder for GrepMatch {
    fn order_path(&self) -> &str {
        &self.path
    }
    fn order_line(&self) -> u64 {
        self.line_number
    }
}

impl ResultOrder for VPath {
    fn order_path(&self) -> &str {
        self.as_str()
    }
}

impl ResultOrder for String {
    fn order_path(&self) -> &str {
        self
    }
}

fn compare<T: ResultOrder>(a: &T, b: &T) -> Ordering {
    a.order_path()
        .as_bytes()
        .cmp(b.order_path().as_bytes())
        .then(a.order_line().cmp(&b.order_line()))
}

/// An entry of the heap, ordered by [`ResultOrder`].
#[derive(Debug)]
struct Ordered<T>(T);

impl<T: ResultOrder> PartialEq for Ordered<T> {
    fn eq(&self, other: &Self) -> bool {
        compare(&self.0, &other.0) == Ordering::Equal
    }
}
impl<T: ResultOrder> Eq for Ordered<T> {}
impl<T: ResultOrder> PartialOrd for Ordered<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<T: ResultOrder> Ord for Ordered<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        compare(&self.0, &other.0)
    }
}

/// The `limit` first results by path (then line) of everything offered, in
/// any order, and whether more were offered.
///
/// ```
/// use burrow_backend::Smallest;
/// let mut first = Smallest::new(2);
/// for path in ["/c", "/a", "/d", "/b"] {
///     first.push(path.to_owned());
/// }
/// assert_eq!(first.finish(), (vec!["/a".to_owned(), "/b".to_owned()], true));
/// ```
#[derive(Debug)]
pub struct Smallest<T> {
    limit: usize,
    heap: BinaryHeap<Ordered<T>>,
}

impl<T: ResultOrder> Smallest<T> {
    /// A collector that returns at most `limit` results.
    pub fn new(limit: usize) -> Self {
        Self {
            limit,
            heap: BinaryHeap::new(),
        }
    }

    /// How many are kept at most: `limit + 1` (the extra one says "truncated").
    fn keep(&self) -> usize {
        self.limit.saturating_add(1)
    }

    /// Offers one result.
    pub fn push(&mut self, item: T) {
        if self.heap.len() < self.keep() {
            self.heap.push(Ordered(item));
        } else if let Some(mut largest) = self.heap.peek_mut()
            && compare(&item, &largest.0) == Ordering::Less
        {
            largest.0 = item;
        }
    }

    /// Offers many results.
    pub fn extend(&mut self, items: impl IntoIterator<Item = T>) {
        for item in items {
            self.push(item);
        }
    }

    /// False when a result at `path` and `line` would be dropped at once:
    /// enough smaller ones are already kept. A backend can skip reading a
    /// file when this is false for its path at line 0.
    pub fn would_keep(&self, path: &str, line: u64) -> bool {
        if self.heap.len() < self.keep() {
            return true;
        }
        self.heap.peek().is_some_and(|largest| {
            (path.as_bytes(), line) < (largest.0.order_path().as_bytes(), largest.0.order_line())
        })
    }

    /// The first `limit` results, sorted, and true when more were offered.
    pub fn finish(self) -> (Vec<T>, bool) {
        let mut sorted: Vec<T> = self
            .heap
            .into_sorted_vec()
            .into_iter()
            .map(|o| o.0)
            .collect();
        let truncated = sorted.len() > self.limit;
        sorted.truncate(self.limit);
        (sorted, truncated)
    }
}

impl Smallest<FileInfo> {
    /// Offers one `ls` entry, at most one per path: when an entry of the
    /// same path is already kept, the directory of the two is kept (a name
    /// that is both a file and a directory, which only a store of implicit
    /// directories can hold, lists once, as the directory `ls` of it
    /// lists). A path already dropped or never kept is dropped again, so
    /// only the kept entries are searched and memory stays `limit + 1`.
    pub fn push_entry(&mut self, entry: FileInfo) {
        if !self.wants_entry(&entry.path) {
            return;
        }
        let Some(kept_is_dir) = self
            .heap
            .iter()
            .find(|kept| kept.0.path == entry.path)
            .map(|kept| kept.0.is_dir)
        else {
            self.push(entry);
            return;
        };
        if entry.is_dir && !kept_is_dir {
            // Same path, so the same place in the order: the heap stays a heap.
            let mut kept = std::mem::take(&mut self.heap).into_vec();
            if let Some(slot) = kept.iter_mut().find(|kept| kept.0.path == entry.path) {
                *slot = Ordered(entry);
            }
            self.heap = BinaryHeap::from(kept);
        }
    }

    /// False when [`Smallest::push_entry`] would drop an entry at `path`
    /// unseen: a backend can skip building it.
    pub fn wants_entry(&self, path: &str) -> bool {
        self.would_keep(path, 0)
            || self
                .heap
                .peek()
                .is_some_and(|largest| largest.0.path == path)
    }

    /// The result as a [`Listing`].
    pub fn into_listing(self) -> Listing {
        let (entries, truncated) = self.finish();
        Listing { entries, truncated }
    }

    /// The result as a [`GlobResult`].
    pub fn into_glob_result(self) -> GlobResult {
        let (files, truncated) = self.finish();
        GlobResult { files, truncated }
    }
}

impl Smallest<GrepMatch> {
    /// The result as a [`GrepResult`].
    pub fn into_grep_result(self) -> GrepResult {
        let (matches, truncated) = self.finish();
        GrepResult { matches, truncated }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(path: &str, line: u64) -> GrepMatch {
        GrepMatch {
            path: path.to_owned(),
            line_number: line,
            line: String::new(),
        }
    }

    proptest::proptest! {
        /// Whatever the order offered, the result is the sorted prefix of everything.
        #[test]
        fn keeps_the_first_limit_in_path_then_line_order(
            offered in proptest::collection::vec(("/[ab]{0,3}", 1u64..4), 0..40),
            limit in 0usize..10,
        ) {
            let mut smallest = Smallest::new(limit);
            for (path, line) in &offered {
                smallest.push(hit(path, *line));
            }
            let mut all: Vec<(String, u64)> = offered.clone();
            all.sort();
            let (got, truncated) = smallest.finish();
            let got: Vec<(String, u64)> = got.into_iter().map(|m| (m.path, m.line_number)).collect();
            proptest::prop_assert_eq!(truncated, all.len() > limit);
            all.truncate(limit);
            proptest::prop_assert_eq!(got, all);
        }
    }

    #[test]
    fn memory_follows_the_limit_not_the_input() {
        let mut smallest = Smallest::new(3);
        for i in (0..10_000u32).rev() {
            smallest.push(format!("/{i:05}"));
            assert!(smallest.heap.len() <= 4);
        }
        assert!(!smallest.would_keep("/99999", 0));
        assert!(smallest.would_keep("/00000", 0));
        let (first, truncated) = smallest.finish();
        assert_eq!(first, ["/00000", "/00001", "/00002"]);
        assert!(truncated);
    }

    fn entry(path: &str, is_dir: bool) -> FileInfo {
        FileInfo {
            name: path.trim_start_matches('/').to_owned(),
            path: path.to_owned(),
            is_dir,
            size: (!is_dir).then_some(1),
            modified_at: None,
        }
    }

    /// A name offered as a file and as a directory, in either order, lists
    /// once as the directory, and takes one place of the limit.
    #[test]
    fn an_entry_offered_twice_is_kept_once_as_the_directory() {
        for file_first in [true, false] {
            let mut kept = Smallest::new(3);
            let both = [entry("/a", !file_first), entry("/a", file_first)];
            for offered in [entry("/a-b", false), both[0].clone(), entry("/c", false)] {
                kept.push_entry(offered);
            }
            kept.push_entry(both[1].clone());
            kept.push_entry(entry("/d", false));
            let listing = kept.into_listing();
            let got: Vec<(&str, bool)> = listing
                .entries
                .iter()
                .map(|e| (e.path.as_str(), e.is_dir))
                .collect();
            assert_eq!(got, [("/a", true), ("/a-b", false), ("/c", false)]);
            assert!(listing.truncated, "/d was offered past the limit");
        }
        // The clash as the largest kept entry, and a clash past the limit.
        let mut kept = Smallest::new(1);
        kept.push_entry(entry("/b", false));
        kept.push_entry(entry("/a", false));
        kept.push_entry(entry("/b", true));
        kept.push_entry(entry("/c", false));
        kept.push_entry(entry("/c", true));
        let got: Vec<(String, bool)> = kept
            .into_listing()
            .entries
            .into_iter()
            .map(|e| (e.path, e.is_dir))
            .collect();
        assert_eq!(got, [("/a".to_owned(), false)]);
    }

    #[test]
    fn byte_order_and_zero_limit() {
        let mut smallest = Smallest::new(5);
        smallest.extend(["/é".to_owned(), "/z".to_owned(), "/Z".to_owned()]);
        assert_eq!(smallest.finish().0, ["/Z", "/z", "/é"]);
        let mut none = Smallest::new(0);
        assert!(none.would_keep("/a", 0));
        none.push("/a".to_owned());
        assert_eq!(none.finish(), (Vec::<String>::new(), true));
        let empty: Smallest<String> = Smallest::new(0);
        assert_eq!(empty.finish(), (Vec::new(), false));
    }
}
