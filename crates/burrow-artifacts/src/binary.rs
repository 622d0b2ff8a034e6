//! Binary outputs in Google ADK's shape: `save_artifact(name, bytes, mime, metadata)` returning versions 0, 1, 2..., `load_artifact(name, version?)` and `list_versions`, over any `Backend`, each version claimed create-only.
//!
//! For files an agent produces that are not JSON documents (an image, a
//! PDF, an archive). Layout under the store's root, one folder per name:
//!
//! ```text
//! ROOT/NAME/N/data   the version's bytes
//! ROOT/NAME/N.json   its record (version, MIME type, metadata, size, time), written last
//! ```
//!
//! A save claims its version number by making the folder `ROOT/NAME/N`
//! with `make_dir` without `parents`, which every backend answers with
//! AlreadyExists when the folder stands: the one operation of the `Backend`
//! contract that creates and never replaces. Two savers that pick the same
//! number meet there; the loser moves to the next number, so a concurrent
//! save never overwrites another's version. Only the claimer writes inside
//! its folder and its record; the record, written last, is what makes a
//! version exist. A save that dies between the claim and the record leaves
//! an empty claim: the number is spent (never reused), and the version is
//! not listed nor loaded. See ADR 0335.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use burrow_backend::{Backend, ErrorKind, FileContext, VPath};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{ArtifactError, ArtifactErrorKind, Result};

/// The longest name, in bytes.
pub const MAX_NAME_BYTES: usize = 200;
/// The largest metadata object, as compact JSON, in bytes.
pub const MAX_METADATA_BYTES: usize = 64 * 1024;
/// How many numbers a save tries before it gives up (each lost to another saver).
const MAX_CLAIMS: u32 = 64;

/// One version of a binary artifact, without its bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BinaryVersion {
    /// The artifact's name.
    pub name: String,
    /// The version: 0 for the first save, then 1, 2, ...
    pub version: u64,
    /// The MIME type given at save (`image/png`).
    pub mime_type: String,
    /// The metadata given at save.
    #[serde(default)]
    pub metadata: Map<String, Value>,
    /// The size of the bytes.
    pub size: u64,
    /// When it was saved, in milliseconds since the Unix epoch.
    pub created_at_ms: u64,
}

/// A loaded version: its record and its bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct BinaryArtifact {
    /// The version's record.
    pub info: BinaryVersion,
    /// The bytes, exactly as saved.
    pub bytes: Vec<u8>,
}

/// Binary artifacts kept in a folder of a [`Backend`].
#[derive(Clone)]
pub struct BinaryArtifacts {
    backend: Arc<dyn Backend>,
    ctx: FileContext,
    root: VPath,
}

impl std::fmt::Debug for BinaryArtifacts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BinaryArtifacts")
            .field("ctx", &self.ctx)
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

impl BinaryArtifacts {
    /// The binary artifacts of `ctx`'s tenant in the folder `root` of `backend`.
    ///
    /// `ctx`'s effect key, if any, is dropped: a save is several writes, and
    /// its create-only claim is what makes a retried save safe.
    pub fn new(backend: Arc<dyn Backend>, ctx: FileContext, root: VPath) -> Self {
        let ctx = FileContext {
            effect_key: None,
            ..ctx
        };
        Self { backend, ctx, root }
    }

