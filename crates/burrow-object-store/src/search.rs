//! ls, glob and grep over key prefixes: one level with a delimiter (page by page where the store can), a subtree with `list`, names decoded and sorted by virtual path.
//!
//! Escaped keys do not sort like the names they encode ("%20" sorts after
//! "!", " " before it), and not every store lists in key order, so no
//! answer relies on the listing's order: entries stream through a bounded
//! collector of the `limit + 1` smallest virtual paths
//! (`burrow_backend::Smallest`), so an answer costs memory in proportion to
//! its limit, not to the store.
//! `ls` lists one level with a delimiter: page by page where the store has a
//! paged listing (S3, and any store given with
//! `ObjectStoreBackend::with_paged_listing`), else as object_store hands the
//! level over, whole; only the collector's entries are turned into answers.
//! A name that is both a file and a directory (two processes racing, see
//! [`crate::mutate`]) lists once, as the directory: the collector merges
//! entries of one path (`Smallest::push_entry`), since a paged listing can
//! return the object and the prefix pages apart (`a`, then `a-b`, then `a/`).
//! glob and grep stream the listing beneath `under`.

use std::borrow::Cow;

use burrow_backend::{
    CompiledGrep, Error, FileContext, FileInfo, Glob, GlobResult, GrepCollector, GrepMatch,
    GrepQuery, GrepResult, Listing, Result, Smallest, VPath,
};
use futures::StreamExt;
use futures::future::join_all;
use object_store::list::PaginatedListOptions;
use object_store::path::Path;
use object_store::{ListResult, ObjectMeta};

use crate::backend::ObjectStoreBackend;
use crate::keys::Keys;
use crate::store::{absent, fail};

/// How many keys one page of a paged `ls` asks for (S3's own most).
const PAGE_KEYS: usize = 1000;

/// `modified_at` of an object: its last-modified time, RFC 3339.
fn stamp(meta: &ObjectMeta) -> Option<String> {
    let nanos = i32::try_from(meta.last_modified.timestamp_subsec_nanos()).ok()?;
    jiff::Timestamp::new(meta.last_modified.timestamp(), nanos)
        .ok()
        .map(|t| t.to_string())
}

fn file_info(path: &VPath, meta: &ObjectMeta) -> FileInfo {
    FileInfo {
        name: path.name().to_owned(),
        path: path.as_str().to_owned(),
        is_dir: false,
        size: Some(meta.size),
        modified_at: stamp(meta),
    }
}

impl ObjectStoreBackend {
    /// The key prefix of `dir` for `ctx`'s tenant (the tenant's prefix for "/").
    fn dir_key(&self, ctx: &FileContext, dir: &VPath) -> Result<Path> {
        self.keys.key(&ctx.tenant, dir)
    }

    /// `ls`: the entries directly beneath `dir`.
    pub(crate) async fn list_dir(
        &self,
        ctx: &FileContext,
        dir: &VPath,
        limit: usize,
    ) -> Result<Listing> {
        let limit = self.options.limits().results(limit);
        let key = self.dir_key(ctx, dir)?;
        let tenant = self.keys.tenant_prefix(&ctx.tenant);
        let mut entries = Smallest::new(limit);
        let mut any = false;
        let mut take = |level: ListResult| {
            for meta in &level.objects {
                // The directory's own marker (one level: no other's can be here): it exists, empty.
                if Keys::is_marker(&meta.location) {
                    any = true;
                    continue;
                }
                if let Some(path) = self.keys.path_of(&tenant, &meta.location)
                    && path.parent().as_ref() == Some(dir)
                {
                    any = true;
                    if entries.wants_entry(path.as_str()) {
                        entries.push_entry(file_info(&path, meta));
                    }
                }
            }
            for prefix in &level.common_prefixes {
                if let Some(path) = self.keys.path_of(&tenant, prefix)
                    && path.parent().as_ref() == Some(dir)
                {
                    any = true;
                    entries.push_entry(FileInfo {
                        name: path.name().to_owned(),
                        path: path.as_str().to_owned(),
                        is_dir: true,
                        size: None,
                        modified_at: None,
                    });
                }
            }
        };
        match &self.pages {
            // One page at a time: memory follows the limit and the page size.
            Some(pages) => {
                let prefix = (!key.as_ref().is_empty()).then(|| format!("{}/", key.as_ref()));
                let mut token = None;
                loop {
                    let options = PaginatedListOptions {
                        delimiter: Some(Cow::Borrowed("/")),
                        max_keys: Some(PAGE_KEYS),
                        page_token: token.take(),
                        ..PaginatedListOptions::default()
                    };
                    match pages.list_paginated(prefix.as_deref(), options).await {
                        Ok(page) => {
                            take(page.result);
                            match page.page_token {
                                Some(next) => token = Some(next),
                                None => break,
                            }
                        }
                        Err(e) if absent(&e) => break,
                        Err(e) => return Err(fail("list", dir, e)),
                    }
                }
            }
            // object_store hands the level over whole.
            None => match self.store.inner.list_with_delimiter(Some(&key)).await {
                Ok(level) => take(level),
                Err(e) if absent(&e) => {}
                Err(e) => return Err(fail("list", dir, e)),
            },
        }
        if !any && !dir.is_root() {
            return Err(if self.store.head(&key, dir).await?.is_some() {
                Error::not_a_directory(dir)
            } else {
                Error::not_found(dir)
            });
        }
        Ok(entries.into_listing())
    }

