//! `LocalStore`: object_store's `LocalFileSystem` with puts staged in a folder of their own, so a 255-byte name fits.
//!
//! `LocalFileSystem` stages each put in a temporary file beside its target,
//! named `{name}#{n}`: a file name of 253 to 255 bytes (which the contract
//! allows) then overflows the host's 255-byte limit and the put fails. This
//! adapter stages puts in `{folder}/.burrow-staging/` under short unique
//! names and then publishes them with one atomic step (a rename to
//! overwrite, a hard link to create-if-absent, as `LocalFileSystem` itself
//! does); every other call goes to `LocalFileSystem` unchanged.
//!
//! The staging folder lies beside the tenants' folders, outside every
//! tenant's file space, like the effect records; a tenant's segment can
//! never be `.burrow-staging` (a leading "." is escaped, see [`crate::keys`]).
//! A staged file left by a crash is never listed.

use std::fmt;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use futures::stream::BoxStream;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMode, PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};

/// The folder, beside the tenants, where puts are staged.
pub const STAGING_DIR: &str = ".burrow-staging";

/// See the module docs.
#[derive(Debug)]
pub struct LocalStore {
    fs: LocalFileSystem,
    staging: PathBuf,
}

impl fmt::Display for LocalStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LocalStore({})", self.fs)
    }
}

impl LocalStore {
    /// The store of the existing folder `dir` (emptied folders are removed with their last file).
    pub fn new(dir: &std::path::Path) -> Result<LocalStore> {
        let fs = LocalFileSystem::new_with_prefix(dir)?.with_automatic_cleanup(true);
        Ok(LocalStore {
            fs,
            staging: dir.join(STAGING_DIR),
        })
    }
}

fn io_error(source: std::io::Error) -> object_store::Error {
    object_store::Error::Generic {
        store: "LocalFileSystem",
        source: Box::new(source),
    }
}

/// A staging name no other put of any process uses.
fn unique_name() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        "{}-{}-{nanos}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// Publishes the staged file `tmp` at `dest` with `mode`, creating `dest`'s
/// folders (again, if a concurrent delete's cleanup removed them meanwhile).
fn publish(tmp: &std::path::Path, dest: &std::path::Path, mode: &PutMode) -> std::io::Result<()> {
    let mut attempts = 0;
    loop {
        let done = match mode {
            PutMode::Create => std::fs::hard_link(tmp, dest),
            _ => std::fs::rename(tmp, dest),
        };
        match done {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && attempts < 3 => {
                attempts += 1;
                if let Some(parent) = dest.parent() {
                    std::fs::create_dir_all(parent)?;
                }
            }
            other => return other,
        }
    }
}

#[async_trait]
impl ObjectStore for LocalStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        if matches!(opts.mode, PutMode::Update(_)) {
            return Err(object_store::Error::NotImplemented {
                operation: "`put_opts` with mode `PutMode::Update`".into(),
                implementer: self.to_string(),
            });
        }
        let dest = self.fs.path_to_filesystem(location)?;
        let tmp = self.staging.join(unique_name());
        let staging = self.staging.clone();
        let location = location.to_string();
        let joined = tokio::task::spawn_blocking(move || -> Result<PutResult> {
            std::fs::create_dir_all(&staging).map_err(io_error)?;
            let mut file = std::fs::File::create_new(&tmp).map_err(io_error)?;
            let written = payload.iter().try_for_each(|chunk| file.write_all(chunk));
            drop(file);
            let published = written.and_then(|()| publish(&tmp, &dest, &opts.mode));
            // After a hard link the staged name is left over; after a rename it is gone.
            let _ = std::fs::remove_file(&tmp);
            match published {
                Ok(()) => Ok(PutResult {
                    e_tag: None,
                    version: None,
                    extensions: Default::default(),
                }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    Err(object_store::Error::AlreadyExists {
                        path: location,
                        source: Box::new(e),
                    })
                }
                Err(e) => Err(io_error(e)),
            }
        })
        .await;
        joined.map_err(|e| object_store::Error::JoinError { source: e })?
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.fs.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        self.fs.get_opts(location, options).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.fs.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.fs.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.fs.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.fs.copy_opts(from, to, options).await
    }
}