    /// Saves `bytes` as the next version of `name` and returns its number
    /// (0 for the first save of a name).
    ///
    /// Refused, with nothing written: a bad name (empty, over
    /// [`MAX_NAME_BYTES`], `.` or `..`, a `/`, a `\`, a control character,
    /// white space at either end), a bad MIME type, metadata over
    /// [`MAX_METADATA_BYTES`], bytes over the backend's file size limit, a
    /// backend that cannot make folders.
    pub async fn save_artifact(
        &self,
        name: &str,
        bytes: &[u8],
        mime_type: &str,
        metadata: Map<String, Value>,
    ) -> Result<u64> {
        let dir = self.name_dir(name)?;
        check_mime(mime_type)?;
        let meta_size = serde_json::to_vec(&metadata).map(|v| v.len()).unwrap_or(0);
        if meta_size > MAX_METADATA_BYTES {
            return Err(ArtifactError::new(
                ArtifactErrorKind::TooLarge {
                    size: meta_size,
                    limit: MAX_METADATA_BYTES,
                },
                format!(
                    "the metadata is {meta_size} bytes as JSON, over the limit of {MAX_METADATA_BYTES} bytes."
                ),
            ));
        }
        let caps = self.backend.capabilities();
        let limit = caps.limits.max_file_size;
        if bytes.len() as u64 > limit {
            return Err(ArtifactError::new(
                ArtifactErrorKind::TooLarge {
                    size: bytes.len(),
                    limit: usize::try_from(limit).unwrap_or(usize::MAX),
                },
                format!(
                    "{name} is {} bytes, over the backend's limit of {limit} bytes per file.",
                    bytes.len()
                ),
            ));
        }
        if !caps.make_dir {
            return Err(ArtifactError::new(
                ArtifactErrorKind::Backend(ErrorKind::Unsupported),
                "this backend cannot make folders, so it cannot claim a version create-only.",
            ));
        }
        self.backend
            .make_dir(&self.ctx, &dir, true)
            .await
            .map_err(|e| backend_error(name, e))?;
        let mut version = self.next_version(name, &dir).await?;
        let mut tries = 0;
        let claim = loop {
            let claim = join(&dir, &version.to_string())?;
            match self.backend.make_dir(&self.ctx, &claim, false).await {
                Ok(()) => break claim,
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                    tries += 1;
                    if tries >= MAX_CLAIMS {
                        return Err(ArtifactError::new(
                            ArtifactErrorKind::Backend(ErrorKind::Conflict),
                            format!(
                                "{name}: {MAX_CLAIMS} version numbers in a row were taken by other saves; try again."
                            ),
                        ));
                    }
                    version += 1;
                }
                Err(e) => return Err(backend_error(name, e)),
            }
        };
        self.backend
            .write_bytes(&self.ctx, &join(&claim, "data")?, bytes)
            .await
            .map_err(|e| backend_error(name, e))?;
        let info = BinaryVersion {
            name: name.to_owned(),
            version,
            mime_type: mime_type.to_owned(),
            metadata,
            size: bytes.len() as u64,
            created_at_ms: now_ms(),
        };
        let record = serde_json::to_vec(&info)
            .map_err(|e| ArtifactError::store("the version's record cannot be encoded.", e))?;
        self.backend
            .write_bytes(&self.ctx, &join(&dir, &format!("{version}.json"))?, &record)
            .await
            .map_err(|e| backend_error(name, e))?;
        Ok(version)
    }

    /// The version `version` of `name`, or its latest when `None`.
    ///
    /// NotFound when the name has no saved version, or not that one.
    pub async fn load_artifact(&self, name: &str, version: Option<u64>) -> Result<BinaryArtifact> {
        let dir = self.name_dir(name)?;
        let version = match version {
            Some(v) => v,
            None => self.latest(name, &dir).await?,
        };
        let info = self.record(name, &dir, version).await?.ok_or_else(|| {
            ArtifactError::not_found(format!("{name} has no saved version {version}."))
        })?;
        let data = join(&join(&dir, &version.to_string())?, "data")?;
        let bytes = self
            .backend
            .read_bytes(&self.ctx, &data)
            .await
            .map_err(|e| backend_error(name, e))?;
        if bytes.len() as u64 != info.size {
            return Err(ArtifactError::corrupt(format!(
                "{name} version {version} holds {} bytes, its record says {}.",
                bytes.len(),
                info.size
            )));
        }
        Ok(BinaryArtifact { info, bytes })
    }

    /// The saved versions of `name`, in increasing order (empty for a name
    /// never saved).
    ///
    /// Refused when the name's folder holds more entries than the backend
    /// lists at once (its `max_results`, two per version).
    pub async fn list_versions(&self, name: &str) -> Result<Vec<u64>> {
        let dir = self.name_dir(name)?;
        let limit = self.backend.capabilities().limits.max_results;
        let listing = match self.backend.ls(&self.ctx, &dir, limit).await {
            Ok(l) => l,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(backend_error(name, e)),
        };
        if listing.truncated {
            return Err(ArtifactError::new(
                ArtifactErrorKind::Backend(ErrorKind::TooLarge),
                format!(
                    "{name} has more versions than the backend lists at once ({limit} entries); load them by number."
                ),
            ));
        }
        let mut versions: Vec<u64> = listing
            .entries
            .iter()
            .filter(|e| !e.is_dir)
            .filter_map(|e| e.name.strip_suffix(".json").and_then(parse_number))
            .collect();
        versions.sort_unstable();
        Ok(versions)
    }

    /// The names with at least one saved version, sorted.
    pub async fn list_names(&self) -> Result<Vec<String>> {
        let limit = self.backend.capabilities().limits.max_results;
        let listing = match self.backend.ls(&self.ctx, &self.root, limit).await {
            Ok(l) => l,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(backend_error("the artifacts' folder", e)),
        };
        let mut names = Vec::new();
        for entry in listing.entries.iter().filter(|e| e.is_dir) {
            if check_name(&entry.name).is_err() {
                continue;
            }
            if !self.list_versions(&entry.name).await?.is_empty() {
                names.push(entry.name.clone());
            }
        }
        Ok(names)
    }

    fn name_dir(&self, name: &str) -> Result<VPath> {
        check_name(name)?;
        join(&self.root, name)
    }

    /// The record of `version`, `None` when it was never completed.
    async fn record(&self, name: &str, dir: &VPath, version: u64) -> Result<Option<BinaryVersion>> {
        let path = join(dir, &format!("{version}.json"))?;
        match self.backend.read_bytes(&self.ctx, &path).await {
            Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
                ArtifactError::store(
                    format!("the record of {name} version {version} cannot be decoded."),
                    e,
                )
            }),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(backend_error(name, e)),
        }
    }

    /// Whether the number `version` of the name in `dir` is claimed.
    async fn claimed(&self, name: &str, dir: &VPath, version: u64) -> Result<bool> {
        let path = join(dir, &version.to_string())?;
        match self.backend.ls(&self.ctx, &path, 1).await {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
            Err(e) => Err(backend_error(name, e)),
        }
    }

    /// The first unclaimed number of the name in `dir`. Claims are dense
    /// (a saver claims N only after seeing N-1 claimed), so when the listing
    /// is cut short the number is found by doubling then halving.
    async fn next_version(&self, name: &str, dir: &VPath) -> Result<u64> {
        let limit = self.backend.capabilities().limits.max_results;
        let listing = match self.backend.ls(&self.ctx, dir, limit).await {
            Ok(l) => l,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(backend_error(name, e)),
        };
        let highest = listing
            .entries
            .iter()
            .filter(|e| e.is_dir)
            .filter_map(|e| parse_number(&e.name))
            .max();
        let mut low = highest.map_or(0, |h| h + 1);
        if !listing.truncated {
            return Ok(low);
        }
        // `low` may be claimed; find the first unclaimed number above it.
        let mut step = 1u64;
        let mut high = low;
        while self.claimed(name, dir, high).await? {
            low = high + 1;
            high = high.saturating_add(step);
            step = step.saturating_mul(2);
        }
        // Unclaimed at `high`, claimed below `low`.
        while low < high {
            let mid = low + (high - low) / 2;
            if self.claimed(name, dir, mid).await? {
                low = mid + 1;
            } else {
                high = mid;
            }
        }
        Ok(low)
    }

    /// The latest completed version of the name in `dir`.
    async fn latest(&self, name: &str, dir: &VPath) -> Result<u64> {
        let mut next = self.next_version(name, dir).await?;
        while next > 0 {
            next -= 1;
            let path = join(dir, &format!("{next}.json"))?;
            match self.backend.read_bytes(&self.ctx, &path).await {
                Ok(_) => return Ok(next),
                Err(e) if e.kind() == ErrorKind::NotFound => continue,
                Err(e) => return Err(backend_error(name, e)),
            }
        }
        Err(ArtifactError::not_found(format!(
            "{name} has no saved version."
        )))
    }
}

