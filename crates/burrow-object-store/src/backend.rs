//! `ObjectStoreBackend`: the constructors, the capabilities, and the `Backend` impl that dispatches to the read, search, mutation and replay modules.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

use async_trait::async_trait;
use burrow_backend::text::read_window;
use burrow_backend::{
    Backend, Capabilities, EditResult, Error, FileContext, GlobResult, GrepQuery, GrepResult,
    LineWindow, Listing, LockTable, Result, VPath, WriteResult,
};
use bytes::Bytes;
use object_store::ObjectStore;
use object_store::list::PaginatedListStore;
use object_store::memory::InMemory;
use object_store::path::Path;

use crate::keys::Keys;
use crate::local::LocalStore;
use crate::mutate::Versions;
use crate::options::{HOST_MAX_NAME_BYTES, ObjectStoreOptions};
use crate::replay::Guard;
use crate::store::{Fetched, Store};

/// burrow files on an object store: keys `{root}/{tenant}/{path}`,
/// directories as key prefixes, edits as conditional puts.
///
/// See the crate documentation for the design; in short:
///
/// # Keys and tenants
///
/// A file `/src/main.rs` of tenant `t` is the object
/// `{root}/t/src/main.rs`. Tenants and names are escaped one segment each
/// (see [`crate::keys`]), so no tenant or path reaches another tenant's key.
///
/// # Directories
///
/// Directories are implicit (`empty_dirs: false`): a directory exists while
/// an object lies beneath its prefix, and disappears with its last file. A
/// directory made with `make_dir` is held by a marker object (never listed)
/// and stays until it is deleted; `delete_tree` lists and batch-deletes a
/// page of keys at a time, so a crash mid-way leaves part of the tree and
/// running it again finishes it (see [`crate::dirs`]).
/// `ls` asks the store for one level (`list_with_delimiter`, which pages
/// through the store's pages of up to 1,000 keys); `glob` and `grep` list
/// the objects beneath `under` only. No operation lists the whole bucket to
/// answer for one directory. Before a write, HEADs and a one-page listing
/// check that no directory stands at the path and that no ancestor is a
/// file (see [`crate::mutate`] for the cost and the race this leaves).
///
/// # Concurrency
///
/// Edits and overwrites are conditional puts (`PutMode::Update` with the
/// ETag/version read), creations are `PutMode::Create`; a lost race is
/// retried from a fresh read, then refused with Conflict. So with
/// `conditional_puts` (the default), concurrent edits from any number of
/// processes never lose an update. A store that cannot do conditional
/// updates (`LocalFileSystem`) is safe within one process only (mutations
/// of a key are serialised by an in-process mutex), and its capabilities
/// say `conditional_writes: false`.
///
/// # Effect keys
///
/// A mutation with an effect key records its outcome in an object beside
/// the tenants (see [`crate::replay`]): a retry returns it and changes nothing.
///
/// # Limits and cost
///
/// Reads refuse objects larger than `max_file_size` from the size in the
/// GET's response headers, before downloading the body. `read` fetches the
/// whole object (it must count lines) but never more than the limit. grep
/// lists, filters by `include` and size, then reads the candidates in path
/// order, `concurrency` at a time, stopping once the limit is reached.
/// Objects have no creation time, so `created_at` is not kept; `modified_at`
/// is the object's last-modified time (RFC 3339).
pub struct ObjectStoreBackend {
    pub(crate) store: Store,
    pub(crate) keys: Keys,
    pub(crate) options: ObjectStoreOptions,
    /// One lock per object key being changed in this process.
    pub(crate) locks: LockTable<Path>,
    pub(crate) versions: Versions,
    /// The store's paged listing, when it has one: `ls` then holds one page at a time.
    pub(crate) pages: Option<Arc<dyn PaginatedListStore>>,
    scope: String,
}

