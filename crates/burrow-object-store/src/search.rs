//! ls, glob and grep over key prefixes: one level with `list_with_delimiter`, a subtree with `list`, names decoded and sorted by virtual path.
//!
//! Escaped keys do not sort like the names they encode ("%20" sorts after
//! "!", " " before it), and not every store lists in key order, so no
//! answer relies on the listing's order: entries stream through a bounded
//! collector of the `limit + 1` smallest virtual paths ([`crate::topk`]),
//! so an answer costs memory in proportion to its limit, not to the store.
//! `ls` lists one level with a delimiter (object_store hands that level
//! over whole; only the collector's entries are turned into answers);
//! glob and grep stream the listing beneath `under`.

use burrow_backend::{
    CompiledGrep, Error, FileContext, FileInfo, Glob, GlobResult, GrepCollector, GrepMatch,
    GrepQuery, GrepResult, Listing, Result, VPath,
};
use futures::StreamExt;
use futures::future::join_all;
use object_store::ObjectMeta;
use object_store::path::Path;

use crate::backend::ObjectStoreBackend;
use crate::store::{absent, fail};
use crate::topk::{TopK, limited};

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
        let level = match self.store.inner.list_with_delimiter(Some(&key)).await {
            Ok(level) => level,
            Err(e) if absent(&e) => object_store::ListResult {
                common_prefixes: Vec::new(),
                objects: Vec::new(),
                extensions: Default::default(),
            },
            Err(e) => return Err(fail("list", dir, e)),
        };
        let mut entries = TopK::new(limit.saturating_add(1));
        let mut any = false;
        for meta in &level.objects {
            if let Some(path) = self.keys.path_of(&tenant, &meta.location)
                && path.parent().as_ref() == Some(dir)
            {
                any = true;
                if entries.wants(&path) {
                    let info = file_info(&path, meta);
                    entries.offer(path, info);
                }
            }
        }
        for prefix in &level.common_prefixes {
            if let Some(path) = self.keys.path_of(&tenant, prefix)
                && path.parent().as_ref() == Some(dir)
            {
                let info = FileInfo {
                    name: path.name().to_owned(),
                    path: path.as_str().to_owned(),
                    is_dir: true,
                    size: None,
                    modified_at: None,
                };
                any = true;
                entries.offer(path, info);
            }
        }
        if !any && !dir.is_root() {
            return Err(if self.store.head(&key, dir).await?.is_some() {
                Error::not_a_directory(dir)
            } else {
                Error::not_found(dir)
            });
        }
        let (entries, truncated) = limited(entries, limit);
        Ok(Listing { entries, truncated })
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
        let mut top = TopK::new(limit.saturating_add(1));
        let found = self
            .each_beneath(
                ctx,
                under,
                |relative, _| glob.is_match(relative),
                |path, meta| {
                    if top.wants(&path) {
                        let info = file_info(&path, &meta);
                        top.offer(path, info);
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
        let (files, truncated) = limited(top, limit);
        Ok(GlobResult { files, truncated })
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
        let mut top: TopK<(VPath, u64), GrepMatch> = TopK::new(cap);
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
                if meta.size <= max && grep.includes(relative) && top.wants(&(path.clone(), 0)) {
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
        let (matches, truncated) = limited(top, limit);
        Ok(GrepResult { matches, truncated })
    }
}

/// Searches one file and offers its first `cap` matches to `top`.
fn offer_matches(
    top: &mut TopK<(VPath, u64), GrepMatch>,
    grep: &CompiledGrep,
    path: &VPath,
    bytes: &[u8],
    cap: usize,
) {
    let mut one = GrepCollector::new(cap);
    one.search(grep, path, bytes);
    for m in one.finish().matches {
        top.offer((path.clone(), m.line_number), m);
    }
}
