//! Uploads (issue 27): files a person hands the agent, stored under `/uploads/NAME` of the workspace and described by an `UploadedFile` (the seed's metadata), listed in every request's instructions (ADR 0292).
//!
//! [`upload_file`] checks the name and the size before it writes anything,
//! stores the bytes as given and returns their metadata: size, lines and
//! encoding for UTF-8 text (`None` for anything else), and a MIME type
//! detected from the content (magic bytes, with `infer`), else from the
//! file name (`mime_guess`), else `text/plain` for text and
//! `application/octet-stream` for the rest. [`Uploads`] is the list a run
//! carries: each request's instructions name every upload, its path and
//! its shape, so the model knows to open it.

use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use burrow_backend::{Backend, Error, ErrorKind, FileContext, VPath};
use burrow_types::UploadedFile;

use crate::agent::{Agent, InstructionProvider};
use crate::message::Message;

/// The folder uploads are stored in.
pub const UPLOADS_DIR: &str = "/uploads";

/// The most uploads a resumed run lists from the `/uploads` folder.
pub const MAX_LISTED: usize = 200;

/// The longest upload name, in bytes (one path segment).
const MAX_NAME_BYTES: usize = 255;

/// `name` if it is a safe file name (one plain path segment), else the refusal saying why.
///
/// # Behavior
/// Refused with InvalidPath: an empty name, `.` or `..`, a name holding `/`,
/// `\`, a NUL or another control character, a name longer than 255 bytes,
/// and a name with leading or trailing spaces.
pub fn safe_name(name: &str) -> Result<&str, Error> {
    let why = if name.is_empty() {
        Some("is empty")
    } else if name == "." || name == ".." {
        Some("names a directory, not a file")
    } else if name.contains('/') || name.contains('\\') {
        Some("holds a path separator")
    } else if name.chars().any(char::is_control) {
        Some("holds a control character")
    } else if name.len() > MAX_NAME_BYTES {
        Some("is longer than 255 bytes")
    } else if name.trim() != name {
        Some("starts or ends with a space")
    } else {
        None
    };
    match why {
        Some(why) => Err(Error::refusal(
            ErrorKind::InvalidPath,
            format!("The upload name {name:?} {why}; give a plain file name such as data.csv."),
        )),
        None => Ok(name),
    }
}

/// `Ok` when `len` bytes may be uploaded as `name` to `backend`: a safe
/// name ([`safe_name`]) and no more bytes than its largest file (TooLarge).
pub fn check(backend: &dyn Backend, name: &str, len: usize) -> Result<(), Error> {
    let name = safe_name(name)?;
    let limit = backend.capabilities().limits.max_file_size;
    if len as u64 > limit {
        return Err(Error::refusal(
            ErrorKind::TooLarge,
            format!(
                "The upload {name} has {len} bytes, more than this workspace's largest file ({limit} bytes); nothing was stored."
            ),
        ));
    }
    Ok(())
}

/// Stores `bytes` as `/uploads/NAME` of `backend` as `ctx` and returns its metadata.
///
/// # Behavior
/// - A name that is not a safe file name ([`safe_name`]): InvalidPath, nothing written.
/// - More bytes than the backend's largest file: TooLarge, nothing written.
/// - An existing upload of that name is replaced.
/// - The metadata: `line_count` as [`Backend::read`] counts lines and
///   `encoding` `"utf-8"` for UTF-8 text holding no NUL, both `None`
///   otherwise; `mime_type` from the content, else the name.
pub async fn upload_file(
    backend: &dyn Backend,
    ctx: &FileContext,
    name: &str,
    bytes: &[u8],
) -> Result<UploadedFile, Error> {
    check(backend, name, bytes.len())?;
    let path = VPath::parse(UPLOADS_DIR)?.join(name)?;
    backend.write_bytes(ctx, &path, bytes).await?;
    Ok(describe(path.as_str(), name, bytes))
}

/// The metadata of `bytes` uploaded as `name` to `path`.
pub fn describe(path: &str, name: &str, bytes: &[u8]) -> UploadedFile {
    let text = std::str::from_utf8(bytes)
        .ok()
        .filter(|text| !text.contains('\0'));
    let by_content = infer::get(bytes).map(|kind| kind.mime_type().to_owned());
    let by_name = mime_guess::from_path(name).first().map(|m| m.to_string());
    let mime_type = by_content.or(by_name).unwrap_or_else(|| {
        if text.is_some() {
            "text/plain".to_owned()
        } else {
            "application/octet-stream".to_owned()
        }
    });
    UploadedFile {
        path: path.to_owned(),
        original_name: name.to_owned(),
        size: bytes.len() as u64,
        line_count: text.map(line_count),
        mime_type,
        encoding: text.map(|_| "utf-8".to_owned()),
    }
}