impl std::fmt::Debug for ObjectStoreBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectStoreBackend")
            .field("root", &self.keys.root())
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl ObjectStoreBackend {
    /// A backend over `store`, with the default options (conditional puts on).
    pub fn new(store: Arc<dyn ObjectStore>) -> Self {
        let options = ObjectStoreOptions::default();
        Self::assemble(store, Keys::unprefixed(), options)
    }

    /// A backend over `store` with `options`. InvalidArgument when the root prefix is not a valid key prefix.
    pub fn with_options(store: Arc<dyn ObjectStore>, options: ObjectStoreOptions) -> Result<Self> {
        let keys = Keys::new(
            &options.root,
            options.max_key_bytes,
            options.max_segment_bytes,
        )?;
        Ok(Self::assemble(store, keys, options))
    }

    fn assemble(store: Arc<dyn ObjectStore>, keys: Keys, options: ObjectStoreOptions) -> Self {
        let mut hasher = DefaultHasher::new();
        store.to_string().hash(&mut hasher);
        keys.root().hash(&mut hasher);
        ObjectStoreBackend {
            store: Store { inner: store },
            keys,
            options,
            locks: LockTable::new(),
            versions: Versions::default(),
            pages: None,
            scope: format!("object-store:{:016x}", hasher.finish()),
        }
    }

    /// A backend over a fresh `InMemory` store (conditional puts on).
    pub fn in_memory() -> Self {
        Self::new(Arc::new(InMemory::new()))
    }

    /// A backend over a `LocalFileSystem` rooted at the existing folder `dir`.
    ///
    /// `LocalFileSystem` can create-if-absent but not update-if-unchanged, so
    /// conditional puts are off (`conditional_writes: false`: safe within one
    /// process, last writer wins across processes); names are limited to 255
    /// bytes once escaped; emptied folders are removed with their last file.
    /// Puts are staged in `.burrow-staging/` beside the tenants' folders (see
    /// [`crate::local`]).
    pub fn local(dir: impl AsRef<std::path::Path>) -> Result<Self> {
        Self::local_with(dir, ObjectStoreOptions::default())
    }

    /// [`ObjectStoreBackend::local`] with `options` (conditional puts are turned off whatever they say).
    pub fn local_with(
        dir: impl AsRef<std::path::Path>,
        options: ObjectStoreOptions,
    ) -> Result<Self> {
        let store = LocalStore::new(dir.as_ref()).map_err(|e| {
            Error::failure("could not open the folder of the local object store", e)
        })?;
        let options = ObjectStoreOptions {
            conditional_puts: false,
            max_segment_bytes: Some(options.max_segment_bytes.unwrap_or(HOST_MAX_NAME_BYTES)),
            ..options
        };
        Self::with_options(Arc::new(store), options)
    }

    /// The same backend, listing directories through `pages` (the same store's
    /// paged listing, e.g. the `GoogleCloudStorage` or `MicrosoftAzure` it was
    /// built over): `ls` then holds one page of a directory at a time instead
    /// of the whole directory. A backend from
    /// [`ObjectStoreBackend::from_s3_builder`] has it already.
    pub fn with_paged_listing(mut self, pages: Arc<dyn PaginatedListStore>) -> Self {
        self.pages = Some(pages);
        self
    }

    /// The store beneath this backend.
    pub fn store(&self) -> &Arc<dyn ObjectStore> {
        &self.store.inner
    }

    /// The options this backend was built with.
    pub fn options(&self) -> &ObjectStoreOptions {
        &self.options
    }

    /// The object at `path` of `ctx`'s tenant, or the refusal for a missing file.
    async fn fetch(&self, ctx: &FileContext, path: &VPath) -> Result<Fetched> {
        if path.is_root() {
            return Err(Error::is_a_directory(path));
        }
        let key = self.keys.key(&ctx.tenant, path)?;
        match self
            .store
            .get(&key, path, self.options.max_file_size)
            .await?
        {
            Some(fetched) => {
                if self.options.conditional_puts {
                    let meta = &fetched.meta;
                    self.versions
                        .remember(&key, meta.e_tag.clone(), meta.version.clone());
                }
                Ok(fetched)
            }
            None => Err(self.missing_file(ctx, path).await),
        }
    }
}

