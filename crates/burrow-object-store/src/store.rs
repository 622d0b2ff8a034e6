//! Thin helpers over `dyn ObjectStore`: bounded GETs, HEADs and probes that answer "missing" as `None`, and one mapping of object_store errors to contract failures.

use std::sync::Arc;

use burrow_backend::{Error, ErrorKind, Result, VPath, text};
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use object_store::path::Path;
use object_store::{
    Attributes, GetOptions, ObjectMeta, ObjectStore, ObjectStoreExt, PutMode, PutOptions,
    PutPayload, PutResult,
};

/// An object's bytes and the metadata they were read with (its ETag and version).
#[derive(Debug)]
pub(crate) struct Fetched {
    pub bytes: Bytes,
    pub meta: ObjectMeta,
    /// The object's attributes (user metadata such as the effect tag).
    pub attributes: Attributes,
}

/// A failure of the store while doing `op` on `path`: a short sentence naming
/// only the virtual path (object_store's own messages can show host paths,
/// URLs and keys, so they stay in the error source, for logs).
pub(crate) fn fail(op: &str, path: &VPath, err: object_store::Error) -> Error {
    Error::failure(
        format!(
            "the object store failed to {op} {path}: {}.",
            describe(&err)
        ),
        err,
    )
}

/// What went wrong, in words that show no host path, URL or credential.
fn describe(err: &object_store::Error) -> String {
    use object_store::Error as E;
    match err {
        E::NotImplemented { operation, .. } => {
            format!("the store does not support {}", operation.replace('`', ""))
        }
        E::PermissionDenied { .. } => "the store denied access".to_owned(),
        E::Unauthenticated { .. } => "the store refused the credentials".to_owned(),
        E::NotSupported { .. } => "the store does not support this operation".to_owned(),
        E::Precondition { .. } | E::AlreadyExists { .. } | E::NotModified { .. } => {
            "a concurrent change interfered".to_owned()
        }
        E::NotFound { .. } => "an object vanished while it was being used".to_owned(),
        E::InvalidPath { .. } => "the store refused the object key".to_owned(),
        E::Generic { store, source } => match cause(source.as_ref()) {
            Some(cause) => format!("{store} error: {cause}"),
            None => format!("{store} error"),
        },
        _ => "the store reported an error".to_owned(),
    }
}

/// The network or I/O cause at the bottom of an error chain, in plain words.
fn cause(err: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut current = Some(err);
    let mut found = None;
    while let Some(e) = current {
        #[cfg(any(feature = "s3", feature = "gcs", feature = "azure"))]
        if let Some(http) = e.downcast_ref::<object_store::client::HttpError>() {
            use object_store::client::HttpErrorKind as K;
            found = Some(match http.kind() {
                K::Connect => "could not connect to the server (is it running and reachable?)",
                K::Timeout => "the server did not answer in time",
                K::Interrupted => "the connection was interrupted",
                K::Decode => "the server's answer could not be decoded",
                _ => "the request failed",
            });
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind as K;
            found = Some(match io.kind() {
                K::ConnectionRefused => "the server refused the connection (is it running?)",
                K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe => {
                    "the connection was lost"
                }
                K::TimedOut => "the server did not answer in time",
                K::NotFound => "a file of the store is missing",
                K::PermissionDenied => "the store's files are not accessible",
                K::StorageFull => "the store's disk is full",
                _ => "an I/O error",
            });
            break;
        }
        current = e.source();
    }
    found.map(str::to_owned)
}

/// The store and the few calls the backend makes, with "missing" as `None`.
#[derive(Clone)]
pub(crate) struct Store {
    pub inner: Arc<dyn ObjectStore>,
}

