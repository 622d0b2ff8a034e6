//! `UploadedFile`: what the harness records about a file a user uploaded.

use serde::{Deserialize, Serialize};

/// Metadata of an uploaded file, as the Python `UploadedFile` TypedDict holds
/// it: every key present, `line_count` and `encoding` `null` for binary files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UploadedFile {
    /// Where the file was stored, e.g. `"/uploads/data.csv"`.
    pub path: String,
    /// The file name the user gave.
    pub original_name: String,
    /// Size in bytes.
    pub size: u64,
    /// Number of lines; `None` for binary files.
    pub line_count: Option<u64>,
    /// Detected MIME type, e.g. `"text/csv"`.
    pub mime_type: String,
    /// Detected text encoding, e.g. `"utf-8"`; `None` for binary files.
    pub encoding: Option<String>,
}
