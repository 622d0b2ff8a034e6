//! Made directories and whole trees: `make_dir` puts a marker object `{dir}/%dir`, `delete_tree` lists and batch-deletes a page at a time.
//!
//! # Made directories (ADR 0221)
//!
//! Directories are key prefixes, so an empty one cannot exist by itself. A
//! made directory is held by a marker: an empty object whose last segment is
//! [`crate::keys::DIR_MARKER`], which escaping never produces, so it is never
//! a file and never listed. While the marker is there the prefix has an
//! object beneath it, so the directory exists for every check (`ls`, a write
//! at its path, `delete`); it stays when files come and go beneath it, and
//! goes when the directory is deleted (`delete` once nothing else is beneath
//! it, or `delete_tree`). It is not the console's `dir/` object: object_store
//! normalises a trailing "/" away, and a local folder cannot hold one.
//!
//! # Whole trees
//!
//! `delete_tree` lists at most [`TREE_PAGE`] keys beneath the directory and
//! deletes them with one `delete_stream` (S3: one DeleteObjects request per
//! 1,000 keys), then lists again, until nothing but the directory's own
//! marker is left, which goes last. Memory holds one page. Each round starts
//! the listing afresh, so a store that stops a listing early while its
//! folders are being removed (a local folder) still ends empty. Object
//! stores have no transactions: a crash or a failure mid-way leaves part of
//! the tree (the directory still lists, by its marker or its remaining
//! files), and running `delete_tree` again finishes it.

use burrow_backend::{Error, ErrorKind, FileContext, Result, VPath};
use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectStoreExt, PutMode, UpdateVersion};

use crate::backend::ObjectStoreBackend;
use crate::replay::Fence;
use crate::store::{absent, fail, lost_race};

/// How many keys one round of `delete_tree` lists and deletes.
pub const TREE_PAGE: usize = 1000;

impl ObjectStoreBackend {
    /// True when at least one object lies beneath `key`; with `besides`, one other than it.
    async fn any_under_besides(
        &self,
        key: &Path,
        besides: Option<&Path>,
        path: &VPath,
    ) -> Result<bool> {
        let mut listing = self.store.listing(key);
        while let Some(item) = listing.next().await {
            let meta = item.map_err(|e| fail("list", path, e))?;
            if Some(&meta.location) != besides {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Makes the directory `path` with a marker object; see `Backend::make_dir`.
    ///
    /// Under an effect key the marker put carries the key's tag; a retry
    /// after a crash between the put and the record runs again (it is the
    /// same marker), so without `parents` it may then say AlreadyExists.
    pub(crate) async fn make_dir_marker(
        &self,
        ctx: &FileContext,
        path: &VPath,
        parents: bool,
        fence: Option<&Fence>,
    ) -> Result<()> {
        let existing = || {
            if parents {
                Ok(())
            } else {
                Err(Error::already_exists(path))
            }
        };
        if path.is_root() {
            return existing();
        }
        let key = self.keys.key(&ctx.tenant, path)?;
        let marker = self.keys.marker(&ctx.tenant, path)?;
        let _serialised = self.locks.lock(key.clone()).await;
        let (file, made, ancestor) = tokio::join!(
            self.store.head(&key, path),
            self.store.head(&marker, path),
            self.file_ancestor(ctx, path)
        );
        if file?.is_some() {
            return Err(Error::already_exists(path));
        }
        if let Some(file) = ancestor? {
            return Err(Error::not_a_directory(file));
        }
        if made?.is_some() {
            return existing();
        }
        // An implicit directory: `mkdir -p` makes it one that stays.
        if self.store.any_under(&key, path).await? {
            existing()?;
        } else if !parents && let Some(parent) = path.parent().filter(|p| !p.is_root()) {
            let parent_key = self.keys.key(&ctx.tenant, &parent)?;
            if !self.store.any_under(&parent_key, &parent).await? {
                return Err(Error::not_found(&parent));
            }
        }
        let attributes = fence.map(Fence::attributes).unwrap_or_default();
        match self
            .store
            .put_with(&marker, Bytes::new(), PutMode::Create, attributes)
            .await
        {
            Ok(_) => Ok(()),
            // Made meanwhile by another call: it exists, as asked.
            Err(e) if lost_race(&e) => existing(),
            Err(e) => Err(fail("make the directory", path, e)),
        }
    }

    /// Deletes the made, empty directory `path` (its marker is the only
    /// object beneath it, and no file is at `key`); DirectoryNotEmpty when
    /// anything else is there, NotFound when nothing is. With a `fence`, the
    /// marker's delete is announced in the effect record first.
    pub(crate) async fn delete_empty_dir(
        &self,
        ctx: &FileContext,
        path: &VPath,
        key: &Path,
        fence: Option<&Fence>,
    ) -> Result<()> {
        let marker = self.keys.marker(&ctx.tenant, path)?;
        if self.any_under_besides(key, Some(&marker), path).await? {
            return Err(Error::refusal(
                ErrorKind::DirectoryNotEmpty,
                format!("{path} is a directory with entries; delete its files first."),
            ));
        }
        let Some(meta) = self.store.head(&marker, path).await? else {
            return Err(Error::not_found(path));
        };
        if let Some(f) = fence {
            let before = UpdateVersion {
                e_tag: meta.e_tag,
                version: meta.version,
            };
            f.intend(Some(&before), &()).await?;
        }
        match self.store.inner.delete(&marker).await {
            Ok(()) => Ok(()),
            Err(e) if absent(&e) => Err(Error::not_found(path)),
            Err(e) => Err(fail("delete", path, e)),
        }
    }

    /// Deletes `path` and everything beneath it, a page of keys at a time
    /// (see the module docs for what a crash mid-way leaves).
    pub(crate) async fn delete_tree_pages(&self, ctx: &FileContext, path: &VPath) -> Result<()> {
        if path.is_root() {
            return Err(Error::root_cannot_be_deleted());
        }
        let key = self.keys.key(&ctx.tenant, path)?;
        if self.store.head(&key, path).await?.is_some() {
            return self.delete_file(ctx, path, None).await;
        }
        if !self.store.any_under(&key, path).await? {
            return Err(Error::not_found(path));
        }
        let marker = self.keys.marker(&ctx.tenant, path)?;
        loop {
            let page: Vec<Path> = self
                .store
                .listing(&key)
                .map_ok(|meta| meta.location)
                .try_filter(|location| std::future::ready(*location != marker))
                .take(TREE_PAGE)
                .try_collect()
                .await
                .map_err(|e| fail("list", path, e))?;
            if page.is_empty() {
                break;
            }
            for location in &page {
                self.versions.forget(location);
            }
            let mut deleted = self
                .store
                .inner
                .delete_stream(futures::stream::iter(page.into_iter().map(Ok)).boxed());
            while let Some(done) = deleted.next().await {
                match done {
                    Ok(_) => {}
                    // Gone meanwhile: what was asked.
                    Err(e) if absent(&e) => {}
                    Err(e) => return Err(fail("delete", path, e)),
                }
            }
        }
        // The directory's own marker last, so an interrupted delete leaves it listed.
        match self.store.inner.delete(&marker).await {
            Ok(()) => Ok(()),
            Err(e) if absent(&e) => Ok(()),
            Err(e) => Err(fail("delete", path, e)),
        }
    }
}