/// Lines as [`Backend::read`] counts them: split on "\n", a final "\n" makes no extra line.
fn line_count(text: &str) -> u64 {
    if text.is_empty() {
        return 0;
    }
    let breaks = text.matches('\n').count() as u64;
    if text.ends_with('\n') {
        breaks
    } else {
        breaks + 1
    }
}

/// The uploads of a run, listed in each of its requests' instructions.
#[derive(Debug, Clone, Default)]
pub struct Uploads(Arc<RwLock<Vec<UploadedFile>>>);

impl Uploads {
    /// No uploads yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The uploads already in `/uploads` of `backend` as `ctx` sees it: what
    /// a resumed run of a thread lists (ADR 0296), the folder being the
    /// record of what was uploaded.
    ///
    /// # Behavior
    /// - Each file directly under `/uploads` whose name is a safe upload
    ///   name, in path order, described from its bytes as [`upload_file`]
    ///   describes them; folders and files that cannot be read are left out.
    /// - No `/uploads` folder (nothing uploaded yet): no uploads, no error.
    /// - At most [`MAX_LISTED`] files; other failures of the listing are errors.
    pub async fn from_folder(backend: &dyn Backend, ctx: &FileContext) -> Result<Self, Error> {
        let uploads = Self::new();
        let dir = VPath::parse(UPLOADS_DIR)?;
        let listing = match backend.ls(ctx, &dir, MAX_LISTED).await {
            Ok(listing) => listing,
            Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
                return Ok(uploads);
            }
            Err(e) => return Err(e),
        };
        for entry in listing.entries {
            if entry.is_dir || safe_name(&entry.name).is_err() {
                continue;
            }
            let path = dir.join(&entry.name)?;
            if let Ok(bytes) = backend.read_bytes(ctx, &path).await {
                uploads.add(describe(path.as_str(), &entry.name, &bytes));
            }
        }
        Ok(uploads)
    }

    /// Adds `file`, replacing an earlier upload at its path.
    pub fn add(&self, file: UploadedFile) {
        if let Ok(mut files) = self.0.write() {
            files.retain(|f| f.path != file.path);
            files.push(file);
        }
    }

    /// The uploads, in the order they came.
    pub fn files(&self) -> Vec<UploadedFile> {
        self.0.read().map(|f| f.clone()).unwrap_or_default()
    }

    /// Stores `bytes` as `name` ([`upload_file`]) and lists it.
    pub async fn upload(
        &self,
        backend: &dyn Backend,
        ctx: &FileContext,
        name: &str,
        bytes: &[u8],
    ) -> Result<UploadedFile, Error> {
        let file = upload_file(backend, ctx, name, bytes).await?;
        self.add(file.clone());
        Ok(file)
    }

    /// The instructions' block: one line per upload, or `None` without uploads.
    pub fn listing(&self) -> Option<String> {
        let files = self.files();
        if files.is_empty() {
            return None;
        }
        let mut text = String::from(
            "## Uploaded files\nThe user uploaded these files into the workspace; open them with read_file (text) when the task needs them:\n",
        );
        for f in &files {
            let shape = match f.line_count {
                Some(lines) => format!("{} bytes, {lines} lines, {}", f.size, f.mime_type),
                None => format!("{} bytes, binary, {}", f.size, f.mime_type),
            };
            text.push_str(&format!("- {} ({shape})\n", f.path));
        }
        Some(text.trim_end().to_owned())
    }
}

#[async_trait]
impl InstructionProvider for Uploads {
    async fn instructions(&self, _history: &[Message]) -> Result<Option<String>, Error> {
        Ok(self.listing())
    }
}

/// `agent` with `uploads` listed in every request's instructions.
pub fn with_uploads(agent: Agent, uploads: Uploads) -> Agent {
    agent.with_provider(Arc::new(uploads))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_counted_as_read_counts_them() {
        assert_eq!(line_count(""), 0);
        assert_eq!(line_count("a"), 1);
        assert_eq!(line_count("a\n"), 1);
        assert_eq!(line_count("a\nb"), 2);
        assert_eq!(line_count("a\r\nb\r\n"), 2);
        assert_eq!(line_count("\n\n"), 2);
    }
}
