//! glob and grep over the walk in path order: filter, then (for grep) read and search files in parallel batches.
//!
//! Matching is the contract's own: `Glob` for paths, `CompiledGrep` and
//! `GrepCollector` for lines, so binary files, the line split, the include
//! filter and truncation are exactly those of every other backend. The walk
//! hands files over in path order; they are searched in batches on the shared
//! blocking pool; matches go into one bounded collector of the limit + 1 first
//! by (path, line), so a small `limit` stops the walk and the search early and
//! memory follows the limit (plus one batch of paths), not the tree.

use std::ops::ControlFlow;
use std::sync::{Arc, Mutex, PoisonError};

use burrow_backend::{
    CompiledGrep, Error, Glob, GlobResult, GrepCollector, GrepMatch, GrepQuery, GrepResult,
    Smallest, VPath, grep_file,
};
use cap_std::fs::Dir;

use crate::errors::{self, from_io};
use crate::pool;
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
        // The limit + 1 first matches by path: held while walking, so a glob
        // costs memory in proportion to its limit, not to the folder.
        // The walk is in path order, so once they are held no later file can
        // enter and the walk stops.
        let mut top = Smallest::new(limit.saturating_add(1));
        self.walk(under, dir, |f| {
            if !top.would_keep(&f.path, 0) {
                return ControlFlow::Break(());
            }
            if glob.is_match(f.relative()) {
                top.push(f.path);
            }
            ControlFlow::Continue(())
        })?;
        let (held, more) = top.finish();
        let mut result = GlobResult::default();
        for f in held {
            let Ok(path) = VPath::parse(&f) else {
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
        result.truncated |= more;
        Ok(result)
    }

    /// Lines matching `query` in the files beneath `under`, or in the file `under`.
    pub(crate) fn grep(
        self: &Arc<Self>,
        query: &GrepQuery,
        under: &VPath,
        limit: usize,
    ) -> Result<GrepResult, Error> {
        let grep = CompiledGrep::new(query)?;
        let dir = match self.start(under)? {
            Start::Nothing => return Ok(GrepResult::default()),
            Start::File => {
                if !grep.includes_itself(under) {
                    return Ok(GrepResult::default());
                }
                return Ok(match self.read_to_search(under, false)? {
                    Some(bytes) => grep_file(&grep, under, &bytes, limit),
                    None => GrepResult::default(),
                });
            }
            Start::Dir(dir) => dir,
        };
        let mut search = Batches::new(Arc::clone(self), grep, limit);
        self.walk(under, dir, |f| search.offer(&f))?;
        search.finish()
    }

    /// The bytes of the file at `path` to search, or `None` when it is not a
    /// readable regular file within the size limit (it is skipped, as on
    /// every backend); a failure of the storage is returned.
    ///
    /// `found` says the walk just saw `path` as a regular file (so it is
    /// opened directly, its handle checked) rather than an arbitrary path
    /// (type checked before the open).
    fn read_to_search(&self, path: &VPath, found: bool) -> Result<Option<Vec<u8>>, Error> {
        #[cfg(test)]
        crate::hook::search_file(path);
        let read = if found {
            self.read_found(path)
        } else {
            self.read_all(path)
        };
        match read {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.is_refusal() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The matches in the file at `path`, which a walk has just seen, at most
    /// `limit`; none when it is skipped (see [`Root::read_to_search`]).
    fn search_file(
        &self,
        grep: &CompiledGrep,
        path: &VPath,
        limit: usize,
    ) -> Result<Vec<GrepMatch>, Error> {
        let Some(bytes) = self.read_to_search(path, true)? else {
            return Ok(Vec::new());
        };
        let mut collector = GrepCollector::new(limit);
        collector.search(grep, path, &bytes);
        Ok(collector.finish().matches)
    }
}

/// A grep's search as the walk hands it files in path order: files are
/// gathered into batches, each searched in parallel on the shared blocking
/// pool, so only one batch of paths is held.
///
/// The matches are held in one bounded collector of the limit + 1 first by
/// (path, line), whatever the number of files or matches per file; a file
/// that can no longer contribute (the collector is full of matches from files
/// before it) is not read, and once a batch fills the collector the walk stops:
/// every later file sorts after the matches held.
struct Batches {
    root: Arc<Root>,
    grep: Arc<CompiledGrep>,
    top: Arc<Mutex<Smallest<GrepMatch>>>,
    /// Matches kept per file: no more than the whole result can use.
    keep: usize,
    threads: usize,
    /// Files waiting to be searched, in path order.
    batch: Vec<VPath>,
    /// How many files the next batch holds.
    batch_size: usize,
    /// The failure that ends the search.
    failed: Option<Error>,
}

impl Batches {
    fn new(root: Arc<Root>, grep: CompiledGrep, limit: usize) -> Self {
        let threads = root.options.threads.max(1);
        Self {
            root,
            grep: Arc::new(grep),
            top: Arc::new(Mutex::new(Smallest::new(limit))),
            keep: limit.saturating_add(1),
            threads,
            batch: Vec::new(),
            batch_size: FIRST_BATCH_PER_THREAD * threads,
            failed: None,
        }
    }

    /// Takes the file the walk found, if the grep includes it; breaks when
    /// no file from here on can place, or the search failed.
    fn offer(&mut self, found: &Found) -> ControlFlow<()> {
        if !self.grep.includes(found.relative()) {
            return ControlFlow::Continue(());
        }
        let Ok(path) = VPath::parse(&found.path) else {
            return ControlFlow::Continue(());
        };
        if cannot_enter(&self.top, &path) {
            return ControlFlow::Break(());
        }
        self.batch.push(path);
        if self.batch.len() < self.batch_size {
            return ControlFlow::Continue(());
        }
        self.batch_size = (self.batch_size * 2).min(MAX_BATCH);
        self.search_batch()
    }

    /// Searches the batch held; breaks when a failure counts.
    fn search_batch(&mut self) -> ControlFlow<()> {
        let files = Arc::new(std::mem::take(&mut self.batch));
        // The first failure, by file index.
        let failed: Arc<Mutex<Option<(usize, Error)>>> = Arc::default();
        let work = {
            let (root, grep, top) = (
                Arc::clone(&self.root),
                Arc::clone(&self.grep),
                Arc::clone(&self.top),
            );
            let (files, failed, keep) = (Arc::clone(&files), Arc::clone(&failed), self.keep);
            Arc::new(move |file: usize| {
                if cannot_enter(&top, &files[file]) {
                    return;
                }
                match root.search_file(&grep, &files[file], keep) {
                    Ok(found) => {
                        top.lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .extend(found);
                    }
                    Err(e) => {
                        let mut failed = failed.lock().unwrap_or_else(PoisonError::into_inner);
                        if failed.as_ref().is_none_or(|(i, _)| file < *i) {
                            *failed = Some((file, e));
                        }
                    }
                }
            })
        };
        pool::for_each_index(files.len(), self.threads, work);
        let failed = failed.lock().unwrap_or_else(PoisonError::into_inner).take();
        // A failure counts unless the result was complete before that file.
        if let Some((file, e)) = failed
            && !cannot_enter(&self.top, &files[file])
        {
            self.failed = Some(e);
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }

    /// Searches what is left and returns the result, or the failure.
    fn finish(mut self) -> Result<GrepResult, Error> {
        if self.failed.is_none() && !self.batch.is_empty() {
            let _ = self.search_batch();
        }
        if let Some(e) = self.failed {
            return Err(e);
        }
        let top = std::mem::replace(
            &mut *self.top.lock().unwrap_or_else(PoisonError::into_inner),
            Smallest::new(0),
        );
        Ok(top.into_grep_result())
    }
}

/// True when no match of the file at `path` could enter the collector any
/// more: it is full of matches from files before it.
fn cannot_enter(top: &Mutex<Smallest<GrepMatch>>, path: &VPath) -> bool {
    !top.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .would_keep(path.as_str(), 0)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use burrow_backend::{Backend, FileContext, GrepQuery, VPath};

    use crate::hook::{on_enter_dir, on_search_file};
    use crate::{FsBackend, FsOptions};

    /// A grep for the fixed string `needle` beneath `under`, at most 10 matches, over two threads.
    async fn grep_needle(root: &std::path::Path, under: &str) -> burrow_backend::GrepResult {
        let backend = FsBackend::open_with(root, FsOptions::default().with_threads(2)).unwrap();
        backend
            .grep(
                &FileContext::default(),
                &GrepQuery::fixed("needle"),
                &VPath::parse(under).unwrap(),
                10,
            )
            .await
            .unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_small_grep_reads_few_files_and_keeps_at_most_limit_plus_one() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("bounded-grep");
        std::fs::create_dir(&folder).unwrap();
        let body = "needle\n".repeat(50);
        for i in 0..300 {
            std::fs::write(folder.join(format!("f{i:03}.txt")), &body).unwrap();
        }
        let read = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&read);
        on_search_file(move |p| {
            if p.as_str().starts_with("/bounded-grep/") {
                counter.fetch_add(1, Ordering::Relaxed);
            }
        });
        let found = grep_needle(dir.path(), "/bounded-grep").await;
        assert_eq!(found.matches.len(), 10);
        assert!(found.truncated);
        assert!(
            found
                .matches
                .iter()
                .all(|m| m.path == "/bounded-grep/f000.txt")
        );
        // One file holds more than the limit: once its matches are in, no
        // later file can enter, so only the files already being searched by
        // the two threads are read (the batch held 128).
        let n = read.load(Ordering::Relaxed);
        assert!(
            n <= 4,
            "{n} files were read for a grep the first file answers"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_small_grep_stops_walking_once_the_first_folders_answer() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().join("streamed-grep");
        for d in 0..100 {
            let folder = top.join(format!("d{d:03}"));
            std::fs::create_dir_all(&folder).unwrap();
            for f in 0..5 {
                std::fs::write(folder.join(format!("f{f}.txt")), "needle\n").unwrap();
            }
        }
        let entered = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&entered);
        on_enter_dir(move |p| {
            if p.as_str().starts_with("/streamed-grep/") {
                counter.fetch_add(1, Ordering::Relaxed);
            }
        });
        let found = grep_needle(dir.path(), "/streamed-grep").await;
        assert!(found.truncated);
        let paths: Vec<&str> = found.matches.iter().map(|m| m.path.as_str()).collect();
        let want: Vec<String> = (0..10)
            .map(|i| format!("/streamed-grep/d{:03}/f{}.txt", i / 5, i % 5))
            .collect();
        assert_eq!(paths, want);
        // The first batch (64 files per thread: 128 files, 26 folders) fills
        // the result; the walk stops at the next file instead of entering
        // all 100 folders.
        let n = entered.load(Ordering::Relaxed);
        assert!(
            n <= 27,
            "the walk entered {n} of 100 folders for a grep the first answers"
        );
    }
}
