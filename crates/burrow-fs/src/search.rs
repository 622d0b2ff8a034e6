//! glob and grep over the walk: filter, sort by path, then (for grep) read and search files in parallel.
//!
//! Matching is the contract's own: `Glob` for paths, `CompiledGrep` and
//! `GrepCollector` for lines, so binary files, the line split, the include
//! filter and truncation are exactly those of every other backend. Files are
//! searched in path-ordered batches on `threads` threads and their matches
//! merged in path order, so a small `limit` stops the search early.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use burrow_backend::{
    CompiledGrep, Error, Glob, GlobResult, GrepCollector, GrepMatch, GrepQuery, GrepResult, VPath,
};
use cap_std::fs::Dir;

use crate::errors::{self, from_io};
use crate::root::{Root, file_info, rel};
use crate::walk::Found;

/// The first batch of files searched holds this many files per thread; each
/// next batch is twice as large, up to `MAX_BATCH`.
const FIRST_BATCH_PER_THREAD: usize = 64;
const MAX_BATCH: usize = 8192;

/// Where a search starts.
enum Start {
    /// Nothing there: no results.
    Nothing,
    /// A regular file.
    File,
    /// A directory, with its handle.
    Dir(Dir),
}

impl Root {
    fn start(&self, under: &VPath) -> Result<Start, Error> {
        errors::check_reserved(under)?;
        let meta = match self.stat(under) {
            Ok(meta) => meta,
            Err(e) if errors::is_missing(&e) => return Ok(Start::Nothing),
            Err(e) => return Err(from_io(e, under, "search")),
        };
        if meta.is_file() {
            return Ok(Start::File);
        }
        if !meta.is_dir() {
            return Ok(Start::Nothing);
        }
        let handle = if under.is_root() {
            self.dir.try_clone()
        } else {
            self.dir.open_dir(rel(under))
        };
        match handle {
            Ok(dir) => Ok(Start::Dir(dir)),
            Err(e) if errors::is_missing(&e) => Ok(Start::Nothing),
            Err(e) => Err(from_io(e, under, "search")),
        }
    }

    /// Files beneath `under` whose path relative to it matches `pattern`.
    pub(crate) fn glob(
        &self,
        pattern: &str,
        under: &VPath,
        limit: usize,
    ) -> Result<GlobResult, Error> {
        let glob = Glob::new(pattern)?;
        let dir = match self.start(under)? {
            Start::Nothing => return Ok(GlobResult::default()),
            Start::File => return Err(Error::not_a_directory(under)),
            Start::Dir(dir) => dir,
        };
        let mut found: Vec<Found> = self
            .walk(under, dir)?
            .into_iter()
            .filter(|f| glob.is_match(f.relative()))
            .collect();
        found.sort_unstable_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
        let mut result = GlobResult::default();
        for f in found {
            let Ok(path) = VPath::parse(&f.path) else {
                continue;
            };
            // Each match is stat'ed through the root handle: a file that
            // vanished, or that a swapped link now leads out of, is left out.
            let meta = match self.stat(&path) {
                Ok(meta) if meta.is_file() => meta,
                _ => continue,
            };
            if result.files.len() == limit {
                result.truncated = true;
                break;
            }
            result.files.push(file_info(&path, &meta));
        }
        Ok(result)
    }

    /// Lines matching `query` in the files beneath `under`, or in the file `under`.
    pub(crate) fn grep(
        &self,
        query: &GrepQuery,
        under: &VPath,
        limit: usize,
    ) -> Result<GrepResult, Error> {
        let grep = &CompiledGrep::new(query)?;
        let mut collector = GrepCollector::new(limit);
        let dir = match self.start(under)? {
            Start::Nothing => return Ok(collector.finish()),
            Start::File => {
                if grep.includes(under.name()) {
                    let found = self.search_file(grep, under, limit.saturating_add(1), false)?;
                    collector.extend(found);
                }
                return Ok(collector.finish());
            }
            Start::Dir(dir) => dir,
        };
        let mut files: Vec<VPath> = self
            .walk(under, dir)?
            .into_iter()
            .filter(|f| grep.includes(f.relative()))
            .filter_map(|f| VPath::parse(&f.path).ok())
            .collect();
        files.sort_unstable();
        self.search_files(grep, &files, limit, collector)
    }

    /// Searches `files` (in path order) in batches on the configured threads.
    fn search_files(
        &self,
        grep: &CompiledGrep,
        files: &[VPath],
        limit: usize,
        mut collector: GrepCollector,
    ) -> Result<GrepResult, Error> {
        let threads = self.options.threads.max(1);
        // One file may hold more matches than the limit: keep one more than
        // the limit per file so the merge knows the result is truncated.
        let per_file = limit.saturating_add(1);
        let mut batch = FIRST_BATCH_PER_THREAD * threads;
        let mut start = 0;
        while start < files.len() && !collector.is_full() {
            let end = start.saturating_add(batch).min(files.len());
            let results = parallel_map(&files[start..end], threads, |path| {
                self.search_file(grep, path, per_file, true)
            });
            for found in results {
                collector.extend(found?);
                if collector.is_full() {
                    break;
                }
            }
            start = end;
            batch = (batch * 2).min(MAX_BATCH);
        }
        Ok(collector.finish())
    }

    /// The matches in one file, at most `limit`. A file that is not a
    /// readable regular text file within the size limit has none (it is
    /// skipped, as on every backend); a failure of the storage is returned.
    ///
    /// `found` says the walk just saw `path` as a regular file (so it is
    /// opened directly, its handle checked) rather than an arbitrary path
    /// (type checked before the open).
    fn search_file(
        &self,
        grep: &CompiledGrep,
        path: &VPath,
        limit: usize,
        found: bool,
    ) -> Result<Vec<GrepMatch>, Error> {
        let read = if found {
            self.read_found(path)
        } else {
            self.read_all(path)
        };
        let bytes = match read {
            Ok(bytes) => bytes,
            Err(e) if e.is_refusal() => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut collector = GrepCollector::new(limit);
        collector.search(grep, path, &bytes);
        Ok(collector.finish().matches)
    }
}

/// `f` applied to every item on up to `threads` threads (the caller's
/// included), results in item order.
fn parallel_map<T: Sync, R: Send + Sync>(
    items: &[T],
    threads: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let workers = threads.min(items.len());
    if workers <= 1 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let slots: Vec<OnceLock<R>> = items.iter().map(|_| OnceLock::new()).collect();
    let work = || {
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else { break };
            let _ = slots[i].set(f(item));
        }
    };
    std::thread::scope(|scope| {
        for _ in 1..workers {
            scope.spawn(work);
        }
        work();
    });
    slots.into_iter().filter_map(OnceLock::into_inner).collect()
}

#[cfg(test)]
mod tests {
    use super::parallel_map;

    #[test]
    fn parallel_map_keeps_order() {
        let items: Vec<usize> = (0..1000).collect();
        for threads in [1, 2, 7] {
            let out = parallel_map(&items, threads, |x| x * 2);
            assert_eq!(out, items.iter().map(|x| x * 2).collect::<Vec<_>>());
        }
    }
}
