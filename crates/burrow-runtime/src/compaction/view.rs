//! What the model reads of a history that holds compactions: [`view`] built from the whole history, and [`View`], the same kept up to date as a run's history grows, so a request costs the messages added since the one before, not the history's length.

use std::borrow::Cow;

use crate::message::{Compaction, Message};

use super::message_chars;

/// Where the history's last compaction is and where the messages the model
/// still reads verbatim start: `(start, Some(index))`, or `(0, None)` when
/// the history holds no compaction.
pub(super) fn layout(history: &[Message]) -> (usize, Option<&Compaction>) {
    let last = history.iter().enumerate().rev().find_map(|(i, m)| match m {
        Message::Compaction(c) => Some((i, c)),
        _ => None,
    });
    match last {
        Some((i, c)) => (i.saturating_sub(c.kept), Some(c)),
        None => (0, None),
    }
}

/// What the model reads of `history`: the history itself when it holds no
/// compaction; else the system messages before the last compaction's cut,
/// that compaction's text as a user message, then every message from the
/// cut on except compaction entries.
///
/// It reads the whole history; a run, whose history only grows, keeps a
/// [`View`] instead.
pub fn view(history: &[Message]) -> Cow<'_, [Message]> {
    let (start, Some(last)) = layout(history) else {
        return Cow::Borrowed(history);
    };
    let mut out = Vec::with_capacity(history.len() - start + 1);
    out.extend(
        history[..start]
            .iter()
            .filter(|m| matches!(m, Message::System { .. }))
            .cloned(),
    );
    out.push(Message::user(last.text.clone()));
    out.extend(
        history[start..]
            .iter()
            .filter(|m| !matches!(m, Message::Compaction(_)))
            .cloned(),
    );
    Cow::Owned(out)
}

/// [`view`] of a history that grows by appends, kept up to date as it
/// grows: each [`View::of`] reads only the messages appended since the one
/// before, so a run's request costs the same at turn 10 and at turn 10,000.
///
/// It remembers where the system messages and the last compaction are;
/// while the history holds no compaction the view is the history itself
/// (nothing is copied), after one it is a list extended by each new
/// message, rebuilt (from the compaction's cut on) only when a new
/// compaction is appended.
#[derive(Debug, Default, Clone)]
pub struct View {
    /// How many messages of the history are read.
    read: usize,
    /// Where the system messages read are, in order.
    systems: Vec<usize>,
    /// Where the last compaction read is.
    last: Option<usize>,
    /// The view while the history holds a compaction (else empty).
    built: Vec<Message>,
    /// The view's characters as the estimates count them.
    chars: usize,
}

impl View {
    /// A view of nothing read yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// What the model reads of `history`: the same messages as
    /// [`view`]`(history)`.
    ///
    /// # Behavior
    /// `history` is expected to be the history of the call before with
    /// messages appended. A history shorter than the one read before, or
    /// whose last compaction is no longer where it was, is read again from
    /// its start; other changes to messages already read are not noticed.
    pub fn of<'a>(&'a mut self, history: &'a [Message]) -> &'a [Message] {
        self.update(history);
        if self.last.is_some() {
            &self.built
        } else {
            history
        }
    }

    /// The characters of [`View::of`]`(history)` as the estimates count them
    /// ([`super::estimate_tokens`] over it is this plus the system prompt and
    /// the tools, over [`super::CHARS_PER_TOKEN`]).
    pub fn chars(&mut self, history: &[Message]) -> usize {
        self.update(history);
        self.chars
    }

    fn update(&mut self, history: &[Message]) {
        let moved = history.len() < self.read
            || self
                .last
                .is_some_and(|at| !matches!(history.get(at), Some(Message::Compaction(_))));
        if moved {
            *self = Self::default();
        }
        let from = self.read;
        let added = &history[from..];
        self.read = history.len();
        let mut newest = None;
        for (i, message) in added.iter().enumerate() {
            match message {
                Message::System { .. } => self.systems.push(from + i),
                Message::Compaction(_) => newest = Some(from + i),
                _ => {}
            }
        }
        if let Some(at) = newest {
            self.rebuild(history, at);
        } else if self.last.is_some() {
            self.built.reserve(added.len());
            for message in added {
                self.chars += message_chars(message);
                self.built.push(message.clone());
            }
        } else {
            self.chars += added.iter().map(message_chars).sum::<usize>();
        }
    }

    /// Builds the view anew from the compaction at `at` (the history's last).
    fn rebuild(&mut self, history: &[Message], at: usize) {
        let Some(Message::Compaction(last)) = history.get(at) else {
            return;
        };
        let start = at.saturating_sub(last.kept);
        self.last = Some(at);
        self.built.clear();
        self.built.extend(
            self.systems
                .iter()
                .take_while(|i| **i < start)
                .map(|i| history[*i].clone()),
        );
        self.built.push(Message::user(last.text.clone()));
        self.built.extend(
            history[start..]
                .iter()
                .filter(|m| !matches!(m, Message::Compaction(_)))
                .cloned(),
        );
        self.chars = self.built.iter().map(message_chars).sum();
    }
}