    /// Streams every object beneath `under` and hands those whose path
    /// relative to `under` passes `keep` to `visit`; returns how many passed.
    /// Nothing is gathered here: the visitor keeps what it needs.
    async fn each_beneath(
        &self,
        ctx: &FileContext,
        under: &VPath,
        keep: impl Fn(&str, &ObjectMeta) -> bool,
        mut visit: impl FnMut(VPath, ObjectMeta),
    ) -> Result<usize> {
        let key = self.dir_key(ctx, under)?;
        let tenant = self.keys.tenant_prefix(&ctx.tenant);
        let mut listing = self.store.listing(&key);
        let mut passed = 0;
        while let Some(meta) = listing.next().await {
            let meta = meta.map_err(|e| fail("list", under, e))?;
            let Some(path) = self.keys.path_of(&tenant, &meta.location) else {
                continue;
            };
            if path
                .relative_to(under)
                .is_some_and(|relative| !relative.is_empty() && keep(relative, &meta))
            {
                passed += 1;
                visit(path, meta);
            }
        }
        Ok(passed)
    }

    /// `glob`: files beneath `under` matching `pattern`, the first `limit` by path.
    ///
    /// The listing streams through a collector of the `limit + 1` smallest
    /// paths, so the answer costs memory in proportion to the limit, in
    /// whatever order the store lists.
    pub(crate) async fn glob_files(
        &self,
        ctx: &FileContext,
        pattern: &str,
        under: &VPath,
        limit: usize,
    ) -> Result<GlobResult> {
        let glob = Glob::new(pattern)?;
        let limit = self.options.limits().results(limit);
        let mut top = Smallest::new(limit);
        let found = self
            .each_beneath(
                ctx,
                under,
                |relative, _| glob.is_match(relative),
                |path, meta| {
                    if top.would_keep(path.as_str(), 0) {
                        top.push(file_info(&path, &meta));
                    }
                },
            )
            .await?;
        if found == 0 && !under.is_root() {
            let key = self.dir_key(ctx, under)?;
            if self.store.head(&key, under).await?.is_some() {
                return Err(Error::not_a_directory(under));
            }
        }
        Ok(top.into_glob_result())
    }

    /// `grep`: matching lines in text files beneath `under`, or in `under` itself when it is a file.
    ///
    /// Files are searched as the listing streams, `concurrency` at a time;
    /// matches go into a collector of the `limit + 1` first by (path, line),
    /// and once it is full a listed file whose path sorts after every kept
    /// match is passed by unread. Memory: the limit's matches plus the
    /// files being read, in whatever order the store lists.
    pub(crate) async fn grep_files(
        &self,
        ctx: &FileContext,
        query: &GrepQuery,
        under: &VPath,
        limit: usize,
    ) -> Result<GrepResult> {
        let grep = CompiledGrep::new(query)?;
        let max = self.options.max_file_size;
        let limit = self.options.limits().results(limit);
        let cap = limit.saturating_add(1);
        let mut top: Smallest<GrepMatch> = Smallest::new(limit);
        let key = self.dir_key(ctx, under)?;
        let tenant = self.keys.tenant_prefix(&ctx.tenant);
        let mut listing = self.store.listing(&key);
        let mut listed_any = false;
        let batch = self.options.concurrency.max(1);
        loop {
            // The next batch of candidates the collector still wants.
            let mut paths = Vec::with_capacity(batch);
            while paths.len() < batch {
                let Some(meta) = listing.next().await else {
                    break;
                };
                let meta = meta.map_err(|e| fail("list", under, e))?;
                let Some(path) = self.keys.path_of(&tenant, &meta.location) else {
                    continue;
                };
                let Some(relative) = path.relative_to(under) else {
                    continue;
                };
                if relative.is_empty() {
                    continue;
                }
                listed_any = true;
                if meta.size <= max && grep.includes(relative) && top.would_keep(path.as_str(), 0) {
                    paths.push((path, meta.location));
                }
            }
            if paths.is_empty() {
                break;
            }
            let reads = join_all(
                paths
                    .iter()
                    .map(|(path, key)| self.store.get(key, path, max)),
            )
            .await;
            for ((path, _), fetched) in paths.into_iter().zip(reads) {
                match fetched {
                    Ok(Some(f)) => offer_matches(&mut top, &grep, &path, &f.bytes, cap),
                    // Deleted, or grown past the limit, since the listing: skipped like any file not there.
                    Ok(None) => {}
                    Err(e) if e.is_refusal() => {}
                    Err(e) => return Err(e),
                }
            }
        }
        if !listed_any
            && !under.is_root()
            && let Some(meta) = self.store.head(&key, under).await?
            && meta.size <= max
            && grep.includes(under.name())
            && let Some(f) = self.store.get(&key, under, max).await?
        {
            offer_matches(&mut top, &grep, under, &f.bytes, cap);
        }
        Ok(top.into_grep_result())
    }
}

/// Searches one file and offers its first `cap` matches to `top`.
fn offer_matches(
    top: &mut Smallest<GrepMatch>,
    grep: &CompiledGrep,
    path: &VPath,
    bytes: &[u8],
    cap: usize,
) {
    let mut one = GrepCollector::new(cap);
    one.search(grep, path, bytes);
    top.extend(one.finish().matches);
}
