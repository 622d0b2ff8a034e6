//! What a well-formed stream of model events is: the check every adapter's fixtures run through.
//!
//! The rules: a part's index is started once; a delta names a part that
//! started, has not ended, and is of the delta's kind (text to text,
//! thinking and signature to thinking, argument fragments to a tool call);
//! a part ends once; when the answer finishes no part is left open; there is
//! exactly one finish, and nothing after it.

use std::collections::HashMap;
use std::fmt;

use super::{PartKind, StreamEvent};

/// How a stream broke the contract.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StreamViolation {
    /// A part started at an index already used.
    DuplicateStart(usize),
    /// A delta or end for an index that never started.
    NotStarted(usize),
    /// A delta or end for a part that already ended.
    AlreadyEnded(usize),
    /// A delta of the wrong kind for its part (e.g. text into a tool call).
    WrongKind {
        /// The part's index.
        index: usize,
        /// The delta's kind.
        delta: &'static str,
    },
    /// The answer finished while parts were open.
    OpenAtFinish(Vec<usize>),
    /// A second finish.
    SecondFinish,
    /// An event after the finish.
    AfterFinish,
    /// The stream ended without a finish.
    NoFinish,
}

impl fmt::Display for StreamViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StreamViolation::DuplicateStart(i) => {
                write!(f, "the model stream started part {i} twice")
            }
            StreamViolation::NotStarted(i) => {
                write!(
                    f,
                    "the model stream sent a delta or end for part {i} before it started"
                )
            }
            StreamViolation::AlreadyEnded(i) => {
                write!(
                    f,
                    "the model stream sent a delta or end for part {i} after it ended"
                )
            }
            StreamViolation::WrongKind { index, delta } => {
                write!(
                    f,
                    "the model stream sent a {delta} delta into part {index}, which is of another kind"
                )
            }
            StreamViolation::OpenAtFinish(open) => {
                write!(
                    f,
                    "the model stream finished with parts {open:?} still open"
                )
            }
            StreamViolation::SecondFinish => f.write_str("the model stream finished twice"),
            StreamViolation::AfterFinish => {
                f.write_str("the model stream sent an event after it finished")
            }
            StreamViolation::NoFinish => f.write_str("the model stream ended without a finish"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Thinking,
    Call,
}

/// Checks events one at a time (for a stream being consumed).
#[derive(Debug, Default)]
pub struct StreamChecker {
    // index -> (kind, open)
    parts: HashMap<usize, (Kind, bool)>,
    open: usize,
    finished: bool,
}

impl StreamChecker {
    /// A checker that has seen nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Checks the next event.
    pub fn push(&mut self, event: &StreamEvent) -> Result<(), StreamViolation> {
        if self.finished {
            return Err(match event {
                StreamEvent::Finish { .. } => StreamViolation::SecondFinish,
                _ => StreamViolation::AfterFinish,
            });
        }
        match event {
            StreamEvent::PartStart { index, part } => {
                let kind = match part {
                    PartKind::Text => Kind::Text,
                    PartKind::Thinking => Kind::Thinking,
                    PartKind::ToolCall { .. } => Kind::Call,
                };
                if self.parts.insert(*index, (kind, true)).is_some() {
                    return Err(StreamViolation::DuplicateStart(*index));
                }
                self.open += 1;
            }
            StreamEvent::TextDelta { index, .. } => self.delta(*index, Kind::Text, "text")?,
            StreamEvent::ThinkingDelta { index, .. } => {
                self.delta(*index, Kind::Thinking, "thinking")?
            }
            StreamEvent::SignatureDelta { index, .. } => {
                self.delta(*index, Kind::Thinking, "signature")?
            }
            StreamEvent::ArgumentsDelta { index, .. } => {
                self.delta(*index, Kind::Call, "arguments")?
            }
            StreamEvent::PartEnd { index } => {
                let part = self
                    .parts
                    .get_mut(index)
                    .ok_or(StreamViolation::NotStarted(*index))?;
                if !part.1 {
                    return Err(StreamViolation::AlreadyEnded(*index));
                }
                part.1 = false;
                self.open -= 1;
            }
            StreamEvent::Usage(_) | StreamEvent::Retry { .. } => {}
            StreamEvent::Finish { .. } => {
                if self.open > 0 {
                    let mut open: Vec<usize> = self
                        .parts
                        .iter()
                        .filter(|(_, (_, o))| *o)
                        .map(|(i, _)| *i)
                        .collect();
                    open.sort_unstable();
                    return Err(StreamViolation::OpenAtFinish(open));
                }
                self.finished = true;
            }
        }
        Ok(())
    }

    fn delta(&self, index: usize, want: Kind, delta: &'static str) -> Result<(), StreamViolation> {
        match self.parts.get(&index) {
            None => Err(StreamViolation::NotStarted(index)),
            Some((_, false)) => Err(StreamViolation::AlreadyEnded(index)),
            Some((kind, true)) if *kind != want => Err(StreamViolation::WrongKind { index, delta }),
            Some(_) => Ok(()),
        }
    }

    /// Checks that the stream, now ended, finished.
    pub fn finish(&self) -> Result<(), StreamViolation> {
        if self.finished {
            Ok(())
        } else {
            Err(StreamViolation::NoFinish)
        }
    }
}

/// Checks a whole stream: no delta before its start, no part left open, one finish, nothing after it.
pub fn check_stream<'a>(
    events: impl IntoIterator<Item = &'a StreamEvent>,
) -> Result<(), StreamViolation> {
    let mut checker = StreamChecker::new();
    for event in events {
        checker.push(event)?;
    }
    checker.finish()
}
