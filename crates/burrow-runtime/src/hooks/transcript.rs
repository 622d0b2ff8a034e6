//! The JSONL transcript of a session that hooks find at `transcript_path`: one line per message, appended as the history grows (docs/adr/0260).

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::message::Message;

/// The transcript file of session `session_id` in `dir`: `SESSION.jsonl`,
/// every character of the id outside `[A-Za-z0-9._-]` written as `%XX`
/// (so an id never names another folder).
pub fn transcript_file(dir: &Path, session_id: &str) -> PathBuf {
    let mut name = String::with_capacity(session_id.len() + 6);
    for b in session_id.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_') || (b == b'.' && !name.is_empty())
        {
            name.push(char::from(b));
        } else {
            name.push_str(&format!("%{b:02X}"));
        }
    }
    name.push_str(".jsonl");
    dir.join(name)
}

/// One line of a transcript.
#[derive(Serialize)]
struct Line<'a> {
    /// `system`, `user`, `assistant` or `tool_result` (the message's role).
    #[serde(rename = "type")]
    kind: &'a str,
    /// The session.
    session_id: &'a str,
    /// The run that added the message, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    run_id: Option<&'a str>,
    /// When the line was written (milliseconds since the Unix epoch).
    timestamp_ms: u128,
    /// The message, in burrow's form.
    message: &'a Message,
}

/// A session's transcript being written: a file of JSON lines, each written
/// whole and flushed, so a hook reading it sees whole lines only.
#[derive(Debug)]
pub struct Transcript {
    file: std::fs::File,
    path: PathBuf,
    session_id: String,
}

impl Transcript {
    /// Creates (or empties) the transcript of `session_id` in `dir`, creating `dir` if need be.
    pub fn create(dir: &Path, session_id: &str) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let path = transcript_file(dir, session_id);
        let file = std::fs::File::create(&path)?;
        Ok(Self {
            file,
            path,
            session_id: session_id.to_owned(),
        })
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `message` (added by `run_id`, when known).
    pub fn append(&mut self, message: &Message, run_id: Option<&str>) -> std::io::Result<()> {
        let kind = match message {
            Message::System { .. } => "system",
            Message::User { .. } => "user",
            Message::Assistant { .. } => "assistant",
            Message::ToolResult(_) => "tool_result",
            Message::Compaction(_) => "compaction",
        };
        let line = Line {
            kind,
            session_id: &self.session_id,
            run_id,
            timestamp_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis()),
            message,
        };
        let mut text = serde_json::to_vec(&line).map_err(std::io::Error::other)?;
        text.push(b'\n');
        self.file.write_all(&text)?;
        self.file.flush()
    }
}