impl Store {
    /// The object at `key`, or `None`. TooLarge when it is larger than `max`:
    /// the size comes from the response headers, before any of the body is
    /// read, so a huge object is never downloaded.
    pub async fn get(&self, key: &Path, path: &VPath, max: u64) -> Result<Option<Fetched>> {
        let result = match self.inner.get_opts(key, GetOptions::default()).await {
            Ok(r) => r,
            Err(e) if absent(&e) => return Ok(None),
            Err(e) => return Err(fail("read", path, e)),
        };
        text::check_size(path, result.meta.size, max)?;
        let meta = result.meta.clone();
        let attributes = result.attributes.clone();
        let mut chunks: Vec<Bytes> = Vec::new();
        let mut len = 0u64;
        let mut stream = result.into_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = match chunk {
                Ok(c) => c,
                Err(e) if absent(&e) => return Ok(None),
                Err(e) => return Err(fail("read", path, e)),
            };
            len += chunk.len() as u64;
            // The store said `meta.size`; never hold more than the limit whatever it sends.
            text::check_size(path, len, max)?;
            chunks.push(chunk);
        }
        // One chunk (the usual case for small objects) is used as it is, without a copy.
        let bytes = match chunks.len() {
            0 => Bytes::new(),
            1 => chunks.swap_remove(0),
            _ => {
                let mut all = BytesMut::with_capacity(usize::try_from(len).unwrap_or(0));
                chunks.iter().for_each(|c| all.extend_from_slice(c));
                all.freeze()
            }
        };
        Ok(Some(Fetched {
            bytes,
            meta,
            attributes,
        }))
    }

    /// The metadata of the object at `key`, or `None`.
    pub async fn head(&self, key: &Path, path: &VPath) -> Result<Option<ObjectMeta>> {
        match self.inner.head(key).await {
            Ok(meta) => Ok(Some(meta)),
            Err(e) if absent(&e) => Ok(None),
            Err(e) => Err(fail("look up", path, e)),
        }
    }

    /// The metadata and attributes of the object at `key`, or `None` (a HEAD
    /// that also reports user metadata, which a plain HEAD does not).
    pub async fn head_attributes(
        &self,
        key: &Path,
        path: &VPath,
    ) -> Result<Option<(ObjectMeta, Attributes)>> {
        let options = GetOptions {
            head: true,
            ..GetOptions::default()
        };
        match self.inner.get_opts(key, options).await {
            Ok(r) => Ok(Some((r.meta.clone(), r.attributes.clone()))),
            Err(e) if absent(&e) => Ok(None),
            Err(e) => Err(fail("look up", path, e)),
        }
    }

    /// True when at least one object lies beneath `key` (`key` is a directory).
    ///
    /// Reads at most one page of the listing (object_store lists lazily).
    pub async fn any_under(&self, key: &Path, path: &VPath) -> Result<bool> {
        let mut listing = self.inner.list(Some(key));
        match listing.next().await {
            None => Ok(false),
            Some(Ok(_)) => Ok(true),
            Some(Err(e)) if absent(&e) => Ok(false),
            Some(Err(e)) => Err(fail("list", path, e)),
        }
    }

    /// Every object beneath `key`, streamed page by page, in the store's
    /// order (key order on S3, not promised by every store); the listing of
    /// a missing prefix is empty.
    pub fn listing(
        &self,
        key: &Path,
    ) -> futures::stream::BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner
            .list(Some(key))
            .take_while(|item| std::future::ready(!matches!(item, Err(e) if absent(e))))
            .fuse()
            .boxed()
    }

    /// Puts `bytes` at `key` with `mode`; the raw object_store result, so callers can see lost races.
    pub async fn put(
        &self,
        key: &Path,
        bytes: bytes::Bytes,
        mode: PutMode,
    ) -> object_store::Result<PutResult> {
        self.put_with(key, bytes, mode, Attributes::new()).await
    }

    /// As [`Store::put`], with `attributes` (user metadata) on the object.
    pub async fn put_with(
        &self,
        key: &Path,
        bytes: bytes::Bytes,
        mode: PutMode,
        attributes: Attributes,
    ) -> object_store::Result<PutResult> {
        let options = PutOptions {
            mode,
            attributes,
            ..PutOptions::default()
        };
        self.inner
            .put_opts(key, PutPayload::from(bytes), options)
            .await
    }
}

/// True when `err` means nothing is there: NotFound, or (on a local
/// folder) a path that runs through a file, which the host reports as "not
/// a directory" rather than "not found".
pub(crate) fn absent(err: &object_store::Error) -> bool {
    if matches!(err, object_store::Error::NotFound { .. }) {
        return true;
    }
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = current {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            return io.kind() == std::io::ErrorKind::NotADirectory;
        }
        current = e.source();
    }
    false
}

/// True when `err` means "a concurrent change won" (a conditional put lost its race).
pub(crate) fn lost_race(err: &object_store::Error) -> bool {
    matches!(
        err,
        object_store::Error::Precondition { .. } | object_store::Error::AlreadyExists { .. }
    )
}

/// Conflict for `path` after `attempts` lost races.
pub(crate) fn conflict(path: &VPath, attempts: u32) -> Error {
    Error::refusal(
        ErrorKind::Conflict,
        format!(
            "{path} kept changing while this change was applied ({attempts} attempts); read it again and retry."
        ),
    )
}