/// A version number as written: decimal digits without a leading zero.
fn parse_number(s: &str) -> Option<u64> {
    if s.is_empty() || (s.len() > 1 && s.starts_with('0')) || !s.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    s.parse().ok()
}

fn check_name(name: &str) -> Result<()> {
    let why = if name.is_empty() {
        Some("a name is empty")
    } else if name.len() > MAX_NAME_BYTES {
        Some("a name is longer than 200 bytes")
    } else if name == "." || name == ".." {
        Some("a name is `.` or `..`")
    } else if name.contains('/') || name.contains('\\') {
        Some("a name holds a `/` or a `\\`")
    } else if name.chars().any(char::is_control) {
        Some("a name holds a control character")
    } else if name.trim() != name {
        Some("a name starts or ends with white space")
    } else {
        None
    };
    match why {
        Some(why) => Err(ArtifactError::invalid_argument(format!(
            "{why}; give one plain file name such as report.pdf."
        ))),
        None => Ok(()),
    }
}

fn check_mime(mime: &str) -> Result<()> {
    let ok = mime.len() <= 255
        && mime.split_once('/').is_some_and(|(t, s)| {
            !t.is_empty() && !s.is_empty() && !t.contains(char::is_whitespace)
        })
        && !mime.chars().any(char::is_control);
    if ok {
        Ok(())
    } else {
        Err(ArtifactError::invalid_argument(
            "the MIME type is not TYPE/SUBTYPE (such as image/png or application/octet-stream).",
        ))
    }
}

fn join(dir: &VPath, segment: &str) -> Result<VPath> {
    dir.join(segment)
        .map_err(|e| ArtifactError::invalid_argument(e.message().to_owned()))
}

/// A backend error as an artifact error: a refusal keeps the backend's kind
/// and sentence; a failure is a store failure.
fn backend_error(name: &str, e: burrow_backend::Error) -> ArtifactError {
    if e.is_refusal() {
        let kind = match e.kind() {
            ErrorKind::NotFound => ArtifactErrorKind::NotFound,
            other => ArtifactErrorKind::Backend(other),
        };
        ArtifactError::new(kind, format!("{name}: {}", e.message()))
    } else {
        let message = format!("{name}: the backend failed: {}", e.message());
        ArtifactError::store(message, e)
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}