#[async_trait]
impl Backend for ObjectStoreBackend {
    fn capabilities(&self) -> Capabilities {
        Capabilities::minimal()
            .with_make_dir(true)
            .with_modified_at(true)
            .with_tenants(true)
            .with_effect_keys(self.options.conditional_creates)
            .with_conditional_writes(self.options.conditional_puts)
            .with_limits(self.options.limits())
    }

    fn lock_scope(&self) -> &str {
        &self.scope
    }

    async fn ls(&self, ctx: &FileContext, dir: &VPath, limit: usize) -> Result<Listing> {
        self.list_dir(ctx, dir, limit).await
    }

    async fn read(
        &self,
        ctx: &FileContext,
        path: &VPath,
        offset: usize,
        limit: usize,
    ) -> Result<LineWindow> {
        let fetched = self.fetch(ctx, path).await?;
        read_window(path, &fetched.bytes, offset, limit)
    }

    async fn read_bytes(&self, ctx: &FileContext, path: &VPath) -> Result<Vec<u8>> {
        Ok(Vec::from(self.fetch(ctx, path).await?.bytes))
    }

    async fn write_bytes(
        &self,
        ctx: &FileContext,
        path: &VPath,
        bytes: &[u8],
    ) -> Result<WriteResult> {
        let bytes = Bytes::copy_from_slice(bytes);
        match self.guard(ctx, "write", path).await? {
            Guard::Free => self.put_file(ctx, path, bytes, None).await,
            Guard::Replay(outcome) => outcome,
            Guard::Mine(fence) => {
                let result = self.put_file(ctx, path, bytes, Some(&fence)).await;
                fence.finish(result).await
            }
        }
    }

    async fn edit(
        &self,
        ctx: &FileContext,
        path: &VPath,
        old: &str,
        new: &str,
        replace_all: bool,
    ) -> Result<EditResult> {
        match self.guard(ctx, "edit", path).await? {
            Guard::Free => self.edit_file(ctx, path, old, new, replace_all, None).await,
            Guard::Replay(outcome) => outcome,
            Guard::Mine(fence) => {
                let result = self
                    .edit_file(ctx, path, old, new, replace_all, Some(&fence))
                    .await;
                fence.finish(result).await
            }
        }
    }

    async fn delete(&self, ctx: &FileContext, path: &VPath) -> Result<()> {
        match self.guard(ctx, "delete", path).await? {
            Guard::Free => self.delete_file(ctx, path, None).await,
            Guard::Replay(outcome) => outcome,
            Guard::Mine(fence) => {
                let result = self.delete_file(ctx, path, Some(&fence)).await;
                fence.finish(result).await
            }
        }
    }

    async fn make_dir(&self, ctx: &FileContext, path: &VPath, parents: bool) -> Result<()> {
        match self.guard(ctx, "make_dir", path).await? {
            Guard::Free => self.make_dir_marker(ctx, path, parents, None).await,
            Guard::Replay(outcome) => outcome,
            Guard::Mine(fence) => {
                let result = self.make_dir_marker(ctx, path, parents, Some(&fence)).await;
                fence.finish(result).await
            }
        }
    }

    /// Pages of list + batch delete; under an effect key the outcome is
    /// recorded once the tree is gone, and a retry replays it. The claim
    /// records no intent, so a claim left by a crash mid-way is taken over
    /// once stale and the delete runs again, finishing the tree.
    async fn delete_tree(&self, ctx: &FileContext, path: &VPath) -> Result<()> {
        match self.guard(ctx, "delete_tree", path).await? {
            Guard::Free => self.delete_tree_pages(ctx, path).await,
            Guard::Replay(outcome) => outcome,
            Guard::Mine(fence) => {
                let result = self.delete_tree_pages(ctx, path).await;
                fence.finish(result).await
            }
        }
    }

    async fn glob(
        &self,
        ctx: &FileContext,
        pattern: &str,
        under: &VPath,
        limit: usize,
    ) -> Result<GlobResult> {
        self.glob_files(ctx, pattern, under, limit).await
    }

    async fn grep(
        &self,
        ctx: &FileContext,
        query: &GrepQuery,
        under: &VPath,
        limit: usize,
    ) -> Result<GrepResult> {
        self.grep_files(ctx, query, under, limit).await
    }
}
