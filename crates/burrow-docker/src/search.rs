//! `grep`: one archive of the subtree streamed through a visitor, matched with the shared `CompiledGrep` (glob names files through `find` instead, see `listing`).
//!
//! The engine tars a directory in its own walk order ("a" before "a-b"
//! before "a/x" is not byte order), so matches go through
//! `burrow_backend::Smallest`, which keeps only the first `limit + 1` by
//! (path, line) whatever the order; content is read only for files it will
//! search and whose matches could still be kept; everything else is skipped
//! in the stream.

use std::io::{self, Read};

use burrow_backend::{CompiledGrep, GrepCollector, GrepMatch, GrepResult, Smallest, VPath};

use crate::archive::{Item, ItemKind, Next, Visit};

/// Searches the text files of a streamed subtree, keeping the first `limit + 1` matches by (path, line).
///
/// Once the collector is full, a file whose path sorts after every kept
/// match is passed by without reading its content.
pub(crate) struct GrepVisit {
    grep: CompiledGrep,
    under: VPath,
    cap: usize,
    max_file_size: u64,
    /// The first matches by (path, line), whatever the walk order.
    pub found: Smallest<GrepMatch>,
    /// Links and hard links to read and search after the walk.
    pub later: Vec<VPath>,
}

impl GrepVisit {
    pub fn new(grep: CompiledGrep, under: VPath, limit: usize, max_file_size: u64) -> Self {
        let cap = limit.saturating_add(1);
        Self {
            grep,
            under,
            cap,
            max_file_size,
            found: Smallest::new(limit),
            later: Vec::new(),
        }
    }

    /// True when matches in `path` could still be kept.
    pub fn wants(&self, path: &VPath) -> bool {
        self.found.would_keep(path.as_str(), 0)
    }

    /// Searches `bytes` of the file `path` and offers its matches.
    pub fn offer(&mut self, path: &VPath, bytes: &[u8]) {
        self.found.extend(search(&self.grep, path, bytes, self.cap));
    }
}

impl Visit for GrepVisit {
    fn visit(&mut self, item: Item, content: &mut dyn Read) -> io::Result<Next> {
        if item.rel.is_empty() || !self.grep.includes(&item.rel) {
            return Ok(Next::Continue);
        }
        let Ok(path) = self.under.join(&item.rel) else {
            return Ok(Next::Continue);
        };
        if !self.wants(&path) {
            return Ok(Next::Continue);
        }
        match item.kind {
            ItemKind::File if item.size <= self.max_file_size => {
                let mut bytes = Vec::with_capacity(usize::try_from(item.size).unwrap_or(0));
                content.read_to_end(&mut bytes)?;
                self.offer(&path, &bytes);
            }
            ItemKind::Symlink | ItemKind::HardLink(_) => self.later.push(path),
            _ => {}
        }
        Ok(Next::Continue)
    }
}

/// At most `limit` matches of `grep` in the file `path` holding `bytes` (none if it is not text).
pub(crate) fn search(
    grep: &CompiledGrep,
    path: &VPath,
    bytes: &[u8],
    limit: usize,
) -> Vec<GrepMatch> {
    let mut collector = GrepCollector::new(limit);
    collector.search(grep, path, bytes);
    collector.finish().matches
}

/// The first matches the visit kept (its limit), and whether more were there.
pub(crate) fn grep_result(found: Smallest<GrepMatch>) -> GrepResult {
    found.into_grep_result()
}
