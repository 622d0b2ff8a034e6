//! `Spy`: an object store decorator for tests that counts what the backend downloads and deletes, and can make another writer win a race or deletes fail on demand.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};

use async_trait::async_trait;
use burrow_object_store::keys::EFFECTS_DIR;
use burrow_object_store::object_store::path::Path;
use burrow_object_store::object_store::{
    CopyOptions, Error, GetOptions, GetResult, GetResultPayload, ListResult, MultipartUpload,
    ObjectMeta, ObjectStore, ObjectStoreExt, PutMode, PutMultipartOptions, PutOptions, PutPayload,
    PutResult, Result,
};
use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;

/// Wraps a store; see the module docs.
#[derive(Debug)]
pub struct Spy {
    inner: Arc<dyn ObjectStore>,
    /// Body bytes the backend pulled from GET responses.
    pub downloaded: Arc<AtomicU64>,
    /// How many of the next conditional updates another writer beats.
    interfere: AtomicUsize,
    /// How many times another writer did.
    pub interfered: AtomicUsize,
    /// How many of the next puts of files (not effect records) fail as a broken store would.
    fail_puts: AtomicUsize,
    /// How many of the next puts of finished effect records (outcomes, not pending claims) fail.
    fail_outcomes: AtomicUsize,
    /// Seconds added to every last-modified time the store reports (its clock's skew).
    skew_secs: AtomicI64,
    /// How many more objects may be deleted before deletes fail as a dropped connection would.
    delete_budget: Arc<AtomicI64>,
    /// How many batches (`delete_stream` calls, one object's delete included) were asked for.
    pub delete_batches: AtomicUsize,
}

impl fmt::Display for Spy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Spy({})", self.inner)
    }
}

impl Spy {
    pub fn new(inner: Arc<dyn ObjectStore>) -> Self {
        Spy {
            inner,
            downloaded: Arc::new(AtomicU64::new(0)),
            interfere: AtomicUsize::new(0),
            interfered: AtomicUsize::new(0),
            fail_puts: AtomicUsize::new(0),
            fail_outcomes: AtomicUsize::new(0),
            skew_secs: AtomicI64::new(0),
            delete_budget: Arc::new(AtomicI64::new(i64::MAX)),
            delete_batches: AtomicUsize::new(0),
        }
    }

    /// Lets the next `n` objects be deleted, then makes every delete fail
    /// (`i64::MAX`: no limit again).
    pub fn allow_deletes(&self, n: i64) {
        self.delete_budget.store(n, Ordering::SeqCst);
    }

    /// Makes the next `n` puts of an effect record's outcome fail (after the change itself landed).
    pub fn fail_next_outcome_records(&self, n: usize) {
        self.fail_outcomes.store(n, Ordering::SeqCst);
    }

    /// Makes the store's clock run `secs` seconds off the local one.
    pub fn skew_clock(&self, secs: i64) {
        self.skew_secs.store(secs, Ordering::SeqCst);
    }

    fn skewed(&self, meta: ObjectMeta) -> ObjectMeta {
        shift(meta, self.skew_secs.load(Ordering::SeqCst))
    }

    /// Makes the next `n` puts of files (keys outside the effect records) fail.
    pub fn fail_next_file_puts(&self, n: usize) {
        self.fail_puts.store(n, Ordering::SeqCst);
    }

    /// Makes "another writer" append a line to the object just before each
    /// of the next `n` conditional updates reaches the store, so they lose.
    pub fn interfere_with_next(&self, n: usize) {
        self.interfere.store(n, Ordering::SeqCst);
    }
}

#[async_trait]
impl ObjectStore for Spy {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        if !location.as_ref().contains(EFFECTS_DIR)
            && self
                .fail_puts
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
        {
            return Err(Error::Generic {
                store: "Spy",
                source: "the disk caught fire at /host/secret/path".into(),
            });
        }
        if location.as_ref().contains(EFFECTS_DIR)
            && !location.as_ref().contains(".clock")
            && !payload_text(&payload).contains("pending")
            && self
                .fail_outcomes
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
        {
            return Err(Error::Generic {
                store: "Spy",
                source: "the connection dropped while recording".into(),
            });
        }
        if matches!(opts.mode, PutMode::Update(_))
            && self
                .interfere
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
        {
            let current = self.inner.get(location).await?.bytes().await?;
            let n = self.interfered.fetch_add(1, Ordering::SeqCst);
            let mut changed = current.to_vec();
            changed.extend_from_slice(format!("interfering write {n}\n").as_bytes());
            self.inner.put(location, PutPayload::from(changed)).await?;
        }
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let mut result = self.inner.get_opts(location, options).await?;
        result.meta = self.skewed(result.meta);
        let stream = match result.payload {
            GetResultPayload::Stream(s) => s,
            other => {
                result.payload = other;
                return Ok(result);
            }
        };
        let counter = Arc::clone(&self.downloaded);
        result.payload = GetResultPayload::Stream(
            stream
                .map(move |chunk: Result<Bytes>| {
                    if let Ok(bytes) = &chunk {
                        counter.fetch_add(bytes.len() as u64, Ordering::SeqCst);
                    }
                    chunk
                })
                .boxed(),
        );
        Ok(result)
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.delete_batches.fetch_add(1, Ordering::SeqCst);
        let budget = Arc::clone(&self.delete_budget);
        let limited = locations
            .map(move |location| {
                let location = location?;
                if budget.fetch_sub(1, Ordering::SeqCst) > 0 {
                    Ok(location)
                } else {
                    Err(Error::Generic {
                        store: "Spy",
                        source: "the connection dropped while deleting".into(),
                    })
                }
            })
            .boxed();
        self.inner.delete_stream(limited)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        let secs = self.skew_secs.load(Ordering::SeqCst);
        self.inner
            .list(prefix)
            .map(move |m| m.map(|meta| shift(meta, secs)))
            .boxed()
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}

/// The bytes of `payload` as text (lossy).
fn payload_text(payload: &PutPayload) -> String {
    let bytes: Vec<u8> = payload.iter().flat_map(|b| b.to_vec()).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// `meta` with its last-modified time moved by `secs` seconds.
fn shift(mut meta: ObjectMeta, secs: i64) -> ObjectMeta {
    let by = std::time::Duration::from_secs(secs.unsigned_abs());
    meta.last_modified = if secs >= 0 {
        meta.last_modified + by
    } else {
        meta.last_modified - by
    };
    meta
}
