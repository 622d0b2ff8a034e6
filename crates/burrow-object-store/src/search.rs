//! ls, glob and grep over key prefixes: one level with `list_with_delimiter`, a subtree with `list`, names decoded and sorted by virtual path.
//!
//! Escaped keys do not sort like the names they encode ("%20" sorts after
//! "!", " " before it), so every answer is decoded and sorted by virtual
//! path before the limit is applied; what is held meanwhile is the
//! metadata of one directory (ls) or of the matching files beneath `under`
//! (glob, grep), never a file's bytes beyond the one being searched.

use burrow_backend::{
    CompiledGrep, Error, FileContext, FileInfo, Glob, GlobResult, GrepCollector, GrepQuery,
    GrepResult, Listing, Result, VPath,
};
use futures::{StreamExt, stream};
use object_store::ObjectMeta;
use object_store::path::Path;

use crate::backend::ObjectStoreBackend;
use crate::store::{absent, fail};

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

/// Sorts `items` by path and keeps `limit`, saying whether more were there.
fn bounded<T>(mut items: Vec<(VPath, T)>, limit: usize) -> (Vec<T>, bool) {
    items.sort_by(|a, b| a.0.cmp(&b.0));
    let truncated = items.len() > limit;
    items.truncate(limit);
    (items.into_iter().map(|(_, t)| t).collect(), truncated)
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
        let mut entries: Vec<(VPath, FileInfo)> =
            Vec::with_capacity(level.objects.len() + level.common_prefixes.len());
        for meta in &level.objects {
            if let Some(path) = self.keys.path_of(&tenant, &meta.location)
                && path.parent().as_ref() == Some(dir)
            {
                entries.push((path.clone(), file_info(&path, meta)));
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
                entries.push((path, info));
            }
        }
        if entries.is_empty() && !dir.is_root() {
            return Err(if self.store.head(&key, dir).await?.is_some() {
                Error::not_a_directory(dir)
            } else {
                Error::not_found(dir)
            });
        }
        let (entries, truncated) = bounded(entries, limit);
        Ok(Listing { entries, truncated })
    }

    /// Every object beneath `under` whose path relative to `under` passes `keep`.
    async fn files_beneath(
        &self,
        ctx: &FileContext,
        under: &VPath,
        keep: impl Fn(&str, &ObjectMeta) -> bool,
    ) -> Result<Vec<(VPath, ObjectMeta)>> {
        let key = self.dir_key(ctx, under)?;
        let tenant = self.keys.tenant_prefix(&ctx.tenant);
        self.store
            .each_under(&key, under, |meta| {
                let path = self.keys.path_of(&tenant, &meta.location)?;
                let relative = path.relative_to(under)?;
                (!relative.is_empty() && keep(relative, &meta)).then_some((path, meta))
            })
            .await
    }

    /// `glob`: files beneath `under` matching `pattern`.
    pub(crate) async fn glob_files(
        &self,
        ctx: &FileContext,
        pattern: &str,
        under: &VPath,
        limit: usize,
    ) -> Result<GlobResult> {
        let glob = Glob::new(pattern)?;
        let limit = self.options.limits().results(limit);
        let found = self
            .files_beneath(ctx, under, |relative, _| glob.is_match(relative))
            .await?;
        if found.is_empty() && !under.is_root() {
            let key = self.dir_key(ctx, under)?;
            if self.store.head(&key, under).await?.is_some() {
                return Err(Error::not_a_directory(under));
            }
        }
        let found = found.into_iter().map(|(path, meta)| {
            let info = file_info(&path, &meta);
            (path, info)
        });
        let (files, truncated) = bounded(found.collect(), limit);
        Ok(GlobResult { files, truncated })
    }

    /// `grep`: matching lines in text files beneath `under`, or in `under` itself when it is a file.
    pub(crate) async fn grep_files(
        &self,
        ctx: &FileContext,
        query: &GrepQuery,
        under: &VPath,
        limit: usize,
    ) -> Result<GrepResult> {
        let grep = CompiledGrep::new(query)?;
        let max = self.options.max_file_size;
        let mut collector = GrepCollector::new(self.options.limits().results(limit));
        let mut candidates = self
            .files_beneath(ctx, under, |relative, meta| {
                meta.size <= max && grep.includes(relative)
            })
            .await?;
        if candidates.is_empty() && !under.is_root() {
            let key = self.dir_key(ctx, under)?;
            if let Some(meta) = self.store.head(&key, under).await?
                && meta.size <= max
                && grep.includes(under.name())
            {
                candidates.push((under.clone(), meta));
            }
        }
        candidates.sort_by(|a, b| a.0.cmp(&b.0));
        let keys = candidates
            .into_iter()
            .map(|(path, _)| self.keys.key(&ctx.tenant, &path).map(|key| (path, key)))
            .collect::<Result<Vec<_>>>()?;
        let store = self.store.clone();
        let mut reads = stream::iter(keys)
            .map(move |(path, key)| {
                let store = store.clone();
                async move {
                    let fetched = store.get(&key, &path, max).await;
                    (path, fetched)
                }
            })
            .buffered(self.options.concurrency);
        while let Some((path, fetched)) = reads.next().await {
            match fetched {
                Ok(Some(f)) => collector.search(&grep, &path, &f.bytes),
                // Deleted, or grown past the limit, since the listing: skipped like any file not there.
                Ok(None) => {}
                Err(e) if e.is_refusal() => {}
                Err(e) => return Err(e),
            }
            if collector.is_full() {
                break;
            }
        }
        Ok(collector.finish())
    }
}
